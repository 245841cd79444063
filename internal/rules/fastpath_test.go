package rules

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// windowByCopy is fileCtx.window as it was: every line of the ranges
// copied, each with its newline (the oracle).
func windowByCopy(f *File, before, after int) string {
	var b strings.Builder
	next := 1
	for _, run := range addedRuns(f.Added) {
		lo, hi := max(run[0]-before, next), min(run[1]+after, len(f.Content))
		for i := lo; i <= hi; i++ {
			b.WriteString(f.Content[i-1])
			b.WriteByte('\n')
		}
		next = max(next, hi+1)
	}
	return b.String()
}

// TestWindowSameAsCopy: the window is the copied lines, from Text or not;
// allowed to, it leaves out only the final newline at the end of a file.
func TestWindowSameAsCopy(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for n := 0; n < 2000; n++ {
		lines := make([]string, 1+rng.IntN(60))
		for i := range lines {
			lines[i] = "line " + strconv.Itoa(i+1) + strings.Repeat("x", rng.IntN(5))
		}
		var added []Line
		for i := range lines {
			if rng.IntN(6) == 0 {
				added = append(added, Line{No: i + 1, Text: lines[i]})
			}
		}
		before, after := rng.IntN(4), rng.IntN(8)
		want := windowByCopy(&File{Content: lines, Added: added}, before, after)
		for _, withText := range []bool{false, true} {
			for _, noFinal := range []bool{false, true} {
				f := &File{Path: "a.go", Content: lines, Added: added}
				if withText {
					f.Text = strings.Join(lines, "\n")
				}
				got := newFileCtx(f).window(before, after, noFinal)
				if got == want || noFinal && withText && got+"\n" == want {
					continue
				}
				t.Fatalf("lines %d, added %v, before %d after %d, text %v, noFinal %v:\n got %q\nwant %q", len(lines), added, before, after, withText, noFinal, got, want)
			}
		}
	}
}

// TestConfigureAfterMatch: the rules eligible per language are cached;
// Configure after a match must still take effect.
func TestConfigureAfterMatch(t *testing.T) {
	s, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	file := func() *File {
		return DiffFile("app/run.py", nil, []byte("import os\nresult = eval(request.args['q'])\n"))
	}
	ids := func(hits []Hit) map[string]bool {
		out := map[string]bool{}
		for _, h := range hits {
			out[h.RuleID] = true
		}
		return out
	}
	before := ids(s.MatchFile(file(), nil))
	if len(before) == 0 {
		t.Fatal("no hit on an eval of request input")
	}
	var off []string
	for id := range before {
		off = append(off, id)
	}
	if err := s.Configure(nil, off); err != nil {
		t.Fatal(err)
	}
	if after := ids(s.MatchFile(file(), nil)); len(after) != 0 {
		t.Errorf("rules %v disabled after a match still hit: %v", off, after)
	}
}

// TestUsesOncePerLine: a line naming many changed symbols, each twice,
// is one use of each (past the short list of names a line keeps).
func TestUsesOncePerLine(t *testing.T) {
	var defs, calls []string
	for i := 0; i < 24; i++ {
		name := "handler" + strconv.Itoa(i)
		defs = append(defs, "func "+name+"() {}")
		calls = append(calls, name+"()", name+"()")
	}
	a := DiffFile("a.go", nil, []byte("package a\n\n"+strings.Join(defs, "\n")+"\n"))
	b := DiffFile("b.go", []byte("package a\n"), []byte("package a\n\nfunc use() { "+strings.Join(calls, "; ")+" }\n"))
	syms := ChangedSymbols([]*File{a, b})
	n := 0
	for _, s := range syms {
		if !strings.HasPrefix(s.Name, "handler") {
			continue
		}
		n++
		if len(s.UsedIn) != 1 || s.UsedIn[0] != (Use{Path: "b.go", Line: 3}) {
			t.Errorf("%s used in %v, want once in b.go:3", s.Name, s.UsedIn)
		}
	}
	if n != 24 {
		t.Errorf("%d handler symbols, want 24: %+v", n, syms)
	}
}

