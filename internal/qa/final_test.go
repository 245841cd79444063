package qa

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// atSynthesis drives a bound security-bundle session (explorer, security,
// silent failure: two profiles with one candidate each) to synthesis.
func atSynthesis(t *testing.T, o *Orchestrator, rc *ReviewContextInput) Session {
	t.Helper()
	s := mustStart(t, o, StartInput{TaskType: TaskOther, ReviewContext: rc})
	s = mustAdvance(t, o, AdvanceInput{RunID: s.RunID, CompletedStep: StepTriage, Status: OutcomeCompleted, SelectedBundle: ptr(BundleSecurity)})
	return runPrimary(t, o, s, RiskSignals{})
}

func TestFinalReportValidation(t *testing.T) {
	tests := []struct {
		name  string
		mod   func(*FinalReviewReport, Session)
		field string
	}{
		{"empty summary", func(r *FinalReviewReport, _ Session) { r.Summary = "" }, "final_review_report.summary"},
		{"long summary", func(r *FinalReviewReport, _ Session) { r.Summary = strings.Repeat("s", 5001) }, "final_review_report.summary"},
		{"missing reviewed profile", func(r *FinalReviewReport, _ Session) { r.ProfilesReviewed = r.ProfilesReviewed[:2] }, "final_review_report.profiles_reviewed"},
		{"extra reviewed profile", func(r *FinalReviewReport, _ Session) { r.ProfilesReviewed[0] = ProfileRubyReviewer }, "final_review_report.profiles_reviewed[0]"},
		{"duplicate reviewed profile", func(r *FinalReviewReport, _ Session) { r.ProfilesReviewed[1] = r.ProfilesReviewed[0] }, "final_review_report.profiles_reviewed[1]"},
		{"final id", func(r *FinalReviewReport, _ Session) { r.FindingCandidates[0].CandidateID = "X-01" }, "final_review_report.finding_candidates[0].candidate_id"},
		{"duplicate final id", func(r *FinalReviewReport, _ Session) { r.FindingCandidates[1].CandidateID = "F-01" }, "final_review_report.finding_candidates[1].candidate_id"},
		{"severity", func(r *FinalReviewReport, _ Session) { r.FindingCandidates[0].Severity = ptr(Severity("critical")) }, "final_review_report.finding_candidates[0].severity"},
		{"final ref outside packet", func(r *FinalReviewReport, _ Session) { r.FindingCandidates[0].EvidenceRefs = []string{"E42"} }, "final_review_report.finding_candidates[0].evidence_refs[0]"},
		{"no source profiles", func(r *FinalReviewReport, _ Session) { r.FindingCandidates[0].SourceProfiles = nil }, "final_review_report.finding_candidates[0].source_profiles"},
		{"source profile not completed", func(r *FinalReviewReport, _ Session) {
			r.FindingCandidates[0].SourceProfiles = append(r.FindingCandidates[0].SourceProfiles, ProfileMobileReviewer)
		}, "final_review_report.finding_candidates[0].source_profiles[1]"},
		{"no source candidates", func(r *FinalReviewReport, _ Session) { r.FindingCandidates[0].SourceCandidates = nil }, "final_review_report.finding_candidates[0].source_candidates"},
		{"unknown source candidate", func(r *FinalReviewReport, _ Session) {
			r.FindingCandidates[0].SourceCandidates[0].CandidateID = "F-99"
		}, "final_review_report.finding_candidates[0].source_candidates[0]"},
		{"source candidate profile not in source_profiles", func(r *FinalReviewReport, _ Session) {
			r.FindingCandidates[0].SourceProfiles = []Profile{ProfileCodeExplorer}
		}, "final_review_report.finding_candidates[0].source_candidates[0].profile"},
		{"missing decision", func(r *FinalReviewReport, _ Session) {
			r.CandidateDecisions = r.CandidateDecisions[:1]
			r.FindingCandidates = r.FindingCandidates[:1]
		}, "final_review_report.candidate_decisions"},
		{"duplicate decision", func(r *FinalReviewReport, _ Session) {
			r.CandidateDecisions = append(r.CandidateDecisions, r.CandidateDecisions[0])
		}, "final_review_report.candidate_decisions[2].source"},
		{"decision for unknown candidate", func(r *FinalReviewReport, _ Session) {
			r.CandidateDecisions[0].Source = CandidateRef{ProfileCodeExplorer, "F-01"}
		}, "final_review_report.candidate_decisions[0].source"},
		{"bad verdict", func(r *FinalReviewReport, _ Session) { r.CandidateDecisions[0].Verdict = "maybe" }, "final_review_report.candidate_decisions[0].verdict"},
		{"confirmed without final id", func(r *FinalReviewReport, _ Session) { r.CandidateDecisions[0].FinalFindingID = nil }, "final_review_report.candidate_decisions[0].final_finding_id"},
		{"confirmed to unknown final", func(r *FinalReviewReport, _ Session) { r.CandidateDecisions[0].FinalFindingID = ptr("F-77") }, "final_review_report.candidate_decisions[0].final_finding_id"},
		{"confirmed to finding that does not list it", func(r *FinalReviewReport, _ Session) {
			r.CandidateDecisions[0].FinalFindingID = ptr("F-02")
		}, "final_review_report.candidate_decisions[0].final_finding_id"},
		{"rejected with final id", func(r *FinalReviewReport, _ Session) {
			r.CandidateDecisions[1].Verdict = VerdictRejected
		}, "final_review_report.candidate_decisions[1].final_finding_id"},
		{"finding without confirmed decision", func(r *FinalReviewReport, _ Session) {
			r.CandidateDecisions[1].Verdict = VerdictDuplicate
		}, "final_review_report.finding_candidates[1]"},
		{"source candidate decided elsewhere", func(r *FinalReviewReport, _ Session) {
			r.CandidateDecisions[1].Verdict = VerdictUnverified
			r.CandidateDecisions[1].FinalFindingID = nil
		}, "final_review_report.finding_candidates[1]"},
		{"empty rationale", func(r *FinalReviewReport, _ Session) { r.CandidateDecisions[0].Rationale = "" }, "final_review_report.candidate_decisions[0].rationale"},
		{"decision without refs", func(r *FinalReviewReport, _ Session) { r.CandidateDecisions[0].EvidenceRefs = nil }, "final_review_report.candidate_decisions[0].evidence_refs"},
		{"decision ref outside packet", func(r *FinalReviewReport, _ Session) { r.CandidateDecisions[0].EvidenceRefs = []string{"Z"} }, "final_review_report.candidate_decisions[0].evidence_refs[0]"},
		{"refutation status", func(r *FinalReviewReport, s Session) {
			r.CandidateDecisions[0].Refutation = refutationFor(s, 1, func(f *Refutation) { f.Status = "gone" })
		}, "final_review_report.candidate_decisions[0].refutation.status"},
		{"refuted but confirmed", func(r *FinalReviewReport, s Session) {
			r.CandidateDecisions[0].Refutation = refutationFor(s, 1, func(f *Refutation) { f.Status = RefutationRefuted })
		}, "final_review_report.candidate_decisions[0].refutation.status"},
		{"candidate hash mismatch", func(r *FinalReviewReport, s Session) {
			r.CandidateDecisions[0].Refutation = refutationFor(s, 2, nil) // hash of the other candidate
		}, "final_review_report.candidate_decisions[0].refutation.candidate_sha256"},
		{"context hash mismatch", func(r *FinalReviewReport, s Session) {
			r.CandidateDecisions[0].Refutation = refutationFor(s, 1, func(f *Refutation) { f.ContextSHA256 = shaA })
		}, "final_review_report.candidate_decisions[0].refutation.context_sha256"},
		{"refutation rationale", func(r *FinalReviewReport, s Session) {
			r.CandidateDecisions[0].Refutation = refutationFor(s, 1, func(f *Refutation) { f.Rationale = "" })
		}, "final_review_report.candidate_decisions[0].refutation.rationale"},
		{"refutation refs", func(r *FinalReviewReport, s Session) {
			r.CandidateDecisions[0].Refutation = refutationFor(s, 1, func(f *Refutation) { f.EvidenceRefs = []string{"E0"} })
		}, "final_review_report.candidate_decisions[0].refutation.evidence_refs[0]"},
		{"gap text", func(r *FinalReviewReport, _ Session) { r.CoverageGaps = []RefNote{{Text: ""}} }, "final_review_report.coverage_gaps[0].text"},
		{"unverified ref", func(r *FinalReviewReport, _ Session) {
			r.Unverified = []RefNote{{Text: "x", EvidenceRefs: []string{"bad ref"}}}
		}, "final_review_report.unverified[0].evidence_refs[0]"},
		{"rules hash without rules", func(r *FinalReviewReport, _ Session) { r.ReviewRulesSHA256 = ptr(shaA) }, "final_review_report.review_rules_sha256"},
	}
	o, _ := newTestOrch(t, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := atSynthesis(t, o, boundContext())
			fr := finalReportFor(s)
			tt.mod(fr, s)
			_, err := o.Advance(ctx, AdvanceInput{RunID: s.RunID, CompletedStep: StepSynthesis, Status: OutcomeCompleted, FinalReviewReport: fr})
			wantErr(t, err, CodeInvalidFinalReport, tt.field)
			// finish applies the same rules
			mustAdvance(t, o, AdvanceInput{RunID: s.RunID, CompletedStep: StepSynthesis, Status: OutcomeCompleted})
			_, err = o.Finish(ctx, FinishInput{RunID: s.RunID, Outcome: OutcomeCompleted, FinalReviewReport: fr})
			wantErr(t, err, CodeInvalidFinalReport, tt.field)
			_, _ = o.Delete(ctx, DeleteInput{RunID: s.RunID})
		})
	}
}

