package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	segjson "github.com/segmentio/encoding/json"
)

// rawToolHandler returns the typed handler h as a raw mcp.ToolHandler that
// answers exactly like mcp.AddTool's wrapper (same validation, same error
// texts, same result shape) without its per-call copies:
//
//   - arguments are first checked in one pass over their JSON by the input
//     schema compiled for that (fastSchema, fastvalidate.go), which accepts
//     only what the SDK's validator accepts too; then In is decoded from
//     the arguments themselves, with the SDK's decoder settings (segmentio,
//     case-sensitive field names, the same nesting limit). Arguments the
//     fast check does not accept (invalid ones, and the few valid shapes it
//     does not model) are decoded to a map and validated against the
//     resolved input schema with the SDK's validator, so error texts are
//     the SDK's; then, as before, In is decoded from the arguments, and if
//     that decode fails the SDK's path (re-marshal the validated map and
//     decode that) decides, so inputs the SDK accepts through its float64
//     round trip (1.0 for an integer) still work. Under go test every fast
//     acceptance is also checked against the SDK's validator;
//   - the result is marshalled once and sent as structured content and as
//     its text. The SDK decodes its own output into a map, validates it,
//     and re-marshals it with sorted keys: the same JSON value, keys in
//     another order. Output validation guards against server bugs only; it
//     still runs under go test (testing.Testing), where every test checks
//     the results against the published output schemas.
//
// It returns nil (use mcp.AddTool) for shapes it does not handle: a pointer
// Out or schemas that declare defaults.
func rawToolHandler[In, Out any](tool *mcp.Tool, h mcp.ToolHandlerFor[In, Out]) (mcp.ToolHandler, error) {
	if reflect.TypeFor[Out]().Kind() == reflect.Pointer || reflect.TypeFor[In]().Kind() == reflect.Pointer {
		return nil, nil
	}
	inSchema, ok1 := tool.InputSchema.(*jsonschema.Schema)
	outSchema, ok2 := tool.OutputSchema.(*jsonschema.Schema)
	if !ok1 || !ok2 || hasDefaults(inSchema) || hasDefaults(outSchema) {
		return nil, nil
	}
	inResolved, err := inSchema.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	outResolved, err := outSchema.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		return nil, fmt.Errorf("output schema: %w", err)
	}
	validateOutput, checkFast := testChecks, testChecks
	fast := compileFast(inSchema)
	// Tools that answer with a session let the orchestrator hand over the
	// session's JSON when it has it (qa.WithSessionJSON): the payload it
	// just stored, or for a get the stored payload itself, undecoded.
	sessionOut := reflect.TypeFor[Out]() == reflect.TypeFor[qa.Session]()
	finish := func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, error) {
		var raw []byte
		if sessionOut {
			ctx = qa.WithSessionJSON(ctx, &raw)
		}
		res, out, err := h(ctx, req, in)
		if err != nil {
			if wireErr, ok := err.(*jsonrpc.Error); ok {
				return nil, wireErr
			}
			return errResult(err), nil
		}
		if res == nil {
			res = &mcp.CallToolResult{}
		}
		if res.InputRequests != nil {
			return res, nil
		}
		outJSON := raw
		if outJSON == nil {
			if outJSON, err = marshalOutput(out); err != nil {
				return nil, fmt.Errorf("marshaling output: %w", err)
			}
		} else if testChecks {
			if err := checkSessionJSON(out, raw); err != nil {
				return nil, err
			}
		}
		if validateOutput {
			var v any
			if err := sdkUnmarshal(outJSON, &v); err != nil {
				return nil, fmt.Errorf("validating tool output: unmarshaling output: %w", err)
			}
			if err := outResolved.Validate(&v); err != nil {
				return nil, fmt.Errorf("validating tool output: %w", err)
			}
		}
		res.StructuredContent = json.RawMessage(outJSON)
		if res.Content == nil {
			res.Content = []mcp.Content{&mcp.TextContent{Text: string(outJSON)}}
		} else if !bytes.HasPrefix(bytes.TrimLeft(outJSON, " \t\r\n"), []byte("{")) {
			res.Content = append(res.Content, &mcp.TextContent{Text: string(outJSON)})
		}
		return res, nil
	}
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args json.RawMessage
		if req.Params.Arguments != nil {
			args = req.Params.Arguments
		}
		// The fast path: arguments the compiled schema accepts are valid
		// for the SDK's validator too (fastSchema), so the typed decode
		// is all that is left. Anything else, and a typed decode that
		// fails, takes the SDK's path below, which decides.
		if fast != nil && len(args) > 0 && fast.fastValidate(args) {
			if checkFast {
				// Under go test every fast answer is checked against
				// the SDK's validator: each test is also a test of the
				// fast path.
				if err := sdkValidate(inResolved, args); err != nil {
					return nil, fmt.Errorf("fast path accepted arguments the input schema rejects: %v", err)
				}
			}
			var in In
			if sdkUnmarshal(args, &in) == nil {
				return finish(ctx, req, in)
			}
		}
		m := make(map[string]any)
		if len(args) > 0 {
			if err := sdkUnmarshal(args, &m); err != nil {
				return errResult(fmt.Errorf("validating \"arguments\": %v", fmt.Errorf("unmarshaling arguments: %w", err))), nil
			}
		}
		var mv any = m
		if err := inResolved.Validate(&mv); err != nil {
			return errResult(fmt.Errorf("validating \"arguments\": %v", err)), nil
		}
		var in In
		if len(args) == 0 || sdkUnmarshal(args, &in) != nil {
			// The SDK's own path: the validated map, re-marshalled.
			in = *new(In)
			b, err := json.Marshal(mv)
			if err != nil {
				return errResult(fmt.Errorf("validating \"arguments\": %v", fmt.Errorf("marshalling with defaults: %v", err))), nil
			}
			if err := sdkUnmarshal(b, &in); err != nil {
				return errResult(err), nil
			}
		}
		return finish(ctx, req, in)
	}, nil
}

