//go:build diffpal_bench_echo

package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"

	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ToolBenchEcho is the benchmark's floor: a tool registered exactly like the
// qa tools (addTool: typed input and output, inferred schemas, the SDK's
// validation and structured content) that does no work beyond handing back
// an answer. It exists only in binaries built with -tags
// diffpal_bench_echo (bench/mcp.sh).
//
// It answers in one of two ways:
//   - {"size": N}: a payload of N bytes, {"payload":"xxx…"} (a flat
//     string: the cheapest answer of that size to encode and decode);
//   - {"slot": S, "args": ARGS}: the answer kept under S by an earlier,
//     untimed call {"slot": S, "keep": ANSWER}; ARGS is any JSON value,
//     taken as it is (not decoded). The benchmark sends a qa tool's own
//     arguments and keeps its own answer, so the echo costs the transport
//     and the SDK exactly what that call's bytes cost them (their nesting,
//     their escapes), and the difference is the server's work alone.
const ToolBenchEcho = "bench_echo"

// BenchEchoInput carries padding (so the arguments can match another tool's
// in size) and what to answer.
type BenchEchoInput struct {
	Pad  string          `json:"pad,omitzero"`
	Size int             `json:"size,omitzero"`
	Slot string          `json:"slot,omitzero"`
	Keep any             `json:"keep,omitzero"`
	Args json.RawMessage `json:"args,omitzero"`
}

// benchEchoOutput is the answer: a payload of the requested size, or a kept
// answer's JSON as it is.
type benchEchoOutput struct {
	payload string
	raw     []byte
}

func (o benchEchoOutput) MarshalJSON() ([]byte, error) {
	if o.raw != nil {
		return o.raw, nil
	}
	return json.Marshal(struct {
		Payload string `json:"payload"`
	}{o.payload})
}

func init() {
	var (
		mu   sync.Mutex
		kept = map[string][]byte{}
	)
	benchTools = func(srv *mcp.Server) error {
		spec := qa.ToolSpec{Name: ToolBenchEcho, Title: "Benchmark echo", ReadOnlyHint: true, IdempotentHint: true,
			Description: "Returns a payload of the requested size, or an answer kept before (benchmark builds only)."}
		anyObject := func(s *jsonschema.Schema) { s.Properties, s.AdditionalProperties, s.Required = nil, nil, nil }
		anyArgs := func(s *jsonschema.Schema) { s.Properties["args"] = &jsonschema.Schema{} }
		return addTool(srv, spec, anyArgs, anyObject, func(_ context.Context, in BenchEchoInput) (benchEchoOutput, error) {
			switch {
			case in.Slot != "" && in.Keep != nil:
				b, err := json.Marshal(in.Keep)
				if err != nil || !strings.HasPrefix(string(b), "{") {
					return benchEchoOutput{}, errors.New("keep must be a JSON object")
				}
				mu.Lock()
				kept[in.Slot] = b
				mu.Unlock()
				return benchEchoOutput{raw: b}, nil
			case in.Slot != "":
				mu.Lock()
				b := kept[in.Slot]
				mu.Unlock()
				if b == nil {
					return benchEchoOutput{}, errors.New("nothing kept under slot " + in.Slot)
				}
				return benchEchoOutput{raw: b}, nil
			}
			return benchEchoOutput{payload: strings.Repeat("x", max(0, min(in.Size, 16<<20)))}, nil
		})
	}
}
