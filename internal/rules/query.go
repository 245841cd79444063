package rules

import (
	"regexp"
	"sort"
	"strings"

	"github.com/diffpalhq/diffpal/internal/clip"
	"github.com/diffpalhq/diffpal/internal/syntax"
)

// queryRule is the compiled form of a rule's query field: one tree-sitter
// query per grammar, and the literals of which one must occur in a file
// for the query to be worth a parse.
type queryRule struct {
	byGrammar map[string]string // grammar -> query source, compiled on first use
	lits      []string          // nil: no literal could be derived, always parse
}

// compiled returns the query for grammar g, compiling it on first use
// (syntax.CachedQuery): a review pays only for the grammars of the files
// it parses. Built-in queries are compiled by the tests; user queries at
// load, so a broken one is an error naming the rule.
func (q *queryRule) compiled(g string) *syntax.Query {
	src, ok := q.byGrammar[g]
	if !ok {
		return nil
	}
	c, err := syntax.CachedQuery(g, src)
	if err != nil {
		return nil
	}
	return c
}

// querySources is the query sources the rule runs, by grammar: its
// query's, or its flow's sinks and sources (a rule with a query runs no
// flow). compileAhead and the query snapshot (querysnap.go) read them.
func (c *compiled) querySources() []map[string]string {
	switch {
	case c.query != nil:
		return []map[string]string{c.query.byGrammar}
	case c.flow != nil:
		return []map[string]string{c.flow.sinks, c.flow.sources}
	}
	return nil
}

// compileAhead starts compiling the queries the rule will run on grammar
// g (syntax.CompileAhead).
func (c *compiled) compileAhead(g string) {
	for _, m := range c.querySources() {
		if src, ok := m[g]; ok {
			syntax.CompileAhead(g, src)
		}
	}
}

// grammarsOf maps a query key (a language id) to the grammars it runs on.
func grammarsOf(lang string) []string {
	switch lang {
	case "typescript":
		return []string{"typescript", "tsx"}
	case "javascript":
		return []string{"javascript"}
	}
	if g := syntax.Grammar(lang, ""); g != "" {
		return []string{g}
	}
	return nil
}

// eqLit finds the string arguments of #eq? and #any-of? style predicates
// and the literal parts of #match? regexps, for the prefilter.
var (
	eqLitRe    = regexp.MustCompile(`\(#eq\?\s+@[\w.-]+\s+"((?:[^"\\]|\\.)*)"\s*\)`)
	matchLitRe = regexp.MustCompile(`\(#match\?\s+@[\w.-]+\s+"((?:[^"\\]|\\.)*)"\s*\)`)
)

// queryLiterals derives the prefilter of one query. The top-level
// patterns of a query are alternatives, and the predicates inside one
// pattern must all hold: so each pattern needs the literals of any one of
// its #eq?/#match? predicates (the most selective is taken: the set whose
// shortest literal is longest), and the query needs one pattern's. When
// some pattern has no literal, the query has no prefilter (nil).
func queryLiterals(q string) []string {
	return derive(derivedQuery+q, func() derivedLits { return derivedLits{Lits: deriveQueryLiterals(q)} }).Lits
}

// deriveQueryLiterals computes queryLiterals (derivedSnapshot holds the
// built-in rules' answers).
func deriveQueryLiterals(q string) []string {
	var out []string
	for _, form := range topLevelForms(q) {
		if strings.HasPrefix(form, "[") {
			// [a b] is an alternation: each branch is an alternative.
			inner := queryLiterals(form[1 : len(form)-1])
			if inner == nil {
				return nil
			}
			out = append(out, inner...)
			continue
		}
		var best []string
		bestLen := -1
		consider := func(lits []string) {
			if len(lits) == 0 {
				return
			}
			short := len(lits[0])
			for _, l := range lits {
				short = min(short, len(l))
			}
			if short > bestLen {
				best, bestLen = lits, short
			}
		}
		for _, m := range eqLitRe.FindAllStringSubmatch(form, -1) {
			consider([]string{unquoteQuery(m[1])})
		}
		for _, m := range matchLitRe.FindAllStringSubmatch(form, -1) {
			if lits, fold := requiredLiterals(unquoteQuery(m[1])); !fold {
				consider(lits)
			}
		}
		if best == nil {
			return nil
		}
		out = append(out, best...)
	}
	return out
}

