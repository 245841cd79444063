package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// reviewJSON runs review --json with injected streams (no CI variable, so
// the work tree's config is read) and decodes the result.
func reviewJSON(t *testing.T, env map[string]string, args ...string) (int, ReviewOutput, string) {
	t.Helper()
	ios, out, errOut := testStreams(env, false, false)
	code := Run(context.Background(), append([]string{"review", "--json"}, args...), ios)
	var ro ReviewOutput
	if code == 0 {
		if err := json.Unmarshal(out.Bytes(), &ro); err != nil {
			t.Fatalf("--json: %v\n%s", err, out)
		}
	}
	return code, ro, errOut.String()
}

func manifestNames(t *testing.T, dir string) []string {
	t.Helper()
	var m Manifest
	if err := json.Unmarshal([]byte(readString(t, filepath.Join(dir, ManifestName))), &m); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range m.Files {
		names = append(names, f.Name)
	}
	return names
}

func keysOf(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestReviewFormats: --format and review.formats choose the outputs; the
// bundle is always written; those in the output directory are one set with
// the manifest, others go to their own paths; bad selections fail before
// anything is reviewed or written.
func TestReviewFormats(t *testing.T) {
	repo := safeRepo(t)
	out := filepath.Join(repo.Dir, ".artifacts", "diffpal")

	// Default: today's four, in today's order, with today's keys.
	code, ro, stderr := reviewJSON(t, nil, "-C", repo.Dir)
	if code != 0 {
		t.Fatalf("default: exit %d\n%s", code, stderr)
	}
	if got := strings.Join(manifestNames(t, out), ","); got != "findings.json,qa-session.json,summary.md,diffpal.sarif,report.html" {
		t.Errorf("default manifest = %s", got)
	}
	if got := strings.Join(keysOf(ro.Files), ","); got != "findings,report,sarif,session,summary" {
		t.Errorf("default files = %v", ro.Files)
	}
	for _, f := range []string{"findings.json", "qa-session.json", "summary.md", "diffpal.sarif", "report.html"} {
		os.Remove(filepath.Join(out, f))
	}

	// Two formats; the bundle comes without being named.
	code, ro, stderr = reviewJSON(t, nil, "-C", repo.Dir, "--format", "sarif")
	if code != 0 {
		t.Fatalf("--format sarif: exit %d\n%s", code, stderr)
	}
	if got := strings.Join(manifestNames(t, out), ","); got != "findings.json,diffpal.sarif" {
		t.Errorf("--format sarif: manifest = %s", got)
	}
	if ro.Files["findings"] != filepath.Join(out, "findings.json") || ro.Files["sarif"] != filepath.Join(out, "diffpal.sarif") || len(ro.Files) != 2 {
		t.Errorf("--format sarif: files = %v", ro.Files)
	}
	for _, f := range []string{"qa-session.json", "summary.md"} {
		if _, err := os.Stat(filepath.Join(out, f)); err == nil {
			t.Errorf("--format sarif wrote %s", f)
		}
	}

	// A path elsewhere (relative to -C), one renamed inside the output
	// directory, repeated flags.
	code, ro, stderr = reviewJSON(t, nil, "-C", repo.Dir, "--format", "markdown=reports/summary.md", "--format", "sarif=.artifacts/diffpal/results.sarif")
	if code != 0 {
		t.Fatalf("paths: exit %d\n%s", code, stderr)
	}
	if got := strings.Join(manifestNames(t, out), ","); got != "findings.json,results.sarif" {
		t.Errorf("paths: manifest = %s", got)
	}
	report := filepath.Join(repo.Dir, "reports", "summary.md")
	if ro.Files["summary"] != report || !strings.Contains(readString(t, report), "diffpal") {
		t.Errorf("paths: files = %v", ro.Files)
	}

	// review.formats from the config, relative to the repository root;
	// the flag replaces it.
	writeString(t, filepath.Join(repo.Dir, ".config", "diffpal", "config.yaml"), "version: v1\nreview:\n  formats: [session, sarif=ci/diffpal.sarif]\n", 0o644)
	sub := filepath.Join(repo.Dir, "sub")
	os.Mkdir(sub, 0o755)
	code, ro, stderr = reviewJSON(t, nil, "-C", sub)
	if code != 0 {
		t.Fatalf("config: exit %d\n%s", code, stderr)
	}
	if ro.Files["sarif"] != filepath.Join(repo.Dir, "ci", "diffpal.sarif") || ro.Files["session"] != filepath.Join(out, "qa-session.json") || len(ro.Files) != 3 {
		t.Errorf("config: files = %v", ro.Files)
	}
	code, ro, stderr = reviewJSON(t, nil, "-C", repo.Dir, "--format", "json")
	if code != 0 || len(ro.Files) != 1 {
		t.Errorf("--format json over the config: exit %d, files %v\n%s", code, ro.Files, stderr)
	}

	// Refusals, each before anything is reviewed: the manifest stays.
	before := readString(t, filepath.Join(out, ManifestName))
	for _, tc := range []struct {
		args   []string
		config string
		want   string
	}{
		{[]string{"--format", "json,pdf"}, "", `--format: unknown format "pdf": want one of json, session, markdown, sarif, html`},
		{[]string{"--format", "json=bundle.json"}, "", "--format: json=bundle.json: the findings bundle is always written to the output directory"},
		{[]string{"--format", "sarif,markdown=.artifacts/diffpal/diffpal.sarif"}, "", "--format: sarif would write " + filepath.Join(out, "diffpal.sarif") + ", as markdown does"},
		{[]string{"--format", "sarif=.artifacts/diffpal/manifest.json"}, "", "as the manifest does"},
		{[]string{"--format", "sarif=-"}, "", "--format: sarif=-: standard output carries the summary"},
		{nil, "version: v1\nreview:\n  formats: [codequality]\n", `review.formats in .config/diffpal/config.yaml: unknown format "codequality": want one of json, session, markdown, sarif, html`},
		{nil, "version: v1\nreview:\n  formats: [sarif=../x.sarif]\n", `review.formats[0]: sarif=../x.sarif: the path must be relative to the repository root and inside it`},
	} {
		cfg := "version: v1\n"
		if tc.config != "" {
			cfg = tc.config
		}
		writeString(t, filepath.Join(repo.Dir, ".config", "diffpal", "config.yaml"), cfg, 0o644)
		code, _, stderr := reviewJSON(t, nil, append([]string{"-C", repo.Dir}, tc.args...)...)
		if code != ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v %q: exit %d, stderr %q, want %q", tc.args, tc.config, code, stderr, tc.want)
		}
		if readString(t, filepath.Join(out, ManifestName)) != before {
			t.Errorf("%v %q: a refused selection wrote the set", tc.args, tc.config)
		}
	}
}

// TestReviewFormatPathSafety: an output outside the set obeys the same
// write rules: a symlinked directory inside the repository is refused, and
// what it points to is untouched.
func TestReviewFormatPathSafety(t *testing.T) {
	repo := safeRepo(t)
	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Join(repo.Dir, "reports")); err != nil {
		t.Skip(err)
	}
	ios, out, errOut := testStreams(nil, false, false)
	code := Run(context.Background(), []string{"review", "-C", repo.Dir, "--format", "markdown=reports/summary.md"}, ios)
	if code != ExitInternal || !strings.Contains(errOut.String(), "symlink") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Errorf("wrote through the link: %v", entries)
	}
}
