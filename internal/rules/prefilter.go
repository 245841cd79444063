package rules

import (
	"maps"
	rsyntax "regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// requiredLiterals derives from a pattern a set of literals at least one
// of which every match must contain. The set is nil when the pattern has
// no such literals of two or more bytes (then every line goes to the
// regexp). fold reports case-insensitive literals, returned lower-cased.
func requiredLiterals(pattern string) (lits []string, fold bool) {
	return requiredLiteralsMin(pattern, 2)
}

// requiredLiteralsMin is requiredLiterals accepting literals of minLen
// bytes or more: a one-byte literal is no use to scan lines for, but it
// still rules out a whole file (a markup value needs a "<").
func requiredLiteralsMin(pattern string, minLen int) (lits []string, fold bool) {
	d := derive(derivedRequired+strconv.Itoa(minLen)+"\x00"+pattern, func() derivedLits {
		lits, fold := deriveRequiredLiterals(pattern, minLen)
		return derivedLits{lits, fold}
	})
	return d.Lits, d.Fold
}

// deriveRequiredLiterals computes requiredLiteralsMin (derivedSnapshot holds
// the built-in rules' answers).
func deriveRequiredLiterals(pattern string, minLen int) (lits []string, fold bool) {
	re, err := rsyntax.Parse(pattern, rsyntax.Perl)
	if err != nil {
		return nil, false
	}
	set, ok := necessary(re.Simplify())
	if !ok || len(set) == 0 {
		return nil, false
	}
	for _, l := range set {
		if len(l.s) < minLen {
			return nil, false
		}
		fold = fold || l.fold
	}
	out := make([]string, len(set))
	for i, l := range set {
		out[i] = l.s
		if fold {
			out[i] = strings.ToLower(l.s)
		}
	}
	return out, fold
}

// literalSets is, for each part of a pattern's top-level sequence that
// has them, the literals one of which that part's match contains (one
// byte or more, case-sensitive parts only): every match contains one of
// each set, so a line that lacks any set cannot match. requiredLiterals
// keeps only the most selective set; a per-line check can afford all of
// them (an arrow function needs both "const" and "=>").
func literalSets(pattern string) [][]string {
	re, err := rsyntax.Parse(pattern, rsyntax.Perl)
	if err != nil {
		return nil
	}
	re = re.Simplify()
	for re.Op == rsyntax.OpCapture {
		re = re.Sub[0]
	}
	subs := []*rsyntax.Regexp{re}
	if re.Op == rsyntax.OpConcat {
		subs = re.Sub
	}
	var out [][]string
next:
	for _, sub := range subs {
		set, ok := necessary(sub)
		if !ok || len(set) == 0 {
			continue
		}
		strs := make([]string, len(set))
		for i, l := range set {
			if l.fold || l.s == "" {
				continue next
			}
			strs[i] = l.s
		}
		out = append(out, strs)
	}
	return out
}

// hasEverySet reports whether text holds a literal of every set.
func hasEverySet(text string, sets [][]string) bool {
	for _, set := range sets {
		if !anyLiteral(text, set, false) {
			return false
		}
	}
	return true
}

type lit struct {
	s    string
	fold bool
}

// necessary returns alternatives of which one must appear in any match.
func necessary(re *rsyntax.Regexp) ([]lit, bool) {
	switch re.Op {
	case rsyntax.OpLiteral:
		return []lit{{string(re.Rune), re.Flags&rsyntax.FoldCase != 0}}, true
	case rsyntax.OpCapture, rsyntax.OpPlus:
		return necessary(re.Sub[0])
	case rsyntax.OpRepeat:
		if re.Min >= 1 {
			return necessary(re.Sub[0])
		}
	case rsyntax.OpConcat:
		// Runs of literals and small character classes expand into exact
		// strings ("gh" [ops] "_" -> ghp_, gho_, ghs_); otherwise keep the
		// most selective child (whose shortest alternative is longest).
		var best []lit
		bestLen := 0
		consider := func(set []lit) {
			if n := shortest(set); n > bestLen {
				best, bestLen = set, n
			}
		}
		run := []lit{{}}
		flush := func() {
			if len(run) > 0 && run[0].s != "" {
				consider(run)
			}
			run = []lit{{}}
		}
		for _, sub := range re.Sub {
			switch {
			case sub.Op == rsyntax.OpLiteral:
				fold := sub.Flags&rsyntax.FoldCase != 0
				for i := range run {
					run[i].s += string(sub.Rune)
					run[i].fold = run[i].fold || fold
				}
				continue
			case sub.Op == rsyntax.OpCharClass && len(run[0].s) > 0:
				if chars := classRunes(sub); chars != nil && len(chars)*len(run) <= 64 {
					var next []lit
					for _, r := range run {
						for _, c := range chars {
							next = append(next, lit{r.s + string(c), r.fold})
						}
					}
					run = next
					continue
				}
			case sub.Op == rsyntax.OpAlternate || sub.Op == rsyntax.OpCapture:
				// An alternation of exact strings extends the run: the
				// parser factors eval|exec into e(?:val|xec), whose
				// literals are then eval and exec, not val and xec.
				if alts, ok := exactStrings(sub); ok && len(alts)*len(run) <= 64 {
					var next []lit
					for _, r := range run {
						for _, a := range alts {
							next = append(next, lit{r.s + a.s, r.fold || a.fold})
						}
					}
					run = next
					continue
				}
			}
			flush()
			if set, ok := necessary(sub); ok {
				consider(set)
			}
		}
		flush()
		return best, best != nil
	case rsyntax.OpAlternate:
		var out []lit
		for _, sub := range re.Sub {
			set, ok := necessary(sub)
			if !ok {
				return nil, false
			}
			out = append(out, set...)
		}
		return out, true
	}
	return nil, false
}

// exactStrings lists the strings a pattern matches exactly, when it is
// literals, alternations and concatenations of them (at most 64).
func exactStrings(re *rsyntax.Regexp) ([]lit, bool) {
	switch re.Op {
	case rsyntax.OpLiteral:
		return []lit{{string(re.Rune), re.Flags&rsyntax.FoldCase != 0}}, true
	case rsyntax.OpEmptyMatch:
		return []lit{{}}, true
	case rsyntax.OpCapture:
		return exactStrings(re.Sub[0])
	case rsyntax.OpAlternate:
		var out []lit
		for _, sub := range re.Sub {
			set, ok := exactStrings(sub)
			if !ok || len(out)+len(set) > 64 {
				return nil, false
			}
			out = append(out, set...)
		}
		return out, true
	case rsyntax.OpConcat:
		out := []lit{{}}
		for _, sub := range re.Sub {
			set, ok := exactStrings(sub)
			if !ok || len(out)*len(set) > 64 {
				return nil, false
			}
			var next []lit
			for _, a := range out {
				for _, b := range set {
					next = append(next, lit{a.s + b.s, a.fold || b.fold})
				}
			}
			out = next
		}
		return out, true
	case rsyntax.OpCharClass:
		chars := classRunes(re)
		if chars == nil {
			return nil, false
		}
		out := make([]lit, len(chars))
		for i, c := range chars {
			out[i] = lit{s: string(c)}
		}
		return out, true
	}
	return nil, false
}

// classRunes lists a character class's runes when it has at most 8.
func classRunes(re *rsyntax.Regexp) []rune {
	var out []rune
	for i := 0; i+1 < len(re.Rune); i += 2 {
		for c := re.Rune[i]; c <= re.Rune[i+1]; c++ {
			if len(out) == 8 {
				return nil
			}
			out = append(out, c)
		}
	}
	return out
}

func shortest(set []lit) int {
	n := -1
	for _, l := range set {
		if n < 0 || len(l.s) < n {
			n = len(l.s)
		}
	}
	return n
}

// mayMatch is the prefilter test for one line of text.
func (c *compiled) mayMatch(text string) bool {
	if c.prefilter == nil {
		return true
	}
	for _, l := range c.prefilter {
		if c.fold {
			if containsFold(text, l) {
				return true
			}
		} else if strings.Contains(text, l) {
			return true
		}
	}
	return false
}

// containsFold reports whether s contains the lower-case needle ignoring
// case. ASCII needles (all of the builtin packs') are searched byte-wise
// without allocating; others fall back to lower-casing s.
func containsFold(s, needle string) bool {
	for i := 0; i < len(needle); i++ {
		if needle[i] >= utf8.RuneSelf {
			return strings.Contains(strings.ToLower(s), needle)
		}
	}
	n := len(needle)
	if n == 0 {
		return true
	}
	first := needle[0]
	for i := 0; i+n <= len(s); i++ {
		if lower(s[i]) != first {
			continue
		}
		j := 1
		for j < n && lower(s[i+j]) == needle[j] {
			j++
		}
		if j == n {
			return true
		}
	}
	return false
}

// lowerASCII lower-cases s's ASCII letters as lower does, byte by byte.
func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		b[i] = lower(c)
	}
	return string(b)
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// literalIndex finds, in one pass over a line, which of all rules'
// prefilter literals occur in it (ASCII case-insensitively): an
// Aho–Corasick automaton over byte classes (every byte that occurs in a
// literal, ASCII letters folded, has a class; all other bytes share
// class 0).
//
// It starts as a trie with failure links, built in well under a
// millisecond, and becomes a full transition table (two table lookups
// per byte whatever the number of rules) once it has scanned
// denseAfter bytes: building the table for the built-in rules' ~4,800
// states took ~10 ms of a 10-line review's start-up, more than such a
// review spends scanning, while on a large change the table pays for
// itself within the first 64 KiB it scans. Both forms find
// exactly the same literals (TestLiteralIndexFindsEveryLiteral checks
// each against strings.Contains).
type literalIndex struct {
	lits  []string   // the literals, by id (shared with the caller)
	words int        // bitset width in uint64s
	nc    int        // number of byte classes (columns of the table)
	class [256]uint8 // byte -> class (upper-case ASCII as lower-case)
	// The trie: state st's children are kids[kidAt[st]:kidAt[st+1]],
	// sorted by class; root holds the root's children by class (0: none).
	kidAt []int32
	kids  []kid
	root  []int32
	fail  []int32
	// The literals ending at a state (suffixes included), as the non-zero
	// words of its bitset: pairs[pairAt[st]:pairAt[st+1]]. An emitting
	// state sets one or two words, not all of them.
	pairAt []int32
	pairs  []outPair

	scanned   atomic.Int64 // bytes scanned by the trie, until the table exists
	denseOnce sync.Once
	dense     atomic.Pointer[[]int32]
	maxLit    int // the longest literal's length, set by newLiteralIndex
}

