package qa

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/diffpalhq/diffpal/internal/jcs"
)

func TestReviewContextValidation(t *testing.T) {
	long := strings.Repeat("x", 513)
	tests := []struct {
		name  string
		mod   func(*ReviewContextInput)
		field string
	}{
		{"empty repository", func(c *ReviewContextInput) { c.Repository = "" }, "review_context.repository"},
		{"long repository", func(c *ReviewContextInput) { c.Repository = long }, "review_context.repository"},
		{"short base", func(c *ReviewContextInput) { c.BaseSHA = "abc" }, "review_context.base_sha"},
		{"non-hex head", func(c *ReviewContextInput) { c.HeadSHA = strings.Repeat("g", 40) }, "review_context.head_sha"},
		{"diff sha 40", func(c *ReviewContextInput) { c.DiffSHA256 = sha40 }, "review_context.diff_sha256"},
		{"packet sha", func(c *ReviewContextInput) { c.EvidencePacketSHA256 = "" }, "review_context.evidence_packet_sha256"},
		{"no changed files", func(c *ReviewContextInput) { c.ChangedFiles = nil }, "review_context.changed_files"},
		{"too many files", func(c *ReviewContextInput) {
			c.ChangedFiles = nil
			for i := range 501 {
				c.ChangedFiles = append(c.ChangedFiles, strings.Repeat("a", i+1))
			}
		}, "review_context.changed_files"},
		{"empty file", func(c *ReviewContextInput) { c.ChangedFiles = []string{""} }, "review_context.changed_files[0]"},
		{"long file", func(c *ReviewContextInput) { c.ChangedFiles = []string{strings.Repeat("a", 1025)} }, "review_context.changed_files[0]"},
		{"duplicate file", func(c *ReviewContextInput) { c.ChangedFiles = []string{"a", "a"} }, "review_context.changed_files[1]"},
		{"no refs", func(c *ReviewContextInput) { c.EvidenceRefs = []string{} }, "review_context.evidence_refs"},
		{"bad ref", func(c *ReviewContextInput) { c.EvidenceRefs = []string{"E1", ".x"} }, "review_context.evidence_refs[1]"},
		{"long ref", func(c *ReviewContextInput) { c.EvidenceRefs = []string{strings.Repeat("a", 129)} }, "review_context.evidence_refs[0]"},
		{"duplicate ref", func(c *ReviewContextInput) { c.EvidenceRefs = []string{"E1", "E1"} }, "review_context.evidence_refs[1]"},
		{"registry unknown ref", func(c *ReviewContextInput) {
			c.EvidenceRegistry = []RegistryEntry{{EvidenceRef: "E9", Kind: EvidenceDiff, SHA256: shaA}}
		}, "review_context.evidence_registry[0].evidence_ref"},
		{"registry incomplete", func(c *ReviewContextInput) {
			c.EvidenceRegistry = []RegistryEntry{{EvidenceRef: "E1", Kind: EvidenceDiff, SHA256: shaA}}
		}, "review_context.evidence_refs[1]"},
		{"registry duplicate", func(c *ReviewContextInput) {
			c.EvidenceRegistry = []RegistryEntry{{EvidenceRef: "E1", Kind: EvidenceDiff, SHA256: shaA}, {EvidenceRef: "E1", Kind: EvidenceDiff, SHA256: shaA}}
		}, "review_context.evidence_registry[1].evidence_ref"},
		{"registry kind", func(c *ReviewContextInput) {
			c.EvidenceRegistry = fullRegistry(func(e *RegistryEntry) { e.Kind = "blob" })
		}, "review_context.evidence_registry[0].kind"},
		{"registry sha", func(c *ReviewContextInput) {
			c.EvidenceRegistry = fullRegistry(func(e *RegistryEntry) { e.SHA256 = "x" })
		}, "review_context.evidence_registry[0].sha256"},
		{"registry revision", func(c *ReviewContextInput) {
			c.EvidenceRegistry = fullRegistry(func(e *RegistryEntry) { e.Revision = ptr("abc") })
		}, "review_context.evidence_registry[0].revision"},
		{"registry empty path", func(c *ReviewContextInput) {
			c.EvidenceRegistry = fullRegistry(func(e *RegistryEntry) { e.Path = ptr("") })
		}, "review_context.evidence_registry[0].path"},
		{"registry start line", func(c *ReviewContextInput) {
			c.EvidenceRegistry = fullRegistry(func(e *RegistryEntry) { e.StartLine = ptr(0) })
		}, "review_context.evidence_registry[0].start_line"},
		{"registry end before start", func(c *ReviewContextInput) {
			c.EvidenceRegistry = fullRegistry(func(e *RegistryEntry) { e.StartLine, e.EndLine = ptr(5), ptr(4) })
		}, "review_context.evidence_registry[0].end_line"},
		{"registry locator", func(c *ReviewContextInput) {
			c.EvidenceRegistry = fullRegistry(func(e *RegistryEntry) { e.Locator = ptr(strings.Repeat("l", 1025)) })
		}, "review_context.evidence_registry[0].locator"},
		{"rules version", func(c *ReviewContextInput) { c.ReviewRules = &ReviewRules{SchemaVersion: ptr(2)} }, "review_context.review_rules.schema_version"},
		{"rule id", func(c *ReviewContextInput) { c.ReviewRules = rulesWith(func(r *ReviewRule) { r.RuleID = "-bad" }) }, "review_context.review_rules.rules[0].rule_id"},
		{"rule kind", func(c *ReviewContextInput) { c.ReviewRules = rulesWith(func(r *ReviewRule) { r.Kind = "warn" }) }, "review_context.review_rules.rules[0].kind"},
		{"rule no paths", func(c *ReviewContextInput) { c.ReviewRules = rulesWith(func(r *ReviewRule) { r.Paths = nil }) }, "review_context.review_rules.rules[0].paths"},
		{"rule bad glob", func(c *ReviewContextInput) {
			c.ReviewRules = rulesWith(func(r *ReviewRule) { r.Paths = []string{"src/["} })
		}, "review_context.review_rules.rules[0].paths[0]"},
		{"rule empty text", func(c *ReviewContextInput) { c.ReviewRules = rulesWith(func(r *ReviewRule) { r.Text = "" }) }, "review_context.review_rules.rules[0].text"},
		{"rule long rationale", func(c *ReviewContextInput) {
			c.ReviewRules = rulesWith(func(r *ReviewRule) { r.Rationale = strings.Repeat("r", 2001) })
		}, "review_context.review_rules.rules[0].rationale"},
		{"rule empty condition", func(c *ReviewContextInput) { c.ReviewRules = rulesWith(func(r *ReviewRule) { r.Condition = "" }) }, "review_context.review_rules.rules[0].condition"},
		{"duplicate rule id", func(c *ReviewContextInput) {
			c.ReviewRules = rulesWith(nil)
			c.ReviewRules.Rules = append(c.ReviewRules.Rules, c.ReviewRules.Rules[0])
		}, "review_context.review_rules.rules[1].rule_id"},
	}
	o, _ := newTestOrch(t, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := boundContext()
			tt.mod(rc)
			_, err := o.Start(ctx, StartInput{TaskType: TaskOther, ReviewContext: rc})
			wantErr(t, err, CodeInvalidReviewContext, tt.field)
		})
	}
	if l, _ := o.List(ctx, ListInput{}); len(l.Sessions) != 0 {
		t.Fatal("invalid starts created sessions")
	}
}

