package needle

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestIndexAsStringsIndex: Index answers as strings.Index does, from
// every starting point, whichever byte of the needle it skips to (so
// both the skipping and the fall-back to strings.Index are exercised: a
// five-letter alphabet makes any byte common).
func TestIndexAsStringsIndex(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	word := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = "abA0\n"[rng.IntN(5)]
		}
		return string(b)
	}
	for range 2000 {
		text, s := word(rng.IntN(40)), word(1+rng.IntN(8))
		for at := range len(s) {
			f := Finder{s: s, at: at}
			for from := 0; from <= len(text)+1; from++ {
				want := -1
				if from <= len(text) {
					if i := strings.Index(text[from:], s); i >= 0 {
						want = from + i
					}
				}
				if got := f.Index(text, from); got != want {
					t.Fatalf("Finder{%q, %d}.Index(%q, %d) = %d, want %d", s, at, text, from, got, want)
				}
			}
		}
	}
}

// TestContains: on the needles diffpal looks for, near misses included.
func TestContains(t *testing.T) {
	extra := map[string][]string{
		"-----BEGIN ": {"BEGIN ", "----BEGIN ", "x-----BEGIN RSA", "BEGIN BEGIN -----BEGIN ", "-----BEGIN",
			"-- BEGIN -----BEGIN x", "-----BEGIX -----BEGIN ", "BEGIN -----"},
		"diffpal:ignore": {":", "diffpal:ignor", "iffpal:ignore", "x diffpal:ignore[a]", "a:b diffpal:ignore", "diffpal::ignore",
			"diffpal:ignorediffpal:ignore", "// diffpal:ignore", "ddiffpal:ignore", "diffpal:ignore:", "::::diffpal:ignore", "diffpal"},
	}
	for _, needle := range []string{"-----BEGIN ", "diffpal:ignore", "0123456789abcdef"} {
		f := New(needle)
		texts := append([]string{"", needle, "x" + needle + "y", needle[:len(needle)-1], needle[1:], strings.Repeat(needle[:3], 9) + needle,
			strings.Repeat("-", 100) + "BEGIN", ":::" + needle[:5] + ":" + needle}, extra[needle]...)
		for _, text := range texts {
			if got, want := f.Contains(text), strings.Contains(text, needle); got != want {
				t.Errorf("New(%q).Contains(%q) = %v, want %v", needle, text, got, want)
			}
		}
	}
}

// TestRarest: the ranking picks a capital over digits and letters, the
// colon over letters, and the first of equals.
func TestRarest(t *testing.T) {
	for s, want := range map[string]int{"-----BEGIN ": 5, "diffpal:ignore": 7, "01234567": 3, "abc": 1, "eee": 0, "": 0} {
		if got := Rarest(s); got != want {
			t.Errorf("Rarest(%q) = %d, want %d", s, got, want)
		}
	}
}
