package review

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/diffpalhq/diffpal/internal/evidence"
	"github.com/diffpalhq/diffpal/internal/git/gittest"
	"github.com/diffpalhq/diffpal/internal/provider"
	"github.com/diffpalhq/diffpal/internal/qa"
)

// The order is the contract of pipeline.go: the session sees reports of
// anchored, unsuppressed, merged candidates, decides before anything leaves
// the bundle, and the bundle is built last.
func TestStagesInOrder(t *testing.T) {
	var got []string
	for _, s := range stages() {
		got = append(got, s.Name())
	}
	want := []string{"well-formed", "in scope", "anchor", "suppress", "cite", "merge", "identify", "bind",
		"profile reports", "deep review", "verify", "final report", "refuted", "baseline", "bundle"}
	if !slices.Equal(got, want) {
		t.Errorf("stages = %v\nwant     %v", got, want)
	}
}

// sprayModel reports, for the code reviewer, candidates of every kind a
// stage removes: malformed, outside the scope, outside the changed lines,
// suppressed, and good ones.
type sprayModel struct{}

func (sprayModel) Name() string { return "spray" }

func (sprayModel) ReviewProfile(_ context.Context, req provider.ProfileRequest) (provider.ProfileResult, error) {
	res := provider.ProfileResult{Attempts: 1, Dropped: map[string]int{"model candidate malformed (schema)": 2}}
	if req.Profile != "code_reviewer" {
		return res, nil
	}
	c := func(title, path, sev string, line int) provider.Candidate {
		return provider.Candidate{Category: "correctness", Severity: sev, Confidence: 0.8, Title: title, Message: "m", Path: path,
			StartLine: line, EndLine: line, RuleID: "spray." + strings.ReplaceAll(title, " ", "-"), RuleProfile: "code_reviewer"}
	}
	res.Candidates = []provider.Candidate{
		c("good one", "main.go", "high", 4),
		c("good two", "main.go", "LOW", 5),
		c("", "main.go", "high", 4),                 // malformed: no title
		c("bad severity", "main.go", "severe", 4),   // malformed
		c("elsewhere", "other.go", "high", 1),       // not in scope
		c("unchanged line", "main.go", "high", 1),   // outside changed lines
		c("silenced", "main.go", "medium", 7),       // suppressed by the comment above it
		c("silenced too", "main.go", "critical", 7), // suppressed
	}
	return res, nil
}

// TestEveryCandidateAccounted: every candidate a provider reports is
// admitted, dropped with a reason, or listed as suppressed, and every
// admitted one ends in the bundle or is refuted with a record.
func TestEveryCandidateAccounted(t *testing.T) {
	repo := gittest.New(t)
	repo.Write("main.go", "package main\n\nfunc main() {\n}\n")
	repo.Commit("base")
	repo.Git("checkout", "-q", "-b", "feature")
	repo.Write("main.go", "package main\n\nfunc main() {\n\ta := 1\n\tb := 2\n\t// diffpal:ignore -- generated\n\tc := a + b\n\t_ = c\n}\n")
	repo.Commit("feature")
	v := &rejectVerifier{word: "two"}
	res, err := Run(context.Background(), Options{Change: ChangeOptions{Dir: repo.Dir}, Provider: sprayModel{}, SynthesisVerifier: v})
	if err != nil {
		t.Fatal(err)
	}
	drops := map[string]int{}
	for _, d := range res.Audit.Drops {
		drops[d.Reason] = d.Count
	}
	admission := drops["malformed candidate (missing path, category, title or a valid severity)"] + drops["file not in review scope"] + drops["outside changed lines (filter added)"]
	if admission != 4 || res.Audit.Candidates != 2 || len(res.Audit.Suppressed) != 2 {
		t.Errorf("of 8 candidates: %d admitted, %d dropped, %d suppressed; drops %+v", res.Audit.Candidates, admission, len(res.Audit.Suppressed), res.Audit.Drops)
	}
	if drops["refuted by verification"] != 1 || len(res.Bundle.Findings) != 1 || res.Bundle.Findings[0].Title != "good one" {
		t.Errorf("bundle %v, drops %+v", res.Bundle.Findings, res.Audit.Drops)
	}
	// The provider's own drops are counted too, once per profile that
	// reported them.
	if drops["model candidate malformed (schema)"] != 2*len(res.Session.ReviewProfiles) {
		t.Errorf("provider drops = %d", drops["model candidate malformed (schema)"])
	}
}

