package rules

// Definitions and calls read from syntax trees, for the explorer's
// signature check: a signature change is a structural change of a
// definition's parameters or results (count, order, names where callers
// can name them, defaults, variadics; types and results only in typed
// languages), computed from the old and new definition nodes, and a use
// is a call node naming the definition in code of the same language.

import (
	"context"
	"path"
	"regexp"
	"strings"

	"github.com/diffpalhq/diffpal/internal/syntax"
)

// sigParam is one formal parameter.
type sigParam struct {
	name    string
	typ     string // normalised type text (typed languages only)
	kind    byte   // 'p' positional, 'k' keyword-only, 'v' variadic (*args, ...rest), 'w' **kwargs, 'b' block (&blk)
	opt     bool   // has a default, or is optional
	posOnly bool   // Python: before "/", not passable by name
}

// sigDef is a function or method definition read from a tree.
type sigDef struct {
	name, kind string // kind: func or method
	container  string // enclosing class / Go receiver type ("" for none)
	line       int    // line of the name
	params     []sigParam
	results    string // normalised result types (typed languages)
	nres       int    // Go: number of results
	bound      bool   // Python: the first parameter (self, cls) is bound at the call
	unknown    bool   // arity cannot be judged (extension receiver, unusual shape)
}

// typedLanguage: a change of a parameter's or result's type is structural.
func typedLanguage(lang string) bool {
	switch lang {
	case "go", "java", "kotlin", "csharp", "typescript":
		return true
	}
	return false
}

// namedArgs: callers can pass arguments by parameter name, so a rename is
// structural.
func namedArgs(lang string) bool {
	switch lang {
	case "python", "ruby", "kotlin", "csharp", "php":
		return true
	}
	return false
}

// key is the definition's identity within a file.
func (d *sigDef) key() string { return d.container + "." + d.name }

// shape is the comparable structure of the signature: formatting and, in
// untyped languages, annotations do not take part.
func (d *sigDef) shape(lang string) string {
	var b strings.Builder
	for i, p := range d.params {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte(p.kind)
		if p.opt {
			b.WriteByte('?')
		}
		if p.posOnly {
			b.WriteByte('/')
		}
		if namedArgs(lang) || p.kind == 'k' {
			b.WriteString(p.name)
		}
		if typedLanguage(lang) {
			b.WriteByte(':')
			b.WriteString(p.typ)
		}
	}
	if typedLanguage(lang) {
		b.WriteString(")")
		b.WriteString(d.results)
	}
	return b.String()
}

// describe renders the parameter list for a message: (a, b=…, *rest).
func (d *sigDef) describe(lang string) string {
	var parts []string
	for _, p := range d.params {
		s := p.name
		switch p.kind {
		case 'v':
			s = "*" + s
		case 'w':
			s = "**" + s
		case 'k':
			s += ":"
		}
		if typedLanguage(lang) && p.typ != "" {
			s += " " + p.typ
		}
		if p.opt {
			s += "=…"
		}
		parts = append(parts, s)
	}
	out := "(" + strings.Join(parts, ", ") + ")"
	if typedLanguage(lang) && d.results != "" {
		r := d.results
		if lang == "go" && d.nres == 1 {
			r = strings.TrimSuffix(strings.TrimPrefix(r, "("), ")")
		}
		out += " " + r
	}
	return out
}

// treeGrammar is the grammar used for signatures, "" when the file is
// read lexically.
func treeGrammar(f *File) string {
	switch f.Language {
	case "go", "python", "javascript", "typescript", "java", "kotlin", "ruby", "php", "csharp":
		return syntax.Grammar(f.Language, f.Path)
	}
	return ""
}

// parseSource parses src with grammar g (nil on failure or a tree with
// parse errors near nothing: errors are tolerated, the tree is partial).
func parseSource(g string, lines []string) *syntax.Tree {
	t, err := syntax.Parse(context.Background(), g, []byte(strings.Join(lines, "\n")))
	if err != nil {
		return nil
	}
	return t
}

// oldContent rebuilds the old version of a file from its new Content and
// the diff's added and removed lines; ok is false when they do not fit.
// Both lists are in line order (as a parsed diff gives them; lines out of
// order or repeated do not fit), so the old file is one merge of the
// three: it used a map of each list, and on a large change those maps
// were a third of the signature check's CPU, on one core in the review's
// tail (TestOldContentMerge holds it to the maps' answers).
func oldContent(f *File) ([]string, bool) {
	if f.Content == nil {
		return nil, false
	}
	if len(f.Added) == 0 && len(f.Removed) == 0 {
		return f.Content, true
	}
	n := len(f.Content) - len(f.Added) + len(f.Removed)
	if n < 0 {
		return nil, false
	}
	old := make([]string, 0, n)
	ai, ri, ni := 0, 0, 1 // the next added and removed line, the next new line
	// skipAdded passes the added lines at ni; false when one does not fit.
	skipAdded := func() bool {
		for ai < len(f.Added) && f.Added[ai].No <= ni {
			l := f.Added[ai]
			if l.No != ni || ni > len(f.Content) || f.Content[ni-1] != l.Text {
				return false
			}
			ai++
			ni++
		}
		return true
	}
	for o := 1; o <= n; o++ {
		if ri < len(f.Removed) && f.Removed[ri].No <= o {
			if f.Removed[ri].No != o {
				return nil, false
			}
			old = append(old, f.Removed[ri].Text)
			ri++
			continue
		}
		if !skipAdded() || ni > len(f.Content) {
			return nil, false
		}
		old = append(old, f.Content[ni-1])
		ni++
	}
	if !skipAdded() || ai != len(f.Added) || ri != len(f.Removed) || ni != len(f.Content)+1 {
		return nil, false
	}
	return old, true
}

