package qa

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// maxLine is the largest line number a findings bundle can carry
// (locations become 32-bit findings lines on export).
const maxLine = 2147483647

// checkCandidate checks what profile and final candidates share beyond
// their rules: refs of this session, and locations in order. field is the
// candidate's JSON path.
func checkCandidate(c *checker, field string, refs []string, locs []SourceLocation, known map[string]bool) {
	c.known(field+".evidence_refs", refs, known)
	for i, l := range locs {
		if l.EndLine != nil && *l.EndLine < l.StartLine {
			c.failf(fmt.Sprintf("%s.source_locations[%d].end_line", field, i), "must be >= start_line")
		}
	}
}

func checkNotes(c *checker, field string, notes []RefNote, known map[string]bool) {
	for i, n := range notes {
		c.known(fmt.Sprintf("%s[%d].evidence_refs", field, i), n.EvidenceRefs, known)
	}
}

// validateRulesHash enforces the binding of a report to the session's rules:
// equal when rules are bound, null when none are.
func validateRulesHash(c *checker, field string, got *string, s *Session) {
	var want *string
	if s.ReviewContext != nil {
		want = s.ReviewContext.ReviewRulesSHA256
	}
	switch {
	case want == nil && got != nil:
		c.failf(field, "must be null: the session has no review rules")
	case want != nil && got == nil:
		c.failf(field, "is required: the session is bound to review rules %s", *want)
	case want != nil && !strings.EqualFold(*got, *want):
		c.failf(field, "does not match the session's review_rules_sha256 %s", *want)
	}
}

// normalizeProfileReport validates a profile report against the session and
// returns its stored form.
func normalizeProfileReport(s *Session, r ProfileReport, completed Profile) (ProfileReport, error) {
	c := &checker{code: CodeInvalidProfileReport}
	const p = "profile_report"
	known := s.evidenceSet()
	c.checkRules(p, &r, true)
	if r.Profile != completed {
		c.failf(p+".profile", "must equal completed_profile %q", completed)
	}
	for i, e := range r.EvidenceMap {
		c.knownRef(fmt.Sprintf("%s.evidence_map[%d].evidence_ref", p, i), e.EvidenceRef, known)
	}
	if len(r.FindingCandidates) > 0 && !allowsCandidates(r.Profile) {
		c.failf(p+".finding_candidates", "must be empty: %s has no Finding Candidates section", r.Profile)
	}
	ids := map[string]bool{}
	for i, fc := range r.FindingCandidates {
		f := fmt.Sprintf("%s.finding_candidates[%d]", p, i)
		checkCandidate(c, f, fc.EvidenceRefs, fc.SourceLocations, known)
		if ids[fc.CandidateID] {
			c.failf(f+".candidate_id", "duplicate candidate_id %q", fc.CandidateID)
		}
		ids[fc.CandidateID] = true
	}
	checkNotes(c, p+".coverage_gaps", r.CoverageGaps, known)
	checkNotes(c, p+".unverified", r.Unverified, known)
	if r.ContextSelection != nil {
		cs := *r.ContextSelection
		validateContextSelection(c, p+".context_selection", &cs, s, known)
		r.ContextSelection = &cs
	}
	if r.ExecutionMetrics != nil {
		m := *r.ExecutionMetrics
		validateMetrics(c, p+".execution_metrics", &m, r.Profile)
		r.ExecutionMetrics = &m
	}
	validateRulesHash(c, p+".review_rules_sha256", r.ReviewRulesSHA256, s)
	if err := c.result(); err != nil {
		return ProfileReport{}, err
	}
	r.ReviewRulesSHA256 = lowerPtr(r.ReviewRulesSHA256)
	return r, nil
}

