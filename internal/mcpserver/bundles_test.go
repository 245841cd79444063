package mcpserver

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/qa"
)

// bundleRoute is one triage choice: a bundle, or a single profile.
type bundleRoute struct {
	name    string
	bundle  *qa.Bundle
	profile *qa.Profile
	order   []qa.Profile // the review_profiles the route must produce
}

// allRoutes returns every bundle with its fixed order and every profile as
// a single-profile route. The orders are spelled out rather than read from
// the catalog so a change to a bundle's order fails here.
func allRoutes() []bundleRoute {
	const (
		ex  = qa.ProfileCodeExplorer
		cr  = qa.ProfileCodeReviewer
		ta  = qa.ProfilePRTestAnalyzer
		sec = qa.ProfileSecurityReviewer
		sfh = qa.ProfileSilentFailureHunter
		ts  = qa.ProfileTypeScriptReviewer
		re  = qa.ProfileReactReviewer
		rb  = qa.ProfileRubyReviewer
		py  = qa.ProfilePythonReviewer
		mob = qa.ProfileMobileReviewer
	)
	bundles := []struct {
		b     qa.Bundle
		order []qa.Profile
	}{
		{qa.BundleOrdinaryMR, []qa.Profile{ex, cr, ta}},
		{qa.BundleWidget, []qa.Profile{ex, re, ts, ta}},
		{qa.BundleWidgetJS, []qa.Profile{ex, cr, re, ta}},
		{qa.BundleRubyBackend, []qa.Profile{ex, rb, ta}},
		{qa.BundlePythonBackend, []qa.Profile{ex, py, ta}},
		{qa.BundleMobile, []qa.Profile{ex, mob, ta}},
		{qa.BundleSecurity, []qa.Profile{ex, sec, sfh}},
		{qa.BundleAutotest, []qa.Profile{cr, ta, ts}},
		{qa.BundleRequirements, []qa.Profile{ex, cr}},
	}
	var routes []bundleRoute
	for _, b := range bundles {
		routes = append(routes, bundleRoute{name: "bundle=" + string(b.b), bundle: ptr(b.b), order: b.order})
	}
	for _, p := range qa.Profiles() {
		routes = append(routes, bundleRoute{name: "profile=" + string(p), profile: ptr(p), order: []qa.Profile{p}})
	}
	return routes
}

// routeMode is how a route's session is driven.
type routeMode struct {
	name    string
	bound   bool // start with review_context: reports and final report required
	reports bool // send profile reports and a final report on an unbound session
}

// candidatesFor gives every profile with a Finding Candidates section one
// located candidate; the explorer and the test analyzer must send none.
func candidatesFor(p qa.Profile) []qa.ProfileCandidate {
	if p == qa.ProfileCodeExplorer || p == qa.ProfilePRTestAnalyzer {
		return nil
	}
	return []qa.ProfileCandidate{candidate("F-01", string(p)+" finds an empty cart total", true)}
}

// mergedFinalReport folds every stored candidate into one final finding
// F-01: the first is confirmed, the rest are duplicates of it. A route
// without candidates gets a report with no findings and no decisions.
func mergedFinalReport(s qa.Session) *qa.FinalReviewReport {
	var hash *string
	if s.ReviewContext != nil {
		hash = s.ReviewContext.ReviewRulesSHA256
	}
	fr := &qa.FinalReviewReport{Summary: "- Cart total handles empty carts",
		ProfilesReviewed: slices.Clone(s.CompletedProfiles), ReviewRulesSHA256: hash}
	var srcs []qa.CandidateRef
	var profiles []qa.Profile
	for _, r := range s.ProfileReports {
		for _, c := range r.FindingCandidates {
			srcs = append(srcs, qa.CandidateRef{Profile: r.Profile, CandidateID: c.CandidateID})
			if !slices.Contains(profiles, r.Profile) {
				profiles = append(profiles, r.Profile)
			}
		}
	}
	if len(srcs) == 0 {
		return fr
	}
	c := candidate("F-01", "empty cart total", true)
	fr.FindingCandidates = []qa.FinalCandidate{{CandidateID: "F-01", Title: c.Title, Description: c.Description,
		Confidence: c.Confidence, VerificationGap: c.VerificationGap, EvidenceRefs: c.EvidenceRefs, Impact: c.Impact,
		FailureCondition: c.FailureCondition, SourceLocations: c.SourceLocations, Severity: ptr(qa.SeverityMedium),
		SourceProfiles: profiles, SourceCandidates: srcs}}
	for i, src := range srcs {
		v := qa.VerdictDuplicate
		if i == 0 {
			v = qa.VerdictConfirmed
		}
		fr.CandidateDecisions = append(fr.CandidateDecisions, qa.CandidateDecision{Source: src, Verdict: v,
			FinalFindingID: ptr("F-01"), Rationale: "read the cart total", EvidenceRefs: []string{"E2"}})
	}
	return fr
}

