package qa

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/diffpalhq/diffpal/internal/qa/store"
)

func TestAdvanceShapeErrors(t *testing.T) {
	id := "qar-" + strings.Repeat("0", 32)
	b, p := ptr(BundleSecurity), ptr(ProfileCodeReviewer)
	tests := []struct {
		name  string
		in    AdvanceInput
		code  Code
		field string
	}{
		{"bad run id", AdvanceInput{RunID: "qar-XYZ", CompletedStep: StepTriage, Status: OutcomeCompleted}, CodeInvalidArgument, "run_id"},
		{"bad step", AdvanceInput{RunID: id, CompletedStep: StepAwaitingHostOutcome, Status: OutcomeCompleted}, CodeInvalidArgument, "completed_step"},
		{"bad status", AdvanceInput{RunID: id, CompletedStep: StepTriage, Status: "done"}, CodeInvalidArgument, "status"},
		{"unknown bundle", AdvanceInput{RunID: id, CompletedStep: StepTriage, Status: OutcomeCompleted, SelectedBundle: ptr(Bundle("x"))}, CodeInvalidArgument, "selected_bundle"},
		{"bad request id", AdvanceInput{RunID: id, CompletedStep: StepTriage, Status: OutcomeCompleted, SelectedBundle: b, RequestID: ptr("-x")}, CodeInvalidArgument, "request_id"},
		{"negative expected", AdvanceInput{RunID: id, CompletedStep: StepTriage, Status: OutcomeCompleted, SelectedBundle: b, ExpectedRevision: ptr(int64(-1))}, CodeInvalidArgument, "expected_revision"},
		{"no selection", AdvanceInput{RunID: id, CompletedStep: StepTriage, Status: OutcomeCompleted}, CodeSelectionRequired, ""},
		{"both selections", AdvanceInput{RunID: id, CompletedStep: StepTriage, Status: OutcomeCompleted, SelectedBundle: b, SelectedProfile: p}, CodeSelectionRequired, ""},
		{"selection with partial", AdvanceInput{RunID: id, CompletedStep: StepTriage, Status: OutcomePartial, SelectedBundle: b}, CodeSelectionNotAllowed, ""},
		{"selection after triage", AdvanceInput{RunID: id, CompletedStep: StepSynthesis, Status: OutcomeCompleted, SelectedProfile: p}, CodeSelectionNotAllowed, ""},
		{"missing completed_profile", AdvanceInput{RunID: id, CompletedStep: StepPrimaryReview, Status: OutcomeCompleted}, CodeCompletedProfileReq, ""},
		{"completed_profile with blocked", AdvanceInput{RunID: id, CompletedStep: StepPrimaryReview, Status: OutcomeBlocked, CompletedProfile: p}, CodeCompletedProfileState, ""},
		{"completed_profile elsewhere", AdvanceInput{RunID: id, CompletedStep: StepDeepReview, Status: OutcomeCompleted, CompletedProfile: p}, CodeCompletedProfileStep, ""},
		{"signals elsewhere", AdvanceInput{RunID: id, CompletedStep: StepSynthesis, Status: OutcomeCompleted, RiskSignals: &RiskSignals{}}, CodeRiskSignalsPlacement, ""},
		{"report elsewhere", AdvanceInput{RunID: id, CompletedStep: StepSynthesis, Status: OutcomeCompleted, ProfileReport: reportFor(*p, nil)}, CodeProfileReportPlacement, ""},
		{"final report elsewhere", AdvanceInput{RunID: id, CompletedStep: StepDeepReview, Status: OutcomeCompleted, FinalReviewReport: &FinalReviewReport{}}, CodeFinalReportPlacement, ""},
		{"final report with partial", AdvanceInput{RunID: id, CompletedStep: StepSynthesis, Status: OutcomePartial, FinalReviewReport: &FinalReviewReport{}}, CodeFinalReportPlacement, ""},
	}
	o, _ := newTestOrch(t, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := o.Advance(ctx, tt.in)
			if tt.field != "" {
				wantErr(t, err, tt.code, tt.field)
			} else {
				wantCode(t, err, tt.code)
			}
		})
	}
}

