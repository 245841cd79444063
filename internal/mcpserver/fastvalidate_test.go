package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// recordedCall is one tools/call's arguments as the server received them.
type recordedCall struct {
	tool string
	args json.RawMessage
}

// recordCalls returns a receiving middleware that records every tools/call
// and the calls recorded so far.
func recordCalls() (mcp.Middleware, func() []recordedCall) {
	var mu sync.Mutex
	var calls []recordedCall
	mw := func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && method == "tools/call" {
				mu.Lock()
				calls = append(calls, recordedCall{p.Name, slices.Clone(p.Arguments)})
				mu.Unlock()
			}
			return next(ctx, method, req)
		}
	}
	return mw, func() []recordedCall {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(calls)
	}
}

// toolSchemas returns every published tool's input schema, compiled for the
// fast path and resolved for the SDK's validator.
func toolSchemas(t *testing.T, e *env) (map[string]*fastSchema, map[string]*jsonschema.Resolved) {
	t.Helper()
	res, err := e.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	fast, resolved := map[string]*fastSchema{}, map[string]*jsonschema.Resolved{}
	for _, tool := range res.Tools {
		b, err := json.Marshal(tool.InputSchema)
		if err != nil {
			t.Fatal(err)
		}
		var s jsonschema.Schema
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		r, err := s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
		if err != nil {
			t.Fatal(err)
		}
		resolved[tool.Name] = r
		if fs := compileFast(&s); fs != nil {
			fast[tool.Name] = fs
		}
	}
	return fast, resolved
}

// validCalls drives the tools the way the other tests do (a complete
// review-bound flow, finish and export, reads, pages, deletes, the catalog)
// and returns the calls, each of which the SDK's validator accepted.
func validCalls(t *testing.T) (*env, []recordedCall) {
	mw, recorded := recordCalls()
	e := newEnv(t, envOptions{middleware: mw})
	f := runReviewFlow(t, e)
	var s qa.Session
	e.ok(qa.ToolFinish, qa.FinishInput{RunID: f.s.RunID, Outcome: qa.OutcomeCompleted, ExpectedRevision: ptr(f.s.Revision),
		RequestID: ptr("finish-1")}, &s)
	e.ok(qa.ToolExport, map[string]any{"run_id": s.RunID, "block_on": "high", "repo": "github.com/acme/shop"}, nil)
	e.ok(qa.ToolGet, qa.GetInput{RunID: s.RunID}, nil)
	var s2 qa.Session
	e.ok(qa.ToolStart, map[string]any{"task_type": "other"}, &s2)
	var l qa.ListOutput
	e.ok(qa.ToolList, map[string]any{"limit": 1}, &l)
	e.ok(qa.ToolList, map[string]any{"limit": 1000, "cursor": *l.NextCursor}, nil)
	e.ok(qa.ToolList, nil, nil)
	e.ok(qa.ToolCatalog, map[string]any{}, nil)
	e.ok(qa.ToolPrepare, map[string]any{"agent_profile": "security_reviewer"}, nil)
	e.ok(qa.ToolAdvance, map[string]any{"run_id": s2.RunID, "completed_step": "triage", "status": "blocked",
		"expected_revision": 0, "request_id": "stop.1:a"}, nil)
	e.ok(qa.ToolDelete, map[string]any{"run_id": s2.RunID, "expected_revision": 1}, nil)
	return e, recorded()
}

