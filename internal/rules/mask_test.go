package rules

import (
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

// maskLangs names one language of every lexSyntax syntaxFor returns.
var maskLangs = []string{"go", "javascript", "java", "groovy", "c", "swift", "python", "ruby", "shell", "yaml", "dockerfile", "properties", "toml", "xml", "sql", "hcl", "makefile"}

// TestMaskSkipSameAsByteByByte: maskText skips runs of bytes that cannot
// start a token; masking every byte the slow way must give the same text,
// for every syntax, on random text dense in the tokens the masker knows.
func TestMaskSkipSameAsByteByByte(t *testing.T) {
	pieces := []string{
		"\n", " ", "\t", "\r", "x", "ab", "_1", "$", "?", ";", "(", "=", "{", "}", "\\",
		"'", "\"", "`", "/", "*", "//", "/*", "*/", "#", "--", "<!--", "-->", "!",
		`"""`, "'''", "<<EOF", "<<~ID", "<<-'X'", "EOF", "ID", "X", "=begin", "=end",
		"${", "return ", "  ", "\n\n",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, lang := range maskLangs {
		sx := syntaxFor(lang)
		if sx == syntaxNone {
			t.Fatalf("%s: no syntax", lang)
		}
		for n := 0; n < 3000; n++ {
			var b strings.Builder
			for k := rng.IntN(40); k >= 0; k-- {
				b.WriteString(pieces[rng.IntN(len(pieces))])
			}
			src := b.String()
			fast, slow := maskWith(sx, src, true), maskWith(sx, src, false)
			if fast != slow {
				t.Fatalf("%s: %q\nskipping: %q\nbyte by byte: %q", lang, src, fast, slow)
			}
		}
	}
}

// TestMaskTextUnchangedIsSame: text with nothing to blank comes back as
// is, and text with something to blank keeps its length and newlines.
func TestMaskTextUnchangedIsSame(t *testing.T) {
	src := "x := f(a, b)\ny = x + 1\n"
	if got := maskText(syntaxGo, src); got != src {
		t.Fatalf("plain code changed: %q", got)
	}
	src = "x := \"secret\" // note\n/* a\nb */ y := 2"
	want := "x := \"      \"        \n    \n     y := 2"
	if got := maskText(syntaxGo, src); got != want {
		t.Fatalf("masked %q, want %q", got, want)
	}
}

// BenchmarkMaskLines masks this package's own Go sources
// (go test ./internal/rules -bench MaskLines).
func BenchmarkMaskLines(b *testing.B) {
	for _, skip := range []bool{false, true} {
		name := "byte-by-byte"
		if skip {
			name = "skipping"
		}
		b.Run(name, func(b *testing.B) {
			var src []string
			for _, p := range []string{"mask.go", "match.go", "explorer.go", "rules.go"} {
				data, err := os.ReadFile(p)
				if err != nil {
					b.Fatal(err)
				}
				src = append(src, string(data))
			}
			b.ResetTimer()
			for b.Loop() {
				for _, s := range src {
					maskWith(syntaxGo, s, skip)
				}
			}
		})
	}
}
