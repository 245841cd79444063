package mcpserver

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/qa"
)

// reviewFlow drives one review-bound session through every step over MCP
// and returns the finished session. The security bundle with a high-risk,
// uncertain signal set escalates to deep review.
type reviewFlow struct {
	e *env
	s qa.Session
}

func (f *reviewFlow) advance(in qa.AdvanceInput) {
	f.e.t.Helper()
	in.RunID = f.s.RunID
	in.ExpectedRevision = ptr(f.s.Revision)
	prev := f.s.Revision
	f.e.ok(qa.ToolAdvance, in, &f.s)
	if f.s.Revision != prev+1 {
		f.e.t.Fatalf("revision %d after %d", f.s.Revision, prev)
	}
}

func startBound(e *env) qa.Session {
	e.t.Helper()
	var s qa.Session
	e.ok(qa.ToolStart, qa.StartInput{TaskType: qa.TaskOrdinaryReview, ReviewContext: reviewContext()}, &s)
	return s
}

// finalReport confirms security F-01 and silent F-01 as located findings,
// silent F-02 as an unlocated one, and rejects silent F-03 with a
// refutation bound to the stored candidate's hash.
func finalReport(t *testing.T, s qa.Session) *qa.FinalReviewReport {
	t.Helper()
	var silent qa.ProfileReport
	for _, r := range s.ProfileReports {
		if r.Profile == qa.ProfileSilentFailureHunter {
			silent = r
		}
	}
	candHash, err := qa.CandidateSHA256(silent.FindingCandidates[2])
	if err != nil {
		t.Fatal(err)
	}
	final := func(id string, from qa.CandidateRef, sev *qa.Severity, loc bool) qa.FinalCandidate {
		c := candidate(id, "final "+id, loc)
		return qa.FinalCandidate{CandidateID: id, Title: c.Title, Description: c.Description, Confidence: c.Confidence,
			VerificationGap: c.VerificationGap, EvidenceRefs: c.EvidenceRefs, Impact: c.Impact,
			FailureCondition: c.FailureCondition, SourceLocations: c.SourceLocations, Severity: sev,
			SourceProfiles: []qa.Profile{from.Profile}, SourceCandidates: []qa.CandidateRef{from}}
	}
	sec := qa.CandidateRef{Profile: qa.ProfileSecurityReviewer, CandidateID: "F-01"}
	sil1 := qa.CandidateRef{Profile: qa.ProfileSilentFailureHunter, CandidateID: "F-01"}
	sil2 := qa.CandidateRef{Profile: qa.ProfileSilentFailureHunter, CandidateID: "F-02"}
	sil3 := qa.CandidateRef{Profile: qa.ProfileSilentFailureHunter, CandidateID: "F-03"}
	decide := func(src qa.CandidateRef, v qa.Verdict, final *string) qa.CandidateDecision {
		return qa.CandidateDecision{Source: src, Verdict: v, FinalFindingID: final,
			Rationale: "read the handler and the test", EvidenceRefs: []string{"E1"}}
	}
	rejected := decide(sil3, qa.VerdictRejected, nil)
	rejected.Refutation = &qa.Refutation{Status: qa.RefutationRefuted, CandidateSHA256: candHash,
		ContextSHA256: packetSHA, Rationale: "the guard on line 3 returns early", EvidenceRefs: []string{"E2"}}
	return &qa.FinalReviewReport{
		Summary:          "- Login now rate-limited\n- Cart total handles empty carts\n- Login now rate-limited",
		ProfilesReviewed: slices.Clone(s.CompletedProfiles),
		FindingCandidates: []qa.FinalCandidate{
			final("F-01", sec, ptr(qa.SeverityHigh), true),
			final("F-02", sil1, nil, true),
			final("F-03", sil2, ptr(qa.SeverityLow), false),
		},
		CandidateDecisions: []qa.CandidateDecision{
			decide(sec, qa.VerdictConfirmed, ptr("F-01")),
			decide(sil1, qa.VerdictConfirmed, ptr("F-02")),
			decide(sil2, qa.VerdictConfirmed, ptr("F-03")),
			rejected,
		},
		ReviewRulesSHA256: s.ReviewContext.ReviewRulesSHA256,
	}
}

