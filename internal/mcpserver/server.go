package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMaxRequestBytes bounds one tool call's arguments (and, over HTTP,
// one request body) unless configured otherwise (QA-CONTRACT §8).
const DefaultMaxRequestBytes int64 = 4 << 20

// ServerName is the MCP implementation name the server reports.
const ServerName = "diffpal"

// instructions are returned on initialize; hosts show them to the model.
const instructions = `diffpal QA orchestration: the host runs the review, this server keeps the session state.
The review_change prompt spells out the whole flow for one change.
Flow: get_review_context (if offered; else the output of diffpal context) -> start_qa_orchestration
with that review_context -> advance_qa_orchestration per step (triage selects exactly one bundle or
profile; one call per primary-review profile, with profile_report on review-bound sessions and
risk_signals on the last; deep_review if escalated; synthesis with final_review_report)
-> finish_qa_orchestration -> export_qa_findings for a findings bundle.
Use expected_revision and request_id on mutating calls so retries after a lost response are safe.
Errors start with a fixed lower-case code such as "unknown run_id" or "revision conflict".`

// Options configure New. Zero values select the defaults.
type Options struct {
	// Version is reported as the server implementation version.
	Version string
	// MaxRequestBytes bounds the JSON size of one tool call's arguments on
	// every transport; 0 selects DefaultMaxRequestBytes, and a negative
	// value is an error.
	MaxRequestBytes int64
	// Logger receives SDK diagnostics; nil discards them.
	Logger *slog.Logger
	// LocalRepo, when set, is the git repository get_review_context reads
	// (and the review_change prompt summarizes). Nil leaves the tool out.
	LocalRepo *LocalRepo
}

// New returns an MCP server exposing every tool of qa.Tools() over orch,
// get_review_context when opts.LocalRepo is set, and the prompts.
// The server holds no state of its own: sessions live in orch's store, so
// one server may be shared by any number of connections, and several
// processes sharing a store can answer any call.
func New(orch *qa.Orchestrator, opts Options) (*mcp.Server, error) {
	if orch == nil {
		return nil, errors.New("mcpserver: nil orchestrator")
	}
	limit := opts.MaxRequestBytes
	if limit < 0 {
		return nil, fmt.Errorf("mcpserver: negative MaxRequestBytes %d", limit)
	}
	if limit == 0 {
		limit = DefaultMaxRequestBytes
	}
	version := opts.Version
	if version == "" {
		version = "(devel)"
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: ServerName, Title: "diffpal QA orchestration", Version: version},
		&mcp.ServerOptions{
			Instructions: instructions,
			Logger:       opts.Logger,
			// The tool and prompt sets are fixed for the life of the server.
			Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}, Prompts: &mcp.PromptCapabilities{}},
		})
	srv.AddReceivingMiddleware(limitArguments(limit))
	if err := registerTools(srv, orch); err != nil {
		return nil, err
	}
	if l := opts.LocalRepo; l != nil {
		if l.Dir == "" {
			return nil, errors.New("mcpserver: LocalRepo without Dir")
		}
		if err := addReviewContextTool(srv, l); err != nil {
			return nil, fmt.Errorf("mcpserver: tool %s: %w", ToolReviewContext, err)
		}
	}
	registerPrompts(srv, opts.LocalRepo)
	if benchTools != nil {
		if err := benchTools(srv); err != nil {
			return nil, err
		}
	}
	return srv, nil
}

// benchTools, when set, registers extra tools after the shipped ones. Only
// the benchmark build (tag diffpal_bench_echo, echo_bench.go) sets it; the
// shipped tool list never contains them.
var benchTools func(*mcp.Server) error

