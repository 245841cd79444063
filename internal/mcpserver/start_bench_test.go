package mcpserver

import (
	"context"
	"os"
	"testing"

	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkStartVsPing measures start_qa_orchestration (BOUND=1: review-bound) and
// an MCP ping on the same in-memory connection (the transport-free part of
// bench/mcp.sh's ratio); each started session is deleted again.
func BenchmarkStartVsPing(b *testing.B) {
	orch, err := qa.New(qa.Config{})
	if err != nil {
		b.Fatal(err)
	}
	srv, err := New(orch, Options{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	startArgs := qa.StartInput{TaskType: qa.TaskOrdinaryReview}
	if os.Getenv("BOUND") != "" {
		startArgs.ReviewContext = reviewContext()
	}
	b.Run("start", func(b *testing.B) {
		for b.Loop() {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: qa.ToolStart, Arguments: startArgs})
			if err != nil || res.IsError {
				b.Fatal(err, res)
			}
			id := res.StructuredContent.(map[string]any)["run_id"].(string)
			b.StopTimer()
			cs.CallTool(ctx, &mcp.CallToolParams{Name: qa.ToolDelete, Arguments: qa.DeleteInput{RunID: id}})
			b.StartTimer()
		}
	})
	b.Run("ping", func(b *testing.B) {
		for b.Loop() {
			if err := cs.Ping(ctx, nil); err != nil {
				b.Skip("ping unsupported by this protocol version:", err)
			}
		}
	})
}
