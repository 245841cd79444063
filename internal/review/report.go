package review

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/provider"
	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/diffpalhq/diffpal/internal/rules"
)

// Profile reports, the explorer's evidence map and the risk signals, as
// the session receives them.

func (e *engine) refsOrPlaceholder(refs []string) []string {
	if len(refs) > 0 {
		return refs
	}
	if len(e.ch.Packet.Items) > 0 {
		return []string{e.ch.Packet.Items[0].Ref}
	}
	return []string{"diff"}
}

func (e *engine) profileCandidate(c *candidate, id string) qa.ProfileCandidate {
	end := c.EndLine
	area := c.Path
	impact := fieldText(c.Impact, 2000)
	fail := fieldText(nonEmpty(c.Anchor, nonEmpty(c.Snippet, c.Title)), 2000)
	flip := "Evidence that the flagged code is unreachable, intended, or already handled elsewhere."
	pc := qa.ProfileCandidate{
		CandidateID: id, Title: fieldText(c.Title, 256), Description: fieldText(nonEmpty(c.Message, c.Title), 5000),
		Confidence:      confidenceLevel(c.Confidence),
		VerificationGap: verificationGap(c, e.o.Provider.Name()),
		EvidenceRefs:    e.refsOrPlaceholder(c.refs), AffectedArea: &area, FailureCondition: &fail, FlipCondition: &flip,
	}
	if impact != "" {
		pc.Impact = &impact
	}
	if c.side == "RIGHT" {
		pc.SourceLocations = []qa.SourceLocation{{Path: c.Path, StartLine: c.StartLine, EndLine: &end}}
	}
	return pc
}

func verificationGap(c *candidate, provider string) string {
	if c.RuleID != "" {
		return "Matched by rule " + c.RuleID + " on the changed lines; runtime behaviour was not exercised."
	}
	return "Reported by " + provider + " from the evidence it was given; runtime behaviour was not exercised."
}

func (e *engine) profileReport(p qa.Profile, cands []*candidate, bound map[*group]bool, res provider.ProfileResult, groups []*group) *qa.ProfileReport {
	r := &qa.ProfileReport{Profile: p}
	var owned []string
	for rp, sp := range e.audit.Folded {
		if sp == string(p) {
			owned = append(owned, rp)
		}
	}
	slices.Sort(owned)
	scope := fmt.Sprintf("%s rules (%s) over %d files, %d added lines", e.o.Provider.Name(), p, e.audit.Files, e.audit.AddedLines)
	if len(owned) > 0 {
		scope += "; also answering for " + strings.Join(owned, ", ") + " (not in the selected bundle)"
	}
	r.Scope = fieldText(scope, 2000)
	if canReport(p) {
		// At most 100 candidates per report (the contract): every bound
		// group's leading candidate first, so each final finding keeps a
		// confirmed decision, then the others while room remains.
		n, over := 0, 0
		take := func(c *candidate) {
			if n == maxSessionFindings {
				over++
				return
			}
			n++
			c.id = fmt.Sprintf("F-%02d", n)
			r.FindingCandidates = append(r.FindingCandidates, e.profileCandidate(c, c.id))
		}
		for _, c := range cands {
			if bound[c.group] && c.group.best == c {
				take(c)
			}
		}
		for _, c := range cands {
			switch {
			case !bound[c.group]:
				over++
			case c.group.best != c:
				take(c)
			}
		}
		if over > 0 {
			r.CoverageGaps = append(r.CoverageGaps, qa.RefNote{Text: fmt.Sprintf("%d further candidates beyond the contract's limits (%d findings per session, %d candidates per report) are recorded only in findings.json.", over, maxSessionFindings, maxSessionFindings)})
		}
	}
	switch p {
	case qa.ProfileCodeExplorer:
		r.EvidenceMap = e.evidenceMap()
	case qa.ProfilePRTestAnalyzer:
		for _, g := range groups {
			if g.best.Category != "testing" || len(r.CoverageGaps) >= maxSessionFindings {
				continue
			}
			r.CoverageGaps = append(r.CoverageGaps, qa.RefNote{
				Text:         fieldText(fmt.Sprintf("%s:%d: %s", g.best.Path, g.best.StartLine, g.best.Title), 2000),
				EvidenceRefs: e.refsOrPlaceholder(g.best.refs)})
		}
	}
	for _, gap := range res.Gaps {
		if len(r.CoverageGaps) < maxSessionFindings {
			r.CoverageGaps = append(r.CoverageGaps, qa.RefNote{Text: fieldText(gap, 2000)})
		}
	}
	for _, u := range res.Unverified {
		if len(r.Unverified) < maxSessionFindings {
			r.Unverified = append(r.Unverified, qa.RefNote{Text: fieldText(u, 2000)})
		}
	}
	r.ContextSelection = res.Selection
	if !res.Started.IsZero() {
		attempts := max(res.Attempts, 1)
		r.ExecutionMetrics = &qa.ExecutionMetrics{
			StartedAt: res.Started.UTC().Format("2006-01-02T15:04:05.000000000Z07:00"), CompletedAt: res.Completed.UTC().Format("2006-01-02T15:04:05.000000000Z07:00"),
			AttemptCount: &attempts, Attempts: res.AttemptLog, InputTokens: res.InputTokens, OutputTokens: res.OutputTokens,
		}
	}
	return r
}

