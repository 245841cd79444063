package clip

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestText(t *testing.T) {
	cases := []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"abcdefghijk", 10, "abcdefg…"},
		// "é" is two bytes; the cut at 7 would fall inside the fourth one.
		{"éééééé", 10, "ééé…"},
		// A four-byte rune straddling the cut is dropped whole.
		{"ab😀cdefgh", 8, "ab…"},
		{"abcdef", 2, "ab"},
		{"éé", 3, "…"},
		{"ééé", 2, "é"},
		{"ééé", 1, ""},
		{"abc", 0, ""},
		{"abc", -1, ""},
	}
	for _, c := range cases {
		got := Text(c.in, c.n)
		if got != c.want {
			t.Errorf("Text(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}

func FuzzText(f *testing.F) {
	f.Add("ab😀cdefgh", 8)
	f.Add(strings.Repeat("é", 50), 33)
	f.Fuzz(func(t *testing.T, s string, n int) {
		if !utf8.ValidString(s) || n < 0 || n > 1<<16 {
			t.Skip()
		}
		got := Text(s, n)
		if len(got) > n {
			t.Fatalf("Text(%q, %d) = %q: %d bytes, over the limit", s, n, got, len(got))
		}
		if !utf8.ValidString(got) {
			t.Fatalf("Text(%q, %d) = %q: not valid UTF-8", s, n, got)
		}
		if len(s) <= n && got != s {
			t.Fatalf("Text(%q, %d) = %q: changed text that fit", s, n, got)
		}
		if !strings.HasPrefix(s, strings.TrimSuffix(got, Ellipsis)) {
			t.Fatalf("Text(%q, %d) = %q: not a prefix of the input", s, n, got)
		}
	})
}
