package review

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/diffpalhq/diffpal/internal/git"
	"github.com/diffpalhq/diffpal/internal/git/gittest"
)

func findingsAt(t *testing.T, res *Result) []string {
	t.Helper()
	var out []string
	for _, f := range res.Bundle.Findings {
		out = append(out, fmt.Sprintf("%s:%d %s", f.Path, f.StartLine, f.RuleID))
	}
	return out
}

// Files come back in any order from git (untracked appended, a configured
// diff.orderFile); findings must not be dropped because of it.
func TestFileOrderDoesNotDropFindings(t *testing.T) {
	repo := gittest.New(t)
	repo.Write("z.go", "package z\n")
	repo.Write("m.go", "package z\n")
	repo.Commit("base")
	repo.Write("z.go", "package z\n\nimport \"crypto/tls\"\n\nvar c = &tls.Config{InsecureSkipVerify: true}\n")
	repo.Write("m.go", "package z\n\nimport \"crypto/tls\"\n\nvar d = &tls.Config{InsecureSkipVerify: true}\n")
	repo.Write("a.go", "package z\n\nimport \"crypto/tls\"\n\nvar e = &tls.Config{InsecureSkipVerify: true}\n")
	order := filepath.Join(t.TempDir(), "order")
	os.WriteFile(order, []byte("z.go\nm.go\n*\n"), 0o644)
	repo.Git("config", "diff.orderFile", order)
	res, err := Run(context.Background(), Options{Change: ChangeOptions{Dir: repo.Dir, Range: git.RangeOptions{Uncommitted: true}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := findingsAt(t, res); len(got) != 3 {
		t.Errorf("findings = %v, drops = %+v", got, res.Audit.Drops)
	}
}

// Two findings whose anchors differ only in white space get distinct
// stable ids, so a baseline holding one does not hide the other.
func TestStableIDsDistinctAcrossWhitespace(t *testing.T) {
	repo := gittest.New(t)
	repo.Write("a.go", "package a\n")
	repo.Commit("base")
	repo.Git("checkout", "-q", "-b", "f")
	repo.Write("a.go", "package a\n\nimport \"crypto/tls\"\n\nvar c = &tls.Config{InsecureSkipVerify: true}\nvar  c2 = &tls.Config{InsecureSkipVerify:  true}\n")
	repo.Commit("f")
	res, err := Run(context.Background(), Options{Change: ChangeOptions{Dir: repo.Dir}})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, f := range res.Bundle.Findings {
		if ids[f.StableID] {
			t.Errorf("duplicate stable id %s", f.StableID)
		}
		ids[f.StableID] = true
	}
	if len(ids) < 2 {
		t.Errorf("findings = %v", findingsAt(t, res))
	}
}

// More candidates than a profile report may hold (100) do not abort the
// review: the session keeps what fits, the bundle keeps everything.
func TestManyCandidatesFitTheContract(t *testing.T) {
	repo := gittest.New(t)
	repo.Write("a.go", "package a\n")
	repo.Commit("base")
	repo.Git("checkout", "-q", "-b", "f")
	var b strings.Builder
	b.WriteString("package a\n\nimport (\n\t\"crypto/tls\"\n\t\"os/exec\"\n)\n\n")
	for i := 0; i < 61; i++ {
		fmt.Fprintf(&b, "var c%d, k%d = &tls.Config{InsecureSkipVerify: true}, exec.Command(\"sh\", \"-c\", x%d)\n", i, i, i)
	}
	repo.Write("a.go", b.String())
	repo.Commit("f")
	res, err := Run(context.Background(), Options{Change: ChangeOptions{Dir: repo.Dir}})
	if err != nil {
		t.Fatal(err)
	}
	// Two security rules per line merge into one finding per line; the
	// report had 122 candidates for 61 findings.
	if len(res.Bundle.Findings) != 61 || res.Audit.Candidates != 122 {
		t.Errorf("bundle has %d findings from %d candidates", len(res.Bundle.Findings), res.Audit.Candidates)
	}
	total := 0
	for _, r := range res.Session.ProfileReports {
		total += len(r.FindingCandidates)
		if len(r.FindingCandidates) > 100 {
			t.Errorf("%s report has %d candidates", r.Profile, len(r.FindingCandidates))
		}
	}
	if total != 100 || len(res.Session.FinalReviewReport.FindingCandidates) != 61 {
		t.Errorf("session holds %d candidates and %d final findings", total, len(res.Session.FinalReviewReport.FindingCandidates))
	}
}

// A removed assertion is reported whether or not the file also gained an
// unrelated line elsewhere.
func TestRemovedLineFindingIndependentOfOtherEdits(t *testing.T) {
	for _, extra := range []bool{false, true} {
		repo := gittest.New(t)
		repo.Write("test_x.py", "def test_x():\n    y = 1\n    assert y == 1\n")
		repo.Commit("base")
		repo.Git("checkout", "-q", "-b", "f")
		body := "def test_x():\n    y = 1\n"
		if extra {
			body = "import sys\n" + body
		}
		repo.Write("test_x.py", body)
		repo.Commit("f")
		res, err := Run(context.Background(), Options{Change: ChangeOptions{Dir: repo.Dir}})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, f := range res.Bundle.Findings {
			found = found || strings.Contains(strings.ToLower(f.Title), "assert")
		}
		if !found {
			t.Errorf("extra line %v: removed assertion not reported: %v (drops %+v)", extra, findingsAt(t, res), res.Audit.Drops)
		}
	}
}

// Work-tree reviews read symlinks as git stores them (the target path),
// never the file behind them, and skip diffpal's own output.
func TestWorktreeSymlinksAndOutputDir(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "secret.py")
	os.WriteFile(outside, []byte("token = \"ghp_1234567890abcdefghijklmnopqrstuvwxyzAB\"\n"), 0o644)
	repo := gittest.New(t)
	repo.Write("a.py", "x = 1\n")
	os.Symlink("nowhere", filepath.Join(repo.Dir, "dangling"))
	repo.Commit("base")
	os.Remove(filepath.Join(repo.Dir, "dangling"))
	os.Symlink("nowhere2", filepath.Join(repo.Dir, "dangling"))
	os.Symlink(outside, filepath.Join(repo.Dir, "leak.py"))
	repo.Write(".artifacts/diffpal/qa-session.json", "{\"InsecureSkipVerify\": true}\n")
	res, err := Run(context.Background(), Options{Change: ChangeOptions{Dir: repo.Dir, Range: git.RangeOptions{Uncommitted: true}}})
	if err != nil {
		t.Fatalf("work-tree review with symlinks failed: %v", err)
	}
	for _, f := range res.Bundle.Findings {
		t.Errorf("unexpected finding %s:%d %s", f.Path, f.StartLine, f.Title)
	}
	skipped := false
	for _, s := range res.Audit.Skips {
		skipped = skipped || (s.Path == ".artifacts/diffpal/qa-session.json" && s.Reason == "diffpal_output")
	}
	if !skipped {
		t.Errorf("output dir not skipped: %+v", res.Audit.Skips)
	}
}

// Paths after -- are pathspecs relative to where the user stands.
func TestPathspecsRelativeToDir(t *testing.T) {
	repo := gittest.New(t)
	repo.Write("pkg/p.go", "package p\n")
	repo.Write("q.go", "package q\n")
	repo.Commit("base")
	repo.Git("checkout", "-q", "-b", "f")
	repo.Write("pkg/p.go", "package p\n\nvar x = 1\n")
	repo.Write("q.go", "package q\n\nvar y = 1\n")
	repo.Commit("f")
	ch, err := LoadChange(context.Background(), ChangeOptions{Dir: filepath.Join(repo.Dir, "pkg"), Paths: []string{"p.go"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(ch.Files) != 1 || ch.Files[0].Path() != "pkg/p.go" {
		t.Errorf("files = %v", ch.Files)
	}
}

func TestSuppressionWithoutTarget(t *testing.T) {
	repo := gittest.New(t)
	repo.Write("a.go", "package a\n")
	repo.Commit("base")
	repo.Git("checkout", "-q", "-b", "f")
	repo.Write("a.go", "package a\n\nimport \"crypto/tls\"\n\n// diffpal:ignore -- fixture for the TLS tests\nvar c = &tls.Config{InsecureSkipVerify: true}\n")
	repo.Commit("f")
	res, err := Run(context.Background(), Options{Change: ChangeOptions{Dir: repo.Dir}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Bundle.Findings) != 0 || len(res.Audit.Suppressed) != 1 || res.Audit.Suppressed[0].Reason != "fixture for the TLS tests" {
		t.Errorf("findings %v suppressed %+v", findingsAt(t, res), res.Audit.Suppressed)
	}
}

// An unbound session (here: uncommitted work, which has no head to bind
// to) still triages from the changed files.
func TestUnboundSessionTriage(t *testing.T) {
	repo := gittest.New(t)
	repo.Write("app.py", "x = 1\n")
	repo.Commit("base")
	repo.Write("app.py", "def f(items=[]):\n    return items\n")
	res, err := Run(context.Background(), Options{Change: ChangeOptions{Dir: repo.Dir, Range: git.RangeOptions{Uncommitted: true}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Session.ReviewContext != nil || !strings.Contains(res.Audit.Triage, "python_backend") {
		t.Errorf("triage = %q (bound %v)", res.Audit.Triage, res.Session.ReviewContext != nil)
	}
}

// A finding the baseline already has is decided as such in the session
// (rejected, "already in the baseline"), not confirmed and then dropped.
func TestBaselineDecisionsInSession(t *testing.T) {
	repo := gittest.New(t)
	repo.Write("a.go", "package a\n")
	repo.Commit("base")
	repo.Git("checkout", "-q", "-b", "f")
	repo.Write("a.go", "package a\n\nimport \"crypto/tls\"\n\nvar c = &tls.Config{InsecureSkipVerify: true}\n")
	repo.Commit("f")
	first, err := Run(context.Background(), Options{Change: ChangeOptions{Dir: repo.Dir}})
	if err != nil || len(first.Bundle.Findings) != 1 {
		t.Fatalf("first review: %v %v", err, findingsAt(t, first))
	}
	again, err := Run(context.Background(), Options{Change: ChangeOptions{Dir: repo.Dir}, Baseline: first.Bundle})
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Bundle.Findings) != 0 || len(again.Audit.Baseline.Unchanged) != 1 {
		t.Fatalf("findings %v baseline %+v", findingsAt(t, again), again.Audit.Baseline)
	}
	fr := again.Session.FinalReviewReport
	if len(fr.FindingCandidates) != 0 || len(fr.CandidateDecisions) != 1 || fr.CandidateDecisions[0].Verdict != "rejected" ||
		!strings.Contains(fr.CandidateDecisions[0].Rationale, "baseline") {
		t.Errorf("final report = %+v", fr)
	}
}
