package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/diffpalhq/diffpal/internal/git/gittest"
	"github.com/diffpalhq/diffpal/internal/providerset"
)

// Regression tests for a hostile change under review (docs/security.md):
// the repository's config, ignore file and rule packs are written by the
// pull request's author.

const ciSecret = "ci-secret-Zq8vR2mK7pLx4Wn9"

// insecureGo is a change the built-in reviewer blocks on (HIGH).
const insecureGo = "package main\n\nimport \"crypto/tls\"\n\nvar c = &tls.Config{InsecureSkipVerify: true}\n"

func trustWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// hostileRepo commits a base, then a feature branch whose commit adds
// insecureGo plus the given policy files.
func policyRepo(t *testing.T, files map[string]string) *gittest.Repo {
	t.Helper()
	repo := gittest.New(t)
	repo.Write("main.go", "package main\n")
	repo.Commit("base")
	repo.Git("checkout", "-q", "-b", "feature")
	repo.Write("main.go", insecureGo)
	for p, c := range files {
		repo.Write(p, c)
	}
	repo.Commit("feature")
	return repo
}

// A committed config that names /proc/self/environ, a ../ path or a
// symlink out of the repository as a rule pack (or is itself such a
// symlink) is refused with exit 2, and no byte of the other file reaches
// the output.
func TestHostileConfigCannotPrintFiles(t *testing.T) {
	t.Setenv("CI_SECRET_TOKEN", ciSecret)
	outside := t.TempDir()
	trustWrite(t, filepath.Join(outside, "secret.yaml"), "token: "+ciSecret+"\nrules: [\n")
	for _, tc := range []struct {
		name  string
		setup func(dir string)
		want  string
	}{
		{"proc environ pack", func(dir string) {
			trustWrite(t, filepath.Join(dir, ".config/diffpal/config.yaml"), "version: v1\nrules: {packs: [/proc/self/environ]}\n")
		}, "outside the repository"},
		{"dotdot pack", func(dir string) {
			rel, _ := filepath.Rel(dir, filepath.Join(outside, "secret.yaml"))
			trustWrite(t, filepath.Join(dir, ".config/diffpal/config.yaml"), "version: v1\nrules: {packs: ["+rel+"]}\n")
		}, "outside the repository"},
		{"symlinked pack", func(dir string) {
			trustWrite(t, filepath.Join(dir, ".config/diffpal/config.yaml"), "version: v1\nrules: {packs: [team.yaml]}\n")
			os.Symlink(filepath.Join(outside, "secret.yaml"), filepath.Join(dir, "team.yaml"))
		}, "outside the repository"},
		{"symlinked config", func(dir string) {
			os.MkdirAll(filepath.Join(dir, ".config/diffpal"), 0o755)
			os.Symlink(filepath.Join(outside, "secret.yaml"), filepath.Join(dir, ".config/diffpal/config.yaml"))
		}, "outside the repository"},
		{"fifo pack", func(dir string) {
			trustWrite(t, filepath.Join(dir, ".config/diffpal/config.yaml"), "version: v1\nrules: {packs: [pipe.yaml]}\n")
			trustMkfifo(t, filepath.Join(dir, "pipe.yaml"))
		}, "not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := gittest.New(t)
			repo.Write("main.go", "package main\n")
			repo.Commit("base")
			tc.setup(repo.Dir)
			for _, cmd := range [][]string{
				{"review", "-C", repo.Dir, "--uncommitted", "--config-source", "worktree"},
				{"doctor", "-C", repo.Dir, "--config-source", "worktree"},
			} {
				code, out, errOut := runCLI(t, cmd...)
				if code != ExitUsage {
					t.Errorf("%s: exit %d, want 2\n%s%s", cmd[0], code, out, errOut)
				}
				all := out + errOut
				if strings.Contains(all, ciSecret) || strings.Contains(all, "CI_SECRET_TOKEN") {
					t.Errorf("%s printed another file's content:\n%s", cmd[0], all)
				}
				if !strings.Contains(all, tc.want) {
					t.Errorf("%s: want %q in\n%s", cmd[0], tc.want, all)
				}
			}
		})
	}
}

// A policy file committed as a symlink is refused when read from a
// revision too (git stores the link, not its target).
func TestSymlinkPolicyFileInRevisionRefused(t *testing.T) {
	outside := t.TempDir()
	trustWrite(t, filepath.Join(outside, "x.yaml"), "token: "+ciSecret+"\n")
	repo := gittest.New(t)
	repo.Write("main.go", "package main\n")
	repo.Commit("base")
	repo.Git("checkout", "-q", "-b", "feature")
	os.MkdirAll(filepath.Join(repo.Dir, ".config/diffpal"), 0o755)
	os.Symlink(filepath.Join(outside, "x.yaml"), filepath.Join(repo.Dir, ".config/diffpal/config.yaml"))
	repo.Commit("link")
	code, out, errOut := runCLI(t, "review", "-C", repo.Dir, "--config-source", "head")
	if code != ExitUsage || !strings.Contains(errOut, "symlink") || strings.Contains(out+errOut, ciSecret) {
		t.Errorf("exit %d\n%s%s", code, out, errOut)
	}
}