func TestStateErrorsLeaveStateUnchanged(t *testing.T) {
	o, _ := newTestOrch(t, nil)
	_, err := o.Get(ctx, GetInput{RunID: "qar-" + strings.Repeat("0", 32)})
	wantCode(t, err, CodeUnknownRunID)

	s := mustStart(t, o, StartInput{TaskType: TaskOrdinaryReview})
	_, err = o.Advance(ctx, AdvanceInput{RunID: s.RunID, CompletedStep: StepSynthesis, Status: OutcomeCompleted})
	wantCode(t, err, CodeIllegalTransition)
	s = mustAdvance(t, o, AdvanceInput{RunID: s.RunID, CompletedStep: StepTriage, Status: OutcomeCompleted, SelectedBundle: ptr(BundleOrdinaryMR)})
	before, _ := json.Marshal(s)

	// Replaying triage after it succeeded is an illegal transition.
	_, err = o.Advance(ctx, AdvanceInput{RunID: s.RunID, CompletedStep: StepTriage, Status: OutcomeCompleted, SelectedBundle: ptr(BundleOrdinaryMR)})
	wantCode(t, err, CodeIllegalTransition)
	// Wrong-order profile.
	_, err = o.Advance(ctx, AdvanceInput{RunID: s.RunID, CompletedStep: StepPrimaryReview, Status: OutcomeCompleted, CompletedProfile: ptr(ProfileCodeReviewer)})
	wantCode(t, err, CodeProfileMismatch)
	// Signals on a non-final profile.
	_, err = o.Advance(ctx, AdvanceInput{RunID: s.RunID, CompletedStep: StepPrimaryReview, Status: OutcomeCompleted, CompletedProfile: ptr(ProfileCodeExplorer), RiskSignals: &RiskSignals{}})
	wantCode(t, err, CodeRiskSignalsPlacement)
	after, _ := o.Get(ctx, GetInput{RunID: s.RunID})
	if got, _ := json.Marshal(after); string(got) != string(before) {
		t.Fatalf("failed calls changed the session:\n%s\n%s", before, got)
	}
	s = mustAdvance(t, o, AdvanceInput{RunID: s.RunID, CompletedStep: StepPrimaryReview, Status: OutcomeCompleted, CompletedProfile: ptr(ProfileCodeExplorer)})
	// Replaying the previous profile is a mismatch, not a second completion.
	_, err = o.Advance(ctx, AdvanceInput{RunID: s.RunID, CompletedStep: StepPrimaryReview, Status: OutcomeCompleted, CompletedProfile: ptr(ProfileCodeExplorer)})
	wantCode(t, err, CodeProfileMismatch)
	s = mustAdvance(t, o, AdvanceInput{RunID: s.RunID, CompletedStep: StepPrimaryReview, Status: OutcomeCompleted, CompletedProfile: ptr(ProfileCodeReviewer)})
	_, err = o.Advance(ctx, AdvanceInput{RunID: s.RunID, CompletedStep: StepPrimaryReview, Status: OutcomeCompleted, CompletedProfile: ptr(ProfilePRTestAnalyzer)})
	wantCode(t, err, CodeRiskSignalsRequired)
	_, err = o.Finish(ctx, FinishInput{RunID: s.RunID, Outcome: OutcomeCompleted})
	wantCode(t, err, CodeOutcomeNotReady)
	_, err = o.Finish(ctx, FinishInput{RunID: s.RunID, Outcome: "done"})
	wantCode(t, err, CodeInvalidFinalOutcome)
}

func TestBoundSessionRequiresReports(t *testing.T) {
	o, _ := newTestOrch(t, nil)
	s := mustStart(t, o, StartInput{TaskType: TaskOther, ReviewContext: boundContext()})
	s = mustAdvance(t, o, AdvanceInput{RunID: s.RunID, CompletedStep: StepTriage, Status: OutcomeCompleted, SelectedProfile: ptr(ProfileCodeReviewer)})
	_, err := o.Advance(ctx, AdvanceInput{RunID: s.RunID, CompletedStep: StepPrimaryReview, Status: OutcomeCompleted,
		CompletedProfile: ptr(ProfileCodeReviewer), RiskSignals: &RiskSignals{}})
	wantCode(t, err, CodeProfileReportRequired)
	_, err = o.Advance(ctx, AdvanceInput{RunID: s.RunID, CompletedStep: StepPrimaryReview, Status: OutcomeCompleted,
		CompletedProfile: ptr(ProfileCodeReviewer), RiskSignals: &RiskSignals{}, ProfileReport: reportFor(ProfileSecurityReviewer, nil)})
	wantErr(t, err, CodeInvalidProfileReport, "profile_report.profile")
	s = runPrimary(t, o, s, RiskSignals{})
	s = mustAdvance(t, o, AdvanceInput{RunID: s.RunID, CompletedStep: StepSynthesis, Status: OutcomeCompleted})
	_, err = o.Finish(ctx, FinishInput{RunID: s.RunID, Outcome: OutcomeCompleted})
	wantCode(t, err, CodeFinalReportRequired)
	// partial needs no report; but completed via finish with the report works.
	f, err := o.Finish(ctx, FinishInput{RunID: s.RunID, Outcome: OutcomeCompleted, FinalReviewReport: finalReportFor(s)})
	if err != nil || f.FinalReviewReport == nil || f.Status != StatusCompleted {
		t.Fatalf("finish with report: %v", err)
	}
	// Resending the same report is harmless; a different one conflicts.
	if _, err := o.Finish(ctx, FinishInput{RunID: s.RunID, Outcome: OutcomeCompleted, FinalReviewReport: finalReportFor(s)}); err != nil {
		t.Fatal(err)
	}
	other := finalReportFor(s)
	other.Summary = "changed"
	_, err = o.Finish(ctx, FinishInput{RunID: s.RunID, Outcome: OutcomeCompleted, FinalReviewReport: other})
	wantCode(t, err, CodeFinalReportConflict)
}

