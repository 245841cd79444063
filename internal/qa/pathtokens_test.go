package qa

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unicode"
)

// TestPathTokensAsBefore: the one-pass pathTokens splits as the version
// over a rune slice did (pathTokensBefore), on fixed paths and on random
// ones over both cases, digits of two scripts, non-ASCII letters,
// punctuation and invalid UTF-8.
func TestPathTokensAsBefore(t *testing.T) {
	paths := []string{"", "src/AuthService.ts", "HTTPServer", "a1b2", "x/y_z-w.go", "ABC", "aB", "Ab", "v10Alpha", "__init__.py", "..", "A/B/C", "src/Überblick.go", "日本Go2"}
	rng := rand.New(rand.NewPCG(7, 8))
	parts := []string{"a", "Z", "b", "Y", "0", "9", "_", "/", ".", "-", "A", "z", "é", "Ü", "日", "٣", "\xff", "\xc3"}
	for range 5000 {
		var b strings.Builder
		for range rng.IntN(24) {
			b.WriteString(parts[rng.IntN(len(parts))])
		}
		paths = append(paths, b.String())
	}
	for _, p := range paths {
		if got, want := pathTokens(p), pathTokensBefore(p); !reflect.DeepEqual(got, want) {
			t.Fatalf("pathTokens(%q) = %q, want %q", p, got, want)
		}
	}
}

// pathTokensBefore is pathTokens as it was, over a rune slice.
func pathTokensBefore(p string) []string {
	var toks []string
	rs := []rune(p)
	start := -1
	flush := func(end int) {
		if start >= 0 && end > start {
			toks = append(toks, strings.ToLower(string(rs[start:end])))
		}
		start = -1
	}
	for i, r := range rs {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush(i)
			continue
		}
		if start < 0 {
			start = i
			continue
		}
		prev := rs[i-1]
		switch {
		case unicode.IsDigit(r) != unicode.IsDigit(prev):
			flush(i)
			start = i
		case unicode.IsUpper(r) && unicode.IsLower(prev):
			flush(i)
			start = i
		case unicode.IsLower(r) && unicode.IsUpper(prev) && i-1 > start:
			flush(i - 1)
			start = i - 1
		}
	}
	flush(len(rs))
	return toks
}
