package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/diffpalhq/diffpal/internal/evidence"
	"github.com/diffpalhq/diffpal/internal/git"
	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/diffpalhq/diffpal/internal/review"
	"github.com/diffpalhq/diffpal/internal/reviewctx"
	"github.com/diffpalhq/diffpal/internal/scope"
	"github.com/diffpalhq/diffpal/internal/textsafe"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ToolReviewContext is the read-only context tool, registered only when
// the server has a local repository (Options.LocalRepo).
const ToolReviewContext = "get_review_context"

// Limits of get_review_context's arguments.
const (
	// DefaultPacketBytes is the content budget when include_packet is set
	// without max_packet_bytes.
	DefaultPacketBytes = 1_000_000
	// MaxPacketBytes is context_selection's max_bytes limit (QA-CONTRACT §4).
	MaxPacketBytes = 2_000_000
	maxRevisionLen = 256
	maxPaths       = 100
)

// Error codes of get_review_context (besides qa's "invalid argument").
const (
	// CodeUnbindable: the range resolved, but the change cannot be bound to
	// a session (no changed files, over the contract limits).
	CodeUnbindable qa.Code = "change cannot be bound"
	// CodeRepository: git failed on the server's repository.
	CodeRepository qa.Code = "unable to read repository"
)

// LocalRepo is the git repository get_review_context reads.
type LocalRepo struct {
	// Dir is the repository's top level (or any directory in it; paths
	// are relative to Dir).
	Dir string
	// ConfigSource chooses where .diffpalignore is read from, as `diffpal
	// context --config-source` ("" means auto: base in CI, else worktree).
	ConfigSource string
	// Getenv decides "auto" (CI variables); nil reads nothing.
	Getenv func(string) string
}

func (l *LocalRepo) request(base, head string, paths []string) reviewctx.Request {
	return reviewctx.Request{Dir: l.Dir, Range: git.RangeOptions{Base: base, Head: head}, Paths: paths,
		ConfigSource: l.ConfigSource, Getenv: l.Getenv}
}

// ReviewContextInput are get_review_context's arguments.
type ReviewContextInput struct {
	Base           string   `json:"base" jsonschema:"Base revision (branch, tag or commit). The change is diffed from merge-base(base, head), as diffpal context --base does."`
	Head           *string  `json:"head,omitzero" jsonschema:"Head revision under review; default HEAD. Must be committed: a review-bound session needs commit SHAs."`
	Paths          []string `json:"paths,omitzero" jsonschema:"Limit the change to these pathspecs (up to 100), relative to the repository root; absolute paths and .. are refused."`
	IncludePacket  bool     `json:"include_packet,omitzero" jsonschema:"Also return the evidence items with their redacted content (packet), cut to max_packet_bytes."`
	MaxPacketBytes *int     `json:"max_packet_bytes,omitzero" jsonschema:"Byte budget for item contents with include_packet: 1-2000000, default 1000000. Items that do not fit are listed in packet.context_selection.budget_omitted_refs."`
}

// RangeInfo says how the range was resolved.
type RangeInfo struct {
	BaseRef string `json:"base_ref"`
	HeadRef string `json:"head_ref"`
	// DiffBase is the commit the diff starts from (the merge base).
	DiffBase string `json:"diff_base"`
	Why      string `json:"why"`
}

// PacketOutput is the selected evidence with its content and the
// context_selection a profile report may assert for it.
type PacketOutput struct {
	Items            []reviewctx.PacketItem `json:"items"`
	ContextSelection qa.ContextSelection    `json:"context_selection"`
}

// ReviewContextOutput is get_review_context's result.
type ReviewContextOutput struct {
	// ReviewContext is start_qa_orchestration's review_context, byte for
	// byte what `diffpal context` prints for the same range.
	ReviewContext *evidence.ReviewContext `json:"review_context"`
	Range         RangeInfo               `json:"range"`
	Skipped       []scope.Skip            `json:"skipped"`
	Coalesced     *string                 `json:"coalesced"`
	// Packet is null unless include_packet was set.
	Packet *PacketOutput `json:"packet"`
}

func reviewContextSpec() qa.ToolSpec {
	return qa.ToolSpec{Name: ToolReviewContext, Title: "Compute review context from git",
		Description:  "Compute the review_context of base..head in the server's git repository (the same object and evidence refs as `diffpal context`), to pass unchanged to start_qa_orchestration; with include_packet also the redacted evidence items to review, cut to a byte budget. Reads git only; stores nothing.",
		ReadOnlyHint: true, IdempotentHint: true}
}

// addReviewContextTool registers get_review_context. Its text content is
// the result in field order, HTML characters unescaped, so the
// review_context inside it is byte for byte diffpal context's (which
// json.Indent reproduces); the structured content is the same JSON.
func addReviewContextTool(srv *mcp.Server, l *LocalRepo) error {
	return addToolText(srv, reviewContextSpec(), patchReviewContextInput, nil, l.getReviewContext,
		func(out ReviewContextOutput) (string, error) {
			var b bytes.Buffer
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(out); err != nil {
				return "", err
			}
			return strings.TrimSuffix(b.String(), "\n"), nil
		})
}

func patchReviewContextInput(s *jsonschema.Schema) {
	base := prop(s, "base")
	base.MinLength, base.MaxLength = jsonschema.Ptr(1), jsonschema.Ptr(maxRevisionLen)
	head := prop(s, "head")
	head.MinLength, head.MaxLength = jsonschema.Ptr(1), jsonschema.Ptr(maxRevisionLen)
	paths := prop(s, "paths")
	paths.Type, paths.Types = "array", nil
	paths.MaxItems = jsonschema.Ptr(maxPaths)
	paths.Items.MinLength, paths.Items.MaxLength = jsonschema.Ptr(1), jsonschema.Ptr(evidence.MaxPathLen)
	mb := prop(s, "max_packet_bytes")
	mb.Minimum, mb.Maximum = jsonschema.Ptr(1.0), jsonschema.Ptr(float64(MaxPacketBytes))
}

