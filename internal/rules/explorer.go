package rules

import (
	"regexp"
	"regexp/syntax"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/diffpalhq/diffpal/internal/par"
	"github.com/diffpalhq/diffpal/internal/rxstart"
)

// Symbol is a definition on an added line and where it is used elsewhere.
type Symbol struct {
	Name, Kind, Path string
	Line             int
	UsedIn           []Use
	// Signature describes a structural change of the definition's
	// parameters or results, old and new ("f(a, b) → f(a)"), read from
	// the syntax trees; "" when it did not change or is unknown.
	Signature string
}

// Use is one reference to a symbol.
type Use struct {
	Path string
	Line int
}

type defPattern struct {
	kind string
	re   *regexp.Regexp
	lits []string // prefilter: one must occur for re to match
	fold bool
	sets [][]string // prefilter: one of each set must occur (literalSets)
	// first, when not nil, holds every byte a line can start with for re
	// to match it (anchoredFirst): the cheapest prefilter of all.
	first *[256]bool
}

// defSrc is a definition pattern's source: compiled (with its literals)
// per language on first use, since compiling all of them with their
// literal sets was the largest part of the package's initialisation,
// paid by every command.
type defSrc struct{ kind, re string }

func dp(kind, re string) defSrc { return defSrc{kind, re} }

// defPatternsOf is the compiled definition patterns of lang (nil: none).
func defPatternsOf(lang string) []defPattern {
	if f := defCompiled[lang]; f != nil {
		return f()
	}
	return nil
}

var defCompiled = func() map[string]func() []defPattern {
	m := map[string]func() []defPattern{}
	for lang, srcs := range defPatterns {
		m[lang] = sync.OnceValue(func() []defPattern {
			out := make([]defPattern, len(srcs))
			for i, d := range srcs {
				lits, fold := requiredLiterals(d.re)
				out[i] = defPattern{d.kind, regexp.MustCompile(d.re), lits, fold, literalSets(d.re), anchoredFirst(d.re)}
			}
			return out
		})
	}
	return m
}()

// defPatterns recognise definitions per language; each has a "name" group.
var defPatterns = map[string][]defSrc{
	"go": {
		dp("method", `^func\s+\([^)]*\)\s*(?P<name>\w+)\s*(?:\[[^\]]*\])?\(`),
		dp("func", `^func\s+(?P<name>\w+)\s*(?:\[[^\]]*\])?\(`),
		dp("type", `^type\s+(?P<name>\w+)\b`),
		dp("const", `^const\s+(?P<name>\w+)\b`),
		dp("var", `^var\s+(?P<name>\w+)\b`),
	},
	"python": {
		dp("method", `^\s+(?:async\s+)?def\s+(?P<name>\w+)\s*\(`),
		dp("func", `^(?:async\s+)?def\s+(?P<name>\w+)\s*\(`),
		dp("class", `^\s*class\s+(?P<name>\w+)`),
		dp("const", `^(?P<name>[A-Z][A-Z0-9_]{2,})\s*(?::[^=]+)?=[^=]`),
	},
	"javascript": jsDefs,
	"typescript": append(append([]defSrc(nil), jsDefs...),
		dp("type", `^\s*(?:export\s+)?(?:declare\s+)?(?:interface|type|enum)\s+(?P<name>\w+)`)),
	"ruby": {
		dp("method", `^\s*def\s+(?:self\.)?(?P<name>\w+[?!=]?)`),
		dp("class", `^\s*(?:class|module)\s+(?P<name>[A-Z]\w*)`),
	},
	"java": {
		dp("class", `^\s*(?:(?:public|protected|private|static|final|abstract|sealed)\s+)*(?:class|interface|enum|record)\s+(?P<name>\w+)`),
		dp("method", `^\s*(?:(?:public|protected|private|static|final|abstract|synchronized|native|default)\s+)+(?:<[^>]+>\s+)?[\w<>\[\],.? ]+?\s+(?P<name>\w+)\s*\([^;]*$`),
	},
	"kotlin": {
		dp("func", `^\s*(?:(?:public|private|internal|protected|override|suspend|inline|open|abstract|operator|infix|tailrec)\s+)*fun\s+(?:<[^>]+>\s+)?(?:[\w.]+\.)?(?P<name>\w+)\s*\(`),
		dp("class", `^\s*(?:(?:public|private|internal|open|abstract|sealed|data|enum|inner|annotation|value)\s+)*(?:class|interface|object)\s+(?P<name>\w+)`),
	},
	"swift": {
		dp("func", `^\s*(?:(?:public|private|internal|fileprivate|open|static|class|override|final|mutating|@\w+)\s+)*func\s+(?P<name>\w+)`),
		dp("type", `^\s*(?:(?:public|private|internal|fileprivate|open|final)\s+)*(?:class|struct|enum|protocol)\s+(?P<name>\w+)`),
	},
	"shell": {
		dp("func", `^\s*function\s+(?P<name>[A-Za-z_][\w-]*)`),
		dp("func", `^\s*(?P<name>[A-Za-z_][\w-]*)\s*\(\)\s*\{?\s*$`),
	},
}

