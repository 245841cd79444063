//go:build cgo

// Package syntax parses changed files with tree-sitter, the incremental
// parser semgrep and ast-grep stand on, and answers what the rule engine
// asks of a tree: which bytes are comments and strings, which nodes a
// query matches over the changed lines, and how to walk from a node to
// its function, its arguments and the assignments before it.
//
// The grammars are C code compiled by cgo, so building diffpal needs a C
// compiler; nocgo.go makes a build without one fail with a message that
// says so instead of silently dropping the syntax-aware rules.
package syntax

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sitter "github.com/smacker/go-tree-sitter"
	"github.com/smacker/go-tree-sitter/bash"
	"github.com/smacker/go-tree-sitter/csharp"
	"github.com/smacker/go-tree-sitter/dockerfile"
	"github.com/smacker/go-tree-sitter/golang"
	"github.com/smacker/go-tree-sitter/hcl"
	"github.com/smacker/go-tree-sitter/java"
	"github.com/smacker/go-tree-sitter/javascript"
	"github.com/smacker/go-tree-sitter/kotlin"
	"github.com/smacker/go-tree-sitter/php"
	"github.com/smacker/go-tree-sitter/python"
	"github.com/smacker/go-tree-sitter/ruby"
	"github.com/smacker/go-tree-sitter/typescript/tsx"
	"github.com/smacker/go-tree-sitter/typescript/typescript"
	"github.com/smacker/go-tree-sitter/yaml"
)

// ParseTimeout bounds one file's parse: the file comes from the change
// under review, and a pathological input must not stall the review.
const ParseTimeout = 5 * time.Second

// grammars maps a grammar name to its language. Names are diffpal's
// language ids (internal/rules.DetectLanguage) except tsx, which is the
// TypeScript grammar with JSX, chosen by file extension.
var grammars = map[string]func() *sitter.Language{
	"go":         golang.GetLanguage,
	"python":     python.GetLanguage,
	"javascript": javascript.GetLanguage,
	"typescript": typescript.GetLanguage,
	"tsx":        tsx.GetLanguage,
	"java":       java.GetLanguage,
	"kotlin":     kotlin.GetLanguage,
	"ruby":       ruby.GetLanguage,
	"php":        php.GetLanguage,
	"csharp":     csharp.GetLanguage,
	"shell":      bash.GetLanguage,
	"dockerfile": dockerfile.GetLanguage,
	"yaml":       yaml.GetLanguage,
	"hcl":        hcl.GetLanguage,
}

var (
	langMu    sync.Mutex
	langCache = map[string]*sitter.Language{}
)

func language(grammar string) *sitter.Language {
	langMu.Lock()
	defer langMu.Unlock()
	if l, ok := langCache[grammar]; ok {
		return l
	}
	get, ok := grammars[grammar]
	if !ok {
		return nil
	}
	l := get()
	langCache[grammar] = l
	return l
}

// Tree is one parsed file. It is not safe for concurrent use (the
// binding caches nodes), and Close frees its C memory.
type Tree struct {
	Grammar string
	src     []byte
	tree    *sitter.Tree
	root    *sitter.Node
	lines   []int // byte offset of each line start
}

// ErrNoGrammar is returned for a grammar this build does not bundle.
var ErrNoGrammar = errors.New("syntax: no grammar")

// Parse parses src with the named grammar (see Grammar).
func Parse(ctx context.Context, grammar string, src []byte) (*Tree, error) {
	lang := language(grammar)
	if lang == nil {
		return nil, fmt.Errorf("%w for %q", ErrNoGrammar, grammar)
	}
	ctx, cancel := context.WithTimeout(ctx, ParseTimeout)
	defer cancel()
	p := sitter.NewParser()
	defer p.Close()
	p.SetLanguage(lang)
	t, err := p.ParseCtx(ctx, nil, src)
	if err != nil {
		return nil, fmt.Errorf("syntax: parse (%s): %w", grammar, err)
	}
	tr := &Tree{Grammar: grammar, src: src, tree: t, root: t.RootNode()}
	tr.lines = append(tr.lines, 0)
	for i, c := range src {
		if c == '\n' {
			tr.lines = append(tr.lines, i+1)
		}
	}
	return tr, nil
}

// Close frees the tree. The tree and its nodes must not be used after.
func (t *Tree) Close() {
	if t != nil && t.tree != nil {
		t.tree.Close()
		t.tree = nil
	}
}

