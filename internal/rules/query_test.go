package rules

import (
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/diffpalhq/diffpal/internal/syntax"
)

func TestQueryRuleMultiLineAndMasking(t *testing.T) {
	data, err := os.ReadFile("testdata/query_pack.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := LoadPacks(nil, [][]byte{data})
	if err != nil {
		t.Fatal(err)
	}
	// Only the argument line of a multi-line call changed: one finding, at
	// the changed line, for the whole call.
	before := "import os\nos.system(\n    'ls')\n"
	after := "import os\nos.system(\n    'ls ' + x)\n"
	hits := s.MatchFile(DiffFile("a.py", []byte(before), []byte(after)), nil)
	if len(hits) != 1 || hits[0].StartLine != 3 || hits[0].RuleID != "t.os-system" {
		t.Fatalf("hits = %+v, want one t.os-system at line 3", hits)
	}
	// In a comment or a string the call is not code.
	hits = s.MatchFile(DiffFile("a.py", nil, []byte("# os.system('x')\ns = \"os.system(1)\"\n")), nil)
	if len(hits) != 0 {
		t.Fatalf("comment/string: hits = %+v, want none", hits)
	}
	// A language without a query for it is not matched.
	if hits := s.MatchFile(DiffFile("a.rb", nil, []byte("os.system('x')\n")), nil); len(hits) != 0 {
		t.Fatalf("ruby: hits = %+v", hits)
	}
}

func TestQueryRuleErrors(t *testing.T) {
	base := `pack: t
rules:
  - id: t.q
    profile: security_reviewer
    category: security
    severity: low
    confidence: 0.5
    title: t
    message: m
    impact: i
    suggestion: s
`
	for _, c := range []struct{ extra, want string }{
		{"    query:\n      python: '(call) @x'\n", "query.python: needs a @match capture"},
		{"    query:\n      python: '(no_such_node) @match'\n", "query.python"},
		{"    query:\n      cobol: '(x) @match'\n", `no grammar for language "cobol"`},
		{"    scope: removed\n    query:\n      python: '(call) @match'\n", "only valid with scope: added"},
	} {
		_, err := LoadPacks([]string{"p.yaml"}, [][]byte{[]byte(base + c.extra)})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "rule t.q") {
			t.Errorf("%q: err = %v, want one naming rule t.q and %q", c.extra, err, c.want)
		}
	}
}

// The embedded packs' queries compile on first use; this compiles every
// one, so a broken built-in query fails here, naming the rule.
func TestBuiltinQueriesCompile(t *testing.T) {
	n := 0
	for _, r := range mustBuiltin(t).Rules() {
		if r.c.query == nil {
			continue
		}
		for g, src := range r.c.query.byGrammar {
			if _, err := syntax.CachedQuery(g, src); err != nil {
				t.Errorf("%s: query for %s: %v", r.ID, g, err)
			}
			n++
		}
	}
	for _, r := range mustBuiltin(t).Rules() {
		if r.c.flow == nil {
			continue
		}
		for _, m := range []map[string]string{r.c.flow.sinks, r.c.flow.sources} {
			for g, src := range m {
				if _, err := syntax.CachedQuery(g, src); err != nil {
					t.Errorf("%s: flow query for %s: %v", r.ID, g, err)
				}
				n++
			}
		}
	}
	if n == 0 {
		t.Fatal("no built-in query rules")
	}
}

