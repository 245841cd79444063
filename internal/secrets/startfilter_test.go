package secrets

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestStartFilterNeverRejectsAMatch: for every anchored rule of the
// snapshot, a text the anchored regexp matches passes the rule's start
// filter, over texts that begin with each keyword and go on with random
// runs of the bytes secrets are made of (and some that fold or are not
// ASCII).
func TestStartFilterNeverRejectsAMatch(t *testing.T) {
	st := detector()
	rng := rand.New(rand.NewPCG(7, 8))
	classes := []string{
		"abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "0123456789", "0123456789abcdef",
		"-_", ".", "=", "+/", "'\"` ;\n\t", "éK\u212aſ", "eyJ",
	}
	piece := func() string {
		c := classes[rng.IntN(len(classes))]
		var b strings.Builder
		for n := rng.IntN(90); n >= 0; n-- {
			b.WriteString(string([]rune(c)[rng.IntN(len([]rune(c)))]))
		}
		return b.String()
	}
	filters, matched, rejected := 0, 0, 0
	for _, g := range st.byIndex {
		a := g.anchor()
		if a == nil {
			continue
		}
		if g.start == nil {
			continue
		}
		filters++
		for _, kw := range g.snap.Keywords {
			for n := 0; n < 400; n++ {
				var b strings.Builder
				if rng.IntN(2) == 0 {
					b.WriteString(kw)
				} else {
					b.WriteString(strings.ToUpper(kw))
				}
				for k := rng.IntN(5); k >= 0; k-- {
					b.WriteString(piece())
				}
				s := b.String()
				if !g.start.allows(s) {
					rejected++
				}
				if a.MatchString(s) {
					matched++
					if !g.start.allows(s) {
						t.Fatalf("%s: the anchored regexp matches %q, the start filter rejects it", g.snap.ID, s)
					}
				}
			}
		}
	}
	if filters < 10 || matched < 200 || rejected < 1000 {
		t.Fatalf("%d filters, %d matching texts, %d rejected: too few to test", filters, matched, rejected)
	}
	t.Logf("%d filters, %d matching texts, %d rejected", filters, matched, rejected)
}

// TestStartFilterShapes: what the filter takes from a few patterns.
func TestStartFilterShapes(t *testing.T) {
	for _, c := range []struct {
		expr       string
		allow, not []string
	}{
		{`\b(ey[a-zA-Z0-9]{17,}\.ey[a-zA-Z0-9]{17,})`, []string{"eyJhbGciOi"}, []string{"ey_0: value", "ey", "eY1234"}},
		{`ops_eyJ[a-zA-Z0-9+/]{250,}={0,3}`, []string{"ops_eyJa"}, []string{"ops_eyj", "ops_x"}},
		{`(?i)abc(?:d|e)`, []string{"ABCd", "abce"}, []string{"abcf", "abx"}},
		{`xoxb-[0-9]+|xoxp-[a-z]+`, []string{"xoxb-1", "xoxp-a"}, []string{"xoxc-1", "xo"}}, // factored: xox(?:b-…|p-…)
	} {
		f := newStartFilter(c.expr)
		if f == nil {
			t.Fatalf("%s: no filter", c.expr)
		}
		for _, s := range c.allow {
			if !f.allows(s) {
				t.Errorf("%s: rejects %q", c.expr, s)
			}
		}
		for _, s := range c.not {
			if f.allows(s) {
				t.Errorf("%s: allows %q", c.expr, s)
			}
		}
	}
	for _, expr := range []string{`[a-z]+key`, `(?i)key[0-9]`, `abc|[0-9]x`, `abc(?:d)?`} {
		if newStartFilter(expr) != nil {
			t.Errorf("%s: a filter, want none", expr)
		}
	}
}
