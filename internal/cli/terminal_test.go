package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/git"
	"github.com/diffpalhq/diffpal/internal/git/gittest"
	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/diffpalhq/diffpal/internal/review"
	"github.com/diffpalhq/diffpal/internal/textsafe"
)

// Names a repository can choose: file names with line breaks, Markdown
// and HTML, escape sequences and a bidi override; a directory name with
// ESC and U+202E; a commit subject with all of it.
var hostileFiles = []string{
	"a\n# ✅ approved\n<img src=x onerror=alert(1)>.go",
	"# ✅ approved.go",
	"<img src=x onerror=alert(1)>.go",
	"[x](javascript:alert(1)).go",
	"![i](http:__e_x.png).go",
	"tick ` and `` two |pipe|.go",
	"esc\x1b[2J\x1b]8;;http:__evil\x07bidi\u202eog.go",
}

const (
	hostileDir     = "repo\x1b[31mRED\u202etxt\u2066"
	hostileSubject = "subject # ✅ approved <img src=x onerror=alert(1)> [x](javascript:alert(1)) ![i](http://e/x.png) `t` | \x1b[31m\u202e"
)

// hostileRepo builds a real repository whose feature branch adds one
// insecure TLS config (a built-in HIGH finding) in each hostile file.
func hostileRepo(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), hostileDir)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	r := &gittest.Repo{T: t, Dir: dir}
	r.Git("init", "-q", "-b", "main")
	r.Git("config", "commit.gpgsign", "false")
	r.Write("base.go", "package main\n")
	r.Commit("base")
	r.Git("checkout", "-q", "-b", "feature")
	for _, name := range hostileFiles {
		r.Write(name, "package main\n\nimport \"crypto/tls\"\n\nvar C = &tls.Config{InsecureSkipVerify: true}\n")
	}
	r.Commit(hostileSubject)
	return dir
}

var sgr = regexp.MustCompile("\x1b\\[[0-9;]*m")

// TestHostileRepository reviews the hostile repository end to end: the
// terminal summary carries no ESC (beyond diffpal's own colours when asked
// for) and no bidi control, every name is on its own finding line with its
// hidden characters shown; summary.md adds no heading, HTML, link or line
// of its own; SARIF URIs are percent-encoded and messages are plain.
func TestHostileRepository(t *testing.T) {
	dir := hostileRepo(t)
	for _, color := range []string{"never", "always"} {
		var out, errOut bytes.Buffer
		code := Run(context.Background(), []string{"review", "-C", dir, "--color", color}, &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
		if code != 0 {
			t.Fatalf("--color %s: exit %d\n%s%s", color, code, out.String(), errOut.String())
		}
		stdout := out.String()
		if color == "always" {
			if !sgr.MatchString(stdout) {
				t.Fatal("--color always printed no colour")
			}
			stdout = sgr.ReplaceAllString(stdout, "")
		}
		for name, s := range map[string]string{"stdout": stdout, "stderr": errOut.String()} {
			for _, r := range s {
				if r != '\n' && textsafe.Hidden(r) {
					t.Errorf("--color %s: %s has a raw U+%04X:\n%s", color, name, r, s)
				}
			}
			if strings.ContainsRune(s, '\x1b') || strings.ContainsRune(s, '\u202e') {
				t.Errorf("--color %s: %s has ESC or U+202E", color, name)
			}
		}
		lines := strings.Split(stdout, "\n")
		// The header names the reviewed top level (escaped), not a remote.
		if !strings.HasPrefix(lines[0], `diffpal review `) || !strings.Contains(lines[0], `/repo\x1b[31mRED\u202etxt\u2066 `) {
			t.Errorf("first line = %q", lines[0])
		}
		findingLines := 0
		for _, l := range lines {
			if strings.Contains(l, "TLS certificate verification disabled") {
				findingLines++
				if !strings.HasPrefix(l, "  ") {
					t.Errorf("finding line not indented: %q", l)
				}
			}
			if strings.HasPrefix(l, "#") || strings.HasPrefix(l, "<") || strings.HasPrefix(l, "[") || strings.HasPrefix(l, "!") {
				t.Errorf("a name started a line: %q", l)
			}
		}
		if findingLines != len(hostileFiles) {
			t.Errorf("finding lines = %d, want %d:\n%s", findingLines, len(hostileFiles), stdout)
		}
		for _, want := range []string{
			`a\n# ✅ approved\n<img src=x onerror=alert(1)>.go:5`,
			`esc\x1b[2J\x1b]8;;http:__evil\x07bidi\u202eog.go:5`,
			filepath.Join(`repo\x1b[31mRED\u202etxt\u2066`, ".artifacts", "diffpal", "summary.md"),
		} {
			if !strings.Contains(stdout, want) {
				t.Errorf("stdout lacks %q:\n%s", want, stdout)
			}
		}
	}

	md, err := os.ReadFile(filepath.Join(dir, ".artifacts", "diffpal", "summary.md"))
	if err != nil {
		t.Fatal(err)
	}
	checkSummary(t, string(md))

	data, err := os.ReadFile(filepath.Join(dir, ".artifacts", "diffpal", "diffpal.sarif"))
	if err != nil {
		t.Fatal(err)
	}
	var log struct {
		Runs []struct {
			Results []struct {
				Message   struct{ Text string }
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct{ URI string }
					}
				}
			}
		}
	}
	if err := json.Unmarshal(data, &log); err != nil {
		t.Fatal(err)
	}
	if len(log.Runs) != 1 || len(log.Runs[0].Results) != len(hostileFiles) {
		t.Fatalf("SARIF results: %s", data)
	}
	for _, r := range log.Runs[0].Results {
		uri := r.Locations[0].PhysicalLocation.ArtifactLocation.URI
		for _, c := range uri {
			if c <= ' ' || c >= 0x7f || strings.ContainsRune("<>[]`|#?:\\", c) {
				t.Errorf("SARIF uri %q has a raw %q", uri, c)
			}
		}
		for _, c := range r.Message.Text {
			if textsafe.Hidden(c) {
				t.Errorf("SARIF message %q has a raw U+%04X", r.Message.Text, c)
			}
		}
	}
}