func fullRegistry(mod func(*RegistryEntry)) []RegistryEntry {
	var out []RegistryEntry
	for i, r := range boundContext().EvidenceRefs {
		e := RegistryEntry{EvidenceRef: r, Kind: EvidenceSource, SHA256: strings.ToUpper(shaC), Path: ptr("src/cart.tsx"),
			Revision: ptr(strings.ToUpper(sha40)), StartLine: ptr(1), EndLine: ptr(3)}
		if i == 0 && mod != nil {
			mod(&e)
		}
		out = append(out, e)
	}
	return out
}

func rulesWith(mod func(*ReviewRule)) *ReviewRules {
	r := ReviewRule{RuleID: "no-panics", Kind: RuleKindRaise, Paths: []string{"src/**/*.go"}, Condition: "a panic is reachable",
		Text: "Report reachable panics.", Rationale: "Panics crash the server."}
	if mod != nil {
		mod(&r)
	}
	return &ReviewRules{Rules: []ReviewRule{r}}
}

func TestReviewContextNormalizationAndRulesHash(t *testing.T) {
	o, _ := newTestOrch(t, nil)
	rc := boundContext()
	rc.EvidenceRegistry = fullRegistry(nil)
	rc.ReviewRules = rulesWith(nil)
	s := mustStart(t, o, StartInput{TaskType: TaskOther, ReviewContext: rc})
	got := s.ReviewContext
	if got.BaseSHA != sha40 || got.EvidenceRegistry[0].SHA256 != shaC || *got.EvidenceRegistry[0].Revision != sha40 {
		t.Fatal("hex identifiers must be stored lower-case")
	}
	// The hash is over the normalized rules object, schema_version included.
	canon := `{"rules":[{"condition":"a panic is reachable","kind":"raise","paths":["src/**/*.go"],"rationale":"Panics crash the server.","rule_id":"no-panics","text":"Report reachable panics."}],"schema_version":1}`
	b, _ := jcs.Marshal(got.ReviewRules)
	if string(b) != canon {
		t.Fatalf("canonical rules:\n%s\nwant\n%s", b, canon)
	}
	want, _ := jcs.SHA256Hex(json.RawMessage(canon))
	if got.ReviewRulesSHA256 == nil || *got.ReviewRulesSHA256 != want {
		t.Fatalf("review_rules_sha256 = %v, want %s", got.ReviewRulesSHA256, want)
	}
	if !slices.Equal(s.RecommendedProfiles, []Profile{ProfileCodeReviewer, ProfileSecurityReviewer, ProfileCodeExplorer, ProfileTypeScriptReviewer, ProfileReactReviewer}) {
		t.Fatalf("recommended_profiles = %v", s.RecommendedProfiles)
	}
	// Reports on a rules-bound session must carry the hash.
	s = mustAdvance(t, o, AdvanceInput{RunID: s.RunID, CompletedStep: StepTriage, Status: OutcomeCompleted, SelectedProfile: ptr(ProfileCodeReviewer)})
	_, err := o.Advance(ctx, AdvanceInput{RunID: s.RunID, CompletedStep: StepPrimaryReview, Status: OutcomeCompleted,
		CompletedProfile: ptr(ProfileCodeReviewer), ProfileReport: reportFor(ProfileCodeReviewer, nil), RiskSignals: &RiskSignals{}})
	wantErr(t, err, CodeInvalidProfileReport, "profile_report.review_rules_sha256")
	upper := strings.ToUpper(want)
	s = mustAdvance(t, o, AdvanceInput{RunID: s.RunID, CompletedStep: StepPrimaryReview, Status: OutcomeCompleted,
		CompletedProfile: ptr(ProfileCodeReviewer), ProfileReport: reportFor(ProfileCodeReviewer, &upper), RiskSignals: &RiskSignals{}})
	if *s.ProfileReports[0].ReviewRulesSHA256 != want {
		t.Fatal("report rules hash must be stored lower-case")
	}
}

