package qa

import (
	"encoding/json"
	"slices"
	"testing"
)

func checkCommon(t *testing.T, s Session) {
	t.Helper()
	if !s.ReadOnly || !s.HostOwnsDecisions {
		t.Fatal("ownership literals must be true")
	}
	if !slices.Equal(s.AllowedBundles, Bundles()) || !slices.Equal(s.AllowedProfiles, Profiles()) {
		t.Fatal("allowed lists must be complete and in enum order")
	}
}

func TestEveryBundleFlow(t *testing.T) {
	catalog := GetCatalog()
	if len(catalog.Bundles) != 9 || len(catalog.Profiles) != 10 {
		t.Fatalf("catalog has %d bundles and %d profiles", len(catalog.Bundles), len(catalog.Profiles))
	}
	for _, cb := range catalog.Bundles {
		for _, bound := range []bool{false, true} {
			t.Run(string(cb.Bundle)+map[bool]string{false: "/unbound", true: "/bound"}[bound], func(t *testing.T) {
				o, _ := newTestOrch(t, nil)
				in := StartInput{TaskType: TaskOther}
				if bound {
					in.ReviewContext = boundContext()
				}
				s := mustStart(t, o, in)
				checkCommon(t, s)
				if s.Revision != 0 || s.Status != StatusActive || s.CurrentStep != StepTriage || s.NextAction != NextTriage {
					t.Fatalf("bad start state: %+v", s)
				}
				s = mustAdvance(t, o, AdvanceInput{RunID: s.RunID, CompletedStep: StepTriage, Status: OutcomeCompleted,
					SelectedBundle: ptr(cb.Bundle)})
				if !slices.Equal(s.ReviewProfiles, cb.Profiles) {
					t.Fatalf("review_profiles %v != catalog %v", s.ReviewProfiles, cb.Profiles)
				}
				if *s.SelectedBundle != cb.Bundle || *s.SelectedProfile != cb.Profiles[0] || s.NextAction != NextPrimaryReview {
					t.Fatalf("bad triage result: %+v", s)
				}
				s = runPrimary(t, o, s, RiskSignals{})
				if s.CurrentStep != StepSynthesis || s.DeepAssessment == nil || s.DeepAssessment.ShouldEscalate ||
					s.DeepReasonCode != nil || s.CurrentProfile != nil || !slices.Equal(s.CompletedProfiles, cb.Profiles) {
					t.Fatalf("bad post-primary state: %+v", s)
				}
				adv := AdvanceInput{RunID: s.RunID, CompletedStep: StepSynthesis, Status: OutcomeCompleted}
				if bound {
					adv.FinalReviewReport = finalReportFor(s)
				}
				s = mustAdvance(t, o, adv)
				if s.Status != StatusAwaitingHostOutcome || s.ModelPolicy != nil || s.NextAction != NextAwaitingOutcome {
					t.Fatalf("bad awaiting state: %+v", s)
				}
				wantRev := int64(1 + len(cb.Profiles) + 1)
				if s.Revision != wantRev {
					t.Fatalf("revision %d, want %d", s.Revision, wantRev)
				}
				f, err := o.Finish(ctx, FinishInput{RunID: s.RunID, Outcome: OutcomeCompleted})
				if err != nil {
					t.Fatal(err)
				}
				if f.Status != StatusCompleted || f.NextAction != NextRecordedDone || f.Revision != wantRev+1 {
					t.Fatalf("bad finished state: %+v", f)
				}
				again, err := o.Finish(ctx, FinishInput{RunID: s.RunID, Outcome: OutcomeCompleted})
				if err != nil || !jsonEqual(t, again, f) {
					t.Fatalf("repeated finish changed the session: %v", err)
				}
				if bound {
					exp, err := o.Export(ctx, ExportInput{RunID: s.RunID})
					if err != nil {
						t.Fatal(err)
					}
					wantFindings := 0
					for _, p := range cb.Profiles {
						if allowsCandidates(p) {
							wantFindings++
						}
					}
					if len(exp.Findings) != wantFindings {
						t.Fatalf("exported %d findings, want %d", len(exp.Findings), wantFindings)
					}
				}
			})
		}
	}
}