// runReviewFlow runs start → triage → three profiles (risk signals on the
// last) → deep review → synthesis with final report, leaving the session
// awaiting the host outcome.
func runReviewFlow(t *testing.T, e *env) *reviewFlow {
	t.Helper()
	f := &reviewFlow{e: e, s: startBound(e)}
	rc := f.s.ReviewContext
	if f.s.Revision != 0 || rc == nil || rc.ReviewRulesSHA256 == nil || rc.BaseSHA != baseSHA {
		t.Fatalf("start: revision %d, review_context %+v", f.s.Revision, rc)
	}
	for _, want := range []qa.Profile{qa.ProfileTypeScriptReviewer, qa.ProfileReactReviewer, qa.ProfileSecurityReviewer} {
		if !slices.Contains(f.s.RecommendedProfiles, want) {
			t.Errorf("recommended_profiles %v lacks %s", f.s.RecommendedProfiles, want)
		}
	}
	hash := rc.ReviewRulesSHA256
	f.advance(qa.AdvanceInput{CompletedStep: qa.StepTriage, Status: qa.OutcomeCompleted,
		SelectedBundle: ptr(qa.BundleSecurity), RequestID: ptr("triage-1")})
	if !slices.Equal(f.s.ReviewProfiles, []qa.Profile{qa.ProfileCodeExplorer, qa.ProfileSecurityReviewer, qa.ProfileSilentFailureHunter}) {
		t.Fatalf("review_profiles = %v", f.s.ReviewProfiles)
	}
	f.advance(qa.AdvanceInput{CompletedStep: qa.StepPrimaryReview, Status: qa.OutcomeCompleted,
		CompletedProfile: ptr(qa.ProfileCodeExplorer), ProfileReport: profileReport(qa.ProfileCodeExplorer, hash)})
	f.advance(qa.AdvanceInput{CompletedStep: qa.StepPrimaryReview, Status: qa.OutcomeCompleted,
		CompletedProfile: ptr(qa.ProfileSecurityReviewer),
		ProfileReport:    profileReport(qa.ProfileSecurityReviewer, hash, candidate("F-01", "login skips the rate limiter", true))})
	f.advance(qa.AdvanceInput{CompletedStep: qa.StepPrimaryReview, Status: qa.OutcomeCompleted,
		CompletedProfile: ptr(qa.ProfileSilentFailureHunter),
		ProfileReport: profileReport(qa.ProfileSilentFailureHunter, hash,
			candidate("F-01", "empty cart total swallowed", true),
			candidate("F-02", "retry loop hides the error", false),
			candidate("F-03", "fallback price used silently", true)),
		RiskSignals: &qa.RiskSignals{HighRiskDomain: true, EvidenceUncertain: true, EvidenceRefs: []string{"E1"},
			Rationale: ptr("auth change; the limiter's enforcement point is outside the packet")}})
	if f.s.CurrentStep != qa.StepDeepReview || f.s.DeepReasonCode == nil || !f.s.DeepAssessment.ShouldEscalate {
		t.Fatalf("no deep review: step %s, assessment %+v", f.s.CurrentStep, f.s.DeepAssessment)
	}
	if f.s.RiskSignals == nil || !f.s.RiskSignals.HighRiskDomain || len(f.s.ProfileReports) != 3 {
		t.Fatalf("risk signals %+v, %d reports", f.s.RiskSignals, len(f.s.ProfileReports))
	}
	f.advance(qa.AdvanceInput{CompletedStep: qa.StepDeepReview, Status: qa.OutcomeCompleted})
	if f.s.CurrentStep != qa.StepSynthesis {
		t.Fatalf("step %s after deep review", f.s.CurrentStep)
	}
	f.advance(qa.AdvanceInput{CompletedStep: qa.StepSynthesis, Status: qa.OutcomeCompleted,
		FinalReviewReport: finalReport(t, f.s)})
	if f.s.Status != qa.StatusAwaitingHostOutcome || f.s.FinalReviewReport == nil || f.s.ModelPolicy != nil {
		t.Fatalf("after synthesis: status %s, report %v", f.s.Status, f.s.FinalReviewReport != nil)
	}
	return f
}

