// Package reviewctx computes the review_context of a change and its
// evidence packet: the one code path behind `diffpal context` and the MCP
// tool get_review_context, so both print the same bytes for the same
// range.
//
// The trust rules are review's: git runs config-proof (internal/git), the
// scope's .diffpalignore is read from the trusted side the policy source
// names (package policy; "auto" means base in CI, else the work tree),
// file contents come from git blobs for committed ranges (a symlink is its
// target's name, never the file it points to), pathspecs outside the
// repository are refused, and item contents are redacted
// (internal/secrets) before they are hashed (internal/evidence). Nothing
// is written or stored here.
package reviewctx

import (
	"context"
	"fmt"

	"github.com/diffpalhq/diffpal/internal/evidence"
	"github.com/diffpalhq/diffpal/internal/git"
	"github.com/diffpalhq/diffpal/internal/jcs"
	"github.com/diffpalhq/diffpal/internal/policy"
	"github.com/diffpalhq/diffpal/internal/review"
	"github.com/diffpalhq/diffpal/internal/scope"
)

// Request selects the change.
type Request struct {
	// Dir is any directory in the repository.
	Dir   string
	Range git.RangeOptions
	// Paths limit the diff to these pathspecs (relative to Dir).
	Paths []string
	// Repository overrides the repository id (default: the origin remote
	// without scheme, else the directory name).
	Repository string
	// ConfigSource chooses where .diffpalignore is read from: "" or
	// "auto", "base", "head", "worktree" (policy.Choose).
	ConfigSource string
	// Getenv decides "auto" (CI variables); nil reads nothing (a local run).
	Getenv func(string) string
}

// UsageError is a problem with the request or a change that cannot be
// bound (no changed files, over the contract limits, uncommitted): the
// caller's to fix. Other errors are the repository's or git's.
type UsageError struct {
	Err error
	// Unbindable: the range resolved, but the change cannot be bound to a
	// session (evidence.Packet.ReviewContext refused it).
	Unbindable bool
}

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Result is a change bound to its review_context.
type Result struct {
	// Root is the repository's top level.
	Root    string
	Change  *review.Change
	Context *evidence.ReviewContext
}

// Build loads the change and its review_context.
func Build(ctx context.Context, req Request) (*Result, error) {
	getenv := req.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	root, err := (&git.Runner{Dir: req.Dir}).TopLevel(ctx)
	if err != nil {
		return nil, err
	}
	src, why, err := policy.Choose(req.ConfigSource, getenv)
	if err != nil {
		return nil, &UsageError{Err: err}
	}
	r := &git.Runner{Dir: root}
	rg, err := r.ResolveRange(ctx, req.Range)
	if err != nil {
		return nil, &UsageError{Err: err}
	}
	head := rg.Head
	if rg.Worktree {
		head = ""
	}
	pol, err := policy.Load(ctx, policy.Request{Root: root, Git: r, Source: src, Why: why, Base: rg.DiffBase, Head: head})
	if err != nil {
		return nil, &UsageError{Err: err}
	}
	co := review.ChangeOptions{Dir: req.Dir, Paths: req.Paths, Repository: req.Repository, Range: req.Range,
		Resolved: &rg, Scope: scope.Options{Ignore: pol.Ignore}}
	ch, err := review.LoadChange(ctx, co)
	if err != nil {
		return nil, err
	}
	rc, err := ch.Packet.ReviewContext()
	if err != nil {
		return nil, &UsageError{Err: err, Unbindable: true}
	}
	return &Result{Root: root, Change: ch, Context: rc}, nil
}

// PacketFile is the evidence packet with item contents: `diffpal context
// --packet`'s file.
type PacketFile struct {
	ReviewContext *evidence.ReviewContext `json:"review_context"`
	Items         []PacketItem            `json:"items"`
	Skipped       any                     `json:"skipped"`
	Coalesced     string                  `json:"coalesced,omitempty"`
}

// PacketItem is an evidence item (its registry entry) with its content.
type PacketItem struct {
	evidence.Item
	Content string `json:"content"`
}

// Packet returns the packet file of r.
func (r *Result) Packet() PacketFile {
	pf := PacketFile{ReviewContext: r.Context, Skipped: r.Change.Skips, Coalesced: r.Change.Packet.Coalesced}
	for _, it := range r.Change.Packet.Items {
		pf.Items = append(pf.Items, PacketItem{Item: it, Content: it.Content()})
	}
	return pf
}

// Selection is a subset of the packet cut to a byte budget, described the
// way a profile report's context_selection asserts it.
type Selection struct {
	Items []PacketItem
	// SourcePacketSHA256 is the whole packet's hash.
	SourcePacketSHA256 string
	// SelectedPacketSHA256 is sha256 of the RFC 8785 JSON of the selected
	// items' registry entries (in packet order), as internal/provider/llm
	// computes it.
	SelectedPacketSHA256 string
	IncludedRefs         []string
	BudgetOmittedRefs    []string
	MaxBytes             int
	SelectedBytes        int
}

// Select keeps items in packet order while their contents fit maxBytes
// (an item that does not fit is left out and smaller later ones may still
// be kept). Sizes are the contents' UTF-8 bytes.
func (r *Result) Select(maxBytes int) (*Selection, error) {
	s := &Selection{SourcePacketSHA256: r.Change.Packet.SHA256, MaxBytes: maxBytes,
		Items: []PacketItem{}, IncludedRefs: []string{}, BudgetOmittedRefs: []string{}}
	chosen := []evidence.Item{}
	for _, it := range r.Change.Packet.Items {
		c := it.Content()
		if s.SelectedBytes+len(c) > maxBytes {
			s.BudgetOmittedRefs = append(s.BudgetOmittedRefs, it.Ref)
			continue
		}
		s.SelectedBytes += len(c)
		s.Items = append(s.Items, PacketItem{Item: it, Content: c})
		s.IncludedRefs = append(s.IncludedRefs, it.Ref)
		chosen = append(chosen, it)
	}
	h, err := jcs.SHA256Hex(chosen)
	if err != nil {
		return nil, fmt.Errorf("hash selected evidence: %w", err)
	}
	s.SelectedPacketSHA256 = h
	return s, nil
}