// topLevelForms splits a query into its top-level patterns (balanced
// (...) or [...] forms), skipping strings and ; comments.
func topLevelForms(q string) []string {
	var forms []string
	depth, start := 0, -1
	for i := 0; i < len(q); i++ {
		switch c := q[i]; c {
		case '"':
			for i++; i < len(q) && q[i] != '"'; i++ {
				if q[i] == '\\' {
					i++
				}
			}
		case ';':
			for i < len(q) && q[i] != '\n' {
				i++
			}
		case '(', '[':
			if depth == 0 {
				start = i
			}
			depth++
		case ')', ']':
			depth--
			if depth == 0 && start >= 0 {
				forms = append(forms, q[start:i+1])
				start = -1
			}
		}
	}
	return forms
}

// prefilterOf is the file prefilter of a rule's queries: the literals of
// all of them when every query has some, else nil (always parse); the
// rule's explicit prefilter wins.
func prefilterOf(srcs, explicit []string) []string {
	if len(explicit) > 0 {
		return append([]string(nil), explicit...)
	}
	var out []string
	for _, src := range srcs {
		lits := queryLiterals(src)
		if lits == nil {
			return nil
		}
		out = append(out, lits...)
	}
	return out
}

// grammarLiterals derives, for each grammar of a syntax rule, the
// literals of its own query (a query rule's, a flow rule's sink) of which
// one must occur in a file for that query to match at all; a grammar
// whose query has a pattern without literals has none. They narrow the
// rule's prefilter, which an explicit prefilter states for every
// language at once ("secure" let a Go file with InsecureSkipVerify parse
// for the cookie rule, whose Go query needs Cookie or SetCookie).
func grammarLiterals(byGrammar map[string]string) map[string][]string {
	var out map[string][]string
	for g, src := range byGrammar {
		if lits := queryLiterals(src); lits != nil {
			if out == nil {
				out = map[string][]string{}
			}
			out[g] = lits
		}
	}
	return out
}

