// Package needle finds a fixed string in text by skipping to the
// needle's rarest byte rather than its first.
//
// strings.Index skips to a needle's first byte with IndexByte, and on
// code many needles start with one of its commonest bytes: the "-" of
// "-----BEGIN " (every removed line of a patch), the "d" of
// "diffpal:ignore", the "0" of a hex secret. Each false stop costs a
// call. A Finder skips to the byte a static ranking (byteRank) calls
// rarest in code and text, and compares the needle around it. When that
// byte turns out common in the text at hand (more false stops than
// strings.Index tolerates before its own brute-force search), the rest is
// left to strings.Index, so the worst case stays strings.Index's: the
// text, and some needles, come from the change under review.
package needle

import "strings"

// Finder finds one needle.
type Finder struct {
	s  string
	at int // the offset of the needle's rarest byte
}

// New returns the Finder of s; s must not be empty.
func New(s string) Finder { return Finder{s: s, at: Rarest(s)} }

// String is the needle.
func (f Finder) String() string { return f.s }

// Contains reports whether text holds the needle.
func (f Finder) Contains(text string) bool { return f.Index(text, 0) >= 0 }

// Index is the offset of the first occurrence of the needle in text at or
// after from, -1 when there is none (also when from > len(text)).
func (f Finder) Index(text string, from int) int {
	n, at := len(f.s), f.at
	c := f.s[at]
	fails := 0
	for p := from; p+n <= len(text); {
		j := strings.IndexByte(text[p+at:len(text)-n+at+1], c)
		if j < 0 {
			return -1
		}
		p += j
		if text[p:p+n] == f.s {
			return p
		}
		p++
		if fails++; fails > 4+(p-from)>>4 {
			if k := strings.Index(text[p:], f.s); k >= 0 {
				return p + k
			}
			return -1
		}
	}
	return -1
}

// byteRank orders bytes by how common they are in code and text, lower
// is rarer: capitals and uncommon punctuation, then digits but 0-2 and
// the colon, then lower-case letters and common punctuation, then 0-2 and
// the commonest letters, then white space.
var byteRank = func() (r [256]uint8) {
	for b := range 256 {
		c := byte(b)
		switch {
		case c >= 'A' && c <= 'Z':
			r[b] = 1
		case c >= '3' && c <= '9', c == ':':
			r[b] = 2
		case strings.IndexByte("etaoinsrlcd012", c) >= 0:
			r[b] = 4
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			r[b] = 5
		case c >= 'a' && c <= 'z', strings.IndexByte("_-.,;/()[]{}\"'=", c) >= 0:
			r[b] = 3
		default:
			r[b] = 1 // other punctuation, control and non-ASCII bytes
		}
	}
	return r
}()

// Rarest is the offset of s's rarest byte (byteRank), the first of the
// rarest; 0 for an empty s.
func Rarest(s string) int {
	best := 0
	for i := 1; i < len(s); i++ {
		if byteRank[s[i]] < byteRank[s[best]] {
			best = i
		}
	}
	return best
}