var jsDefs = []defSrc{
	dp("func", `^\s*(?:export\s+)?(?:default\s+)?(?:async\s+)?function\s*\*?\s*(?P<name>\w+)\s*[(<]`),
	dp("class", `^\s*(?:export\s+)?(?:default\s+)?(?:abstract\s+)?class\s+(?P<name>\w+)`),
	dp("func", `^\s*(?:export\s+)?(?:const|let|var)\s+(?P<name>\w+)\s*(?::[^=]+)?=\s*(?:async\s+)?(?:\([^)]*\)|\w+)\s*(?::\s*[^=]+)?=>`),
	// a method's parameter list holds no string, call or callback, so that
	// test-framework calls such as describe('x', function () { are not
	// read as method definitions
	dp("method", `^\s+(?:(?:public|private|protected|static|async|readonly|override)\s+)*(?P<name>[A-Za-z_]\w*)\s*\([^()'"`+"`"+`]*\)\s*(?::\s*[^{]+)?\{\s*$`),
}

func isJSFamily(lang string) bool { return lang == "javascript" || lang == "typescript" }

// testCallbacks are test-framework functions whose callbacks look like
// definitions (describe('x', function () {); they never define a symbol.
var testCallbacks = map[string]bool{
	"describe": true, "context": true, "suite": true, "it": true, "test": true, "specify": true,
	"xdescribe": true, "fdescribe": true, "xit": true, "fit": true, "xtest": true,
	"before": true, "after": true, "beforeEach": true, "afterEach": true, "beforeAll": true, "afterAll": true,
	"setup": true, "teardown": true, "suiteSetup": true, "suiteTeardown": true,
}

var notSymbol = map[string]bool{
	"if": true, "for": true, "while": true, "switch": true, "catch": true, "function": true, "return": true,
	"main": true, "init": true, "__init__": true, "constructor": true, "setUp": true, "tearDown": true,
	"new": true, "else": true, "do": true, "try": true, "with": true, "render": true, "initialize": true,
	"String": true, "Error": true, "ServeHTTP": true, "toString": true, "equals": true, "hashCode": true,
}

type def struct {
	name, kind string
	line       int
	text       string // masked, whitespace-collapsed definition line
}

// definitions returns the definitions on the given lines (masked texts).
func definitions(lang string, lines []Line, masked func(i int) string) []def {
	pats := defPatternsOf(lang)
	if pats == nil {
		return nil
	}
	var out []def
	for i, l := range lines {
		// Masking only blanks text: a pattern whose literal is not on the
		// raw line cannot match the masked one, and the file need not be
		// masked (or parsed) for it.
		m := l.Text
		done := false
		for _, p := range pats {
			if p.first != nil && (l.Text == "" || !p.first[l.Text[0]]) {
				continue
			}
			if !anyLiteral(l.Text, p.lits, p.fold) || !hasEverySet(l.Text, p.sets) {
				continue
			}
			if !done {
				m, done = masked(i), true
			}
			if !anyLiteral(m, p.lits, p.fold) || !hasEverySet(m, p.sets) {
				continue
			}
			sm := p.re.FindStringSubmatch(m)
			if sm == nil {
				continue
			}
			name := sm[p.re.SubexpIndex("name")]
			if len(name) < 3 || notSymbol[name] || (isJSFamily(lang) && testCallbacks[name]) || strings.HasPrefix(name, "test") || strings.HasPrefix(name, "Test") {
				break
			}
			out = append(out, def{name: name, kind: p.kind, line: l.No, text: strings.Join(strings.Fields(m), " ")})
			break
		}
	}
	return out
}

