package review

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/diff"
	"github.com/diffpalhq/diffpal/internal/evidence"
	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/diffpalhq/diffpal/internal/rules"
)

// maxSessionFindings is the contract's cap on candidates per report and
// final findings; the bundle itself is not capped.
const maxSessionFindings = 100

type candidate struct {
	Candidate
	profile qa.Profile
	side    string // "LEFT" for removed-line findings
	refs    []string
	id      string // F-NN in its profile report, when bound
	group   *group
}

type group struct {
	members    []*candidate
	best       *candidate
	confidence float64
	finalID    string // F-NN when bound to the session
	stableID   string
	baseline   bool // already in the baseline
	// rejected is set when a verifier refuted the group; verdict and
	// rationale come from the last verifier that looked at it.
	rejected  bool
	verdict   string
	rationale string
	vrefs     []string
}

func (g *group) severity() findings.Severity { return findings.Severity(g.best.Severity) }

// ---- triage ----------------------------------------------------------------

type triageChoice struct {
	bundle, profile, why string
}

// triage picks the bundle from the changed files' recommended profiles, the
// same file-type rules that produce recommended_profiles.
func triage(ch *Change, rec []qa.Profile, forceBundle, forceProfile string) triageChoice {
	if forceBundle != "" {
		return triageChoice{bundle: forceBundle, why: "bundle " + forceBundle + " chosen by --bundle, DIFFPAL_BUNDLE or the config"}
	}
	if forceProfile != "" {
		return triageChoice{profile: forceProfile, why: "profile " + forceProfile + " chosen by --profile, DIFFPAL_PROFILE or the config"}
	}
	// A language bundle fits when most changed source files are in its
	// languages; mixed changes go to the generalist bundle.
	langs := map[string]int{}
	src, allTS, allTests := 0, len(ch.Files) > 0, len(ch.Files) > 0
	for _, f := range ch.Files {
		lang := rules.DetectLanguage(f.Path(), "")
		allTS = allTS && lang == "typescript"
		allTests = allTests && rules.IsTestPath(f.Path())
		if lang != "" && lang != "markdown" && lang != "yaml" && lang != "json" {
			src++
			langs[lang]++
		}
	}
	has := func(p qa.Profile) bool { return slices.Contains(rec, p) }
	most := func(ls ...string) bool {
		n := 0
		for _, l := range ls {
			n += langs[l]
		}
		return src > 0 && 2*n > src
	}
	b := qa.BundleOrdinaryMR
	switch {
	case has(qa.ProfileMobileReviewer) && most("swift", "kotlin", "java", "xml", "gradle", "plist", "objc"):
		b = qa.BundleMobile
	case has(qa.ProfileTypeScriptReviewer) && allTS && allTests:
		b = qa.BundleAutotest
	case has(qa.ProfileTypeScriptReviewer) && has(qa.ProfileReactReviewer) && most("typescript", "javascript"):
		b = qa.BundleWidget
	case has(qa.ProfileReactReviewer) && most("typescript", "javascript"):
		b = qa.BundleWidgetJS
	case has(qa.ProfileRubyReviewer) && most("ruby"):
		b = qa.BundleRubyBackend
	case has(qa.ProfilePythonReviewer) && most("python"):
		b = qa.BundlePythonBackend
	}
	names := make([]string, len(rec))
	for i, p := range rec {
		names[i] = string(p)
	}
	return triageChoice{bundle: string(b), why: fmt.Sprintf("bundle %s from recommended profiles [%s]", b, strings.Join(names, ", "))}
}

// candidateProfiles may report finding candidates; the explorer and the
// test analyzer report evidence maps and coverage gaps instead.
func canReport(p qa.Profile) bool {
	r, err := qa.Prepare(qa.PrepareInput{AgentProfile: p})
	return err == nil && slices.Contains(r.RequiredSections, qa.SectionFindingCandidates)
}

var foldOrder = []qa.Profile{qa.ProfileCodeReviewer, qa.ProfileTypeScriptReviewer, qa.ProfilePythonReviewer,
	qa.ProfileRubyReviewer, qa.ProfileMobileReviewer, qa.ProfileReactReviewer, qa.ProfileSecurityReviewer, qa.ProfileSilentFailureHunter}

