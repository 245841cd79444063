package rules

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/diffpalhq/diffpal/internal/syntax"
)

var updateQuerySnapshot = flag.Bool("update-query-snapshot", false, "rewrite querysnap.bin from the packs' queries (go generate ./internal/rules)")

// TestQuerySnapshot: querysnap.bin is what compiling the built-in queries
// gives now, and each query read from it is the compiled one: on every
// rule's examples in each of its grammars, the same matches with the same
// captures.
func TestQuerySnapshot(t *testing.T) {
	s, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	queries := builtinQueries(s)
	fresh, err := syntax.QuerySnapshot(queries)
	if err != nil {
		t.Fatal(err)
	}
	if *updateQuerySnapshot {
		if err := os.WriteFile("querysnap.bin", fresh, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(fresh, querySnapshot) {
		t.Fatalf("querysnap.bin (%d bytes) is not what the packs' queries compile to now (%d bytes): run go generate ./internal/rules", len(querySnapshot), len(fresh))
	}
	n, compared := 0, 0
	for _, r := range s.rules {
		for _, m := range r.c.querySources() {
			for g, src := range m {
				n++
				compiledQ, err := syntax.CompileQuery(g, src)
				if err != nil {
					t.Fatalf("%s %s: %v", r.ID, g, err)
				}
				loaded, err := syntax.QueryFromSnapshot(querySnapshot, g, src)
				if err != nil {
					t.Fatalf("%s %s: %v", r.ID, g, err)
				}
				for _, ex := range append(append([]Example(nil), r.Positive...), r.Negative...) {
					if syntax.Grammar(DetectLanguage(ex.Path, exampleFirstLine(ex.Code)), ex.Path) != g {
						continue
					}
					tr, err := syntax.Parse(context.Background(), g, []byte(ex.Code))
					if err != nil {
						t.Fatal(err)
					}
					want, got := matchText(tr, compiledQ), matchText(tr, loaded)
					tr.Close()
					if got != want {
						t.Errorf("%s %s, example %s: read from the snapshot, the query matches differently\ncompiled:\n%sread:\n%s", r.ID, g, ex.Path, want, got)
					}
					if want != "" {
						compared++
					}
				}
			}
		}
	}
	t.Logf("%d queries; %d example parses with matches compared", n, compared)
	if compared < n/2 {
		t.Errorf("only %d example parses matched anything for %d queries: the comparison proves too little", compared, n)
	}
}

func matchText(tr *syntax.Tree, q *syntax.Query) string {
	var b strings.Builder
	for _, m := range tr.Matches(q, 0, 0) {
		fmt.Fprintf(&b, "pattern %d:", m.Pattern)
		for _, c := range m.Captures {
			fmt.Fprintf(&b, " %s=[%d,%d)", c.Name, c.Node.StartByte(), c.Node.EndByte())
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func exampleFirstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