// sigStart finds where a definition may start on a line, per language
// (a cheap filter before any file is parsed): the index, or -1. Each
// pattern is guarded by a literal, so most lines cost a substring search.
var sigStart = map[string]struct {
	lit string
	re  *regexp.Regexp
}{
	"go":     {"func", regexp.MustCompile(`\bfunc\b`)},
	"python": {"def", regexp.MustCompile(`\bdef\b`)},
	"ruby":   {"def", regexp.MustCompile(`\bdef\b`)},
	"php":    {"function", regexp.MustCompile(`\bfunction\b`)},
	"kotlin": {"fun", regexp.MustCompile(`\bfun\b`)},
}

var controlWords = map[string]bool{
	"return": true, "new": true, "else": true, "throw": true, "await": true, "yield": true, "case": true,
	"if": true, "while": true, "for": true, "switch": true, "catch": true, "do": true, "try": true,
	"typeof": true, "delete": true, "void": false, "import": true, "export": false,
}

var jsModifiers = map[string]bool{
	"async": true, "static": true, "get": true, "set": true, "public": true, "private": true,
	"protected": true, "readonly": true, "override": true, "abstract": true, "export": true,
	"declare": true, "default": true,
}

func identLike(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isWordByte(s[i]) && s[i] != '$' {
			return false
		}
	}
	return true
}

func sigKeyword(lang, s string) int {
	if p, ok := sigStart[lang]; ok {
		if !strings.Contains(s, p.lit) {
			return -1
		}
		if loc := p.re.FindStringIndex(s); loc != nil {
			return loc[0]
		}
		return -1
	}
	open := strings.IndexByte(s, '(')
	switch lang {
	case "javascript", "typescript":
		if i := strings.Index(s, "function"); i >= 0 {
			return i
		}
		if i := strings.Index(s, "=>"); i >= 0 {
			return i
		}
		if open < 0 || strings.ContainsAny(s[:open], "=;.") {
			return -1
		}
		// a method: [modifiers] name(params) { / name(params): T { / name( …
		f := strings.Fields(s[:open])
		if len(f) == 0 || controlWords[f[0]] {
			return -1
		}
		name := f[len(f)-1]
		if i := strings.IndexByte(name, '<'); i > 0 {
			name = name[:i]
		}
		if !identLike(name) {
			return -1
		}
		for _, m := range f[:len(f)-1] {
			if !jsModifiers[m] {
				return -1
			}
		}
		rest := afterParens(s[open:])
		if rest != "" && rest[0] != '{' && rest[0] != ':' {
			return -1 // a call: f(a); f(a).then(…)
		}
		return strings.Index(s, f[0])
	case "java", "csharp":
		if open < 0 {
			return -1
		}
		head := s[:open]
		if strings.ContainsAny(head, "=;{}!&|+-*/%\"'") {
			return -1
		}
		f := strings.Fields(head)
		if len(f) < 2 || controlWords[f[0]] || !identLike(strings.Split(f[len(f)-1], "<")[0]) {
			return -1
		}
		return strings.Index(s, f[0])
	}
	return -1
}

// afterParens is the trimmed text after the parenthesis group that opens
// s, "" when it does not close on the line (or nothing follows).
func afterParens(s string) string {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return strings.TrimSpace(s[i+1:])
			}
		}
	}
	return ""
}

// sigTouched reports whether one of the changed lines (0-based indexes
// into lines) may lie in a definition's signature: the line itself starts
// a definition, or one of the 12 lines above does and its parameter list
// is still open on the line before.
func sigTouched(lang string, lines []string, changed []int) bool {
	if len(changed) == 0 {
		return false
	}
	memo := make([]int32, len(lines)) // 0 unknown, else keyword index + 2 (1: none)
	kw := func(k int) int {
		if v := memo[k]; v != 0 {
			return int(v) - 2
		}
		v := sigKeyword(lang, lines[k])
		memo[k] = int32(v + 2)
		return v
	}
	// Each changed line below a definition counted the parentheses of
	// every line from the definition down to it, over and over for a run
	// of changed lines (~4% of a large review's CPU): a line's counts are
	// taken once. Depth is not clamped, so it is the sum of the lines'.
	type parens struct {
		delta, opens int32
		done         bool
	}
	var counts []parens // by line, allocated when first needed
	count := func(s string) parens {
		o := strings.Count(s, "(")
		return parens{int32(o - strings.Count(s, ")")), int32(o), true}
	}
	for _, c := range changed {
		if c < 0 || c >= len(lines) {
			continue
		}
		for k := c; k >= 0 && k >= c-12; k-- {
			i := kw(k)
			if i < 0 {
				continue
			}
			if k == c {
				return true
			}
			depth, opens := int32(0), int32(0)
			for j := k; j < c; j++ {
				var p parens
				switch {
				case j == k:
					p = count(lines[j][i:])
				case counts != nil && counts[j].done:
					p = counts[j]
				default:
					if counts == nil {
						counts = make([]parens, len(lines))
					}
					p = count(lines[j])
					counts[j] = p
				}
				depth += p.delta
				opens += p.opens
			}
			if opens > 0 && depth > 0 {
				return true // inside a parameter list that opened above
			}
			break
		}
	}
	return false
}

