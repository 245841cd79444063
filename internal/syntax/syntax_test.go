package syntax

import (
	"context"
	"strings"
	"sync"
	"testing"
)

func mustParse(t *testing.T, grammar, src string) *Tree {
	t.Helper()
	tr, err := Parse(context.Background(), grammar, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)
	return tr
}

func TestMaskKeepsCodeAndColumns(t *testing.T) {
	cases := []struct{ grammar, src, want string }{
		{"go", "x := \"a // b\" // c\ny := `raw\nq`\n", "x := \"      \"     \ny := `   \n `\n"},
		{"python", "q = f\"SELECT {t} x\"  # c\n\"\"\"doc\nmore\"\"\"\n", "q = f\"       {t}  \"     \n\"\"\"   \n    \"\"\"\n"},
		{"javascript", "a = `x ${b + 'c'} y` /* z */\n", "a = `  ${b + ' '}  `        \n"},
		{"ruby", "s = \"x #{y} z\" # c\n", "s = \"  #{y}  \"    \n"},
		{"shell", "echo \"$X and $(id) x\" # c\n", "echo \"$X     $(id)  \"    \n"},
		{"yaml", "k: \"v\" # c\n", "k: \"v\"    \n"},
	}
	for _, c := range cases {
		got := string(mustParse(t, c.grammar, c.src).Mask())
		if got != c.want {
			t.Errorf("%s: Mask(%q)\n got %q\nwant %q", c.grammar, c.src, got, c.want)
		}
		if len(got) != len(c.src) || strings.Count(got, "\n") != strings.Count(c.src, "\n") {
			t.Errorf("%s: mask changed the length or the lines", c.grammar)
		}
	}
}

func TestQueryOverChangedLines(t *testing.T) {
	src := "import os\n\ndef f(x):\n    os.system(\n        'ls ' + x)\n\nos.system('ok')\n"
	tr := mustParse(t, "python", src)
	q, err := CompileQuery("python", `(call function: (attribute object: (identifier) @o attribute: (identifier) @m) (#eq? @o "os") (#eq? @m "system")) @match`)
	if err != nil {
		t.Fatal(err)
	}
	all := tr.Matches(q, 0, 0)
	if len(all) != 2 {
		t.Fatalf("whole file: %d matches, want 2", len(all))
	}
	// Only line 5 changed: the multi-line call on lines 4-5 is one match.
	ms := tr.Matches(q, 5, 5)
	if len(ms) != 1 {
		t.Fatalf("line 5: %d matches, want 1", len(ms))
	}
	n, _ := ms[0].Get("match")
	if n.StartLine() != 4 || n.EndLine() != 5 {
		t.Fatalf("match spans %d-%d, want 4-5", n.StartLine(), n.EndLine())
	}
	if _, err := CompileQuery("python", "(no_such_node) @x"); err == nil {
		t.Fatal("a query naming an unknown node type compiled")
	}
	if _, err := CompileQuery("cobol", "(x)"); err == nil {
		t.Fatal("an unknown grammar compiled")
	}
}

func TestGrammar(t *testing.T) {
	for _, c := range [][3]string{{"typescript", "a/b.tsx", "tsx"}, {"typescript", "a.ts", "typescript"}, {"go", "x.go", "go"}, {"swift", "x.swift", ""}, {"ruby", "app/views/a.html.erb", ""}, {"ruby", "lib/a.rb", "ruby"}} {
		if got := Grammar(c[0], c[1]); got != c[2] {
			t.Errorf("Grammar(%s,%s) = %q, want %q", c[0], c[1], got, c[2])
		}
	}
}

func TestParseGarbageIsBounded(t *testing.T) {
	// Hostile input: the parser recovers (ERROR nodes), it never fails.
	tr := mustParse(t, "javascript", strings.Repeat("((((({{{[[[`${", 2000))
	if !tr.Root().HasError() {
		t.Fatal("garbage parsed without an error node")
	}
}

func TestPredicates(t *testing.T) {
	tr := mustParse(t, "python", "os.system(x)\nos.popen(y)\nsys.exit(0)\n")
	count := func(q string) int {
		t.Helper()
		cq, err := CompileQuery("python", q)
		if err != nil {
			t.Fatal(err)
		}
		return len(tr.Matches(cq, 0, 0))
	}
	call := `(call function: (attribute object: (identifier) @o attribute: (identifier) @f)`
	for _, c := range []struct {
		q    string
		want int
	}{
		{call + ` (#eq? @o "os")) @match`, 2},
		{call + ` (#not-eq? @o "os")) @match`, 1},
		{call + ` (#match? @f "^(system|exit)$")) @match`, 2},
		{call + ` (#not-match? @f "^sys")) @match`, 2},
		{call + ` (#eq? @o @f)) @match`, 0},
	} {
		if got := count(c.q); got != c.want {
			t.Errorf("%s: %d matches, want %d", c.q, got, c.want)
		}
	}
	// A user's bad regexp or an unknown predicate is an error, not a panic.
	for _, q := range []string{call + ` (#match? @f "(")) @m`, call + ` (#any-of? @f "a" "b")) @m`} {
		if _, err := CompileQuery("python", q); err == nil {
			t.Errorf("%s: compiled", q)
		}
	}
}

// TestCompileAhead: a query compiled ahead is the one CachedQuery
// returns (compiled once, whichever goroutine asks first), and a broken
// query compiled ahead still reports its error.
func TestCompileAhead(t *testing.T) {
	src := `(call function: (identifier) @f (#eq? @f "compile_ahead_probe")) @match`
	CompileAhead("python", src)
	CompileAhead("python", src)
	var wg sync.WaitGroup
	got := make([]*Query, 4)
	for i := range got {
		wg.Go(func() {
			q, err := CachedQuery("python", src)
			if err != nil {
				t.Error(err)
			}
			got[i] = q
		})
	}
	wg.Wait()
	for _, q := range got {
		if q == nil || q != got[0] {
			t.Fatalf("CachedQuery after CompileAhead: %p, want one query for all", q)
		}
	}
	tree := mustParse(t, "python", "compile_ahead_probe()\n")
	if ms := tree.Matches(got[0], 1, 1); len(ms) != 1 {
		t.Fatalf("%d matches, want 1", len(ms))
	}
	CompileAhead("python", "(no_such_node) @x")
	if _, err := CachedQuery("python", "(no_such_node) @x"); err == nil {
		t.Fatal("a broken query compiled ahead: no error")
	}
}