func TestEarlyStopAndFinalize(t *testing.T) {
	for _, out := range []Outcome{OutcomePartial, OutcomeBlocked} {
		t.Run(string(out), func(t *testing.T) {
			o, clk := newTestOrch(t, nil)
			s := mustStart(t, o, StartInput{TaskType: TaskOther})
			s = mustAdvance(t, o, AdvanceInput{RunID: s.RunID, CompletedStep: StepTriage, Status: OutcomeCompleted, SelectedBundle: ptr(BundleSecurity)})
			clk.Add(time.Minute)
			stopped := mustAdvance(t, o, AdvanceInput{RunID: s.RunID, CompletedStep: StepPrimaryReview, Status: out})
			wantNext := map[Outcome]string{OutcomePartial: NextFinalizePartial, OutcomeBlocked: NextFinalizeBlocked}[out]
			if stopped.Status != Status(out) || stopped.CurrentStep != StepPrimaryReview || stopped.ModelPolicy != nil ||
				stopped.NextAction != wantNext || !stopped.ExpiresAt.After(s.ExpiresAt) || stopped.Revision != 2 {
				t.Fatalf("bad early stop: %+v", stopped)
			}
			if !slices.Equal(stopped.ReviewProfiles, s.ReviewProfiles) || *stopped.CurrentProfile != *s.CurrentProfile {
				t.Fatal("early stop changed the route")
			}
			_, err := o.Advance(ctx, AdvanceInput{RunID: s.RunID, CompletedStep: StepPrimaryReview, Status: OutcomeCompleted, CompletedProfile: ptr(ProfileCodeExplorer)})
			wantCode(t, err, CodeTerminalSession)
			_, err = o.Finish(ctx, FinishInput{RunID: s.RunID, Outcome: OutcomeCompleted})
			wantCode(t, err, CodeConflictingOutcome)
			clk.Add(time.Minute)
			f, err := o.Finish(ctx, FinishInput{RunID: s.RunID, Outcome: out})
			if err != nil {
				t.Fatal(err)
			}
			if f.Status != Status(out) || f.NextAction != recordedAction(out) || !f.ExpiresAt.After(stopped.ExpiresAt) || f.Revision != 3 {
				t.Fatalf("bad finalize: %+v", f)
			}
			clk.Add(time.Minute)
			again, err := o.Finish(ctx, FinishInput{RunID: s.RunID, Outcome: out})
			if err != nil || !jsonEqual(t, again, f) {
				t.Fatalf("repeat finish not identical (TTL must not refresh): %v", err)
			}
			_, err = o.Finish(ctx, FinishInput{RunID: s.RunID, Outcome: OutcomeCompleted})
			wantCode(t, err, CodeConflictingOutcome)
		})
	}
}

