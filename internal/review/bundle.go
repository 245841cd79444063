package review

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/evidence"
	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/diffpalhq/diffpal/internal/secrets"
)

// The findings bundle: stable ids, baseline, and the bundle itself.

func (e *engine) buildBundle(groups []*group) error {
	ch := e.ch
	// Every free-text field of the bundle goes through the secret
	// detector, the one that redacted the evidence (it knows the change's
	// secrets), before ids are computed from them: a provider's snippet,
	// a model's title or a commit subject may carry a secret.
	red := ch.Packet.Redactor().Redact
	b := &findings.Bundle{
		Version: findings.CurrentVersion, ReviewID: cmp.Or(e.o.ReviewID, "local"),
		BaseSHA: ch.Range.DiffBase, HeadSHA: ch.Range.Head, Repo: ch.Repository,
		Prompt:     &findings.Prompt{PromptID: "diffpal.review", PromptVersion: e.o.Provider.Name(), Purpose: "review", SchemaVersion: "findings.v3"},
		Inspection: &findings.Inspection{ProviderType: e.o.Provider.Name(), DiffInspected: true, ContextInspected: true},
		Findings:   []findings.Finding{},
	}
	if ch.Range.Worktree {
		b.HeadSHA = ""
	}
	for i, s := range ch.Subjects {
		if i == 8 {
			break
		}
		b.ChangeSummary = append(b.ChangeSummary, red(s))
	}
	for _, f := range ch.Files {
		b.Files = append(b.Files, findings.File{Path: f.Path(), Status: f.Diff.Status})
	}
	if e.o.Baseline != nil {
		e.audit.Baseline = &BaselineSummary{New: []string{}, Unchanged: []string{}, Fixed: []string{}}
	}
	current := map[string]bool{}
	for _, g := range groups {
		c := g.best
		if g.rejected {
			e.drop("refuted by verification", fmt.Sprintf("%s:%d %s", c.Path, c.StartLine, c.RuleID))
			continue
		}
		current[g.stableID] = true
		if g.baseline {
			e.audit.Baseline.Unchanged = append(e.audit.Baseline.Unchanged, g.stableID)
			continue
		}
		if e.o.Baseline != nil {
			e.audit.Baseline.New = append(e.audit.Baseline.New, g.stableID)
		}
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
		b.Findings = append(b.Findings, f)
	}
	if e.o.Baseline != nil {
		for _, f := range e.o.Baseline.Findings {
			if f.StableID != "" && !current[f.StableID] {
				e.audit.Baseline.Fixed = append(e.audit.Baseline.Fixed, f.StableID)
			}
		}
	}
	b.ReviewResult = reviewResult(b, e.o.Policy)
	if err := findings.Normalize(b, findings.Options{Policy: e.o.Policy}); err != nil {
		return fmt.Errorf("internal: the review produced an invalid bundle: %w", err)
	}
	b.ReviewResult = reviewResult(b, e.o.Policy)
	e.bundle = b
	e.audit.Findings = len(b.Findings)
	return nil
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

// identify gives every group its stable id (over the anchored snippet,
// occurrence-numbered in location order so that ranking does not matter)
// and marks the groups the baseline already has, before synthesis decides
// anything about them.
func (e *engine) identify(groups []*group) {
	byLoc := slices.Clone(groups)
	slices.SortStableFunc(byLoc, func(a, b *group) int {
		return cmp.Or(strings.Compare(a.best.Path, b.best.Path), cmp.Compare(a.best.StartLine, b.best.StartLine), strings.Compare(a.best.Category, b.best.Category))
	})
	occ := map[string]int{}
	for _, g := range byLoc {
		anchor := nonEmpty(g.best.Snippet, nonEmpty(g.best.Anchor, g.best.Title))
		k := findings.StableIDKey(g.best.Category, g.best.Path, anchor)
		g.stableID = findings.StableID(g.best.Category, g.best.Path, anchor, occ[k])
		occ[k]++
	}
	if e.o.Baseline == nil {
		return
	}
	base := map[string]bool{}
	for _, f := range e.o.Baseline.Findings {
		if f.StableID != "" {
			base[f.StableID] = true
		}
	}
	for _, g := range groups {
		g.baseline = base[g.stableID]
	}
}

func round2(f float64) float64 { return float64(int(f*100+0.5)) / 100 }

func reviewResult(b *findings.Bundle, p findings.Policy) string {
	blocking := b.Tally().Blocking
	switch {
	case len(b.Findings) == 0:
		return "No findings."
	case blocking == 0:
		return fmt.Sprintf("%d findings, none blocking.", len(b.Findings))
	}
	return fmt.Sprintf("%d findings, %d blocking.", len(b.Findings), blocking)
}

// BaselineSummary lists stable ids by baseline status.
type BaselineSummary struct {
	New       []string `json:"new"`
	Unchanged []string `json:"unchanged"`
	Fixed     []string `json:"fixed"`
}

// toQAContext converts the packet's review_context into the tool input;
// the two share their JSON shape by design.
func toQAContext(rc *evidence.ReviewContext) *qa.ReviewContextInput {
	data, _ := json.Marshal(rc)
	var in qa.ReviewContextInput
	_ = json.Unmarshal(data, &in)
	return &in
}
