package rules

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// TestUseIndexSaturation: ChangedSymbols is the same whether or not the
// use index stops reading a name once usesOf has all it can return, on
// changes whose files call a few helpers everywhere (one of them 60 times
// in a single file, so that one file's uses alone do not count), in four
// language families, across many chunks of files, and one name whose
// uses are one short of enough at the end of a chunk.
func TestUseIndexSaturation(t *testing.T) {
	got := ChangedSymbols(symbolFixture())
	saturate = false
	want := ChangedSymbols(symbolFixture())
	saturate = true
	if len(want) < 150 {
		t.Fatalf("%d symbols: the fixture defines too few", len(want))
	}
	capped := 0
	for i := range want {
		if len(want[i].UsedIn) == maxUses {
			capped++
		}
	}
	if capped == 0 {
		t.Fatal("no symbol reaches the cap of uses: the test is not testing")
	}
	if !reflect.DeepEqual(got, want) {
		for i := range min(len(got), len(want)) {
			if !reflect.DeepEqual(got[i], want[i]) {
				g, w := got[i].UsedIn, want[i].UsedIn
				k := 0
				for k < min(len(g), len(w)) && g[k] == w[k] {
					k++
				}
				t.Fatalf("symbol %d (%s at %s:%d) differs at use %d: saturated %d uses %v, reference %d uses %v", i, want[i].Name, want[i].Path, want[i].Line, k, len(g), g[k:min(k+3, len(g))], len(w), w[k:min(k+3, len(w))])
			}
		}
		t.Fatalf("%d symbols saturated, %d in the reference", len(got), len(want))
	}
}

// symbolFixture is TestUseIndexSaturation's change (the same files each
// call): 150 files in four languages, helpers called from many files, a
// name whose uses fill usesOf's cap one file late.
func symbolFixture() []*File {
	type lang struct{ ext, def, call string }
	langs := []lang{
		{"go", "func %s(a int) int {", "\tx := %s(1)"},
		{"py", "def %s(a):", "    x = %s(1)"},
		{"ts", "export function %s(a: number) {", "  const x = %s(1);"},
		{"java", "  public int %s(int a) {", "    int x = %s(1);"},
	}
	helpers := []string{"helperOne", "helperTwo", "hotHelper", "rareHelper"}
	rng := rand.New(rand.NewPCG(5, 6))
	var files []*File
	for fi := range 150 {
		l := langs[fi%len(langs)]
		var content []string
		var added []Line
		add := func(text string, isAdded bool) {
			content = append(content, text)
			if isAdded {
				added = append(added, Line{No: len(content), Text: text})
			}
		}
		own := fmt.Sprintf("ownFunc%d", fi)
		add(fmt.Sprintf(l.def, own), true)
		if fi < 8 {
			for _, h := range helpers {
				add(fmt.Sprintf(l.def, h), true)
			}
		}
		calls := 5 + rng.IntN(10)
		if fi == 4 {
			calls = 60
		}
		for range calls {
			h := helpers[rng.IntN(3)]
			if fi == 4 {
				h = "hotHelper"
			}
			add(fmt.Sprintf(l.call, h), rng.IntN(2) == 0)
		}
		if rng.IntN(10) == 0 {
			add(fmt.Sprintf(l.call, "rareHelper"), false)
		}
		// stepHelper, in the Python files only: defined in file 1,
		// which calls it 10 times; 49 calls in the other Python
		// files of the first two chunks, so that at the end of the
		// second, one file short of the 50 uses file 1 asks for;
		// one more call in the third chunk.
		steps := map[int]int{1: 10, 61: 7, 65: 1}
		if fi%4 == 1 && fi >= 5 && fi <= 57 {
			steps[fi] = 3
		}
		if fi == 1 {
			add(fmt.Sprintf(l.def, "stepHelper"), true)
		}
		for range steps[fi] {
			add(fmt.Sprintf(l.call, "stepHelper"), false)
		}
		if fi > 0 && rng.IntN(3) == 0 {
			add(fmt.Sprintf(l.call, fmt.Sprintf("ownFunc%d", rng.IntN(fi))), false)
		}
		path := fmt.Sprintf("pkg%d/file%03d.%s", fi%7, fi, l.ext)
		files = append(files, &File{Path: path, Language: DetectLanguage(path, content[0]), Status: "modified",
			Added: added, Content: content, Text: strings.Join(content, "\n")})
	}
	return files
}