func TestDeepReviewEscalation(t *testing.T) {
	o, _ := newTestOrch(t, nil)
	s := mustStart(t, o, StartInput{TaskType: TaskOther, ReviewContext: boundContext()})
	s = mustAdvance(t, o, AdvanceInput{RunID: s.RunID, CompletedStep: StepTriage, Status: OutcomeCompleted, SelectedBundle: ptr(BundleRequirements)})
	_, err := o.Advance(ctx, AdvanceInput{RunID: s.RunID, CompletedStep: StepPrimaryReview, Status: OutcomeCompleted,
		CompletedProfile: ptr(ProfileCodeExplorer), ProfileReport: reportFor(ProfileCodeExplorer, nil)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = o.Advance(ctx, AdvanceInput{RunID: s.RunID, CompletedStep: StepPrimaryReview, Status: OutcomeCompleted,
		CompletedProfile: ptr(ProfileCodeReviewer), ProfileReport: reportFor(ProfileCodeReviewer, nil),
		RiskSignals: &RiskSignals{HighRiskDomain: true, EvidenceUncertain: true}})
	wantErr(t, err, CodeInvalidRiskSignals, "risk_signals.rationale")
	s, err = o.Advance(ctx, AdvanceInput{RunID: s.RunID, CompletedStep: StepPrimaryReview, Status: OutcomeCompleted,
		CompletedProfile: ptr(ProfileCodeReviewer), ProfileReport: reportFor(ProfileCodeReviewer, nil),
		RiskSignals: &RiskSignals{HighRiskDomain: true, EvidenceUncertain: true, EvidenceRefs: []string{"E2"}, Rationale: ptr("login path, token source missing")}})
	if err != nil {
		t.Fatal(err)
	}
	if s.CurrentStep != StepDeepReview || *s.DeepReasonCode != ReasonHighRiskDomain || s.NextAction != NextDeepReview ||
		s.ModelPolicy == nil || s.ModelPolicy.Model != "gpt-6-sol" || s.ModelPolicy.Reasoning != ReasoningHigh || s.RiskSignals == nil {
		t.Fatalf("bad escalation: %+v", s)
	}
	s = mustAdvance(t, o, AdvanceInput{RunID: s.RunID, CompletedStep: StepDeepReview, Status: OutcomeCompleted})
	if s.CurrentStep != StepSynthesis || s.DeepAssessment == nil || s.DeepReasonCode == nil {
		t.Fatalf("deep fields must be kept: %+v", s)
	}
}

func TestAssessWorkedCases(t *testing.T) {
	tests := []struct {
		in      RiskSignals
		rules   []DeepRule
		reasons []ReasonCode
		count   int
	}{
		{RiskSignals{HighRiskDomain: true, EvidenceUncertain: true}, []DeepRule{RuleHighRiskWithUncertainty}, []ReasonCode{ReasonHighRiskDomain, ReasonEvidenceGap}, 0},
		{RiskSignals{CrossSystemScope: true, NonReproducible: true}, []DeepRule{RuleMultipleComplexity}, []ReasonCode{ReasonCrossRepository, ReasonNonReproducible}, 2},
		{RiskSignals{EvidenceConflict: true, HighBlastRadius: true}, []DeepRule{RuleCriticalEvidenceConflict}, []ReasonCode{ReasonEvidenceConflict, ReasonHighBlastRadius}, 1},
		{RiskSignals{CrossSystemScope: true}, []DeepRule{}, []ReasonCode{}, 1},
		{RiskSignals{}, []DeepRule{}, []ReasonCode{}, 0},
		{RiskSignals{HighRiskDomain: true, EvidenceUncertain: true, CrossSystemScope: true, HighBlastRadius: true, EvidenceConflict: true},
			[]DeepRule{RuleHighRiskWithUncertainty, RuleMultipleComplexity, RuleCriticalEvidenceConflict},
			[]ReasonCode{ReasonHighRiskDomain, ReasonEvidenceGap, ReasonCrossRepository, ReasonHighBlastRadius, ReasonEvidenceConflict}, 2},
	}
	for i, tt := range tests {
		a := Assess(tt.in)
		if !slices.Equal(a.TriggeredRules, tt.rules) || !slices.Equal(a.ReasonCodes, tt.reasons) ||
			a.ComplexitySignalCount != tt.count || a.ShouldEscalate != (len(tt.rules) > 0) {
			t.Errorf("case %d: got %+v", i, a)
		}
	}
}

func TestRevisionConflict(t *testing.T) {
	o, _ := newTestOrch(t, nil)
	s := mustStart(t, o, StartInput{TaskType: TaskOther})
	_, err := o.Advance(ctx, AdvanceInput{RunID: s.RunID, CompletedStep: StepTriage, Status: OutcomeCompleted,
		SelectedProfile: ptr(ProfileCodeReviewer), ExpectedRevision: ptr(int64(3))})
	wantErr(t, err, CodeRevisionConflict, "expected_revision")
	if !strings.Contains(err.Error(), "current revision is 0") {
		t.Fatalf("message must name the current revision: %q", err)
	}
	s = mustAdvance(t, o, AdvanceInput{RunID: s.RunID, CompletedStep: StepTriage, Status: OutcomeCompleted,
		SelectedProfile: ptr(ProfileCodeReviewer), ExpectedRevision: ptr(int64(0))})
	if s.Revision != 1 {
		t.Fatalf("revision = %d", s.Revision)
	}
	if g, _ := o.Get(ctx, GetInput{RunID: s.RunID}); g.Revision != 1 {
		t.Fatal("reads must not change the revision")
	}
	_, err = o.Delete(ctx, DeleteInput{RunID: s.RunID, ExpectedRevision: ptr(int64(0))})
	wantCode(t, err, CodeRevisionConflict)
	_, err = o.Finish(ctx, FinishInput{RunID: s.RunID, Outcome: OutcomePartial, ExpectedRevision: ptr(int64(0))})
	wantCode(t, err, CodeRevisionConflict)
	if _, err := o.Delete(ctx, DeleteInput{RunID: s.RunID, ExpectedRevision: ptr(int64(1))}); err != nil {
		t.Fatal(err)
	}
	_, err = o.Get(ctx, GetInput{RunID: s.RunID})
	wantCode(t, err, CodeUnknownRunID)
}

func TestReceiptsReplay(t *testing.T) {
	o, _ := newTestOrch(t, nil)
	s := mustStart(t, o, StartInput{TaskType: TaskOther})
	triage := AdvanceInput{RunID: s.RunID, CompletedStep: StepTriage, Status: OutcomeCompleted,
		SelectedBundle: ptr(BundleRequirements), ExpectedRevision: ptr(int64(0)), RequestID: ptr("req-1")}
	first := mustAdvance(t, o, triage)
	if len(first.TransitionReceipts) != 1 || first.TransitionReceipts[0].AppliedRevision != 1 ||
		first.TransitionReceipts[0].RequestID != "req-1" || len(first.TransitionReceipts[0].RequestSHA256) != 64 {
		t.Fatalf("receipt = %+v", first.TransitionReceipts)
	}
	// A retried conditional write after a lost response: same id and args,
	// stale expected_revision — the replay wins before the revision check.
	again := mustAdvance(t, o, triage)
	if !jsonEqual(t, again, first) {
		t.Fatal("replay changed the session")
	}
	changed := triage
	changed.SelectedBundle = ptr(BundleSecurity)
	_, err := o.Advance(ctx, changed)
	wantErr(t, err, CodeRequestIDConflict, "request_id")
	// The hash ignores request_id itself but covers every other argument.
	h1, _ := requestHash(ToolAdvance, AdvanceInput{RunID: s.RunID, CompletedStep: StepTriage, Status: OutcomeCompleted})
	h2, _ := requestHash(ToolAdvance, AdvanceInput{RunID: s.RunID, CompletedStep: StepTriage, Status: OutcomeCompleted, RequestID: nil})
	h3, _ := requestHash(ToolFinish, AdvanceInput{RunID: s.RunID, CompletedStep: StepTriage, Status: OutcomeCompleted})
	if h1 != h2 || h1 == h3 {
		t.Fatal("request hash must depend on tool and arguments only")
	}
	// Receipts on finish; a replayed finish returns the same session.
	s = mustAdvance(t, o, AdvanceInput{RunID: s.RunID, CompletedStep: StepPrimaryReview, Status: OutcomeBlocked, RequestID: ptr("req-2")})
	fin := FinishInput{RunID: s.RunID, Outcome: OutcomeBlocked, RequestID: ptr("req-3")}
	f1, err := o.Finish(ctx, fin)
	if err != nil {
		t.Fatal(err)
	}
	f2, err := o.Finish(ctx, fin)
	if err != nil || !jsonEqual(t, f1, f2) || len(f2.TransitionReceipts) != 3 {
		t.Fatalf("finish replay: %v %+v", err, f2.TransitionReceipts)
	}
	// No raw payloads in receipts.
	raw, _ := json.Marshal(f2.TransitionReceipts)
	if strings.Contains(string(raw), "requirements") {
		t.Fatal("receipts must not store arguments")
	}
}

func TestReceiptsBounded(t *testing.T) {
	s := Session{}
	o, _ := newTestOrch(t, nil)
	for i := range MaxReceipts + 5 {
		o.commit(&s, time.Now(), ptr(fmt.Sprintf("r-%d", i)), strings.Repeat("a", 64))
	}
	if len(s.TransitionReceipts) != MaxReceipts || s.TransitionReceipts[0].RequestID != "r-5" ||
		s.TransitionReceipts[MaxReceipts-1].AppliedRevision != int64(MaxReceipts+5) {
		t.Fatalf("receipts not bounded newest-last: %d, first %+v", len(s.TransitionReceipts), s.TransitionReceipts[0])
	}
}

func TestCapacityParallelStarts(t *testing.T) {
	o, _ := newTestOrch(t, func(c *Config) { c.MaxSessions = 1; c.Random = nil })
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = o.Start(ctx, StartInput{TaskType: TaskOther})
		}()
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
		} else {
			wantCode(t, err, CodeSessionLimit)
		}
	}
	if ok != 1 {
		t.Fatalf("%d starts succeeded, want exactly 1", ok)
	}
}

