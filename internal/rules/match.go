package rules

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/diffpalhq/diffpal/internal/clip"
	"github.com/diffpalhq/diffpal/internal/secrets"
	"github.com/diffpalhq/diffpal/internal/syntax"
)

// fileCtx caches per-file derived data for the rules of one file: the
// masked text (comments and strings blanked) and, where a grammar exists,
// the syntax tree. Both are built lazily, on the first rule whose
// literals occur in the file, so a file no rule can match is neither
// masked nor parsed.
type fileCtx struct {
	f        *File
	raw      string         // raw text for file_requires/file_unless
	sparse   map[int]string // raw added lines when Content is nil
	defs     []def          // definitions on added lines, once computed
	defsDone bool

	maskDone    bool
	masked      []string       // masked Content (nil without Content)
	addedMasked map[int]string // new line number -> masked text
	removedMask []string       // masked removed lines, parallel to f.Removed
	lexMasked   []string       // lexical mask of Content, for change-level context

	treeDone bool
	tree     *syntax.Tree // nil without a grammar, Content or cgo parse

	sigsDone bool
	sigs     []sigChange // signature changes (explorer_check.go), once computed

	vendoredGen atomic.Int32 // vendored(): 0 not yet asked, 1 no, 2 yes
}

func newFileCtx(f *File) *fileCtx {
	if f.ctx != nil {
		return f.ctx
	}
	fc := &fileCtx{f: f}
	f.ctx = fc
	if f.Content != nil {
		fc.raw = f.Text
		if fc.raw == "" {
			fc.raw = strings.Join(f.Content, "\n")
		}
	} else {
		fc.sparse = map[int]string{}
		parts := make([]string, 0, len(f.Added))
		for _, l := range f.Added {
			fc.sparse[l.No] = l.Text
			parts = append(parts, l.Text)
		}
		fc.raw = strings.Join(parts, "\n")
	}
	return fc
}

