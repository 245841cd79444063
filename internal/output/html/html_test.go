package html

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files (or UPDATE_GOLDEN=1)")

func updating() bool { return *update || os.Getenv("UPDATE_GOLDEN") == "1" }

// smallReport is the golden file's report: two files, three findings,
// one skip, a drop, a suppression, a baseline and a session.
func smallReport() *Report {
	return &Report{
		Title:      "diffpal review",
		Repository: "acme/shop",
		Range:      "aaaa111..bbbb222",
		Why:        "branch against main",
		Provider:   "builtin",
		Version:    "v0.9.0",
		Decision:   "fail",
		Findings: []Finding{
			{StableID: "dp-style-0002", RuleID: "style.naming", Category: "style", Severity: "low", Confidence: 0.4,
				Profile: "style", Path: "b.go", StartLine: 3, EndLine: 3, Title: "Naming", Message: "Rename x to count.",
				Snippet:  &Snippet{Start: 2, Lines: []string{"func f() {", "\tx := 0", "}"}, MarkStart: 3, MarkEnd: 3},
				Baseline: "unchanged"},
			{StableID: "dp-sec-0001", RuleID: "sec.exec", Category: "security", Severity: "critical", Blocking: true,
				Confidence: 0.95, Profile: "security", Path: "api/run.go", StartLine: 10, EndLine: 12,
				Title: "Command injection", Message: "exec gets request input.", Impact: "Remote code execution.",
				Evidence: "line 11: exec.Command(\"sh\", \"-c\", r.FormValue(\"cmd\"))", Suggestion: "Use a fixed argv.\nValidate the input.",
				Snippet: &Snippet{Start: 9, Lines: []string{"func run(r *http.Request) {", "\tcmd := r.FormValue(\"cmd\")",
					"\texec.Command(\"sh\", \"-c\", cmd).Run()", "\treturn", "}"}, MarkStart: 10, MarkEnd: 12},
				Link: "https://git.example.com/acme/shop/blob/bbbb222/api/run.go#L10-L12", Baseline: "new"},
			{StableID: "dp-corr-0003", Category: "correctness", Severity: "medium", Confidence: 0.7, Profile: "correctness",
				Path: "api/run.go", StartLine: 20, EndLine: 20, Side: "LEFT", Title: "Removed nil check",
				Message: "The nil check on r went away.", Baseline: "new"},
		},
		Files:      []File{{Path: "b.go", Status: "modified", Findings: 1}, {Path: "api/run.go", Status: "modified", Findings: 2}},
		Skips:      []Note{{What: "go.sum", Reason: "lock_file: dependency lock file"}},
		Drops:      []Note{{What: "a.go:1 x", Reason: "outside changed lines (filter added)", Count: 3}},
		Suppressed: []Note{{What: "c.go:4 sec.x", Reason: "diffpal:ignore at c.go:3: fixture"}},
		Baseline:   &Baseline{New: 2, Unchanged: 1, Fixed: 1, FixedList: []Note{{What: "old.go:7 dp-sec-0009", Reason: "SQL built by concatenation"}}},
		Session: &Session{ID: "qa-1", Bundle: "ordinary_mr: 2 files, 40 added lines",
			Profiles: []Profile{{Name: "security", Status: "ok", Candidates: 2, Summary: "one exec sink"},
				{Name: "style", Status: "ok", Candidates: 1}, {Name: "correctness", Status: "ok", Candidates: 1}},
			Decisions: []Decision{{CandidateID: "c1", Profile: "security", Title: "Command injection", Decision: "accepted", Rationale: "input reaches sh -c"},
				{CandidateID: "c2", Profile: "security", Title: "Maybe SSRF", Decision: "rejected", Rationale: "URL is a constant"}},
			Deep: "ran: a critical security candidate"},
		Notes: []string{"The provider answered in 3 turns."},
	}
}