// goType normalises a Go type: interface{} is any.
func goType(s string) string {
	return strings.ReplaceAll(normType(s), "interface{}", "any")
}

func normType(s string) string {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, ":")
	return normSpace(s)
}

// containerOf names the enclosing class, module or type of n.
func containerOf(lang string, n syntax.Node) string {
	for p := n.Parent(); !p.IsNull(); p = p.Parent() {
		switch p.Type() {
		case "module":
			if lang != "ruby" {
				return "" // Python's root
			}
			fallthrough
		case "class_definition", "class_declaration", "class", "interface_declaration",
			"enum_declaration", "record_declaration", "struct_declaration", "object_declaration",
			"trait_declaration", "abstract_class_declaration":
			if nm := p.Field("name"); !nm.IsNull() {
				return nm.Text()
			}
			for i := 0; i < p.NamedChildCount(); i++ {
				if c := p.NamedChild(i); c.Type() == "type_identifier" || c.Type() == "simple_identifier" || c.Type() == "identifier" {
					return c.Text()
				}
			}
			return "?"
		case "function_definition", "function_declaration", "method_declaration", "method_definition", "method":
			if lang == "python" || lang == "javascript" || lang == "typescript" {
				return "" // a nested function is local: not callable from outside
			}
		}
	}
	return ""
}

// nestedFunction reports whether n sits inside another function body
// (a local helper, a callback), which no other file can call.
func nestedFunction(n syntax.Node) bool {
	for p := n.Parent(); !p.IsNull(); p = p.Parent() {
		switch p.Type() {
		case "function_definition", "function_declaration", "method_declaration", "method_definition",
			"arrow_function", "function_expression", "function", "method", "singleton_method",
			"func_literal", "lambda", "lambda_expression", "anonymous_function_creation_expression",
			"local_function_statement", "constructor_declaration":
			return true
		}
	}
	return false
}

// treeDefs reads the function and method definitions of a tree.
func treeDefs(lang string, t *syntax.Tree) []sigDef {
	var out []sigDef
	t.Root().Walk(func(n syntax.Node) bool {
		var d sigDef
		ok := false
		switch lang {
		case "go":
			ok = goDef(n, &d)
		case "python":
			ok = pyDef(n, &d)
		case "javascript", "typescript":
			ok = jsDef(lang, n, &d)
		case "java":
			ok = javaDef(n, &d)
		case "kotlin":
			ok = kotlinDef(n, &d)
		case "ruby":
			ok = rubyDef(n, &d)
		case "php":
			ok = phpDef(n, &d)
		case "csharp":
			ok = csDef(n, &d)
		}
		if ok && len(d.name) >= 2 && !notSymbol[d.name] && !strings.HasPrefix(d.name, "test") && !strings.HasPrefix(d.name, "Test") {
			out = append(out, d)
		}
		return true
	})
	return out
}

func goDef(n syntax.Node, d *sigDef) bool {
	switch n.Type() {
	case "function_declaration":
		d.kind = "func"
	case "method_declaration":
		d.kind = "method"
		if r := n.Field("receiver"); !r.IsNull() && r.NamedChildCount() > 0 {
			typ := r.NamedChild(0).Field("type").Text()
			typ = strings.TrimLeft(typ, "*")
			if i := strings.IndexByte(typ, '['); i >= 0 {
				typ = typ[:i]
			}
			d.container = typ
		}
	default:
		return false
	}
	nm := n.Field("name")
	d.name, d.line = nm.Text(), nm.StartLine()
	ps := n.Field("parameters")
	for i := 0; i < ps.NamedChildCount(); i++ {
		c := ps.NamedChild(i)
		kind := byte('p')
		switch c.Type() {
		case "parameter_declaration":
		case "variadic_parameter_declaration":
			kind = 'v'
		default:
			continue
		}
		typ := goType(c.Field("type").Text())
		if kind == 'v' {
			typ = "..." + typ
		}
		names := 0
		for j := 0; j < c.ChildCount(); j++ {
			if c.FieldNameOfChild(j) == "name" {
				names++
				d.params = append(d.params, sigParam{name: c.Child(j).Text(), typ: typ, kind: kind})
			}
		}
		if names == 0 {
			d.params = append(d.params, sigParam{name: "_", typ: typ, kind: kind})
		}
	}
	if r := n.Field("result"); !r.IsNull() {
		if r.Type() == "parameter_list" {
			var types []string
			for i := 0; i < r.NamedChildCount(); i++ {
				c := r.NamedChild(i)
				if c.Type() != "parameter_declaration" {
					continue
				}
				typ := goType(c.Field("type").Text())
				names := 0
				for j := 0; j < c.ChildCount(); j++ {
					if c.FieldNameOfChild(j) == "name" {
						names++
					}
				}
				for k := 0; k < max(1, names); k++ {
					types = append(types, typ)
				}
			}
			d.nres = len(types)
			d.results = "(" + strings.Join(types, ",") + ")"
		} else {
			d.nres = 1
			d.results = "(" + goType(r.Text()) + ")"
		}
	}
	return true
}