// Source is the parsed text.
func (t *Tree) Source() []byte { return t.src }

// Root is the tree's root node.
func (t *Tree) Root() Node { return Node{t: t, n: t.root} }

// LineStart is the byte offset of 1-based line n (len(src) past the end).
func (t *Tree) LineStart(n int) int {
	if n < 1 {
		return 0
	}
	if n > len(t.lines) {
		return len(t.src)
	}
	return t.lines[n-1]
}

// Node is a node of a Tree; the zero Node is null.
type Node struct {
	t *Tree
	n *sitter.Node
}

func (t *Tree) wrap(n *sitter.Node) Node {
	if n == nil || n.IsNull() {
		return Node{}
	}
	return Node{t: t, n: n}
}

// IsNull reports whether the node is absent.
func (n Node) IsNull() bool { return n.n == nil }

// Type is the grammar's node type ("call_expression", "comment").
func (n Node) Type() string {
	if n.n == nil {
		return ""
	}
	return n.n.Type()
}

// IsNamed reports whether the node is a named node (not punctuation).
func (n Node) IsNamed() bool { return n.n != nil && n.n.IsNamed() }

// Text is the node's source text.
func (n Node) Text() string {
	if n.n == nil {
		return ""
	}
	return string(n.t.src[n.n.StartByte():n.n.EndByte()])
}

// StartByte and EndByte bound the node in the source.
func (n Node) StartByte() int {
	if n.n == nil {
		return 0
	}
	return int(n.n.StartByte())
}

// EndByte is the offset just past the node.
func (n Node) EndByte() int {
	if n.n == nil {
		return 0
	}
	return int(n.n.EndByte())
}

// StartLine is the node's first line (1-based).
func (n Node) StartLine() int {
	if n.n == nil {
		return 0
	}
	return int(n.n.StartPoint().Row) + 1
}

// EndLine is the node's last line (1-based; a node ending at column 0
// of a line ends on the line before).
func (n Node) EndLine() int {
	if n.n == nil {
		return 0
	}
	p := n.n.EndPoint()
	if p.Column == 0 && p.Row > n.n.StartPoint().Row {
		return int(p.Row)
	}
	return int(p.Row) + 1
}

// Parent is the node's parent (null at the root).
func (n Node) Parent() Node {
	if n.n == nil {
		return Node{}
	}
	return n.t.wrap(n.n.Parent())
}

// ChildCount is the number of children, named and anonymous.
func (n Node) ChildCount() int {
	if n.n == nil {
		return 0
	}
	return int(n.n.ChildCount())
}

// Child is the i-th child.
func (n Node) Child(i int) Node {
	if n.n == nil || i < 0 || i >= n.ChildCount() {
		return Node{}
	}
	return n.t.wrap(n.n.Child(i))
}

// NamedChildCount is the number of named children.
func (n Node) NamedChildCount() int {
	if n.n == nil {
		return 0
	}
	return int(n.n.NamedChildCount())
}

// NamedChild is the i-th named child.
func (n Node) NamedChild(i int) Node {
	if n.n == nil || i < 0 || i >= n.NamedChildCount() {
		return Node{}
	}
	return n.t.wrap(n.n.NamedChild(i))
}

// Field is the child under a grammar field name ("function", "arguments").
func (n Node) Field(name string) Node {
	if n.n == nil {
		return Node{}
	}
	return n.t.wrap(n.n.ChildByFieldName(name))
}

// FieldNameOfChild is the field name of the i-th child ("" for none).
func (n Node) FieldNameOfChild(i int) string {
	if n.n == nil || i < 0 || i >= n.ChildCount() {
		return ""
	}
	return n.n.FieldNameForChild(i)
}

// Equal reports whether two nodes are the same node.
func (n Node) Equal(o Node) bool {
	if n.n == nil || o.n == nil {
		return n.n == nil && o.n == nil
	}
	return n.n.Equal(o.n)
}

// HasError reports whether the node or a descendant failed to parse.
func (n Node) HasError() bool { return n.n != nil && n.n.HasError() }

// Walk calls fn for n and every descendant in document order; fn
// returning false skips the node's children.
func (n Node) Walk(fn func(Node) bool) {
	if n.n == nil {
		return
	}
	c := sitter.NewTreeCursor(n.n)
	defer c.Close()
	for {
		cur := n.t.wrap(c.CurrentNode())
		if fn(cur) && c.GoToFirstChild() {
			continue
		}
		for !c.GoToNextSibling() {
			if !c.GoToParent() {
				return
			}
		}
	}
}

