package textsafe

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestVisible(t *testing.T) {
	for in, want := range map[string]string{
		"":                         "",
		"plain/path ünï.go":        "plain/path ünï.go",
		"a\nb\r\tc":                `a\nb\r\tc`,
		"\x1b[31mred\x1b[0m":       `\x1b[31mred\x1b[0m`,
		"\x00\x07\x08\x7f":         `\x00\x07\x08\x7f`,
		"nel\u0085csi\u009b":       `nel\u0085csi\u009b`,
		"abc\u202edcba":            `abc\u202edcba`,
		"\u202a\u202b\u202c\u202d": `\u202a\u202b\u202c\u202d`,
		"\u2066\u2067\u2068\u2069": `\u2066\u2067\u2068\u2069`,
		"\u200e\u200f\u061c":       `\u200e\u200f\u061c`,
		"zero\u200bwidth\ufeff":    `zero\u200bwidth\ufeff`,
		"line\u2028para\u2029":     `line\u2028para\u2029`,
		"tag\U000e0041":            `tag\U000e0041`,
		"bad\xffutf8\xc3":          `bad\xffutf8\xc3`,
		"emoji ✅ and \\ stay":      "emoji ✅ and \\ stay",
	} {
		if got := Visible(in); got != want {
			t.Errorf("Visible(%q) = %q, want %q", in, got, want)
		}
		if got := Terminal(in); got != want {
			t.Errorf("Terminal(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestVisibleLeavesNothingHidden runs every rune (and a stray byte)
// through Visible: the output is valid UTF-8 with no hidden character.
func TestVisibleLeavesNothingHidden(t *testing.T) {
	var sb strings.Builder
	for r := rune(0); r <= 0x10ffff; r++ {
		if r >= 0xd800 && r <= 0xdfff {
			continue
		}
		sb.WriteRune(r)
	}
	sb.WriteString("\xff\xfe\x80")
	out := Visible(sb.String())
	if !utf8.ValidString(out) {
		t.Fatal("output is not valid UTF-8")
	}
	for _, r := range out {
		if Hidden(r) {
			t.Fatalf("U+%04X survived", r)
		}
	}
	for _, r := range []rune{0x1b, 0x9b, 0x202a, 0x202e, 0x2066, 0x2069, 0x200e, 0x200f, 0x061c, 0x7f} {
		if !Hidden(r) {
			t.Errorf("U+%04X is not hidden", r)
		}
	}
	for _, r := range []rune{' ', 'a', '\\', 0xa0, 0xe9, 0x2705, 0x4e2d, 0x1f600} {
		if Hidden(r) {
			t.Errorf("U+%04X is hidden", r)
		}
	}
}

func TestInline(t *testing.T) {
	for in, want := range map[string]string{
		"Command injection":            `Command injection`,
		"a\n# ✅ approved":              `a\n\# ✅ approved`,
		"# heading":                    `\# heading`,
		"<img src=x onerror=alert(1)>": `\<img src=x onerror=alert\(1\)\>`,
		"[x](javascript:alert(1))":     `\[x\]\(javascript:alert\(1\)\)`,
		"![i](http://e/x.png)":         `\!\[i\]\(http://e/x.png\)`,
		"`code` *em* _em_ ~~s~~ a|b":   "\\`code\\` \\*em\\* \\_em\\_ \\~\\~s\\~\\~ a\\|b",
		`back\slash`:                   `back\\slash`,
		"&#x202E; &lt;b&gt; $x$":       `\&\#x202E; \&lt;b\&gt; \$x\$`,
		"- item":                       `\- item`,
		"+ item":                       `\+ item`,
		"  = setext":                   `  \= setext`,
		"12. ordered":                  `12\. ordered`,
		"3) ordered":                   `3\) ordered`,
		"> quote":                      `\> quote`,
		"mid - dash 1. no":             `mid - dash 1. no`,
		"esc\x1b[2J bidi\u202e":        `esc\x1b\[2J bidi\u202e`,
		"bad\xff":                      `bad\xff`,
	} {
		if got := Inline(in); got != want {
			t.Errorf("Inline(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCode(t *testing.T) {
	for in, want := range map[string]string{
		"a.go":                          "`a.go`",
		"":                              "` `",
		"a\n# ✅ approved\n<img>.go":     "`a\\n# ✅ approved\\n<img>.go`",
		"one ` tick":                    "``one ` tick``",
		"two `` ticks ` and one":        "```two `` ticks ` and one```",
		"`edge`":                        "`` `edge` ``",
		" lead":                         "`  lead `",
		"   ":                           "`   `",
		"esc\x1b]8;;http://e\x07\u202e": "`esc\\x1b]8;;http://e\\x07\\u202e`",
	} {
		if got := Code(in); got != want {
			t.Errorf("Code(%q) = %q, want %q", in, got, want)
		}
	}
}