// checkSummary asserts what a Markdown renderer would see in summary.md:
// only the printer's headings, every line one the printer starts, and
// nothing outside code spans and backslash escapes that opens HTML, a
// link or an image.
func checkSummary(t *testing.T, md string) {
	t.Helper()
	prefixes := []string{"# diffpal review", "## ", "### By file", "**", "| ", "|---", "- ", "> ", "<details><summary>", "</details>", "The configuration", "…and "}
	tags := strings.NewReplacer("<details><summary>", "", "</summary>", "", "</details>", "")
	// A file's section is raw HTML, where Markdown is not read: the path
	// is in <code>, HTML-escaped, Markdown metacharacters as references.
	refs := regexp.MustCompile(`&(#[0-9]+|lt|gt|amp|quot|#39);`)
	for i, line := range strings.Split(md, "\n") {
		if rest, ok := strings.CutPrefix(line, "<details><summary><code>"); ok {
			code, _, _ := strings.Cut(rest, "</code>")
			if bare := refs.ReplaceAllString(code, ""); strings.ContainsAny(bare, "<>&`[]()*_#!|") {
				t.Errorf("summary.md line %d: a path is not escaped in its file section: %q", i+1, line)
			}
			continue
		}
		for _, r := range line {
			if textsafe.Hidden(r) {
				t.Errorf("summary.md line %d has a raw U+%04X: %q", i+1, r, line)
			}
		}
		if line == "" {
			continue
		}
		known := false
		for _, p := range prefixes {
			known = known || strings.HasPrefix(line, p)
		}
		if !known {
			t.Errorf("summary.md line %d is not one the printer writes: %q", i+1, line)
		}
		if strings.HasPrefix(line, "#") && strings.Contains(line, "approved") {
			t.Errorf("summary.md line %d: heading from a name: %q", i+1, line)
		}
		act := tags.Replace(markup(line))
		for _, bad := range []string{"<", "[", "]", "`"} {
			if strings.Contains(act, bad) {
				t.Errorf("summary.md line %d: %q outside code spans and escapes: %q", i+1, bad, line)
			}
		}
	}
	// Each hostile path is listed on one line of its own kind: a findings
	// row and an evidence item.
	for _, want := range []string{"`a\\n# ✅ approved\\n<img src=x onerror=alert(1)>.go:5`", "- subject \\# ✅ approved \\<img"} {
		if !strings.Contains(md, want) {
			t.Errorf("summary.md lacks %q:\n%s", want, md)
		}
	}
}