// foldProfiles maps every rule profile to the session profile that answers
// for it: itself when the session has it and it may report candidates,
// else the session's generalist. All checklists run on every review; the
// bundle decides who reports them, and the audit records the folding.
func foldProfiles(session []qa.Profile) map[string]qa.Profile {
	fallback := session[0]
	for _, p := range foldOrder {
		if slices.Contains(session, p) {
			fallback = p
			break
		}
	}
	out := map[string]qa.Profile{}
	for _, rp := range rules.Profiles {
		p := qa.Profile(rp)
		if slices.Contains(session, p) && canReport(p) {
			out[rp] = p
		} else {
			out[rp] = fallback
		}
	}
	return out
}

// ---- admission: anchoring, suppression -------------------------------------

func (e *engine) fileByPath(p string) *ChangedFile {
	i, ok := slices.BinarySearchFunc(e.ch.Files, p, func(f *ChangedFile, p string) int { return strings.Compare(f.Path(), p) })
	if !ok {
		return nil
	}
	return e.ch.Files[i]
}

// admit anchors a candidate to the change and applies suppressions; it
// returns nil (with the reason recorded) when the candidate does not make it.
func (e *engine) admit(c Candidate) *candidate {
	where := fmt.Sprintf("%s:%d %s", c.Path, max(c.StartLine, c.OldLine), c.RuleID)
	if _, err := findings.ParseSeverity(c.Severity); err != nil || c.Path == "" || c.Category == "" || c.Title == "" {
		e.drop("malformed candidate (missing path, category, title or a valid severity)", where)
		return nil
	}
	c.Severity = strings.ToLower(strings.TrimSpace(c.Severity))
	f := e.fileByPath(c.Path)
	if f == nil {
		e.drop("file not in review scope", where)
		return nil
	}
	k := &candidate{Candidate: c, side: "RIGHT"}
	added, removed := f.Diff.Added(), f.Diff.Removed()
	spans := f.Diff.Spans(e.o.FilterMode)
	switch {
	case c.OldLine > 0:
		// About a removed line: keep it on the new side where the provider
		// placed it when that is a changed line, else on the old side.
		if c.StartLine > 0 {
			if _, _, ok := diff.Clip(spans, c.StartLine, max(c.EndLine, c.StartLine)); ok {
				break
			}
		}
		k.side = "LEFT"
		k.StartLine, k.EndLine = c.OldLine, c.OldLine
	case c.StartLine <= 0 && len(added) > 0:
		k.StartLine, k.EndLine = added[0].NewNo, added[0].NewNo
	case c.StartLine <= 0 && len(removed) > 0:
		k.side = "LEFT"
		k.StartLine, k.EndLine = removed[0].OldNo, removed[0].OldNo
	case c.StartLine <= 0:
		e.drop("no changed line to anchor to", where)
		return nil
	}
	if k.EndLine < k.StartLine {
		k.EndLine = k.StartLine
	}
	if k.side == "LEFT" && spans != nil {
		spans = oldSpans(f.Diff)
	}
	s, en, ok := diff.Clip(spans, k.StartLine, k.EndLine)
	if !ok {
		e.drop("outside changed lines (filter "+e.o.FilterMode+")", where)
		return nil
	}
	k.StartLine, k.EndLine = s, en
	if sup, ok := e.suppressed(f, k); ok {
		e.audit.Suppressed = append(e.audit.Suppressed, sup)
		return nil
	}
	// The packet's items are addressed by new-side lines; an old-side
	// finding cites the hunk that removed its line.
	first, last := k.StartLine, k.EndLine
	if k.side == "LEFT" {
		first = newSideOf(f.Diff, k.StartLine)
		last = first
	}
	for _, r := range c.EvidenceRefs {
		if _, ok := e.ch.Packet.Item(r); ok && !slices.Contains(k.refs, r) {
			k.refs = append(k.refs, r)
		}
	}
	if len(k.refs) == 0 {
		k.refs = e.ch.Packet.RefsAt(f.Path(), first, last)
	}
	if len(k.refs) == 0 {
		for _, it := range e.ch.Packet.Items {
			if it.Path != nil && *it.Path == f.Path() {
				k.refs = append(k.refs, it.Ref)
			}
		}
	}
	if len(k.refs) > 32 {
		k.refs = k.refs[:32]
	}
	return k
}

// oldSpans are the removed lines' old-side ranges (empty, not nil, when
// nothing was removed: nil would mean "any line").
func oldSpans(f *diff.File) []diff.Span {
	out := []diff.Span{}
	for _, l := range f.Removed() {
		if k := len(out); k > 0 && out[k-1].End+1 == l.OldNo {
			out[k-1].End = l.OldNo
			continue
		}
		out = append(out, diff.Span{Start: l.OldNo, End: l.OldNo})
	}
	return out
}