// refutationFor builds a refutation of the i-th stored candidate (1-based,
// in report order) computed exactly as a host would from get output.
func refutationFor(s Session, i int, mod func(*Refutation)) *Refutation {
	var cands []ProfileCandidate
	for _, rep := range s.ProfileReports {
		cands = append(cands, rep.FindingCandidates...)
	}
	h, _ := CandidateSHA256(cands[i-1])
	r := &Refutation{Status: RefutationNotRefuted, CandidateSHA256: strings.ToUpper(h), ContextSHA256: s.ReviewContext.EvidencePacketSHA256,
		Rationale: "tried to refute from the handler", EvidenceRefs: []string{"E1"}}
	if mod != nil {
		mod(r)
	}
	return r
}

func TestFinalReportDecisionsAndRefutations(t *testing.T) {
	o, _ := newTestOrch(t, nil)
	s := atSynthesis(t, o, boundContext())
	// Hosts hash the candidate from the JSON they received; prove the
	// server's hash equals a hash over that JSON.
	g, _ := o.Get(ctx, GetInput{RunID: s.RunID})
	raw, _ := json.Marshal(g)
	var generic struct {
		ProfileReports []struct {
			FindingCandidates []json.RawMessage `json:"finding_candidates"`
		} `json:"profile_reports"`
	}
	_ = json.Unmarshal(raw, &generic)
	hostHash, _ := jcsHashRaw(generic.ProfileReports[1].FindingCandidates[0])
	serverHash, _ := CandidateSHA256(s.ProfileReports[1].FindingCandidates[0])
	if hostHash != serverHash {
		t.Fatalf("host hash %s != server hash %s", hostHash, serverHash)
	}

	fr := finalReportFor(s)
	// Merge the second candidate into F-01 as a duplicate and reject nothing.
	fr.FindingCandidates[0].SourceProfiles = []Profile{ProfileSecurityReviewer, ProfileSilentFailureHunter}
	fr.FindingCandidates[0].SourceCandidates = append(fr.FindingCandidates[0].SourceCandidates, CandidateRef{ProfileSilentFailureHunter, "F-01"})
	fr.FindingCandidates = fr.FindingCandidates[:1]
	fr.CandidateDecisions[1].Verdict = VerdictDuplicate
	fr.CandidateDecisions[1].FinalFindingID = ptr("F-01")
	fr.CandidateDecisions[0].Refutation = refutationFor(s, 1, nil)
	fr.CandidateDecisions[1].Refutation = refutationFor(s, 2, func(r *Refutation) { r.Status = RefutationUnverified })
	s = mustAdvance(t, o, AdvanceInput{RunID: s.RunID, CompletedStep: StepSynthesis, Status: OutcomeCompleted, FinalReviewReport: fr})
	if s.FinalReviewReport == nil || s.FinalReviewReport.CandidateDecisions[0].Refutation.CandidateSHA256 != serverHashOf(s, 1) {
		t.Fatal("refutation hashes must be stored lower-case")
	}

	// A rejected verdict may carry a refuted refutation.
	s2 := atSynthesis(t, o, boundContext())
	fr2 := finalReportFor(s2)
	fr2.FindingCandidates = fr2.FindingCandidates[1:]
	fr2.CandidateDecisions[0].Verdict = VerdictRejected
	fr2.CandidateDecisions[0].FinalFindingID = nil
	fr2.CandidateDecisions[0].Refutation = refutationFor(s2, 1, func(r *Refutation) { r.Status = RefutationRefuted })
	fr2.FindingCandidates[0].CandidateID = "F-02"
	mustAdvance(t, o, AdvanceInput{RunID: s2.RunID, CompletedStep: StepSynthesis, Status: OutcomeCompleted, FinalReviewReport: fr2})
}