func argError(field, format string, args ...any) error {
	return &qa.Error{Code: qa.CodeInvalidArgument, Field: field, Detail: fmt.Sprintf(format, args...)}
}

// checkRevision refuses what no revision name needs: leading '-', control
// characters, over-long values. git checks the rest.
func checkRevision(field, rev string) error {
	switch {
	case rev == "":
		return argError(field, "must not be empty")
	case len(rev) > maxRevisionLen:
		return argError(field, "longer than %d characters", maxRevisionLen)
	case strings.HasPrefix(rev, "-"):
		return argError(field, "must not start with '-'")
	case strings.IndexFunc(rev, unicode.IsControl) >= 0 || strings.ContainsRune(rev, ' '):
		return argError(field, "must not contain spaces or control characters")
	}
	return nil
}

// checkPath keeps pathspecs inside the repository: relative, no ..
// component, no pathspec magic.
func checkPath(field, p string) error {
	switch {
	case p == "" || len(p) > evidence.MaxPathLen:
		return argError(field, "must be 1-%d characters", evidence.MaxPathLen)
	case strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) || (len(p) > 1 && p[1] == ':'):
		return argError(field, "must be relative to the repository root")
	case strings.HasPrefix(p, ":") || strings.HasPrefix(p, "-"):
		return argError(field, "pathspec magic and leading '-' are not accepted")
	case strings.IndexFunc(p, unicode.IsControl) >= 0:
		return argError(field, "must not contain control characters")
	}
	for _, seg := range strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == '\\' }) {
		if seg == ".." {
			return argError(field, "must not contain '..'")
		}
	}
	return nil
}

// buildContext validates the range arguments and computes the change.
func (l *LocalRepo) buildContext(ctx context.Context, base string, head *string, paths []string) (*reviewctx.Result, error) {
	if err := checkRevision("base", base); err != nil {
		return nil, err
	}
	h := ""
	if head != nil {
		if err := checkRevision("head", *head); err != nil {
			return nil, err
		}
		h = *head
	}
	if len(paths) > maxPaths {
		return nil, argError("paths", "at most %d pathspecs", maxPaths)
	}
	for i, p := range paths {
		if err := checkPath(fmt.Sprintf("paths[%d]", i), p); err != nil {
			return nil, err
		}
	}
	res, err := reviewctx.Build(ctx, l.request(base, h, paths))
	if err != nil {
		return nil, contextError(err)
	}
	return res, nil
}

// contextError maps reviewctx's errors onto fixed codes.
func contextError(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	msg := textsafe.Terminal(err.Error())
	var ue *reviewctx.UsageError
	switch {
	case errors.As(err, &ue) && ue.Unbindable:
		return &qa.Error{Code: CodeUnbindable, Detail: msg}
	case errors.As(err, &ue):
		return &qa.Error{Code: qa.CodeInvalidArgument, Field: "range", Detail: msg}
	case errors.Is(err, review.ErrInput):
		return &qa.Error{Code: qa.CodeInvalidArgument, Field: "paths", Detail: msg}
	}
	return &qa.Error{Code: CodeRepository, Detail: msg}
}

func (l *LocalRepo) getReviewContext(ctx context.Context, in ReviewContextInput) (ReviewContextOutput, error) {
	budget := DefaultPacketBytes
	if in.MaxPacketBytes != nil {
		if !in.IncludePacket {
			return ReviewContextOutput{}, argError("max_packet_bytes", "only applies with include_packet")
		}
		if *in.MaxPacketBytes < 1 || *in.MaxPacketBytes > MaxPacketBytes {
			return ReviewContextOutput{}, argError("max_packet_bytes", "want 1-%d", MaxPacketBytes)
		}
		budget = *in.MaxPacketBytes
	}
	res, err := l.buildContext(ctx, in.Base, in.Head, in.Paths)
	if err != nil {
		return ReviewContextOutput{}, err
	}
	ch := res.Change
	headRef := "HEAD"
	if in.Head != nil {
		headRef = *in.Head
	}
	out := ReviewContextOutput{ReviewContext: res.Context,
		Range:   RangeInfo{BaseRef: ch.Range.BaseRef, HeadRef: headRef, DiffBase: ch.Range.DiffBase, Why: ch.Range.Why},
		Skipped: ch.Skips}
	if out.Skipped == nil {
		out.Skipped = []scope.Skip{}
	}
	if ch.Packet.Coalesced != "" {
		out.Coalesced = &ch.Packet.Coalesced
	}
	if in.IncludePacket {
		sel, err := res.Select(budget)
		if err != nil {
			return ReviewContextOutput{}, &qa.Error{Code: CodeRepository, Detail: err.Error()}
		}
		out.Packet = &PacketOutput{Items: sel.Items, ContextSelection: qa.ContextSelection{
			SourcePacketSHA256: sel.SourcePacketSHA256, SelectedPacketSHA256: sel.SelectedPacketSHA256,
			IncludedRefs: sel.IncludedRefs, OmittedRefs: []string{}, BudgetOmittedRefs: sel.BudgetOmittedRefs,
			MaxBytes: sel.MaxBytes, SelectedBytes: sel.SelectedBytes}}
	}
	return out, nil
}