// markup is the part of a Markdown line that is not a backslash-escaped
// punctuation character or a code span.
func markup(line string) string {
	var b strings.Builder
	for i := 0; i < len(line); {
		if line[i] == '\\' && i+1 < len(line) && strings.IndexByte("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", line[i+1]) >= 0 {
			i += 2
			continue
		}
		if line[i] != '`' {
			b.WriteByte(line[i])
			i++
			continue
		}
		n := 0
		for i+n < len(line) && line[i+n] == '`' {
			n++
		}
		end := -1
		for j := i + n; j < len(line); {
			if line[j] != '`' {
				j++
				continue
			}
			k := j
			for k < len(line) && line[k] == '`' {
				k++
			}
			if k-j == n {
				end = k
				break
			}
			j = k
		}
		if end < 0 {
			b.WriteString(line[i : i+n])
			i += n
			continue
		}
		i = end
	}
	return b.String()
}

// TestTerminalPolicyLine checks the policy record's line in the terminal
// summary and its section in summary.md, with hostile text in both.
func TestTerminalPolicyLine(t *testing.T) {
	b := &findings.Bundle{ReviewID: "local", Findings: []findings.Finding{}, Gate: &findings.GatePolicy{BlockOn: findings.High}}
	res := &review.Result{
		Change:  &review.Change{Root: "/w/r\u202e", Repository: "r\u202e", Range: git.Range{DiffBase: "aaaaaaaaaaaaaaaa", Head: "bbbbbbbbbbbbbbbb", Why: "base ma\x1b[2Jin"}},
		Bundle:  b,
		Session: qa.Session{},
		Audit: review.Audit{
			Triage: "bundle x",
			Notes:  []string{"note \x1b]0;title\x07"},
			Policy: &review.Policy{Source: "base", Why: "CI is set", Changes: []review.PolicyChange{
				{Kind: "ignore_file", Path: ".diffpalignore", Line: 2, Detail: "adds `*`\n# ✅ approved"},
				{Kind: "inline_ignore", Path: "a\n<img src=x>.go", Line: 7, Detail: "diffpal:ignore \u202e"},
			}},
		},
	}
	var out bytes.Buffer
	writeTerminalSummary(&out, res, map[string]string{"findings": "f.json", "session": "s.json", "summary": "summary.md", "sarif": "d.sarif"}, false, false)
	got := out.String()
	if !strings.Contains(got, "  policy from base revision (CI is set); the change edits its own review policy: 2 (see summary.md)\n") {
		t.Errorf("no policy line:\n%s", got)
	}
	if !strings.Contains(got, `  note: note \x1b]0;title\x07`) || !strings.Contains(got, `(base ma\x1b[2Jin)`) || !strings.Contains(got, `r\u202e`) {
		t.Errorf("notes, range or repository not shown escaped:\n%s", got)
	}
	if strings.ContainsAny(got, "\x1b\u202e\a") {
		t.Errorf("raw control in:\n%q", got)
	}
	res.Audit.Policy = &review.Policy{Source: "head"}
	out.Reset()
	writeTerminalSummary(&out, res, map[string]string{"summary": "summary.md"}, false, false)
	if !strings.Contains(out.String(), "  policy from head revision\n") {
		t.Errorf("no-change policy line:\n%s", out.String())
	}

	res.Audit.Policy = &review.Policy{Source: "base", Why: "CI is set", Changes: []review.PolicyChange{
		{Kind: "ignore_file", Path: ".diffpalignore", Line: 2, Detail: "adds `*`\n# ✅ approved"},
		{Kind: "config", Path: ".config/diffpal/config.yaml", Detail: "block_on: critical"},
	}}
	in := summaryInfo(res)
	if in.PolicySource != "base" || in.PolicyWhy != "CI is set" || len(in.PolicyChanges) != 2 ||
		in.PolicyChanges[0].What != ".diffpalignore:2" || in.PolicyChanges[0].Reason != "ignore_file: adds `*`\n# ✅ approved" ||
		in.PolicyChanges[1].What != ".config/diffpal/config.yaml" {
		t.Errorf("summaryInfo policy = %+v", in)
	}
}