// TestFastValidateNeverAcceptsMore is the fast path's proof obligation:
// over the arguments of real calls and thousands of mutations of them
// (properties removed, nulled, retyped, lengthened, emptied, broken
// patterns, unknown properties, duplicate keys, escapes, other number
// spellings, truncations), the fast check never accepts arguments the SDK's
// validator rejects. It also requires the fast check to accept the real
// calls of the qa tools, so the fast path is the one they take.
func TestFastValidateNeverAcceptsMore(t *testing.T) {
	e, calls := validCalls(t)
	fast, resolved := toolSchemas(t, e)
	for _, name := range []string{qa.ToolStart, qa.ToolAdvance, qa.ToolGet, qa.ToolFinish, qa.ToolList, qa.ToolDelete, qa.ToolExport} {
		if fast[name] == nil {
			t.Errorf("%s: input schema has no fast path", name)
		}
	}
	rng := rand.New(rand.NewPCG(16, 4))
	var checked, bothAccept, onlySchema int
	check := func(tool string, raw []byte, what string) {
		t.Helper()
		fs := fast[tool]
		if fs == nil {
			return
		}
		checked++
		schemaOK := sdkValidate(resolved[tool], raw) == nil
		fastOK := fs.fastValidate(raw)
		if fastOK && !schemaOK {
			t.Fatalf("%s (%s): fast path accepts arguments the schema rejects (%v):\n%s", tool, what, sdkValidate(resolved[tool], raw), raw)
		}
		switch {
		case fastOK:
			bothAccept++
		case schemaOK:
			onlySchema++
		}
	}
	for _, c := range calls {
		raw := c.args
		if len(raw) == 0 {
			continue
		}
		if err := sdkValidate(resolved[c.tool], raw); err != nil {
			t.Fatalf("%s: recorded call rejected by the schema: %v", c.tool, err)
		}
		if fs := fast[c.tool]; fs != nil && !fs.fastValidate(raw) {
			t.Errorf("%s: fast path refuses a valid call:\n%s", c.tool, raw)
		}
		check(c.tool, raw, "as sent")
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatal(err)
		}
		for i := range 200 {
			m := mutate(rng, deepCopy(v))
			b, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			check(c.tool, b, fmt.Sprintf("mutation %d", i))
			for j, rb := range rawMutations(rng, b) {
				check(c.tool, rb, fmt.Sprintf("mutation %d, raw %d", i, j))
			}
		}
	}
	t.Logf("%d argument sets checked: %d accepted by both, %d by the schema only (they take the SDK's path), the rest by neither",
		checked, bothAccept, onlySchema)
	if bothAccept < 1000 || checked-bothAccept-onlySchema < 1000 {
		t.Errorf("mutations too narrow: %d accepted, %d rejected", bothAccept, checked-bothAccept-onlySchema)
	}
}

func deepCopy(v any) any {
	b, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

// replacements are the values mutate substitutes.
var replacements = []any{nil, true, false, 0.0, 1.0, -1.0, 1.5, 1e300, 2147483648.0, "", "x", "E1", "qar-00000000000000000000000000000000",
	"F-01", "high", "completed", "triage", "security_reviewer", "ordinary_review", strings.Repeat("a", 64), strings.Repeat("é", 513),
	strings.Repeat("z", 2001), "0123456789abcdef0123456789abcdef01234567", []any{}, []any{"E1"}, []any{nil}, []any{1.0},
	map[string]any{}, map[string]any{"x": 1.0}, "ünïcode", "tab\there", "line\nbreak", `quote"back\slash`}

// mutate changes one random place of v (which it may return replaced).
func mutate(rng *rand.Rand, v any) any {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		switch r := rng.IntN(10); {
		case r == 0 || len(keys) == 0:
			x[fmt.Sprintf("extra_%d", rng.IntN(3))] = replacements[rng.IntN(len(replacements))]
		case r == 1:
			delete(x, keys[rng.IntN(len(keys))])
		case r == 2:
			return replacements[rng.IntN(len(replacements))]
		default:
			k := keys[rng.IntN(len(keys))]
			x[k] = mutate(rng, x[k])
		}
		return x
	case []any:
		switch r := rng.IntN(8); {
		case r == 0 || len(x) == 0:
			return append(x, replacements[rng.IntN(len(replacements))])
		case r == 1:
			i := rng.IntN(len(x))
			return slices.Delete(x, i, i+1)
		case r == 2:
			return append(x, x[rng.IntN(len(x))]) // a duplicate item
		case r == 3:
			return replacements[rng.IntN(len(replacements))]
		default:
			i := rng.IntN(len(x))
			x[i] = mutate(rng, x[i])
			return x
		}
	case string:
		switch rng.IntN(6) {
		case 0:
			return x + "!"
		case 1:
			return strings.ToUpper(x)
		case 2:
			if len(x) > 0 {
				return x[:len(x)-1]
			}
			return x
		case 3:
			return strings.Repeat(x+"é", 1+rng.IntN(300))
		}
		return replacements[rng.IntN(len(replacements))]
	case float64:
		return []any{x + 1, x - 1, -x, x + 0.5, x * 1e9, 0.0}[rng.IntN(6)]
	}
	return replacements[rng.IntN(len(replacements))]
}

