package rules

import (
	"regexp"
	"strings"
	"sync"
)

// lazyRE is a rule's regular expression, compiled when a rule first
// evaluates it. A review runs most rules on few lines (the literal index
// decides which), and compiling all of the built-in rules' expressions
// up front was most of loading them (~40% of the rule set's start-up,
// go test -bench Load ./internal/rules). The built-in packs' expressions
// are known to compile (TestBuiltinRegexpsCompile); a user pack's are
// compiled when the pack loads, so a mistake in one is reported with its
// pack, rule and field.
type lazyRE struct {
	src  string
	once sync.Once
	re   *regexp.Regexp
}

// newLazyRE returns src to be compiled on first use; eager compiles it
// now and reports its error.
func newLazyRE(src string, eager bool) (*lazyRE, error) {
	l := &lazyRE{src: src}
	if eager {
		re, err := regexp.Compile(src)
		if err != nil {
			return nil, err
		}
		l.once.Do(func() { l.re = re })
	}
	return l, nil
}

func (l *lazyRE) get() *regexp.Regexp {
	l.once.Do(func() { l.re = regexp.MustCompile(l.src) })
	return l.re
}

func (l *lazyRE) MatchString(s string) bool              { return l.get().MatchString(s) }
func (l *lazyRE) FindStringSubmatchIndex(s string) []int { return l.get().FindStringSubmatchIndex(s) }

// SubexpIndex answers -1 without compiling when the source cannot hold a
// group of that name ((?P<name>…) and (?<name>…) both spell "<name>"):
// every rule with a pattern asks for its "secret" group at load.
func (l *lazyRE) SubexpIndex(name string) int {
	if !strings.Contains(l.src, "<"+name+">") {
		return -1
	}
	return l.get().SubexpIndex(name)
}
