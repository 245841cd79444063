package qa

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// validateCandidateFields checks the fields profile and final candidates
// share; field is the candidate's JSON path.
// maxLine is the largest line number a findings bundle can carry.
const maxLine = 2147483647

func validateCandidateFields(c *checker, field string, id, title, desc string, conf Confidence, gap string,
	refs []string, area, impact, failure, flip *string, locs []SourceLocation, known map[string]bool) {
	if !isCandidateID(id) {
		c.failf(field+".candidate_id", "must match %s", patternCandidateID)
	}
	c.text(field+".title", title, 1, 256)
	c.text(field+".description", desc, 1, 5000)
	if !conf.valid() {
		c.failf(field+".confidence", "must be high, medium or low")
	}
	c.text(field+".verification_gap", gap, 1, 2000)
	c.refs(field+".evidence_refs", refs, 1, 32, known)
	c.optText(field+".affected_area", area, 0, 256)
	c.optText(field+".impact", impact, 0, 2000)
	c.optText(field+".failure_condition", failure, 1, 2000)
	c.optText(field+".flip_condition", flip, 1, 2000)
	c.count(field+".source_locations", len(locs), 0, 20)
	for i, l := range locs {
		lf := fmt.Sprintf("%s.source_locations[%d]", field, i)
		c.text(lf+".path", l.Path, 1, 1024)
		if l.StartLine < 1 {
			c.failf(lf+".start_line", "must be >= 1")
		}
		// Locations become findings lines on export, which are 32-bit.
		if l.StartLine > maxLine || (l.EndLine != nil && *l.EndLine > maxLine) {
			c.failf(lf+".start_line", "must be <= %d", maxLine)
		}
		if l.EndLine != nil && *l.EndLine < l.StartLine {
			c.failf(lf+".end_line", "must be >= start_line")
		}
	}
}

func validateNotes(c *checker, field string, notes []RefNote, known map[string]bool) {
	c.count(field, len(notes), 0, 100)
	for i, n := range notes {
		nf := fmt.Sprintf("%s[%d]", field, i)
		c.text(nf+".text", n.Text, 1, 2000)
		c.refs(nf+".evidence_refs", n.EvidenceRefs, 0, 32, known)
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
	case want != nil && !isSHA256(*got):
		c.failf(field, "must be 64 hex characters")
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
	if r.Profile != completed {
		c.failf(p+".profile", "must equal completed_profile %q", completed)
	}
	c.text(p+".scope", r.Scope, 1, 2000)
	c.count(p+".evidence_map", len(r.EvidenceMap), 0, 500)
	for i, e := range r.EvidenceMap {
		f := fmt.Sprintf("%s.evidence_map[%d]", p, i)
		c.ref(f+".evidence_ref", e.EvidenceRef, known)
		c.text(f+".description", e.Description, 1, 2000)
	}
	c.count(p+".finding_candidates", len(r.FindingCandidates), 0, 100)
	if len(r.FindingCandidates) > 0 && !allowsCandidates(r.Profile) {
		c.failf(p+".finding_candidates", "must be empty: %s has no Finding Candidates section", r.Profile)
	}
	ids := map[string]bool{}
	for i, fc := range r.FindingCandidates {
		f := fmt.Sprintf("%s.finding_candidates[%d]", p, i)
		validateCandidateFields(c, f, fc.CandidateID, fc.Title, fc.Description, fc.Confidence, fc.VerificationGap,
			fc.EvidenceRefs, fc.AffectedArea, fc.Impact, fc.FailureCondition, fc.FlipCondition, fc.SourceLocations, known)
		if ids[fc.CandidateID] {
			c.failf(f+".candidate_id", "duplicate candidate_id %q", fc.CandidateID)
		}
		ids[fc.CandidateID] = true
	}
	validateNotes(c, p+".coverage_gaps", r.CoverageGaps, known)
	validateNotes(c, p+".unverified", r.Unverified, known)
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
	c.sha256(p+".source_packet_sha256", cs.SourcePacketSHA256)
	if s.ReviewContext != nil && isSHA256(cs.SourcePacketSHA256) &&
		!strings.EqualFold(cs.SourcePacketSHA256, s.ReviewContext.EvidencePacketSHA256) {
		c.failf(p+".source_packet_sha256", "must equal review_context.evidence_packet_sha256")
	}
	c.sha256(p+".selected_packet_sha256", cs.SelectedPacketSHA256)
	lists := []struct {
		name string
		refs []string
	}{{"included_refs", cs.IncludedRefs}, {"omitted_refs", cs.OmittedRefs}, {"budget_omitted_refs", cs.BudgetOmittedRefs}}
	owner := map[string]string{}
	for _, l := range lists {
		c.refs(p+"."+l.name, l.refs, 0, 1000, known)
		for i, r := range l.refs {
			if o, ok := owner[r]; ok && o != l.name {
				c.failf(fmt.Sprintf("%s.%s[%d]", p, l.name, i), "%q is also listed in %s; the lists must be disjoint", r, o)
			}
			owner[r] = l.name
		}
	}
	if cs.MaxBytes < 1 || cs.MaxBytes > 2_000_000 {
		c.failf(p+".max_bytes", "must be 1-2000000")
	}
	if cs.SelectedBytes < 0 || cs.SelectedBytes > cs.MaxBytes {
		c.failf(p+".selected_bytes", "must be 0-max_bytes")
	}
	cs.SourcePacketSHA256 = strings.ToLower(cs.SourcePacketSHA256)
	cs.SelectedPacketSHA256 = strings.ToLower(cs.SelectedPacketSHA256)
}

func parseTime(c *checker, field, v string) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		c.failf(field, "must be an RFC 3339 date-time")
		return time.Time{}, false
	}
	return t, true
}