func render(t testing.TB, r *Report) string {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestGolden(t *testing.T) {
	out := render(t, smallReport())
	const golden = "testdata/report.golden.html"
	if updating() {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test -update or UPDATE_GOLDEN=1)", err)
	}
	if out != string(want) {
		t.Errorf("report differs from %s (go test ./internal/output/html -update to accept)", golden)
	}
	if again := render(t, smallReport()); again != out {
		t.Error("two renders of one report differ")
	}
}

func TestOrderAndCounts(t *testing.T) {
	r := smallReport()
	// Order in the input does not matter.
	r.Findings[0], r.Findings[2] = r.Findings[2], r.Findings[0]
	d := readIsland(t, render(t, r))
	var got []string
	for _, f := range d.Findings {
		got = append(got, fmt.Sprintf("%s:%d:%s", f.Path, f.Start, f.Severity))
	}
	want := []string{"api/run.go:10:critical", "api/run.go:20:medium", "b.go:3:low"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("order = %v, want %v", got, want)
	}
	if out := render(t, r); out != render(t, smallReport()) {
		t.Error("input order changes the output")
	}
}

func TestSelfContained(t *testing.T) {
	out := render(t, smallReport())
	// The only URL in the page is the finding's link, inside the data
	// island (the script sets it as an href with rel=noopener noreferrer).
	rest := strings.ReplaceAll(out, `https://git.example.com/acme/shop/blob/bbbb222/api/run.go#L10-L12`, "")
	for _, bad := range []string{"http://", "https://", "//cdn", "@import", "url(", " src=", "<link", "@font-face"} {
		if strings.Contains(rest, bad) {
			t.Errorf("page contains %q", bad)
		}
	}
	for _, want := range []string{
		`<meta http-equiv="Content-Security-Policy" content="default-src 'none';`,
		"<!DOCTYPE html>", "<header", "<main>", "<section", "prefers-color-scheme: dark", "@media print",
		`<script type="application/json" id="data">`, "<noscript>", `<th scope="col">`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if !strings.Contains(js, `"noopener noreferrer"`) {
		t.Error("script does not set rel=noopener noreferrer on links")
	}
	if strings.Contains(js, "innerHTML") || strings.Contains(js, "insertAdjacentHTML") || strings.Contains(js, "document.write") {
		t.Error("script parses strings as HTML")
	}
}

func TestDecisionDerived(t *testing.T) {
	r := &Report{}
	if !strings.Contains(render(t, r), `id="decision">pass<`) {
		t.Error("empty report is not pass")
	}
	r.Findings = []Finding{{Severity: "low", Path: "a", Title: "t"}}
	if !strings.Contains(render(t, r), `id="decision">warn<`) {
		t.Error("non-blocking finding is not warn")
	}
	r.Findings[0].Blocking = true
	if !strings.Contains(render(t, r), `id="decision">fail<`) {
		t.Error("blocking finding is not fail")
	}
	if err := Write(&bytes.Buffer{}, nil); err == nil {
		t.Error("nil report: no error")
	}
}

func TestSafeLink(t *testing.T) {
	for in, want := range map[string]string{
		"https://git.example.com/a/b#L1":   "https://git.example.com/a/b#L1",
		"http://h/x?a=1&b=2":               "http://h/x?a=1&b=2",
		"  https://h/x ":                   "https://h/x",
		"javascript:alert(1)":              "",
		"JavaScript:alert(1)":              "",
		" javascript:alert(1)":             "",
		"java\tscript:alert(1)":            "",
		"data:text/html,<script>":          "",
		"vbscript:x":                       "",
		"//evil.example/x":                 "",
		"/relative":                        "",
		"https:evil":                       "",
		"https://user:pw@h/x":              "",
		"https://h/\"onmouseover=alert(1)": "",
		"https://h/\u202ex":                "",
		"file:///etc/passwd":               "",
		"ftp://h/x":                        "",
	} {
		if got := safeLink(in); got != want {
			t.Errorf("safeLink(%q) = %q, want %q", in, got, want)
		}
	}
}

// Hostile text: what a repository or a model can put in a path, a title,
// a message or a snippet.
const (
	hostileImg    = `<img src=x onerror=alert(1)>`
	hostileScript = `</script><script>alert(1)</script>`
	hostileBidi   = "evil\u202eog.go"
	hostileLink   = "javascript:alert(1)"
)

func hostileReport() *Report {
	return &Report{
		Title:      "review " + hostileImg,
		Repository: "acme/" + hostileScript,
		Range:      "a..b\n# approved",
		Why:        hostileImg,
		Decision:   "warn" + hostileImg,
		Findings: []Finding{
			{StableID: "id-" + hostileScript, RuleID: hostileImg, Category: "cat " + hostileImg, Severity: "high",
				Profile: "prof" + hostileScript, Path: hostileBidi, StartLine: 1, EndLine: 2,
				Title: "title " + hostileImg + "\nsecond line", Message: hostileScript + "\n<!-- x",
				Evidence: "ev \u2028 sep \u2029 para " + hostileImg, Impact: "imp & <b>bold</b>", Suggestion: hostileScript,
				Snippet: &Snippet{Start: 1, Lines: []string{hostileImg, hostileScript, "\x1b[31mred\tkept tab"}, MarkStart: 1, MarkEnd: 1},
				Link:    hostileLink},
			{StableID: "id2", Category: "security", Severity: "low", Path: "img/" + hostileImg + ".go", StartLine: 3, EndLine: 3,
				Title: "ok", Link: "data:text/html,<script>alert(1)</script>"},
		},
		Files:      []File{{Path: hostileImg, Status: hostileScript, Findings: 1}},
		Skips:      []Note{{What: hostileScript, Reason: hostileImg}},
		Drops:      []Note{{What: hostileImg, Reason: hostileScript, Count: 2}},
		Suppressed: []Note{{What: hostileBidi, Reason: hostileImg}},
		Baseline:   &Baseline{New: 1, FixedList: []Note{{What: hostileImg, Reason: hostileScript}}},
		Session: &Session{ID: hostileImg, Bundle: hostileScript, Deep: hostileImg,
			Profiles:  []Profile{{Name: hostileImg, Status: hostileScript, Summary: hostileImg}},
			Decisions: []Decision{{CandidateID: hostileImg, Profile: hostileScript, Title: hostileImg, Decision: hostileScript, Rationale: hostileImg}}},
		Notes: []string{hostileImg, hostileScript},
	}
}

var (
	tagRe    = regexp.MustCompile(`(?i)<\s*/?\s*([a-z][a-z0-9-]*)`)
	attrRe   = regexp.MustCompile(`(?i)<[a-z][a-z0-9]*(\s+[a-z-]+(="[^"]*"|='[^']*'|=[^\s>"']*)?)*\s+on[a-z]+\s*=`)
	allowTag = map[string]bool{}
)

func init() {
	for _, t := range strings.Fields(`html head meta title style body a header h1 h2 h3 dl div dt dd code span strong ul li nav main section
		svg rect text g details summary table thead tbody tr th td p form fieldset legend label select option input button kbd
		noscript footer caption script`) {
		allowTag[t] = true
	}
}

func TestHostile(t *testing.T) {
	out := render(t, hostileReport())

	// No tag but the template's own; no <img>, no second <script>. The
	// inline script is the package's constant (js) and is left out.
	markup := strings.Replace(out, "<script>"+js+"</script>", "<script></script>", 1)
	if markup == out {
		t.Fatal("inline script not found verbatim")
	}
	for _, m := range tagRe.FindAllStringSubmatch(markup, -1) {
		if !allowTag[strings.ToLower(m[1])] {
			t.Errorf("unexpected tag <%s in output", m[1])
		}
	}
	if n := strings.Count(out, "<script"); n != 2 {
		t.Errorf("%d <script elements, want 2 (data island and the script)", n)
	}
	if n := strings.Count(out, "</script>"); n != 2 {
		t.Errorf("%d </script> end tags, want 2", n)
	}
	if attrRe.MatchString(markup) {
		t.Errorf("an on* attribute inside a tag: %q", attrRe.FindString(markup))
	}
	for _, bad := range []string{"<img", "<b>", "javascript:", "\u202e", "\u2028", "\u2029", "\x1b", "data:text"} {
		if strings.Contains(out, bad) {
			t.Errorf("output contains %q raw", bad)
		}
	}
	// The text is there, escaped.
	for _, want := range []string{"&lt;img src=x onerror=alert(1)&gt;", `&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;`,
		`evil\u202eog.go`, `a..b\n# approved`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}

	d := readIsland(t, out)
	if len(d.Findings) != 2 {
		t.Fatalf("%d findings in the island", len(d.Findings))
	}
	f := d.Findings[0]
	if f.Path != `evil\u202eog.go` || f.Title != `title `+hostileImg+`\nsecond line` {
		t.Errorf("path %q, title %q", f.Path, f.Title)
	}
	if f.Message != hostileScript+"\n<!-- x" {
		t.Errorf("message %q: the line break should stay", f.Message)
	}
	if f.Evidence != `ev \u2028 sep \u2029 para `+hostileImg {
		t.Errorf("evidence %q", f.Evidence)
	}
	if f.Snippet.Lines[2] != "\\x1b[31mred\tkept tab" {
		t.Errorf("snippet line %q", f.Snippet.Lines[2])
	}
	if f.Link != "" || d.Findings[1].Link != "" {
		t.Errorf("unsafe links kept: %q %q", f.Link, d.Findings[1].Link)
	}
}

// readIsland returns the page's data island, decoded, after checking that it
// holds no raw <, >, & or line separator.
func readIsland(t *testing.T, page string) struct {
	Findings []jsFinding `json:"findings"`
} {
	t.Helper()
	const open = `<script type="application/json" id="data">`
	i := strings.Index(page, open)
	if i < 0 {
		t.Fatal("no data island")
	}
	rest := page[i+len(open):]
	j := strings.Index(rest, "</script>")
	if j < 0 {
		t.Fatal("data island not closed")
	}
	raw := rest[:j]
	if strings.ContainsAny(raw, "<>&\u2028\u2029") {
		t.Errorf("data island holds a raw <, >, & or separator")
	}
	var d struct {
		Findings []jsFinding `json:"findings"`
	}
	if err := json.Unmarshal([]byte(raw), &d); err != nil {
		t.Fatalf("data island: %v", err)
	}
	return d
}

// bigReport is n findings over n/20 files, every severity and a handful
// of categories and profiles, each with a snippet.
func bigReport(n int) *Report {
	sevs := []string{"critical", "high", "medium", "low"}
	cats := []string{"security", "correctness", "performance", "style", "maintainability", "testing"}
	r := &Report{Title: "big", Repository: "acme/big", Range: "a..b", Decision: "fail"}
	for i := 0; i < n; i++ {
		path := fmt.Sprintf("pkg/p%03d/file%02d.go", i/200, (i/20)%10)
		r.Findings = append(r.Findings, Finding{
			StableID: fmt.Sprintf("dp-%05d", i), RuleID: fmt.Sprintf("rule.%d", i%37), Category: cats[i%len(cats)],
			Severity: sevs[i%len(sevs)], Blocking: i%4 == 0, Confidence: float64(i%100) / 100, Profile: cats[i%3],
			Path: path, StartLine: 10 + i%50, EndLine: 11 + i%50,
			Title:    fmt.Sprintf("Finding %d needle%d", i, i%10),
			Message:  "Something is not right here; this text is long enough to be like a real message from a model.",
			Evidence: "The evidence line.", Impact: "The impact.", Suggestion: "The suggestion.",
			Snippet: &Snippet{Start: 8 + i%50, Lines: []string{"func f() {", "\tx := g()", "\tif x != nil {", "\t\treturn x", "\t}", "}"},
				MarkStart: 10 + i%50, MarkEnd: 11 + i%50},
		})
		if i%20 == 0 {
			r.Files = append(r.Files, File{Path: path, Status: "modified", Findings: 20})
		}
	}
	return r
}

func BenchmarkWrite10k(b *testing.B) {
	r := bigReport(10000)
	for b.Loop() {
		if err := Write(&bytes.Buffer{}, r); err != nil {
			b.Fatal(err)
		}
	}
}
