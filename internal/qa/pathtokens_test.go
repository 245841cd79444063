package qa

import (
	"math/rand/v2"
	"reflect"
	"testing"
)

// TestPathTokensASCII: pathTokens' ASCII path splits as pathTokensRunes
// does, on fixed paths and on random ones over letters of both cases,
// digits and punctuation.
func TestPathTokensASCII(t *testing.T) {
	paths := []string{"", "src/AuthService.ts", "HTTPServer", "a1b2", "x/y_z-w.go", "ABC", "aB", "Ab", "v10Alpha", "__init__.py", "..", "A/B/C"}
	rng := rand.New(rand.NewPCG(7, 8))
	const alphabet = "aZbY09_/.-AzXx"
	for range 5000 {
		b := make([]byte, rng.IntN(24))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		paths = append(paths, string(b))
	}
	for _, p := range paths {
		if got, want := pathTokens(p), pathTokensRunes(p); !reflect.DeepEqual(got, want) {
			t.Fatalf("pathTokens(%q) = %q, want %q", p, got, want)
		}
	}
	if got := pathTokens("src/Überblick.go"); !reflect.DeepEqual(got, pathTokensRunes("src/Überblick.go")) {
		t.Fatalf("a non-ASCII path: %q", got)
	}
}
