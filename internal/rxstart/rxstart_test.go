package rxstart

import (
	"regexp"
	"regexp/syntax"
	"testing"
)

// TestFirstBytes: the set and nullability of a few shapes, and on random
// texts no match of them starts with a byte outside the set.
func TestFirstBytes(t *testing.T) {
	cases := []struct {
		re       string
		in, out  string
		nullable bool
	}{
		{`func\s+`, "f", "Fg ", false},
		{`(?:async\s+)?def`, "ad", "Dx ", false},
		{`[A-Z][a-z]*`, "AMZ", "az_", false},
		{`(?i)key`, "kK\x80\xe2", "ey", false},
		{`\s*x`, " \t\nx", "y", false},
		{`a*`, "a", "b", true},
		{`(?:x|)y?`, "xy", "z", true},
		{`\bé`, "\xc3\xff", "e", false},
	}
	texts := []string{"func  f", "async def x", "Alpha", "KEY=1", "  x", "aaa", "xy", "é", "key", "def", "\tx", "K"}
	for _, c := range cases {
		re, err := syntax.Parse(c.re, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		var set [256]bool
		if got := FirstBytes(re.Simplify(), &set); got != c.nullable {
			t.Errorf("%s: nullable %v, want %v", c.re, got, c.nullable)
		}
		for i := 0; i < len(c.in); i++ {
			if !set[c.in[i]] {
				t.Errorf("%s: %q not in the set", c.re, c.in[i])
			}
		}
		for i := 0; i < len(c.out); i++ {
			if set[c.out[i]] {
				t.Errorf("%s: %q in the set", c.re, c.out[i])
			}
		}
		rx := regexp.MustCompile(c.re)
		for _, s := range texts {
			for _, m := range rx.FindAllStringIndex(s, -1) {
				if m[1] > m[0] && !set[s[m[0]]] {
					t.Errorf("%s matches %q at %d, which starts with %q, not in the set", c.re, s, m[0], s[m[0]])
				}
			}
		}
	}
	if !ZeroWidth(syntax.OpWordBoundary) || ZeroWidth(syntax.OpLiteral) {
		t.Error("ZeroWidth")
	}
}
