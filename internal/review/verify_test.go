package review

import (
	"context"
	"strings"
	"testing"

	"github.com/diffpalhq/diffpal/internal/git/gittest"
	"github.com/diffpalhq/diffpal/internal/provider"
	"github.com/diffpalhq/diffpal/internal/qa"
)

// rejectVerifier refutes candidates whose title contains a word.
type rejectVerifier struct {
	word  string
	calls int
}

func (v *rejectVerifier) Name() string { return "fake-verifier" }

func (v *rejectVerifier) Verify(_ context.Context, ch *provider.Change, cands []provider.Candidate, _ []string) ([]provider.Verdict, error) {
	v.calls++
	var out []provider.Verdict
	for i, c := range cands {
		vd := provider.Verdict{Index: i, Verdict: "confirmed", Rationale: "the evidence shows it", EvidenceRefs: c.EvidenceRefs}
		if strings.Contains(c.Title, v.word) {
			vd = provider.Verdict{Index: i, Verdict: "rejected", Rationale: "the flagged value is a test fixture", EvidenceRefs: c.EvidenceRefs}
		}
		out = append(out, vd)
	}
	return out, nil
}

// TestSynthesisVerifierRefutes: a verifier at synthesis rejects one
// candidate; it leaves the bundle, is counted as a drop, and the session's
// final report records a rejected decision with a refutation bound to the
// candidate's hash, while confirmed findings stay.
func TestSynthesisVerifierRefutes(t *testing.T) {
	repo := gittest.New(t)
	repo.Write("main.go", "package main\n\nfunc main() {}\n")
	repo.Commit("base")
	repo.Git("checkout", "-q", "-b", "feature")
	// The command is built from a non-constant value (data flow: a
	// constant would not be a finding).
	repo.Write("main.go", "package main\n\nimport (\n\t\"crypto/tls\"\n\t\"os\"\n\t\"os/exec\"\n)\n\nfunc main() {\n\t_ = &tls.Config{InsecureSkipVerify: true}\n\tname := os.Args[1]\n\texec.Command(\"sh\", \"-c\", \"echo \"+name).Run()\n}\n")
	repo.Commit("feature")
	v := &rejectVerifier{word: "TLS"}
	res, err := Run(context.Background(), Options{Change: ChangeOptions{Dir: repo.Dir}, SynthesisVerifier: v})
	if err != nil {
		t.Fatal(err)
	}
	if v.calls != 1 {
		t.Errorf("verifier calls = %d", v.calls)
	}
	for _, f := range res.Bundle.Findings {
		if strings.Contains(f.Title, "TLS") {
			t.Errorf("refuted finding kept: %s", f.Title)
		}
	}
	if len(res.Bundle.Findings) == 0 {
		t.Fatal("confirmed findings were dropped too")
	}
	refutedDrop := false
	for _, d := range res.Audit.Drops {
		refutedDrop = refutedDrop || d.Reason == "refuted by verification"
	}
	if !refutedDrop {
		t.Errorf("drop not recorded: %+v", res.Audit.Drops)
	}
	fr := res.Session.FinalReviewReport
	if fr == nil {
		t.Fatal("no final report")
	}
	rejected, confirmed := 0, 0
	for _, d := range fr.CandidateDecisions {
		switch d.Verdict {
		case qa.VerdictRejected:
			rejected++
			if d.Refutation == nil || d.Refutation.Status != qa.RefutationRefuted || d.FinalFindingID != nil || len(d.Refutation.CandidateSHA256) != 64 {
				t.Errorf("rejected decision = %+v", d)
			}
		case qa.VerdictConfirmed:
			confirmed++
			if d.Refutation == nil || d.Refutation.Status != qa.RefutationNotRefuted {
				t.Errorf("confirmed decision = %+v", d)
			}
		}
	}
	if rejected != 1 || confirmed == 0 {
		t.Errorf("decisions: %d rejected, %d confirmed", rejected, confirmed)
	}
	if res.Session.Status != qa.StatusCompleted {
		t.Errorf("session %s", res.Session.Status)
	}
}

// fakeModel is a provider that is not the builtin: it cites a packet ref
// and a location, as a model provider does.
type fakeModel struct{}

func (fakeModel) Name() string { return "fake-model" }

func (fakeModel) ReviewProfile(_ context.Context, req provider.ProfileRequest) (provider.ProfileResult, error) {
	res := provider.ProfileResult{Attempts: 1}
	if req.Profile != qa.ProfileCodeReviewer {
		return res, nil
	}
	ref := req.Change.Packet.Items[0].Ref
	res.Candidates = []provider.Candidate{
		{Category: "correctness", Severity: "high", Confidence: 0.8, Title: "Off-by-one", Message: "The loop reads past the end.",
			Impact: "panic", Path: "main.go", StartLine: 4, EndLine: 4, EvidenceRefs: []string{ref, "not-a-ref"}, RuleProfile: "code_reviewer"},
		{Category: "correctness", Severity: "low", Confidence: 0.5, Title: "Elsewhere", Message: "Outside the change.",
			Path: "main.go", StartLine: 1, EndLine: 1},
	}
	return res, nil
}

func TestModelProviderCandidates(t *testing.T) {
	repo := gittest.New(t)
	repo.Write("main.go", "package main\n\nfunc main() {\n}\n")
	repo.Commit("base")
	repo.Git("checkout", "-q", "-b", "feature")
	repo.Write("main.go", "package main\n\nfunc main() {\n\tfor i := 0; i <= 3; i++ {}\n}\n")
	repo.Commit("feature")
	res, err := Run(context.Background(), Options{Change: ChangeOptions{Dir: repo.Dir}, Provider: fakeModel{}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Bundle.Findings) != 1 || res.Bundle.Findings[0].Title != "Off-by-one" || res.Bundle.Findings[0].Provider != "fake-model" {
		t.Fatalf("findings = %+v", res.Bundle.Findings)
	}
	if len(res.Audit.Drops) != 1 || res.Audit.Drops[0].Reason != "outside changed lines (filter added)" {
		t.Errorf("drops = %+v", res.Audit.Drops)
	}
	// The cited ref survived; the unknown one was dropped.
	for _, r := range res.Session.ProfileReports {
		for _, c := range r.FindingCandidates {
			if len(c.EvidenceRefs) != 1 || c.EvidenceRefs[0] != "f1:h1" {
				t.Errorf("evidence refs = %v", c.EvidenceRefs)
			}
		}
	}
}
