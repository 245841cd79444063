package secrets

import (
	"regexp/syntax"
	"strings"
)

// startFilter is a cheap necessary condition for an anchored regexp to
// match at the start of a text: the text begins with one of a few
// literals and the byte after the literal is one the rest of the regexp
// can begin with. A keyword hit of an anchored rule is checked with it
// before the regexp runs: "ey", the JSON web token's keyword, is in every
// "key" and "they", and almost never followed by what a token needs.
type startFilter struct {
	alts []startAlt
}

type startAlt struct {
	lit  string // lower-case when fold
	fold bool
	next [256]bool
}

// newStartFilter derives the filter of expr; nil when it has none (an
// alternative that does not begin with an ASCII literal, or whose rest can
// match nothing at all).
func newStartFilter(expr string) *startFilter {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil
	}
	re = re.Simplify()
	alts := []*syntax.Regexp{re}
	if re.Op == syntax.OpAlternate {
		alts = re.Sub
	}
	f := &startFilter{}
	for _, alt := range alts {
		elems := flattenConcat(alt, nil)
		k := 0
		for k < len(elems) && zeroWidth(elems[k].Op) {
			k++
		}
		if k == len(elems) || elems[k].Op != syntax.OpLiteral || len(elems[k].Rune) == 0 {
			return nil
		}
		lit := elems[k]
		a := startAlt{fold: lit.Flags&syntax.FoldCase != 0}
		for _, r := range lit.Rune {
			if r >= 0x80 {
				return nil
			}
		}
		a.lit = string(lit.Rune)
		if a.fold {
			// (?i)k matches the Kelvin sign and (?i)s the long s: leave
			// such literals to the regexp.
			a.lit = strings.ToLower(a.lit)
			if strings.ContainsAny(a.lit, "ks") {
				return nil
			}
		}
		nullable := true
		for _, e := range elems[k+1:] {
			if !firstBytes(e, &a.next) {
				nullable = false
				break
			}
		}
		if nullable {
			return nil
		}
		f.alts = append(f.alts, a)
	}
	return f
}

// allows reports whether a match of the regexp may start at s[0].
func (f *startFilter) allows(s string) bool {
	for i := range f.alts {
		a := &f.alts[i]
		if len(s) <= len(a.lit) {
			continue // the rest of the regexp needs a byte
		}
		if a.fold && !hasPrefixFold(s, a.lit) || !a.fold && !strings.HasPrefix(s, a.lit) {
			continue
		}
		if a.next[s[len(a.lit)]] {
			return true
		}
	}
	return false
}

// flattenConcat lists the parts of re in sequence, groups and nested
// sequences opened.
func flattenConcat(re *syntax.Regexp, out []*syntax.Regexp) []*syntax.Regexp {
	switch re.Op {
	case syntax.OpCapture:
		return flattenConcat(re.Sub[0], out)
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			out = flattenConcat(sub, out)
		}
		return out
	}
	return append(out, re)
}

func zeroWidth(op syntax.Op) bool {
	switch op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return true
	}
	return false
}

// firstBytes adds to set every byte a match of re can begin with and
// reports whether re can match the empty string (then what follows it can
// begin the match too). It errs on the side of more bytes: non-ASCII runes
// add every byte from 0x80.
func firstBytes(re *syntax.Regexp, set *[256]bool) (nullable bool) {
	high := func() {
		for c := 0x80; c < 0x100; c++ {
			set[c] = true
		}
	}
	switch re.Op {
	case syntax.OpLiteral:
		if len(re.Rune) == 0 {
			return true
		}
		r := re.Rune[0]
		if r >= 0x80 || re.Flags&syntax.FoldCase != 0 {
			high() // a folded ASCII letter also matches a non-ASCII rune
		}
		if r < 0x80 {
			set[r] = true
			if re.Flags&syntax.FoldCase != 0 {
				set[lowerTable[r]] = true
				set[upperASCII(byte(r))] = true
			}
		}
		return false
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			lo, hi := re.Rune[i], re.Rune[i+1]
			for c := lo; c <= hi && c < 0x80; c++ {
				set[c] = true
			}
			if hi >= 0x80 {
				high()
			}
		}
		return false
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		for c := range set {
			if c != '\n' || re.Op == syntax.OpAnyChar {
				set[c] = true
			}
		}
		return false
	case syntax.OpCapture, syntax.OpPlus:
		return firstBytes(re.Sub[0], set)
	case syntax.OpStar, syntax.OpQuest:
		firstBytes(re.Sub[0], set)
		return true
	case syntax.OpRepeat:
		n := firstBytes(re.Sub[0], set)
		return n || re.Min == 0
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			if !firstBytes(sub, set) {
				return false
			}
		}
		return true
	case syntax.OpAlternate:
		nullable := false
		for _, sub := range re.Sub {
			if firstBytes(sub, set) {
				nullable = true
			}
		}
		return nullable
	}
	if zeroWidth(re.Op) {
		return true
	}
	for c := range set { // unknown: anything
		set[c] = true
	}
	return true
}

func upperASCII(c byte) byte {
	if c >= 'a' && c <= 'z' {
		return c - 'a' + 'A'
	}
	return c
}