// marshalOutput is json.Marshal(out). An Out with its own MarshalJSON (the
// qa session types, whose writer already produces compact JSON with
// json.Marshal's escaping) is written by it directly, skipping the
// re-compaction json.Marshal adds; under go test the bytes are compared
// with json.Marshal's.
func marshalOutput(out any) ([]byte, error) {
	m, ok := out.(json.Marshaler)
	if !ok {
		return json.Marshal(out)
	}
	b, err := m.MarshalJSON()
	if err != nil || !testChecks {
		return b, err
	}
	std, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(std, b) {
		return nil, fmt.Errorf("%T.MarshalJSON differs from json.Marshal:\n%s\n%s", out, b, std)
	}
	return b, nil
}

// checkSessionJSON (go test only) checks session JSON handed over by the
// orchestrator against what marshalling would have produced: json.Marshal
// of the returned session, or, when the orchestrator returned none (a get
// answered from the stored payload), of the session that payload decodes
// to, which is what the get would otherwise have returned.
func checkSessionJSON(out any, raw []byte) error {
	v := reflect.ValueOf(out)
	if v.IsZero() {
		p := reflect.New(v.Type())
		if err := segjson.Unmarshal(raw, p.Interface()); err != nil {
			return fmt.Errorf("session JSON does not decode: %w", err)
		}
		out = p.Elem().Interface()
	}
	std, err := json.Marshal(out)
	if err != nil {
		return err
	}
	if !bytes.Equal(std, raw) {
		return fmt.Errorf("session JSON differs from json.Marshal of the session:\n%s\n%s", raw, std)
	}
	return nil
}

// sdkValidate is the SDK's input validation of args: decoded to a map,
// then validated by the resolved schema.
func sdkValidate(resolved *jsonschema.Resolved, args []byte) error {
	m := make(map[string]any)
	if len(args) > 0 {
		if err := sdkUnmarshal(args, &m); err != nil {
			return fmt.Errorf("unmarshaling arguments: %w", err)
		}
	}
	var mv any = m
	return resolved.Validate(&mv)
}

// testChecks turns on the checks only tests pay for: results validated
// against the output schema, fast-path acceptances against the SDK's
// input validation. Benchmarks turn it off to measure what a server does.
var testChecks = testing.Testing()

func errResult(err error) *mcp.CallToolResult {
	var r mcp.CallToolResult
	r.SetError(err)
	return &r
}

// hasDefaults reports whether the schema may declare a default anywhere
// (the SDK applies them to the arguments, which this path does not). It
// looks for the keyword in the schema's JSON, so a property named
// "default" also counts: a false positive only selects the SDK's path.
func hasDefaults(s *jsonschema.Schema) bool {
	b, err := json.Marshal(s)
	return err != nil || bytes.Contains(b, []byte(`"default"`))
}

// sdkMaxDepth is the SDK's nesting limit for decoded JSON (internal/json).
const sdkMaxDepth = 1000

// sdkUnmarshal decodes like the SDK's internal/json.Unmarshal: a nesting
// limit, then segmentio's decoder with case-sensitive field names.
func sdkUnmarshal(data []byte, v any) error {
	depth, inString, escaped := 0, false, false
	for _, b := range data {
		if inString {
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
			continue
		}
		switch b {
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > sdkMaxDepth {
				return fmt.Errorf("json: exceeded maximum nesting depth of %d", sdkMaxDepth)
			}
		case '}', ']':
			if depth > 0 {
				depth--
			}
		}
	}
	dec := segjson.NewDecoder(bytes.NewReader(data))
	dec.DontMatchCaseInsensitiveStructFields()
	return dec.Decode(v)
}
