package review

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/evidence"
	"github.com/diffpalhq/diffpal/internal/provider"
	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/diffpalhq/diffpal/internal/secrets"
)

// bundle maps the session's final report onto the findings bundle with
// qa.BuildExport, the one mapping export_qa_findings uses too, which
// normalizes it (ids, stable ids, blocking flags, the deterministic
// order). The engine supplies what the report's fields cannot hold: the
// header of this review, each final finding as the engine knows it (rule,
// exact severity and confidence, suggestion, side), and the findings the
// report does not hold (beyond the session's limits, or from profiles that
// report no candidates).
//
// Every free-text field goes through the secret detector, the one that
// redacted the evidence (it knows the change's secrets), before ids are
// computed from them: a provider's snippet, a model's title or a commit
// subject may carry a secret.
type bundle struct{}

func (bundle) Name() string { return "bundle" }

func (bundle) Process(_ context.Context, e *engine) error {
	red := e.ch.Packet.Redactor().Redact
	inReport := map[string]bool{}
	if fr := e.session.FinalReviewReport; fr != nil {
		for _, fc := range fr.FindingCandidates {
			inReport[fc.CandidateID] = true
		}
	}
	opts := qa.ExportOptions{Header: e.header(red), Policy: e.o.Policy, Findings: map[string]findings.Finding{},
		Result: func(b *findings.Bundle) string { return reviewResult(b) }}
	for _, g := range e.groups {
		if g.finalID != "" && inReport[g.finalID] {
			opts.Findings[g.finalID] = e.finding(g, red)
		} else {
			opts.Unreported = append(opts.Unreported, e.finding(g, red))
		}
	}
	exp, err := qa.BuildExport(e.session, opts)
	var ps findings.Problems
	switch {
	case errors.As(err, &ps):
		return fmt.Errorf("internal: the review produced an invalid bundle: %w", err)
	case err != nil:
		return fmt.Errorf("internal: bundle: %w", err)
	}
	e.bundle = &exp.Bundle
	e.audit.Findings = len(e.bundle.Findings)
	return nil
}

// header is the bundle's header: this review, not the session.
func (e *engine) header(red func(string) string) *findings.Bundle {
	ch := e.ch
	b := &findings.Bundle{
		Version: findings.CurrentVersion, ReviewID: cmp.Or(e.o.ReviewID, "local"),
		BaseSHA: ch.Range.DiffBase, HeadSHA: ch.Range.Head, Repo: ch.Repository,
		Prompt:     &findings.Prompt{PromptID: "diffpal.review", PromptVersion: e.o.Provider.Name(), Purpose: "review", SchemaVersion: "findings.v3"},
		Inspection: e.inspection(red), Language: e.o.Language,
	}
	if ch.Range.Worktree {
		b.HeadSHA = ""
	}
	for i, s := range ch.Subjects() {
		if i == 8 {
			break
		}
		b.ChangeSummary = append(b.ChangeSummary, red(s))
	}
	for _, f := range ch.Files {
		b.Files = append(b.Files, findings.File{Path: f.Path(), Status: f.Diff.Status})
	}
	return b
}

// inspection is the bundle's inspection block: what the provider was
// observed doing when it can observe (agents over ACP), else what it was
// given (the evidence packet holds the diff and its context).
func (e *engine) inspection(red func(string) string) *findings.Inspection {
	in := &findings.Inspection{ProviderType: e.o.Provider.Name(), Required: e.o.InspectionRequired, DiffInspected: true, ContextInspected: true}
	if obs := e.audit.Inspection; obs != nil {
		in.DiffInspected, in.ContextInspected = obs.Inspected(e.changedPaths())
		for _, l := range obs.Labels() {
			in.ToolCalls = append(in.ToolCalls, fieldText(red(l), 256))
		}
	}
	return in
}

func (e *engine) changedPaths() []string {
	var out []string
	for _, f := range e.ch.Files {
		out = append(out, f.Path())
		if f.Diff.OldPath != "" && f.Diff.OldPath != f.Path() {
			out = append(out, f.Diff.OldPath)
		}
	}
	return out
}

// checkInspection enforces inspection.required once every profile has
// answered: the provider must have been seen inspecting the diff.
func (e *engine) checkInspection() error {
	if !e.o.InspectionRequired {
		return nil
	}
	obs := e.audit.Inspection
	if obs == nil {
		return fmt.Errorf("inspection.required: provider %s cannot report what it inspected (only ACP agent providers do): %w", e.o.Provider.Name(), provider.ErrNotInspected)
	}
	if diff, _ := obs.Inspected(e.changedPaths()); !diff {
		return fmt.Errorf("inspection.required: provider %s read none of the %d changed files and ran no git diff (%d tool calls observed): %w",
			e.o.Provider.Name(), len(e.ch.Files), len(obs.ToolCalls), provider.ErrNotInspected)
	}
	return nil
}