func pyDef(n syntax.Node, d *sigDef) bool {
	if n.Type() != "function_definition" || nestedFunction(n) {
		return false
	}
	nm := n.Field("name")
	d.name, d.line = nm.Text(), nm.StartLine()
	d.kind = "func"
	d.container = containerOf("python", n)
	static := false
	if p := n.Parent(); p.Type() == "decorated_definition" {
		for i := 0; i < p.NamedChildCount(); i++ {
			if c := p.NamedChild(i); c.Type() == "decorator" {
				t := strings.TrimSpace(strings.TrimPrefix(c.Text(), "@"))
				switch {
				case t == "staticmethod":
					static = true
				case t == "property" || strings.HasSuffix(t, ".setter") || strings.HasSuffix(t, ".getter") || strings.HasPrefix(t, "overload") || strings.HasSuffix(t, ".overload"):
					d.unknown = true
				}
			}
		}
	}
	if d.container != "" {
		d.kind = "method"
		d.bound = !static
	}
	kwOnly := false
	ps := n.Field("parameters")
	for i := 0; i < ps.NamedChildCount(); i++ {
		c := ps.NamedChild(i)
		p := sigParam{kind: 'p'}
		if kwOnly {
			p.kind = 'k'
		}
		switch c.Type() {
		case "identifier":
			p.name = c.Text()
		case "typed_parameter":
			inner := c.NamedChild(0)
			switch inner.Type() {
			case "list_splat_pattern":
				p.kind, kwOnly = 'v', true
				p.name = strings.TrimLeft(inner.Text(), "*")
			case "dictionary_splat_pattern":
				p.kind = 'w'
				p.name = strings.TrimLeft(inner.Text(), "*")
			default:
				p.name = inner.Text()
			}
		case "default_parameter", "typed_default_parameter":
			p.name, p.opt = c.Field("name").Text(), true
		case "list_splat_pattern":
			p.kind, kwOnly = 'v', true
			p.name = strings.TrimLeft(c.Text(), "*")
		case "dictionary_splat_pattern":
			p.kind = 'w'
			p.name = strings.TrimLeft(c.Text(), "*")
		case "keyword_separator":
			kwOnly = true
			continue
		case "positional_separator":
			for j := range d.params {
				d.params[j].posOnly = true
			}
			continue
		case "comment":
			continue
		default:
			d.unknown = true
			p.name = c.Text()
		}
		d.params = append(d.params, p)
	}
	return true
}

func jsDef(lang string, n syntax.Node, d *sigDef) bool {
	var ps syntax.Node
	switch n.Type() {
	case "function_declaration", "generator_function_declaration", "function_signature":
		if nestedFunction(n) {
			return false
		}
		nm := n.Field("name")
		d.name, d.line, d.kind = nm.Text(), nm.StartLine(), "func"
		ps = n.Field("parameters")
	case "method_definition", "method_signature", "abstract_method_signature":
		nm := n.Field("name")
		d.name, d.line, d.kind = nm.Text(), nm.StartLine(), "method"
		d.container = containerOf(lang, n)
		if d.container == "" {
			return false // an object literal's method
		}
		ps = n.Field("parameters")
	case "variable_declarator":
		v := n.Field("value")
		if v.Type() != "arrow_function" && v.Type() != "function_expression" && v.Type() != "function" {
			return false
		}
		if nestedFunction(n) {
			return false
		}
		nm := n.Field("name")
		if nm.Type() != "identifier" {
			return false
		}
		d.name, d.line, d.kind = nm.Text(), nm.StartLine(), "func"
		ps = v.Field("parameters")
		if ps.IsNull() {
			if p := v.Field("parameter"); !p.IsNull() {
				d.params = []sigParam{{name: p.Text(), kind: 'p'}}
				return true
			}
		}
		if rt := v.Field("return_type"); !rt.IsNull() {
			d.results = normType(rt.Text())
		}
	default:
		return false
	}
	if rt := n.Field("return_type"); !rt.IsNull() {
		d.results = normType(rt.Text())
	}
	for i := 0; i < ps.NamedChildCount(); i++ {
		c := ps.NamedChild(i)
		p := sigParam{kind: 'p'}
		switch c.Type() {
		case "identifier", "object_pattern", "array_pattern":
			p.name = c.Text()
		case "assignment_pattern":
			p.name, p.opt = c.Field("left").Text(), true
		case "rest_pattern":
			p.kind, p.name = 'v', strings.TrimLeft(c.Text(), ".")
		case "required_parameter", "optional_parameter":
			pat := c.Field("pattern")
			p.name = pat.Text()
			p.opt = c.Type() == "optional_parameter" || !c.Field("value").IsNull()
			if pat.Type() == "rest_pattern" {
				p.kind, p.name = 'v', strings.TrimLeft(p.name, ".")
			}
			p.typ = normType(c.Field("type").Text())
			if p.name == "this" {
				continue
			}
		case "comment", "decorator":
			continue
		default:
			d.unknown = true
			p.name = c.Text()
		}
		d.params = append(d.params, p)
	}
	return true
}