// In CI the policy comes from the base revision: a change that adds an
// ignore, a catch-all .diffpalignore and an empty rule pack still fails
// the gate, and each edit is listed and reported as its own finding.
func TestPolicyFromBaseInCI(t *testing.T) {
	repo := policyRepo(t, map[string]string{
		".config/diffpal/config.yaml": "version: v1\nignores:\n  - {rule: sec.tls-insecure-skip-verify, reason: trust me}\nrules: {packs: [.config/diffpal/mine.yaml]}\nreview: {block_on: critical}\n",
		".config/diffpal/mine.yaml":   "rules:\n  - id: my.nothing\n    profile: code_reviewer\n    category: correctness\n    severity: low\n    confidence: 0.5\n    title: nothing\n    message: nothing\n    impact: none\n    impact_scope: none\n    suggestion: none\n    pattern: 'zzzz-never'\n    languages: [go]\n    positive: [{path: a.go, code: zzzz-never}]\n    negative: [{path: a.go, code: ok}]\n",
		".diffpalignore":              "*\n",
	})
	t.Setenv("CI", "true")
	code, out, errOut := runCLI(t, "review", "-C", repo.Dir, "--gate")
	if code != ExitGateBlocked {
		t.Fatalf("exit %d, want 10 (the head's policy must not apply in CI)\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, "policy from base") {
		t.Errorf("summary does not say where the policy came from:\n%s", out)
	}
	b := readBundleFile(t, filepath.Join(repo.Dir, ".artifacts/diffpal/findings.json"))
	var selfEdits []string
	for _, f := range b.Findings {
		if f.RuleID == "policy.self-edit" {
			selfEdits = append(selfEdits, f.File+" "+f.Title)
			if f.Blocking {
				t.Errorf("policy finding blocks by default: %+v", f)
			}
		}
	}
	for _, want := range []string{".config/diffpal/config.yaml", ".diffpalignore", ".config/diffpal/mine.yaml"} {
		if !strings.Contains(strings.Join(selfEdits, "\n"), want) {
			t.Errorf("no policy finding for %s; got %v", want, selfEdits)
		}
	}
	sum, _ := os.ReadFile(filepath.Join(repo.Dir, ".artifacts/diffpal/summary.md"))
	for _, want := range []string{"ignores (+1)", "review.block_on", ".diffpalignore"} {
		if !strings.Contains(strings.ReplaceAll(string(sum), `\`, ""), want) {
			t.Errorf("summary.md does not list %q", want)
		}
	}

	// Asked for explicitly, the head's policy applies — and its edits are
	// still reported.
	code, out, errOut = runCLI(t, "review", "-C", repo.Dir, "--gate", "--config-source", "head")
	if code != 0 {
		t.Fatalf("--config-source head: exit %d, want 0\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, "policy from head") || !strings.Contains(out, "edits its own review policy: 3") {
		t.Errorf("head policy run does not report the edits:\n%s", out)
	}
}

// Locally (no CI variable) the work tree's policy is used.
func TestPolicyFromWorktreeLocally(t *testing.T) {
	repo := policyRepo(t, map[string]string{".diffpalignore": "main.go\n"})
	code, out, errOut := runCLI(t, "review", "-C", repo.Dir, "--gate")
	if code != 0 || !strings.Contains(out, "policy from worktree") && !strings.Contains(out, "policy from work tree") {
		t.Errorf("exit %d\n%s%s", code, out, errOut)
	}
}

// Alias bombs and deep nesting in the repository's config are exit 2 with
// the file, line and limit named — not an out-of-memory crash.
func TestConfigBombs(t *testing.T) {
	var bomb strings.Builder
	bomb.WriteString("version: v1\nx0: &x0 [a, a, a, a, a, a, a, a, a, a]\n")
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&bomb, "x%d: &x%d [*x%d, *x%d, *x%d, *x%d, *x%d, *x%d, *x%d, *x%d, *x%d, *x%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	bomb.WriteString("review: {include: *x9}\n")
	for _, tc := range []struct{ name, cfg, want string }{
		{"alias bomb", bomb.String(), "expands to more than 100000 nodes"},
		{"nesting", "version: v1\nreview: {include: " + strings.Repeat("[", 100_000) + "}\n", "nesting deeper than the limit of 64 levels"},
		{"size", "version: v1\n#" + strings.Repeat("x", 2<<20) + "\n", "over the limit of 1048576 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := gittest.New(t)
			repo.Write("main.go", "package main\n")
			repo.Write(".config/diffpal/config.yaml", tc.cfg)
			repo.Commit("base")
			for _, cmd := range [][]string{{"review", "-C", repo.Dir}, {"doctor", "-C", repo.Dir}} {
				code, out, errOut := runCLI(t, cmd...)
				if code != ExitUsage || !strings.Contains(out+errOut, tc.want) || !strings.Contains(out+errOut, ".config/diffpal/config.yaml") {
					t.Errorf("%s: exit %d, want 2 naming the file and %q\n%s", cmd[0], code, tc.want, clipOut(out+errOut))
				}
			}
		})
	}
}

// A glob that can never match is an error, from flags and from config:
// otherwise the review covers nothing and the gate passes.
func TestInvalidGlobsFailClosed(t *testing.T) {
	repo := policyRepo(t, nil)
	code, _, errOut := runCLI(t, "review", "-C", repo.Dir, "--gate", "--include", "[")
	if code != ExitUsage || !strings.Contains(errOut, `--include "["`) {
		t.Errorf("--include '[': exit %d, want 2\n%s", code, errOut)
	}
	code, _, errOut = runCLI(t, "review", "-C", repo.Dir, "--gate", "--exclude", `src/\`)
	if code != ExitUsage || !strings.Contains(errOut, "--exclude") {
		t.Errorf("--exclude: exit %d, want 2\n%s", code, errOut)
	}
	for name, files := range map[string]map[string]string{
		"config include": {".config/diffpal/config.yaml": "version: v1\nreview: {include: [\"src/[\"]}\n"},
		"config ignore":  {".config/diffpal/config.yaml": "version: v1\nignores: [{path: \"a[\", reason: x}]\n"},
		"ignore file":    {".diffpalignore": "ok/\nbad[\n"},
	} {
		t.Run(name, func(t *testing.T) {
			repo := policyRepo(t, files)
			code, out, errOut := runCLI(t, "review", "-C", repo.Dir, "--gate", "--config-source", "head")
			if code != ExitUsage || !strings.Contains(errOut, "malformed") {
				t.Errorf("review: exit %d, want 2\n%s%s", code, out, errOut)
			}
			code, out, _ = runCLI(t, "doctor", "-C", repo.Dir, "--config-source", "head")
			if code != ExitUsage || !strings.Contains(out, "malformed") {
				t.Errorf("doctor: exit %d, want 2 reporting the glob\n%s", code, out)
			}
		})
	}
}

func clipOut(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "…"
	}
	return s
}

type miniBundle struct {
	Findings []struct {
		RuleID   string `json:"rule_id"`
		File     string `json:"path"`
		Title    string `json:"title"`
		Blocking bool   `json:"blocking"`
	} `json:"findings"`
}

func readBundleFile(t *testing.T, path string) miniBundle {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var b miniBundle
	if err := json.Unmarshal(data, &b); err != nil {
		t.Fatal(err)
	}
	return b
}

func trustMkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
}

// Outside a repository every command that needs one exits 2 naming
// -C/--dir; a pathspec outside the repository is exit 2 naming the git
// subcommand, without git's raw command line.
func TestRepositoryErrorsAreUsageErrors(t *testing.T) {
	notRepo := t.TempDir()
	for _, cmd := range [][]string{
		{"review", "-C", notRepo},
		{"context", "-C", notRepo},
	} {
		code, _, errOut := runCLI(t, cmd...)
		if code != ExitUsage || !strings.Contains(errOut, "-C/--dir") || strings.Contains(errOut, "--repo-dir") {
			t.Errorf("%s outside a repository: exit %d, want 2 naming -C/--dir\n%s", cmd[0], code, errOut)
		}
	}
	repo := policyRepo(t, nil)
	code, _, errOut := runCLI(t, "review", "-C", repo.Dir, "--", "../../etc/passwd")
	if code != ExitUsage || !strings.Contains(errOut, "git diff") || strings.Contains(errOut, "-c core.") || strings.Contains(errOut, "--no-ext-diff") {
		t.Errorf("pathspec outside: exit %d, want 2 naming git diff only\n%s", code, errOut)
	}
}

// A model-answer cache the repository itself tracks is ignored: a change
// could otherwise commit "no findings" answers keyed to its own diff.
func TestCommittedAnswerCacheIgnored(t *testing.T) {
	repo := gittest.New(t)
	repo.Write("main.go", "package main\n")
	repo.Commit("base")
	if !providerset.CacheUsable(repo.Dir) {
		t.Fatal("a clean repository's cache must be usable")
	}
	repo.Write(".artifacts/diffpal/cache/ab/planted.json", "{}")
	if !providerset.CacheUsable(repo.Dir) {
		t.Error("an untracked cache entry (an earlier run's) must keep the cache usable")
	}
	repo.Commit("plant an answer")
	if providerset.CacheUsable(repo.Dir) {
		t.Error("a cache with committed entries must be ignored")
	}
}