func TestRecommendProfiles(t *testing.T) {
	tests := []struct {
		files []string
		want  []Profile
	}{
		{[]string{"main.go"}, []Profile{}},
		{[]string{"web/App.tsx"}, []Profile{ProfileTypeScriptReviewer, ProfileReactReviewer}},
		{[]string{"web/button.jsx"}, []Profile{ProfileReactReviewer}},
		{[]string{"lib/util.ts"}, []Profile{ProfileTypeScriptReviewer}},
		{[]string{"app/models/user.rb"}, []Profile{ProfileRubyReviewer}},
		{[]string{"Gemfile"}, []Profile{ProfileRubyReviewer}},
		{[]string{"svc/handler.py"}, []Profile{ProfilePythonReviewer}},
		{[]string{"android/app/build.gradle"}, []Profile{ProfileMobileReviewer}},
		{[]string{"ios/App/AppDelegate.swift"}, []Profile{ProfileMobileReviewer}},
		{[]string{"pkg/cart_test.go"}, []Profile{ProfilePRTestAnalyzer}},
		{[]string{"spec/models/user_spec.rb"}, []Profile{ProfilePRTestAnalyzer, ProfileRubyReviewer}},
		{[]string{"src/latest.java"}, []Profile{}},
		{[]string{"src/FooTest.java"}, []Profile{ProfilePRTestAnalyzer}},
		{[]string{"internal/AuthService.go"}, []Profile{ProfileSecurityReviewer}},
		{[]string{"internal/oauth2/client.go"}, []Profile{ProfileSecurityReviewer}},
		{[]string{"certs/server.pem"}, []Profile{ProfileSecurityReviewer}},
		{[]string{"internal/author.go"}, []Profile{}},
		{[]string{"internal/retry/backoff.go"}, []Profile{ProfileSilentFailureHunter}},
		{[]string{"internal/errors.go"}, []Profile{ProfileSilentFailureHunter}},
		{[]string{"a.go", "b.go"}, []Profile{ProfileCodeReviewer, ProfileCodeExplorer}},
	}
	for _, tt := range tests {
		if got := RecommendProfiles(tt.files); !slices.Equal(got, tt.want) {
			t.Errorf("RecommendProfiles(%v) = %v, want %v", tt.files, got, tt.want)
		}
	}
	if len(GetCatalog().ProfileHintRules) == 0 {
		t.Error("catalog must publish the hint rules")
	}
}