func javaDef(n syntax.Node, d *sigDef) bool {
	if n.Type() != "method_declaration" {
		return false
	}
	nm := n.Field("name")
	d.name, d.line, d.kind = nm.Text(), nm.StartLine(), "method"
	d.container = containerOf("java", n)
	d.results = normType(n.Field("type").Text())
	ps := n.Field("parameters")
	for i := 0; i < ps.NamedChildCount(); i++ {
		c := ps.NamedChild(i)
		switch c.Type() {
		case "formal_parameter":
			d.params = append(d.params, sigParam{name: c.Field("name").Text(), typ: normType(c.Field("type").Text()), kind: 'p'})
		case "spread_parameter":
			typ := ""
			name := ""
			for j := 0; j < c.NamedChildCount(); j++ {
				x := c.NamedChild(j)
				switch {
				case x.Type() == "variable_declarator":
					name = x.Field("name").Text()
				case x.Type() != "modifiers" && typ == "":
					typ = normType(x.Text())
				}
			}
			d.params = append(d.params, sigParam{name: name, typ: typ + "...", kind: 'v'})
		}
	}
	return true
}

func kotlinDef(n syntax.Node, d *sigDef) bool {
	if n.Type() != "function_declaration" || nestedFunction(n) {
		return false
	}
	d.kind = "func"
	d.container = containerOf("kotlin", n)
	if d.container != "" {
		d.kind = "method"
	}
	afterParams := false
	for i := 0; i < n.NamedChildCount(); i++ {
		c := n.NamedChild(i)
		switch c.Type() {
		case "simple_identifier":
			if d.name == "" {
				d.name, d.line = c.Text(), c.StartLine()
			}
		case "user_type", "nullable_type", "function_type", "parenthesized_type", "type":
			if afterParams && d.results == "" {
				d.results = normType(c.Text())
			} else if !afterParams && d.name == "" {
				d.unknown = true // extension receiver: x.f(a) passes x
			}
		case "function_value_parameters":
			afterParams = true
			vararg := false
			for j := 0; j < c.NamedChildCount(); j++ {
				x := c.NamedChild(j)
				switch x.Type() {
				case "parameter_modifiers":
					vararg = strings.Contains(x.Text(), "vararg")
				case "parameter":
					p := sigParam{kind: 'p'}
					if vararg {
						p.kind = 'v'
					}
					vararg = false
					for k := 0; k < x.NamedChildCount(); k++ {
						y := x.NamedChild(k)
						if y.Type() == "simple_identifier" && p.name == "" {
							p.name = y.Text()
						} else if y.Type() != "simple_identifier" {
							p.typ = normType(y.Text())
						}
					}
					d.params = append(d.params, p)
				case "comment", "modifiers", "annotation":
				default:
					// a default value follows its parameter
					if len(d.params) > 0 {
						d.params[len(d.params)-1].opt = true
					}
				}
			}
		}
	}
	return d.name != ""
}

func rubyDef(n syntax.Node, d *sigDef) bool {
	switch n.Type() {
	case "method", "singleton_method":
	default:
		return false
	}
	nm := n.Field("name")
	d.name, d.line, d.kind = nm.Text(), nm.StartLine(), "method"
	d.container = containerOf("ruby", n)
	ps := n.Field("parameters")
	for i := 0; i < ps.NamedChildCount(); i++ {
		c := ps.NamedChild(i)
		p := sigParam{kind: 'p'}
		switch c.Type() {
		case "identifier":
			p.name = c.Text()
		case "destructured_parameter":
			p.name = c.Text()
		case "optional_parameter":
			p.name, p.opt = c.Field("name").Text(), true
		case "splat_parameter":
			p.kind, p.name = 'v', c.Field("name").Text()
		case "keyword_parameter":
			p.kind, p.name, p.opt = 'k', c.Field("name").Text(), !c.Field("value").IsNull()
		case "hash_splat_parameter", "hash_splat_nil":
			p.kind, p.name = 'w', c.Field("name").Text()
		case "block_parameter":
			p.kind, p.name = 'b', c.Field("name").Text()
		case "forward_parameter":
			d.params = append(d.params, sigParam{kind: 'v', name: "..."}, sigParam{kind: 'w', name: "..."})
			continue
		case "comment":
			continue
		default:
			d.unknown = true
			p.name = c.Text()
		}
		d.params = append(d.params, p)
	}
	return true
}