// maxTableEntries bounds the full table (states × classes, 4 bytes each):
// a stranger's rule pack (4 MiB of YAML, most of it literals) could ask
// for gigabytes, so an index over more stays a trie, whose size is its
// literals'. The built-in rules' line index has ~315,000 entries.
const maxTableEntries = 16 << 20

// denseAfter is how many bytes the trie scans before the table is built:
// the trie scans ~6× slower than the table (go test ./internal/rules
// -bench LiteralIndexForms), so 64 KiB of trie scanning costs about as
// much as building the built-in rules' line table.
const denseAfter = 64 << 10

type kid struct {
	c  uint8
	to int32
}

type outPair struct {
	w    int32
	bits uint64
}

func newLiteralIndex(lits []string) *literalIndex {
	x := snapshotIndex(lits)
	if x == nil {
		x = buildLiteralIndex(lits)
	}
	for _, l := range x.lits {
		x.maxLit = max(x.maxLit, len(l))
	}
	return x
}

// indexData is a literal index's automaton as built-time data
// (snapshot_gen.go): the indexes of the built-in rules' three literal
// lists, built by buildLiteralIndex at `go generate` time, so loading the
// rules does not build them again (~2 ms of every review).
type indexData struct {
	Lits   []string
	Words  int
	NC     int
	Class  [256]uint8
	KidAt  []int32
	Kids   []kid
	Root   []int32
	Fail   []int32
	PairAt []int32
	Pairs  []outPair
}