func validateContextSelection(c *checker, p string, cs *ContextSelection, s *Session, known map[string]bool) {
	if s.ReviewContext != nil && !strings.EqualFold(cs.SourcePacketSHA256, s.ReviewContext.EvidencePacketSHA256) {
		c.failf(p+".source_packet_sha256", "must equal review_context.evidence_packet_sha256")
	}
	lists := []struct {
		name string
		refs []string
	}{{"included_refs", cs.IncludedRefs}, {"omitted_refs", cs.OmittedRefs}, {"budget_omitted_refs", cs.BudgetOmittedRefs}}
	owner := map[string]string{}
	for _, l := range lists {
		c.known(p+"."+l.name, l.refs, known)
		for i, r := range l.refs {
			if o, ok := owner[r]; ok && o != l.name {
				c.failf(fmt.Sprintf("%s.%s[%d]", p, l.name, i), "%q is also listed in %s; the lists must be disjoint", r, o)
			}
			owner[r] = l.name
		}
	}
	if cs.SelectedBytes > cs.MaxBytes {
		c.failf(p+".selected_bytes", "must be 0-max_bytes")
	}
	cs.SourcePacketSHA256 = strings.ToLower(cs.SourcePacketSHA256)
	cs.SelectedPacketSHA256 = strings.ToLower(cs.SelectedPacketSHA256)
}

// checkInterval requires completed >= started; malformed times are the
// date-time rule's to report.
func checkInterval(c *checker, p, started, completed string) {
	st, err1 := time.Parse(time.RFC3339Nano, started)
	ct, err2 := time.Parse(time.RFC3339Nano, completed)
	if err1 == nil && err2 == nil && ct.Before(st) {
		c.failf(p+".completed_at", "must not be before started_at")
	}
}

// finite rejects NaN and infinities, which no schema keyword rules out
// (JSON cannot carry them; in-process callers can).
func finite(c *checker, field string, v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		c.failf(field, "must be a finite number")
	}
}

func validateMetrics(c *checker, p string, m *ExecutionMetrics, profile Profile) {
	checkInterval(c, p, m.StartedAt, m.CompletedAt)
	for i, a := range m.Attempts {
		f := fmt.Sprintf("%s.attempts[%d]", p, i)
		if a.Profile != profile {
			c.failf(f+".profile", "must be the report's profile %q", profile)
		}
		if a.Attempt != i+1 {
			c.failf(f+".attempt", "must be %d: attempts are numbered 1..n in order", i+1)
		}
		checkInterval(c, f, a.StartedAt, a.CompletedAt)
		finite(c, f+".queue_seconds", a.QueueSeconds)
		finite(c, f+".executor_seconds", a.ExecutorSeconds)
		for _, o := range []struct {
			name string
			v    *float64
		}{{"preparation_seconds", a.PreparationSeconds}, {"model_seconds", a.ModelSeconds}, {"validation_seconds", a.ValidationSeconds}} {
			if o.v != nil {
				finite(c, f+"."+o.name, *o.v)
			}
		}
	}
	if n := len(m.Attempts); n > 0 {
		if m.AttemptCount != nil && *m.AttemptCount != n {
			c.failf(p+".attempt_count", "must equal the number of attempts (%d)", n)
		}
		if m.Attempts[n-1].Outcome != AttemptCompleted {
			c.failf(fmt.Sprintf("%s.attempts[%d].outcome", p, n-1), "the last attempt must be completed")
		}
		m.AttemptCount = ptr(n)
	} else if m.AttemptCount == nil {
		m.AttemptCount = ptr(1)
	}
}

// normalizeRiskSignals validates risk signals against the session.
func normalizeRiskSignals(s *Session, r RiskSignals) (RiskSignals, error) {
	c := &checker{code: CodeInvalidRiskSignals}
	c.checkRules("risk_signals", &r, true)
	c.known("risk_signals.evidence_refs", r.EvidenceRefs, s.evidenceSet())
	if r.any() && (r.Rationale == nil || strings.TrimSpace(*r.Rationale) == "") {
		c.failf("risk_signals.rationale", "is required when any signal is true")
	}
	return r, c.result()
}