// anchoredFirst is the set of bytes a line must start with for re, a
// pattern anchored at the line's start (^), to match it, or nil when re
// is not anchored, may match an empty line, or may start with
// whitespace. Masking blanks text to spaces, so a masked line may start
// with a space where its raw text does not; with no whitespace in the
// set, a masked line that re matches starts with the raw line's own first
// byte, and a raw line whose first byte is not in the set is passed over
// unmasked (TestAnchoredFirst). Most of the definition patterns of Go and
// Python are such, and asking each pattern's literals of every added
// line of a large change was most of finding its definitions.
func anchoredFirst(re string) *[256]bool {
	p, err := syntax.Parse(re, syntax.Perl)
	if err != nil {
		return nil
	}
	p = p.Simplify()
	if p.Op != syntax.OpConcat || len(p.Sub) < 2 || p.Sub[0].Op != syntax.OpBeginText {
		return nil
	}
	var set [256]bool
	if rxstart.SeqFirstBytes(p.Sub[1:], &set) {
		return nil // may match an empty line
	}
	for _, c := range " \t\n\v\f\r" {
		if set[c] {
			return nil
		}
	}
	return &set
}

// prepareDefs computes, on every core, each file's definitions on added
// lines and the masked content they are read from (the bulk of
// ChangedSymbols on a large change); what follows reads them memoized, in
// the same order as before, so the result is the same.
func prepareDefs(ctxs []*fileCtx) {
	var todo []*fileCtx
	seen := make(map[*fileCtx]bool, len(ctxs))
	for _, fc := range ctxs {
		if !seen[fc] && !fc.defsDone && !fc.vendored() {
			seen[fc] = true
			todo = append(todo, fc)
		}
	}
	if runtime.GOMAXPROCS(0) < 2 || len(todo) < 2 {
		return // on one core, computed as they are asked for
	}
	par.For(len(todo), 1, func(i int) { addedDefs(todo[i]) })
}

func addedDefs(fc *fileCtx) []def {
	if !fc.defsDone {
		fc.defs = definitions(fc.f.Language, fc.f.Added, func(i int) string { return fc.lexAdded(fc.f.Added[i].No) })
		fc.defsDone = true
	}
	return fc.defs
}

func removedDefs(fc *fileCtx) []def {
	return definitions(fc.f.Language, fc.f.Removed, func(i int) string { return fc.maskedRemoved(i) })
}

// useIndex maps every identifier in the masked content of a set of files
// to the lines that mention it, built once so that looking up the uses of
// each changed symbol costs a map lookup instead of a scan of every line
// (which made large changes quadratic).
type useIndex struct {
	ctxs  []*fileCtx
	ids   map[string]int32 // the wanted names, numbered
	posts [][]posting      // by name id, in file and line order
}

type posting struct {
	file int
	line int
}

// maxUses is how many uses usesOf returns.
const maxUses = 50

// saturate lets newUseIndex stop reading a name's uses once usesOf has
// all it can return (off only in TestUseIndexSaturation's reference).
var saturate = true

// useChunk is how many files newUseIndex reads (on every core) before it
// takes stock of which names have all the uses usesOf can return.
const useChunk = 32