// snapshotIndex is the index of lits from indexSnapshot when it holds
// that exact list, else nil. The index shares the snapshot's arrays,
// which nothing writes (the transition table is built apart from them).
func snapshotIndex(lits []string) *literalIndex {
	if derived.off.Load() {
		return nil
	}
	for i := range indexSnapshot {
		d := &indexSnapshot[i]
		if slices.Equal(d.Lits, lits) {
			return &literalIndex{lits: d.Lits, words: d.Words, nc: d.NC, class: d.Class, kidAt: d.KidAt, kids: d.Kids, root: d.Root,
				fail: d.Fail, pairAt: d.PairAt, pairs: d.Pairs}
		}
	}
	return nil
}

// buildLiteralIndex builds the index of lits.
func buildLiteralIndex(lits []string) *literalIndex {
	x := &literalIndex{lits: lits, words: (len(lits) + 63) / 64}
	if x.words == 0 {
		x.words = 1
	}
	// Byte classes: numbered in byte order from 1.
	var used [256]bool
	for _, l := range lits {
		for i := 0; i < len(l); i++ {
			used[lower(l[i])] = true
		}
	}
	x.nc = 1
	for c := 0; c < 256; c++ {
		if used[c] {
			x.class[c] = uint8(x.nc)
			x.nc++
		}
	}
	for c := 'A'; c <= 'Z'; c++ {
		x.class[c] = x.class[c+'a'-'A']
	}
	// The trie, states numbered as the literals are inserted in order
	// (the root is 0), its children first as linked lists (first child,
	// next sibling: no allocation per state), then flattened.
	// The states are the literals' distinct prefixes (the root is ""):
	// counted first, to allocate once.
	sorted := make([]string, len(lits))
	for i, l := range lits {
		sorted[i] = lowerASCII(l)
	}
	slices.Sort(sorted)
	states := 1
	for i, l := range sorted {
		common := 0
		if i > 0 {
			p := sorted[i-1]
			for common < len(l) && common < len(p) && l[common] == p[common] {
				common++
			}
		}
		states += len(l) - common
	}
	first := make([]int32, 1, states)   // state -> first child (0: none)
	sibling := make([]int32, 1, states) // state -> next sibling (0: none)
	edge := make([]uint8, 1, states)    // state -> class of the edge into it
	ends := make([]int32, 1, states)    // state -> literals ending there, as a list through endNext
	ends[0] = -1
	endNext := make([]int32, len(lits))
	for id, l := range lits {
		s := int32(0)
		for i := 0; i < len(l); i++ {
			c := x.class[l[i]]
			nx := first[s]
			for nx != 0 && edge[nx] != c {
				nx = sibling[nx]
			}
			if nx == 0 {
				nx = int32(len(first))
				first, sibling, edge, ends = append(first, 0), append(sibling, first[s]), append(edge, c), append(ends, -1)
				first[s] = nx
			}
			s = nx
		}
		endNext[id], ends[s] = ends[s], int32(id)
	}
	n := len(first)
	idsOf := func(st int32, row []outPair) []outPair {
		for id := ends[st]; id >= 0; id = endNext[id] {
			row = addIDs(row, int(id))
		}
		return row
	}
	x.kidAt = make([]int32, n+1)
	x.kids = make([]kid, 0, n-1)
	for st := range n {
		x.kidAt[st] = int32(len(x.kids))
		for k := first[st]; k != 0; k = sibling[k] {
			x.kids = append(x.kids, kid{edge[k], k})
		}
		ks := x.kids[x.kidAt[st]:]
		slices.SortFunc(ks, func(a, b kid) int { return int(a.c) - int(b.c) })
	}
	x.kidAt[n] = int32(len(x.kids))
	x.root = make([]int32, x.nc)
	for _, k := range x.kids[x.kidAt[0]:x.kidAt[1]] {
		x.root[k.c] = k.to
	}
	// Failure links and outputs, breadth first: a state's outputs are its
	// own literals and its failure state's.
	x.fail = make([]int32, n)
	rows := make([][]outPair, n)
	rows[0] = idsOf(0, nil)
	queue := make([]int32, 0, n)
	for _, k := range x.kids[x.kidAt[0]:x.kidAt[1]] {
		queue = append(queue, k.to) // fail = root
	}
	for q := 0; q < len(queue); q++ {
		s := queue[q]
		rows[s] = rows[x.fail[s]]
		if ends[s] >= 0 {
			rows[s] = idsOf(s, slices.Clone(rows[s]))
		}
		for _, k := range x.kids[x.kidAt[s]:x.kidAt[s+1]] {
			x.fail[k.to] = x.goTo(x.fail[s], k.c)
			queue = append(queue, k.to)
		}
	}
	x.pairAt = make([]int32, n+1)
	for st, row := range rows {
		x.pairAt[st] = int32(len(x.pairs))
		x.pairs = append(x.pairs, row...)
	}
	x.pairAt[n] = int32(len(x.pairs))
	return x
}

