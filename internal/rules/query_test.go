package rules

import (
	"os"
	"strings"
	"testing"
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
