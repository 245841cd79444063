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
	defer func(on bool) { testChecks = on }(testChecks)
	testChecks = false // measure what a server does
	orch, err := qa.New(qa.Config{})
	if err != nil {
		b.Fatal(err)
	}
	srv, err := New(orch, Options{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	cs := connect(b, srv)
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

// BenchmarkToolCalls measures get_qa_orchestration and a primary-review
// advance with a profile report (review-bound sessions) on an in-memory
// connection, the transport-free part of bench/mcp.sh's per-tool figures.
func BenchmarkToolCalls(b *testing.B) {
	defer func(on bool) { testChecks = on }(testChecks)
	testChecks = false
	orch, err := qa.New(qa.Config{MaxSessions: 100000})
	if err != nil {
		b.Fatal(err)
	}
	srv, err := New(orch, Options{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	cs := connect(b, srv)
	call := func(name string, args any) map[string]any {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			b.Fatal(name, err, res)
		}
		return res.StructuredContent.(map[string]any)
	}
	triaged := func() (string, *string) {
		s := call(qa.ToolStart, qa.StartInput{TaskType: qa.TaskOrdinaryReview, ReviewContext: reviewContext()})
		id := s["run_id"].(string)
		hash := s["review_context"].(map[string]any)["review_rules_sha256"].(string)
		call(qa.ToolAdvance, qa.AdvanceInput{RunID: id, CompletedStep: qa.StepTriage, Status: qa.OutcomeCompleted,
			SelectedBundle: ptr(qa.BundleSecurity)})
		return id, &hash
	}
	b.Run("get", func(b *testing.B) {
		id, _ := triaged()
		for b.Loop() {
			call(qa.ToolGet, qa.GetInput{RunID: id})
		}
	})
	b.Run("advance", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			id, hash := triaged()
			b.StartTimer()
			call(qa.ToolAdvance, qa.AdvanceInput{RunID: id, CompletedStep: qa.StepPrimaryReview, Status: qa.OutcomeCompleted,
				CompletedProfile: ptr(qa.ProfileCodeExplorer), ProfileReport: profileReport(qa.ProfileCodeExplorer, hash),
				ExpectedRevision: ptr(int64(1)), RequestID: ptr("bench-1")})
		}
	})
}
