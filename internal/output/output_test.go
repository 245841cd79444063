package output

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/git"
	"github.com/diffpalhq/diffpal/internal/output/html"
	"github.com/diffpalhq/diffpal/internal/output/markdown"
	"github.com/diffpalhq/diffpal/internal/output/sarif"
	"github.com/diffpalhq/diffpal/internal/review"
)

func names(outs []Output) []string {
	var out []string
	for _, o := range outs {
		s := o.Format.Name()
		if o.Path != "" {
			s += "=" + o.Path
		}
		out = append(out, s)
	}
	return out
}

func TestSelect(t *testing.T) {
	reg := Builtin()
	cases := []struct {
		specs []string
		want  string
	}{
		{nil, "json session markdown sarif html"},
		{[]string{}, "json session markdown sarif html"},
		{[]string{"sarif"}, "json sarif"}, // the bundle is always written
		{[]string{"json"}, "json"},
		// The registry's order, whatever the order given.
		{[]string{"sarif", "markdown", "json"}, "json markdown sarif"},
		{[]string{" sarif=out/x.sarif ", " session"}, "json session sarif=out/x.sarif"}, // "json, sarif" from a CSV flag
		{[]string{"markdown=reports/summary.md"}, "json markdown=reports/summary.md"},
		{[]string{"sarif=a=b.sarif"}, "json sarif=a=b.sarif"},
	}
	for _, tc := range cases {
		outs, err := reg.Select(tc.specs, "--format")
		if err != nil {
			t.Errorf("%q: %v", tc.specs, err)
			continue
		}
		if got := strings.Join(names(outs), " "); got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.specs, got, tc.want)
		}
	}
}

func TestSelectErrors(t *testing.T) {
	reg := Builtin()
	cases := []struct {
		specs []string
		from  string
		want  string
	}{
		{[]string{"pdf"}, "--format", `--format: unknown format "pdf": want one of json, session, markdown, sarif, html`},
		{[]string{"SARIF"}, "review.formats in c.yaml", `review.formats in c.yaml: unknown format "SARIF": want one of json, session, markdown, sarif, html`},
		{[]string{"sarif", "sarif=x.sarif"}, "--format", "--format: format sarif is named twice"},
		{[]string{"=x"}, "--format", "--format: empty format in \"=x\""},
		{[]string{"sarif="}, "--format", "--format: sarif= names no path"},
		{[]string{"json=bundle.json"}, "--format", "--format: json=bundle.json: the findings bundle is always written to the output directory as findings.json"},
	}
	for _, tc := range cases {
		_, err := reg.Select(tc.specs, tc.from)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.specs, err, tc.want)
		}
	}
}

// fakeHTML is a format added without touching anything else: the kind of
// plug-in the registry is for.
type fakeHTML struct{}

func (fakeHTML) Name() string        { return "html" }
func (fakeHTML) DefaultFile() string { return "fake.html" }
func (fakeHTML) Write(w io.Writer, res *review.Result) error {
	_, err := io.WriteString(w, "<p>"+res.Bundle.ReviewID+"</p>\n")
	return err
}

func TestRegistryPlugIn(t *testing.T) {
	reg, err := NewRegistry([]Format{FindingsFormat{}, fakeHTML{}}, []string{JSON})
	if err != nil {
		t.Fatal(err)
	}
	outs, err := reg.Select(nil, "default")
	if err != nil || strings.Join(names(outs), " ") != "json" {
		t.Fatalf("defaults: %v %v", names(outs), err)
	}
	outs, err = reg.Select([]string{"html"}, "--format")
	if err != nil || strings.Join(names(outs), " ") != "json html" {
		t.Fatalf("html: %v %v", names(outs), err)
	}
	if Key(fakeHTML{}) != "html" || Key(FindingsFormat{}) != "findings" {
		t.Errorf("keys: %q %q", Key(fakeHTML{}), Key(FindingsFormat{}))
	}
	if got := strings.Join(reg.Keys(), ","); got != "findings,html" {
		t.Errorf("Keys = %s", got)
	}
	var b bytes.Buffer
	if err := outs[1].Format.Write(&b, testResult()); err != nil || b.String() != "<p>local</p>\n" {
		t.Errorf("write: %q %v", b.String(), err)
	}

	for _, bad := range []struct {
		formats  []Format
		defaults []string
	}{
		{[]Format{fakeHTML{}}, nil},                                 // no canonical format
		{[]Format{FindingsFormat{}, fakeHTML{}, fakeHTML{}}, nil},   // a name twice
		{[]Format{FindingsFormat{}}, []string{"html"}},              // a default that is not a format
		{[]Format{FindingsFormat{}, keyed{"findings"}}, []string{}}, // a key twice
	} {
		if _, err := NewRegistry(bad.formats, bad.defaults); err == nil {
			t.Errorf("NewRegistry(%v, %v) accepted", bad.formats, bad.defaults)
		}
	}
}