// newSideOf maps an old-side line to where its hunk sits on the new side.
func newSideOf(f *diff.File, old int) int {
	for _, h := range f.Hunks {
		if old >= h.OldStart && old < h.OldStart+max(h.OldLines, 1) {
			return max(h.NewStart, 1)
		}
	}
	return 1
}

// ---- synthesis ---------------------------------------------------------------

// synthesize merges candidates about the same problem (same file, side,
// first line and category) across rules and profiles; the most severe,
// then most confident, then earliest profile's candidate leads the group.
func synthesize(per map[qa.Profile][]*candidate, order []qa.Profile) []*group {
	byKey := map[string]*group{}
	var groups []*group
	for _, p := range order {
		for _, c := range per[p] {
			key := c.Path + "\x00" + c.side + "\x00" + strconv.Itoa(c.StartLine) + "\x00" + c.Category
			g := byKey[key]
			if g == nil {
				g = &group{}
				byKey[key] = g
				groups = append(groups, g)
			}
			g.members = append(g.members, c)
			c.group = g
			if g.best == nil || better(c, g.best) {
				g.best = c
			}
			g.confidence = max(g.confidence, c.Confidence)
		}
	}
	slices.SortStableFunc(groups, func(a, b *group) int {
		return cmp.Or(
			cmp.Compare(b.severity().Rank(), a.severity().Rank()),
			cmp.Compare(b.confidence, a.confidence),
			strings.Compare(a.best.Path, b.best.Path),
			cmp.Compare(a.best.StartLine, b.best.StartLine),
			strings.Compare(a.best.RuleID, b.best.RuleID),
		)
	})
	return groups
}

func better(a, b *candidate) bool {
	ra, rb := findings.Severity(a.Severity).Rank(), findings.Severity(b.Severity).Rank()
	if ra != rb {
		return ra > rb
	}
	return a.Confidence > b.Confidence
}

// groupsForSession binds the highest-ranked groups (at most the contract's
// 100 final findings) to the session and numbers them.
func groupsForSession(groups []*group) map[*group]bool {
	bound := map[*group]bool{}
	for i, g := range groups {
		if i >= maxSessionFindings {
			break
		}
		bound[g] = true
		g.finalID = fmt.Sprintf("F-%02d", i+1)
	}
	return bound
}

func confidenceLevel(f float64) qa.Confidence {
	switch {
	case f >= 0.8:
		return qa.ConfidenceHigh
	case f >= 0.5:
		return qa.ConfidenceMedium
	}
	return qa.ConfidenceLow
}

