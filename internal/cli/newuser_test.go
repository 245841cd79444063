package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A new user's first run: `review -C REPO` names the repository it
// reviewed (its top level, not a remote) and prints artifact paths that
// open from the caller's directory; counts read as English.
func TestReviewDashCFromElsewhere(t *testing.T) {
	repo := policyRepo(t, nil)
	repo.Git("remote", "add", "origin", "https://github.com/someone/else.git")
	code, out, errOut := runCLI(t, "review", "-C", repo.Dir)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	lines := strings.Split(out, "\n")
	if !strings.HasPrefix(lines[0], "diffpal review "+repo.Dir+" ") || strings.Contains(lines[0], "someone/else") {
		t.Errorf("header does not name the reviewed top level: %q", lines[0])
	}
	if !strings.Contains(out, "reviewed 1 file, 4 added lines;") {
		t.Errorf("counts do not read as English:\n%s", out)
	}
	var wrote string
	for _, l := range lines {
		if strings.HasPrefix(l, "  wrote ") {
			wrote = strings.TrimPrefix(l, "  wrote ")
		}
	}
	paths := strings.Split(wrote, ", ")
	if len(paths) != 5 {
		t.Fatalf("wrote line = %q", wrote)
	}
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("printed path %q does not open from the caller's directory: %v", p, err)
		}
		if !strings.HasPrefix(p, filepath.Join(repo.Dir, ".artifacts/diffpal")) {
			t.Errorf("printed path %q is not the repository's artifact", p)
		}
	}
}

// -C is "as if started there" for review too: a relative --out-dir lands
// under -C, where gate -C finds it.
func TestReviewDashCRelativeOutDir(t *testing.T) {
	repo := policyRepo(t, nil)
	if code, out, errOut := runCLI(t, "review", "-C", repo.Dir, "--out-dir", "out"); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(repo.Dir, "out", "findings.json")); err != nil {
		t.Fatalf("relative --out-dir not under -C: %v", err)
	}
	code, _, errOut := runCLI(t, "gate", "-C", repo.Dir, "out/findings.json")
	if code != ExitGateBlocked {
		t.Errorf("gate -C after review -C: exit %d\n%s", code, errOut)
	}
}