// finding is the group's finding, from its leading candidate.
func (e *engine) finding(g *group, red func(string) string) findings.Finding {
	c := g.best
	f := findings.Finding{
		StableID: g.stableID, RuleID: c.RuleID, Category: c.Category, Severity: findings.Severity(c.Severity), Confidence: round2(g.confidence),
		Path: c.Path, StartLine: c.StartLine, EndLine: c.EndLine,
		ChangedSpan: &findings.Span{Path: c.Path, StartLine: c.StartLine, EndLine: c.EndLine},
		Title:       fieldText(red(c.Title), 256), Message: red(nonEmpty(c.Message, c.Title)),
		Evidence: &findings.Evidence{Anchor: red(nonEmpty(c.Anchor, nonEmpty(c.Snippet, c.Title))),
			ReasoningBasis: red("rule " + nonEmpty(c.RuleID, "(provider)") + " (" + c.RuleProfile + "): " + nonEmpty(c.Snippet, c.Title)),
			Source:         nonEmpty(c.Source, "changed_line")},
		Impact:     &findings.Impact{Summary: red(nonEmpty(c.Impact, c.Title)), Scope: red(nonEmpty(c.Scope, c.Path))},
		Suggestion: red(c.Suggestion), Provider: e.o.Provider.Name(),
	}
	if c.side == "LEFT" {
		f.ChangedSpan.Side = "LEFT"
	}
	if c.SupportStart > 0 && c.SupportEnd >= c.SupportStart {
		f.SupportingSpan = &findings.Span{Path: c.Path, StartLine: c.SupportStart, EndLine: c.SupportEnd}
	}
	return f
}

// redactResult runs the secret detector over everything a finished review
// writes besides the bundle (built redacted): the session, with every
// profile report, candidate and final report (qa-session.json), and the
// audit — notes, drop samples, suppression reasons, deep-pass rationale,
// policy details (qa-session.json, summary.md, review --json).
func redactResult(r *Result) {
	red := &secrets.Redactor{}
	if r.Change != nil {
		red = r.Change.Packet.Redactor()
	}
	red.RedactAll(&r.Session)
	red.RedactAll(&r.Audit)
}

func round2(f float64) float64 { return float64(int(f*100+0.5)) / 100 }

func reviewResult(b *findings.Bundle) string {
	blocking := b.Tally().Blocking
	switch {
	case len(b.Findings) == 0:
		return "No findings."
	case blocking == 0:
		return fmt.Sprintf("%d findings, none blocking.", len(b.Findings))
	}
	return fmt.Sprintf("%d findings, %d blocking.", len(b.Findings), blocking)
}

// toQAContext is the packet's review_context as the session's input: the
// two share their shape by design, field for field. Strings are made
// valid UTF-8 the way a JSON round trip would (each invalid byte becomes
// U+FFFD), which the session's validation expects.
func toQAContext(rc *evidence.ReviewContext) *qa.ReviewContextInput {
	in := &qa.ReviewContextInput{
		Repository: validUTF8(rc.Repository), BaseSHA: validUTF8(rc.BaseSHA), HeadSHA: validUTF8(rc.HeadSHA),
		DiffSHA256: validUTF8(rc.DiffSHA256), EvidencePacketSHA256: validUTF8(rc.EvidencePacketSHA256),
		ChangedFiles: validUTF8s(rc.ChangedFiles), EvidenceRefs: validUTF8s(rc.EvidenceRefs),
	}
	if rc.EvidenceRegistry != nil {
		in.EvidenceRegistry = make([]qa.RegistryEntry, len(rc.EvidenceRegistry))
		for i, it := range rc.EvidenceRegistry {
			in.EvidenceRegistry[i] = qa.RegistryEntry{EvidenceRef: validUTF8(it.Ref), Kind: qa.EvidenceKind(validUTF8(it.Kind)),
				SHA256: validUTF8(it.SHA256), Path: validUTF8p(it.Path), Revision: validUTF8p(it.Revision),
				StartLine: clonep(it.StartLine), EndLine: clonep(it.EndLine), Locator: validUTF8p(it.Locator)}
		}
	}
	return in
}

// validUTF8 replaces every byte of s that is not valid UTF-8 with U+FFFD,
// as encoding/json does.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func validUTF8s(ss []string) []string {
	if ss == nil {
		return nil
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = validUTF8(s)
	}
	return out
}

func validUTF8p(s *string) *string {
	if s == nil {
		return nil
	}
	v := validUTF8(*s)
	return &v
}

func clonep[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
