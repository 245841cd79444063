// Package secretstest generates realistic, deterministic fake secrets for
// tests. Values are built at run time, so no literal credential sits in
// the repository for a push-protection scanner to trip over, and the same
// label always yields the same value (base and head of a test repository
// agree on the lines they share).
package secretstest

import (
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"unicode"
)

// Alphabets of generated values.
const (
	Upper    = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	Lower    = "abcdefghijklmnopqrstuvwxyz"
	Digits   = "0123456789"
	Alnum    = Upper + Lower + Digits
	UpperNum = Upper + Digits
	Hex      = Digits + "abcdef"
	Base64   = Alnum + "+/"
	URLSafe  = Alnum + "-_"
	Letters  = Upper + Lower
)

// Gen returns n characters of alphabet, fixed by label. When the alphabet
// has upper-case letters, lower-case letters or digits, the value has one
// of each (generated keys do; a value that happens to lack a class would
// make a test about entropy flaky in a way no real key is).
func Gen(label, alphabet string, n int) string {
	h := fnv.New64a()
	h.Write([]byte(label))
	seed := h.Sum64()
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	want := classes(alphabet)
	for {
		var b strings.Builder
		for range n {
			b.WriteByte(alphabet[r.IntN(len(alphabet))])
		}
		s := b.String()
		if n < 6 || classes(s) == want {
			return s
		}
	}
}

// GenLetterFirst is Gen whose first character is a letter: a line that
// starts with a letter is what git's default funcname pattern picks as a
// hunk header's function context.
func GenLetterFirst(label, alphabet string, n int) string {
	for i := 0; ; i++ {
		s := Gen(label+"#"+string(rune('a'+i%26))+strings.Repeat("'", i/26), alphabet, n)
		if unicode.IsLetter(rune(s[0])) {
			return s
		}
	}
}

func classes(s string) int {
	c := 0
	if strings.ContainsAny(s, Upper) {
		c |= 1
	}
	if strings.ContainsAny(s, Lower) {
		c |= 2
	}
	if strings.ContainsAny(s, Digits) {
		c |= 4
	}
	return c
}

// PEMBody returns lines of base64 key material, width characters each but
// the last, which is shorter and padded like a real DER encoding. first,
// when set, starts the first line (MIIEowIBAAKCAQEA for an RSA key).
// letterFirst makes every line start with a letter.
func PEMBody(label, first string, lines, width int, letterFirst bool) []string {
	out := make([]string, 0, lines)
	for i := range lines {
		n := width
		if i == lines-1 {
			n = width / 3
		}
		l := label + ":" + string(rune('A'+i%26)) + strings.Repeat("+", i/26)
		var s string
		if letterFirst {
			s = GenLetterFirst(l, Base64, n)
		} else {
			s = Gen(l, Base64, n)
		}
		if i == 0 && first != "" {
			s = first + s[len(first):]
		}
		if i == lines-1 {
			s = s[:len(s)-2] + "=="
		}
		out = append(out, s)
	}
	return out
}