// window is the text of the new file's lines around its added lines
// (before lines above each run of added lines, after below), each line
// ending in a newline: the text a syntax rule's literal prefilter reads. A
// literal far from every change cannot be in a node that contains one,
// and checking the whole file parsed almost every file of a large change
// for a word on an unchanged line. Without Content it is the added lines.
//
// When the lines form one range the window is a slice of the file's Text,
// not a copy. At the end of the file Text has no final newline; when
// noFinalNewline allows (no literal looked for holds a newline, so none
// can end on that one) the slice goes without it.
func (fc *fileCtx) window(before, after int, noFinalNewline bool) string {
	if fc.f.Content == nil {
		return fc.raw
	}
	var ranges [][2]int
	next := 1 // first line not yet taken
	for _, run := range addedRuns(fc.f.Added) {
		lo, hi := max(run[0]-before, next), min(run[1]+after, len(fc.f.Content))
		if lo > hi {
			continue
		}
		if n := len(ranges); n > 0 && ranges[n-1][1]+1 == lo {
			ranges[n-1][1] = hi
		} else {
			ranges = append(ranges, [2]int{lo, hi})
		}
		next = max(next, hi+1)
	}
	content, text := fc.f.Content, fc.f.Text
	if len(ranges) == 1 {
		var c TextCursor
		if start, end, ok := c.Span(fc.f, ranges[0][0], ranges[0][1]); ok {
			switch {
			case end < len(text):
				return text[start : end+1] // the newline after the last line is Text's
			case noFinalNewline:
				return text[start:end]
			}
		}
	}
	n := 0
	for _, r := range ranges {
		for i := r[0]; i <= r[1]; i++ {
			n += len(content[i-1]) + 1
		}
	}
	var b strings.Builder
	b.Grow(n)
	for _, r := range ranges {
		for i := r[0]; i <= r[1]; i++ {
			b.WriteString(content[i-1])
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// maskContent is the lexical mask of Content, from the file's Text when
// it has one.
func (fc *fileCtx) maskContent() []string {
	if fc.f.Text != "" {
		return maskJoined(fc.f.Language, fc.f.Content, fc.f.Text)
	}
	return MaskLines(fc.f.Language, fc.f.Content)
}

// syntaxTree parses the new file once, when it has a grammar.
func (fc *fileCtx) syntaxTree() *syntax.Tree {
	if fc.treeDone {
		return fc.tree
	}
	fc.treeDone = true
	g := syntax.Grammar(fc.f.Language, fc.f.Path)
	if g == "" || fc.f.Content == nil {
		return nil
	}
	t, err := syntax.Parse(context.Background(), g, []byte(fc.raw))
	if err != nil {
		return nil // timeout or no grammar: the lexical masker stands in
	}
	fc.tree = t
	return t
}

// release frees the syntax tree once the file's rules have run (it is
// parsed again if a change-level rule asks); masks and definitions stay,
// for the explorer.
func (fc *fileCtx) release() {
	if fc.tree != nil {
		fc.tree.Close()
		fc.tree = nil
		fc.treeDone = false // parsed again if a change-level rule asks
	}
}

// ensureMask masks the file: from the syntax tree where a grammar
// exists, else with the hand-written lexical masker.
func (fc *fileCtx) ensureMask() {
	if fc.maskDone {
		return
	}
	fc.maskDone = true
	f := fc.f
	fc.addedMasked = map[int]string{}
	if f.Content != nil {
		// The tree, when a syntax rule had the file parsed (MatchFile
		// decides that first); parsing only to mask would cost a parse
		// of every changed file that any line rule's literal occurs in.
		if t := fc.tree; t != nil {
			if m := t.MaskLines(); len(m) == len(f.Content) {
				fc.masked = m
			}
		}
		if fc.masked == nil {
			fc.masked = fc.maskContent()
		}
	}
	// Added lines: take the masked Content line when it is the same line;
	// otherwise mask runs of consecutive added lines together.
	var run []Line
	flush := func() {
		if len(run) == 0 {
			return
		}
		texts := make([]string, len(run))
		for i, l := range run {
			texts[i] = l.Text
		}
		m := MaskLines(f.Language, texts)
		for i, l := range run {
			fc.addedMasked[l.No] = m[i]
		}
		run = run[:0]
	}
	for _, l := range f.Added {
		if fc.masked != nil && l.No >= 1 && l.No <= len(f.Content) && f.Content[l.No-1] == l.Text {
			flush()
			fc.addedMasked[l.No] = fc.masked[l.No-1]
			continue
		}
		if len(run) > 0 && run[len(run)-1].No+1 != l.No {
			flush()
		}
		run = append(run, l)
	}
	flush()
	if len(f.Removed) > 0 {
		texts := make([]string, len(f.Removed))
		for i, l := range f.Removed {
			texts[i] = l.Text
		}
		fc.removedMask = MaskLines(f.Language, texts)
	}
}

// lexContent is the masked new file for the change-level context (the
// explorer's definitions and uses): the tree's mask when a rule already
// parsed the file, else the lexical masker's — change-level context runs
// on one core after the parallel per-file pass and must not parse every
// changed file again.
func (fc *fileCtx) lexContent() []string {
	if fc.maskDone {
		return fc.masked
	}
	if fc.lexMasked == nil && fc.f.Content != nil {
		fc.lexMasked = fc.maskContent()
	}
	return fc.lexMasked
}

// lexAdded is lexContent's text of added line no.
func (fc *fileCtx) lexAdded(no int) string {
	if fc.maskDone {
		return fc.addedMasked[no]
	}
	if c := fc.lexContent(); c != nil && no >= 1 && no <= len(c) {
		return c[no-1]
	}
	fc.ensureMask() // no Content: added runs are masked lexically anyway
	return fc.addedMasked[no]
}

// maskedContent is the masked new file (nil without Content).
func (fc *fileCtx) maskedContent() []string { fc.ensureMask(); return fc.masked }

// maskedAdded is the masked text of added line no.
func (fc *fileCtx) maskedAdded(no int) string { fc.ensureMask(); return fc.addedMasked[no] }

// maskedRemoved is the masked text of the i-th removed line.
func (fc *fileCtx) maskedRemoved(i int) string { fc.ensureMask(); return fc.removedMask[i] }

// line returns the raw and masked text of new-side line n ("" when unknown).
func (fc *fileCtx) line(n int, maskedWanted bool) (string, bool) {
	if fc.f.Content != nil {
		if n < 1 || n > len(fc.f.Content) {
			return "", false
		}
		if maskedWanted {
			return fc.maskedContent()[n-1], true
		}
		return fc.f.Content[n-1], true
	}
	if maskedWanted {
		fc.ensureMask()
		s, ok := fc.addedMasked[n]
		return s, ok
	}
	s, ok := fc.sparse[n]
	return s, ok
}

func (fc *fileCtx) lineCount() int {
	if fc.f.Content != nil {
		return len(fc.f.Content)
	}
	max := 0
	for _, l := range fc.f.Added {
		if l.No > max {
			max = l.No
		}
	}
	return max
}

func wantProfile(profiles []string, p string) bool {
	if profiles == nil {
		return true
	}
	return contains(profiles, p)
}

// syntaxRules returns the syntax rules (query, flow) worth parsing the
// file for: eligible, applying to its path, with a query or sink for its
// grammar g, and with their literals in the text around the change (and
// the whole file holding their grammar's own literals and their value
// literals). nil when none.
func (s *Set) syntaxRules(fc *fileCtx, g string, eligible []uint64, facts *fileFacts) map[*Rule]bool {
	var synOK map[*Rule]bool
	win := fc.window(syntaxWindowBefore, syntaxWindowAfter, !s.synNewline)
	winBits := make([]uint64, s.syn.words)
	s.syn.scan(win, winBits)
	var rawBits []uint64 // the scan of the whole file, on first use
	whole := func() []uint64 {
		if rawBits == nil {
			if win == fc.raw {
				rawBits = winBits // the window is the whole text
			} else {
				rawBits = make([]uint64, s.syn.words)
				if lo, ok := sliceOffset(fc.raw, win); ok {
					s.syn.scanOutside(fc.raw, lo, lo+len(win), winBits, rawBits)
				} else {
					s.syn.scan(fc.raw, rawBits)
				}
			}
		}
		return rawBits
	}
	for ri, r := range s.rules {
		c := r.c
		if c.query == nil && c.flow == nil {
			continue
		}
		if eligible[ri/64]&(1<<(ri%64)) == 0 || !r.appliesToPath(facts, s.globs) {
			continue
		}
		if c.query != nil {
			if _, ok := c.query.byGrammar[g]; !ok {
				continue
			}
		} else if _, ok := c.flow.sinks[g]; !ok {
			continue
		}
		ok := hasLiteral(winBits, c.synIDs, c.synLits, win, false)
		// The grammar's own literals, in the whole file: a predicate's
		// capture may stand outside the window.
		if gl := c.gramLits[g]; ok && gl != nil {
			ok = hasLiteral(whole(), c.gramIDs[g], gl, fc.raw, false)
		}
		if ok && c.valLits != nil {
			ok = hasLiteral(whole(), c.valIDs, c.valLits, fc.raw, c.valFold)
		}
		if ok {
			if synOK == nil {
				synOK = map[*Rule]bool{}
			}
			synOK[r] = true
		}
	}
	return synOK
}

// sliceOffset is where sub starts in s when sub is a slice of s (shares
// its bytes), as fileCtx.window's one-range windows are.
func sliceOffset(s, sub string) (int, bool) {
	if len(sub) == 0 || len(s) == 0 {
		return 0, false
	}
	off := int(uintptr(unsafe.Pointer(unsafe.StringData(sub))) - uintptr(unsafe.Pointer(unsafe.StringData(s))))
	return off, off >= 0 && off+len(sub) <= len(s)
}

// MatchFile runs the per-file rules of the given profiles (nil = all) on f.
func (s *Set) MatchFile(f *File, profiles []string) []Hit {
	if f == nil {
		return nil
	}
	var fc *fileCtx
	var hits []Hit
	var lineIdx []int // added-scope rules (indexes into s.rules), run line by line below
	facts := newFileFacts(s, f)
	eligible := s.eligibleRules(f.Language, profiles)
	var fileBits []uint64 // s.file's scan of fc.raw, on first use
	// fileOK reports whether rule ri's whole-file conditions
	// (file_requires, file_unless) hold for f, each rule's answer worked
	// out once. fc is set before it is called.
	var fileState []int8 // by rule: 0 not yet known, 1 holds, 2 does not
	fileOK := func(ri int) bool {
		r := s.rules[ri]
		if r.c.fileRequires == nil && r.c.fileUnless == nil {
			return true
		}
		if fileState == nil {
			fileState = make([]int8, len(s.rules))
		}
		if fileState[ri] == 0 {
			ok := true
			if r.c.fileRequires != nil && (!s.fileLiteral(&fileBits, fc.raw, r.c.fileReqIDs, r.c.fileReqLits, r.c.fileReqFold) || !r.c.fileRequires.MatchString(fc.raw)) {
				ok = false
			}
			if ok && r.c.fileUnless != nil && s.fileLiteral(&fileBits, fc.raw, r.c.fileUnlessIDs, r.c.fileUnlessLits, r.c.fileUnlessFold) && r.c.fileUnless.MatchString(fc.raw) {
				ok = false
			}
			fileState[ri] = 2
			if ok {
				fileState[ri] = 1
			}
		}
		return fileState[ri] == 1
	}
	// Parse first when a syntax rule's literals occur near the change, so
	// that every rule of the file — line rules too — reads comments and
	// strings from the same tree; otherwise the file is not parsed and
	// line rules read the lexical mask. One scan of the text around the
	// change finds every syntax rule's literals.
	var synOK map[*Rule]bool
	if g := syntax.Grammar(f.Language, f.Path); g != "" && len(f.Added) > 0 {
		fc = newFileCtx(f)
		synOK = s.syntaxRules(fc, g, eligible, facts)
		if synOK != nil && f.Content != nil {
			// The queries this file will run compile side by side while
			// it is parsed (each only once per process).
			for r := range synOK {
				r.c.compileAhead(g)
			}
			fc.syntaxTree()
		}
	}
	for ri, r := range s.rules {
		if r.Scope == "change" || eligible[ri/64]&(1<<(ri%64)) == 0 || !r.appliesToPath(facts, s.globs) {
			continue
		}
		if r.Scope == "added" && len(f.Added) == 0 && (r.Block == nil || len(f.Removed) == 0) {
			continue
		}
		if r.Scope == "removed" && (len(f.Removed) == 0 || f.Status == "deleted") {
			continue
		}
		if fc == nil {
			fc = newFileCtx(f)
		}
		// Whole-file patterns are only run when their literals occur,
		// and for a rule run line by line, only once one of its lines is
		// a candidate (fileOK in the line loop below): most rules have
		// none in most files, and the whole file need not be scanned for
		// them. A syntax rule whose literals are not near the change is
		// not run either way, so it is not asked before.
		syn := r.c.query != nil || r.c.flow != nil
		lineRule := r.Scope == "added" && r.Block == nil && !syn
		if syn && !synOK[r] || !lineRule && !fileOK(ri) {
			continue
		}
		switch {
		case r.c.query != nil:
			// A query rule runs only on a grammar it has a query for, and
			// the file is parsed only when the query's literals occur.
			if !synOK[r] {
				continue
			}
			if t := fc.syntaxTree(); t != nil {
				hits = append(hits, r.matchQuery(fc, t)...)
			}
			continue
		case r.c.flow != nil:
			// A flow rule, like a query rule, parses only a file with a
			// sink query for its grammar and the sink's literals.
			if !synOK[r] {
				continue
			}
			if t := fc.syntaxTree(); t != nil {
				hits = append(hits, r.matchFlow(fc, t)...)
			}
			continue
		}
		switch r.Scope {
		case "added":
			lineIdx = append(lineIdx, ri)
			if r.Block != nil {
				hits = append(hits, r.matchEmptiedBlocks(fc)...)
			}
		case "file":
			if f.Content == nil {
				continue
			}
			for i, raw := range f.Content {
				if h, ok := r.matchNewLine(fc, i+1, raw, fc.maskedContent()[i]); ok {
					hits = append(hits, h)
				}
			}
		case "removed":
			hits = append(hits, r.matchRemoved(fc)...)
		}
	}
	if len(lineIdx) > 0 {
		// One literal scan of each line decides which rules' regexps can
		// possibly match it. Masking only blanks text, so a literal absent
		// from the raw line is absent from the masked one: a line (and a
		// file) no rule can match is never masked or parsed.
		//
		// The rules a line's literals name come from the set's literal ->
		// rules index, gathered as bits over s.rules (so they are taken in
		// lineIdx's order), plus the rules without literals: a line is not
		// tested against every rule of the file.
		rawA, rawB := make([]uint64, s.lits.words), make([]uint64, s.lits.words)
		maskBits := make([]uint64, s.lits.words)
		fileRules := make([]uint64, s.ruleWords) // lineIdx
		always := make([]uint64, s.ruleWords)    // lineIdx without literals
		for _, ri := range lineIdx {
			fileRules[ri/64] |= 1 << (ri % 64)
			if s.rules[ri].c.prefilter == nil {
				always[ri/64] |= 1 << (ri % 64)
			}
		}
		cand := make([]uint64, s.ruleWords)
		for i, l := range f.Added {
			// Lines are scanned two by two, walked at once (scanPair).
			rawBits := rawB
			if i%2 == 0 {
				rawBits = rawA
				if i+1 < len(f.Added) {
					s.lits.scanPair(l.Text, f.Added[i+1].Text, rawA, rawB)
				} else {
					s.lits.scan(l.Text, rawA)
				}
			}
			copy(cand, always)
			for w, b := range rawBits {
				for b != 0 {
					k := b & -b
					b &^= k
					for _, ri := range s.litRules[w*64+bits.TrailingZeros64(k)] {
						cand[ri/64] |= fileRules[ri/64] & (1 << (ri % 64))
					}
				}
			}
			masked, maskedOK := "", false
			for w, cb := range cand {
				for cb != 0 {
					k := cb & -cb
					cb &^= k
					ri := w*64 + bits.TrailingZeros64(k)
					r := s.rules[ri]
					if !r.c.present(rawBits, l.Text) || !fileOK(ri) {
						continue
					}
					if r.MatchIn != "raw" {
						if !maskedOK {
							masked, maskedOK = fc.maskedAdded(l.No), true
							if masked == l.Text {
								copy(maskBits, rawBits) // nothing blanked: the same literals
							} else {
								s.lits.scan(masked, maskBits)
							}
						}
						if !r.c.present(maskBits, masked) {
							continue
						}
					}
					if h, ok := r.matchNewLine(fc, l.No, l.Text, masked); ok {
						hits = append(hits, h)
					}
				}
			}
		}
	}
	if fc != nil {
		fc.release()
	}
	return finishHits(s, hits)
}

// MatchChange runs the change-level rules (computed over all files).
func (s *Set) MatchChange(files []*File, profiles []string) []Hit {
	var hits []Hit
	for _, r := range s.rules {
		if r.Scope != "change" || s.off[r] || !wantProfile(profiles, r.Profile) {
			continue
		}
		hits = append(hits, r.c.changeCheck(r, files)...)
	}
	return finishHits(s, hits)
}

func finishHits(s *Set, hits []Hit) []Hit {
	if len(hits) == 0 {
		return nil
	}
	// suppressed_by: drop a hit when a suppressing rule hit the same line.
	type key struct {
		id, path string
		line     int
	}
	seen := map[key]bool{}
	for _, h := range hits {
		seen[key{h.RuleID, h.Path, h.StartLine}] = true
	}
	out := hits[:0]
	dedupe := map[key]bool{}
	for _, h := range hits {
		r := s.byID[h.RuleID]
		drop := false
		if r != nil {
			for _, sup := range r.SuppressedBy {
				if seen[key{sup, h.Path, h.StartLine}] {
					drop = true
					break
				}
			}
		}
		k := key{h.RuleID, h.Path, h.StartLine}
		if drop || dedupe[k] {
			continue
		}
		dedupe[k] = true
		out = append(out, h)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		if a.StartLine != b.StartLine {
			return a.StartLine < b.StartLine
		}
		return a.RuleID < b.RuleID
	})
	return out
}

// matchLine applies pattern and line filters; it returns the match indices
// (into the matched text, columns are shared between raw and masked).
func (r *Rule) matchLine(raw, masked string) ([]int, bool) {
	c := r.c
	text := masked
	if r.MatchIn == "raw" {
		text = raw
	}
	var m []int
	if c.pattern != nil {
		if !c.mayMatch(text) {
			return nil, false
		}
		m = c.pattern.FindStringSubmatchIndex(text)
		if m == nil {
			return nil, false
		}
	} else {
		m = []int{0, len(text)}
	}
	if c.notPattern != nil && c.notPattern.MatchString(text) {
		return nil, false
	}
	for _, re := range c.unless {
		if re.MatchString(raw) {
			return nil, false
		}
	}
	for _, re := range c.require {
		if !re.MatchString(raw) {
			return nil, false
		}
	}
	for _, re := range c.requireCode {
		if !re.MatchString(masked) {
			return nil, false
		}
	}
	if c.secretUnless != nil {
		gi := c.secretGroup
		if m[2*gi] >= 0 && c.secretUnless.MatchString(text[m[2*gi]:m[2*gi+1]]) {
			return nil, false
		}
	}
	if e := r.Entropy; e != nil {
		gi := c.pattern.SubexpIndex(e.Group)
		if m[2*gi] < 0 {
			return nil, false
		}
		v := text[m[2*gi]:m[2*gi+1]]
		if len(v) < e.MinLen || ShannonEntropy(v) < e.Min {
			return nil, false
		}
	}
	return m, true
}

func (r *Rule) matchNewLine(fc *fileCtx, no int, raw, masked string) (Hit, bool) {
	if masked == "" && raw != "" {
		if m, ok := fc.line(no, true); ok {
			masked = m
		} else {
			masked = raw
		}
	}
	m, ok := r.matchLine(raw, masked)
	if !ok {
		return Hit{}, false
	}
	start, end := no, no
	if x := r.Context; x != nil && !r.contextOK(fc, no) {
		return Hit{}, false
	}
	if e := r.Enclosing; e != nil && !enclosedBy(fc, no, e) {
		return Hit{}, false
	}
	if b := r.Block; b != nil {
		endLine, ok := blockMatches(fc, no, m[0], b)
		if !ok {
			return Hit{}, false
		}
		end = endLine
	}
	if r.c.check != nil && !r.c.check(r, fc, no) {
		return Hit{}, false
	}
	return r.newHit(fc.f.Path, start, end, raw, m), true
}

func (r *Rule) contextOK(fc *fileCtx, no int) bool {
	x := r.Context
	raw := x.MatchIn == "raw"
	lo, hi := no-x.Before, no+x.After
	if lo < 1 {
		lo = 1
	}
	if n := fc.lineCount(); hi > n {
		hi = n
	}
	found := false
	for i := lo; i <= hi; i++ {
		if x.ExcludeSelf && i == no {
			continue
		}
		t, ok := fc.line(i, !raw)
		if !ok {
			continue
		}
		if x.forbid != nil && x.forbid.MatchString(t) {
			return false
		}
		if x.require != nil && !found && x.require.MatchString(t) {
			found = true
		}
	}
	return x.require == nil || found
}

func (r *Rule) newHit(path string, start, end int, raw string, m []int) Hit {
	snippet := strings.TrimSpace(raw)
	anchor := ""
	if len(m) >= 2 && m[0] >= 0 && m[1] <= len(raw) && m[0] <= m[1] {
		anchor = raw[m[0]:m[1]]
	}
	if r.Redact {
		lo, hi := -1, -1
		if gi := r.c.secretGroup; gi > 0 && len(m) > 2*gi+1 && m[2*gi] >= 0 {
			lo, hi = m[2*gi], m[2*gi+1]
		} else if len(m) >= 2 {
			lo, hi = m[0], m[1]
		}
		if lo >= 0 && hi <= len(raw) && lo < hi {
			secret := raw[lo:hi]
			red := redactValue(secret)
			snippet = strings.TrimSpace(raw[:lo] + red + raw[hi:])
			anchor = strings.Replace(anchor, secret, red, 1)
		}
	}
	snippet = Redact(snippet)
	anchor = Redact(strings.TrimSpace(anchor))
	if anchor == "" {
		anchor = r.Title
	}
	anchor = clip.Text(anchor, 120)
	snippet = clip.Text(snippet, 400)
	src := "changed_line"
	if r.Scope == "file" || r.Scope == "change" {
		src = "nearby_context"
	}
	sev, msg := r.Severity, r.Message
	if r.Tests == "advisory" && IsTestPath(path) && sev != "low" {
		sev, msg = "low", strings.TrimSpace(msg+" This is test code, so it is reported as advisory (low).")
	}
	return Hit{
		RuleID: r.ID, Profile: r.Profile, Category: r.Category, Severity: sev,
		Confidence: r.Confidence, Title: r.Title, Message: msg, Impact: r.Impact,
		ImpactScope: r.ImpactScope, Suggestion: r.Suggestion, Path: path,
		StartLine: start, EndLine: end, Source: src, Snippet: snippet, Anchor: anchor,
	}
}

func (r *Rule) matchRemoved(fc *fileCtx) []Hit {
	f := fc.f
	if r.c.unlessAdded != nil {
		for _, l := range f.Added {
			if r.c.unlessAdded.MatchString(fc.maskedAdded(l.No)) {
				return nil
			}
		}
	}
	var hits []Hit
	for i, l := range f.Removed {
		m, ok := r.matchLine(l.Text, fc.maskedRemoved(i))
		if !ok || r.removedWithEnclosing(f, i) {
			continue
		}
		n := newSidePosition(f, l.No)
		h := r.newHit(f.Path, n, n, l.Text, m)
		h.OldLine = l.No
		hits = append(hits, h)
	}
	return hits
}

// removedWithEnclosing reports whether removed line i belongs to a run of
// consecutive removed lines that, at or above it, holds a line matching
// unless_removed_with (the enclosing definition was deleted with it).
func (r *Rule) removedWithEnclosing(f *File, i int) bool {
	re := r.c.unlessRemWith
	if re == nil {
		return false
	}
	for j := i; j >= 0; j-- {
		if j < i && f.Removed[j].No != f.Removed[j+1].No-1 {
			return false
		}
		if re.MatchString(f.Removed[j].Text) {
			return true
		}
	}
	return false
}

// matchEmptiedBlocks finds blocks whose opener is unchanged but whose body
// lost lines in this change (e.g. the handling inside a catch was deleted),
// so the block rule now applies.
func (r *Rule) matchEmptiedBlocks(fc *fileCtx) []Hit {
	f := fc.f
	if f.Content == nil || len(f.Removed) == 0 {
		return nil
	}
	// f.Added is in line order: a binary search answers "is o added"
	// without a map of every added line per rule.
	isAdded := func(o int) bool {
		_, ok := slices.BinarySearchFunc(f.Added, o, func(l Line, o int) int { return l.No - o })
		return ok
	}
	seen := map[int]bool{}
	var hits []Hit
	for _, l := range f.Removed {
		pos := removalPoint(f, l.No)
		for o := pos - 1; o >= 1 && o >= pos-8; o-- {
			if isAdded(o) || seen[o] {
				continue
			}
			raw := f.Content[o-1]
			if !r.c.mayMatch(raw) {
				continue // the literal is not on the raw line: no mask needed
			}
			h, ok := r.matchNewLine(fc, o, raw, fc.maskedContent()[o-1])
			if !ok || h.EndLine < pos {
				continue
			}
			seen[o] = true
			hits = append(hits, h)
			break
		}
	}
	return hits
}

// removalPoint is the new-side line before which old line `old` was removed.
func removalPoint(f *File, old int) int {
	rb := 0
	for _, l := range f.Removed {
		if l.No < old {
			rb++
		}
	}
	ab := 0
	n := old - rb
	for iter := 0; iter <= len(f.Added); iter++ {
		c := 0
		for _, l := range f.Added {
			if l.No < n {
				c++
			}
		}
		if c == ab {
			break
		}
		ab = c
		n = old - rb + ab
	}
	return n
}

// newSidePosition maps a removed old-side line to the new-side line where the
// removal happened, preferring a nearby added line (so the hit anchors on a
// changed line).
func newSidePosition(f *File, old int) int {
	n := removalPoint(f, old)
	best, bestD := 0, 1<<30
	for _, l := range f.Added {
		d := l.No - n
		if d < 0 {
			d = -d + 1 // prefer the line at or after the removal point
		}
		if d < bestD {
			best, bestD = l.No, d
		}
	}
	if best > 0 && bestD <= 4 {
		return best
	}
	if f.Content != nil && n > len(f.Content) {
		n = len(f.Content)
	}
	if n < 1 {
		n = 1
	}
	return n
}

// blockMatches finds the block opened at (or just after) the match on line
// no and checks its body. It returns the block's last line.
func blockMatches(fc *fileCtx, no, col int, b *Block) (int, bool) {
	switch b.Kind {
	case "braces":
		return braceBlock(fc, no, col, b)
	case "indent":
		return indentBlock(fc, no, b)
	case "ruby":
		return rubyBlock(fc, no, b)
	}
	return 0, false
}

func braceBlock(fc *fileCtx, no, col int, b *Block) (int, bool) {
	n := fc.lineCount()
	// find the opening brace at/after col on this line or within 2 lines
	li, ci := no, col
	found := false
	for li <= n && li <= no+2 && !found {
		m, ok := fc.line(li, true)
		if !ok {
			return 0, false
		}
		if ci < 0 || ci > len(m) {
			ci = 0
		}
		if j := strings.IndexByte(m[ci:], '{'); j >= 0 {
			ci += j
			found = true
			break
		}
		if li > no && strings.ContainsAny(m, ";}") {
			return 0, false
		}
		li++
		ci = 0
	}
	if !found {
		return 0, false
	}
	openLine, openCol := li, ci
	depth := 0
	var body strings.Builder
	for l := openLine; l <= n && l <= openLine+200; l++ {
		m, ok := fc.line(l, true)
		if !ok {
			return 0, false
		}
		raw, _ := fc.line(l, false)
		start := 0
		if l == openLine {
			start = openCol
		}
		for k := start; k < len(m); k++ {
			switch m[k] {
			case '{':
				depth++
				if depth == 1 {
					continue
				}
			case '}':
				depth--
				if depth == 0 {
					bodyText := strings.TrimSpace(body.String())
					return l, b.body.MatchString(bodyText)
				}
			}
			if depth >= 1 && k < len(raw) {
				body.WriteByte(raw[k])
			}
		}
		if depth >= 1 {
			body.WriteByte('\n')
		}
	}
	return 0, false
}

func indentOf(s string) int {
	n := 0
	for _, c := range s {
		switch c {
		case ' ':
			n++
		case '\t':
			n += 4
		default:
			return n
		}
	}
	return -1 // blank
}

func indentBlock(fc *fileCtx, no int, b *Block) (int, bool) {
	m, ok := fc.line(no, true)
	if !ok {
		return 0, false
	}
	raw, _ := fc.line(no, false)
	colon := strings.LastIndexByte(strings.TrimRight(m, " \t"), ':')
	if colon < 0 {
		return 0, false
	}
	var parts []string
	if rest := strings.TrimSpace(raw[min(colon+1, len(raw)):]); rest != "" {
		parts = append(parts, rest)
	}
	base := indentOf(raw)
	last := no
	if strings.TrimSpace(m[colon+1:]) == "" {
		for l := no + 1; l <= fc.lineCount() && l <= no+200; l++ {
			t, ok := fc.line(l, false)
			if !ok {
				break
			}
			ind := indentOf(t)
			if ind < 0 {
				continue
			}
			if ind <= base {
				break
			}
			parts = append(parts, strings.TrimSpace(t))
			last = l
		}
	}
	body := strings.TrimSpace(strings.Join(parts, "\n"))
	return last, b.body.MatchString(body)
}

func rubyBlock(fc *fileCtx, no int, b *Block) (int, bool) {
	raw, ok := fc.line(no, false)
	if !ok {
		return 0, false
	}
	base := indentOf(raw)
	var parts []string
	last := no
	for l := no + 1; l <= fc.lineCount() && l <= no+200; l++ {
		t, ok := fc.line(l, false)
		if !ok {
			break
		}
		ind := indentOf(t)
		if ind < 0 {
			continue
		}
		if ind <= base {
			last = l
			break
		}
		parts = append(parts, strings.TrimSpace(t))
		last = l
	}
	body := strings.TrimSpace(strings.Join(parts, "\n"))
	return last, b.body.MatchString(body)
}

// enclosedBy walks outward through the brace blocks that contain line no.
func enclosedBy(fc *fileCtx, no int, e *Enclosing) bool {
	depth := 0
	for l := no - 1; l >= 1 && l >= no-400; l-- {
		m, ok := fc.line(l, true)
		if !ok {
			return false
		}
		for k := len(m) - 1; k >= 0; k-- {
			switch m[k] {
			case '}':
				depth++
			case '{':
				if depth > 0 {
					depth--
					continue
				}
				opener := strings.TrimSpace(m[:k])
				if e.match.MatchString(opener) {
					return true
				}
				if e.stop != nil && e.stop.MatchString(opener) {
					return false
				}
			}
		}
	}
	return false
}

// ShannonEntropy returns the Shannon entropy of s in bits per character.
func ShannonEntropy(s string) float64 {
	if s == "" {
		return 0
	}
	counts := map[rune]int{}
	n := 0
	for _, c := range s {
		counts[c]++
		n++
	}
	h := 0.0
	for _, k := range counts {
		p := float64(k) / float64(n)
		h -= p * math.Log2(p)
	}
	return h
}

// redactValue masks a matched secret, keeping only a public format
// prefix (AKIA, ghp_) when it has one.
func redactValue(v string) string { return secrets.PublicPrefix(v) + "****" }

// redactor is the one secret detector (internal/secrets), masking with
// "****" after a format's public prefix so built-in findings stay
// readable (key = "AKIA****").
var redactor = &secrets.Redactor{Mask: "****"}

// Redact masks every secret in s (internal/secrets), keeping at most a
// format's public prefix.
func Redact(s string) string { return redactor.Redact(s) }

// String renders a hit in a compact, human-readable form.
func (h Hit) String() string {
	return fmt.Sprintf("%s:%d-%d %s [%s/%s %.2f] %s", h.Path, h.StartLine, h.EndLine, h.RuleID, h.Category, h.Severity, h.Confidence, h.Anchor)
}