// rawMutations spells b in other ways the map cannot express: a duplicate
// key, escaped characters, other number spellings, whitespace, truncation,
// trailing data.
func rawMutations(rng *rand.Rand, b []byte) [][]byte {
	s := string(b)
	var out []string
	if i := strings.Index(s, `":`); i > 0 {
		j := strings.LastIndex(s[:i], `"`)
		if j >= 0 {
			k := strings.Index(s[i+2:], ",")
			if k > 0 {
				dup := s[j:i+2+k] + ","
				out = append(out, s[:1]+dup+s[1:])
			}
		}
	}
	out = append(out,
		strings.Replace(s, "a", `\u0061`, 1),
		strings.Replace(s, "e", `\u00e9`, 1),
		strings.Replace(s, "E1", `\uD83D\uDE00`, 1),
		strings.Replace(s, "_", `\/`, 1),
		strings.Replace(s, `":0`, `":0.0`, 1),
		strings.Replace(s, `":1`, `":1e0`, 1),
		strings.Replace(s, `":0`, `":-0`, 1),
		strings.Replace(s, `":1`, `":01`, 1),
		strings.ReplaceAll(s, ",", " ,\n\t"),
		s[:rng.IntN(len(s))],
		s+" ",
		s+"x",
		s+"{}",
		"\xff"+s,
		strings.Replace(s, "a", "\x01", 1),
		strings.Replace(s, "a", "\xc3", 1),
		"["+s+"]",
	)
	res := make([][]byte, len(out))
	for i, o := range out {
		res[i] = []byte(o)
	}
	return res
}

// FuzzFastValidate checks the same obligation on arbitrary bytes for the
// start and advance schemas (go test -fuzz FuzzFastValidate; plain go test
// runs the seeds).
func FuzzFastValidate(f *testing.F) {
	start, err := schemaFor[qa.StartInput](nil)
	if err != nil {
		f.Fatal(err)
	}
	advance, err := schemaFor[qa.AdvanceInput](nil)
	if err != nil {
		f.Fatal(err)
	}
	schemas := []*jsonschema.Schema{start, advance}
	var fast []*fastSchema
	var resolved []*jsonschema.Resolved
	for _, s := range schemas {
		r, err := s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
		if err != nil {
			f.Fatal(err)
		}
		fast, resolved = append(fast, compileFast(s)), append(resolved, r)
	}
	rc, _ := json.Marshal(reviewContext())
	f.Add(false, []byte(`{"task_type":"other"}`))
	f.Add(false, []byte(`{"task_type":"other","review_context":`+string(rc)+`}`))
	f.Add(true, []byte(`{"run_id":"qar-0123456789abcdef0123456789abcdef","completed_step":"triage","status":"blocked","expected_revision":0}`))
	f.Add(true, []byte(`{"run_id":"qar-0123456789abcdef0123456789abcdef","completed_step":"triage","status":"completed","selected_bundle":"security","request_id":"a\u0062"}`))
	f.Fuzz(func(t *testing.T, advance bool, raw []byte) {
		i := 0
		if advance {
			i = 1
		}
		if fast[i].fastValidate(raw) {
			if err := sdkValidate(resolved[i], raw); err != nil {
				t.Fatalf("fast path accepts what the schema rejects (%v): %q", err, raw)
			}
		}
	})
}

// TestFastValidateTrueSchema: a property whose schema is true accepts any
// value, and the document is still checked (syntax, the other properties).
func TestFastValidateTrueSchema(t *testing.T) {
	fs, err := compileFastMap(map[string]any{"type": "object", "additionalProperties": false,
		"properties": map[string]any{"a": true, "b": map[string]any{"type": "string"}}})
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]bool{
		`{"a":{"x":[1,"y",null,{"z":true}]},"b":"s"}`: true,
		`{"a":7}`:        true,
		`{"a":[1,}`:      false,
		`{"a":1,"b":2}`:  false,
		`{"a":1,"c":2}`:  false,
		`{"a":"\ud800"}`: false, // a surrogate escape: the SDK's path decides
	} {
		if got := fs.fastValidate([]byte(in)); got != want {
			t.Errorf("%s: fast path %v, want %v", in, got, want)
		}
	}
}
