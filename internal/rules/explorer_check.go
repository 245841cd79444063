package rules

import (
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/diffpalhq/diffpal/internal/par"
)

// vendoredPath: bundles, vendored and generated trees, whose definitions
// and calls are not the change's own code.
var vendoredPath = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(^|/)(vendor|node_modules|third_party|dist|build|bundle|out)/|\.min\.[jt]s$|\.bundle\.[jt]s$|(^|/)[^/]*\.(pb|gen|generated)\.\w+$|_pb2\.py$`)
})

// vendoredHints are literals one of which every match of vendoredPath
// holds: most paths hold none and skip the regexp (the explorer asks for
// every changed file several times).
var vendoredHints = []string{"vendor/", "node_modules/", "third_party/", "dist/", "build/", "bundle/", "out/",
	".min.", ".bundle.", ".pb.", ".gen.", ".generated.", "_pb2.py"}

func isVendoredPath(p string) bool {
	for _, h := range vendoredHints {
		if strings.Contains(p, h) {
			return vendoredPath().MatchString(p)
		}
	}
	return false
}

// vendored answers vendoredOrGenerated for fc's file, once: the
// change-level checks ask it of every file for every symbol they look up
// (usesOf), ~10 ms of a 2,000-file review's CPU before it was kept.
func (fc *fileCtx) vendored() bool {
	switch fc.vendoredGen.Load() {
	case 1:
		return false
	case 2:
		return true
	}
	v := vendoredOrGenerated(fc.f)
	if v {
		fc.vendoredGen.Store(2)
	} else {
		fc.vendoredGen.Store(1)
	}
	return v
}

func vendoredOrGenerated(f *File) bool {
	if isVendoredPath(f.Path) || isGenerated(f) {
		return true
	}
	for i, l := range f.Content {
		if i >= 5 {
			break
		}
		if len(l) > 1000 {
			return true // minified
		}
	}
	return false
}

// sigChange is a definition whose signature changed structurally between
// the old and the new version of its file.
type sigChange struct {
	fc   *fileCtx
	lang string
	def  sigDef   // the first new definition of the key with a new shape
	olds []sigDef // old definitions of the key whose shape is gone
	news []sigDef // every new definition of the key (overloads)
}

// signatureChanges compares the definitions of the old and new trees of
// a modified file. Only files where a changed line may lie in a
// signature are parsed.
func signatureChanges(fc *fileCtx) []sigChange {
	// The change-level check and ChangedSymbols (the evidence's context)
	// both ask; the two parses are done once.
	if !fc.sigsDone {
		fc.sigs, fc.sigsDone = computeSignatureChanges(fc), true
	}
	return fc.sigs
}

func computeSignatureChanges(fc *fileCtx) []sigChange {
	f := fc.f
	g := treeGrammar(f)
	if g == "" || f.Content == nil || f.Status == "deleted" || f.Status == "added" || len(f.Added)+len(f.Removed) == 0 || fc.vendored() {
		return nil
	}
	old, ok := oldContent(f)
	if !ok {
		return nil
	}
	lang := f.Language
	newIdx := make([]int, len(f.Added))
	for i, l := range f.Added {
		newIdx[i] = l.No - 1
	}
	oldIdx := make([]int, len(f.Removed))
	for i, l := range f.Removed {
		oldIdx[i] = l.No - 1
	}
	if !sigTouched(lang, f.Content, newIdx) && !sigTouched(lang, old, oldIdx) {
		return nil
	}
	nt := parseSource(g, f.Content)
	if nt == nil {
		return nil
	}
	newDefs := treeDefs(lang, nt)
	nt.Close()
	ot := parseSource(g, old)
	if ot == nil {
		return nil
	}
	oldDefs := treeDefs(lang, ot)
	ot.Close()
	byKey := func(ds []sigDef) map[string][]sigDef {
		m := map[string][]sigDef{}
		for _, d := range ds {
			m[d.key()] = append(m[d.key()], d)
		}
		return m
	}
	om, nm := byKey(oldDefs), byKey(newDefs)
	var out []sigChange
	for _, d := range newDefs {
		k := d.key()
		olds, news := om[k], nm[k]
		if len(olds) == 0 || !news[0].sameAs(d) {
			continue // a new definition, or not the first of its key
		}
		oldShapes, newShapes := map[string]bool{}, map[string]bool{}
		for _, o := range olds {
			oldShapes[o.shape(lang)] = true
		}
		for _, n := range news {
			newShapes[n.shape(lang)] = true
		}
		var gone []sigDef
		for _, o := range olds {
			if !newShapes[o.shape(lang)] {
				gone = append(gone, o)
			}
		}
		var first *sigDef
		for i := range news {
			if !oldShapes[news[i].shape(lang)] {
				first = &news[i]
				break
			}
		}
		if first == nil || len(gone) == 0 {
			continue // the same signatures, perhaps reformatted or re-annotated
		}
		out = append(out, sigChange{fc: fc, lang: lang, def: *first, olds: gone, news: news})
	}
	return out
}

func (d *sigDef) sameAs(o sigDef) bool { return d.line == o.line && d.name == o.name }

// callFile is a changed file's calls of the changed names, read from its
// new tree.
type callFile struct {
	fc        *fileCtx
	calls     []sigCall
	defs      map[string][]sigDef // its own definitions by name
	goImports map[string]string
	names     map[string]string // imported names -> module
	modules   map[string]string // module aliases -> module
}

func callFamily(lang string) string {
	if lang == "java" || lang == "kotlin" {
		return "jvm"
	}
	return lang
}

// changedSignatureUsed reports a definition whose parameters or results
// changed structurally (from the syntax trees of the old and new file)
// when a call of it in a changed file, at head, passes arguments the old
// signature accepted and the new one does not: a near-certain break. A
// signature change whose calls all still fit is context (ChangedSymbols),
// not a finding. Languages without a grammar keep the lexical check.
func changedSignatureUsed(r *Rule, files []*File) []Hit {
	ctxs := make([]*fileCtx, 0, len(files))
	for _, f := range files {
		if f != nil {
			ctxs = append(ctxs, newFileCtx(f))
		}
	}
	hits := changedSignatureLexical(r, ctxs)
	var todo []*fileCtx
	seen := make(map[*fileCtx]bool, len(ctxs))
	for _, fc := range ctxs {
		if !r.appliesTo(fc.f) || fc.f.Language == "javascript" {
			continue // JavaScript ignores extra and missing arguments: never a certain break
		}
		if !seen[fc] {
			seen[fc] = true
			todo = append(todo, fc)
		}
	}
	// Each file's signature changes are its own (its old file rebuilt,
	// its trees parsed): on a large change they took ~25 ms on one core
	// while the review waited, so they are computed on every core first
	// and then read, memoized, in file order as before.
	if len(todo) > 1 {
		par.For(len(todo), 1, func(i int) { signatureChanges(todo[i]) })
	}
	var changes []sigChange
	for _, fc := range ctxs {
		if seen[fc] {
			changes = append(changes, signatureChanges(fc)...)
		}
	}
	if len(changes) == 0 {
		return hits
	}
	// the files that may call a changed name
	names := map[string]map[string]bool{} // family -> names
	for _, c := range changes {
		fam := callFamily(c.lang)
		if names[fam] == nil {
			names[fam] = map[string]bool{}
		}
		names[fam][c.def.name] = true
	}
	var famFiles = map[string][]*callFile{}
	for _, fc := range ctxs {
		f := fc.f
		fam := callFamily(f.Language)
		want := names[fam]
		g := treeGrammar(f)
		if want == nil || g == "" || f.Content == nil || f.Status == "deleted" || fc.vendored() {
			continue
		}
		any := false
		for n := range want {
			if strings.Contains(fc.raw, n) {
				any = true
				break
			}
		}
		if !any {
			continue
		}
		t := parseSource(g, f.Content)
		if t == nil {
			continue
		}
		cf := &callFile{fc: fc, calls: treeCalls(f.Language, t, want), defs: map[string][]sigDef{}}
		for _, d := range treeDefs(f.Language, t) {
			if want[d.name] {
				cf.defs[d.name] = append(cf.defs[d.name], d)
			}
		}
		switch f.Language {
		case "go":
			cf.goImports = goImports(t)
		case "python", "typescript":
			cf.names, cf.modules = importedNames(f.Language, t)
		}
		t.Close()
		famFiles[fam] = append(famFiles[fam], cf)
	}
	for _, ch := range changes {
		fam := callFamily(ch.lang)
		type broken struct {
			cf       *callFile
			c        sigCall
			strength int
		}
		var bad []broken
		for _, cf := range famFiles[fam] {
			for _, c := range cf.calls {
				if c.name != ch.def.name {
					continue
				}
				s := resolveCall(&ch, cf, &c)
				if s == 0 || !breaks(&ch, famFiles[fam], &c, s) {
					continue
				}
				bad = append(bad, broken{cf, c, s})
			}
		}
		if len(bad) == 0 {
			continue
		}
		sort.SliceStable(bad, func(i, j int) bool { return bad[i].strength > bad[j].strength })
		b := bad[0]
		fc := ch.fc
		raw, _ := fc.line(ch.def.line, false)
		h := r.newHit(fc.f.Path, ch.def.line, ch.def.line, raw, nil)
		h.Severity = "medium"
		if b.strength == 2 && ch.def.kind == "func" {
			switch ch.lang {
			case "go", "python", "typescript", "kotlin", "php":
				h.Severity = "high"
			}
		}
		where := []string{fmt.Sprintf("%s:%d (%s)", b.cf.fc.f.Path, b.c.line, b.c.describe())}
		for i, x := range bad[1:] {
			if i == 2 {
				where = append(where, fmt.Sprintf("+%d more", len(bad)-3))
				break
			}
			where = append(where, fmt.Sprintf("%s:%d", x.cf.fc.f.Path, x.c.line))
		}
		h.Anchor = fmt.Sprintf("%s%s is now %s%s; %s still call(s) it the old way", ch.def.name, ch.olds[0].describe(ch.lang), ch.def.name, ch.def.describe(ch.lang), strings.Join(where, ", "))
		h.Source = "changed_line"
		hits = append(hits, h)
	}
	return hits
}

func (c *sigCall) describe() string {
	s := fmt.Sprintf("%d argument(s)", c.pos)
	if len(c.kw) > 0 {
		s += " and " + strings.Join(c.kw, "=, ") + "="
	}
	if c.lhs > 0 {
		s += fmt.Sprintf(", %d result(s) assigned", c.lhs)
	}
	return s
}

// breaks: an old definition accepted the call and no new definition it
// may resolve to accepts it, every answer known.
func breaks(ch *sigChange, fam []*callFile, c *sigCall, strength int) bool {
	if c.argIsCall && len(ch.olds) == 1 {
		// Go f(g()): g's results fill the parameters; the old call
		// compiled, so g returns as many values as the old f took
		o := ch.olds[0]
		for _, p := range o.params {
			if p.kind == 'v' {
				return false
			}
		}
		cc := *c
		cc.pos, cc.argIsCall = len(o.params), false
		c = &cc
	}
	oldOK := false
	for i := range ch.olds {
		ok, known := ch.olds[i].accepts(ch.lang, c)
		if !known {
			return false
		}
		oldOK = oldOK || ok
	}
	if !oldOK {
		return false
	}
	alts := append([]sigDef(nil), ch.news...)
	if strength < 2 || ch.def.kind == "method" {
		// another definition of the name in a changed file may be the target
		for _, o := range fam {
			for _, d := range o.defs[c.name] {
				if o.fc == ch.fc && d.key() == ch.def.key() {
					continue // already in news
				}
				alts = append(alts, d)
			}
		}
	}
	for i := range alts {
		ok, known := alts[i].accepts(ch.lang, c)
		if ok || !known {
			return false
		}
	}
	return true
}

// resolveCall judges whether call c in cf names the changed definition:
// 2 certainly (same package, an import of it, self in its file), 1
// plausibly (a method on a receiver of unknown type), 0 not.
func resolveCall(ch *sigChange, cf *callFile, c *sigCall) int {
	d := &ch.def
	same := cf.fc == ch.fc
	defPath := ch.fc.f.Path
	if !same && len(cf.defs[c.name]) > 0 && (c.qual == "" || isSelfQual(c.qual)) {
		return 0 // the caller's own definition of the name
	}
	stem := strings.TrimSuffix(path.Base(defPath), path.Ext(defPath))
	switch ch.lang {
	case "go":
		dir := path.Dir(defPath)
		if d.kind == "func" {
			if c.qual == "" {
				if path.Dir(cf.fc.f.Path) == dir {
					return 2
				}
				return 0
			}
			imp, ok := cf.goImports[c.qual]
			switch {
			case !ok:
				return 0
			case imp == dir || strings.HasSuffix(imp, "/"+dir):
				return 2
			case path.Base(imp) == path.Base(dir):
				return 1
			}
			return 0
		}
		if c.qual == "" {
			return 0
		}
		if _, isPkg := cf.goImports[c.qual]; isPkg {
			return 0
		}
		return 1
	case "python":
		if d.kind == "func" {
			if c.qual == "" {
				if same {
					return 2
				}
				if mod, ok := cf.names[c.name]; ok {
					if lastDotted(mod) == stem {
						return 2
					}
					return 1
				}
				return 0
			}
			if mod, ok := cf.modules[c.qual]; ok {
				if lastDotted(mod) == stem {
					return 2
				}
				return 1
			}
			return 0
		}
		if c.qual == "" {
			return 0
		}
		if isSelfQual(c.qual) && same {
			return 2
		}
		if _, isMod := cf.modules[c.qual]; isMod {
			return 0
		}
		return 1
	case "typescript":
		if d.kind == "func" {
			if c.qual == "" {
				if same {
					return 2
				}
				if src, ok := cf.names[c.name]; ok {
					if strings.TrimSuffix(path.Base(src), path.Ext(src)) == stem || path.Base(src) == stem {
						return 2
					}
					return 1
				}
				return 0
			}
			if _, ok := cf.modules[c.qual]; ok {
				return 1
			}
			return 0
		}
		if c.qual == "" {
			return 0
		}
		if c.qual == "this" && same {
			return 2
		}
		return 1
	default: // java, kotlin, csharp, ruby, php: methods (and Kotlin/PHP functions)
		if c.qual == "" || isSelfQual(c.qual) {
			if same {
				return 2
			}
			if d.kind == "func" && ch.lang == "php" {
				return 2
			}
			return 1
		}
		return 1
	}
}

func isSelfQual(q string) bool {
	switch q {
	case "self", "this", "cls", "$this", "static", "parent", "super":
		return true
	}
	return false
}

func lastDotted(mod string) string {
	mod = strings.TrimLeft(mod, ".")
	if i := strings.LastIndexByte(mod, '.'); i >= 0 {
		return mod[i+1:]
	}
	return mod
}

// symbolSignatures lists the changed signatures of a file, for its
// symbols (fileSymbols): each definition (Symbol without uses) with
// Signature set.
func symbolSignatures(fc *fileCtx) []Symbol {
	var out []Symbol
	for _, c := range signatureChanges(fc) {
		out = append(out, Symbol{
			Name: c.def.name, Kind: c.def.kind, Path: fc.f.Path, Line: c.def.line,
			Signature: c.def.name + c.olds[0].describe(c.lang) + " → " + c.def.name + c.def.describe(c.lang),
		})
	}
	return out
}