func serverHashOf(s Session, i int) string {
	var cands []ProfileCandidate
	for _, rep := range s.ProfileReports {
		cands = append(cands, rep.FindingCandidates...)
	}
	h, _ := CandidateSHA256(cands[i-1])
	return h
}

func TestContextSelectionPacketAcceptedForRefutation(t *testing.T) {
	o, _ := newTestOrch(t, nil)
	s := boundAtPrimary(t, o, ProfileCodeReviewer)
	r := reportFor(ProfileCodeReviewer, nil)
	r.ContextSelection = &ContextSelection{SourcePacketSHA256: shaB, SelectedPacketSHA256: shaC, IncludedRefs: []string{"E1"}, MaxBytes: 10, SelectedBytes: 0}
	s = mustAdvance(t, o, AdvanceInput{RunID: s.RunID, CompletedStep: StepPrimaryReview, Status: OutcomeCompleted,
		CompletedProfile: ptr(ProfileCodeReviewer), ProfileReport: r, RiskSignals: &RiskSignals{}})
	fr := finalReportFor(s)
	fr.CandidateDecisions[0].Refutation = refutationFor(s, 1, func(f *Refutation) { f.ContextSHA256 = strings.ToUpper(shaC) })
	mustAdvance(t, o, AdvanceInput{RunID: s.RunID, CompletedStep: StepSynthesis, Status: OutcomeCompleted, FinalReviewReport: fr})
}

