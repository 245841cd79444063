// Package yamlsafe decodes YAML that a stranger may have written (the
// repository's config, a rule pack in the change under review) within
// bounds: a size limit, a nesting limit checked before the parser runs, and
// a limit on the nodes the document expands to once aliases are resolved,
// checked before it is decoded. A breach is an *Error naming the file, the
// line and the limit — never an out-of-memory crash.
//
// Errors never carry the YAML library's multi-line source excerpt: they
// quote at most the offending line, clipped and passed through the caller's
// redactor, so that a config pointing at a secret file cannot print it.
package yamlsafe

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/diffpalhq/diffpal/internal/clip"
	"github.com/diffpalhq/diffpal/internal/secrets"
	"github.com/diffpalhq/diffpal/internal/textsafe"
)

// Limits bound one document.
type Limits struct {
	// MaxBytes is the largest accepted input.
	MaxBytes int
	// MaxDepth is the deepest nesting of collections (block indentation
	// levels plus flow brackets).
	MaxDepth int
	// MaxNodes is the number of nodes the document may expand to with every
	// alias replaced by what it names (the "billion laughs" bound).
	MaxNodes int
}

// Config bounds a config file; RulePack a user rule pack.
var (
	Config   = Limits{MaxBytes: 1 << 20, MaxDepth: 64, MaxNodes: 100_000}
	RulePack = Limits{MaxBytes: 4 << 20, MaxDepth: 64, MaxNodes: 1_000_000}
)

// Error is a rejected or undecodable document.
type Error struct {
	File   string
	Line   int // 0 when the problem is the whole file
	Column int
	Msg    string
	// Excerpt is the offending line, clipped and redacted ("" if none).
	Excerpt string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
		if e.Column > 0 {
			fmt.Fprintf(&b, ":%d", e.Column)
		}
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	if e.Excerpt != "" {
		b.WriteString("\n    | ")
		b.WriteString(e.Excerpt)
	}
	return b.String()
}

// maxExcerpt is how much of the offending line an error quotes.
const maxExcerpt = 120

// Decode checks data against lim and decodes it strictly (unknown keys are
// errors) into v. name is how the file is named in errors; redact, when
// set, is applied to the quoted line (default: secrets.Redact).
func Decode(name string, data []byte, v any, lim Limits, redact func(string) string) (err error) {
	// The YAML library has panicked on fuzzed input (a nil node in a
	// sequence, found by FuzzUserPack); a stranger's file must get an
	// error, not a crash.
	defer func() {
		if r := recover(); r != nil {
			err = &Error{File: name, Msg: fmt.Sprintf("the YAML decoder failed on this input (%v)", r)}
		}
	}()
	mk := func(line, col int, format string, args ...any) *Error {
		e := &Error{File: name, Line: line, Column: col, Msg: fmt.Sprintf(format, args...)}
		if line > 0 {
			e.Excerpt = excerpt(data, line, redact)
		}
		return e
	}
	if lim.MaxBytes > 0 && len(data) > lim.MaxBytes {
		return mk(0, 0, "is %d bytes, over the limit of %d bytes", len(data), lim.MaxBytes)
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return mk(lineOf(data, bytes.IndexByte(data, 0)), 0, "contains a NUL byte: not a YAML text file")
	}
	if lim.MaxDepth > 0 {
		if line, depth := scanDepth(data, lim.MaxDepth); depth > lim.MaxDepth {
			return mk(line, 0, "nesting deeper than the limit of %d levels", lim.MaxDepth)
		}
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	file, perr := parser.ParseBytes(data, 0)
	if perr != nil {
		return fromYAML(perr, mk)
	}
	if lim.MaxNodes > 0 {
		c := &counter{anchors: map[string]int{}, limit: lim.MaxNodes}
		for _, d := range file.Docs {
			c.total = sat(c.total + c.count(d.Body, 0))
			if c.total > lim.MaxNodes {
				return mk(c.line, 0, "expands to more than %d nodes once aliases are resolved (an alias bomb?)", lim.MaxNodes)
			}
		}
		if c.deep {
			return mk(c.line, 0, "nesting deeper than the limit of %d levels", 4*lim.MaxDepth)
		}
	}
	if err := yaml.NewDecoder(bytes.NewReader(data), yaml.Strict()).Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return nil // only comments: an empty document
		}
		return fromYAML(err, mk)
	}
	return nil
}

// fromYAML turns a goccy error into an Error without its source excerpt.
func fromYAML(err error, mk func(int, int, string, ...any) *Error) error {
	var ye yaml.Error
	if errors.As(err, &ye) {
		line, col := 0, 0
		if tk := ye.GetToken(); tk != nil && tk.Position != nil {
			line, col = tk.Position.Line, tk.Position.Column
		}
		return mk(line, col, "%s", firstLine(ye.GetMessage()))
	}
	return mk(0, 0, "%s", firstLine(err.Error()))
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return clip.Text(s, 300)
}

