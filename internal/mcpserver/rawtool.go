package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	segjson "github.com/segmentio/encoding/json"
)

// rawToolHandler returns the typed handler h as a raw mcp.ToolHandler that
// answers exactly like mcp.AddTool's wrapper (same validation, same error
// texts, same result shape) without its per-call copies:
//
//   - arguments are still decoded to a map and validated against the
//     resolved input schema with the SDK's validator (so error texts are the
//     SDK's), but when the schema declares no defaults the map is not
//     re-marshalled: In is decoded from the arguments themselves, with the
//     SDK's decoder settings (segmentio, case-sensitive field names, the
//     same nesting limit). If that decode fails, the SDK's path (re-marshal
//     the validated map and decode that) decides, so inputs the SDK accepts
//     through its float64 round trip (1.0 for an integer) still work;
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
	validateOutput := testing.Testing()
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args json.RawMessage
		if req.Params.Arguments != nil {
			args = req.Params.Arguments
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
		outJSON, err := json.Marshal(out)
		if err != nil {
			return nil, fmt.Errorf("marshaling output: %w", err)
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
	}, nil
}

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