func phpDef(n syntax.Node, d *sigDef) bool {
	switch n.Type() {
	case "function_definition":
		if nestedFunction(n) {
			return false
		}
		d.kind = "func"
	case "method_declaration":
		d.kind = "method"
		d.container = containerOf("php", n)
	default:
		return false
	}
	nm := n.Field("name")
	d.name, d.line = nm.Text(), nm.StartLine()
	if strings.HasPrefix(d.name, "__") {
		return false // magic methods are called by the runtime
	}
	ps := n.Field("parameters")
	for i := 0; i < ps.NamedChildCount(); i++ {
		c := ps.NamedChild(i)
		p := sigParam{kind: 'p', name: strings.TrimPrefix(c.Field("name").Text(), "$")}
		switch c.Type() {
		case "simple_parameter", "property_promotion_parameter":
			p.opt = !c.Field("default_value").IsNull()
			if t := c.Field("type"); !t.IsNull() && strings.HasPrefix(t.Text(), "?") && p.opt {
				p.opt = true
			}
		case "variadic_parameter":
			p.kind = 'v'
		case "comment", "attribute_list":
			continue
		default:
			d.unknown = true
		}
		d.params = append(d.params, p)
	}
	return true
}

func csDef(n syntax.Node, d *sigDef) bool {
	switch n.Type() {
	case "method_declaration":
		d.kind = "method"
		d.container = containerOf("csharp", n)
	case "local_function_statement":
		return false
	default:
		return false
	}
	nm := n.Field("name")
	d.name, d.line = nm.Text(), nm.StartLine()
	d.results = normType(n.Field("returns").Text())
	if d.results == "" {
		d.results = normType(n.Field("type").Text())
	}
	ps := n.Field("parameters")
	for i := 0; i < ps.ChildCount(); i++ {
		c := ps.Child(i)
		switch c.Type() {
		case "parameter":
			p := sigParam{kind: 'p', name: c.Field("name").Text(), typ: normType(c.Field("type").Text())}
			for j := 0; j < c.ChildCount(); j++ {
				x := c.Child(j)
				switch {
				case x.Type() == "=" || x.Type() == "equals_value_clause":
					p.opt = true
				case x.Type() == "parameter_modifier" || x.Type() == "modifier":
					if strings.TrimSpace(x.Text()) == "this" {
						d.unknown = true // extension method: x.M(a) passes x
					}
				}
			}
			if strings.HasPrefix(c.Text(), "this ") {
				d.unknown = true
			}
			d.params = append(d.params, p)
		case "params":
			// params T[] name: the rest of the list is the variadic
			d.params = append(d.params, sigParam{kind: 'v', name: "params"})
			return true
		}
	}
	return true
}

// sigCall is one call read from a tree.
type sigCall struct {
	name      string
	qual      string // receiver / qualifier text when a plain name ("" bare, "?" an expression)
	line      int
	pos       int
	kw        []string
	spread    bool // *args, ...xs, a splat: the count is unknown
	lhs       int  // Go: names assigned from the call's results (0 unknown)
	argIsCall bool // Go: the only argument is a call (f(g()) may spread results)
	unknown   bool
}

// treeCalls reads the calls of the tree whose callee name is in names.
func treeCalls(lang string, t *syntax.Tree, names map[string]bool) []sigCall {
	var out []sigCall
	t.Root().Walk(func(n syntax.Node) bool {
		var c sigCall
		var args syntax.Node
		switch n.Type() {
		case "call_expression": // go, js, ts, kotlin
			if lang == "kotlin" {
				if !kotlinCall(n, &c, names) {
					return true
				}
				c.line = n.StartLine()
				out = append(out, c)
				return true
			}
			fn := n.Field("function")
			switch fn.Type() {
			case "identifier":
				c.name = fn.Text()
			case "selector_expression":
				c.name, c.qual = fn.Field("field").Text(), plainQual(fn.Field("operand"))
			case "member_expression":
				c.name, c.qual = fn.Field("property").Text(), plainQual(fn.Field("object"))
			default:
				return true
			}
			args = n.Field("arguments")
		case "call": // python, ruby
			if lang == "python" {
				fn := n.Field("function")
				switch fn.Type() {
				case "identifier":
					c.name = fn.Text()
				case "attribute":
					c.name, c.qual = fn.Field("attribute").Text(), plainQual(fn.Field("object"))
				default:
					return true
				}
			} else {
				c.name = n.Field("method").Text()
				if r := n.Field("receiver"); !r.IsNull() {
					c.qual = plainQual(r)
				}
			}
			args = n.Field("arguments")
		case "method_invocation": // java
			c.name = n.Field("name").Text()
			if o := n.Field("object"); !o.IsNull() {
				c.qual = plainQual(o)
			}
			args = n.Field("arguments")
		case "function_call_expression", "member_call_expression", "nullsafe_member_call_expression", "scoped_call_expression": // php
			if n.Type() == "function_call_expression" {
				c.name = n.Field("function").Text()
				if i := strings.LastIndexByte(c.name, '\\'); i >= 0 {
					c.name = c.name[i+1:]
				}
			} else {
				c.name = n.Field("name").Text()
				o := n.Field("object")
				if o.IsNull() {
					o = n.Field("scope")
				}
				c.qual = plainQual(o)
			}
			args = n.Field("arguments")
		case "invocation_expression": // c#
			fn := n.Field("function")
			switch fn.Type() {
			case "identifier":
				c.name = fn.Text()
			case "member_access_expression":
				c.name, c.qual = fn.Field("name").Text(), plainQual(fn.Field("expression"))
			default:
				return true
			}
			args = n.Field("arguments")
		default:
			return true
		}
		if !names[c.name] {
			return true
		}
		c.line = n.StartLine()
		countCallArgs(lang, args, &c)
		if lang == "go" {
			goLHS(n, &c)
		}
		out = append(out, c)
		return true
	})
	return out
}