type keyed struct{ key string }

func (keyed) Name() string                          { return "other" }
func (k keyed) Key() string                         { return k.key }
func (keyed) DefaultFile() string                   { return "other" }
func (keyed) Write(io.Writer, *review.Result) error { return errors.New("unused") }

func testResult() *review.Result {
	b := &findings.Bundle{Version: "v3", ReviewID: "local", BaseSHA: "aaaaaaaaaaaaaaaa", HeadSHA: "bbbbbbbbbbbbbbbb",
		Findings: []findings.Finding{}, Gate: &findings.GatePolicy{BlockOn: findings.High}}
	return &review.Result{
		Change: &review.Change{Root: "/w/r", Repository: "r", Range: git.Range{DiffBase: "aaaaaaaaaaaaaaaa", Head: "bbbbbbbbbbbbbbbb", Why: "test"}},
		Bundle: b,
		Audit:  review.Audit{Triage: "bundle x", Files: 1},
	}
}

// TestBuiltinWriters: each built-in format writes exactly what the
// printer it adapts writes, under the file name and key it always had.
func TestBuiltinWriters(t *testing.T) {
	res := testResult()
	tool := sarif.Tool{Name: "diffpal", Version: "1.2.3", InformationURI: "https://example.com"}
	want := map[string]func(io.Writer) error{
		JSON:     func(w io.Writer) error { return findings.Encode(w, res.Bundle) },
		Session:  func(w io.Writer) error { return EncodeJSON(w, res) },
		Markdown: func(w io.Writer) error { return markdown.Write(w, res.Bundle, SummaryInfo(res)) },
		SARIF:    func(w io.Writer) error { return sarif.Encode(w, sarif.Convert(res.Bundle, tool)) },
		HTML:     func(w io.Writer) error { return html.Write(w, ReportOf(res)) },
	}
	files := map[string]string{JSON: "findings.json", Session: "qa-session.json", Markdown: "summary.md", SARIF: "diffpal.sarif", HTML: "report.html"}
	keys := map[string]string{JSON: "findings", Session: "session", Markdown: "summary", SARIF: "sarif", HTML: "report"}
	reg := Builtin()
	for _, name := range reg.Names() {
		f, _ := reg.Lookup(name)
		if name == SARIF {
			f = SARIFFormat{Tool: tool}
		}
		var got, exp bytes.Buffer
		if err := f.Write(&got, res); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := want[name](&exp); err != nil {
			t.Fatal(err)
		}
		if got.String() != exp.String() || got.Len() == 0 {
			t.Errorf("%s writes something else:\n%s\nwant:\n%s", name, got.String(), exp.String())
		}
		if f.DefaultFile() != files[name] || Key(f) != keys[name] {
			t.Errorf("%s: file %q key %q", name, f.DefaultFile(), Key(f))
		}
	}
	if got := strings.Join(reg.Defaults(), ","); got != "json,session,markdown,sarif,html" {
		t.Errorf("defaults = %s", got)
	}
	if in := SummaryInfo(res); in.Range != "aaaaaaaaaaaa..bbbbbbbbbbbb" || in.Repository != "r" {
		t.Errorf("summary info = %+v", in)
	}
}