// excerpt returns line n (1-based) of data, clipped and redacted, with
// control characters made visible so the quote cannot reshape a terminal.
func excerpt(data []byte, n int, redact func(string) string) string {
	lines := bytes.SplitN(data, []byte("\n"), n+1)
	if n < 1 || n > len(lines) {
		return ""
	}
	s := strings.TrimRight(string(lines[n-1]), "\r")
	s = clip.Text(s, 4*maxExcerpt) // bound the redactor's input
	if redact == nil {
		redact = secrets.Redact
	}
	s = redact(s)
	s = textsafe.Visible(s) // the one escaper: control and bidi characters shown, not obeyed
	return clip.Text(s, maxExcerpt)
}

func lineOf(data []byte, off int) int { return bytes.Count(data[:off], []byte("\n")) + 1 }

// scanDepth estimates the nesting depth before the parser sees the text:
// the number of open block indentation levels plus open flow brackets,
// outside quotes and comments. It is conservative on purpose (a bracket
// that starts a flow collection counts; one inside a plain scalar does
// not) and stops as soon as the limit is passed, returning the line.
func scanDepth(data []byte, limit int) (line, depth int) {
	var indents []int // open block indentation columns
	flow := 0
	line = 1
	i := 0
	for i < len(data) {
		// Start of a line: measure indentation.
		col := 0
		for i < len(data) && data[i] == ' ' {
			col++
			i++
		}
		blank := i >= len(data) || data[i] == '\n' || data[i] == '\r' || data[i] == '#'
		if !blank && flow == 0 {
			for len(indents) > 0 && indents[len(indents)-1] >= col {
				indents = indents[:len(indents)-1]
			}
			indents = append(indents, col)
			// A "- - - x" line opens one level per dash.
			for j := i; j+1 < len(data) && data[j] == '-' && data[j+1] == ' '; j += 2 {
				for j+2 < len(data) && data[j+2] == ' ' {
					j++
				}
				indents = append(indents, col+j-i+2)
			}
		}
		if d := len(indents) + flow; d > limit {
			return line, d
		}
		// The rest of the line.
		prev := byte(' ') // last significant byte, for "can a flow start here"
		for i < len(data) && data[i] != '\n' {
			c := data[i]
			switch {
			case c == '#' && (prev == ' ' || prev == '\t' || prev == ','):
				for i < len(data) && data[i] != '\n' {
					i++
				}
				continue
			case c == '"' || c == '\'':
				if flow > 0 || prev == ' ' || prev == ':' || prev == '-' || prev == '[' || prev == '{' || prev == ',' {
					i = skipQuoted(data, i, &line)
					prev = c
					continue
				}
			case c == '[' || c == '{':
				if flow > 0 || prev == ' ' || prev == ':' || prev == '-' || prev == '?' {
					flow++
					if d := len(indents) + flow; d > limit {
						return line, d
					}
				}
			case (c == ']' || c == '}') && flow > 0:
				flow--
			}
			if c != ' ' && c != '\t' {
				prev = c
			} else if prev != ':' && prev != '-' && prev != ',' && prev != '[' && prev != '{' {
				prev = ' '
			}
			i++
		}
		if i < len(data) {
			i++
			line++
		}
	}
	return line, len(indents) + flow
}

// skipQuoted returns the index after the quoted scalar starting at i,
// counting the lines it spans.
func skipQuoted(data []byte, i int, line *int) int {
	q := data[i]
	i++
	for i < len(data) {
		c := data[i]
		switch {
		case c == '\n':
			*line++
		case q == '"' && c == '\\':
			i++
			if i < len(data) && data[i] == '\n' {
				*line++
			}
		case c == q:
			if q == '\'' && i+1 < len(data) && data[i+1] == '\'' {
				i++ // '' is an escaped quote
				break
			}
			return i + 1
		}
		i++
	}
	return i
}

// counter sizes a document with aliases expanded, saturating at limit.
type counter struct {
	anchors map[string]int
	limit   int
	total   int
	line    int // where the limit was passed
	deep    bool
}

func sat(n int) int {
	if n < 0 || n > 1<<40 {
		return 1 << 40
	}
	return n
}

func (c *counter) count(n ast.Node, depth int) int {
	if n == nil {
		return 0
	}
	if depth > 1024 {
		// The text scan bounds nesting; this guards the recursion itself.
		c.deep = true
		return 1
	}
	size := 1
	switch n := n.(type) {
	case *ast.MappingNode:
		for _, v := range n.Values {
			size = sat(size + c.count(v, depth+1))
		}
	case *ast.MappingValueNode:
		size = sat(c.count(n.Key, depth+1) + c.count(n.Value, depth+1))
	case *ast.SequenceNode:
		for _, v := range n.Values {
			size = sat(size + c.count(v, depth+1))
		}
	case *ast.AnchorNode:
		size = c.count(n.Value, depth+1)
		if n.Name != nil {
			c.anchors[n.Name.String()] = size
		}
	case *ast.AliasNode:
		if n.Value != nil {
			size = max(c.anchors[n.Value.String()], 1)
		}
	case *ast.TagNode:
		size = c.count(n.Value, depth+1)
	case *ast.MappingKeyNode:
		size = c.count(n.Value, depth+1)
	case *ast.CommentNode, *ast.CommentGroupNode:
		return 0
	}
	if size > c.limit && c.line == 0 {
		if tk := n.GetToken(); tk != nil && tk.Position != nil {
			c.line = tk.Position.Line
		}
	}
	return size
}
