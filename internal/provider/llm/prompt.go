package llm

import (
	"slices"
	"strings"

	"github.com/diffpalhq/diffpal/internal/provider"
	"github.com/diffpalhq/diffpal/internal/qa"
)

// PromptVersion enters every cache key: change it whenever the prompt
// wording or the answer contract changes.
const PromptVersion = "diffpal-llm-prompt/1"

// profilePrompt is the trusted, data-free part of a profile's system
// message (without the fence rules, which name the request's token).
func profilePrompt(req provider.ProfileRequest) string {
	r := req.Route
	var b strings.Builder
	name := r.DisplayName
	if name == "" {
		name = string(req.Profile)
	}
	b.WriteString("You are " + name + " (profile " + string(req.Profile) + "), one reviewer in diffpal's multi-profile review of a code change.\n")
	if req.Deep {
		b.WriteString("This is the deep-review pass: examine the wider context carefully and prefer fewer, well-evidenced candidates.\n")
	}
	if r.Focus != "" {
		b.WriteString("\nFocus: " + r.Focus + "\n")
	}
	var extra []string
	for _, rp := range req.RuleProfiles {
		if rp == string(req.Profile) {
			continue
		}
		if fr, err := qa.Prepare(qa.PrepareInput{AgentProfile: qa.Profile(rp)}); err == nil {
			extra = append(extra, fr.DisplayName+": "+fr.Focus)
		}
	}
	slices.Sort(extra)
	if len(extra) > 0 {
		b.WriteString("Also cover these checklists, whose profiles are not part of this review:\n")
		for _, e := range extra {
			b.WriteString("- " + e + "\n")
		}
	}
	if len(r.RequiredSections) > 0 {
		b.WriteString("Required sections of your report: " + strings.Join(r.RequiredSections, ", ") + ".\n")
	}
	if len(r.Constraints) > 0 {
		b.WriteString("Constraints:\n")
		for _, c := range r.Constraints {
			b.WriteString("- " + c + "\n")
		}
	}
	if len(r.EscalationSignals) > 0 {
		b.WriteString("Escalation signals (when one applies, say so in unverified):\n")
		for _, s := range r.EscalationSignals {
			b.WriteString("- " + s + "\n")
		}
	}
	b.WriteString("\nAnswer format:\n")
	b.WriteString("- Reply with exactly one JSON object matching the schema " + AnswerSchemaName + ", with no other text.\n")
	if slices.Contains(r.RequiredSections, qa.SectionFindingCandidates) {
		b.WriteString("- candidates: possible defects on the changed lines. Each cites 1-32 evidence refs (the ref=... of the blocks " +
			"that support it), names the file path exactly as shown in the evidence, and gives new-file line numbers inside that " +
			"evidence. severity is an impact estimate (low, medium, high, critical) the host may override; it is not a " +
			"release decision. confidence is between 0 and 1. category is one of " + strings.Join(Categories, ", ") + ". " +
			"anchor is the exact code text of the flagged line.\n")
	} else {
		b.WriteString("- This profile reports no finding candidates: return \"candidates\": [] and put what you found in " +
			"coverage_gaps and unverified.\n")
	}
	b.WriteString("- coverage_gaps: behaviour the change leaves untested or evidence you lacked. unverified: points you could not verify.\n")
	b.WriteString("- The request may show only part of the change; other parts are reviewed separately. Do not speculate about code you were not shown.\n")
	return b.String()
}

// userMessage renders the fenced data of one request. pre holds extra
// fenced parts (instructions, commit subjects) that come before the
// evidence, as [attrs, data] pairs.
func userMessage(intro, token string, pre [][2]string, blocks []*block, outro string) string {
	var b strings.Builder
	b.WriteString(intro + "\n\n")
	for _, p := range pre {
		writeFence(&b, token, p[0], p[1])
	}
	for _, bl := range blocks {
		writeFence(&b, token, bl.attrs, bl.data)
	}
	b.WriteString("\n" + outro + "\n")
	return b.String()
}

// tokenFor derives the fence token of a request from all the data it
// fences.
func tokenFor(pre [][2]string, blocks []*block) string {
	parts := make([]string, 0, len(pre)+len(blocks))
	for _, p := range pre {
		parts = append(parts, p[1])
	}
	for _, b := range blocks {
		parts = append(parts, b.data)
	}
	return fenceToken(parts...)
}