// addIDs adds literal id to a row of output pairs kept sorted by word.
func addIDs(row []outPair, id int) []outPair {
	w, bit := int32(id/64), uint64(1)<<(id%64)
	i, found := slices.BinarySearchFunc(row, w, func(p outPair, w int32) int { return int(p.w - w) })
	if found {
		row[i].bits |= bit
		return row
	}
	return slices.Insert(row, i, outPair{w, bit})
}

// child is st's child on class c, or -1.
func (x *literalIndex) child(st int32, c uint8) int32 {
	if st == 0 {
		if t := x.root[c]; t != 0 {
			return t
		}
		return -1
	}
	for _, k := range x.kids[x.kidAt[st]:x.kidAt[st+1]] {
		if k.c >= c {
			if k.c == c {
				return k.to
			}
			break
		}
	}
	return -1
}

// goTo is the state after reading class c in state st (the automaton's
// transition, by failure links).
func (x *literalIndex) goTo(st int32, c uint8) int32 {
	for {
		if t := x.child(st, c); t >= 0 {
			return t
		}
		if st == 0 {
			return 0
		}
		st = x.fail[st]
	}
}

// step is the state after reading byte c in state st.
func (x *literalIndex) step(st int32, c byte) int32 { return x.goTo(st, x.class[c]) }