// boundAtPrimary returns a bound session whose current profile is p.
func boundAtPrimary(t *testing.T, o *Orchestrator, p Profile) Session {
	t.Helper()
	s := mustStart(t, o, StartInput{TaskType: TaskOther, ReviewContext: boundContext()})
	return mustAdvance(t, o, AdvanceInput{RunID: s.RunID, CompletedStep: StepTriage, Status: OutcomeCompleted, SelectedProfile: ptr(p)})
}

func TestProfileReportValidation(t *testing.T) {
	cand := func(mod func(*ProfileCandidate)) func(*ProfileReport) {
		return func(r *ProfileReport) { mod(&r.FindingCandidates[0]) }
	}
	cs := func(mod func(*ContextSelection)) func(*ProfileReport) {
		return func(r *ProfileReport) {
			c := ContextSelection{SourcePacketSHA256: strings.ToUpper(shaB), SelectedPacketSHA256: shaC,
				IncludedRefs: []string{"E1"}, OmittedRefs: []string{"E2"}, MaxBytes: 100, SelectedBytes: 50}
			mod(&c)
			r.ContextSelection = &c
		}
	}
	em := func(mod func(*ExecutionMetrics)) func(*ProfileReport) {
		return func(r *ProfileReport) {
			m := ExecutionMetrics{StartedAt: "2026-10-14T09:00:00Z", CompletedAt: "2026-10-14T09:01:00Z",
				Attempts: []ExecutionAttempt{
					{Profile: ProfileCodeReviewer, Attempt: 1, Outcome: AttemptTimeout, StartedAt: "2026-10-14T09:00:00Z", CompletedAt: "2026-10-14T09:00:30Z"},
					{Profile: ProfileCodeReviewer, Attempt: 2, Outcome: AttemptCompleted, StartedAt: "2026-10-14T09:00:31Z", CompletedAt: "2026-10-14T09:01:00Z", QueueSeconds: 1, ExecutorSeconds: 2},
				}}
			mod(&m)
			r.ExecutionMetrics = &m
		}
	}
	tests := []struct {
		name    string
		profile Profile
		mod     func(*ProfileReport)
		field   string
	}{
		{"empty scope", ProfileCodeReviewer, func(r *ProfileReport) { r.Scope = "" }, "profile_report.scope"},
		{"long scope", ProfileCodeReviewer, func(r *ProfileReport) { r.Scope = strings.Repeat("s", 2001) }, "profile_report.scope"},
		{"map unknown ref", ProfileCodeReviewer, func(r *ProfileReport) { r.EvidenceMap[0].EvidenceRef = "E9" }, "profile_report.evidence_map[0].evidence_ref"},
		{"map empty description", ProfileCodeReviewer, func(r *ProfileReport) { r.EvidenceMap[0].Description = "" }, "profile_report.evidence_map[0].description"},
		{"explorer candidates", ProfileCodeExplorer, func(r *ProfileReport) { r.FindingCandidates = reportFor(ProfileCodeReviewer, nil).FindingCandidates }, "profile_report.finding_candidates"},
		{"test analyzer candidates", ProfilePRTestAnalyzer, func(r *ProfileReport) { r.FindingCandidates = reportFor(ProfileCodeReviewer, nil).FindingCandidates }, "profile_report.finding_candidates"},
		{"candidate id", ProfileCodeReviewer, cand(func(c *ProfileCandidate) { c.CandidateID = "F-1" }), "profile_report.finding_candidates[0].candidate_id"},
		{"duplicate candidate", ProfileCodeReviewer, func(r *ProfileReport) { r.FindingCandidates = append(r.FindingCandidates, r.FindingCandidates[0]) }, "profile_report.finding_candidates[1].candidate_id"},
		{"title", ProfileCodeReviewer, cand(func(c *ProfileCandidate) { c.Title = strings.Repeat("t", 257) }), "profile_report.finding_candidates[0].title"},
		{"description", ProfileCodeReviewer, cand(func(c *ProfileCandidate) { c.Description = "" }), "profile_report.finding_candidates[0].description"},
		{"confidence", ProfileCodeReviewer, cand(func(c *ProfileCandidate) { c.Confidence = "certain" }), "profile_report.finding_candidates[0].confidence"},
		{"verification gap", ProfileCodeReviewer, cand(func(c *ProfileCandidate) { c.VerificationGap = "" }), "profile_report.finding_candidates[0].verification_gap"},
		{"no refs", ProfileCodeReviewer, cand(func(c *ProfileCandidate) { c.EvidenceRefs = nil }), "profile_report.finding_candidates[0].evidence_refs"},
		{"ref outside packet", ProfileCodeReviewer, cand(func(c *ProfileCandidate) { c.EvidenceRefs = []string{"E1", "E7"} }), "profile_report.finding_candidates[0].evidence_refs[1]"},
		{"affected area", ProfileCodeReviewer, cand(func(c *ProfileCandidate) { c.AffectedArea = ptr(strings.Repeat("a", 257)) }), "profile_report.finding_candidates[0].affected_area"},
		{"impact", ProfileCodeReviewer, cand(func(c *ProfileCandidate) { c.Impact = ptr(strings.Repeat("a", 2001)) }), "profile_report.finding_candidates[0].impact"},
		{"failure condition", ProfileCodeReviewer, cand(func(c *ProfileCandidate) { c.FailureCondition = ptr("") }), "profile_report.finding_candidates[0].failure_condition"},
		{"flip condition", ProfileCodeReviewer, cand(func(c *ProfileCandidate) { c.FlipCondition = ptr("") }), "profile_report.finding_candidates[0].flip_condition"},
		{"location path", ProfileCodeReviewer, cand(func(c *ProfileCandidate) { c.SourceLocations[0].Path = "" }), "profile_report.finding_candidates[0].source_locations[0].path"},
		{"location start", ProfileCodeReviewer, cand(func(c *ProfileCandidate) { c.SourceLocations[0].StartLine = 0 }), "profile_report.finding_candidates[0].source_locations[0].start_line"},
		{"location end", ProfileCodeReviewer, cand(func(c *ProfileCandidate) { c.SourceLocations[0].EndLine = ptr(9) }), "profile_report.finding_candidates[0].source_locations[0].end_line"},
		{"too many locations", ProfileCodeReviewer, cand(func(c *ProfileCandidate) { c.SourceLocations = make([]SourceLocation, 21) }), "profile_report.finding_candidates[0].source_locations"},
		{"gap text", ProfileCodeReviewer, func(r *ProfileReport) { r.CoverageGaps[0].Text = "" }, "profile_report.coverage_gaps[0].text"},
		{"gap ref", ProfileCodeReviewer, func(r *ProfileReport) { r.CoverageGaps[0].EvidenceRefs = []string{"nope!"} }, "profile_report.coverage_gaps[0].evidence_refs[0]"},
		{"unverified ref", ProfileCodeReviewer, func(r *ProfileReport) { r.Unverified = []RefNote{{Text: "x", EvidenceRefs: []string{"E8"}}} }, "profile_report.unverified[0].evidence_refs[0]"},
		{"rules hash without rules", ProfileCodeReviewer, func(r *ProfileReport) { r.ReviewRulesSHA256 = ptr(shaA) }, "profile_report.review_rules_sha256"},
		{"cs source packet", ProfileCodeReviewer, cs(func(c *ContextSelection) { c.SourcePacketSHA256 = shaA }), "profile_report.context_selection.source_packet_sha256"},
		{"cs selected packet", ProfileCodeReviewer, cs(func(c *ContextSelection) { c.SelectedPacketSHA256 = "x" }), "profile_report.context_selection.selected_packet_sha256"},
		{"cs unknown ref", ProfileCodeReviewer, cs(func(c *ContextSelection) { c.IncludedRefs = []string{"E5"} }), "profile_report.context_selection.included_refs[0]"},
		{"cs overlap", ProfileCodeReviewer, cs(func(c *ContextSelection) { c.BudgetOmittedRefs = []string{"E1"} }), "profile_report.context_selection.budget_omitted_refs[0]"},
		{"cs max bytes", ProfileCodeReviewer, cs(func(c *ContextSelection) { c.MaxBytes = 2_000_001 }), "profile_report.context_selection.max_bytes"},
		{"cs selected over max", ProfileCodeReviewer, cs(func(c *ContextSelection) { c.SelectedBytes = 101 }), "profile_report.context_selection.selected_bytes"},
		{"cs negative selected", ProfileCodeReviewer, cs(func(c *ContextSelection) { c.SelectedBytes = -1 }), "profile_report.context_selection.selected_bytes"},
		{"em bad time", ProfileCodeReviewer, em(func(m *ExecutionMetrics) { m.StartedAt = "yesterday" }), "profile_report.execution_metrics.started_at"},
		{"em reversed", ProfileCodeReviewer, em(func(m *ExecutionMetrics) { m.CompletedAt = "2026-10-14T08:00:00Z" }), "profile_report.execution_metrics.completed_at"},
		{"em attempt count", ProfileCodeReviewer, em(func(m *ExecutionMetrics) { m.AttemptCount = ptr(3) }), "profile_report.execution_metrics.attempt_count"},
		{"em attempt count range", ProfileCodeReviewer, em(func(m *ExecutionMetrics) { m.Attempts = nil; m.AttemptCount = ptr(5) }), "profile_report.execution_metrics.attempt_count"},
		{"em numbering", ProfileCodeReviewer, em(func(m *ExecutionMetrics) { m.Attempts[1].Attempt = 3 }), "profile_report.execution_metrics.attempts[1].attempt"},
		{"em other profile", ProfileCodeReviewer, em(func(m *ExecutionMetrics) { m.Attempts[0].Profile = ProfileCodeExplorer }), "profile_report.execution_metrics.attempts[0].profile"},
		{"em last not completed", ProfileCodeReviewer, em(func(m *ExecutionMetrics) { m.Attempts[1].Outcome = AttemptFailed }), "profile_report.execution_metrics.attempts[1].outcome"},
		{"em bad outcome", ProfileCodeReviewer, em(func(m *ExecutionMetrics) { m.Attempts[0].Outcome = "oops" }), "profile_report.execution_metrics.attempts[0].outcome"},
		{"em attempt reversed", ProfileCodeReviewer, em(func(m *ExecutionMetrics) { m.Attempts[0].CompletedAt = "2026-10-14T08:00:00Z" }), "profile_report.execution_metrics.attempts[0].completed_at"},
		{"em negative seconds", ProfileCodeReviewer, em(func(m *ExecutionMetrics) { m.Attempts[1].QueueSeconds = -1 }), "profile_report.execution_metrics.attempts[1].queue_seconds"},
		{"em negative model seconds", ProfileCodeReviewer, em(func(m *ExecutionMetrics) { m.Attempts[1].ModelSeconds = ptr(-0.5) }), "profile_report.execution_metrics.attempts[1].model_seconds"},
		{"em negative tokens", ProfileCodeReviewer, em(func(m *ExecutionMetrics) { m.InputTokens = ptr(int64(-1)) }), "profile_report.execution_metrics.input_tokens"},
		{"em attempt tokens", ProfileCodeReviewer, em(func(m *ExecutionMetrics) { m.Attempts[0].CachedInputTokens = ptr(int64(-1)) }), "profile_report.execution_metrics.attempts[0].cached_input_tokens"},
		{"em too many attempts", ProfileCodeReviewer, em(func(m *ExecutionMetrics) { m.Attempts = make([]ExecutionAttempt, 5) }), "profile_report.execution_metrics.attempts"},
	}
	o, _ := newTestOrch(t, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := boundAtPrimary(t, o, tt.profile)
			r := reportFor(tt.profile, nil)
			tt.mod(r)
			_, err := o.Advance(ctx, AdvanceInput{RunID: s.RunID, CompletedStep: StepPrimaryReview, Status: OutcomeCompleted,
				CompletedProfile: ptr(tt.profile), ProfileReport: r, RiskSignals: &RiskSignals{}})
			wantErr(t, err, CodeInvalidProfileReport, tt.field)
			_, _ = o.Delete(ctx, DeleteInput{RunID: s.RunID})
		})
	}
	// The valid variants of the helpers are accepted and normalized.
	s := boundAtPrimary(t, o, ProfileCodeReviewer)
	r := reportFor(ProfileCodeReviewer, nil)
	cs(func(*ContextSelection) {})(r)
	em(func(*ExecutionMetrics) {})(r)
	s = mustAdvance(t, o, AdvanceInput{RunID: s.RunID, CompletedStep: StepPrimaryReview, Status: OutcomeCompleted,
		CompletedProfile: ptr(ProfileCodeReviewer), ProfileReport: r, RiskSignals: &RiskSignals{}})
	got := s.ProfileReports[0]
	if got.ContextSelection.SourcePacketSHA256 != shaB || *got.ExecutionMetrics.AttemptCount != 2 {
		t.Fatalf("normalization: %+v %+v", got.ContextSelection, got.ExecutionMetrics)
	}
	raw, _ := json.Marshal(got)
	for _, k := range []string{`"affected_area":null`, `"unverified":[]`, `"review_rules_sha256":null`, `"source_locations":[{"path":"src/cart.tsx","start_line":10,"end_line":12}]`} {
		if !strings.Contains(string(raw), k) {
			t.Errorf("stored report lacks %s: %s", k, raw)
		}
	}
}

