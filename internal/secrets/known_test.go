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

// TestRedactFoundIsRedact: redacting with the detection run ahead
// (Prefind, before anything was learned) and then what was learned
// (RedactFound) is Redact, on texts mixing secrets of every shape with
// values learned from other texts, overlapping, adjacent to and inside
// what the detectors find, with few and with many learned values.
func TestRedactFoundIsRedact(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 9))
	alnum := func(n int) string {
		const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
		b := make([]byte, n)
		for i := range b {
			b[i] = chars[rng.IntN(len(chars))]
		}
		return string(b)
	}
	piece := func(known []string) string {
		switch rng.IntN(9) {
		case 0:
			return `token := "ghp_` + alnum(36) + `"`
		case 1:
			return "password = " + alnum(12)
		case 2:
			return "aws_access_key_id = AKIA" + strings.ToUpper(alnum(16))
		case 3:
			return "user,api_secret\nann," + alnum(20)
		case 4:
			return "postgres://bob:" + alnum(10) + "@db.example.com/app"
		case 5:
			return "-----BEGIN RSA PRIVATE KEY-----\n" + alnum(64) + "\n" + alnum(64) + "\n-----END RSA PRIVATE KEY-----"
		case 6, 7:
			if len(known) > 0 {
				k := known[rng.IntN(len(known))]
				// a learned value alone, inside a detected one, or cut
				switch rng.IntN(3) {
				case 0:
					return "copied " + k + " here"
				case 1:
					return `secret: "` + k + `"`
				default:
					return "half " + k[:len(k)/2+1]
				}
			}
		}
		return "x := compute(" + alnum(5) + ")"
	}
	checked, changed := 0, 0
	for round := range 400 {
		var learnFrom []string
		for range 1 + rng.IntN(4) {
			learnFrom = append(learnFrom, piece(nil))
		}
		if round%5 == 0 { // many learned values: the rolling filter
			for range 40 {
				learnFrom = append(learnFrom, "api_key = "+alnum(24))
			}
		}
		r := Learn(learnFrom...)
		var known []string
		if r.known != nil {
			known = r.known.vals
		}
		var parts []string
		for range 1 + rng.IntN(6) {
			parts = append(parts, piece(known))
		}
		s := strings.Join(parts, "\n")
		want := r.Redact(s)
		for _, plain := range [][]Span{Learn().Prefind(s), r.Prefind(s), std.Prefind(s)} {
			if got := r.RedactFound(s, plain); got != want {
				t.Fatalf("round %d: RedactFound\n%s\nwant Redact\n%s\nof\n%s", round, got, want, s)
			}
		}
		checked++
		if want != s {
			changed++
		}
	}
	if changed < checked/2 {
		t.Fatalf("only %d of %d texts had anything redacted", changed, checked)
	}
}
