//go:build cgo

package syntax

import (
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	sitter "github.com/smacker/go-tree-sitter"
)

// Grammar names the grammar for a diffpal language id and path, or ""
// when none is bundled (or the file is an ERB template): .tsx files take
// the TSX grammar.
func Grammar(lang, path string) string {
	// An ERB template is HTML with Ruby inside (DetectLanguage calls it
	// ruby for the lexical rules); the Ruby grammar would misread it.
	if strings.HasSuffix(strings.ToLower(path), ".erb") {
		return ""
	}
	if lang == "typescript" && (strings.HasSuffix(path, ".tsx") || strings.HasSuffix(path, ".TSX")) {
		return "tsx"
	}
	if lang == "javascript" && strings.HasSuffix(strings.ToLower(path), ".jsx") {
		return "javascript" // the JavaScript grammar parses JSX
	}
	if _, ok := grammars[lang]; ok {
		return lang
	}
	return ""
}

// interpolation node types: code inside a string, masked as code.
var interpolations = map[string]bool{
	"template_substitution":   true, // JS/TS `${x}`
	"interpolation":           true, // Python f"{x}", Ruby "#{x}", C#
	"interpolated_expression": true, // Kotlin "${x}"
	"interpolated_identifier": true, // Kotlin "$x"
	"expansion":               true, // shell "${x}"
	"simple_expansion":        true, // shell "$x"
	"command_substitution":    true, // shell "$(x)"
	"template_interpolation":  true, // HCL "${x}"
	"variable_name":           false,
}

// stringTypes are the node types whose text is a string literal.
var stringTypes = map[string]bool{
	"string": true, "string_literal": true, "interpreted_string_literal": true,
	"raw_string_literal": true, "rune_literal": true, "template_string": true,
	"raw_string": true, "heredoc_body": true, "text_block": true,
	"verbatim_string_literal": true, "interpolated_string_expression": true,
	"encapsed_string": true, "character_literal": true, "string_lit": true,
	"heredoc_template": true, "char_literal": true, "nowdoc_body": true,
	"interpolated_verbatim_string_text": true, "line_string_literal": true,
	"multi_line_string_literal": true, "regex": true,
}

// isComment reports whether a node type is a comment.
func isComment(typ string) bool { return strings.Contains(typ, "comment") }

// isString reports whether a node type is a string literal.
func isString(typ string) bool { return stringTypes[typ] }

// Mask returns the source with comments and the contents of string
// literals replaced by spaces, keeping every newline, every column and
// the string delimiters (so `x == ""` still reads as code). Code inside
// a string (`${x}`, f"{x}", "#{x}") stays. YAML strings are kept: in
// YAML they are the data the rules read.
func (t *Tree) Mask() []byte {
	out := append([]byte(nil), t.src...)
	blank := func(a, b int) {
		for i := a; i < b && i < len(out); i++ {
			if out[i] != '\n' && out[i] != '\r' {
				out[i] = ' '
			}
		}
	}
	keepStrings := t.Grammar == "yaml" || t.Grammar == "dockerfile"
	mask := func(n Node) {
		switch {
		case isComment(n.Type()):
			blank(n.StartByte(), n.EndByte())
		case !keepStrings:
			maskString(n, blank)
		}
	}
	for _, n := range t.maskNodes() {
		mask(n)
	}
	return out
}

// maskWalkBudget is how many bytes of source a process masks by walking
// trees (maskNodes) before it compiles the grammars' mask queries.
const maskWalkBudget = 64 << 10

var maskWalked atomic.Int64

// maskNodes returns the tree's comment and string nodes (at any depth,
// strings inside interpolations too). They come from one query run in C
// (maskQuery): walking every node from Go costs a cgo call or two per
// node, several times the parse itself on a large change. But compiling
// that query costs milliseconds per grammar (tree-sitter analyses it
// against the whole grammar), most of a small review's matching; so the
// first 64 KiB a process masks are walked instead, and a grammar whose
// query is compiled already always uses it. Both find the same nodes
// (TestMaskWalkSameAsQuery); blanking does not depend on their order.
func (t *Tree) maskNodes() []Node {
	if !maskQueryCompiled(t.Grammar) && maskWalked.Add(int64(len(t.src))) <= maskWalkBudget {
		return t.maskNodesByWalk()
	}
	return t.maskNodesByQuery()
}