// @report places the finding on the sink while filters read the whole
// @match (the function): a guard elsewhere in the function drops it.
func TestQueryReportCapture(t *testing.T) {
	data, err := os.ReadFile("testdata/query_pack.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := LoadPacks(nil, [][]byte{data})
	if err != nil {
		t.Fatal(err)
	}
	src := "def load(s):\n    x = 1\n    parse_xml(s)\n"
	hits := s.MatchFile(DiffFile("a.py", nil, []byte(src)), nil)
	if len(hits) != 1 || hits[0].RuleID != "t.xml-no-guard" || hits[0].StartLine != 3 {
		t.Fatalf("hits = %+v, want t.xml-no-guard at line 3", hits)
	}
	// Only line 2 changed: the sink is not a changed line, nothing reported.
	before := "def load(s):\n    parse_xml(s)\n"
	after := "def load(s):\n    y = 2\n    parse_xml(s)\n"
	if hits := s.MatchFile(DiffFile("a.py", []byte(before), []byte(after)), nil); len(hits) != 0 {
		t.Fatalf("unchanged sink: hits = %+v", hits)
	}
	guarded := "def load(s):\n    disallowDoctype()\n    parse_xml(s)\n"
	if hits := s.MatchFile(DiffFile("a.py", nil, []byte(guarded)), nil); len(hits) != 0 {
		t.Fatalf("guarded: hits = %+v", hits)
	}
}

func TestQueryLiterals(t *testing.T) {
	for _, c := range []struct {
		q    string
		want string
	}{
		// one pattern: the most selective predicate's literals
		{`(call function: (identifier) @f (#eq? @f "os") (#match? @f "^(system|popen)$")) @match`, "popen,system"},
		// alternatives: one literal set per pattern
		{`(a (#eq? @x "alpha")) @match (b (#eq? @y "beta")) @match`, "alpha,beta"},
		// a pattern without a literal: no prefilter
		{`(a (#eq? @x "alpha")) @match (b) @match`, ""},
		// an alternation: every branch's literals
		{`[(a (#eq? @x "exec")) (b (#eq? @y "spawn"))] @match`, "exec,spawn"},
		// strings and comments do not split forms
		{"; a comment (with parens\n(a (#eq? @x \"x)y\")) @match", "x)y"},
	} {
		got := queryLiterals(c.q)
		sort.Strings(got)
		if strings.Join(got, ",") != c.want {
			t.Errorf("queryLiterals(%q) = %v, want %s", c.q, got, c.want)
		}
	}
}

// A syntax rule with no literal to look for has every file of its
// languages parsed (measured: one such rule cost the review of a large
// change 30%). Every built-in one needs a literal from its query, its
// value_pattern or an explicit prefilter.
func TestSyntaxRulesHaveAPrefilter(t *testing.T) {
	for _, r := range mustBuiltin(t).Rules() {
		if r.c.query == nil && r.c.flow == nil {
			continue
		}
		if r.c.synLits == nil && r.c.valLits == nil {
			t.Errorf("%s: no literal prefilter (add prefilter: [...] naming what every match contains)", r.ID)
		}
	}
}

// TestQueryGrammarLiterals: an explicit prefilter states literals for
// every language at once; a file is parsed for the rule only when its
// own grammar's query literals occur in it too (anywhere in the file: a
// predicate's capture may stand far above the change). A grammar whose
// query has a pattern without literals is not narrowed. Flow rules' sink
// queries likewise.
func TestQueryGrammarLiterals(t *testing.T) {
	pack := `pack: t
rules:
  - id: t.cookie
    profile: security_reviewer
    category: security
    severity: medium
    confidence: 0.8
    title: t
    message: t
    impact: t
    suggestion: t
    prefilter: [secure, Secure]
    query:
      go: |
        (call_expression function: (selector_expression field: (field_identifier) @f) (#eq? @f "SetCookie")) @match
      python: |
        (call function: (identifier) @f) @match
    positive:
      - path: a.go
        code: |
          package a
          func f(w W) { w.SetCookie(c, secure) }
    negative:
      - path: a.go
        code: |
          package a
          var c = &tls.Config{InsecureSkipVerify: true}
  - id: t.redirect
    profile: security_reviewer
    category: security
    severity: medium
    confidence: 0.8
    title: t
    message: t
    impact: t
    suggestion: t
    prefilter: [open, Redirect]
    flow:
      sink:
        go: |
          (call_expression function: (selector_expression field: (field_identifier) @f) arguments: (argument_list (_) (_) @arg) (#eq? @f "Redirect")) @sink
    positive:
      - path: a.go
        code: |
          package a
          func f(w W, r R) { http.Redirect(w, r.URL.Query().Get("u")) }
    negative:
      - path: a.go
        code: |
          package a
          func f() { reopen(name) }
`
	s, err := LoadPacks([]string{"t.yaml"}, [][]byte{[]byte(pack)})
	if err != nil {
		t.Fatal(err)
	}
	far := "package a\n\nfunc f(w W) {\n\tw.SetCookie(&http.Cookie{\n" + strings.Repeat("\t\tName: \"n\",\n", 40) + "\t})\n}\n"
	for _, c := range []struct {
		path, old, code string
		parse           bool
	}{
		{"a.go", "", "package a\nvar c = &tls.Config{InsecureSkipVerify: true}\n", false},
		{"a.go", "", "package a\nfunc f(w W) { w.SetCookie(c, secure) }\n", true},
		// The literal 40 lines above the changed line, outside the window.
		{"a.go", far, strings.Replace(far, "Name: \"n\",\n\t})", "Name: \"n\",\n\t\tSecure: false,\n\t})", 1), true},
		{"a.go", "", "package a\nvar insecure = 1\n", false},
		// No literal derivable from the Python query: the prefilter alone.
		{"a.py", "", "insecure = f()\n", true},
		{"a.py", "", "x = f()\n", false},
	} {
		var old []byte
		if c.old != "" {
			old = []byte(c.old)
		}
		f := DiffFile(c.path, old, []byte(c.code))
		fc := newFileCtx(f)
		g := syntax.Grammar(f.Language, f.Path)
		got := s.syntaxRules(fc, g, s.eligibleRules(f.Language, nil), newFileFacts(s, f))
		if parse := got[s.byID["t.cookie"]]; parse != c.parse {
			t.Errorf("%s %.60q: parse for t.cookie = %v, want %v", c.path, c.code, parse, c.parse)
		}
	}
	// A flow rule's sink query narrows its explicit prefilter the same way.
	for _, c := range []struct {
		code  string
		parse bool
	}{
		{"package a\nfunc f() { reopen(name) }\n", false},
		{"package a\nfunc f(w W, r R) { http.Redirect(w, r.URL.Query().Get(\"u\")) }\n", true},
	} {
		f := DiffFile("a.go", nil, []byte(c.code))
		got := s.syntaxRules(newFileCtx(f), "go", s.eligibleRules(f.Language, nil), newFileFacts(s, f))
		if parse := got[s.byID["t.redirect"]]; parse != c.parse {
			t.Errorf("%.60q: parse for t.redirect = %v, want %v", c.code, parse, c.parse)
		}
	}
}