func TestUnboundReportsCheckPatternOnly(t *testing.T) {
	o, _ := newTestOrch(t, nil)
	s := mustStart(t, o, StartInput{TaskType: TaskOther})
	s = mustAdvance(t, o, AdvanceInput{RunID: s.RunID, CompletedStep: StepTriage, Status: OutcomeCompleted, SelectedProfile: ptr(ProfileCodeReviewer)})
	r := reportFor(ProfileCodeReviewer, nil)
	r.FindingCandidates[0].EvidenceRefs = []string{"ANY-ref.1"}
	mustAdvance(t, o, AdvanceInput{RunID: s.RunID, CompletedStep: StepPrimaryReview, Status: OutcomeCompleted,
		CompletedProfile: ptr(ProfileCodeReviewer), ProfileReport: r, RiskSignals: &RiskSignals{EvidenceRefs: []string{"X1"}}})
}

func TestRiskSignalsValidation(t *testing.T) {
	tests := []struct {
		name  string
		rs    RiskSignals
		field string
	}{
		{"rationale required", RiskSignals{HighBlastRadius: true}, "risk_signals.rationale"},
		{"blank rationale", RiskSignals{NonReproducible: true, Rationale: ptr("  ")}, "risk_signals.rationale"},
		{"long rationale", RiskSignals{Rationale: ptr(strings.Repeat("r", 2001))}, "risk_signals.rationale"},
		{"ref outside packet", RiskSignals{EvidenceRefs: []string{"E1", "Q"}}, "risk_signals.evidence_refs[1]"},
		{"too many refs", RiskSignals{EvidenceRefs: slices.Repeat([]string{"E1"}, 33)}, "risk_signals.evidence_refs"},
	}
	o, _ := newTestOrch(t, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := boundAtPrimary(t, o, ProfileCodeReviewer)
			_, err := o.Advance(ctx, AdvanceInput{RunID: s.RunID, CompletedStep: StepPrimaryReview, Status: OutcomeCompleted,
				CompletedProfile: ptr(ProfileCodeReviewer), ProfileReport: reportFor(ProfileCodeReviewer, nil), RiskSignals: &tt.rs})
			wantErr(t, err, CodeInvalidRiskSignals, tt.field)
			_, _ = o.Delete(ctx, DeleteInput{RunID: s.RunID})
		})
	}
}
