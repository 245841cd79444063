//go:build cgo

package syntax

import (
	"sort"
	"strings"
	"sync"

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
	// The comment and string nodes come from one query run in C: walking
	// every node from Go costs a cgo call per node, several times the
	// parse itself on a large change.
	q := maskQuery(t.Grammar)
	if q == nil {
		return out
	}
	for _, m := range t.Matches(q, 0, 0) {
		for _, c := range m.Captures {
			n := c.Node
			switch {
			case isComment(n.Type()):
				blank(n.StartByte(), n.EndByte())
			case !keepStrings:
				maskString(n, blank)
			}
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

// maskQuery is the query capturing every comment and string node type the
// grammar has (node type names differ between grammars).
func maskQuery(grammar string) *Query {
	maskMu.Lock()
	defer maskMu.Unlock()
	if q, ok := maskQueries[grammar]; ok {
		return q
	}
	lang := language(grammar)
	if lang == nil {
		return nil
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
	var q *Query
	if len(alts) > 0 {
		sort.Strings(alts)
		var err error
		q, err = CompileQuery(grammar, "["+strings.Join(alts, " ")+"] @x")
		if err != nil {
			q = nil
		}
	}
	maskQueries[grammar] = q
	return q
}

// MaskLines is Mask split into lines (as many as the source has).
func (t *Tree) MaskLines() []string {
	return strings.Split(string(t.Mask()), "\n")
}