func TestExpiryAndCapacity(t *testing.T) {
	o, clk := newTestOrch(t, func(c *Config) { c.MaxSessions = 1; c.TTL = 10 * time.Minute })
	s := mustStart(t, o, StartInput{TaskType: TaskOther})
	_, err := o.Start(ctx, StartInput{TaskType: TaskOther})
	wantCode(t, err, CodeSessionLimit)
	clk.Add(10 * time.Minute) // exactly expires_at: expired
	if l, _ := o.List(ctx, ListInput{}); len(l.Sessions) != 0 {
		t.Fatal("list must omit a session at expires_at == now")
	}
	_, err = o.Get(ctx, GetInput{RunID: s.RunID})
	wantCode(t, err, CodeExpiredSession)
	_, err = o.Advance(ctx, AdvanceInput{RunID: s.RunID, CompletedStep: StepTriage, Status: OutcomeCompleted, SelectedProfile: ptr(ProfileCodeReviewer)})
	wantCode(t, err, CodeExpiredSession)
	_, err = o.Finish(ctx, FinishInput{RunID: s.RunID, Outcome: OutcomeCompleted})
	wantCode(t, err, CodeExpiredSession)
	s2 := mustStart(t, o, StartInput{TaskType: TaskOther}) // purge frees the slot
	_, err = o.Get(ctx, GetInput{RunID: s.RunID})
	wantCode(t, err, CodeUnknownRunID)
	if _, err := o.Delete(ctx, DeleteInput{RunID: s.RunID}); err != nil {
		t.Fatal("delete of a purged id must succeed")
	}
	// Get does not extend the TTL.
	clk.Add(5 * time.Minute)
	if g, _ := o.Get(ctx, GetInput{RunID: s2.RunID}); !g.ExpiresAt.Equal(s2.ExpiresAt) {
		t.Fatal("get refreshed the TTL")
	}
}