func checkInterval(c *checker, p, started, completed string) {
	st, ok1 := parseTime(c, p+".started_at", started)
	ct, ok2 := parseTime(c, p+".completed_at", completed)
	if ok1 && ok2 && ct.Before(st) {
		c.failf(p+".completed_at", "must not be before started_at")
	}
}

func nonNegative(c *checker, field string, v float64) {
	if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		c.failf(field, "must be a finite number >= 0")
	}
}

func nonNegativeInt(c *checker, field string, v *int64) {
	if v != nil && *v < 0 {
		c.failf(field, "must be >= 0")
	}
}

func validateMetrics(c *checker, p string, m *ExecutionMetrics, profile Profile) {
	checkInterval(c, p, m.StartedAt, m.CompletedAt)
	nonNegativeInt(c, p+".input_tokens", m.InputTokens)
	nonNegativeInt(c, p+".output_tokens", m.OutputTokens)
	if m.AttemptCount != nil && (*m.AttemptCount < 1 || *m.AttemptCount > 4) {
		c.failf(p+".attempt_count", "must be 1-4")
	}
	c.count(p+".attempts", len(m.Attempts), 0, 4)
	for i, a := range m.Attempts {
		f := fmt.Sprintf("%s.attempts[%d]", p, i)
		if a.Profile != profile {
			c.failf(f+".profile", "must be the report's profile %q", profile)
		}
		if a.Attempt != i+1 {
			c.failf(f+".attempt", "must be %d: attempts are numbered 1..n in order", i+1)
		}
		if !a.Outcome.valid() {
			c.failf(f+".outcome", "must be completed, retryable_error, timeout, failed or cancelled")
		}
		checkInterval(c, f, a.StartedAt, a.CompletedAt)
		nonNegative(c, f+".queue_seconds", a.QueueSeconds)
		nonNegative(c, f+".executor_seconds", a.ExecutorSeconds)
		for _, o := range []struct {
			name string
			v    *float64
		}{{"preparation_seconds", a.PreparationSeconds}, {"model_seconds", a.ModelSeconds}, {"validation_seconds", a.ValidationSeconds}} {
			if o.v != nil {
				nonNegative(c, f+"."+o.name, *o.v)
			}
		}
		nonNegativeInt(c, f+".input_tokens", a.InputTokens)
		nonNegativeInt(c, f+".output_tokens", a.OutputTokens)
		nonNegativeInt(c, f+".cached_input_tokens", a.CachedInputTokens)
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
	c.refs("risk_signals.evidence_refs", r.EvidenceRefs, 0, 32, s.evidenceSet())
	c.optText("risk_signals.rationale", r.Rationale, 0, 2000)
	if r.any() && (r.Rationale == nil || strings.TrimSpace(*r.Rationale) == "") {
		c.failf("risk_signals.rationale", "is required when any signal is true")
	}
	return r, c.result()
}
