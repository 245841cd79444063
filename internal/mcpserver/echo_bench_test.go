//go:build diffpal_bench_echo

package mcpserver

import (
	"encoding/json"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// TestBenchEchoFastPath (bench builds: go test -tags diffpal_bench_echo):
// the echo's same-call arguments, a qa tool's arguments under "args", take
// the fast path (checked in one pass, decoded as raw bytes), so the floor
// does not include the SDK's map decoding and validation.
func TestBenchEchoFastPath(t *testing.T) {
	s, err := schemaFor[BenchEchoInput](func(s *jsonschema.Schema) { s.Properties["args"] = &jsonschema.Schema{} })
	if err != nil {
		t.Fatal(err)
	}
	fast := compileFast(s)
	if fast == nil {
		t.Fatal("the echo's input schema does not compile for the fast path")
	}
	args, _ := json.Marshal(map[string]any{"slot": "start_qa_orchestration", "args": map[string]any{
		"task_type": "ordinary_review", "review_context": map[string]any{"evidence_refs": []string{"f1:h1", "f2:h1"}, "n": 1.5}}})
	if !fast.fastValidate(args) {
		t.Errorf("fast path refuses %s", args)
	}
	var in BenchEchoInput
	if err := sdkUnmarshal(args, &in); err != nil || len(in.Args) == 0 || in.Slot == "" {
		t.Errorf("decoded %+v, %v", in, err)
	}
}