func TestTerminalSessionsAreEvicted(t *testing.T) {
	o, clk := newTestOrch(t, func(c *Config) { c.MaxSessions = 2 })
	a := mustStart(t, o, StartInput{TaskType: TaskOther})
	clk.Add(time.Second)
	b := mustStart(t, o, StartInput{TaskType: TaskOther})
	mustAdvance(t, o, AdvanceInput{RunID: b.RunID, CompletedStep: StepTriage, Status: OutcomeBlocked})
	clk.Add(time.Second)
	mustAdvance(t, o, AdvanceInput{RunID: a.RunID, CompletedStep: StepTriage, Status: OutcomePartial})
	// Both are terminal (early stops); the older expiry (b, stopped first) goes first.
	clk.Add(time.Second)
	c := mustStart(t, o, StartInput{TaskType: TaskOther})
	if _, err := o.Get(ctx, GetInput{RunID: b.RunID}); !errors.Is(err, CodeUnknownRunID) {
		t.Fatalf("oldest terminal session not evicted: %v", err)
	}
	if _, err := o.Get(ctx, GetInput{RunID: a.RunID}); err != nil {
		t.Fatalf("newer terminal session evicted: %v", err)
	}
	mustStart(t, o, StartInput{TaskType: TaskOther}) // evicts a
	_, err := o.Start(ctx, StartInput{TaskType: TaskOther})
	wantCode(t, err, CodeSessionLimit) // two active sessions now
	if _, err := o.Get(ctx, GetInput{RunID: c.RunID}); err != nil {
		t.Fatal(err)
	}
}

func TestListOrderAndShape(t *testing.T) {
	o, clk := newTestOrch(t, nil)
	var ids []string
	for range 3 {
		ids = append(ids, mustStart(t, o, StartInput{TaskType: TaskOther}).RunID)
	}
	clk.Add(time.Second)
	late := mustStart(t, o, StartInput{TaskType: TaskQAPlanning})
	l, err := o.List(ctx, ListInput{})
	if err != nil {
		t.Fatal(err)
	}
	if !l.ReadOnly || !l.HostOwnsDecisions || len(l.Sessions) != 4 || l.Sessions[0].RunID != late.RunID {
		t.Fatalf("bad list: %+v", l)
	}
	slices.Sort(ids)
	slices.Reverse(ids)
	for i, id := range ids {
		if l.Sessions[i+1].RunID != id {
			t.Fatalf("ties must sort by run_id descending: %+v", l.Sessions)
		}
	}
	var m map[string]any
	raw, _ := json.Marshal(l.Sessions[0])
	_ = json.Unmarshal(raw, &m)
	if len(m) != 8 || m["selected_bundle"] != nil {
		t.Fatalf("summary keys: %v", m)
	}
}

func TestDeleteSemantics(t *testing.T) {
	o, _ := newTestOrch(t, func(c *Config) { c.MaxSessions = 1 })
	s := mustStart(t, o, StartInput{TaskType: TaskOther})
	for range 2 {
		out, err := o.Delete(ctx, DeleteInput{RunID: s.RunID})
		if err != nil || !out.Deleted || out.RunID != s.RunID {
			t.Fatalf("delete: %+v %v", out, err)
		}
	}
	out, err := o.Delete(ctx, DeleteInput{RunID: "qar-" + strings.Repeat("0", 32)})
	if err != nil || !out.Deleted {
		t.Fatal("never-existing ids delete successfully")
	}
	_, err = o.Delete(ctx, DeleteInput{RunID: "nope"})
	wantErr(t, err, CodeInvalidArgument, "run_id")
	mustStart(t, o, StartInput{TaskType: TaskOther}) // capacity was freed
	_, err = o.Advance(ctx, AdvanceInput{RunID: s.RunID, CompletedStep: StepTriage, Status: OutcomePartial})
	wantCode(t, err, CodeUnknownRunID)
}

func TestSessionJSONHasEveryField(t *testing.T) {
	o, _ := newTestOrch(t, nil)
	s := mustStart(t, o, StartInput{TaskType: TaskOther})
	raw, _ := json.Marshal(s)
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	want := []string{"run_id", "status", "revision", "read_only", "task_type", "expires_at", "next_action",
		"current_step", "model_policy", "risk_signals", "review_context", "allowed_bundles", "current_profile",
		"deep_assessment", "profile_reports", "review_profiles", "selected_bundle", "allowed_profiles",
		"deep_reason_code", "selected_profile", "completed_profiles", "final_review_report", "host_owns_decisions",
		"recommended_bundles", "transition_receipts", "recommended_profiles"}
	if len(m) != len(want) {
		t.Fatalf("session has %d keys, want %d: %s", len(m), len(want), raw)
	}
	for _, k := range want {
		if _, ok := m[k]; !ok {
			t.Errorf("missing %s", k)
		}
	}
	for _, k := range []string{"review_context", "risk_signals", "final_review_report", "selected_bundle", "deep_assessment"} {
		if string(m[k]) != "null" {
			t.Errorf("%s = %s, want null", k, m[k])
		}
	}
	for _, k := range []string{"profile_reports", "transition_receipts", "recommended_profiles", "completed_profiles", "review_profiles"} {
		if string(m[k]) != "[]" {
			t.Errorf("%s = %s, want []", k, m[k])
		}
	}
	if string(m["model_policy"]) != `{"mode":"configured","provider":"openai","model":"gpt-6-luna","reasoning":"max","reasoning_capabilities_verified":true}` {
		t.Errorf("triage policy = %s", m["model_policy"])
	}
	if !strings.HasSuffix(string(m["expires_at"]), `Z"`) {
		t.Errorf("expires_at must be UTC: %s", m["expires_at"])
	}
	for _, bad := range []string{`"evidence"`, `"prompt"`, `"output"`, `"outcome_recorded"`} {
		if strings.Contains(string(raw), bad) {
			t.Errorf("session must not carry %s", bad)
		}
	}
}

