package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRender renders a review's bundle with the printers review uses:
// html with the session's audit trail and the head revision's lines,
// markdown, sarif identical to `diffpal sarif`, and bundles of older
// versions.
func TestRender(t *testing.T) {
	repo := newE2ERepo(t)
	if code, _, stderr := runCLI(t, "review", "-C", repo.Dir, "--base", "main", "--color", "never"); code != 0 {
		t.Fatalf("review: %d %s", code, stderr)
	}
	art := filepath.Join(repo.Dir, ".artifacts", "diffpal")

	code, out, stderr := runCLI(t, "render", "-C", repo.Dir, "--format", "html")
	if code != 0 {
		t.Fatalf("render html: %d %s", code, stderr)
	}
	for _, want := range []string{"TLS certificate verification disabled", "InsecureSkipVerify", "qar-"} {
		if !strings.Contains(out, want) {
			t.Errorf("render html lacks %q", want)
		}
	}
	written, err := os.ReadFile(filepath.Join(art, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(written), "TLS certificate verification disabled") {
		t.Error("review's report.html lacks the finding")
	}

	code, md, stderr := runCLI(t, "render", "-C", repo.Dir, "--format", "markdown")
	if code != 0 || !strings.Contains(md, "# diffpal review") || !strings.Contains(md, "### By file") || !strings.Contains(md, "| Provider | builtin |") {
		t.Errorf("render markdown: %d %s\n%s", code, stderr, md)
	}

	_, sarifOut, _ := runCLI(t, "sarif", "-C", repo.Dir, "--out", "-")
	code, rendered, stderr := runCLI(t, "render", "-C", repo.Dir, "--format", "sarif")
	if code != 0 || rendered != sarifOut {
		t.Errorf("render sarif differs from diffpal sarif (exit %d %s)", code, stderr)
	}

	// To a file, reported on stderr.
	dst := filepath.Join(t.TempDir(), "r.html")
	if code, _, stderr := runCLI(t, "render", "-C", repo.Dir, "--format", "html", "--out", dst); code != 0 || !strings.Contains(stderr, "render: html") {
		t.Errorf("render --out: %d %s", code, stderr)
	}

	// A v1 bundle, alone (no session beside it).
	v1 := filepath.Join(t.TempDir(), "v1.json")
	data, err := os.ReadFile(filepath.Join("..", "..", "findings", "testdata", "upgrade", "v1-legacy.in.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(v1, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"html", "markdown", "sarif"} {
		if code, out, stderr := runCLI(t, "render", "--format", f, "--input", v1); code != 0 || out == "" {
			t.Errorf("render %s of a v1 bundle: %d %s", f, code, stderr)
		}
	}

	// A session of another head is not used, and render says so.
	other := filepath.Join(t.TempDir(), "findings.json")
	bundle, _ := os.ReadFile(filepath.Join(art, "findings.json"))
	if err := os.WriteFile(other, []byte(strings.Replace(string(bundle), repo.head, strings.Repeat("9", 40), 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(t, "render", "--format", "html", "--input", other, "--session", filepath.Join(art, "qa-session.json")); code != 0 || !strings.Contains(stderr, "rendering the bundle alone") {
		t.Errorf("mismatched session: %d %s", code, stderr)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"render", "-C", repo.Dir}, "--format is required"},
		{[]string{"render", "-C", repo.Dir, "--format", "pdf"}, `--format "pdf": want html, markdown, sarif`},
		{[]string{"render", "-C", repo.Dir, "--format", "html", "--session", "missing.json"}, "--session"},
		{[]string{"render", "--format", "html", "--input", filepath.Join(t.TempDir(), "none.json")}, "none.json"},
	} {
		code, _, stderr := runCLI(t, c.args...)
		if code != ExitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d %q, want %q", c.args, code, stderr, c.want)
		}
	}
}