// table is the full transition table, built on first call: state*nc +
// class holds the target's row offset (state × nc), complemented when
// the target emits, so the scan reads one entry per byte with no
// multiplication and no second lookup.
func (x *literalIndex) table() []int32 {
	x.denseOnce.Do(func() {
		nc, n := x.nc, len(x.fail)
		next := make([]int32, n*nc)
		copy(next, x.root)
		// Breadth first (a state's failure state is shallower): a missing
		// transition is the failure state's.
		queue := make([]int32, 0, n)
		for _, k := range x.kids[x.kidAt[0]:x.kidAt[1]] {
			queue = append(queue, k.to)
		}
		for q := 0; q < len(queue); q++ {
			s := queue[q]
			row, frow := next[int(s)*nc:int(s+1)*nc], next[int(x.fail[s])*nc:int(x.fail[s]+1)*nc]
			copy(row, frow)
			for _, k := range x.kids[x.kidAt[s]:x.kidAt[s+1]] {
				row[k.c] = k.to
				queue = append(queue, k.to)
			}
		}
		for i, t := range next {
			off := t * int32(nc)
			if x.pairAt[t] != x.pairAt[t+1] {
				off = ^off
			}
			next[i] = off
		}
		x.dense.Store(&next)
	})
	return *x.dense.Load()
}

