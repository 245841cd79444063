// Package scope decides which changed files a review looks at: the
// .diffpalignore file (gitignore semantics), configured include/exclude
// globs, and the default skips (lock files, vendored, generated, binary,
// oversized). Every skipped file is reported with its reason; nothing is
// dropped silently.
package scope

import (
	"bufio"
	"bytes"
	"path"
	"strings"
)

// Ignore is a parsed gitignore-style pattern list. Later patterns win, "!"
// re-includes, a trailing "/" matches directories only, a leading or inner
// "/" anchors to the root, "**" spans directories.
type Ignore struct {
	patterns []pattern
}

type pattern struct {
	glob    string
	negate  bool
	dirOnly bool
	anchor  bool
	line    int
}

// ParseIgnore parses .diffpalignore content.
func ParseIgnore(data []byte) *Ignore {
	ig := &Ignore{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimRight(sc.Text(), "\r")
		// Trailing spaces are ignored unless escaped.
		for strings.HasSuffix(line, " ") && !strings.HasSuffix(line, `\ `) {
			line = line[:len(line)-1]
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		p := pattern{line: n}
		if strings.HasPrefix(line, "!") {
			p.negate, line = true, line[1:]
		} else if strings.HasPrefix(line, `\!`) || strings.HasPrefix(line, `\#`) {
			line = line[1:]
		}
		line = strings.ReplaceAll(line, `\ `, " ")
		if strings.HasSuffix(line, "/") {
			p.dirOnly, line = true, strings.TrimSuffix(line, "/")
		}
		if strings.HasPrefix(line, "/") {
			p.anchor, line = true, line[1:]
		} else if strings.Contains(line, "/") && !strings.HasPrefix(line, "**/") {
			p.anchor = true
		}
		if line == "" {
			continue
		}
		p.glob = line
		ig.patterns = append(ig.patterns, p)
	}
	return ig
}

// Match reports whether a repo-relative file path is ignored, and by which
// pattern line (for the skip reason).
func (ig *Ignore) Match(file string) (ignored bool, line int) {
	if ig == nil {
		return false, 0
	}
	// A file is ignored when it or any parent directory matches; parents
	// are checked first so that a later pattern can still re-include.
	parts := strings.Split(file, "/")
	for _, p := range ig.patterns {
		for i := 1; i <= len(parts); i++ {
			sub := strings.Join(parts[:i], "/")
			isDir := i < len(parts)
			if p.dirOnly && !isDir {
				continue
			}
			if p.matches(sub) {
				ignored, line = !p.negate, p.line
				break
			}
		}
	}
	return ignored, line
}

func (p pattern) matches(sub string) bool {
	if p.anchor {
		return globMatch(p.glob, sub)
	}
	// Unanchored: match the base name, or any suffix for "**/" patterns.
	if strings.HasPrefix(p.glob, "**/") {
		return globMatch(p.glob, sub)
	}
	return globMatch(p.glob, path.Base(sub))
}

// globMatch matches a path against a glob where "*" and "?" stay inside one
// segment, "**" spans any number of segments, and [...] classes work as in
// path.Match.
func globMatch(glob, name string) bool {
	gs := strings.Split(glob, "/")
	ns := strings.Split(name, "/")
	return matchSegs(gs, ns)
}

func matchSegs(gs, ns []string) bool {
	for len(gs) > 0 {
		if gs[0] == "**" {
			rest := gs[1:]
			if len(rest) == 0 {
				return true
			}
			for i := 0; i <= len(ns); i++ {
				if matchSegs(rest, ns[i:]) {
					return true
				}
			}
			return false
		}
		if len(ns) == 0 {
			return false
		}
		ok, err := path.Match(gs[0], ns[0])
		if err != nil || !ok {
			return false
		}
		gs, ns = gs[1:], ns[1:]
	}
	return len(ns) == 0
}

// Glob reports whether a path matches a config include/exclude glob (the
// same syntax; a glob without "/" matches the base name anywhere).
func Glob(glob, file string) bool {
	p := ParseIgnore([]byte(glob))
	ok, _ := p.Match(file)
	return ok
}
