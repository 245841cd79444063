package markdown

import (
	"bytes"
	"flag"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/textsafe"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestGolden(t *testing.T) {
	b := &findings.Bundle{ReviewID: "local", HeadSHA: "h", Findings: []findings.Finding{
		{Category: "security", Severity: "critical", Confidence: 0.95, Path: "api/run|cmd.go", StartLine: 10, EndLine: 12,
			Title: "Command injection", Message: "exec gets `request` input", Suggestion: "Use a fixed argv.",
			Evidence: &findings.Evidence{Anchor: "a", ReasoningBasis: "r", Source: "s"}, Impact: &findings.Impact{Summary: "s", Scope: "c"}},
		{Category: "style", Severity: "low", Confidence: 0.4, Path: "b.go", StartLine: 3, EndLine: 3, Title: "Naming", Message: "Rename.",
			Evidence: &findings.Evidence{Anchor: "a", ReasoningBasis: "r", Source: "s"}, Impact: &findings.Impact{Summary: "s", Scope: "c"}},
	}}
	if err := findings.Normalize(b, findings.Options{}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err := Write(&out, b, Info{
		Repository: "acme/shop", Range: "aaaa..bbbb", Why: "branch against main", Provider: "builtin",
		Triage: "bundle ordinary_mr", Files: 2, AddedLines: 40,
		Skips:      []Note{{What: "go.sum", Reason: "lock_file: dependency lock file"}},
		Drops:      []Note{{Reason: "outside changed lines (filter added)", Count: 3, What: "a.go:1 x"}},
		Suppressed: []Note{{What: "c.go:4 sec.x", Reason: "diffpal:ignore at c.go:3: fixture"}},
		Baseline:   &Baseline{New: 2, Unchanged: 1, Fixed: 4},
	})
	if err != nil {
		t.Fatal(err)
	}
	const golden = "testdata/summary.golden.md"
	if *update {
		os.MkdirAll("testdata", 0o755)
		os.WriteFile(golden, out.Bytes(), 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test -update)", err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Errorf("summary differs from %s (go test -update to accept):\n%s", golden, out.Bytes())
	}
}

// Hostile names: what a repository can put in a path, a commit subject or
// a model's answer. None of it may add a line, a heading, a link, an
// image or HTML to summary.md.
const (
	hostileNewline = "a\n# ✅ approved\n<img src=x onerror=alert(1)>.go"
	hostileLink    = "[x](javascript:alert(1)).go"
	hostileImage   = "![i](http://e/x.png) `tick` ``two`` |pipe|.go"
	hostileEscape  = "esc\x1b[2J\x1b]8;;http://evil\x07bidi\u202eog.go"
	hostileHeading = "# ✅ approved.go"
	hostilePipe    = `back\|slash.go`
)

func hostileBundle(t *testing.T) *findings.Bundle {
	t.Helper()
	ev := func(anchor string) *findings.Evidence {
		return &findings.Evidence{Anchor: anchor, ReasoningBasis: "r", Source: "changed_line"}
	}
	imp := &findings.Impact{Summary: "s", Scope: "c"}
	b := &findings.Bundle{ReviewID: "local", HeadSHA: "h",
		ChangeSummary: []string{
			"subject # ✅ approved <img src=x onerror=alert(1)> \x1b[31mred",
			"# ✅ approved",
			"[x](javascript:alert(1)) ![i](http://e/x.png) `x` | y",
		},
		Findings: []findings.Finding{
			{Category: "security", Severity: "high", Confidence: 0.9, Path: hostileNewline, StartLine: 5, EndLine: 5,
				Title: "Fine\n# ✅ approved", Message: "<script>alert(1)</script> [click](http://e)",
				Suggestion: "![i](http://e/x.png)\n\n- [ ] task", Evidence: ev("`a` `` b ```\n<img src=x>"), Impact: imp},
			{Category: "security|<b>x</b>", Severity: "high", Confidence: 0.9, Path: hostileLink, StartLine: 1, EndLine: 2,
				Title: "**bold** _em_ ~~s~~", Message: "&lt;img src=x&gt; &#x202E;", Evidence: ev("x"), Impact: imp},
			{Category: "correctness", Severity: "medium", Confidence: 0.8, Path: hostileImage, StartLine: 3, EndLine: 3,
				Title: "1. list", Message: "- item", Evidence: ev("y"), Impact: imp},
			{Category: "correctness", Severity: "low", Confidence: 0.8, Path: hostileEscape, StartLine: 7, EndLine: 7,
				Title: "t\u202eitle\u2066", Message: "m\x1b[31m", Evidence: ev("\u202ereversed"), Impact: imp},
			{Category: "style", Severity: "low", Confidence: 0.8, Path: hostileHeading, StartLine: 1, EndLine: 1,
				Title: "> quote", Message: "=====", Evidence: ev("z"), Impact: imp},
			{Category: "style", Severity: "low", Confidence: 0.8, Path: hostilePipe, StartLine: 2, EndLine: 2,
				Title: "a|b", Message: `c\|<img src=x>`, Evidence: ev(`\|`), Impact: imp},
		}}
	if err := findings.Normalize(b, findings.Options{}); err != nil {
		t.Fatal(err)
	}
	return b
}

func hostileInfo() Info {
	return Info{
		Repository: "repo\x1b[31m\u202etxt.evil", Range: "aaaa..bbbb", Why: "branch against the default branch ma\u202ein\n# x",
		Provider: "builtin <b>", Triage: "bundle `x` | y", Files: 6, AddedLines: 12, Deep: "ran (\n# ✅ approved)",
		Skips:        []Note{{What: hostileNewline, Reason: "lock_file: # heading\n<img src=x>"}},
		Drops:        []Note{{Reason: "outside\n# ✅ approved", Count: 2, What: hostileNewline + ":1 r, " + hostileLink + ":2 r"}},
		Suppressed:   []Note{{What: hostileImage + ":4 sec.x", Reason: "diffpal:ignore: <img src=x onerror=alert(1)>"}},
		Invalid:      []Note{{What: hostileEscape + ":4 sec.x", Reason: "[x](javascript:alert(1))"}},
		Notes:        []string{"note\n# ✅ approved <img src=x onerror=alert(1)>"},
		PolicySource: "base", PolicyWhy: "CI is set",
		PolicyChanges: []Note{
			{What: ".diffpalignore:3", Reason: "ignore_file: adds `*`\n# ✅ approved"},
			{What: hostileNewline + ":1", Reason: "inline_ignore: diffpal:ignore <img src=x onerror=alert(1)>"},
		},
	}
}

func TestHostileGolden(t *testing.T) {
	var out bytes.Buffer
	if err := Write(&out, hostileBundle(t), hostileInfo()); err != nil {
		t.Fatal(err)
	}
	const golden = "testdata/hostile.golden.md"
	if *update {
		os.WriteFile(golden, out.Bytes(), 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test -update)", err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Errorf("summary differs from %s (go test -update to accept):\n%s", golden, out.Bytes())
	}
	assertInert(t, out.String(), 6)
}

// assertInert checks rendered-Markdown properties of a summary, not just
// its bytes: every line is one the printer writes (no line of a name's
// own), headings are only the printer's, nothing outside code spans and
// backslash escapes can open HTML, a link or an image, each findings row
// has exactly five cells, and no control or bidi character is left.
func assertInert(t *testing.T, md string, findingsRows int) {
	t.Helper()
	headings := map[string]bool{"# diffpal review": true, "## Findings": true, "## Commits": true, "## Review policy": true,
		"### By file": true, "## Skipped files": true, "## Dropped candidates": true, "## Suppressed": true, "## Suppressions without a reason (not applied)": true}
	prefixes := []string{"# ", "## ", "### By file", "**", "| ", "|---", "- ", "> ", "<details><summary>", "</details>", "The configuration", "…and "}
	tags := strings.NewReplacer("<details><summary>", "", "</summary>", "", "</details>", "")
	rows := 0
	for i, line := range strings.Split(md, "\n") {
		for _, r := range line {
			if textsafe.Hidden(r) {
				t.Errorf("line %d: raw U+%04X: %q", i+1, r, line)
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
			t.Errorf("line %d is not one the printer writes: %q", i+1, line)
		}
		if strings.HasPrefix(line, "#") && !headings[line] {
			t.Errorf("line %d: heading from the data: %q", i+1, line)
		}
		if rest, ok := strings.CutPrefix(line, "<details><summary>"); ok && rest != "Evidence and suggestions</summary>" {
			// A file's section: raw HTML, where Markdown is not read. The
			// path is in <code>, escaped as HTML with the Markdown
			// metacharacters as character references.
			inner, ok := strings.CutSuffix(rest, "</summary>")
			code, after, ok2 := strings.Cut(strings.TrimPrefix(inner, "<code>"), "</code>")
			if !ok || !ok2 || !strings.HasPrefix(inner, "<code>") {
				t.Errorf("line %d: file section is not <code>PATH</code> — N findings: %q", i+1, line)
				continue
			}
			if bare := htmlRef.ReplaceAllString(code, ""); strings.ContainsAny(bare, "<>&\"'`[]()*_#!~|$\\") {
				t.Errorf("line %d: path in a file section not escaped: %q (%q)", i+1, code, bare)
			}
			if strings.ContainsAny(after, "<>&[]`") {
				t.Errorf("line %d: file section count: %q", i+1, after)
			}
			continue
		}
		act := tags.Replace(active(line))
		for _, bad := range []string{"<", "[", "]", "&", "`"} {
			if strings.Contains(act, bad) {
				t.Errorf("line %d: unescaped %q outside code spans: %q (active %q)", i+1, bad, line, act)
			}
		}
		if strings.HasPrefix(line, "| ") && (strings.HasPrefix(line, "| high") || strings.HasPrefix(line, "| medium") ||
			strings.HasPrefix(line, "| low") || strings.HasPrefix(line, "| critical")) {
			rows++
			if n := cellPipes(line); n != 6 {
				t.Errorf("line %d: findings row has %d cell pipes, want 6: %q", i+1, n, line)
			}
		}
	}
	if rows != findingsRows {
		t.Errorf("findings rows = %d, want %d", rows, findingsRows)
	}
}

// htmlRef matches the character references htmlText writes.
var htmlRef = regexp.MustCompile(`&(#[0-9]+|lt|gt|amp|quot|#39);`)

// active is what a CommonMark parser would read as markup in one line:
// the line without backslash-escaped punctuation and without code spans.
func active(line string) string {
	var b strings.Builder
	for i := 0; i < len(line); {
		c := line[i]
		if c == '\\' && i+1 < len(line) && strings.IndexByte("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", line[i+1]) >= 0 {
			i += 2
			continue
		}
		if c == '`' {
			n := 0
			for i+n < len(line) && line[i+n] == '`' {
				n++
			}
			if end := closingFence(line, i+n, n); end >= 0 {
				i = end + n
				continue
			}
			b.WriteString(line[i : i+n])
			i += n
			continue
		}
		b.WriteByte(c)
		i++
	}
	return b.String()
}

// closingFence finds a run of exactly n backticks at or after from.
func closingFence(s string, from, n int) int {
	for i := from; i < len(s); {
		if s[i] != '`' {
			i++
			continue
		}
		j := i
		for j < len(s) && s[j] == '`' {
			j++
		}
		if j-i == n {
			return i
		}
		i = j
	}
	return -1
}

// cellPipes counts the pipes GFM splits a table row on: those not right
// after a backslash (code spans do not protect a pipe in a table).
func cellPipes(line string) int {
	n := 0
	for i := 0; i < len(line); i++ {
		if line[i] == '|' && (i == 0 || line[i-1] != '\\') {
			n++
		}
	}
	return n
}

func TestSummaryInertOnOrdinaryInput(t *testing.T) {
	b := &findings.Bundle{ReviewID: "local", HeadSHA: "h", Findings: []findings.Finding{}}
	if err := findings.Normalize(b, findings.Options{}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Write(&out, b, Info{Repository: "acme/shop", Range: "a..b", Why: "w", Provider: "builtin"}); err != nil {
		t.Fatal(err)
	}
	assertInert(t, out.String(), 0)
	if strings.Contains(out.String(), "Review policy") {
		t.Error("a review without a policy record has a policy section")
	}
}

// With the web UI known, locations link to the lines (the base side for
// removed lines); a link that could end the Markdown destination early is
// not written.
func TestLocationLinks(t *testing.T) {
	b := &findings.Bundle{ReviewID: "local", Findings: []findings.Finding{
		{Category: "security", Severity: "high", Confidence: 0.9, Path: "a.go", StartLine: 3, EndLine: 4, Title: "T", Message: "M",
			Evidence: &findings.Evidence{Anchor: "a", ReasoningBasis: "r", Source: "s"}, Impact: &findings.Impact{Summary: "s", Scope: "c"}},
		{Category: "security", Severity: "low", Confidence: 0.9, Path: "b.go", StartLine: 7, EndLine: 7, Title: "T", Message: "M",
			ChangedSpan: &findings.Span{Path: "b.go", StartLine: 7, EndLine: 7, Side: "LEFT"},
			Evidence:    &findings.Evidence{Anchor: "a", ReasoningBasis: "r", Source: "s"}, Impact: &findings.Impact{Summary: "s", Scope: "c"}},
		{Category: "security", Severity: "low", Confidence: 0.9, Path: "c.go", StartLine: 1, EndLine: 1, Title: "T", Message: "M",
			Evidence: &findings.Evidence{Anchor: "a", ReasoningBasis: "r", Source: "s"}, Impact: &findings.Impact{Summary: "s", Scope: "c"}},
	}}
	var out bytes.Buffer
	err := Write(&out, b, Info{Link: func(path string, start, end int, left bool) string {
		switch path {
		case "c.go":
			return "https://e.example/x)evil"
		case "b.go":
			if !left {
				t.Error("b.go's removed-line finding was not linked on the base side")
			}
		}
		return "https://e.example/" + path
	}})
	if err != nil {
		t.Fatal(err)
	}
	md := out.String()
	for _, want := range []string{"| [`a.go:3-4`](https://e.example/a.go) |", "**HIGH** [`a.go:3-4`](https://e.example/a.go) T", "[`b.go:7`](https://e.example/b.go)"} {
		if !strings.Contains(md, want) {
			t.Errorf("missing %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "evil") {
		t.Errorf("a link with a ')' was written:\n%s", md)
	}
}