// scan sets in bits (len words) every literal occurring in s.
func (x *literalIndex) scan(s string, bits []uint64) {
	clear(bits)
	if t := x.dense.Load(); t != nil {
		x.scanDense(*t, s, bits)
		return
	}
	if x.scanned.Add(int64(len(s))) > denseAfter && int64(len(x.fail))*int64(x.nc) <= maxTableEntries {
		x.scanDense(x.table(), s, bits)
		return
	}
	x.scanTrie(s, bits)
}

// scanOutside sets in bits every literal occurring in s, given in, the
// literals occurring in s[lo:hi] (scan's answer for that range): only
// what lies outside the range is scanned, with the longest literal's
// length less one byte into it on either side, where a literal may cross
// its edge (TestScanOutside). A rule's syntax window is most of a file
// on a large change, and the file was scanned whole after it.
func (x *literalIndex) scanOutside(s string, lo, hi int, in, bits []uint64) {
	ov := x.maxLit - 1
	if ov < 0 || lo < 0 || hi > len(s) || lo > hi {
		x.scan(s, bits)
		return
	}
	a, b := s[:min(len(s), lo+ov)], s[max(0, hi-ov):]
	if len(a)+len(b) >= len(s) {
		x.scan(s, bits) // the range saves nothing
		return
	}
	x.scan(a, bits)
	rest := make([]uint64, len(bits))
	x.scan(b, rest)
	for i := range bits {
		bits[i] |= rest[i] | in[i]
	}
}

// twoStreams is the length from which scanDense walks a text as two
// streams: below it the second stream's setup costs more than it saves.
const twoStreams = 256

// scanDense is scanTable, over a long text two streams at once.
func (x *literalIndex) scanDense(next []int32, s string, bits []uint64) {
	if len(s) < twoStreams || x.maxLit < 1 || x.maxLit > len(s)/4 {
		x.scanTable(next, s, bits)
		return
	}
	x.scanTwo(next, s, bits)
}

func (x *literalIndex) scanTable(next []int32, s string, bits []uint64) {
	off := int32(0) // the state's row offset in next
	nc, class := int32(x.nc), &x.class
	for i := 0; i < len(s); i++ {
		v := next[off+int32(class[s[i]])]
		if v >= 0 {
			off = v
			continue
		}
		off = ^v
		x.emit(off/nc, bits)
	}
}

// scanTwo is scanTable walking the first half of s and the rest at once:
// a step of the automaton waits for the table entry the previous one
// loaded, so one walk leaves the core idle most of each step, and two
// independent walks take about as long as one. The second starts at
// root maxLit-1 bytes before the half, so it finds every literal ending
// in the second half (it starts at or after that point), the first finds
// every literal ending before the half, and a literal both find sets the
// same bit twice (TestScanTwoStreams).
func (x *literalIndex) scanTwo(next []int32, s string, bits []uint64) {
	half := len(s) / 2
	x.walkTwo(next, s[:half], s[half-(x.maxLit-1):], bits, bits)
}

// scanPair is scan of a into bitsA and of b into bitsB, the two walked at
// once (see scanTwo): a file's added lines are scanned two by two.
func (x *literalIndex) scanPair(a, b string, bitsA, bitsB []uint64) {
	t := x.dense.Load()
	if t == nil {
		x.scan(a, bitsA)
		x.scan(b, bitsB)
		return
	}
	clear(bitsA)
	clear(bitsB)
	x.walkTwo(*t, a, b, bitsA, bitsB)
}

