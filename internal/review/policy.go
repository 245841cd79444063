package review

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/diffpalhq/diffpal/internal/clip"
	"github.com/diffpalhq/diffpal/internal/provider"
	"github.com/diffpalhq/diffpal/internal/qa"
)

// PolicyRule is the rule id of the finding that reports a change editing
// its own review policy.
const PolicyRule = "policy.self-edit"

// Policy edits are reported, not blocked: severity medium stays under the
// default block_on (high), so a reviewer sees the edit without the gate
// deciding for them; a team that wants policy edits to block sets
// block_on: medium.
const policySeverity = "medium"

// policyChanges completes the policy record with the diffpal:ignore
// comments the change adds (any comment syntax, the pattern suppression
// honours) in the files it reviews.
func (e *engine) policyChanges() []PolicyChange {
	if e.o.ReviewPolicy == nil {
		return nil
	}
	out := append([]PolicyChange(nil), e.o.ReviewPolicy.Changes...)
	for _, f := range e.ch.Files {
		if proseFile(f.Path()) {
			continue // documentation that mentions the syntax suppresses nothing
		}
		// Added lines are lines of the new content, which a file in scope
		// holds whole: one search of it rules out every line of a file
		// that never mentions the directive (this loop is on a review's
		// one goroutine, after everything else has been matched).
		if f.Text != "" && !ignoreWord.Contains(f.Text) {
			continue
		}
		for l := range f.Diff.AddedLines() {
			m := matchIgnore(l.Text)
			if m == nil {
				continue
			}
			target := m[1]
			if target == "" {
				target = "every rule"
			}
			detail := "adds diffpal:ignore (" + target + ")"
			if r := strings.TrimSpace(m[2]); r != "" {
				detail += " -- " + clip.Text(r, 120)
			} else {
				detail += " without a reason (listed, not applied)"
			}
			out = append(out, PolicyChange{Kind: "inline_ignore", Path: f.Path(), Line: l.NewNo, Detail: detail})
		}
	}
	return out
}

// policyCandidates turns each policy edit into a candidate of the profile
// that owns security review (or the first profile run). They bypass
// suppression: the edit under report must not be able to silence itself.
func (e *engine) policyCandidates(changes []PolicyChange, profiles []qa.Profile) (qa.Profile, []provider.Candidate) {
	if len(changes) == 0 || len(profiles) == 0 {
		return "", nil
	}
	owner := profiles[0]
	for _, want := range []qa.Profile{"security_reviewer", "code_reviewer"} {
		if slices.Contains(profiles, want) {
			owner = want
			break
		}
	}
	applied := "The review ran with the policy from the " + e.o.ReviewPolicy.Source + " side, so this edit does not apply to it."
	if e.o.ReviewPolicy.Source == "worktree" || e.o.ReviewPolicy.Source == "head" {
		applied = "This review ran with the edited policy (policy source: " + e.o.ReviewPolicy.Source + ")."
	}
	var out []provider.Candidate
	for _, pc := range changes {
		c := provider.Candidate{
			RuleID: PolicyRule, Category: "security", Severity: policySeverity, Confidence: 0.9,
			Path: pc.Path, StartLine: pc.Line, EndLine: pc.Line, RuleProfile: string(owner),
			Impact: "A change that edits the policy it is judged by can pass the gate it is judged by.",
			Scope:  "review policy", Suggestion: "Confirm the policy edit is intended; land policy changes in their own reviewed pull request.",
		}
		switch pc.Kind {
		case "inline_ignore":
			c.Title = "Change adds a diffpal:ignore suppression"
			c.Message = fmt.Sprintf("This line %s; it silences findings on its line and the next.", pc.Detail)
			if pc.Line > 0 && pc.Line <= len(e.fileLines(pc.Path)) {
				c.Anchor = strings.TrimSpace(e.fileLines(pc.Path)[pc.Line-1])
			}
		default:
			c.Title = "Change edits its own review policy (" + strings.ReplaceAll(pc.Kind, "_", " ") + ")"
			c.Message = fmt.Sprintf("%s is %s. %s", pc.Path, pc.Detail, applied)
			c.Anchor = pc.Kind + ":" + pc.Path
		}
		c.Snippet = c.Anchor
		out = append(out, c)
	}
	return owner, out
}

// proseFile reports documentation formats, where "diffpal:ignore" is
// text about the feature rather than a suppression of a finding.
func proseFile(p string) bool {
	switch strings.ToLower(path.Ext(p)) {
	case ".md", ".markdown", ".rst", ".txt", ".adoc", ".asciidoc", ".txtar":
		return true
	}
	return false
}

func (e *engine) fileLines(path string) []string {
	if f := e.fileByPath(path); f != nil {
		return f.Content
	}
	return nil
}