// TestLiteralIndexFindsEveryLiteral: the literal index's scan sets
// exactly the literals that occur in a line, ASCII case aside, for the
// builtin set's line literals over this package's sources.
func TestLiteralIndexFindsEveryLiteral(t *testing.T) {
	s, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	var lits []string
	for _, r := range s.rules {
		if r.c != nil {
			lits = append(lits, r.c.prefilter...)
		}
	}
	x := newLiteralIndex(lits)
	lines := []string{"", "EVAL(x)", "password = 'Secret'", "\xff\x00eval"}
	for _, p := range []string{"match.go", "explorer.go", "prefilter.go"} {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, strings.Split(string(data), "\n")...)
	}
	// Both of the index's forms: the trie it starts as and the table it
	// becomes (and scan, which picks one).
	table := x.table()
	forms := map[string]func(string, []uint64){
		"scan":  x.scan,
		"trie":  func(s string, bits []uint64) { clear(bits); x.scanTrie(s, bits) },
		"table": func(s string, bits []uint64) { clear(bits); x.scanTable(table, s, bits) },
		// scanPair, the line as its first and as its second text, the other
		// one shorter and longer (eval( sets a literal the line must not get).
		"pair first": func(s string, bits []uint64) { x.scanPair(s, "password = eval(", bits, make([]uint64, x.words)) },
		"pair second": func(s string, bits []uint64) {
			x.scanPair("eval(", s, make([]uint64, x.words), bits)
		},
	}
	bits := make([]uint64, x.words)
	found := 0
	for form, scan := range forms {
		for _, l := range lines {
			scan(l, bits)
			low := lowerASCII(l)
			for id, lit := range lits {
				want := strings.Contains(low, lowerASCII(lit))
				if got := bits[id/64]&(1<<(id%64)) != 0; got != want {
					t.Fatalf("%s: %q: literal %d %q: scan %v, contains %v", form, l, id, lit, got, want)
				}
				if want {
					found++
				}
			}
		}
	}
	if found < 5*1000 {
		t.Fatalf("only %d literal occurrences over 5 forms: too few to test", found)
	}
}

// BenchmarkLiteralScan scans this package's sources with the builtin
// set's line literal index, line by line and two lines at a time as
// MatchFile does (go test ./internal/rules -bench LiteralScan).
func BenchmarkLiteralScan(b *testing.B) {
	s, err := Builtin()
	if err != nil {
		b.Fatal(err)
	}
	lines := strings.Split(packageSources(b, "match.go", "explorer.go", "prefilter.go", "rules.go"), "\n")
	s.lits.table()
	bits, other := make([]uint64, s.lits.words), make([]uint64, s.lits.words)
	b.Run("lines", func(b *testing.B) {
		for b.Loop() {
			for _, l := range lines {
				s.lits.scan(l, bits)
			}
		}
	})
	b.Run("pairs", func(b *testing.B) {
		for b.Loop() {
			for i := 0; i+1 < len(lines); i += 2 {
				s.lits.scanPair(lines[i], lines[i+1], bits, other)
			}
		}
	})
}

// packageSources is the named files of this package, concatenated.
func packageSources(tb testing.TB, names ...string) string {
	var b strings.Builder
	for _, p := range names {
		data, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		b.Write(data)
	}
	return b.String()
}

// TestBuiltinWindowsAreSlices: no built-in syntax rule looks for a
// literal with a newline in a file's window, so windows at the end of a
// file are slices of its text too.
func TestBuiltinWindowsAreSlices(t *testing.T) {
	s, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	if s.synNewline {
		t.Fatal("a built-in syntax literal holds a newline")
	}
}