// walkTwo walks the table over a, setting bitsA, and over b, setting
// bitsB (the same slice or not), in step while both last, then over the
// rest of the longer one.
func (x *literalIndex) walkTwo(next []int32, a, b string, bitsA, bitsB []uint64) {
	n := min(len(a), len(b))
	ha, hb := a[:n], b[:n]
	offA, offB := int32(0), int32(0)
	nc, class := int32(x.nc), &x.class
	for i := 0; i < n; i++ {
		va := next[offA+int32(class[ha[i]])]
		vb := next[offB+int32(class[hb[i]])]
		if va >= 0 {
			offA = va
		} else {
			offA = ^va
			x.emit(offA/nc, bitsA)
		}
		if vb >= 0 {
			offB = vb
		} else {
			offB = ^vb
			x.emit(offB/nc, bitsB)
		}
	}
	rest, off, bits := a[n:], offA, bitsA
	if len(b) > n {
		rest, off, bits = b[n:], offB, bitsB
	}
	for i := 0; i < len(rest); i++ {
		v := next[off+int32(class[rest[i]])]
		if v >= 0 {
			off = v
			continue
		}
		off = ^v
		x.emit(off/nc, bits)
	}
}

// emit sets the bits of the literals ending at state st.
func (x *literalIndex) emit(st int32, bits []uint64) {
	for _, p := range x.pairs[x.pairAt[st]:x.pairAt[st+1]] {
		bits[p.w] |= p.bits
	}
}

func (x *literalIndex) scanTrie(s string, bits []uint64) {
	st := int32(0)
	for i := 0; i < len(s); i++ {
		st = x.goTo(st, x.class[s[i]])
		for _, p := range x.pairs[x.pairAt[st]:x.pairAt[st+1]] {
			bits[p.w] |= p.bits
		}
	}
}

// buildPrefilter numbers every rule's literals and builds the index.
func (s *Set) buildPrefilter() {
	ids := map[string]int{}
	var lits []string
	for _, r := range s.rules {
		c := r.c
		if c == nil || c.prefilter == nil {
			continue
		}
		c.litIDs = c.litIDs[:0]
		for _, l := range c.prefilter {
			k := strings.ToLower(l)
			id, ok := ids[k]
			if !ok {
				id = len(lits)
				ids[k] = id
				lits = append(lits, k)
			}
			c.litIDs = append(c.litIDs, id)
		}
	}
	s.lits = newLiteralIndex(lits)
	// litRules[id]: the rules (indexes into s.rules) with literal id, as
	// lists: their size is the number of literals the rules have, however
	// many rules a pack brings.
	s.ruleWords = (len(s.rules) + 63) / 64
	s.litRules = make([][]int32, s.lits.words*64)
	for ri, r := range s.rules {
		if r.c == nil || r.c.prefilter == nil {
			continue
		}
		for _, id := range r.c.litIDs {
			if l := s.litRules[id]; len(l) == 0 || l[len(l)-1] != int32(ri) {
				s.litRules[id] = append(l, int32(ri))
			}
		}
	}

	// Syntax rules (query, flow) have a second index: their literals are
	// looked for once per file, in the text around the change, to decide
	// whether the file is parsed at all.
	ids = map[string]int{}
	lits = nil
	index := func(ls []string) []int {
		out := make([]int, len(ls))
		for i, l := range ls {
			k := strings.ToLower(l)
			id, ok := ids[k]
			if !ok {
				id = len(lits)
				ids[k] = id
				lits = append(lits, k)
			}
			out[i] = id
		}
		return out
	}
	for _, r := range s.rules {
		c := r.c
		switch {
		case c == nil:
		case c.query != nil:
			c.synLits = c.query.lits
			c.synIDs = index(c.synLits)
		case c.flow != nil:
			c.synLits = c.flow.lits
			c.synIDs = index(c.synLits)
			c.valLits, c.valFold = c.flow.valueLits, c.flow.valueFold
			c.valIDs = index(c.valLits)
		}
		if c != nil {
			c.gramIDs = nil
			// (in grammar order: the literals' ids, and so the index, are
			// the same on every load, as the snapshot's must be)
			for _, g := range slices.Sorted(maps.Keys(c.gramLits)) {
				if c.gramIDs == nil {
					c.gramIDs = map[string][]int{}
				}
				c.gramIDs[g] = index(c.gramLits[g])
			}
		}
	}
	s.syn = newLiteralIndex(lits)
	// Only the syntax literals are looked for in a file's window (the
	// value literals of flow rules, "call\n" among them, are looked for in
	// the whole text).
	s.synNewline = false
	for _, r := range s.rules {
		if r.c == nil {
			continue
		}
		for _, l := range r.c.synLits {
			s.synNewline = s.synNewline || strings.Contains(l, "\n")
		}
	}

	// Whole-file conditions (file_requires, file_unless) have a third:
	// one scan of a file's text answers every rule's literals.
	ids = map[string]int{}
	lits = nil
	for _, r := range s.rules {
		if c := r.c; c != nil {
			c.fileReqIDs, c.fileUnlessIDs = index(c.fileReqLits), index(c.fileUnlessLits)
		}
	}
	s.file = newLiteralIndex(lits)

	// The set's distinct path globs, each matched once per file.
	s.globs = nil
	globID := map[string]int{}
	globIndex := func(res []*lazyRE) []int {
		out := make([]int, len(res))
		for i, re := range res {
			id, ok := globID[re.src]
			if !ok {
				id = len(s.globs)
				globID[re.src] = id
				s.globs = append(s.globs, re)
			}
			out[i] = id
		}
		return out
	}
	for _, r := range s.rules {
		if c := r.c; c != nil {
			c.pathIDs, c.excludeIDs = globIndex(c.paths), globIndex(c.exclude)
		}
	}
	// Most paths lack every literal of most globs (_test., /vendor/,
	// .min.): that answer needs no regexp.
	s.globLits, s.globFold = make([][]string, len(s.globs)), make([]bool, len(s.globs))
	for i, re := range s.globs {
		s.globLits[i], s.globFold[i] = requiredLiteralsMin(re.src, 1)
	}
}