func plainQual(n syntax.Node) string {
	switch n.Type() {
	case "identifier", "self", "this", "variable_name", "relative_scope", "name", "constant", "simple_identifier", "package_identifier":
		return n.Text()
	}
	return "?"
}

func countCallArgs(lang string, args syntax.Node, c *sigCall) {
	if args.IsNull() {
		return // Ruby: m without arguments
	}
	if args.Type() == "generator_expression" {
		c.pos = 1
		return
	}
	for i := 0; i < args.NamedChildCount(); i++ {
		a := args.NamedChild(i)
		switch a.Type() {
		case "comment":
			continue
		case "variadic_argument", "list_splat", "dictionary_splat", "spread_element", "splat_argument",
			"hash_splat_argument", "forward_argument", "variadic_unpacking":
			c.spread = true
		case "keyword_argument":
			c.kw = append(c.kw, a.Field("name").Text())
		case "pair":
			if lang == "ruby" {
				k := a.Field("key")
				if k.Type() == "hash_key_symbol" || k.Type() == "simple_symbol" {
					c.kw = append(c.kw, strings.Trim(k.Text(), ":"))
				} else {
					c.unknown = true
				}
			} else {
				c.pos++
			}
		case "block_argument":
			// &blk: the block, not an argument
		case "argument":
			if nm := a.Field("name"); !nm.IsNull() {
				c.kw = append(c.kw, strings.TrimSuffix(nm.Text(), ":"))
				continue
			}
			if strings.HasPrefix(strings.TrimSpace(a.Text()), "...") {
				c.spread = true
				continue
			}
			c.pos++
		default:
			c.pos++
			if lang == "go" && args.NamedChildCount() == 1 && a.Type() == "call_expression" {
				c.argIsCall = true
			}
		}
	}
}

func kotlinCall(n syntax.Node, c *sigCall, names map[string]bool) bool {
	if n.NamedChildCount() < 2 {
		return false
	}
	fn, suf := n.NamedChild(0), n.NamedChild(1)
	if suf.Type() != "call_suffix" {
		return false
	}
	switch fn.Type() {
	case "simple_identifier":
		c.name = fn.Text()
	case "navigation_expression":
		last := fn.NamedChild(fn.NamedChildCount() - 1)
		if last.Type() != "navigation_suffix" || last.NamedChildCount() == 0 {
			return false
		}
		c.name = last.NamedChild(last.NamedChildCount() - 1).Text()
		c.qual = plainQual(fn.NamedChild(0))
	default:
		return false
	}
	if !names[c.name] {
		return false
	}
	for i := 0; i < suf.NamedChildCount(); i++ {
		x := suf.NamedChild(i)
		switch x.Type() {
		case "value_arguments":
			for j := 0; j < x.NamedChildCount(); j++ {
				a := x.NamedChild(j)
				if a.Type() != "value_argument" {
					continue
				}
				named := false
				for k := 0; k < a.ChildCount(); k++ {
					switch a.Child(k).Type() {
					case "=":
						named = true
					case "*":
						c.spread = true
					}
				}
				if named {
					c.kw = append(c.kw, a.NamedChild(0).Text())
				} else {
					c.pos++
				}
			}
		case "annotated_lambda", "lambda_literal":
			c.unknown = true // trailing lambda
		case "type_arguments":
		}
	}
	return true
}

// goLHS sets how many names a Go call's results are assigned to, when the
// call is the only right-hand side.
func goLHS(n syntax.Node, c *sigCall) {
	p := n.Parent()
	if p.Type() != "expression_list" || p.NamedChildCount() != 1 {
		return
	}
	g := p.Parent()
	switch g.Type() {
	case "assignment_statement", "short_var_declaration":
		if !g.Field("right").Equal(p) {
			return
		}
		if l := g.Field("left"); !l.IsNull() {
			c.lhs = l.NamedChildCount()
		}
	case "var_spec":
		names := 0
		for j := 0; j < g.ChildCount(); j++ {
			if g.FieldNameOfChild(j) == "name" {
				names++
			}
		}
		c.lhs = names
	}
}