// TestSymbolsReadInParts: Symbols stopped after any symbol returns a
// prefix of the list ChangedSymbols made before it read in parts (every
// file's definitions, then one use index of every name: allAtOnce), with
// the same uses, and read on to the end, the whole list. The stops fall
// in the first batch, on its last file, and in the second.
func TestSymbolsReadInParts(t *testing.T) {
	want := allAtOnce(symbolFixture())
	if len(want) < 2*symbolBatch {
		t.Fatalf("%d symbols: too few for two batches", len(want))
	}
	if got := ChangedSymbols(symbolFixture()); !reflect.DeepEqual(got, want) {
		t.Fatalf("ChangedSymbols: %d symbols, want %d (or the same number, differing)", len(got), len(want))
	}
	firstBatch := 0 // symbols in the first batch's files
	{
		s := NewSymbols(symbolFixture())
		for _, fc := range s.order[:symbolBatch] {
			firstBatch += len(fileSymbols(fc))
		}
	}
	for _, k := range []int{0, 1, 17, firstBatch - 1, firstBatch, firstBatch + 3, len(want) - 1} {
		s := NewSymbols(symbolFixture())
		n := 0
		got := s.Read(func(Symbol) bool { n++; return n <= k }) // refuses symbol k
		if n != k+1 || len(got) < k+1 || !reflect.DeepEqual(got, want[:len(got)]) {
			t.Fatalf("stopped at symbol %d: asked %d, read %d, not a prefix of the whole list", k, n, len(got))
		}
		if again := s.Read(nil); len(again) != len(got) {
			t.Fatalf("stopped at symbol %d: Read(nil) read on, %d symbols after %d", k, len(again), len(got))
		}
		if all := s.Read(func(Symbol) bool { return true }); !reflect.DeepEqual(all, want) {
			t.Fatalf("stopped at symbol %d, then read to the end: %d symbols, want %d (or the same number, differing)", k, len(all), len(want))
		}
	}
}

// allAtOnce is ChangedSymbols as it was before Symbols, kept as the
// reference TestSymbolsReadInParts holds Symbols to.
func allAtOnce(files []*File) []Symbol {
	ctxs := make([]*fileCtx, 0, len(files))
	for _, f := range files {
		if f != nil {
			ctxs = append(ctxs, newFileCtx(f))
		}
	}
	prepareDefs(ctxs)
	var out []Symbol
	sigs := map[string]Symbol{}
	names := map[string]bool{}
	for _, fc := range ctxs {
		for _, s := range symbolSignatures(fc) {
			sigs[fmt.Sprintf("%s:%d", s.Path, s.Line)] = s
			names[s.Name] = true
		}
	}
	for _, fc := range ctxs {
		if !fc.vendored() {
			for _, d := range addedDefs(fc) {
				names[d.name] = true
			}
		}
	}
	idx := newUseIndex(ctxs, names)
	for _, fc := range ctxs {
		if fc.vendored() {
			continue
		}
		for _, d := range addedDefs(fc) {
			k := fmt.Sprintf("%s:%d", fc.f.Path, d.line)
			out = append(out, Symbol{
				Name: d.name, Kind: d.kind, Path: fc.f.Path, Line: d.line,
				UsedIn:    idx.usesOf(d.name, fc.f),
				Signature: sigs[k].Signature,
			})
			delete(sigs, k)
		}
		for k, s := range sigs {
			if s.Path == fc.f.Path {
				s.UsedIn = idx.usesOf(s.Name, fc.f)
				out = append(out, s)
				delete(sigs, k)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].Line < out[j].Line
	})
	return out
}