func TestReturnedSessionsAreCopies(t *testing.T) {
	o, _ := newTestOrch(t, nil)
	s := mustStart(t, o, StartInput{TaskType: TaskOther, ReviewContext: boundContext()})
	s.NextAction = "tampered"
	s.AllowedProfiles[0] = "x"
	s.ReviewContext.EvidenceRefs[0] = "Z"
	g, _ := o.Get(ctx, GetInput{RunID: s.RunID})
	if g.NextAction != NextTriage || g.AllowedProfiles[0] != ProfilePRTestAnalyzer || g.ReviewContext.EvidenceRefs[0] != "E1" {
		t.Fatal("mutating a returned session changed stored state")
	}
}

func TestHostDefaultModelPolicy(t *testing.T) {
	o, _ := newTestOrch(t, func(c *Config) { c.HostDefaultModel = true })
	s := mustStart(t, o, StartInput{TaskType: TaskOther})
	raw, _ := json.Marshal(s.ModelPolicy)
	if string(raw) != `{"mode":"host_default"}` || o.ModelPolicy().Mode != PolicyModeHostDefault {
		t.Fatalf("host_default policy = %s", raw)
	}
}

func TestModelSelectionValidation(t *testing.T) {
	def := DefaultModelSelection()
	if err := def.Validate(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		mod   func(*ModelSelection)
		field string
	}{
		{"cross provider", func(m *ModelSelection) { m.TriageModel = "claude-opus-5" }, "triage_model"},
		{"bad id", func(m *ModelSelection) { m.DeepModel = "../model" }, "deep_model"},
		{"astra none", func(m *ModelSelection) { m.TriageModel, m.TriageReasoning = "gpt-6-astra", ReasoningNone }, "triage_reasoning"},
		{"gpt-5.4 max", func(m *ModelSelection) { m.PrimaryModel, m.PrimaryReasoning = "gpt-5.4", ReasoningMax }, "primary_reasoning"},
		{"gpt-4.1 high", func(m *ModelSelection) { m.SynthesisModel, m.SynthesisReasoning = "gpt-4.1", ReasoningHigh }, "synthesis_reasoning"},
		{"haiku high", func(m *ModelSelection) {
			*m = ModelSelection{Provider: ProviderAnthropic, TriageModel: "claude-haiku-4-5-20251001", PrimaryModel: "claude-opus-5",
				DeepModel: "claude-opus-5", SynthesisModel: "claude-opus-5", TriageReasoning: ReasoningHigh,
				PrimaryReasoning: ReasoningHigh, DeepReasoning: ReasoningHigh, SynthesisReasoning: ReasoningHigh}
		}, "triage_reasoning"},
	}
	for _, tt := range tests {
		m := def
		tt.mod(&m)
		wantErr(t, m.Validate(), CodeInvalidModelPolicy, tt.field)
	}
	custom := ModelSelection{Provider: ProviderAnthropic, TriageModel: "claude-triage", PrimaryModel: "claude-opus-5",
		DeepModel: "claude-opus-5", SynthesisModel: "claude-opus-5", TriageReasoning: ReasoningNone,
		PrimaryReasoning: ReasoningLow, DeepReasoning: ReasoningHigh, SynthesisReasoning: ReasoningMedium}
	if err := custom.Validate(); err != nil {
		t.Fatal(err)
	}
	if p := custom.policyFor(StepTriage, false); p.ReasoningCapabilitiesVerified {
		t.Fatal("custom anthropic id must be unverified")
	}
	raw, _ := json.Marshal(custom)
	if _, err := ParseModelSelection(raw); err != nil {
		t.Fatal(err)
	}
	_, err := ParseModelSelection([]byte(`{"provider":"openai","extra":1}`))
	wantCode(t, err, CodeInvalidModelPolicy)
	_, err = New(Config{ModelSelection: &ModelSelection{}})
	wantCode(t, err, CodeInvalidModelPolicy)
	_, err = New(Config{TTL: -1})
	wantCode(t, err, CodeLimitsNotPositive)
}