func unquoteQuery(s string) string {
	return strings.NewReplacer(`\\`, `\`, `\"`, `"`).Replace(s)
}

// compileQuery compiles r.Query. Keys are language ids; each needs a
// bundled grammar. A query's literals only prefilter when every top-level
// pattern has one, which the rule author states with the prefilter
// field otherwise.
func compileQuery(r *Rule, eager bool) error {
	if len(r.Query) == 0 {
		return nil
	}
	switch r.Scope {
	case "added":
	default:
		return ferr("query", "only valid with scope: added (the default)")
	}
	if r.Block != nil || r.Enclosing != nil || r.Context != nil || r.Entropy != nil || r.Check != "" {
		return ferr("query", "cannot be combined with block, enclosing, context, entropy or check: the query states the structure")
	}
	qr := &queryRule{byGrammar: map[string]string{}}
	keys := make([]string, 0, len(r.Query))
	for k := range r.Query {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var srcs []string
	for _, lang := range keys {
		src := r.Query[lang]
		gs := grammarsOf(lang)
		if len(gs) == 0 {
			return ferr("query."+lang, "no grammar for language %q (grammars: go, python, javascript, typescript, java, kotlin, ruby, php, csharp, shell, dockerfile, yaml, hcl)", lang)
		}
		if !strings.Contains(src, "@match") {
			return ferr("query."+lang, "needs a @match capture: the node the finding is about")
		}
		for _, g := range gs {
			if eager {
				if _, err := syntax.CachedQuery(g, src); err != nil {
					return ferr("query."+lang, "%v", err)
				}
			}
			qr.byGrammar[g] = src
		}
		srcs = append(srcs, src)
	}
	qr.lits = prefilterOf(srcs, r.Prefilter)
	r.c.query = qr
	r.c.gramLits = grammarLiterals(qr.byGrammar)
	return nil
}

// matchQuery runs a query rule over the added lines of a parsed file.
// A match is reported when its @match node (or its @report node, when the
// query captures one) contains an added line, once per node, at the first
// and last added lines inside it: a multi-line statement is one finding,
// wherever in it the change is.
func (r *Rule) matchQuery(fc *fileCtx, t *syntax.Tree) []Hit {
	q := r.c.query.compiled(t.Grammar)
	if q == nil {
		return nil
	}
	f := fc.f
	added := make(map[int]bool, len(f.Added))
	for _, l := range f.Added {
		added[l.No] = true
	}
	var hits []Hit
	seen := map[int]bool{}
	for _, run := range addedRuns(f.Added) {
		for _, m := range t.Matches(q, run[0], run[1]) {
			n, ok := m.Get("match")
			if !ok {
				continue
			}
			// @report, when captured, is where the finding is placed (the
			// sink inside a function whose whole text @match is filtered on).
			at := n
			if rn, ok := m.Get("report"); ok {
				at = rn
			}
			if seen[at.StartByte()] {
				continue
			}
			first, last := addedWithin(at, added)
			if first == 0 {
				continue
			}
			seen[at.StartByte()] = true
			if h, ok := r.queryHit(fc, n, at, first, last); ok {
				hits = append(hits, h)
			}
		}
	}
	return hits
}

// addedWithin is the first and last added line inside node n (0, 0 when
// none is): where a finding on n is placed.
func addedWithin(n syntax.Node, added map[int]bool) (first, last int) {
	for l := n.StartLine(); l <= n.EndLine(); l++ {
		if added[l] {
			if first == 0 {
				first = l
			}
			last = l
		}
	}
	return first, last
}

// addedRuns groups added line numbers into [from, to] runs.
func addedRuns(lines []Line) [][2]int {
	var out [][2]int
	for _, l := range lines {
		if n := len(out); n > 0 && out[n-1][1]+1 >= l.No {
			if l.No > out[n-1][1] {
				out[n-1][1] = l.No
			}
			continue
		}
		out = append(out, [2]int{l.No, l.No})
	}
	return out
}

// queryHit applies the rule's text filters to a matched node and builds
// the hit: pattern/not_pattern on the node's text (masked unless
// match_in: raw), unless/require on its raw text, require_code on the
// masked text.
func (r *Rule) queryHit(fc *fileCtx, n, at syntax.Node, first, last int) (Hit, bool) {
	raw := n.Text()
	masked := raw
	if mc := fc.maskedContent(); mc != nil {
		masked = maskedSpan(fc, mc, n)
	}
	text := masked
	if r.MatchIn == "raw" {
		text = raw
	}
	c := r.c
	if c.pattern != nil && !c.pattern.MatchString(text) {
		return Hit{}, false
	}
	if c.notPattern != nil && c.notPattern.MatchString(text) {
		return Hit{}, false
	}
	for _, re := range c.unless {
		if re.MatchString(raw) {
			return Hit{}, false
		}
	}
	for _, re := range c.require {
		if !re.MatchString(raw) {
			return Hit{}, false
		}
	}
	for _, re := range c.requireCode {
		if !re.MatchString(masked) {
			return Hit{}, false
		}
	}
	line, _ := fc.line(first, false)
	anchor := firstLine(at.Text())
	col := strings.Index(line, anchor)
	var idx []int
	if col >= 0 && at.StartLine() == first {
		idx = []int{col, col + len(anchor)}
	}
	h := r.newHit(fc.f.Path, first, last, line, idx)
	if idx == nil {
		if a := clip.Text(Redact(anchor), 120); a != "" {
			h.Anchor = a
		}
	}
	return h, true
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// maskedSpan is the masked text of node n (lines of mc, 1-based).
func maskedSpan(fc *fileCtx, mc []string, n syntax.Node) string {
	sl, el := n.StartLine(), n.EndLine()
	if sl < 1 || el > len(mc) {
		return n.Text()
	}
	t := fc.syntaxTree()
	if t == nil {
		return n.Text()
	}
	lineStart := t.LineStart(sl)
	joined := strings.Join(mc[sl-1:el], "\n")
	a := n.StartByte() - lineStart
	b := a + (n.EndByte() - n.StartByte())
	if a < 0 || b > len(joined) || a > b {
		return n.Text()
	}
	return joined[a:b]
}

// The prefilter window, in lines around the added lines: a statement's
// callee may stand a few lines above a changed argument, and a flow
// rule's sink further below a changed construction.
const (
	syntaxWindowBefore = 12
	syntaxWindowAfter  = 80
)