func newUseIndex(ctxs []*fileCtx, names map[string]bool) *useIndex {
	x := &useIndex{ctxs: ctxs}
	if len(names) == 0 {
		return x
	}
	// Names are numbered, so that a use is a small int and the index is
	// built with no map operation and no slice growth per use (the
	// postings of a large change are hundreds of thousands).
	x.ids = make(map[string]int32, len(names))
	for n := range names {
		x.ids[n] = int32(len(x.ids))
	}
	// wanted[c] has bit min(n, 63) set when a name of n bytes starts
	// with c: most identifiers of a file fail this test and skip the map
	// lookup (one per identifier of every changed file).
	var wanted [256]uint64
	for n := range names {
		if n != "" {
			wanted[n[0]] |= 1 << min(len(n), 63)
		}
	}
	// Each indexed file's language family, numbered; -1 for a file that
	// is not read (docs, changelogs, YAML and bundles mention names, they
	// do not use them).
	famOf := make([]int, len(ctxs))
	fams := map[string]int{}
	for fi, fc := range ctxs {
		famOf[fi] = -1
		if fc.f.Content == nil || !isSourceLanguage(fc.f.Language) || fc.vendored() {
			continue
		}
		fam := langFamily(fc.f.Language)
		if _, ok := fams[fam]; !ok {
			fams[fam] = len(fams)
		}
		famOf[fi] = fams[fam]
	}
	// full[id*nf+fam]: the files read so far hold every use of the name in
	// that family that usesOf can return, whichever file asks: at least
	// maxUses of them outside any one file (usesOf takes the first
	// maxUses outside the asking file, in file order). Later files of the
	// family are not read for it, and a line whose only names are full is
	// not masked. On a large change whose files all call a few helpers
	// this is most lines.
	nf := len(fams)
	full := make([]bool, len(x.ids)*nf)
	total := make([]int32, len(x.ids)*nf)   // uses read so far
	maxFile := make([]int32, len(x.ids)*nf) // the most in one file
	// words calls fn for each identifier of s that is a wanted name not
	// full in family fam.
	words := func(s string, fam int, fn func(id int32)) {
		for j := 0; j < len(s); {
			if !isWordByte(s[j]) {
				j++
				continue
			}
			k := j
			for k < len(s) && isWordByte(s[k]) {
				k++
			}
			if wanted[s[j]]&(1<<min(k-j, 63)) != 0 {
				if id, ok := x.ids[s[j:k]]; ok && !full[int(id)*nf+fam] {
					fn(id)
				}
			}
			j = k
		}
	}
	type use struct {
		id   int32
		line int32
	}
	uses := make([][]use, len(ctxs))
	read := func(fi int) {
		fc, fam := ctxs[fi], famOf[fi]
		if fam < 0 {
			return
		}
		// Only lines whose raw text names a changed symbol are read masked,
		// so a file that names none is never masked (or parsed).
		// The line's names so far: a line has few, so a short slice;
		// past 16 (a long generated line), a map as well.
		var seen []int32
		var seenMap map[int32]bool
		for i, raw := range fc.f.Content {
			hit := false
			words(raw, fam, func(int32) { hit = true })
			if !hit {
				continue
			}
			m := fc.lexContent()[i]
			if fc.f.Language == "go" && packageClause.MatchString(m) {
				continue
			}
			seen = seen[:0]
			clear(seenMap)
			words(m, fam, func(id int32) {
				if len(seen) < 16 {
					if slices.Contains(seen, id) {
						return
					}
					seen = append(seen, id)
				} else {
					if seenMap == nil {
						seenMap = map[int32]bool{}
					}
					if len(seenMap) == 0 {
						for _, x := range seen {
							seenMap[x] = true
						}
					}
					if seenMap[id] {
						return
					}
					seenMap[id] = true
				}
				uses[fi] = append(uses[fi], use{id, int32(i + 1)})
			})
		}
	}
	// Files are read on every core, a chunk at a time (each file's masks
	// are its own; full is only written between chunks); their uses join
	// the index in file order, as one pass would add them.
	inFile := make([]int32, len(x.ids)) // a file's uses of each name
	for lo := 0; lo < len(ctxs); lo += useChunk {
		hi := min(lo+useChunk, len(ctxs))
		par.For(hi-lo, 8, func(k int) { read(lo + k) })
		for fi := lo; fi < hi; fi++ {
			fam := famOf[fi]
			for _, u := range uses[fi] {
				inFile[u.id]++
			}
			for _, u := range uses[fi] {
				if n := inFile[u.id]; n > 0 {
					c := int(u.id)*nf + fam
					total[c] += n
					maxFile[c] = max(maxFile[c], n)
					full[c] = saturate && total[c]-maxFile[c] >= maxUses
					inFile[u.id] = 0
				}
			}
		}
	}
	// Each name's postings are counted, then laid out in one array.
	count := make([]int32, len(x.ids))
	n := 0
	for _, us := range uses {
		for _, u := range us {
			count[u.id]++
		}
		n += len(us)
	}
	all := make([]posting, n)
	x.posts = make([][]posting, len(x.ids))
	at := 0
	for id, c := range count {
		x.posts[id] = all[at : at : at+int(c)]
		at += int(c)
	}
	for fi, us := range uses {
		for _, u := range us {
			x.posts[u.id] = append(x.posts[u.id], posting{file: fi, line: int(u.line)})
		}
	}
	return x
}

func isWordByte(c byte) bool { return wordBytes[c] }

// wordBytes: _, digits and ASCII letters. A table: the use index asks it of
// every byte of every changed file, and a lookup beats four range tests
// there (~20% of its word loop).
var wordBytes = func() (t [256]bool) {
	for c := range 256 {
		t[c] = c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	}
	return t
}()

// usesOf finds references to name in the Content of the code files of
// skip's language family other than skip (masked, so comments and strings
// do not count), at most 50.
func (x *useIndex) usesOf(name string, skip *File) []Use {
	fam := langFamily(skip.Language)
	var uses []Use
	plain := true
	for i := 0; i < len(name); i++ {
		plain = plain && isWordByte(name[i])
	}
	if !plain {
		// Names such as Ruby's valid? are not single words: scan.
		re := regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `(?:\W|$)`)
		for _, fc := range x.ctxs {
			if fc.f == skip || fc.f.Content == nil || langFamily(fc.f.Language) != fam || !isSourceLanguage(fc.f.Language) || fc.vendored() {
				continue
			}
			for i, m := range fc.lexContent() {
				if re.MatchString(m) {
					uses = append(uses, Use{Path: fc.f.Path, Line: i + 1})
					if len(uses) >= maxUses {
						return uses
					}
				}
			}
		}
		return uses
	}
	id, ok := x.ids[name]
	if !ok {
		return nil
	}
	for _, p := range x.posts[id] {
		fc := x.ctxs[p.file]
		if fc.f == skip || langFamily(fc.f.Language) != fam {
			continue
		}
		uses = append(uses, Use{Path: fc.f.Path, Line: p.line})
		if len(uses) >= maxUses {
			break
		}
	}
	return uses
}

