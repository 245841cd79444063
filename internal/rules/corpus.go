package rules

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// CorpusCase is one labelled review case (a txtar file) of the quality corpus.
//
// Format: a header of "key: value" lines — lang, kind (positive|negative),
// optional note, and for positives one or more "expect: <rule-id> <path>:<line>"
// (the new-side line of a planted issue) — followed by txtar files
// "-- a/<path> --" (old version; omitted for a new file) and "-- b/<path> --"
// (new version; omitted for a deleted file).
type CorpusCase struct {
	Name   string // file name without .txtar
	Lang   string
	Kind   string // positive or negative
	Note   string
	Expect []Expectation
	Files  []CorpusFile
}

// Expectation is one planted issue.
type Expectation struct {
	RuleID string
	Path   string
	Line   int
}

// CorpusFile is one file of a case, old and/or new version.
type CorpusFile struct {
	Path     string
	Old, New []byte // nil when absent
}

// Changes turns the case into Files (line diff of old vs new), sorted by path.
func (c CorpusCase) Changes() []*File {
	out := make([]*File, 0, len(c.Files))
	for _, f := range c.Files {
		out = append(out, DiffFile(f.Path, f.Old, f.New))
	}
	return out
}

// LoadCorpus reads every *.txtar case in dir, sorted by name.
func LoadCorpus(dir string) ([]CorpusCase, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.txtar"))
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("corpus: no *.txtar cases in %s", dir)
	}
	sort.Strings(names)
	var out []CorpusCase
	for _, n := range names {
		data, err := os.ReadFile(n)
		if err != nil {
			return nil, err
		}
		c, err := ParseCorpusCase(strings.TrimSuffix(filepath.Base(n), ".txtar"), data)
		if err != nil {
			return nil, fmt.Errorf("corpus %s: %w", filepath.Base(n), err)
		}
		out = append(out, c)
	}
	return out, nil
}

// ParseCorpusCase parses one txtar case.
func ParseCorpusCase(name string, data []byte) (CorpusCase, error) {
	c := CorpusCase{Name: name}
	comment, files := parseTxtar(data)
	for i, line := range strings.Split(string(comment), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			return c, fmt.Errorf("header line %d: want key: value, got %q", i+1, line)
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "lang":
			c.Lang = v
		case "kind":
			c.Kind = v
		case "note":
			c.Note = v
		case "expect":
			f := strings.Fields(v)
			if len(f) != 2 {
				return c, fmt.Errorf("header line %d: expect wants <rule-id> <path>:<line>, got %q", i+1, v)
			}
			j := strings.LastIndexByte(f[1], ':')
			if j < 0 {
				return c, fmt.Errorf("header line %d: expect location %q has no :<line>", i+1, f[1])
			}
			ln, err := strconv.Atoi(f[1][j+1:])
			if err != nil || ln < 1 {
				return c, fmt.Errorf("header line %d: bad line number in %q", i+1, f[1])
			}
			c.Expect = append(c.Expect, Expectation{RuleID: f[0], Path: f[1][:j], Line: ln})
		default:
			return c, fmt.Errorf("header line %d: unknown key %q", i+1, k)
		}
	}
	switch c.Kind {
	case "positive":
		if len(c.Expect) == 0 {
			return c, fmt.Errorf("positive case without expect lines")
		}
	case "negative":
		if len(c.Expect) > 0 {
			return c, fmt.Errorf("negative case with expect lines")
		}
	default:
		return c, fmt.Errorf("kind must be positive or negative, got %q", c.Kind)
	}
	byPath := map[string]*CorpusFile{}
	var order []string
	for _, f := range files {
		var side string
		var p string
		switch {
		case strings.HasPrefix(f.name, "a/"):
			side, p = "a", f.name[2:]
		case strings.HasPrefix(f.name, "b/"):
			side, p = "b", f.name[2:]
		default:
			return c, fmt.Errorf("file %q: name must start with a/ or b/", f.name)
		}
		cf := byPath[p]
		if cf == nil {
			cf = &CorpusFile{Path: p}
			byPath[p] = cf
			order = append(order, p)
		}
		d := f.data
		if d == nil {
			d = []byte{}
		}
		if side == "a" {
			cf.Old = d
		} else {
			cf.New = d
		}
	}
	if len(order) == 0 {
		return c, fmt.Errorf("no files")
	}
	sort.Strings(order)
	for _, p := range order {
		c.Files = append(c.Files, *byPath[p])
	}
	for _, e := range c.Expect {
		cf := byPath[e.Path]
		if cf == nil || cf.New == nil {
			return c, fmt.Errorf("expect %s %s:%d: no b/%s file", e.RuleID, e.Path, e.Line, e.Path)
		}
		if n := len(SplitLines(string(cf.New))); e.Line > n {
			return c, fmt.Errorf("expect %s %s:%d: file has only %d lines", e.RuleID, e.Path, e.Line, n)
		}
	}
	return c, nil
}

type txtarFile struct {
	name string
	data []byte
}

// parseTxtar implements the txtar format (golang.org/x/tools/txtar).
func parseTxtar(data []byte) ([]byte, []txtarFile) {
	var files []txtarFile
	comment, name, rest := findMarker(data)
	for name != "" {
		var d []byte
		d, name2, rest2 := findMarker(rest)
		files = append(files, txtarFile{name: name, data: d})
		name, rest = name2, rest2
	}
	return comment, files
}

var markerStart, markerEnd = []byte("-- "), []byte(" --")

func findMarker(data []byte) (before []byte, name string, after []byte) {
	var i int
	for {
		if n, after := isMarker(data[i:]); n != "" {
			return data[:i], n, after
		}
		j := bytes.IndexByte(data[i:], '\n')
		if j < 0 {
			return data, "", nil
		}
		i += j + 1
	}
}

func isMarker(data []byte) (string, []byte) {
	if !bytes.HasPrefix(data, markerStart) {
		return "", nil
	}
	line := data
	var after []byte
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		line, after = data[:i], data[i+1:]
	}
	line = bytes.TrimRight(line, "\r")
	if !bytes.HasSuffix(line, markerEnd) || len(line) < len(markerStart)+len(markerEnd) {
		return "", nil
	}
	return strings.TrimSpace(string(line[len(markerStart) : len(line)-len(markerEnd)])), after
}