// accepts judges whether a definition accepts a call: ok, and whether the
// answer is known.
func (d *sigDef) accepts(lang string, c *sigCall) (ok, known bool) {
	if d.unknown || c.unknown || c.spread || lang == "javascript" {
		return false, false
	}
	if lang == "go" {
		if c.argIsCall {
			return false, false
		}
		req, variadic := 0, false
		for _, p := range d.params {
			if p.kind == 'v' {
				variadic = true
			} else {
				req++
			}
		}
		ok = c.pos >= req && (variadic || c.pos <= req)
		if c.lhs > 0 && c.lhs != d.nres {
			ok = false
		}
		return ok, true
	}
	params := d.params
	if d.bound && len(params) > 0 {
		if c.qual != "" && c.qual != "?" && c.qual != "self" && c.qual != "cls" && c.qual[0] >= 'A' && c.qual[0] <= 'Z' {
			return false, false // Class.method(obj, …): the first argument may be self
		}
		params = params[1:]
	}
	var positional []sigParam
	hasV, hasW, hasKw := false, false, false
	for _, p := range params {
		switch p.kind {
		case 'p':
			positional = append(positional, p)
		case 'v':
			hasV = true
		case 'w':
			hasW = true
		case 'k':
			hasKw = true
		}
	}
	pos, kws := c.pos, c.kw
	if lang == "ruby" && len(kws) > 0 && !hasKw && !hasW {
		pos, kws = pos+1, nil // keywords become a trailing hash
	}
	if pos > len(positional) && !hasV && lang != "php" {
		return false, true
	}
	filled := map[string]bool{}
	for i := 0; i < pos && i < len(positional); i++ {
		filled[positional[i].name] = true
	}
	for _, k := range kws {
		found := false
		for _, p := range params {
			if p.name == k && (p.kind == 'p' || p.kind == 'k') && !p.posOnly {
				found = true
				if filled[k] && lang == "python" {
					return false, true // multiple values for one argument
				}
				filled[k] = true
			}
		}
		if !found && !hasW {
			if !namedArgs(lang) {
				return false, false
			}
			return false, true
		}
	}
	for _, p := range params {
		if (p.kind == 'p' || p.kind == 'k') && !p.opt && !filled[p.name] {
			return false, true
		}
	}
	return true, true
}

// goImports maps a Go file's import names to their paths.
func goImports(t *syntax.Tree) map[string]string {
	out := map[string]string{}
	t.Root().Walk(func(n syntax.Node) bool {
		switch n.Type() {
		case "source_file", "import_declaration", "import_spec_list":
			return true
		case "import_spec":
			p := strings.Trim(n.Field("path").Text(), "\"`")
			name := path.Base(p)
			if nm := n.Field("name"); !nm.IsNull() {
				name = nm.Text()
			}
			out[name] = p
		}
		return false
	})
	return out
}

// importedNames lists the names a Python, JavaScript or TypeScript file
// imports (from m import f / import {f} from "m"), each with its module,
// and the module aliases (import m / import * as m).
func importedNames(lang string, t *syntax.Tree) (names map[string]string, modules map[string]string) {
	names, modules = map[string]string{}, map[string]string{}
	t.Root().Walk(func(n syntax.Node) bool {
		switch n.Type() {
		case "import_from_statement":
			mod := n.Field("module_name").Text()
			for i := 0; i < n.ChildCount(); i++ {
				if n.FieldNameOfChild(i) != "name" {
					continue
				}
				c := n.Child(i)
				switch c.Type() {
				case "dotted_name":
					names[c.Text()] = mod
				case "aliased_import":
					names[c.Field("alias").Text()] = mod + "." + c.Field("name").Text()
				}
			}
			return false
		case "import_statement":
			if lang == "python" {
				for i := 0; i < n.NamedChildCount(); i++ {
					c := n.NamedChild(i)
					switch c.Type() {
					case "dotted_name":
						parts := strings.Split(c.Text(), ".")
						modules[parts[0]] = c.Text()
						modules[parts[len(parts)-1]] = c.Text()
					case "aliased_import":
						modules[c.Field("alias").Text()] = c.Field("name").Text()
					}
				}
				return false
			}
			src := strings.Trim(n.Field("source").Text(), "'\"`")
			n.Walk(func(x syntax.Node) bool {
				switch x.Type() {
				case "import_specifier":
					nm := x.Field("alias")
					if nm.IsNull() {
						nm = x.Field("name")
					}
					names[nm.Text()] = src
				case "namespace_import":
					if x.NamedChildCount() > 0 {
						modules[x.NamedChild(0).Text()] = src
					}
				case "import_clause":
					if x.NamedChildCount() > 0 && x.NamedChild(0).Type() == "identifier" {
						modules[x.NamedChild(0).Text()] = src
					}
				}
				return true
			})
			return false
		}
		return true
	})
	return names, modules
}