// ChangedSymbols returns the definitions on added lines and their uses in
// the other changed files, by path and then line.
func ChangedSymbols(files []*File) []Symbol {
	return NewSymbols(files).Read(func(Symbol) bool { return true })
}

// Symbols reads the changed symbols of a set of files, ChangedSymbols'
// list, only as far as its reader needs them: the explorer's evidence map
// takes the first 500 that have evidence, and on a large change those are
// in the first few hundred files, while finding every file's definitions
// was ~60 ms of a 2,000-file review's wall time (docs/benchmarks.md).
// Each Read goes on in path order where the last stopped. A Symbols is
// not safe for concurrent use.
type Symbols struct {
	all   []*fileCtx // every file: uses are looked for in all of them
	order []*fileCtx // all, by path: the order symbols are read in
	read  int        // files of order read
	syms  []Symbol   // their symbols, with their uses
	in    []*File    // the file each of syms is in
	batch int        // files the next batch reads
}

// symbolBatch is how many files Symbols' first batch reads (their
// definitions found on every core); each batch after reads twice as
// many as the one before, so a reader who needs every symbol waits
// for a handful of batches.
const symbolBatch = 64

// NewSymbols prepares to read the changed symbols of files.
func NewSymbols(files []*File) *Symbols {
	s := &Symbols{all: make([]*fileCtx, 0, len(files)), batch: symbolBatch}
	for _, f := range files {
		if f != nil {
			s.all = append(s.all, newFileCtx(f))
		}
	}
	s.order = slices.Clone(s.all)
	slices.SortStableFunc(s.order, func(a, b *fileCtx) int { return strings.Compare(a.f.Path, b.f.Path) })
	return s
}

// Read reads files' symbols, in path order and a batch of files at a
// time, until more returns false for one (more is asked of each symbol
// in order, before its uses are known) or every file is read, and returns
// every symbol read so far, with its uses: always a prefix of
// ChangedSymbols' list that ends with the symbol more refused, or the
// whole list. A nil more reads nothing more.
func (s *Symbols) Read(more func(Symbol) bool) []Symbol {
	from := len(s.syms)
	for more != nil && s.read < len(s.order) {
		files := s.order[s.read:min(len(s.order), s.read+s.batch)]
		s.batch *= 2
		prepareDefs(files)
		stop := false
		for _, fc := range files {
			s.read++
			for _, sym := range fileSymbols(fc) {
				s.syms, s.in = append(s.syms, sym), append(s.in, fc.f)
				stop = stop || !more(sym)
			}
			if stop {
				break
			}
		}
		if stop {
			break
		}
	}
	if from == len(s.syms) {
		return s.syms
	}
	// The uses of the symbols just read, from one index of their names
	// (a name's uses do not depend on which other names are indexed:
	// TestUseIndexSaturation, TestSymbolsReadInParts).
	names := map[string]bool{}
	for _, sym := range s.syms[from:] {
		names[sym.Name] = true
	}
	idx := newUseIndex(s.all, names)
	for i := from; i < len(s.syms); i++ {
		s.syms[i].UsedIn = idx.usesOf(s.syms[i].Name, s.in[i])
	}
	return s.syms
}

// fileSymbols is one file's symbols, without their uses, by line: its
// definitions on added lines, with their changed signatures, and the
// signatures that changed on a line that is not a definition's first (a
// multi-line parameter list).
func fileSymbols(fc *fileCtx) []Symbol {
	if fc.vendored() {
		return nil
	}
	sigs := map[int]Symbol{}
	for _, sym := range symbolSignatures(fc) {
		sigs[sym.Line] = sym
	}
	var out []Symbol
	for _, d := range addedDefs(fc) {
		out = append(out, Symbol{Name: d.name, Kind: d.kind, Path: fc.f.Path, Line: d.line, Signature: sigs[d.line].Signature})
		delete(sigs, d.line)
	}
	for _, sym := range sigs {
		out = append(out, sym)
	}
	slices.SortStableFunc(out, func(a, b Symbol) int { return a.Line - b.Line })
	return out
}
