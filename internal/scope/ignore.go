// Package scope decides which changed files a review looks at: the
// .diffpalignore file (gitignore semantics), configured include/exclude
// globs, and the default skips (lock files, vendored, generated, binary,
// oversized). Every skipped file is reported with its reason; nothing is
// dropped silently.
package scope

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// Ignore is a parsed gitignore pattern list with git's semantics (see
// `man gitignore`): the last matching pattern decides, "!" re-includes,
// a trailing "/" matches directories only, a leading or middle "/"
// anchors the pattern to the root (otherwise it matches the base name at
// any depth), "*", "?" and "[...]" never match "/", "**/", "/**" and
// "/**/" span directories, and a backslash quotes the next character.
// As in git, a file cannot be re-included when one of its parent
// directories is excluded: git never looks inside an excluded directory.
type Ignore struct {
	patterns []pattern
}

type pattern struct {
	toks     []token
	negate   bool
	dirOnly  bool // trailing "/": directories only
	basename bool // no "/" in the pattern: match the last path component
	line     int
}

// ParseIgnore parses .diffpalignore content. Invalid patterns never match
// (as in git); ParseIgnoreChecked reports them.
func ParseIgnore(data []byte) *Ignore {
	ig, _ := ParseIgnoreChecked(data)
	return ig
}

// ParseIgnoreChecked parses .diffpalignore content and returns an error
// for every invalid pattern, naming its line: a pattern that can never
// match is a scope the author did not mean.
func ParseIgnoreChecked(data []byte) (*Ignore, []error) {
	var problems []error
	ig := &Ignore{}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // git skips a UTF-8 BOM
	for i, raw := range strings.Split(string(data), "\n") {
		p, ok, err := parseLine(raw)
		if err != nil {
			problems = append(problems, fmt.Errorf("line %d: pattern %q: %v", i+1, strings.TrimRight(raw, "\r"), err))
			continue
		}
		if ok {
			p.line = i + 1
			ig.patterns = append(ig.patterns, p)
		}
	}
	return ig, problems
}