func TestExport(t *testing.T) {
	o, _ := newTestOrch(t, nil)
	rc := boundContext()
	rc.EvidenceRegistry = fullRegistry(nil)
	rc.EvidenceRegistry[2].Kind = EvidenceDiff
	s := atSynthesis(t, o, rc)
	fr := finalReportFor(s)
	fr.FindingCandidates[1].SourceLocations = nil // unlocated: counted, not exported
	fr.FindingCandidates[0].Severity = nil
	fr.FindingCandidates[0].Confidence = ConfidenceMedium
	fr.FindingCandidates[0].AffectedArea = ptr("checkout")
	s = mustAdvance(t, o, AdvanceInput{RunID: s.RunID, CompletedStep: StepSynthesis, Status: OutcomeCompleted, FinalReviewReport: fr})
	_, err := o.Export(ctx, ExportInput{RunID: s.RunID, BlockOn: ptr("severe")})
	wantErr(t, err, CodeInvalidArgument, "block_on")
	exp, err := o.Export(ctx, ExportInput{RunID: s.RunID, BlockOn: ptr("MEDIUM")})
	if err != nil {
		t.Fatal(err)
	}
	if exp.Version != "v3" || exp.ReviewID != s.RunID || exp.BaseSHA != sha40 || exp.HeadSHA != sha40 ||
		exp.Repo != "github.com/acme/shop" || exp.UnlocatedFindings != 1 || len(exp.Findings) != 1 {
		t.Fatalf("bad export header: %+v", exp)
	}
	if len(exp.ChangeSummary) != 2 || exp.ChangeSummary[0] != "Cart handling changed" || exp.Prompt.SchemaVersion != "findings.v3" {
		t.Fatalf("bad summary/prompt: %+v", exp)
	}
	f := exp.Findings[0]
	if f.Category != "security" || f.Severity != "medium" || f.Confidence != 0.6 || f.Path != "src/cart.tsx" ||
		f.StartLine != 10 || f.EndLine != 12 || f.ChangedSpan.EndLine != 12 || !f.Blocking ||
		f.Impact.Summary != "checkout crashes" || f.Impact.Scope != "checkout" || f.Evidence.Source != "changed_line" ||
		!strings.Contains(f.Evidence.ReasoningBasis, "E1") {
		t.Fatalf("bad finding: %+v", f)
	}
	exp2, _ := o.Export(ctx, ExportInput{RunID: s.RunID, Repo: ptr("local")})
	if exp2.Repo != "local" || exp2.BlockOn != "high" || exp2.Findings[0].Blocking {
		t.Fatalf("repo/block_on defaults: %+v", exp2)
	}
	if exportCategory([]Profile{ProfileSilentFailureHunter}) != "reliability" || exportCategory([]Profile{ProfilePRTestAnalyzer}) != "testing" ||
		exportCategory([]Profile{ProfileCodeReviewer}) != "correctness" {
		t.Fatal("category mapping")
	}
	u := mustStart(t, o, StartInput{TaskType: TaskOther})
	_, err = o.Export(ctx, ExportInput{RunID: u.RunID})
	wantCode(t, err, CodeExportNotBound)
	b := mustStart(t, o, StartInput{TaskType: TaskOther, ReviewContext: boundContext()})
	_, err = o.Export(ctx, ExportInput{RunID: b.RunID})
	wantCode(t, err, CodeExportNoReport)
}

// A session stopped before any profile completed may still record a final
// report: profiles_reviewed is then exactly the empty set.
func TestFinalReportAfterEarlyStopWithNoProfiles(t *testing.T) {
	o, _ := newTestOrch(t, nil)
	ctx := context.Background()
	s := mustStart(t, o, StartInput{TaskType: TaskOrdinaryReview, ReviewContext: boundContext()})
	s = mustAdvance(t, o, AdvanceInput{RunID: s.RunID, CompletedStep: StepTriage, Status: OutcomePartial})
	s, err := o.Finish(ctx, FinishInput{RunID: s.RunID, Outcome: OutcomePartial,
		FinalReviewReport: &FinalReviewReport{Summary: "stopped before review: the diff could not be read", ProfilesReviewed: []Profile{}}})
	if err != nil {
		t.Fatalf("finish: %v", err)
	}
	if s.FinalReviewReport == nil || s.Status != StatusPartial {
		t.Errorf("status %s, report %v", s.Status, s.FinalReviewReport)
	}
}