func TestEverySingleProfileFlow(t *testing.T) {
	for _, p := range Profiles() {
		t.Run(string(p), func(t *testing.T) {
			o, _ := newTestOrch(t, nil)
			s := mustStart(t, o, StartInput{TaskType: TaskOther, ReviewContext: boundContext()})
			s = mustAdvance(t, o, AdvanceInput{RunID: s.RunID, CompletedStep: StepTriage, Status: OutcomeCompleted,
				SelectedProfile: ptr(p)})
			if s.SelectedBundle != nil || !slices.Equal(s.ReviewProfiles, []Profile{p}) || *s.CurrentProfile != p {
				t.Fatalf("bad single-profile route: %+v", s)
			}
			s = runPrimary(t, o, s, RiskSignals{})
			if len(s.ProfileReports) != 1 || s.ProfileReports[0].Profile != p {
				t.Fatalf("profile_reports = %+v", s.ProfileReports)
			}
			s = mustAdvance(t, o, AdvanceInput{RunID: s.RunID, CompletedStep: StepSynthesis, Status: OutcomeCompleted,
				FinalReviewReport: finalReportFor(s)})
			if _, err := o.Finish(ctx, FinishInput{RunID: s.RunID, Outcome: OutcomeCompleted}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestRecommendedBundlesByTaskType(t *testing.T) {
	want := map[TaskType][]Bundle{
		TaskOrdinaryReview: {BundleOrdinaryMR}, TaskWidgetReview: {BundleWidget, BundleWidgetJS},
		TaskEpicAnalysis: {BundleRequirements}, TaskRequirementsAnalysis: {BundleRequirements},
		TaskQAPlanning: {BundleRequirements}, TaskAutotestImplementation: {BundleAutotest, BundleOrdinaryMR},
		TaskOther: {},
	}
	o, _ := newTestOrch(t, nil)
	for _, tt := range TaskTypes() {
		s := mustStart(t, o, StartInput{TaskType: tt})
		if !slices.Equal(s.RecommendedBundles, want[tt]) || s.RecommendedBundles == nil {
			t.Errorf("%s: recommended_bundles %v, want %v", tt, s.RecommendedBundles, want[tt])
		}
		if !slices.Equal(GetCatalog().RecommendedBundlesByTaskType[tt], want[tt]) {
			t.Errorf("%s: catalog disagrees", tt)
		}
	}
	_, err := o.Start(ctx, StartInput{TaskType: "bogus"})
	wantCode(t, err, CodeInvalidTaskType)
}

func TestBundleOrders(t *testing.T) {
	want := map[Bundle][]Profile{
		BundleOrdinaryMR:    {ProfileCodeExplorer, ProfileCodeReviewer, ProfilePRTestAnalyzer},
		BundleWidget:        {ProfileCodeExplorer, ProfileReactReviewer, ProfileTypeScriptReviewer, ProfilePRTestAnalyzer},
		BundleWidgetJS:      {ProfileCodeExplorer, ProfileCodeReviewer, ProfileReactReviewer, ProfilePRTestAnalyzer},
		BundleRubyBackend:   {ProfileCodeExplorer, ProfileRubyReviewer, ProfilePRTestAnalyzer},
		BundlePythonBackend: {ProfileCodeExplorer, ProfilePythonReviewer, ProfilePRTestAnalyzer},
		BundleMobile:        {ProfileCodeExplorer, ProfileMobileReviewer, ProfilePRTestAnalyzer},
		BundleSecurity:      {ProfileCodeExplorer, ProfileSecurityReviewer, ProfileSilentFailureHunter},
		BundleAutotest:      {ProfileCodeReviewer, ProfilePRTestAnalyzer, ProfileTypeScriptReviewer},
		BundleRequirements:  {ProfileCodeExplorer, ProfileCodeReviewer},
	}
	for _, b := range Bundles() {
		if !slices.Equal(BundleProfiles(b), want[b]) {
			t.Errorf("%s: %v, want %v", b, BundleProfiles(b), want[b])
		}
	}
}

func TestPrepareRoutes(t *testing.T) {
	for _, p := range Profiles() {
		r, err := Prepare(PrepareInput{AgentProfile: p})
		if err != nil {
			t.Fatal(err)
		}
		if r.DisplayName == "" || r.Focus == "" || len(r.RequiredSections) == 0 || len(r.Constraints) != 5 ||
			len(r.EscalationSignals) < 2 || !r.ReadOnly || !r.HostOwnsDecisions {
			t.Errorf("%s: incomplete route %+v", p, r)
		}
	}
	if r, _ := Prepare(PrepareInput{AgentProfile: ProfileCodeExplorer}); r.DisplayName != "Faraday — Evidence Investigator" {
		t.Errorf("explorer display name = %q", r.DisplayName)
	}
	_, err := Prepare(PrepareInput{AgentProfile: "nobody"})
	wantCode(t, err, CodeUnknownProfile)
	a, _ := json.Marshal(GetCatalog())
	b, _ := json.Marshal(GetCatalog())
	if string(a) != string(b) {
		t.Error("catalog output is not stable")
	}
}

func jsonEqual(t *testing.T, a, b any) bool {
	t.Helper()
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	return string(x) == string(y)
}
