package rules

import (
	_ "embed"

	"github.com/diffpalhq/diffpal/internal/syntax"
)

// querySnapshot is every built-in query compiled (the rules' queries and
// flow sinks and sources, and each grammar's mask query), as
// syntax.QuerySnapshot writes them: tree-sitter takes 2-80 ms to compile
// one (a three-line TypeScript change spent ~170 of its ~210 ms compiling
// seven), reading one back takes microseconds. TestQuerySnapshot fails while it is not what compiling the
// packs' queries gives now; a query it does not hold (a user pack's, or a
// built-in one edited since) is compiled as before.
//
//go:generate go test -run ^TestQuerySnapshot$ -update-query-snapshot .
//go:embed querysnap.bin
var querySnapshot []byte

func init() { syntax.UseQuerySnapshot(querySnapshot) }

// builtinQueries is the queries the snapshot holds, by grammar.
func builtinQueries(s *Set) map[string][]string {
	out := syntax.MaskQueries()
	for _, r := range s.rules {
		for _, m := range r.c.querySources() {
			for g, src := range m {
				out[g] = append(out[g], src)
			}
		}
	}
	return out
}