// Query is a compiled tree-sitter query for one grammar. It is immutable
// and safe to share; each Matches call uses its own cursor.
type Query struct {
	Grammar string
	q       *sitter.Query
	names   []string
	preds   [][]predicate // by pattern index
}

// predicate is one #eq?/#not-eq?/#match?/#not-match? of a pattern,
// resolved once at compile time: the binding's own filter re-reads every
// predicate through cgo and recompiles each regexp on every match (and
// panics on a bad one, which a user's rule pack may hold).
type predicate struct {
	negate   bool
	left     uint32 // capture id
	right    uint32 // capture id, when rightCap
	rightCap bool
	value    string
	re       *regexp.Regexp // for match?
}

// CompileQuery compiles a query (S-expression patterns with #eq?,
// #not-eq?, #match? and #not-match? predicates) for a grammar. Another
// predicate, or a #match? regexp that does not compile, is an error.
func CompileQuery(grammar, src string) (*Query, error) {
	lang := language(grammar)
	if lang == nil {
		return nil, fmt.Errorf("%w for %q", ErrNoGrammar, grammar)
	}
	q, err := sitter.NewQuery([]byte(src), lang)
	if err != nil {
		return nil, err
	}
	return newQuery(grammar, q)
}

// newQuery wraps a compiled query of grammar, resolving its predicates;
// it closes q when they do not resolve.
func newQuery(grammar string, q *sitter.Query) (*Query, error) {
	names := make([]string, q.CaptureCount())
	for i := range names {
		names[i] = q.CaptureNameForId(uint32(i))
	}
	out := &Query{Grammar: grammar, q: q, names: names, preds: make([][]predicate, q.PatternCount())}
	for pi := range out.preds {
		for _, steps := range q.PredicatesForPattern(uint32(pi)) {
			p, err := parsePredicate(q, steps)
			if err != nil {
				q.Close()
				return nil, fmt.Errorf("pattern %d: %w", pi+1, err)
			}
			out.preds[pi] = append(out.preds[pi], p)
		}
	}
	return out, nil
}

func parsePredicate(q *sitter.Query, steps []sitter.QueryPredicateStep) (predicate, error) {
	// steps: operator string, arguments..., done
	if len(steps) > 0 && steps[len(steps)-1].Type == sitter.QueryPredicateStepTypeDone {
		steps = steps[:len(steps)-1]
	}
	if len(steps) == 0 || steps[0].Type != sitter.QueryPredicateStepTypeString {
		return predicate{}, errors.New("malformed predicate")
	}
	op := q.StringValueForId(steps[0].ValueId)
	var p predicate
	switch op {
	case "eq?", "not-eq?", "match?", "not-match?":
	default:
		return p, fmt.Errorf("unsupported predicate #%s (supported: #eq?, #not-eq?, #match?, #not-match?)", op)
	}
	if len(steps) != 3 || steps[1].Type != sitter.QueryPredicateStepTypeCapture {
		return p, fmt.Errorf("#%s takes a capture and one argument", op)
	}
	p.negate = strings.HasPrefix(op, "not-")
	p.left = steps[1].ValueId
	switch {
	case steps[2].Type == sitter.QueryPredicateStepTypeCapture && strings.HasSuffix(op, "eq?"):
		p.right, p.rightCap = steps[2].ValueId, true
	case steps[2].Type == sitter.QueryPredicateStepTypeString:
		p.value = q.StringValueForId(steps[2].ValueId)
	default:
		return p, fmt.Errorf("#%s: the second argument must be a string", op)
	}
	if strings.HasSuffix(op, "match?") {
		re, err := regexp.Compile(p.value)
		if err != nil {
			return p, fmt.Errorf("#%s %q: %v", op, p.value, err)
		}
		p.re = re
	}
	return p, nil
}