// maxEvidenceMap is how many entries the explorer's evidence map holds.
const maxEvidenceMap = 500

// evidenceMap is the explorer's output: changed symbols and where they are
// used, mapped to evidence refs.
func (e *engine) evidenceMap() []qa.EvidenceMapEntry {
	var out []qa.EvidenceMapEntry
	// What is read already holds the first maxEvidenceMap symbols that
	// have evidence (startSymbols).
	for _, s := range e.symbols(nil) {
		if len(out) >= maxEvidenceMap {
			break
		}
		refs := e.ch.Packet.RefsAt(s.Path, s.Line, s.Line)
		if len(refs) == 0 {
			continue
		}
		desc := fmt.Sprintf("%s %s defined at %s:%d", s.Kind, s.Name, s.Path, s.Line)
		if n := len(s.UsedIn); n > 0 {
			var uses []string
			for i, u := range s.UsedIn {
				if i == 5 {
					uses = append(uses, fmt.Sprintf("and %d more", n-5))
					break
				}
				uses = append(uses, fmt.Sprintf("%s:%d", u.Path, u.Line))
			}
			desc += "; used in " + strings.Join(uses, ", ")
		} else {
			desc += "; no uses in the changed files"
		}
		out = append(out, qa.EvidenceMapEntry{EvidenceRef: refs[0], Description: fieldText(desc, 2000)})
	}
	return out
}

// riskSignals are computed from what was found and what changed.
func (e *engine) riskSignals(groups []*group) *qa.RiskSignals {
	rs := &qa.RiskSignals{}
	var why []string
	var refs []string
	addRefs := func(r []string) {
		for _, x := range r {
			if len(refs) < 32 && !slices.Contains(refs, x) {
				refs = append(refs, x)
			}
		}
	}
	for _, g := range groups {
		if g.best.Category == "security" && g.severity().Rank() >= findings.High.Rank() {
			if !rs.HighRiskDomain {
				why = append(why, fmt.Sprintf("security finding of severity %s (%s at %s:%d)", g.best.Severity, g.best.RuleID, g.best.Path, g.best.StartLine))
			}
			rs.HighRiskDomain = true
			addRefs(g.best.refs)
		}
		if g.severity().Rank() >= findings.High.Rank() && g.confidence < 0.6 {
			if !rs.EvidenceUncertain {
				why = append(why, fmt.Sprintf("a %s finding has low confidence %.2f (%s)", g.best.Severity, g.confidence, g.best.RuleID))
			}
			rs.EvidenceUncertain = true
			addRefs(g.best.refs)
		}
	}
	if n := len(e.ch.Files); n >= 50 {
		rs.HighBlastRadius = true
		why = append(why, fmt.Sprintf("%d files changed", n))
	}
	// The first symbol used in many places: among those the evidence map
	// read, else among the rest.
	used := func(s rules.Symbol) bool { return len(s.UsedIn) >= 10 }
	syms := e.symbols(nil)
	i := slices.IndexFunc(syms, used)
	if i < 0 {
		read := len(syms)
		syms = e.symbols(func(rules.Symbol) bool { return true })
		if j := slices.IndexFunc(syms[read:], used); j >= 0 {
			i = read + j
		}
	}
	if i >= 0 {
		s := syms[i]
		rs.HighBlastRadius = true
		why = append(why, fmt.Sprintf("%s is used in %d places", s.Name, len(s.UsedIn)))
		addRefs(e.ch.Packet.RefsAt(s.Path, s.Line, s.Line))
	}
	infra, app := false, false
	for _, f := range e.ch.Files {
		p := f.Path()
		base := path.Base(p)
		if strings.HasPrefix(p, ".github/workflows/") || base == "Dockerfile" || strings.HasSuffix(base, ".tf") || strings.Contains(p, "k8s/") || strings.Contains(p, "helm/") {
			infra = true
		} else if rules.DetectLanguage(p, "") != "" {
			app = true
		}
	}
	if infra && app {
		rs.CrossSystemScope = true
		why = append(why, "the change spans application code and build or deployment configuration")
	}
	if len(why) > 0 {
		r := fieldText("Computed by diffpal: "+strings.Join(why, "; ")+".", 2000)
		rs.Rationale = &r
		if len(refs) == 0 && len(e.ch.Packet.Items) > 0 {
			refs = []string{e.ch.Packet.Items[0].Ref}
		}
		rs.EvidenceRefs = refs
	}
	return rs
}
