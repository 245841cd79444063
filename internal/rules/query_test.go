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