// holds evaluates a pattern's predicates on a match, as tree-sitter's
// reference implementations do: a text predicate holds when every capture
// of its name satisfies it; a capture-to-capture #eq? compares the first
// of each.
func (q *Query) holds(pattern int, caps []sitter.QueryCapture, src []byte) bool {
	if pattern < 0 || pattern >= len(q.preds) {
		return true
	}
	text := func(n *sitter.Node) string { return string(src[n.StartByte():n.EndByte()]) }
	for _, p := range q.preds[pattern] {
		if p.rightCap {
			var l, r *sitter.Node
			for i := range caps {
				if caps[i].Index == p.left && l == nil {
					l = caps[i].Node
				}
				if caps[i].Index == p.right && r == nil {
					r = caps[i].Node
				}
			}
			if l != nil && r != nil && (text(l) == text(r)) == p.negate {
				return false
			}
			continue
		}
		for i := range caps {
			if caps[i].Index != p.left {
				continue
			}
			t := text(caps[i].Node)
			ok := t == p.value
			if p.re != nil {
				ok = p.re.MatchString(t)
			}
			if ok == p.negate {
				return false
			}
		}
	}
	return true
}

// Capture is one captured node of a match.
type Capture struct {
	Name string
	Node Node
}

// Match is one match of a query: its captures in pattern order.
type Match struct {
	Pattern  int
	Captures []Capture
}

// Get returns the first capture with this name.
func (m Match) Get(name string) (Node, bool) {
	for _, c := range m.Captures {
		if c.Name == name {
			return c.Node, true
		}
	}
	return Node{}, false
}

// Matches runs q over the lines [from, to] (1-based, inclusive) of t and
// returns the matches whose predicates hold; a match is returned when
// any of its nodes intersects the range.
func (t *Tree) Matches(q *Query, from, to int) []Match {
	if q == nil || q.Grammar != t.Grammar && !(compatible(q.Grammar, t.Grammar)) {
		return nil
	}
	qc := sitter.NewQueryCursor()
	defer qc.Close()
	if from > 0 && to >= from {
		qc.SetPointRange(sitter.Point{Row: uint32(from - 1)}, sitter.Point{Row: uint32(to)})
	}
	qc.Exec(q.q, t.root)
	var out []Match
	for {
		m, ok := qc.NextMatch()
		if !ok {
			break
		}
		if len(m.Captures) == 0 || !q.holds(int(m.PatternIndex), m.Captures, t.src) {
			continue
		}
		mm := Match{Pattern: int(m.PatternIndex)}
		for _, c := range m.Captures {
			mm.Captures = append(mm.Captures, Capture{Name: q.names[c.Index], Node: t.wrap(c.Node)})
		}
		out = append(out, mm)
	}
	return out
}

// compatible reports whether a query compiled for grammar a may run on
// a tree of grammar b; only the same grammar may (node ids differ).
func compatible(a, b string) bool { return a == b }

// SExpr is the node's S-expression (named nodes with field names), the
// shape a query is written against: `diffpal-dev` and tests print it.
func (n Node) SExpr() string {
	if n.n == nil {
		return ""
	}
	return n.n.String()
}

// queryCache holds compiled queries by grammar and source: compiling is
// the costly part of a query (tens of milliseconds for a large one), a
// compiled query is immutable, and rule sets are loaded more than once.
var queryCache sync.Map // grammar + "\x00" + src -> *cachedQuery

type cachedQuery struct {
	started atomic.Bool // compiling has begun (CompileAhead or CachedQuery)
	once    sync.Once
	q       *Query
	err     error
}

func cached(grammar, src string) *cachedQuery {
	v, _ := queryCache.LoadOrStore(grammar+"\x00"+src, &cachedQuery{})
	return v.(*cachedQuery)
}

func (c *cachedQuery) compile(grammar, src string) {
	c.once.Do(func() {
		if data := snapshotQuery(grammar, src); data != nil {
			if q, err := loadQuery(grammar, data); err == nil {
				c.q = q
				return
			}
			// A stale or damaged entry costs the compile, never a result.
		}
		c.q, c.err = CompileQuery(grammar, src)
	})
}

// CachedQuery is CompileQuery, compiled once per process for the same
// grammar and source; callers may compile lazily, on first use.
func CachedQuery(grammar, src string) (*Query, error) {
	c := cached(grammar, src)
	c.started.Store(true)
	c.compile(grammar, src)
	return c.q, c.err
}

// CompileAhead starts compiling the query on another goroutine, unless
// that has begun already, so that a caller who knows it will need several
// queries (a file's rules whose literals occur) has them compiled side by
// side and while it parses the file: tree-sitter takes milliseconds per
// query, and a small review compiles a few. CachedQuery then waits for
// the compiling to end.
func CompileAhead(grammar, src string) {
	if c := cached(grammar, src); c.started.CompareAndSwap(false, true) {
		go c.compile(grammar, src)
	}
}