// TestLiteralRulesGrowWithLiterals: the literal -> rules index holds one
// entry per rule literal, so a pack of many rules (a stranger's, perhaps)
// does not cost literals × rules; and its lines still meet their rules.
func TestLiteralRulesGrowWithLiterals(t *testing.T) {
	const n = 1500
	var b strings.Builder
	b.WriteString("pack: many\nrules:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `  - id: many.r%d
    profile: security_reviewer
    category: security
    severity: low
    confidence: 0.5
    title: t
    message: m
    impact: i
    suggestion: s
    pattern: 'tok%dq'
    positive: [{path: a.go, code: "x := tok%dq"}]
    negative: [{path: a.go, code: "x := 1"}]
`, i, i, i)
	}
	s, err := LoadPacks([]string{"many.yaml"}, [][]byte{[]byte(b.String())})
	if err != nil {
		t.Fatal(err)
	}
	entries := 0
	for _, l := range s.litRules {
		entries += len(l)
	}
	if entries != n {
		t.Errorf("%d literal -> rule entries for %d rules of one literal each", entries, n)
	}
	hits := s.MatchFile(DiffFile("a.go", nil, []byte("package a\n\nvar x = tok7q + tok1499q\n")), nil)
	var ids []string
	for _, h := range hits {
		ids = append(ids, h.RuleID)
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"many.r1499", "many.r7"}) {
		t.Errorf("hits %v, want many.r7 and many.r1499", ids)
	}
}

// BenchmarkLiteralIndexForms compares the line literal index's two forms,
// the trie it starts as and the table it becomes, on match.go's lines
// (go test ./internal/rules -bench LiteralIndexForms).
func BenchmarkLiteralIndexForms(b *testing.B) {
	s, err := Builtin()
	if err != nil {
		b.Fatal(err)
	}
	s.buildPrefilter()
	data, err := os.ReadFile("match.go")
	if err != nil {
		b.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	bits := make([]uint64, s.lits.words)
	table := s.lits.table()
	b.Run("trie", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			for _, l := range lines {
				s.lits.scanTrie(l, bits)
			}
		}
	})
	b.Run("table", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			for _, l := range lines {
				s.lits.scanTable(table, l, bits)
			}
		}
	})
}

// BenchmarkBuildPrefilter builds the built-in set's three literal indexes
// (their trie form: what a small review pays) and the literal -> rules
// lists.
func BenchmarkBuildPrefilter(b *testing.B) {
	s, err := Builtin()
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		s.buildPrefilter()
	}
}

// TestLiteralIndexTableBounded: an index whose full table would pass
// maxTableEntries (a stranger's pack of long literals) stays a trie
// however much it scans, and still finds every literal.
func TestLiteralIndexTableBounded(t *testing.T) {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789_-.:/=+*&^%$#@!~<>?[]{}()|;,"
	rnd := rand.New(rand.NewPCG(1, 2))
	var lits []string
	for range 3000 {
		b := make([]byte, 96)
		for i := range b {
			b[i] = alphabet[rnd.IntN(len(alphabet))]
		}
		lits = append(lits, string(b))
	}
	x := newLiteralIndex(lits)
	if entries := int64(len(x.fail)) * int64(x.nc); entries <= maxTableEntries {
		t.Fatalf("%d table entries: not over the bound", entries)
	}
	line := strings.Repeat("x", 1000) + lits[7] + "y" + lits[2999]
	bits := make([]uint64, x.words)
	for range 2 * denseAfter / len(line) {
		x.scan(line, bits)
	}
	if x.dense.Load() != nil {
		t.Fatal("the table was built past its bound")
	}
	for id := range lits {
		want := id == 7 || id == 2999
		if got := bits[id/64]&(1<<(id%64)) != 0; got != want {
			t.Fatalf("literal %d: found %v, want %v", id, got, want)
		}
	}
}

// TestScanTwoStreams: a long text walked as two streams sets the same
// literals as one walk, for the built-in set's three literal indexes over
// this package's sources cut at random lengths (so that literals straddle
// the half) and over texts made of nothing but literals.
func TestScanTwoStreams(t *testing.T) {
	s, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	s.buildPrefilter()
	src := packageSources(t, "match.go", "explorer.go", "prefilter.go")
	rng := rand.New(rand.NewPCG(3, 3))
	compared, set := 0, 0
	for _, x := range []*literalIndex{s.lits, s.syn, s.file} {
		table := x.table()
		var texts []string
		for range 300 {
			a := rng.IntN(len(src) - 4096)
			texts = append(texts, src[a:a+twoStreams+rng.IntN(3000)])
			var b strings.Builder
			for b.Len() < twoStreams+rng.IntN(2000) {
				b.WriteString(x.lits[rng.IntN(len(x.lits))])
				if rng.IntN(3) == 0 {
					b.WriteByte(' ')
				}
			}
			texts = append(texts, b.String())
		}
		one, two := make([]uint64, x.words), make([]uint64, x.words)
		for _, text := range texts {
			clear(one)
			x.scanTable(table, text, one)
			clear(two)
			x.scanTwo(table, text, two)
			if !slices.Equal(one, two) {
				t.Fatalf("%d literals: %q: one walk %x, two %x", len(x.lits), text, one, two)
			}
			compared++
			for _, w := range one {
				set += bits.OnesCount64(w)
			}
		}
	}
	if set < compared*3 {
		t.Fatalf("only %d literals set over %d texts: too few to compare", set, compared)
	}
}

// BenchmarkScanText scans whole texts (this package's sources) with the
// syntax literal index, as a file's window is scanned, in one walk and in
// two (go test ./internal/rules -bench ScanText).
func BenchmarkScanText(b *testing.B) {
	s, err := Builtin()
	if err != nil {
		b.Fatal(err)
	}
	s.buildPrefilter()
	src := packageSources(b, "match.go", "explorer.go", "prefilter.go", "rules.go")
	n := len(src)
	var texts []string
	for t := src; len(t) > 0; {
		k := min(len(t), 6000)
		texts = append(texts, t[:k])
		t = t[k:]
	}
	x := s.syn
	table := x.table()
	bitset := make([]uint64, x.words)
	for name, scan := range map[string]func([]int32, string, []uint64){"one": x.scanTable, "two": x.scanTwo} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				for _, t := range texts {
					scan(table, t, bitset)
				}
			}
		})
	}
}

// TestScanOutside: the scan of a text given its range's literals
// (scanOutside) sets exactly the bits of the whole text's scan, for random
// ranges of random texts of each built-in index's literals, including
// literals that cross the range's edges; and sliceOffset finds a window
// that is a slice of its text and nothing else.
func TestScanOutside(t *testing.T) {
	s, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	s.buildPrefilter()
	rng := rand.New(rand.NewPCG(5, 9))
	compared, crossed := 0, 0
	for _, x := range []*literalIndex{s.lits, s.syn, s.file} {
		if x.maxLit < 2 {
			t.Fatalf("%d literals, longest %d: newLiteralIndex did not set it", len(x.lits), x.maxLit)
		}
		whole, in, got := make([]uint64, x.words), make([]uint64, x.words), make([]uint64, x.words)
		for range 400 {
			var b strings.Builder
			for b.Len() < 50+rng.IntN(3000) {
				b.WriteString(x.lits[rng.IntN(len(x.lits))])
				if rng.IntN(3) == 0 {
					b.WriteByte(' ')
				}
			}
			text := b.String()
			lo := rng.IntN(len(text))
			hi := lo + rng.IntN(len(text)-lo+1)
			x.scan(text, whole)
			x.scan(text[lo:hi], in)
			x.scanOutside(text, lo, hi, in, got)
			if !slices.Equal(got, whole) {
				t.Fatalf("%d literals: %q [%d:%d]: outside %x, whole %x", len(x.lits), text, lo, hi, got, whole)
			}
			compared++
			// a literal of the whole scan in neither part alone crossed an edge
			a, c := make([]uint64, x.words), make([]uint64, x.words)
			x.scan(text[:lo], a)
			x.scan(text[hi:], c)
			for i := range whole {
				if whole[i]&^(a[i]|in[i]|c[i]) != 0 {
					crossed++
					break
				}
			}
		}
	}
	t.Logf("%d of %d ranges had a literal across an edge", crossed, compared)
	if crossed < 20 {
		t.Fatalf("%d of %d ranges had a literal across an edge: too few to test the overlap", crossed, compared)
	}
	// The longest literal, alone in filler, one byte across either edge.
	for _, x := range []*literalIndex{s.lits, s.syn, s.file} {
		var long string
		for _, l := range x.lits {
			if len(l) > len(long) {
				long = l
			}
		}
		fill := strings.Repeat("\x01", 64)
		text := fill + long + fill
		whole, in, got := make([]uint64, x.words), make([]uint64, x.words), make([]uint64, x.words)
		x.scan(text, whole)
		for _, r := range [][2]int{{len(fill) + 1, len(text)}, {0, len(fill) + len(long) - 1}} {
			x.scan(text[r[0]:r[1]], in)
			x.scanOutside(text, r[0], r[1], in, got)
			if !slices.Equal(got, whole) {
				t.Errorf("%q across the edge of [%d:%d]: outside %x, whole %x", long, r[0], r[1], got, whole)
			}
		}
	}
	text := "abcdef"
	if off, ok := sliceOffset(text, text[2:4]); !ok || off != 2 {
		t.Errorf("sliceOffset of a slice: %d, %v", off, ok)
	}
	if _, ok := sliceOffset(text, strings.Clone(text[2:4])); ok {
		t.Error("sliceOffset of a copy: ok")
	}
}