// fileLiteral is anyLiteral(text, lits, fold) answered from the file
// index's scan of text (bits, filled on first use): a case-insensitive
// hit of an ASCII literal is exact, others are confirmed; a
// case-insensitive literal with non-ASCII bytes (which anyLiteral folds
// as Unicode) is looked for directly.
func (s *Set) fileLiteral(bits *[]uint64, text string, ids []int, lits []string, fold bool) bool {
	if lits == nil {
		return true
	}
	if fold && !allASCII(lits) || len(ids) != len(lits) {
		return anyLiteral(text, lits, fold)
	}
	if *bits == nil {
		*bits = make([]uint64, s.file.words)
		s.file.scan(text, *bits)
	}
	return hasLiteral(*bits, ids, lits, text, fold)
}

func allASCII(ss []string) bool {
	for _, s := range ss {
		for i := 0; i < len(s); i++ {
			if s[i] >= utf8.RuneSelf {
				return false
			}
		}
	}
	return true
}

// hasLiteral reports whether one of lits (ids into an index whose scan of
// text gave bits) occurs in text: nil lits always do; a case-insensitive
// hit is confirmed exactly unless fold.
func hasLiteral(bits []uint64, ids []int, lits []string, text string, fold bool) bool {
	if lits == nil {
		return true
	}
	for i, id := range ids {
		if bits[id/64]&(1<<(id%64)) != 0 && (fold || strings.Contains(text, lits[i])) {
			return true
		}
	}
	return false
}

// present reports whether the line's literal bits allow the rule; for
// case-sensitive literals a case-insensitive hit is confirmed exactly.
func (c *compiled) present(bits []uint64, text string) bool {
	if c.prefilter == nil {
		return true
	}
	for i, id := range c.litIDs {
		if bits[id/64]&(1<<(id%64)) == 0 {
			continue
		}
		if c.fold || strings.Contains(text, c.prefilter[i]) {
			return true
		}
	}
	return false
}

// anyLiteral reports whether text may contain a match given a pattern's
// required literals (nil literals: always).
func anyLiteral(text string, lits []string, fold bool) bool {
	if lits == nil {
		return true
	}
	for _, l := range lits {
		if fold && containsFold(text, l) || !fold && strings.Contains(text, l) {
			return true
		}
	}
	return false
}