// registerTools binds each qa.ToolSpec to its library call. Titles,
// descriptions and hints come from the library so every adapter publishes
// the same text.
func registerTools(srv *mcp.Server, o *qa.Orchestrator) error {
	binders := map[string]func(qa.ToolSpec) error{
		qa.ToolPrepare: func(spec qa.ToolSpec) error {
			return addTool(srv, spec, nil, nil, func(_ context.Context, in qa.PrepareInput) (qa.ReviewRoute, error) {
				return qa.Prepare(in)
			})
		},
		qa.ToolCatalog: func(spec qa.ToolSpec) error {
			return addTool(srv, spec, nil, patchCatalogOutput, func(context.Context, emptyInput) (qa.Catalog, error) {
				return qa.GetCatalog(), nil
			})
		},
		qa.ToolModelPolicy: func(spec qa.ToolSpec) error {
			return addTool(srv, spec, nil, nil, func(context.Context, emptyInput) (qa.ModelPolicyInfo, error) {
				return o.ModelPolicy(), nil
			})
		},
		qa.ToolStart: func(spec qa.ToolSpec) error {
			return addTool(srv, spec, nil, nil, o.Start)
		},
		qa.ToolAdvance: func(spec qa.ToolSpec) error {
			return addTool(srv, spec, nil, nil, o.Advance)
		},
		qa.ToolGet: func(spec qa.ToolSpec) error {
			return addTool(srv, spec, nil, nil, o.Get)
		},
		qa.ToolList: func(spec qa.ToolSpec) error {
			return addTool(srv, spec, nil, nil, o.List)
		},
		qa.ToolFinish: func(spec qa.ToolSpec) error {
			return addTool(srv, spec, nil, nil, o.Finish)
		},
		qa.ToolDelete: func(spec qa.ToolSpec) error {
			return addTool(srv, spec, nil, nil, o.Delete)
		},
		qa.ToolExport: func(spec qa.ToolSpec) error {
			return addTool(srv, spec, nil, nil, func(ctx context.Context, in qa.ExportInput) (ExportOutput, error) {
				exp, err := o.Export(ctx, in)
				if err != nil {
					return ExportOutput{}, err
				}
				return BuildBundle(exp)
			})
		},
	}
	for _, spec := range qa.Tools() {
		bind, ok := binders[spec.Name]
		if !ok {
			return fmt.Errorf("mcpserver: qa tool %q has no binding", spec.Name)
		}
		delete(binders, spec.Name)
		if err := bind(spec); err != nil {
			return fmt.Errorf("mcpserver: tool %s: %w", spec.Name, err)
		}
	}
	for name := range binders {
		return fmt.Errorf("mcpserver: binding %q has no qa tool spec", name)
	}
	return nil
}

func boolPtr(b bool) *bool { return &b }

// annotations maps a spec's hints; destructiveHint is left unset for
// read-only tools, where the spec says it is meaningless (anchor presets).
func annotations(spec qa.ToolSpec) *mcp.ToolAnnotations {
	a := &mcp.ToolAnnotations{
		Title:          spec.Title,
		ReadOnlyHint:   spec.ReadOnlyHint,
		IdempotentHint: spec.IdempotentHint,
		OpenWorldHint:  boolPtr(spec.OpenWorldHint),
	}
	if !spec.ReadOnlyHint {
		a.DestructiveHint = boolPtr(spec.DestructiveHint)
	}
	return a
}

// addTool registers one typed tool with schemas inferred from In and Out
// (with the library's rules, see schemaFor). The SDK validates arguments
// against the input schema (unknown properties are rejected: struct
// schemas are closed) and the result against the output schema, and returns the result as structured content plus its JSON
// text. Errors from call become tool errors (isError) whose text is the
// library's, so it starts with the fixed error code.
func addTool[In, Out any](srv *mcp.Server, spec qa.ToolSpec, inPatch, outPatch func(*jsonschema.Schema),
	call func(context.Context, In) (Out, error)) error {
	return addToolText(srv, spec, inPatch, outPatch, call, nil)
}

// addToolText is addTool; text, when set, renders the result's text
// content (the SDK's default is the structured content re-marshalled, with
// sorted keys).
func addToolText[In, Out any](srv *mcp.Server, spec qa.ToolSpec, inPatch, outPatch func(*jsonschema.Schema),
	call func(context.Context, In) (Out, error), text func(Out) (string, error)) error {
	inSchema, err := schemaFor[In](inPatch)
	if err != nil {
		return fmt.Errorf("input schema: %w", err)
	}
	outSchema, err := schemaFor[Out](outPatch)
	if err != nil {
		return fmt.Errorf("output schema: %w", err)
	}
	tool := &mcp.Tool{
		Name:         spec.Name,
		Title:        spec.Title,
		Description:  spec.Description,
		InputSchema:  inSchema,
		OutputSchema: outSchema,
		Annotations:  annotations(spec),
	}
	handler := func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
		if req != nil && req.Params != nil {
			ctx = qa.WithArguments(ctx, req.Params.Arguments)
		}
		out, err := call(ctx, in)
		if err != nil {
			var zero Out
			return nil, zero, err
		}
		if text != nil {
			t, err := text(out)
			if err != nil {
				var zero Out
				return nil, zero, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: t}}}, out, nil
		}
		return nil, out, nil
	}
	raw, err := rawToolHandler(tool, handler)
	if err != nil {
		return err
	}
	if raw == nil {
		mcp.AddTool(srv, tool, handler)
		return nil
	}
	srv.AddTool(tool, raw)
	return nil
}

// limitArguments rejects tool calls whose arguments exceed limit bytes with
// a tool error, before they are decoded or validated. Over HTTP the request
// body limit usually answers first; on stdio this is the limit.
func limitArguments(limit int64) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/call" {
				if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && int64(len(p.Arguments)) > limit {
					res := &mcp.CallToolResult{}
					res.SetError(&qa.Error{Code: qa.CodeInvalidArgument, Field: "arguments",
						Detail: fmt.Sprintf("request is %d bytes, over the server's limit of %d bytes", len(p.Arguments), limit)})
					return res, nil
				}
			}
			return next(ctx, method, req)
		}
	}
}
