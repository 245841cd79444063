package rules

// Data flow for injection rules (the flow field, packs/README.md): a sink
// query names a call and the argument that must not be dynamic; the
// tracer below decides, within one function, whether that argument is a
// value built by concatenation, formatting or interpolation with a
// non-constant part (or, for code arguments, any non-constant value),
// following identifiers to their assignments, and whether it derives
// from a source (request parameters, ...). What is a sink, a source or
// a sanitizer is data in the packs; this file only knows how each
// grammar spells strings, concatenation, calls and assignments.

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/diffpalhq/diffpal/internal/syntax"
)

// Flow is a rule's flow field.
type Flow struct {
	// Sink holds, per language id, a tree-sitter query capturing the
	// sink (@sink, where the finding is reported) and the value that
	// reaches it: @arg is dynamic when it is built from a non-constant
	// part or derives from a source; @code (an argument run as code:
	// eval, sh -c) is dynamic when it is anything but a constant.
	Sink map[string]string `yaml:"sink"`
	// Sources holds, per language id, a query capturing @source nodes:
	// a value that contains one, or an identifier bound to one (a
	// parameter captured as a source), derives from a source.
	Sources map[string]string `yaml:"sources,omitempty"`
	// Sanitizers are RE2 on a callee's text ("shlex.quote",
	// "DOMPurify.sanitize"): a call to one yields a safe value.
	Sanitizers []string `yaml:"sanitizers,omitempty"`
	// ValuePattern, when set, must match the raw text of the value or of
	// one of the constructions it was traced to (e.g. SQL keywords for a
	// generic execute/query sink).
	ValuePattern string `yaml:"value_pattern,omitempty"`
	// UnknownOrigin, with sources set, reports a dynamic value that is
	// not known to derive from a source at this severity and confidence
	// (the rule's own severity is for source-derived values). Without
	// it, such a value is not reported when sources are set.
	UnknownOrigin *FlowLevel `yaml:"unknown_origin,omitempty"`
	// TrustedPaths are globs of code run by maintainers (build and
	// release scripts): there only a source-derived value is reported.
	TrustedPaths []string `yaml:"trusted_paths,omitempty"`
	// ParamOrigin, when set, also reports a value that is, as is (or
	// through copies), a string-typed parameter of the enclosing
	// function, in the languages listed, at this severity and
	// confidence: a query or script handed in whole by the caller (a
	// DAO helper's `String sql`), weaker evidence than a built value.
	ParamOrigin *ParamLevel `yaml:"param_origin,omitempty"`
}

// ParamLevel is flow.param_origin.
type ParamLevel struct {
	Languages  []string `yaml:"languages"`
	Severity   string   `yaml:"severity"`
	Confidence float64  `yaml:"confidence"`
}

// FlowLevel is the severity and confidence of a finding of unknown origin.
type FlowLevel struct {
	Severity   string  `yaml:"severity"`
	Confidence float64 `yaml:"confidence"`
}

type flowRule struct {
	sinks      map[string]string // query source by grammar, compiled on first use
	sources    map[string]string
	hasSources bool
	sanitizers []*lazyRE
	value      *lazyRE
	trusted    []*lazyRE
	lits       []string // nil: always parse
	// valueLits prefilter value_pattern (every reported value's text
	// matches it, and that text is in the file): nil when none derive.
	valueLits     []string
	valueFold     bool
	paramGrammars map[string]bool // grammars where param_origin applies
}

// compileFlow compiles r.Flow into r.c.flow.
func compileFlow(r *Rule, eager bool) error {
	f := r.Flow
	if f == nil {
		return nil
	}
	if r.Scope != "added" {
		return ferr("flow", "only valid with scope: added (the default)")
	}
	if len(r.Query) > 0 || r.Block != nil || r.Enclosing != nil || r.Context != nil || r.Entropy != nil || r.Check != "" {
		return ferr("flow", "cannot be combined with query, block, enclosing, context, entropy or check")
	}
	if len(f.Sink) == 0 {
		return ferr("flow.sink", "required: a query per language with @sink and @arg or @code")
	}
	fr := &flowRule{sinks: map[string]string{}, sources: map[string]string{}, hasSources: len(f.Sources) > 0}
	var sinkSrcs []string
	for _, lang := range sortedKeys(f.Sink) {
		src := f.Sink[lang]
		if !strings.Contains(src, "@sink") || !(strings.Contains(src, "@arg") || strings.Contains(src, "@code")) {
			return ferr("flow.sink."+lang, "needs a @sink capture and an @arg or @code capture")
		}
		if err := compileFlowQuery(fr.sinks, "flow.sink."+lang, lang, src, eager); err != nil {
			return err
		}
		sinkSrcs = append(sinkSrcs, src)
	}
	fr.lits = prefilterOf(sinkSrcs, r.Prefilter)
	r.c.gramLits = grammarLiterals(fr.sinks)
	for _, lang := range sortedKeys(f.Sources) {
		src := f.Sources[lang]
		if !strings.Contains(src, "@source") {
			return ferr("flow.sources."+lang, "needs a @source capture")
		}
		if err := compileFlowQuery(fr.sources, "flow.sources."+lang, lang, src, eager); err != nil {
			return err
		}
	}
	for i, s := range f.Sanitizers {
		re, err := compileRE(eager, fmt.Sprintf("flow.sanitizers[%d]", i), s)
		if err != nil {
			return err
		}
		fr.sanitizers = append(fr.sanitizers, re)
	}
	var err error
	if fr.value, err = compileRE(eager, "flow.value_pattern", f.ValuePattern); err != nil {
		return err
	}
	if f.ValuePattern != "" && f.ParamOrigin == nil { // a parameter used as is has no text to match
		fr.valueLits, fr.valueFold = requiredLiteralsMin(f.ValuePattern, 1)
	}
	if u := f.UnknownOrigin; u != nil {
		if !fr.hasSources {
			return ferr("flow.unknown_origin", "only meaningful with sources")
		}
		if !contains(Severities, u.Severity) {
			return ferr("flow.unknown_origin.severity", "unknown severity %q", u.Severity)
		}
		if u.Confidence <= 0 || u.Confidence > 1 {
			return ferr("flow.unknown_origin.confidence", "must be in (0, 1]")
		}
	}
	if p := f.ParamOrigin; p != nil {
		if len(p.Languages) == 0 {
			return ferr("flow.param_origin.languages", "required: the languages whose typed string parameters count")
		}
		if !contains(Severities, p.Severity) {
			return ferr("flow.param_origin.severity", "unknown severity %q", p.Severity)
		}
		if p.Confidence <= 0 || p.Confidence > 1 {
			return ferr("flow.param_origin.confidence", "must be in (0, 1]")
		}
		fr.paramGrammars = map[string]bool{}
		for _, l := range p.Languages {
			gs := grammarsOf(l)
			if len(gs) == 0 {
				return ferr("flow.param_origin.languages", "no grammar for language %q", l)
			}
			for _, g := range gs {
				fr.paramGrammars[g] = true
			}
		}
	}
	for i, g := range f.TrustedPaths {
		re, err := globToRegexp(g, eager)
		if err != nil {
			return ferr(fmt.Sprintf("flow.trusted_paths[%d]", i), "%v", err)
		}
		fr.trusted = append(fr.trusted, re)
	}
	r.c.flow = fr
	return nil
}