// parseLine parses one line of an ignore file; ok is false for blank
// lines, comments and patterns that are empty once "!" and the slashes are
// taken off (git accepts those but they match nothing).
func parseLine(line string) (p pattern, ok bool, err error) {
	if i := strings.IndexByte(line, 0); i >= 0 {
		line = line[:i] // git's patterns are C strings
	}
	line = strings.TrimSuffix(line, "\r")
	if line == "" || line[0] == '#' {
		return p, false, nil
	}
	line = trimTrailingSpaces(line)
	if strings.HasPrefix(line, "!") {
		p.negate, line = true, line[1:]
	}
	if strings.HasSuffix(line, "/") {
		p.dirOnly, line = true, line[:len(line)-1]
	}
	if !strings.Contains(line, "/") {
		p.basename = true
	} else {
		// Anchored: the pattern is matched against the whole path, so a
		// leading slash only says so.
		line = strings.TrimPrefix(line, "/")
	}
	// git matches an anchored pattern's literal head (up to the first
	// glob character) separately and runs the glob on the rest, so an
	// "**" right after that head counts as the start of a component:
	// "foo**/bar" matches foo/bar, foo/x/bar and even foobar.
	head := 0
	if !p.basename {
		head = len(line)
		if i := strings.IndexAny(line, `*?[\`); i >= 0 {
			head = i
		}
	}
	if p.toks, err = compile(line, head); err != nil {
		return p, false, err
	}
	return p, line != "", nil
}

// trimTrailingSpaces drops trailing spaces unless a backslash quotes them
// ("a\ " keeps one space). A backslash quotes any character; a backslash
// at the very end stops the trimming, as in git.
func trimTrailingSpaces(s string) string {
	cut := -1
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ':
			if cut < 0 {
				cut = i
			}
		case '\\':
			i++
			if i == len(s) {
				return s
			}
			cut = -1
		default:
			cut = -1
		}
	}
	if cut >= 0 {
		return s[:cut]
	}
	return s
}

// ValidGlob reports whether an include/exclude/ignores glob can match
// anything: empty, malformed and comment-only globs are errors.
func ValidGlob(glob string) error {
	if strings.TrimSpace(glob) == "" {
		return errors.New("must not be empty")
	}
	ig, problems := ParseIgnoreChecked([]byte(glob))
	if len(problems) > 0 {
		return fmt.Errorf("invalid glob %q: malformed (an unclosed [ or a trailing \\?)", glob)
	}
	if len(ig.patterns) == 0 {
		return fmt.Errorf("invalid glob %q: matches nothing (a comment, or empty once \"!\" and \"/\" are removed)", glob)
	}
	return nil
}

// Match reports whether a repo-relative file path is ignored, and by which
// pattern line (for the skip reason; for a file that a "!" pattern keeps,
// line is that pattern's). A path ending in "/" names a directory.
func (ig *Ignore) Match(file string) (ignored bool, line int) {
	if ig == nil || len(ig.patterns) == 0 {
		return false, 0
	}
	isDir := strings.HasSuffix(file, "/")
	file = strings.TrimRight(file, "/")
	if file == "" {
		return false, 0
	}
	// ends[k] is where the path's k-th component ends: the parent
	// directories, then the file itself.
	var ends []int
	for i := 1; i < len(file); i++ {
		if file[i] == '/' {
			ends = append(ends, i)
		}
	}
	ends = append(ends, len(file))
	// hits[p][k]: pattern p matches the path up to ends[k]. One pass over
	// the path per pattern answers for every level (the matcher is a
	// forward automaton, so a prefix's answer does not depend on what
	// follows it).
	hits := make([][]bool, len(ig.patterns))
	for i, p := range ig.patterns {
		h := make([]bool, len(ends))
		if p.basename {
			start := 0
			for k, end := range ends {
				comp := file[start:end]
				if r := reach(p.toks, comp); r != nil && r[len(comp)] {
					h[k] = true
				}
				start = end + 1
			}
		} else if r := reach(p.toks, file); r != nil {
			for k, end := range ends {
				h[k] = r[end]
			}
		}
		hits[i] = h
	}
	// Parent directories first, from the top: git does not descend into
	// an excluded directory, so nothing below it can be re-included. At
	// each level the last matching pattern decides.
	for k := range ends {
		last := k == len(ends)-1
		for i := len(ig.patterns) - 1; i >= 0; i-- {
			p := &ig.patterns[i]
			if !hits[i][k] || (p.dirOnly && last && !isDir) {
				continue
			}
			if last || !p.negate {
				return !p.negate, p.line
			}
			break // a re-included directory: look further down
		}
	}
	return false, 0
}

// Glob reports whether a path matches a config include/exclude glob (the
// same syntax; a glob without "/" matches the base name anywhere, and a
// glob matching a directory matches every file below it).
func Glob(glob, file string) bool {
	p := ParseIgnore([]byte(glob))
	ok, _ := p.Match(file)
	return ok
}

// A pattern compiles to a sequence of tokens, each matching a run of
// bytes. Matching is on bytes, as in git: "?" is one byte, not one rune.
type tokKind uint8

const (
	tLit      tokKind = iota // one literal byte
	tAny                     // "?": one byte other than "/"
	tClass                   // "[...]": one byte in the set, never "/"
	tStar                    // "*": any run of bytes without "/"
	tStarAll                 // trailing "/**" (or a lone "**"): anything
	tStarDirs                // "**/" at the start or after "/": zero or more whole directories
)

type token struct {
	kind tokKind
	b    byte
	set  *[256]bool
}

// compile turns a gitignore glob into tokens, or reports why git would
// never match it: an unclosed "[", an unknown "[:class:]", a trailing
// backslash. An "**" at index head counts as starting a component (see
// parseLine).
func compile(glob string, head int) ([]token, error) {
	var toks []token
	for i := 0; i < len(glob); i++ {
		c := glob[i]
		switch c {
		case '\\':
			i++
			if i == len(glob) {
				return nil, errors.New("malformed glob: a trailing \\ quotes nothing")
			}
			toks = append(toks, token{kind: tLit, b: glob[i]})
		case '?':
			toks = append(toks, token{kind: tAny})
		case '[':
			set, next, err := compileClass(glob, i+1)
			if err != nil {
				return nil, err
			}
			toks = append(toks, token{kind: tClass, set: set})
			i = next
		case '*':
			j := i
			for j < len(glob) && glob[j] == '*' {
				j++
			}
			// Two or more asterisks are special only as a whole path
			// component; elsewhere they are one "*".
			whole := j-i >= 2 && (i == 0 || i == head || glob[i-1] == '/')
			switch {
			case whole && j == len(glob):
				toks = append(toks, token{kind: tStarAll})
			case whole && glob[j] == '/':
				toks = append(toks, token{kind: tStarDirs})
				j++ // the slash belongs to the token
			case whole && strings.HasPrefix(glob[j:], `\/`):
				// "**\/": anything that ends in a slash (git's wildmatch
				// takes the quoted slash as a component end but not as
				// the zero-directory case).
				toks = append(toks, token{kind: tStarAll}, token{kind: tLit, b: '/'})
				j += 2
			default:
				toks = append(toks, token{kind: tStar})
			}
			i = j - 1
		default:
			toks = append(toks, token{kind: tLit, b: c})
		}
	}
	return toks, nil
}

// compileClass parses a bracket expression whose body starts at glob[i]
// (just after "["). It returns the set and the index of the closing "]".
// As in git: "!" or "^" first negates; a "]" first is a member; "\"
// quotes; "a-z" is a range unless "-" comes first or last; "[:alpha:]"
// and the other POSIX classes (ASCII) work; "[:" without ":]" is a
// literal "[".
func compileClass(glob string, i int) (*[256]bool, int, error) {
	unclosed := errors.New("malformed glob: unclosed [ (quote a literal bracket as \\[)")
	var set [256]bool
	negate := false
	if i < len(glob) && (glob[i] == '!' || glob[i] == '^') {
		negate = true
		i++
	}
	prev := -1 // the previous single member, the start of a possible range
	for first := true; ; first = false {
		if i >= len(glob) {
			return nil, 0, unclosed
		}
		c := glob[i]
		if c == ']' && !first {
			break
		}
		switch {
		case c == '\\':
			i++
			if i >= len(glob) {
				return nil, 0, unclosed
			}
			set[glob[i]] = true
			prev = int(glob[i])
		case c == '-' && prev >= 0 && i+1 < len(glob) && glob[i+1] != ']':
			i++
			hi := glob[i]
			if hi == '\\' {
				i++
				if i >= len(glob) {
					return nil, 0, unclosed
				}
				hi = glob[i]
			}
			for b := prev; b <= int(hi); b++ {
				set[b] = true
			}
			prev = -1
		case c == '[' && i+1 < len(glob) && glob[i+1] == ':':
			end := strings.IndexByte(glob[i+2:], ']')
			if end < 0 {
				return nil, 0, unclosed
			}
			name := glob[i+2 : i+2+end]
			if !strings.HasSuffix(name, ":") {
				// Not a class name: "[" is a member, and the scan goes
				// on right after it.
				set['['] = true
				prev = '['
				break
			}
			in, ok := posixClasses[strings.TrimSuffix(name, ":")]
			if !ok {
				return nil, 0, fmt.Errorf("malformed glob: unknown character class [:%s]", name)
			}
			for b := 0; b < 256; b++ {
				if in(byte(b)) {
					set[b] = true
				}
			}
			i += 2 + end
			prev = -1
		default:
			set[c] = true
			prev = int(c)
		}
		i++
	}
	if negate {
		for b := range set {
			set[b] = !set[b]
		}
	}
	set['/'] = false
	return &set, i, nil
}

var posixClasses = map[string]func(byte) bool{
	"alnum":  func(b byte) bool { return isAlpha(b) || isDigit(b) },
	"alpha":  isAlpha,
	"blank":  func(b byte) bool { return b == ' ' || b == '\t' },
	"cntrl":  func(b byte) bool { return b < 0x20 || b == 0x7f },
	"digit":  isDigit,
	"graph":  func(b byte) bool { return b > 0x20 && b < 0x7f },
	"lower":  func(b byte) bool { return b >= 'a' && b <= 'z' },
	"print":  func(b byte) bool { return b >= 0x20 && b < 0x7f },
	"punct":  func(b byte) bool { return b > 0x20 && b < 0x7f && !isAlpha(b) && !isDigit(b) },
	"space":  func(b byte) bool { return b == ' ' || (b >= '\t' && b <= '\r') },
	"upper":  func(b byte) bool { return b >= 'A' && b <= 'Z' },
	"xdigit": func(b byte) bool { return isDigit(b) || (b|0x20 >= 'a' && b|0x20 <= 'f') },
}

func isAlpha(b byte) bool { return b|0x20 >= 'a' && b|0x20 <= 'z' }
func isDigit(b byte) bool { return b >= '0' && b <= '9' }

// reach returns, for every i, whether toks match name[:i] (nil when they
// match no prefix). It tracks the set of positions in name reachable
// after each token, in O(len(toks)*len(name)) time: no pattern can make
// it backtrack exponentially.
func reach(toks []token, name string) []bool {
	n := len(name)
	cur := make([]bool, n+1)
	next := make([]bool, n+1)
	cur[0] = true
	for _, t := range toks {
		clear(next)
		alive := false
		switch t.kind {
		case tLit, tAny, tClass:
			for i := 0; i < n; i++ {
				if !cur[i] {
					continue
				}
				c := name[i]
				if (t.kind == tLit && c == t.b) || (t.kind == tAny && c != '/') || (t.kind == tClass && t.set[c]) {
					next[i+1], alive = true, true
				}
			}
		case tStar:
			// Extend every reachable position over bytes other than "/".
			on := false
			for i := 0; i <= n; i++ {
				if cur[i] {
					on = true
				}
				if on {
					next[i], alive = true, true
				}
				if i < n && name[i] == '/' {
					on = false
				}
			}
		case tStarAll:
			on := false
			for i := 0; i <= n; i++ {
				on = on || cur[i]
				if on {
					next[i], alive = true, true
				}
			}
		case tStarDirs:
			// Zero directories, or anything up to and including a "/".
			on := false
			for i := 0; i <= n; i++ {
				if cur[i] {
					next[i], alive = true, true
				}
				if i > 0 && on && name[i-1] == '/' {
					next[i], alive = true, true
				}
				on = on || cur[i]
			}
		}
		if !alive {
			return nil
		}
		cur, next = next, cur
	}
	return cur
}