// failingStore fails writes on demand to prove nothing is acknowledged
// unless persisted.
type failingStore struct {
	store.Store
	failPut bool
}

func (f *failingStore) Put(ctx context.Context, r store.Record, exp int64) error {
	if f.failPut {
		return errors.New("disk full")
	}
	return f.Store.Put(ctx, r, exp)
}

func TestStoreFailureIsNotAcknowledged(t *testing.T) {
	fs := &failingStore{Store: store.NewMemory()}
	o, _ := newTestOrch(t, func(c *Config) { c.Store = fs })
	s := mustStart(t, o, StartInput{TaskType: TaskOther})
	fs.failPut = true
	_, err := o.Advance(ctx, AdvanceInput{RunID: s.RunID, CompletedStep: StepTriage, Status: OutcomeCompleted, SelectedProfile: ptr(ProfileCodeReviewer)})
	wantCode(t, err, CodeStoreWrite)
	_, err = o.Start(ctx, StartInput{TaskType: TaskOther})
	wantCode(t, err, CodeStoreWrite)
	fs.failPut = false
	g, _ := o.Get(ctx, GetInput{RunID: s.RunID})
	if g.Revision != 0 || g.CurrentStep != StepTriage {
		t.Fatal("a failed write changed the session")
	}
}

// racingStore lets another replica (a second Orchestrator on the same
// underlying store) apply a transition between our read and our write.
type racingStore struct {
	store.Store
	once  sync.Once
	other func()
}

func (r *racingStore) Put(ctx context.Context, rec store.Record, exp int64) error {
	if exp != store.Absent {
		r.once.Do(r.other)
	}
	return r.Store.Put(ctx, rec, exp)
}

func TestConcurrentReplicaWrites(t *testing.T) {
	for _, conditional := range []bool{false, true} {
		t.Run(fmt.Sprintf("expected_revision=%v", conditional), func(t *testing.T) {
			shared := store.NewMemory()
			rs := &racingStore{Store: shared}
			o, clk := newTestOrch(t, func(c *Config) { c.Store = rs })
			replica, err := New(Config{Store: shared, Clock: clk.Now})
			if err != nil {
				t.Fatal(err)
			}
			s := mustStart(t, o, StartInput{TaskType: TaskOther})
			rs.other = func() {
				if _, err := replica.Advance(ctx, AdvanceInput{RunID: s.RunID, CompletedStep: StepTriage,
					Status: OutcomeCompleted, SelectedBundle: ptr(BundleSecurity)}); err != nil {
					t.Errorf("replica: %v", err)
				}
			}
			in := AdvanceInput{RunID: s.RunID, CompletedStep: StepTriage, Status: OutcomeCompleted,
				SelectedProfile: ptr(ProfileCodeReviewer)}
			if conditional {
				in.ExpectedRevision = ptr(int64(0))
				_, err = o.Advance(ctx, in)
				wantCode(t, err, CodeRevisionConflict)
			} else {
				// Re-run against the replica's state: triage is already done.
				_, err = o.Advance(ctx, in)
				wantCode(t, err, CodeIllegalTransition)
			}
			g, _ := o.Get(ctx, GetInput{RunID: s.RunID})
			if g.Revision != 1 || *g.SelectedBundle != BundleSecurity {
				t.Fatalf("exactly one writer must win: %+v", g)
			}
		})
	}
}

// Store failures reach hosts as the fixed phrase only: no paths or driver
// messages, while errors.Is still sees the cause.
func TestStoreErrorsDoNotLeak(t *testing.T) {
	secret := errors.New("open /srv/private/qa.db: disk I/O error")
	e := storeError(CodeStoreWrite, secret)
	if e.Error() != string(CodeStoreWrite) {
		t.Errorf("text = %q", e.Error())
	}
	if !errors.Is(e, secret) || !errors.Is(e, CodeStoreWrite) {
		t.Error("cause and code must both match errors.Is")
	}
}

func TestValidateRecord(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	o, err := New(Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	s, err := o.Start(ctx, StartInput{TaskType: TaskOrdinaryReview})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := st.Get(ctx, s.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if err := ValidateRecord(rec); err != nil {
		t.Fatalf("valid row rejected: %v", err)
	}
	for name, mutate := range map[string]func(*store.Record){
		"revision":  func(r *store.Record) { r.Revision++ },
		"status":    func(r *store.Record) { r.Status = "completed" },
		"finalized": func(r *store.Record) { r.Finalized = !r.Finalized },
		"expiry":    func(r *store.Record) { r.ExpiresAt = r.ExpiresAt.Add(time.Second) },
		"payload":   func(r *store.Record) { r.Payload = []byte("{}") },
		"run id":    func(r *store.Record) { r.RunID = "qar-00000000000000000000000000000000" },
	} {
		bad := rec.Clone()
		mutate(&bad)
		if err := ValidateRecord(bad); !errors.Is(err, CodeInvalidSessionData) {
			t.Errorf("%s: got %v", name, err)
		}
	}
}
