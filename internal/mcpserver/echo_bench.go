//go:build diffpal_bench_echo

package mcpserver

import (
	"context"
	"strings"

	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ToolBenchEcho is the benchmark's floor: a tool registered exactly like the
// qa tools (addTool: typed input and output, inferred schemas, the SDK's
// validation and structured content) that does no work beyond building an
// answer of the requested size. It exists only in binaries built with
// -tags diffpal_bench_echo (bench/mcp.sh).
const ToolBenchEcho = "bench_echo"

// BenchEchoInput carries padding (so the arguments can match another tool's
// in size) and the size of the payload to return.
type BenchEchoInput struct {
	Pad  string `json:"pad,omitzero"`
	Size int    `json:"size"`
}

// BenchEchoOutput is the answer: Payload has Size bytes.
type BenchEchoOutput struct {
	Payload string `json:"payload"`
}

func init() {
	benchTools = func(srv *mcp.Server) error {
		spec := qa.ToolSpec{Name: ToolBenchEcho, Title: "Benchmark echo", ReadOnlyHint: true, IdempotentHint: true,
			Description: "Returns a payload of the requested size (benchmark builds only)."}
		return addTool(srv, spec, nil, nil, func(_ context.Context, in BenchEchoInput) (BenchEchoOutput, error) {
			return BenchEchoOutput{Payload: strings.Repeat("x", max(0, min(in.Size, 16<<20)))}, nil
		})
	}
}