func clip(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

func nonEmpty(s, fallback string) string {
	if strings.TrimSpace(s) == "" {
		return fallback
	}
	return s
}

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
	impact := clip(c.Impact, 2000)
	fail := clip(nonEmpty(c.Anchor, nonEmpty(c.Snippet, c.Title)), 2000)
	flip := "Evidence that the flagged code is unreachable, intended, or already handled elsewhere."
	pc := qa.ProfileCandidate{
		CandidateID: id, Title: clip(c.Title, 256), Description: clip(nonEmpty(c.Message, c.Title), 5000),
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

func (e *engine) profileReport(p qa.Profile, cands []*candidate, bound map[*group]bool, res ProfileResult, groups []*group) *qa.ProfileReport {
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
	r.Scope = clip(scope, 2000)
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
				Text:         clip(fmt.Sprintf("%s:%d: %s", g.best.Path, g.best.StartLine, g.best.Title), 2000),
				EvidenceRefs: e.refsOrPlaceholder(g.best.refs)})
		}
	}
	for _, gap := range res.Gaps {
		if len(r.CoverageGaps) < maxSessionFindings {
			r.CoverageGaps = append(r.CoverageGaps, qa.RefNote{Text: clip(gap, 2000)})
		}
	}
	for _, u := range res.Unverified {
		if len(r.Unverified) < maxSessionFindings {
			r.Unverified = append(r.Unverified, qa.RefNote{Text: clip(u, 2000)})
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

// evidenceMap is the explorer's output: changed symbols and where they are
// used, mapped to evidence refs.
func (e *engine) evidenceMap() []qa.EvidenceMapEntry {
	var out []qa.EvidenceMapEntry
	for _, s := range e.symbols() {
		if len(out) >= 500 {
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
		out = append(out, qa.EvidenceMapEntry{EvidenceRef: refs[0], Description: clip(desc, 2000)})
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
	for _, s := range e.symbols() {
		if len(s.UsedIn) >= 10 {
			rs.HighBlastRadius = true
			why = append(why, fmt.Sprintf("%s is used in %d places", s.Name, len(s.UsedIn)))
			addRefs(e.ch.Packet.RefsAt(s.Path, s.Line, s.Line))
			break
		}
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
		r := clip("Computed by diffpal: "+strings.Join(why, "; ")+".", 2000)
		rs.Rationale = &r
		if len(refs) == 0 && len(e.ch.Packet.Items) > 0 {
			refs = []string{e.ch.Packet.Items[0].Ref}
		}
		rs.EvidenceRefs = refs
	}
	return rs
}

// deepPass runs the deep review. With a verifier (a model), the severe
// candidates are checked against wider evidence: refuted ones are
// rejected, confirmed ones gain confidence. Without one, the builtin
// heuristics re-weigh the severe groups with the whole file in view:
// security matches inside test code and fixtures are less likely to
// matter, matches that several independent rules agree on more likely.
func (e *engine) deepPass(ctx context.Context, groups []*group, a *qa.DeepAssessment) (*DeepPass, error) {
	d := &DeepPass{By: "builtin heuristics"}
	if a != nil {
		for _, r := range a.ReasonCodes {
			d.Reasons = append(d.Reasons, string(r))
		}
	}
	var severe []*group
	for _, g := range groups {
		if g.severity().Rank() >= findings.High.Rank() {
			severe = append(severe, g)
		}
	}
	d.Examined = len(severe)
	if v := e.o.DeepVerifier; v != nil {
		d.By = v.Name()
		verdicts, err := e.verify(ctx, v, severe, d.Reasons)
		if err != nil {
			return nil, err
		}
		for i, g := range severe {
			switch verdicts[i].Verdict {
			case "rejected":
				g.rejected = true
				d.Rejected++
				d.Rationale = append(d.Rationale, fmt.Sprintf("%s:%d %s refuted: %s", g.best.Path, g.best.StartLine, g.best.RuleID, clip(verdicts[i].Rationale, 300)))
			case "confirmed":
				if g.confidence < 1 {
					g.confidence = min(1, g.confidence+0.1)
					d.Raised++
				}
			}
		}
		return d, nil
	}
	for _, g := range severe {
		if g.best.Category == "security" && rules.IsTestPath(g.best.Path) {
			g.confidence = max(0.3, g.confidence-0.2)
			d.Lowered++
			d.Rationale = append(d.Rationale, fmt.Sprintf("%s:%d %s is in test code: confidence lowered", g.best.Path, g.best.StartLine, g.best.RuleID))
			continue
		}
		rulesAgree := map[string]bool{}
		for _, m := range g.members {
			rulesAgree[m.RuleID] = true
		}
		if len(rulesAgree) >= 2 && g.confidence < 1 {
			g.confidence = min(1, g.confidence+0.1)
			d.Raised++
			d.Rationale = append(d.Rationale, fmt.Sprintf("%s:%d: %d rules agree: confidence raised", g.best.Path, g.best.StartLine, len(rulesAgree)))
		}
	}
	return d, nil
}

// verify asks v about the groups' leading candidates and records each
// verdict on its group; a verifier that skips a candidate leaves it
// unverified.
func (e *engine) verify(ctx context.Context, v Verifier, gs []*group, reasons []string) ([]Verdict, error) {
	out := make([]Verdict, len(gs))
	for i := range out {
		out[i] = Verdict{Index: i, Verdict: "unverified"}
	}
	if len(gs) == 0 {
		return out, nil
	}
	cands := make([]Candidate, len(gs))
	for i, g := range gs {
		cands[i] = g.best.Candidate
		cands[i].EvidenceRefs = g.best.refs
	}
	got, err := v.Verify(ctx, e.ch, cands, reasons)
	if err != nil {
		return nil, err
	}
	for _, vd := range got {
		if vd.Index < 0 || vd.Index >= len(gs) {
			continue
		}
		var refs []string
		for _, r := range vd.EvidenceRefs {
			if _, ok := e.ch.Packet.Item(r); ok {
				refs = append(refs, r)
			}
		}
		vd.EvidenceRefs = refs
		out[vd.Index] = vd
		g := gs[vd.Index]
		g.verdict, g.rationale, g.vrefs = vd.Verdict, vd.Rationale, refs
	}
	return out, nil
}

// verifyAtSynthesis lets a model verifier decide every candidate bound to
// the session before the final report records the decisions.
func (e *engine) verifyAtSynthesis(ctx context.Context, groups []*group, bound map[*group]bool) error {
	v := e.o.SynthesisVerifier
	if v == nil {
		return nil
	}
	var gs []*group
	for _, g := range groups {
		if bound[g] && !g.rejected && !g.baseline {
			gs = append(gs, g)
		}
	}
	verdicts, err := e.verify(ctx, v, gs, nil)
	if err != nil {
		return err
	}
	for i, g := range gs {
		if verdicts[i].Verdict == "rejected" {
			g.rejected = true
		}
	}
	return nil
}

// finalReport records a decision for every candidate of every profile
// report, with a refutation attempt bound to the candidate's hash.
func (e *engine) finalReport(s qa.Session, groups []*group, bound map[*group]bool, per map[qa.Profile][]*candidate) (*qa.FinalReviewReport, error) {
	stored := map[string]qa.ProfileCandidate{}
	for _, r := range s.ProfileReports {
		for _, c := range r.FindingCandidates {
			stored[string(r.Profile)+"\x00"+c.CandidateID] = c
		}
	}
	fr := &qa.FinalReviewReport{ProfilesReviewed: s.CompletedProfiles}
	counts := map[findings.Severity]int{}
	kept, refuted := 0, 0
	for _, g := range groups {
		if g.rejected {
			refuted++
			continue
		}
		if g.baseline {
			continue
		}
		kept++
		counts[g.severity()]++
	}
	fr.Summary = clip(fmt.Sprintf("%s review of %d files (%d added lines): %d findings (critical %d, high %d, medium %d, low %d); %d candidates refuted by verification.",
		e.o.Provider.Name(), e.audit.Files, e.audit.AddedLines, kept, counts[findings.Critical], counts[findings.High], counts[findings.Medium], counts[findings.Low], refuted), 5000)
	bindContext := s.ReviewContext != nil
	hashOf := func(m *candidate) (string, error) {
		pc, ok := stored[string(m.profile)+"\x00"+m.id]
		if !ok {
			return "", fmt.Errorf("internal: candidate %s/%s not in the session", m.profile, m.id)
		}
		return qa.CandidateSHA256(pc)
	}
	for _, g := range groups {
		if !bound[g] {
			continue
		}
		if g.baseline && !g.rejected {
			// Already reported before: not a new finding of this review.
			for _, m := range g.members {
				if m.id == "" {
					continue
				}
				fr.CandidateDecisions = append(fr.CandidateDecisions, qa.CandidateDecision{
					Source: qa.CandidateRef{Profile: m.profile, CandidateID: m.id}, Verdict: qa.VerdictRejected,
					Rationale:    clip("Already in the baseline bundle as stable_id "+g.stableID+"; not reported again.", 2000),
					EvidenceRefs: e.refsOrPlaceholder(m.refs)})
			}
			continue
		}
		if g.rejected {
			// Refuted by a verifier: every member is rejected with the
			// refutation bound to its hash, and nothing reaches the bundle.
			for _, m := range g.members {
				if m.id == "" {
					continue
				}
				refs := e.refsOrPlaceholder(nonEmptyRefs(g.vrefs, m.refs))
				d := qa.CandidateDecision{Source: qa.CandidateRef{Profile: m.profile, CandidateID: m.id}, Verdict: qa.VerdictRejected,
					Rationale: clip(nonEmpty(g.rationale, "Refuted by verification against the evidence."), 2000), EvidenceRefs: refs}
				if bindContext {
					h, err := hashOf(m)
					if err != nil {
						return nil, err
					}
					d.Refutation = &qa.Refutation{Status: qa.RefutationRefuted, CandidateSHA256: h, ContextSHA256: s.ReviewContext.EvidencePacketSHA256,
						Rationale: d.Rationale, EvidenceRefs: refs}
				}
				fr.CandidateDecisions = append(fr.CandidateDecisions, d)
			}
			continue
		}
		var srcProfiles []qa.Profile
		var srcCands []qa.CandidateRef
		for _, m := range g.members {
			if m.id == "" {
				continue
			}
			if !slices.Contains(srcProfiles, m.profile) {
				srcProfiles = append(srcProfiles, m.profile)
			}
			srcCands = append(srcCands, qa.CandidateRef{Profile: m.profile, CandidateID: m.id})
		}
		if len(srcCands) == 0 {
			continue // its profile may not report candidates
		}
		fc := e.profileCandidate(g.best, g.finalID)
		sev := qaSeverity(g.severity())
		fr.FindingCandidates = append(fr.FindingCandidates, qa.FinalCandidate{
			CandidateID: g.finalID, Title: fc.Title, Description: fc.Description, Confidence: confidenceLevel(g.confidence),
			VerificationGap: fc.VerificationGap, EvidenceRefs: fc.EvidenceRefs, AffectedArea: fc.AffectedArea, Impact: fc.Impact,
			FailureCondition: fc.FailureCondition, FlipCondition: fc.FlipCondition, SourceLocations: fc.SourceLocations,
			Severity: &sev, SourceProfiles: srcProfiles, SourceCandidates: srcCands,
		})
		for _, m := range g.members {
			if m.id == "" {
				continue
			}
			finalID := g.finalID
			d := qa.CandidateDecision{Source: qa.CandidateRef{Profile: m.profile, CandidateID: m.id}, FinalFindingID: &finalID,
				EvidenceRefs: e.refsOrPlaceholder(m.refs)}
			if m == g.best {
				d.Verdict = qa.VerdictConfirmed
				d.Rationale = clip(fmt.Sprintf("%s reported it at %s:%d on changed lines; it survived anchoring, suppression and the baseline.", nonEmpty(m.RuleID, e.o.Provider.Name()), m.Path, m.StartLine), 2000)
			} else {
				d.Verdict = qa.VerdictDuplicate
				d.Rationale = clip(fmt.Sprintf("Same location and category as %s (rule %s).", g.finalID, g.best.RuleID), 2000)
			}
			if bindContext {
				h, err := hashOf(m)
				if err != nil {
					return nil, err
				}
				status, why := qa.RefutationNotRefuted, "Re-checked the rule match against the comment- and string-masked changed line; the match stands."
				switch g.verdict {
				case "confirmed":
					why = nonEmpty(g.rationale, "Verified against the evidence.")
				case "unverified":
					status, why = qa.RefutationUnverified, nonEmpty(g.rationale, "The verifier could not decide from the evidence.")
				}
				d.Refutation = &qa.Refutation{Status: status, CandidateSHA256: h, ContextSHA256: s.ReviewContext.EvidencePacketSHA256,
					Rationale: clip(why, 2000), EvidenceRefs: e.refsOrPlaceholder(nonEmptyRefs(g.vrefs, d.EvidenceRefs))}
			}
			fr.CandidateDecisions = append(fr.CandidateDecisions, d)
		}
	}
	if n := kept - len(fr.FindingCandidates); n > 0 {
		fr.CoverageGaps = append(fr.CoverageGaps, qa.RefNote{Text: fmt.Sprintf("%d findings are recorded only in findings.json (beyond the session's %d-finding limit, or from profiles that report no candidates).", n, maxSessionFindings)})
	}
	if n := len(e.ch.Skips); n > 0 {
		fr.CoverageGaps = append(fr.CoverageGaps, qa.RefNote{Text: fmt.Sprintf("%d changed files were not reviewed (skips are listed with reasons in qa-session.json).", n)})
	}
	return fr, nil
}

func nonEmptyRefs(a, b []string) []string {
	if len(a) > 0 {
		if len(a) > 32 {
			return a[:32]
		}
		return a
	}
	return b
}

func qaSeverity(s findings.Severity) qa.Severity {
	switch s {
	case findings.Critical, findings.High:
		return qa.SeverityHigh
	case findings.Medium:
		return qa.SeverityMedium
	}
	return qa.SeverityLow
}

// ---- bundle ------------------------------------------------------------------

func (e *engine) buildBundle(groups []*group) error {
	ch := e.ch
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
		b.ChangeSummary = append(b.ChangeSummary, s)
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
			Title:       clip(c.Title, 256), Message: nonEmpty(c.Message, c.Title),
			Evidence: &findings.Evidence{Anchor: nonEmpty(c.Anchor, nonEmpty(c.Snippet, c.Title)),
				ReasoningBasis: "rule " + nonEmpty(c.RuleID, "(provider)") + " (" + c.RuleProfile + "): " + nonEmpty(c.Snippet, c.Title),
				Source:         nonEmpty(c.Source, "changed_line")},
			Impact:     &findings.Impact{Summary: nonEmpty(c.Impact, c.Title), Scope: nonEmpty(c.Scope, c.Path)},
			Suggestion: c.Suggestion, Provider: e.o.Provider.Name(),
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
	blocking := 0
	for _, f := range b.Findings {
		if f.Blocking {
			blocking++
		}
	}
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