// maskNodesByWalk is maskNodes from a walk of every node: the named ones
// whose type is a comment or string type are what the mask query's
// patterns, one per such type the grammar has, match.
func (t *Tree) maskNodesByWalk() []Node {
	var out []Node
	t.Root().Walk(func(n Node) bool {
		if n.IsNamed() {
			if typ := n.Type(); isComment(typ) || isString(typ) {
				out = append(out, n)
			}
		}
		return true
	})
	return out
}

// maskNodesByQuery is maskNodes from the mask query.
func (t *Tree) maskNodesByQuery() []Node {
	q := maskQuery(t.Grammar)
	if q == nil {
		return nil
	}
	var out []Node
	for _, m := range t.Matches(q, 0, 0) {
		for _, c := range m.Captures {
			out = append(out, c.Node)
		}
	}
	return out
}

// maskString blanks a string literal's contents, keeping its delimiters
// (anonymous first and last children — ", string_start/string_end — else
// one byte each side) and its interpolations (code); strings nested in an
// interpolation are captured, and masked, on their own.
func maskString(n Node, blank func(a, b int)) {
	a, b := n.StartByte(), n.EndByte()
	cnt := n.ChildCount()
	lo, hi := a+1, b-1
	if cnt > 0 {
		if f := n.Child(0); !f.IsNamed() || f.Type() == "string_start" {
			lo = f.EndByte()
		}
		if l := n.Child(cnt - 1); cnt > 1 && (!l.IsNamed() || l.Type() == "string_end") {
			hi = l.StartByte()
		}
	}
	if n.Type() == "heredoc_body" || n.Type() == "nowdoc_body" {
		lo, hi = a, b
	}
	if hi <= lo {
		return
	}
	pos := lo
	for i := 0; i < cnt; i++ {
		c := n.Child(i)
		if !interpolations[c.Type()] {
			continue
		}
		if c.StartByte() > pos {
			blank(pos, c.StartByte())
		}
		pos = c.EndByte()
	}
	if pos < hi {
		blank(pos, hi)
	}
}

var (
	maskMu      sync.Mutex
	maskQueries = map[string]*Query{}
)

// maskQueryCompiled reports whether grammar's mask query exists (or is
// known not to).
func maskQueryCompiled(grammar string) bool {
	maskMu.Lock()
	defer maskMu.Unlock()
	_, ok := maskQueries[grammar]
	return ok
}

// maskQuery is the query capturing every comment and string node type the
// grammar has (node type names differ between grammars).
func maskQuery(grammar string) *Query {
	maskMu.Lock()
	defer maskMu.Unlock()
	if q, ok := maskQueries[grammar]; ok {
		return q
	}
	var q *Query
	if src := maskQuerySource(grammar); src != "" {
		// Through the query cache, so the query snapshot has it (a
		// grammar's mask query took 1-6 ms to compile in every process).
		var err error
		if q, err = CachedQuery(grammar, src); err != nil {
			q = nil
		}
	}
	maskQueries[grammar] = q
	return q
}

// maskQuerySource is the source of grammar's mask query, "" when the
// grammar is unknown or has no comment or string node.
func maskQuerySource(grammar string) string {
	lang := language(grammar)
	if lang == nil {
		return ""
	}
	seen := map[string]bool{}
	var alts []string
	for i := uint32(0); i < lang.SymbolCount(); i++ {
		sym := sitter.Symbol(i)
		if lang.SymbolType(sym) != sitter.SymbolTypeRegular {
			continue
		}
		name := lang.SymbolName(sym)
		if seen[name] || !(isComment(name) || isString(name)) {
			continue
		}
		seen[name] = true
		alts = append(alts, "("+name+")")
	}
	if len(alts) == 0 {
		return ""
	}
	sort.Strings(alts)
	return "[" + strings.Join(alts, " ") + "] @x"
}

// MaskQueries is every grammar's mask query source, for the query
// snapshot (QuerySnapshot).
func MaskQueries() map[string][]string {
	out := map[string][]string{}
	for g := range grammars {
		if src := maskQuerySource(g); src != "" {
			out[g] = []string{src}
		}
	}
	return out
}

// MaskLines is Mask split into lines (as many as the source has).
func (t *Tree) MaskLines() []string {
	return strings.Split(string(t.Mask()), "\n")
}