func sevRank(s string) int {
	for i, x := range Severities {
		if x == s {
			return i
		}
	}
	return -1
}

func compileFlowQuery(into map[string]string, field, lang, src string, eager bool) error {
	gs := grammarsOf(lang)
	if len(gs) == 0 {
		return ferr(field, "no grammar for language %q", lang)
	}
	for _, g := range gs {
		// Like query rules: a user pack's queries compile now, the
		// embedded packs' on first use (TestBuiltinQueriesCompile).
		if eager {
			if _, err := syntax.CachedQuery(g, src); err != nil {
				return ferr(field, "%v", err)
			}
		}
		into[g] = src
	}
	return nil
}

// compiledQuery is the query for grammar g of a flow rule's map, or nil.
func compiledQuery(m map[string]string, g string) *syntax.Query {
	src, ok := m[g]
	if !ok {
		return nil
	}
	q, err := syntax.CachedQuery(g, src)
	if err != nil {
		return nil
	}
	return q
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// flowMayMatch is the file-level prefilter of a flow rule.

// matchFlow reports each sink whose value is dynamic, when the sink or
// the construction of its value contains an added line: at the sink,
// with the construction as the supporting span.
func (r *Rule) matchFlow(fc *fileCtx, t *syntax.Tree) []Hit {
	fr := r.c.flow
	q := compiledQuery(fr.sinks, t.Grammar)
	if q == nil {
		return nil
	}
	f := fc.f
	added := make(map[int]bool, len(f.Added))
	for _, l := range f.Added {
		added[l.No] = true
	}
	trusted := false
	for _, re := range fr.trusted {
		if re.MatchString(f.Path) {
			trusted = true
		}
	}
	tr := &tracer{fr: fr, t: t, params: fr.paramGrammars[t.Grammar]}
	var hits []Hit
	seen := map[int]bool{}
	for _, m := range t.Matches(q, 0, 0) {
		sink, ok := m.Get("sink")
		if !ok || seen[sink.StartByte()] {
			continue
		}
		var v taint
		dynamic, byParam := false, false
		for _, c := range m.Captures {
			if c.Name != "arg" && c.Name != "code" {
				continue
			}
			v = tr.eval(c.Node, 0)
			if v.kind == kBuilt || v.source || (c.Name == "code" && v.kind != kConst) {
				dynamic = true
				if len(v.spans) == 0 {
					v.add(c.Node, kBuilt) // a source used directly is its own support
				}
				break
			}
			if v.param && v.kind == kUnknown && !tr.preparedReceiver(sink) {
				// a string parameter used as is: the caller's value
				dynamic, byParam = true, true
				break
			}
		}
		if !dynamic || (trusted && !v.source) || (!byParam && fr.hasSources && !v.source && r.Flow.UnknownOrigin == nil) {
			continue
		}
		if !byParam && fr.value != nil && !fr.value.MatchString(strings.Join(v.texts, "\n")) {
			continue
		}
		first, last := addedWithin(sink, added)
		context := false
		if first == 0 {
			for _, s := range v.spans {
				for l := s[0]; l <= s[1] && first == 0; l++ {
					if added[l] {
						first, last, context = sink.StartLine(), sink.StartLine(), true
					}
				}
			}
		}
		if first == 0 {
			continue
		}
		h, ok := r.queryHit(fc, sink, sink, first, last)
		if !ok {
			continue
		}
		seen[sink.StartByte()] = true
		if context {
			h.Source = "nearby_context"
		}
		if len(v.spans) > 0 {
			lo, hi := v.spans[0][0], v.spans[0][1]
			for _, s := range v.spans[1:] {
				lo, hi = min(lo, s[0]), max(hi, s[1])
			}
			h.SupportStart, h.SupportEnd = lo, hi
		}
		if byParam {
			p := r.Flow.ParamOrigin
			if sevRank(p.Severity) < sevRank(h.Severity) {
				h.Severity = p.Severity
			}
			h.Confidence = p.Confidence
			h.Message = strings.TrimSpace(h.Message + " The value is a parameter used as is; every caller must pass a constant or safely built statement.")
		} else if fr.hasSources && !v.source {
			u := r.Flow.UnknownOrigin
			if sevRank(u.Severity) < sevRank(h.Severity) {
				h.Severity = u.Severity // never above the (gated, advisory) rule severity
			}
			h.Confidence = u.Confidence
			h.Message = strings.TrimSpace(h.Message + " The value is not a constant; where it comes from is not known here.")
		}
		hits = append(hits, h)
	}
	return hits
}

// ---------------------------------------------------------------- tracer

const (
	kConst   = iota // a literal, or built only from literals
	kUnknown        // not a constant, but not built here either
	kBuilt          // concatenated, formatted or interpolated with a non-constant part
)

// taint is what the tracer knows of a value.
type taint struct {
	kind   int
	source bool
	param  bool     // a string-typed parameter (params tracer), as is or copied
	spans  [][2]int // lines of the constructions and assignments it was traced to
	texts  []string // their raw text
}

func (v *taint) add(n syntax.Node, kind int) {
	if kind != kBuilt && !v.source {
		return
	}
	v.spans = append(v.spans, [2]int{n.StartLine(), n.EndLine()})
	v.texts = append(v.texts, n.Text())
}

// merge folds w into v: the larger kind, either source, all spans.
func (v *taint) merge(w taint) {
	v.kind = max(v.kind, w.kind)
	v.source = v.source || w.source
	v.param = v.param || w.param
	v.spans = append(v.spans, w.spans...)
	v.texts = append(v.texts, w.texts...)
}

type tracer struct {
	fr      *flowRule
	t       *syntax.Tree
	srcDone bool
	params  bool     // param_origin applies to this grammar
	srcs    [][2]int // byte ranges of @source nodes
}

func setOf(s ...string) map[string]bool {
	m := make(map[string]bool, len(s))
	for _, x := range s {
		m[x] = true
	}
	return m
}

// Node types by role, over all bundled grammars (a type means the same
// role wherever it occurs).
var (
	strTypes = setOf("string", "template_string", "string_literal", "interpreted_string_literal",
		"raw_string_literal", "encapsed_string", "interpolated_string_expression", "verbatim_string_literal",
		"heredoc", "nowdoc", "subshell", "text_block", "line_string_literal", "multi_line_string_literal",
		"character_literal", "rune_literal", "heredoc_body", "shell_command_expression")
	strPlain = setOf("string_content", "string_fragment", "string_start", "string_end", "escape_sequence",
		"string_literal_content", "interpolation_start", "interpolation_quote", "heredoc_start", "heredoc_end",
		"heredoc_beginning", "heredoc_content", "nowdoc_body", "string_value", "comment", "raw_string_content",
		"verbatim_string_literal_content", "raw_string_start", "raw_string_end")
	interpWrap = setOf("interpolation", "template_substitution", "interpolated_expression")
	interpSkip = setOf("format_specifier", "type_conversion", "interpolation_brace", "interpolation_alignment_clause",
		"interpolation_format_clause")
	litTypes = setOf("integer", "float", "number", "int_literal", "float_literal", "imaginary_literal", "true", "false",
		"none", "null", "nil", "null_literal", "decimal_integer_literal", "hex_integer_literal", "octal_integer_literal",
		"binary_integer_literal", "decimal_floating_point_literal", "boolean_literal", "integer_literal", "real_literal",
		"boolean", "simple_symbol", "undefined", "hash_key_symbol", "long_literal", "unsigned_literal", "bin_literal", "hex_literal")
	identTypes = setOf("identifier", "simple_identifier", "variable_name", "interpolated_identifier")
	binTypes   = setOf("binary_operator", "binary_expression", "binary", "additive_expression", "multiplicative_expression",
		"boolean_operator", "elvis_expression", "disjunction_expression", "conjunction_expression")
	rubyIfTypes = setOf("if", "unless", "elsif", "case", "when")
	ternTypes   = setOf("conditional_expression", "ternary_expression", "conditional", "if_expression")
	wrapTypes   = setOf("parenthesized_expression", "argument", "value_argument", "await_expression", "non_null_expression",
		"as_expression", "satisfies_expression", "type_assertion", "cast_expression", "keyword_argument",
		"expression_list", "parenthesized_statements", "spread_element", "list_splat", "splat_argument", "named_argument")
	callTypes = setOf("call", "call_expression", "new_expression", "method_invocation", "object_creation_expression",
		"function_call_expression", "member_call_expression", "scoped_call_expression", "nullsafe_member_call_expression",
		"invocation_expression")
	memberTypes = setOf("attribute", "selector_expression", "member_expression", "field_access", "navigation_expression",
		"member_access_expression", "subscript", "subscript_expression", "index_expression", "array_access",
		"element_reference", "element_access_expression", "indexing_expression", "scoped_property_access_expression",
		"conditional_access_expression", "scope_resolution", "nullsafe_member_access_expression")
	containerTypes = setOf("list", "tuple", "array", "composite_literal", "literal_value", "literal_element",
		"array_initializer", "list_literal", "collection_literal", "array_creation_expression",
		"implicit_array_creation_expression", "initializer_expression", "array_element_initializer", "keyed_element")
	funcTypes = setOf("function_definition", "lambda", "function_declaration", "method_declaration", "func_literal",
		"function_expression", "function", "arrow_function", "method_definition", "generator_function_declaration",
		"generator_function", "constructor_declaration", "lambda_expression", "method", "singleton_method",
		"anonymous_function", "lambda_literal", "anonymous_function_creation_expression", "local_function_statement",
		"anonymous_method_expression", "secondary_constructor")
	paramListTypes = setOf("parameters", "parameter_list", "formal_parameters", "function_value_parameters",
		"method_parameters", "block_parameters", "lambda_parameters", "lambda_parameter", "bracketed_parameter_list",
		"inferred_parameters")
	blockTypes = setOf("block", "statement_block", "body_statement", "compound_statement", "statements", "program",
		"module", "source_file", "compilation_unit", "then", "else", "do_block", "switch_block_statement_group",
		"function_body", "class_body", "declaration_list", "ensure", "rescue", "begin")
	defTypes = setOf("assignment", "assignment_expression", "assignment_statement", "augmented_assignment",
		"augmented_assignment_expression", "operator_assignment", "short_var_declaration", "var_spec", "const_spec",
		"variable_declarator", "property_declaration")

	// Calls that build a string from their arguments (and receiver).
	formatFns = setOf("format", "Sprintf", "Sprint", "Sprintln", "Format", "formatted", "concat", "Concat", "join",
		"Join", "append", "Append", "AppendFormat", "sprintf", "vsprintf", "implode", "replace", "Replace",
		"replaceAll", "ReplaceAll", "plus", "str_replace", "Errorf", "fmt")
	// Calls whose value is their receiver's or argument's.
	passFns = setOf("str", "String", "toString", "strip", "trim", "lower", "upper", "toLowerCase", "toUpperCase",
		"encode", "decode", "to_s", "strval", "ToString", "Trim", "string", "TrimSpace", "lstrip", "rstrip", "squish",
		"trimEnd", "trimStart", "toLowerCase", "ToLower", "ToUpper", "lowercase", "uppercase", "build")
	printfFns  = setOf("Sprintf", "format", "sprintf", "Format", "formatted", "Errorf")
	printfVerb = regexp.MustCompile(`%[-+ #0-9.*]*([a-zA-Z%])`)
	concatOps  = setOf("+", "%", ".", "<<")
	// Containers whose elements a format or concatenation puts in the text.
	fmtContainers = setOf("tuple", "list", "dictionary", "hash", "object", "array", "array_creation_expression",
		"array_element_initializer")
	splatTypes = setOf("dictionary_splat", "list_splat", "splat_argument", "hash_splat_argument", "spread_element")
	identTail  = regexp.MustCompile(`([A-Za-z_$][\w$]*)\s*$`)
	allCaps    = regexp.MustCompile(`^\$?[A-Z][A-Z0-9_]+$`)
)

// inSource reports whether n lies inside a @source node.
func (tr *tracer) inSource(n syntax.Node) bool {
	if !tr.srcDone {
		tr.srcDone = true
		if q := compiledQuery(tr.fr.sources, tr.t.Grammar); q != nil {
			for _, m := range tr.t.Matches(q, 0, 0) {
				if s, ok := m.Get("source"); ok {
					tr.srcs = append(tr.srcs, [2]int{s.StartByte(), s.EndByte()})
				}
			}
		}
	}
	a, b := n.StartByte(), n.EndByte()
	for _, s := range tr.srcs {
		if s[0] <= a && b <= s[1] {
			return true
		}
	}
	return false
}

const maxDepth = 8

// eval is what the tracer knows of the value of expression n.
func (tr *tracer) eval(n syntax.Node, depth int) taint {
	if n.IsNull() || depth > maxDepth {
		return taint{kind: kUnknown}
	}
	if tr.inSource(n) {
		v := taint{kind: kUnknown, source: true}
		return v
	}
	typ := n.Type()
	switch {
	case typ == "concatenated_string": // Python "a" "b"
		return tr.concat(n, namedChildren(n), depth)
	case strTypes[typ]:
		var v taint
		for _, p := range namedChildren(n) {
			if strPlain[p.Type()] {
				continue
			}
			w := tr.interp(p, depth)
			if w.kind != kConst {
				w.kind = kBuilt
			}
			v.merge(w)
		}
		if v.kind == kBuilt {
			v.add(n, kBuilt)
		}
		return v
	case typ == "block_argument": // Ruby &block: a block, not a string
		return taint{}
	case litTypes[typ], typ == "pair":
		// A key/value pair in an argument list is a named argument
		// (where(name: value) binds value), not the string itself.
		return taint{}
	case identTypes[typ]:
		return tr.ident(n, depth)
	case binTypes[typ]:
		op := operatorOf(n)
		ops := namedChildren(n)
		if op == "%" && len(ops) == 2 && numericVerbsOnly(tr, ops[0]) {
			if w := tr.eval(ops[1], depth+1); !w.source {
				return taint{} // "LIMIT %d" % n: numbers only
			}
		}
		if concatOps[op] {
			return tr.concat(n, ops, depth)
		}
		var v taint
		for _, o := range ops {
			v.merge(tr.eval(o, depth+1))
		}
		switch op {
		case "||", "&&", "or", "and", "??", "?:", "":
			return v // one of the operands
		}
		// Arithmetic and comparisons yield numbers and booleans, which
		// cannot carry SQL or shell syntax (["%s"] * len(ids) too).
		if !v.source {
			return taint{}
		}
		return taint{kind: kUnknown, source: true, spans: v.spans, texts: v.texts}
	case ternTypes[typ]:
		var v taint
		branches := []syntax.Node{n.Field("consequence"), n.Field("alternative")}
		if branches[0].IsNull() && branches[1].IsNull() {
			ch := namedChildren(n)
			if typ == "conditional_expression" && len(ch) == 3 { // Python: a if c else b
				branches = []syntax.Node{ch[0], ch[2]}
			} else if len(ch) > 1 {
				branches = ch[1:]
			}
		}
		for _, b := range branches {
			if !b.IsNull() {
				v.merge(tr.eval(b, depth+1))
			}
		}
		return v
	case rubyIfTypes[typ]:
		// Ruby's if/unless/case as a value: each branch yields its last
		// statement (y = if c then params[:x]; "a" else "b" end is "a" or "b").
		var v taint
		for _, b := range namedChildren(n) {
			switch b.Type() {
			case "then", "else":
				if ch := namedChildren(b); len(ch) > 0 {
					v.merge(tr.eval(ch[len(ch)-1], depth+1))
				}
			case "elsif", "when":
				v.merge(tr.eval(b, depth+1))
			}
		}
		return v
	case wrapTypes[typ]:
		if typ == "expression_list" && n.NamedChildCount() != 1 {
			return taint{kind: kUnknown}
		}
		for _, f := range []string{"value", "expression"} {
			if c := n.Field(f); !c.IsNull() {
				return tr.eval(c, depth+1)
			}
		}
		ch := namedChildren(n)
		if len(ch) == 0 {
			return taint{kind: kUnknown}
		}
		if typ == "cast_expression" {
			return tr.eval(ch[len(ch)-1], depth+1)
		}
		return tr.eval(ch[0], depth+1)
	case callTypes[typ]:
		return tr.call(n, depth)
	case containerTypes[typ]:
		// A literal list/array/tuple is not a string: constant when its
		// elements are, else unknown. A sink given a list takes its
		// elements as separate arguments or binds (where(["a = ?", x])),
		// so a source inside does not make the list one.
		for _, c := range namedChildren(n) {
			if w := tr.eval(c, depth+1); w.kind != kConst || w.source {
				return taint{kind: kUnknown}
			}
		}
		return taint{}
	case memberTypes[typ]:
		v := taint{kind: kUnknown}
		if ch := namedChildren(n); len(ch) > 0 {
			w := tr.eval(ch[0], depth+1)
			v.source = w.source
			if w.source {
				v.spans, v.texts = w.spans, w.texts
			}
		}
		return v
	}
	// Anything else (arrays, lambdas, ...) is not a constant; it derives
	// from a source when a part does.
	v := taint{kind: kUnknown}
	for _, c := range namedChildren(n) {
		if w := tr.eval(c, depth+1); w.source {
			v.source = true
			v.spans, v.texts = append(v.spans, w.spans...), append(v.texts, w.texts...)
		}
	}
	return v
}

// interp evaluates one interpolated part of a string.
func (tr *tracer) interp(p syntax.Node, depth int) taint {
	if p.Type() == "interpolated_identifier" || !interpWrap[p.Type()] {
		return tr.eval(p, depth+1)
	}
	var v taint
	for _, c := range namedChildren(p) {
		if !interpSkip[c.Type()] {
			v.merge(tr.eval(c, depth+1))
		}
	}
	return v
}

// concat is a concatenation of parts: built when a part is not a constant.
func (tr *tracer) concat(n syntax.Node, parts []syntax.Node, depth int) taint {
	var v taint
	for _, p := range parts {
		v.merge(tr.fmtPart(p, depth+1))
	}
	if v.kind != kConst {
		v.kind = kBuilt
		v.add(n, kBuilt)
		v.texts = append(v.texts, tr.boundTexts(parts)...)
	}
	return v
}

// fmtPart evaluates a value formatted or concatenated into a string. A
// container there ("%s %s" % (a, b), "{a}".format(**{"a": x}), a dict
// or tuple bound to a name) puts its elements' values into the text, so
// they count as such (eval keeps a container itself opaque: a sink given
// a list binds its elements).
func (tr *tracer) fmtPart(p syntax.Node, depth int) taint {
	if p.IsNull() || depth > maxDepth {
		return taint{kind: kUnknown}
	}
	typ := p.Type()
	if splatTypes[typ] && p.NamedChildCount() == 1 {
		return tr.fmtPart(p.NamedChild(0), depth+1)
	}
	if identTypes[typ] && !tr.inSource(p) {
		defs, _, _ := tr.resolve(p)
		if len(defs) == 1 && !defs[0].appendOp && !defs[0].value.IsNull() && fmtContainers[defs[0].value.Type()] {
			w := tr.fmtPart(defs[0].value, depth+1)
			if w.kind == kBuilt || w.source {
				w.add(defs[0].stmt, kBuilt)
			}
			return w
		}
		return tr.eval(p, depth)
	}
	if !fmtContainers[typ] || tr.inSource(p) {
		return tr.eval(p, depth)
	}
	var v taint
	for _, c := range namedChildren(p) {
		if c.Type() == "pair" {
			c = c.Field("value")
		}
		v.merge(tr.fmtPart(c, depth+1))
	}
	return v
}

// boundTexts is the text that the identifiers among parts are bound to
// (a format string or SQL fragment held in a constant or a variable:
// fmt.Sprintf(tmpl, x), String.format(sql, x), query % x), for
// value_pattern: the construction's own text only names them.
func (tr *tracer) boundTexts(parts []syntax.Node) []string {
	var out []string
	for _, p := range parts {
		for wrapTypes[p.Type()] && p.NamedChildCount() == 1 {
			p = p.NamedChild(0)
		}
		if !identTypes[p.Type()] {
			continue
		}
		defs, _, _ := tr.resolve(p)
		for _, d := range defs {
			if !d.value.IsNull() {
				out = append(out, d.value.Text())
			}
		}
	}
	return out
}

func (tr *tracer) call(n syntax.Node, depth int) taint {
	args := argsOf(n)
	if args.Type() == "template_string" {
		// A tagged template (sql`... ${x}`) binds its substitutions: the
		// tag builds a parameterised value, not a string.
		return taint{kind: kUnknown}
	}
	calleeEnd := n.EndByte()
	if !args.IsNull() {
		calleeEnd = args.StartByte()
	}
	src := tr.t.Source()
	callee := strings.TrimSpace(string(src[n.StartByte():calleeEnd]))
	for _, re := range tr.fr.sanitizers {
		if re.MatchString(callee) {
			return taint{}
		}
	}
	last := ""
	if m := identTail.FindStringSubmatch(callee); m != nil {
		last = m[1]
	}
	argv := argList(args)
	recv := receiverOf(n)
	switch {
	case printfFns[last] && len(argv) > 0 && numericVerbsOnly(tr, argv[0]):
		return taint{} // fmt.Sprintf("... %d", n): numbers only
	case formatFns[last]:
		// The arguments are formatted into the result; the receiver
		// counts when it is a string built here or a source ("...".format(x),
		// sb.append(x)), not when it is merely unknown (a query builder's
		// .append of constants).
		var v taint
		for _, p := range argv {
			v.merge(tr.fmtPart(p, depth+1))
		}
		if !recv.IsNull() && !tr.unresolved(recv) {
			if w := tr.eval(recv, depth+1); w.kind == kBuilt || w.source {
				v.merge(w)
			}
		}
		if v.kind != kConst {
			v.kind = kBuilt
			v.add(n, kBuilt)
			parts := argv
			if !recv.IsNull() {
				parts = append([]syntax.Node{recv}, argv...)
			}
			v.texts = append(v.texts, tr.boundTexts(parts)...)
		}
		return v
	case passFns[last]:
		if !recv.IsNull() && !tr.unresolved(recv) {
			return tr.eval(recv, depth+1)
		}
		if len(argv) == 1 {
			return tr.eval(argv[0], depth+1)
		}
	}
	v := taint{kind: kUnknown}
	parts := argv
	if !recv.IsNull() {
		parts = append([]syntax.Node{recv}, parts...)
	}
	for _, p := range parts {
		if w := tr.eval(p, depth+1); w.source {
			v.source = true
			v.spans, v.texts = append(v.spans, w.spans...), append(v.texts, w.texts...)
		}
	}
	return v
}

// numericVerbsOnly reports whether n is a constant format string whose
// verbs are all numeric (%d, %f, %x, ...): what it formats cannot carry
// SQL or shell syntax.
func numericVerbsOnly(tr *tracer, n syntax.Node) bool {
	return numericVerbsAt(tr, n, 0)
}

func numericVerbsAt(tr *tracer, n syntax.Node, depth int) bool {
	if identTypes[n.Type()] && depth < 3 {
		// a template held in a name: every value bound to it
		defs, _, _ := tr.resolve(n)
		for _, d := range defs {
			if d.appendOp || d.value.IsNull() || !numericVerbsAt(tr, d.value, depth+1) {
				return false
			}
		}
		return len(defs) > 0
	}
	if !strTypes[n.Type()] || tr.eval(n, maxDepth).kind != kConst {
		return false
	}
	verbs := printfVerb.FindAllStringSubmatch(n.Text(), -1)
	if len(verbs) == 0 {
		return false
	}
	for _, v := range verbs {
		if !strings.Contains("%dfFeEgGxXobcui", v[1]) {
			return false
		}
	}
	return true
}

// unresolved reports whether n is an identifier with no binding in the
// file (a package, class or module name: fmt, String, os).
func (tr *tracer) unresolved(n syntax.Node) bool {
	if !identTypes[n.Type()] && n.Type() != "type_identifier" && n.Type() != "predefined_type" && n.Type() != "name" && n.Type() != "constant" {
		return false
	}
	if !identTypes[n.Type()] {
		return true
	}
	defs, param, _ := tr.resolve(n)
	return len(defs) == 0 && param.IsNull()
}

// ident evaluates an identifier through its assignments in scope.
func (tr *tracer) ident(n syntax.Node, depth int) taint {
	defs, param, scoped := tr.resolve(n)
	if len(defs) == 0 {
		if !param.IsNull() {
			return taint{kind: kUnknown, source: tr.inSource(param), param: tr.params && stringParam(param)}
		}
		if !scoped && allCaps.MatchString(n.Text()) {
			return taint{} // a constant by convention (imported)
		}
		return taint{kind: kUnknown}
	}
	var v taint
	base := false // a plain (non-append) assignment was seen
	for _, d := range defs {
		if d.isConst {
			continue
		}
		w := tr.eval(d.value, depth+1)
		if d.appendOp && w.kind != kConst {
			w.kind = kBuilt
		}
		if w.kind == kBuilt || w.source {
			w.add(d.stmt, kBuilt)
		}
		if !d.appendOp {
			base = true
		}
		v.merge(w)
	}
	if v.kind == kBuilt {
		// The whole chain's text, for value_pattern: the constant base
		// of `q = "SELECT ..."; q += x` says what q is.
		for _, d := range defs {
			if !d.value.IsNull() {
				v.texts = append(v.texts, d.value.Text())
			}
		}
	}
	if !base && v.kind == kConst && !param.IsNull() {
		v.kind = kUnknown // only appends to a parameter
	}
	return v
}

// preparedCallee names calls that yield a prepared query object, whose
// execute(x) binds x as a parameter value (JDO, JPA, JDBC).
var preparedCallee = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)(?:^|\.)(?:prepare\w*|new\w*Query|create\w*Query|query)$`)
})

// preparedReceiver reports whether sink is a call on a variable bound
// (only) to a prepared query object: q = pm.newQuery(...); q.execute(x).
func (tr *tracer) preparedReceiver(sink syntax.Node) bool {
	recv := receiverOf(sink)
	if recv.IsNull() || !identTypes[recv.Type()] {
		return false
	}
	defs, _, _ := tr.resolve(recv)
	for _, d := range defs {
		val := d.value
		if val.IsNull() || !callTypes[val.Type()] {
			return false
		}
		args := argsOf(val)
		end := val.EndByte()
		if !args.IsNull() {
			end = args.StartByte()
		}
		if !preparedCallee().MatchString(strings.TrimSpace(string(tr.t.Source()[val.StartByte():end]))) {
			return false
		}
	}
	return len(defs) > 0
}

// stringParam reports whether parameter identifier p is declared with a
// string type (Java/Kotlin/C# String, string, CharSequence).
func stringParam(p syntax.Node) bool {
	decl := p.Parent()
	if decl.IsNull() {
		return false
	}
	ty := decl.Field("type")
	if ty.IsNull() {
		return false
	}
	switch strings.TrimSpace(ty.Text()) {
	case "String", "string", "CharSequence", "java.lang.String":
		return true
	}
	return false
}

// flowDef is one assignment to a name.
type flowDef struct {
	name     string
	stmt     syntax.Node // the assignment
	value    syntax.Node
	appendOp bool // +=, .=, <<
	isConst  bool // a constant declaration with no value to trace
}

// resolve finds the assignments that may reach identifier n: in its
// function, the nearest preceding assignment that dominates it and any
// later ones (branches, appends); failing that, a parameter of the
// function; failing that, the enclosing scopes out to the file, where
// any assignment counts. scoped reports whether any binding was found.
func (tr *tracer) resolve(n syntax.Node) (defs []flowDef, param syntax.Node, scoped bool) {
	name := n.Text()
	if n.Type() == "interpolated_identifier" {
		name = strings.TrimPrefix(name, "$")
	}
	pos := n.StartByte()
	for scope := enclosingFunc(n); ; scope = enclosingFunc(scope) {
		root := scope.IsNull()
		if root {
			scope = tr.t.Root()
		}
		var all []flowDef
		scope.Walk(func(c syntax.Node) bool {
			if !c.Equal(scope) && funcTypes[c.Type()] {
				return false
			}
			if defTypes[c.Type()] && (root || c.EndByte() <= pos) {
				for _, d := range defsOf(c) {
					if d.name == name {
						all = append(all, d)
					}
				}
			}
			return true
		})
		// Nearest first, stopping at a plain assignment that dominates n;
		// a declaration in a block that does not enclose n (Go :=, let,
		// a Java local) shadows: it and what follows it there are skipped.
		for i := len(all) - 1; i >= 0; i-- {
			d := all[i]
			if !root && shadowed(d, all[:i+1], n) {
				continue
			}
			defs = append(defs, d)
			if !d.appendOp && !root && dominates(d.stmt, n) {
				break
			}
		}
		if len(defs) > 0 {
			return defs, syntax.Node{}, true
		}
		if root {
			return nil, syntax.Node{}, false
		}
		if p := paramNamed(scope, name); !p.IsNull() {
			return nil, p, true
		}
	}
}

var declTypes = setOf("short_var_declaration", "var_spec", "const_spec", "variable_declarator", "property_declaration")

// shadowed reports whether def d (the last of upto) is inside a block that
// does not enclose use and that declares the name at or before d.
func shadowed(d flowDef, upto []flowDef, use syntax.Node) bool {
	for _, e := range upto {
		if !declTypes[e.stmt.Type()] || (e.stmt.Type() == "variable_declarator" && e.stmt.Parent().Type() == "variable_declaration" && strings.HasPrefix(e.stmt.Parent().Text(), "var ")) {
			continue // not block-scoped (JS var)
		}
		blk := nearestBlock(e.stmt)
		if blk.IsNull() || encloses(blk, use) || !encloses(blk, d.stmt) {
			continue
		}
		return true
	}
	return false
}

func nearestBlock(n syntax.Node) syntax.Node {
	b := n.Parent()
	for !b.IsNull() && !blockTypes[b.Type()] {
		b = b.Parent()
	}
	return b
}

func encloses(outer, n syntax.Node) bool {
	return outer.StartByte() <= n.StartByte() && n.EndByte() <= outer.EndByte()
}

// enclosingFunc is the nearest function around n (null at file level).
func enclosingFunc(n syntax.Node) syntax.Node {
	for p := n.Parent(); !p.IsNull(); p = p.Parent() {
		if funcTypes[p.Type()] {
			return p
		}
	}
	return syntax.Node{}
}

// dominates approximates "every path to use passes through stmt": the
// block holding stmt encloses use.
func dominates(stmt, use syntax.Node) bool {
	blk := stmt.Parent()
	for !blk.IsNull() && !blockTypes[blk.Type()] {
		blk = blk.Parent()
	}
	if blk.IsNull() {
		return true
	}
	for p := use.Parent(); !p.IsNull(); p = p.Parent() {
		if p.Equal(blk) {
			return true
		}
	}
	return false
}

// paramNamed is the identifier declaring parameter name of function fn.
func paramNamed(fn syntax.Node, name string) syntax.Node {
	var found syntax.Node
	for i := 0; i < fn.ChildCount() && found.IsNull(); i++ {
		c := fn.Child(i)
		if identTypes[c.Type()] && fn.FieldNameOfChild(i) == "parameter" && c.Text() == name {
			return c // JS x => ...
		}
		if !paramListTypes[c.Type()] {
			continue
		}
		c.Walk(func(d syntax.Node) bool {
			if !found.IsNull() {
				return false
			}
			if identTypes[d.Type()] && d.Text() == name {
				found = d
			}
			return !strings.HasSuffix(d.Type(), "type") && d.Type() != "type_annotation" && d.Type() != "user_type"
		})
	}
	return found
}

// defsOf lists the names a definition node assigns.
func defsOf(n syntax.Node) []flowDef {
	typ := n.Type()
	one := func(target, value syntax.Node, app, isConst bool) []flowDef {
		if target.IsNull() || (value.IsNull() && !isConst) {
			return nil
		}
		if identTypes[target.Type()] {
			return []flowDef{{name: target.Text(), stmt: n, value: value, appendOp: app, isConst: isConst}}
		}
		// a, b = x, y: positional when both sides are lists.
		ts, vs := namedChildren(target), namedChildren(value)
		var out []flowDef
		for i, t := range ts {
			if !identTypes[t.Type()] {
				continue
			}
			v := value
			if len(vs) == len(ts) {
				v = vs[i]
			}
			out = append(out, flowDef{name: t.Text(), stmt: n, value: v, appendOp: app, isConst: isConst})
		}
		return out
	}
	switch typ {
	case "var_spec", "const_spec": // Go
		val := n.Field("value")
		vs := namedChildren(val)
		var out []flowDef
		var names []syntax.Node
		for i := 0; i < n.ChildCount(); i++ {
			if n.FieldNameOfChild(i) == "name" {
				names = append(names, n.Child(i))
			}
		}
		for i, nm := range names {
			d := flowDef{name: nm.Text(), stmt: n, isConst: typ == "const_spec" && val.IsNull()}
			switch {
			case len(vs) == len(names):
				d.value = vs[i]
			case len(vs) > 0:
				d.value = val
			default:
				d.isConst = true // var x T: the zero value
			}
			out = append(out, d)
		}
		return out
	case "variable_declarator": // JS, Java, C#
		name := n.Field("name")
		val := n.Field("value")
		if val.IsNull() { // C#: the value follows the name
			ch := namedChildren(n)
			if len(ch) > 1 {
				val = ch[len(ch)-1]
				if val.Type() == "equals_value_clause" {
					val = val.NamedChild(0)
				}
			}
		}
		return one(name, val, false, false)
	case "property_declaration": // Kotlin
		var name, val syntax.Node
		for _, c := range namedChildren(n) {
			switch c.Type() {
			case "variable_declaration":
				for _, cc := range namedChildren(c) {
					if cc.Type() == "simple_identifier" {
						name = cc
					}
				}
			case "binding_pattern_kind", "modifiers", "type_constraints", "user_type", "nullable_type", "getter", "setter", "property_delegate":
			default:
				if !name.IsNull() {
					val = c
				}
			}
		}
		return one(name, val, false, false)
	}
	left, right := n.Field("left"), n.Field("right")
	if left.IsNull() || right.IsNull() { // Kotlin assignment
		ch := namedChildren(n)
		if len(ch) < 2 {
			return nil
		}
		left, right = ch[0], ch[len(ch)-1]
		if left.Type() == "directly_assignable_expression" && left.NamedChildCount() == 1 {
			left = left.NamedChild(0)
		}
	}
	op := operatorOf(n)
	switch op {
	case "", "=", ":=":
		return one(left, right, false, false)
	case "+=", ".=", "<<=", "<<":
		return one(left, right, true, false)
	case "||=", "??=", "?:=":
		d := one(left, right, false, false)
		for i := range d {
			d[i].appendOp = true // does not replace the value: keep looking
		}
		return d
	}
	return nil
}

// operatorOf is the operator token of a binary or assignment node.
func operatorOf(n syntax.Node) string {
	if o := n.Field("operator"); !o.IsNull() {
		return o.Text()
	}
	for i := 0; i < n.ChildCount(); i++ {
		c := n.Child(i)
		if !c.IsNamed() {
			if t := c.Text(); t != "(" && t != ")" && t != "," {
				return t
			}
		}
	}
	return ""
}

// argsOf is a call's argument list node (null for none).
func argsOf(n syntax.Node) syntax.Node {
	if a := n.Field("arguments"); !a.IsNull() {
		return a
	}
	for _, c := range namedChildren(n) {
		switch c.Type() {
		case "call_suffix": // Kotlin
			for _, cc := range namedChildren(c) {
				if cc.Type() == "value_arguments" {
					return cc
				}
			}
			return c
		case "argument_list", "arguments", "value_arguments":
			return c
		}
	}
	return syntax.Node{}
}

// argList is the argument values of an argument list.
func argList(a syntax.Node) []syntax.Node {
	var out []syntax.Node
	for _, c := range namedChildren(a) {
		if c.Type() == "comment" || c.Type() == "block" || c.Type() == "do_block" || c.Type() == "annotated_lambda" {
			continue
		}
		out = append(out, c)
	}
	return out
}

// receiverOf is the object a method is called on (null for a function).
func receiverOf(n syntax.Node) syntax.Node {
	for _, f := range []string{"object", "receiver"} {
		if r := n.Field(f); !r.IsNull() {
			return r
		}
	}
	callee := n.Field("function")
	if callee.IsNull() && n.Type() == "call_expression" && n.NamedChildCount() > 0 {
		callee = n.NamedChild(0) // Kotlin
	}
	if memberTypes[callee.Type()] && callee.NamedChildCount() > 0 {
		return callee.NamedChild(0)
	}
	return syntax.Node{}
}

func namedChildren(n syntax.Node) []syntax.Node {
	k := n.NamedChildCount()
	out := make([]syntax.Node, 0, k)
	for i := 0; i < k; i++ {
		if c := n.NamedChild(i); c.Type() != "comment" {
			out = append(out, c)
		}
	}
	return out
}