// A policy.self-edit finding skips suppression: the diffpal:ignore it
// reports cannot silence it, though it silences the rule on the next line.
func TestPolicyFindingsSkipSuppression(t *testing.T) {
	repo := gittest.New(t)
	repo.Write("main.go", "package main\n")
	repo.Commit("base")
	repo.Git("checkout", "-q", "-b", "feature")
	repo.Write("main.go", "package main\n\nimport \"crypto/tls\"\n\n// diffpal:ignore -- trust me\nvar c = &tls.Config{InsecureSkipVerify: true}\n")
	repo.Commit("feature")
	res, err := Run(context.Background(), Options{Change: ChangeOptions{Dir: repo.Dir}, ReviewPolicy: &Policy{Source: "base", Why: "CI is set"}})
	if err != nil {
		t.Fatal(err)
	}
	var policy, tls int
	for _, f := range res.Bundle.Findings {
		switch {
		case f.RuleID == PolicyRule && f.StartLine == 5:
			policy++
		case strings.Contains(f.Title, "TLS"):
			tls++
		}
	}
	if policy != 1 || tls != 0 || len(res.Audit.Suppressed) == 0 {
		t.Errorf("policy findings %d, TLS findings %d, suppressed %+v; findings %v", policy, tls, res.Audit.Suppressed, findingsAt(t, res))
	}
}

// toQAContext gives the session exactly what the JSON round trip it
// replaces gave: the same values, nil and empty lists kept apart, invalid
// UTF-8 replaced byte by byte, no pointer shared with the packet.
func TestToQAContextMatchesJSON(t *testing.T) {
	p, rev, one, zero := "bad\xffpath\xc3", "abc", 1, 0
	rc := &evidence.ReviewContext{Repository: "r\xfe", BaseSHA: "a", HeadSHA: "b", DiffSHA256: "d", EvidencePacketSHA256: "e",
		ChangedFiles: []string{"ok.go", "x\xff\xfey.go"}, EvidenceRefs: []string{},
		EvidenceRegistry: []evidence.Item{{Ref: "f1:h1", Kind: "diff", SHA256: "s", Path: &p, Revision: &rev, StartLine: &one, EndLine: &zero}, {Ref: "r2", Kind: "source"}}}
	var viaJSON qa.ReviewContextInput
	data, err := json.Marshal(rc)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &viaJSON); err != nil {
		t.Fatal(err)
	}
	got := toQAContext(rc)
	if !reflect.DeepEqual(*got, viaJSON) {
		t.Errorf("toQAContext = %s\nJSON round trip = %s", fmt.Sprintf("%+v", *got), fmt.Sprintf("%+v", viaJSON))
	}
	if got.EvidenceRegistry[0].Path == rc.EvidenceRegistry[0].Path || got.EvidenceRegistry[0].StartLine == rc.EvidenceRegistry[0].StartLine {
		t.Error("pointers shared with the packet")
	}
	rc.ChangedFiles, rc.EvidenceRegistry = nil, nil
	if got := toQAContext(rc); got.ChangedFiles != nil || got.EvidenceRegistry != nil {
		t.Error("nil lists became empty")
	}
}

// subjectsModel records the commit subjects each profile's request saw.
type subjectsModel struct{ seen [][]string }

func (*subjectsModel) Name() string { return "subjects" }

func (m *subjectsModel) ReviewProfile(_ context.Context, req provider.ProfileRequest) (provider.ProfileResult, error) {
	m.seen = append(m.seen, slices.Clone(req.Change.Subjects))
	return provider.ProfileResult{Attempts: 1}, nil
}

// TestCommitSubjects: the range's commit subjects, read by a git log of
// their own while the review runs (Change.Subjects), reach every
// profile's provider request and the bundle's change summary, oldest
// first.
func TestCommitSubjects(t *testing.T) {
	repo := gittest.New(t)
	repo.Write("main.go", "package main\n")
	repo.Commit("base")
	repo.Git("checkout", "-q", "-b", "feature")
	repo.Write("main.go", "package main\n\nvar a = 1\n")
	repo.Commit("add a")
	repo.Write("main.go", "package main\n\nvar a = 1\nvar b = 2\n")
	repo.Commit("add b")
	m := &subjectsModel{}
	res, err := Run(context.Background(), Options{Change: ChangeOptions{Dir: repo.Dir}, Provider: m})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"add a", "add b"}
	if !slices.Equal(res.Change.Subjects(), want) || !slices.Equal(res.Bundle.ChangeSummary, want) {
		t.Errorf("subjects %q, change summary %q; want %q", res.Change.Subjects(), res.Bundle.ChangeSummary, want)
	}
	if len(m.seen) == 0 {
		t.Fatal("no profile was reviewed")
	}
	for i, got := range m.seen {
		if !slices.Equal(got, want) {
			t.Errorf("request %d saw subjects %q, want %q", i, got, want)
		}
	}
}
