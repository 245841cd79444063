package secrets

import (
	"regexp/syntax"
	"strings"

	"github.com/diffpalhq/diffpal/internal/rxstart"
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
		for k < len(elems) && rxstart.ZeroWidth(elems[k].Op) {
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
		if rxstart.SeqFirstBytes(elems[k+1:], &a.next) {
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