func TestReviewBoundFlow(t *testing.T) {
	e := newEnv(t, envOptions{})
	f := runReviewFlow(t, e)
	runID := f.s.RunID
	var done qa.Session
	e.ok(qa.ToolFinish, qa.FinishInput{RunID: runID, Outcome: qa.OutcomeCompleted, ExpectedRevision: ptr(f.s.Revision),
		RequestID: ptr("finish-1")}, &done)
	if done.Status != qa.StatusCompleted || done.Revision != 7 || done.NextAction != qa.NextRecordedDone {
		t.Fatalf("finish: status %s revision %d", done.Status, done.Revision)
	}
	if n := len(done.TransitionReceipts); n != 2 || done.TransitionReceipts[1].AppliedRevision != 7 {
		t.Fatalf("receipts = %+v", done.TransitionReceipts)
	}

	raw := e.ok(qa.ToolExport, qa.ExportInput{RunID: runID}, nil)
	b, info, err := findings.Parse(raw)
	if err != nil {
		t.Fatalf("findings.Parse rejects the export: %v\n%s", err, raw)
	}
	if info.Effective != findings.V3 || b.ReviewID != runID || b.HeadSHA != headSHA || b.BaseSHA != baseSHA {
		t.Fatalf("bundle header: %+v %+v", info, b)
	}
	if ps := findings.Validate(b); len(ps) != 0 {
		t.Fatalf("findings.Validate: %v", ps)
	}
	if len(b.Findings) != 2 {
		t.Fatalf("%d findings, want 2 (one confirmed finding has no location)", len(b.Findings))
	}
	var out struct {
		UnlocatedFindings   int             `json:"unlocated_findings"`
		UnlocatedFindingIDs []string        `json:"unlocated_finding_ids"`
		FindingSources      []FindingSource `json:"finding_sources"`
		Gate                struct {
			BlockOn string `json:"block_on"`
		} `json:"gate"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	if out.UnlocatedFindings != 1 || !slices.Equal(out.UnlocatedFindingIDs, []string{"F-03"}) || out.Gate.BlockOn != "high" {
		t.Fatalf("unlocated %d %v, gate %q", out.UnlocatedFindings, out.UnlocatedFindingIDs, out.Gate.BlockOn)
	}
	bySource := map[string]findings.Finding{}
	for i, src := range out.FindingSources {
		if src.FindingID != b.Findings[i].ID {
			t.Fatalf("finding_sources[%d] names %s, findings[%d] is %s", i, src.FindingID, i, b.Findings[i].ID)
		}
		bySource[src.FinalFindingID] = b.Findings[i]
	}
	sec, sil := bySource["F-01"], bySource["F-02"]
	if sec.Category != "security" || sec.Severity != findings.High || !sec.Blocking || sec.Confidence != 0.9 {
		t.Errorf("security finding = %+v", sec)
	}
	if sil.Category != "reliability" || sil.Severity != findings.Medium || sil.Blocking {
		t.Errorf("silent-failure finding = %+v", sil)
	}
	if sec.ChangedSpan == nil || sec.ChangedSpan.StartLine != 10 || sec.EndLine != 12 || sec.Evidence.Source != "changed_line" {
		t.Errorf("location/evidence = %+v %+v", sec.ChangedSpan, sec.Evidence)
	}
	if len(b.ChangeSummary) != 2 || !strings.HasPrefix(b.Prompt.Purpose, "QA orchestration "+runID) {
		t.Errorf("change_summary %q, prompt %+v", b.ChangeSummary, b.Prompt)
	}
	// A stricter threshold recomputes blocking.
	e.ok(qa.ToolExport, qa.ExportInput{RunID: runID, BlockOn: ptr("medium")}, &struct{}{})
	rawMed := e.ok(qa.ToolExport, qa.ExportInput{RunID: runID, BlockOn: ptr("medium"), Repo: ptr("acme/shop")}, nil)
	bm, _, err := findings.Parse(rawMed)
	if err != nil || bm.Repo != "acme/shop" {
		t.Fatalf("parse: %v, repo %q", err, bm.Repo)
	}
	for _, fd := range bm.Findings {
		if !fd.Blocking {
			t.Errorf("block_on medium: %s not blocking", fd.ID)
		}
		if fd.ID == b.Findings[0].ID || fd.ID == b.Findings[1].ID {
			t.Errorf("repo did not enter the finding id")
		}
	}
	// The exported findings are what a later write of the same bundle keeps.
	again := *b
	if err := findings.Normalize(&again, findings.Options{Repo: b.Repo, Policy: findings.Policy{BlockOn: findings.High}}); err != nil {
		t.Fatal(err)
	}
	for i := range again.Findings {
		if again.Findings[i].ID != b.Findings[i].ID || again.Findings[i].StableID != b.Findings[i].StableID {
			t.Errorf("renormalizing changed finding %d's ids", i)
		}
	}
}

// TestExportBeforeFinish: the final report is recorded at synthesis, so
// export already works while the session awaits its outcome.
func TestExportBeforeFinish(t *testing.T) {
	e := newEnv(t, envOptions{})
	f := runReviewFlow(t, e)
	raw := e.ok(qa.ToolExport, qa.ExportInput{RunID: f.s.RunID}, nil)
	if _, _, err := findings.Parse(raw); err != nil {
		t.Fatal(err)
	}
}

func TestRevisionConflict(t *testing.T) {
	e := newEnv(t, envOptions{})
	s := startBound(e)
	txt := e.fail(qa.ToolAdvance, qa.AdvanceInput{RunID: s.RunID, CompletedStep: qa.StepTriage, Status: qa.OutcomeCompleted,
		SelectedProfile: ptr(qa.ProfileCodeReviewer), ExpectedRevision: ptr(int64(3))}, string(qa.CodeRevisionConflict))
	if !strings.Contains(txt, "current revision is 0") {
		t.Errorf("conflict text %q does not name the current revision", txt)
	}
	var got qa.Session
	e.ok(qa.ToolGet, qa.GetInput{RunID: s.RunID}, &got)
	if got.Revision != 0 || got.CurrentStep != qa.StepTriage {
		t.Fatalf("a conflicting write changed the session: %+v", got)
	}
	// Two hosts racing on revision 0: exactly one wins.
	in := qa.AdvanceInput{RunID: s.RunID, CompletedStep: qa.StepTriage, Status: qa.OutcomeCompleted,
		SelectedProfile: ptr(qa.ProfileCodeReviewer), ExpectedRevision: ptr(int64(0))}
	e.ok(qa.ToolAdvance, in, &got)
	in.SelectedProfile = ptr(qa.ProfileSecurityReviewer)
	e.fail(qa.ToolAdvance, in, "revision conflict: expected_revision: current revision is 1")
	e.fail(qa.ToolFinish, qa.FinishInput{RunID: s.RunID, Outcome: qa.OutcomeBlocked, ExpectedRevision: ptr(int64(0))},
		string(qa.CodeRevisionConflict))
	e.fail(qa.ToolDelete, qa.DeleteInput{RunID: s.RunID, ExpectedRevision: ptr(int64(0))}, string(qa.CodeRevisionConflict))
	e.ok(qa.ToolDelete, qa.DeleteInput{RunID: s.RunID, ExpectedRevision: ptr(int64(1))}, nil)
}

// TestReceiptReplay simulates a lost response: the host retries the same
// conditional write with the same request_id after it was applied, and
// gets the current session instead of a revision conflict.
func TestReceiptReplay(t *testing.T) {
	e := newEnv(t, envOptions{})
	s := startBound(e)
	in := qa.AdvanceInput{RunID: s.RunID, CompletedStep: qa.StepTriage, Status: qa.OutcomeCompleted,
		SelectedBundle: ptr(qa.BundleOrdinaryMR), ExpectedRevision: ptr(int64(0)), RequestID: ptr("host-7:triage")}
	var first, retry qa.Session
	e.ok(qa.ToolAdvance, in, &first) // the response is "lost"
	e.clock.Add(10)
	e.ok(qa.ToolAdvance, in, &retry)
	if retry.Revision != 1 || first.Revision != 1 || !jsonSame(t, mustJSON(t, first), mustJSON(t, retry)) {
		t.Fatalf("replay changed the session: first rev %d, retry rev %d", first.Revision, retry.Revision)
	}
	if len(retry.TransitionReceipts) != 1 || retry.TransitionReceipts[0].RequestID != "host-7:triage" ||
		len(retry.TransitionReceipts[0].RequestSHA256) != 64 || retry.TransitionReceipts[0].AppliedRevision != 1 {
		t.Fatalf("receipts = %+v", retry.TransitionReceipts)
	}
	// Same request_id, different arguments.
	in.SelectedBundle = ptr(qa.BundleSecurity)
	txt := e.fail(qa.ToolAdvance, in, string(qa.CodeRequestIDConflict))
	if !strings.Contains(txt, "revision 1") {
		t.Errorf("request_id conflict text = %q", txt)
	}
	// Finish replays too, after its own lost response.
	e.ok(qa.ToolAdvance, qa.AdvanceInput{RunID: s.RunID, CompletedStep: qa.StepPrimaryReview, Status: qa.OutcomePartial}, nil)
	fin := qa.FinishInput{RunID: s.RunID, Outcome: qa.OutcomePartial, ExpectedRevision: ptr(int64(2)), RequestID: ptr("fin")}
	var f1, f2 qa.Session
	e.ok(qa.ToolFinish, fin, &f1)
	e.ok(qa.ToolFinish, fin, &f2)
	if f1.Revision != 3 || f2.Revision != 3 || f2.Status != qa.StatusPartial {
		t.Fatalf("finish replay: %d %d %s", f1.Revision, f2.Revision, f2.Status)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
