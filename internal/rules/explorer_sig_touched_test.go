package rules

import (
	"math/rand/v2"
	"testing"
)

// sigTouchedBytes is sigTouched as it was, counting each line's
// parentheses byte by byte for every changed line: the reference
// TestSigTouchedCounts holds the memoized counts to.
func sigTouchedBytes(lang string, lines []string, changed []int) bool {
	for _, c := range changed {
		if c < 0 || c >= len(lines) {
			continue
		}
		for k := c; k >= 0 && k >= c-12; k-- {
			i := sigKeyword(lang, lines[k])
			if i < 0 {
				continue
			}
			if k == c {
				return true
			}
			depth, open := 0, false
			for j := k; j < c; j++ {
				s := lines[j]
				if j == k {
					s = s[i:]
				}
				for x := 0; x < len(s); x++ {
					switch s[x] {
					case '(':
						depth++
						open = true
					case ')':
						depth--
					}
				}
			}
			if open && depth > 0 {
				return true
			}
			break
		}
	}
	return false
}

// TestSigTouchedCounts: on random Go and Python sources of definitions,
// calls and stray parentheses, with random changed lines, sigTouched
// answers as the byte-by-byte count did.
func TestSigTouchedCounts(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	pieces := map[string][]string{
		"go":     {"func f(a int,", "func (r *T) m(", "\tb string) error {", "x := g(h(1)", ")", "))", "(", "\treturn nil", "}", "// (", "var x = (1"},
		"python": {"def f(a,", "    b):", "x = g(", ")", "class C(Base):", "    def m(self,", "(", "))", "    pass"},
	}
	for lang, ps := range pieces {
		answers := map[bool]int{}
		for range 3000 {
			lines := make([]string, 1+rng.IntN(30))
			for i := range lines {
				lines[i] = ps[rng.IntN(len(ps))]
			}
			var changed []int
			for range 1 + rng.IntN(6) {
				changed = append(changed, rng.IntN(len(lines)+2)-1)
			}
			got, want := sigTouched(lang, lines, changed), sigTouchedBytes(lang, lines, changed)
			if got != want {
				t.Fatalf("%s %q changed %v: sigTouched %v, byte count %v", lang, lines, changed, got, want)
			}
			answers[got]++
		}
		if answers[true] < 300 || answers[false] < 300 {
			t.Errorf("%s: %d touched, %d not: the cases do not exercise both answers", lang, answers[true], answers[false])
		}
	}
}
