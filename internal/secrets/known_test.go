package secrets

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestKnownFindFew: the search for a few heads finds what the rolling
// filter finds, on texts built to hold the values, values that share a
// head, overlapping and adjacent occurrences and near misses.
func TestKnownFindFew(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	word := func(alpha string, n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = alpha[rng.IntN(len(alpha))]
		}
		return string(b)
	}
	few, rolled := 0, 0
	for round := range 3000 {
		alpha := "ab"
		if round%3 == 0 {
			alpha = "abc\n"
		}
		var vals []string
		seen := map[string]bool{}
		for range 1 + rng.IntN(6) {
			v := word(alpha, minKnown+rng.IntN(6))
			if len(vals) > 0 && rng.IntN(3) == 0 {
				v = vals[0][:8] + word(alpha, rng.IntN(5)) // a shared head
			}
			if !seen[v] {
				seen[v] = true
				vals = append(vals, v)
			}
		}
		k := newKnownSet(vals)
		if k.heads == nil {
			t.Fatalf("%d values, %d heads: want the few-heads search", len(vals), len(k.byHead))
		}
		var b strings.Builder
		for b.Len() < 200 {
			if rng.IntN(3) == 0 {
				v := vals[rng.IntN(len(vals))]
				b.WriteString(v[:rng.IntN(len(v))+1]) // whole or cut short
			} else {
				b.WriteString(word(alpha, rng.IntN(6)))
			}
		}
		s := b.String()
		a, r := &finder{s: s}, &finder{s: s}
		k.find(a)
		k.findRolling(r)
		if !slices.Equal(a.spans, r.spans) {
			t.Fatalf("vals %q in %q:\nfew     %v\nrolling %v", vals, s, a.spans, r.spans)
		}
		if len(a.spans) > 0 {
			few++
		}
		rolled++
	}
	if few < rolled/4 {
		t.Fatalf("only %d of %d texts held a value: the test is not testing", few, rolled)
	}
	// Past maxFewHeads heads the rolling filter is used.
	var many []string
	for i := range maxFewHeads + 1 {
		many = append(many, strings.Repeat(string(rune('a'+i)), minKnown))
	}
	if k := newKnownSet(many); k.heads != nil {
		t.Fatalf("%d heads: want the rolling filter", len(k.byHead))
	}
}
