// Package rxstart works out, from a regular expression's syntax, which
// bytes a match of it can begin with: a prefilter that passes over the
// offsets (or lines) where no match can start, before the regexp runs.
// The secret detector's start filters and the rule engine's definition
// patterns use it.
package rxstart

import "regexp/syntax"

// ZeroWidth reports whether op matches without consuming a byte.
func ZeroWidth(op syntax.Op) bool {
	switch op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return true
	}
	return false
}

// SeqFirstBytes is FirstBytes of the sequence subs (a concatenation's
// parts, or what follows a prefix of them): the bytes its match can begin
// with, and whether it can match the empty string.
func SeqFirstBytes(subs []*syntax.Regexp, set *[256]bool) (nullable bool) {
	for _, sub := range subs {
		if !FirstBytes(sub, set) {
			return false
		}
	}
	return true
}

// FirstBytes adds to set every byte a match of re (parsed and simplified)
// can begin with and reports whether re can match the empty string (then
// what follows it can begin the match too). It errs on the side of more
// bytes: a non-ASCII rune, a class reaching past ASCII and a folded letter
// (which may match a non-ASCII rune: (?i)k the Kelvin sign) add every
// byte from 0x80 (a UTF-8 lead byte, or an invalid byte read as U+FFFD),
// and an operator it does not model adds every byte.
func FirstBytes(re *syntax.Regexp, set *[256]bool) (nullable bool) {
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
				set[lowerASCII(byte(r))] = true
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
		return FirstBytes(re.Sub[0], set)
	case syntax.OpStar, syntax.OpQuest:
		FirstBytes(re.Sub[0], set)
		return true
	case syntax.OpRepeat:
		n := FirstBytes(re.Sub[0], set)
		return n || re.Min == 0
	case syntax.OpConcat:
		return SeqFirstBytes(re.Sub, set)
	case syntax.OpAlternate:
		nullable := false
		for _, sub := range re.Sub {
			if FirstBytes(sub, set) {
				nullable = true
			}
		}
		return nullable
	}
	if ZeroWidth(re.Op) {
		return true
	}
	for c := range set { // unknown: anything
		set[c] = true
	}
	return true
}

func lowerASCII(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c - 'A' + 'a'
	}
	return c
}

func upperASCII(c byte) byte {
	if c >= 'a' && c <= 'z' {
		return c - 'a' + 'A'
	}
	return c
}