// TestBundlesAndProfilesFlow drives every triage route (9 bundles, 10 single
// profiles) to a finished session over the SDK client, unbound and
// review-bound, and checks the end state. Every write is conditional on the
// revision the previous response returned. One server (schema inference is
// the expensive part) serves every subtest, each over its own client
// connection, concurrently.
func TestBundlesAndProfilesFlow(t *testing.T) {
	clk := newFakeClock()
	orch, err := qa.New(qa.Config{Clock: clk.Now, Random: rand.NewChaCha8([32]byte{9}), MaxSessions: 1000})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(orch, Options{})
	if err != nil {
		t.Fatal(err)
	}
	modes := []routeMode{
		{name: "unbound"},
		{name: "unbound+reports", reports: true},
		{name: "bound", bound: true, reports: true},
	}
	for _, mode := range modes {
		for _, route := range allRoutes() {
			t.Run(mode.name+"/"+route.name, func(t *testing.T) {
				t.Parallel()
				e := &env{t: t, cs: connect(t, srv), clock: clk, orch: orch}
				runRoute(t, e, mode, route)
			})
		}
	}
}

func runRoute(t *testing.T, e *env, mode routeMode, route bundleRoute) {
	var s qa.Session
	in := qa.StartInput{TaskType: qa.TaskOrdinaryReview}
	if mode.bound {
		in.ReviewContext = reviewContext()
	}
	e.ok(qa.ToolStart, in, &s)
	if s.Revision != 0 || s.Status != qa.StatusActive || s.CurrentStep != qa.StepTriage || s.NextAction != qa.NextTriage ||
		(s.ReviewContext != nil) != mode.bound {
		t.Fatalf("start: revision %d status %s step %s bound %v", s.Revision, s.Status, s.CurrentStep, s.ReviewContext != nil)
	}
	var hash *string
	if mode.bound {
		hash = s.ReviewContext.ReviewRulesSHA256
	}
	step := 0
	advance := func(in qa.AdvanceInput) {
		t.Helper()
		step++
		in.RunID = s.RunID
		in.ExpectedRevision = ptr(s.Revision)
		in.RequestID = ptr(fmt.Sprintf("step-%d", step))
		prev := s.Revision
		e.ok(qa.ToolAdvance, in, &s)
		if s.Revision != prev+1 {
			t.Fatalf("advance %s: revision %d after %d", in.CompletedStep, s.Revision, prev)
		}
	}

	advance(qa.AdvanceInput{CompletedStep: qa.StepTriage, Status: qa.OutcomeCompleted,
		SelectedBundle: route.bundle, SelectedProfile: route.profile})
	if !slices.Equal(s.ReviewProfiles, route.order) || s.CurrentStep != qa.StepPrimaryReview ||
		s.CurrentProfile == nil || *s.CurrentProfile != route.order[0] || s.NextAction != qa.NextPrimaryReview {
		t.Fatalf("after triage: review_profiles %v, step %s, current %v", s.ReviewProfiles, s.CurrentStep, s.CurrentProfile)
	}
	switch {
	case route.bundle != nil && (s.SelectedBundle == nil || *s.SelectedBundle != *route.bundle):
		t.Fatalf("selected_bundle = %v, want %s", s.SelectedBundle, *route.bundle)
	case route.profile != nil && s.SelectedBundle != nil:
		t.Fatalf("selected_bundle = %s for a single-profile route", *s.SelectedBundle)
	case s.SelectedProfile == nil || *s.SelectedProfile != route.order[0]:
		t.Fatalf("selected_profile = %v, want %s", s.SelectedProfile, route.order[0])
	}

	for i, p := range route.order {
		if s.CurrentProfile == nil || *s.CurrentProfile != p {
			t.Fatalf("profile %d: current_profile %v, want %s", i, s.CurrentProfile, p)
		}
		in := qa.AdvanceInput{CompletedStep: qa.StepPrimaryReview, Status: qa.OutcomeCompleted, CompletedProfile: ptr(p)}
		if mode.reports {
			in.ProfileReport = profileReport(p, hash, candidatesFor(p)...)
		}
		if i == len(route.order)-1 {
			in.RiskSignals = &qa.RiskSignals{}
		}
		advance(in)
		if !slices.Equal(s.CompletedProfiles, route.order[:i+1]) {
			t.Fatalf("completed_profiles %v, want %v", s.CompletedProfiles, route.order[:i+1])
		}
	}
	if s.CurrentStep != qa.StepSynthesis || s.CurrentProfile != nil || s.DeepAssessment == nil ||
		s.DeepAssessment.ShouldEscalate || s.DeepReasonCode != nil || s.NextAction != qa.NextSynthesis {
		t.Fatalf("after primary review: step %s, current %v, assessment %+v", s.CurrentStep, s.CurrentProfile, s.DeepAssessment)
	}
	wantReports := 0
	if mode.reports {
		wantReports = len(route.order)
	}
	if len(s.ProfileReports) != wantReports {
		t.Fatalf("%d profile reports, want %d", len(s.ProfileReports), wantReports)
	}

	syn := qa.AdvanceInput{CompletedStep: qa.StepSynthesis, Status: qa.OutcomeCompleted}
	if mode.reports {
		syn.FinalReviewReport = mergedFinalReport(s)
	}
	advance(syn)
	if s.Status != qa.StatusAwaitingHostOutcome || s.NextAction != qa.NextAwaitingOutcome ||
		(s.FinalReviewReport != nil) != mode.reports {
		t.Fatalf("after synthesis: status %s, final report %v", s.Status, s.FinalReviewReport != nil)
	}

	var done qa.Session
	e.ok(qa.ToolFinish, qa.FinishInput{RunID: s.RunID, Outcome: qa.OutcomeCompleted,
		ExpectedRevision: ptr(s.Revision), RequestID: ptr("finish")}, &done)
	wantRev := int64(len(route.order) + 3) // triage + one per profile + synthesis + finish
	if done.Status != qa.StatusCompleted || done.Revision != wantRev || done.NextAction != qa.NextRecordedDone ||
		done.ModelPolicy != nil || done.CurrentStep != qa.StepAwaitingHostOutcome {
		t.Fatalf("finish: status %s revision %d (want %d) next_action %q step %s",
			done.Status, done.Revision, wantRev, done.NextAction, done.CurrentStep)
	}
	if !slices.Equal(done.CompletedProfiles, route.order) || !slices.Equal(done.ReviewProfiles, route.order) {
		t.Fatalf("completed_profiles %v, review_profiles %v, want %v", done.CompletedProfiles, done.ReviewProfiles, route.order)
	}
	if n := len(done.TransitionReceipts); n != int(wantRev) || done.TransitionReceipts[n-1].AppliedRevision != wantRev {
		t.Fatalf("%d receipts, want %d", n, wantRev)
	}

	// A retried finish (same request_id, same arguments) replays.
	var again qa.Session
	e.ok(qa.ToolFinish, qa.FinishInput{RunID: s.RunID, Outcome: qa.OutcomeCompleted,
		ExpectedRevision: ptr(s.Revision), RequestID: ptr("finish")}, &again)
	if again.Revision != wantRev {
		t.Fatalf("finish replay: revision %d", again.Revision)
	}

	if !mode.bound {
		e.fail(qa.ToolExport, qa.ExportInput{RunID: s.RunID}, string(qa.CodeExportNotBound))
		return
	}
	raw := e.ok(qa.ToolExport, qa.ExportInput{RunID: s.RunID}, nil)
	b, _, err := findings.Parse(raw)
	if err != nil {
		t.Fatalf("export: %v", err)
	}
	want := 0
	if len(done.FinalReviewReport.FindingCandidates) > 0 {
		want = 1
	}
	if len(b.Findings) != want {
		t.Fatalf("export: %d findings, want %d", len(b.Findings), want)
	}
}
