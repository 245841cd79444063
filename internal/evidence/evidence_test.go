package evidence

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/diffpalhq/diffpal/internal/diff"
	"github.com/diffpalhq/diffpal/internal/jcs"
)

const sha1 = "1111111111111111111111111111111111111111"
const sha2 = "2222222222222222222222222222222222222222"

func fileWithHunks(path string, n int) File {
	f := &diff.File{NewPath: path, OldPath: path, Status: diff.Modified}
	var content []string
	for i := 0; i < n*30; i++ {
		content = append(content, fmt.Sprintf("line %d", i+1))
	}
	for k := 0; k < n; k++ {
		start := k*30 + 5
		f.Hunks = append(f.Hunks, diff.Hunk{OldStart: start, OldLines: 1, NewStart: start, NewLines: 2,
			Lines: []diff.Line{{Kind: ' ', Text: "ctx", OldNo: start, NewNo: start}, {Kind: '+', Text: "new", NewNo: start + 1}}})
	}
	return File{Diff: f, Content: content}
}

func TestBuildDeterministicAndAddressed(t *testing.T) {
	files := []File{fileWithHunks("b.go", 2), fileWithHunks("a.go", 1)}
	p, err := Build([]byte("raw"), files, Options{Repository: "r", BaseSHA: sha1, HeadSHA: sha2})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(p.Refs(), " "); got != "f1:h1 f1:w1 f2:h1 f2:w1 f2:h2 f2:w2" {
		t.Errorf("refs = %s", got)
	}
	sum := sha256.Sum256([]byte("raw"))
	if p.DiffSHA256 != hex.EncodeToString(sum[:]) {
		t.Error("diff_sha256 is not the hash of the diff bytes")
	}
	for _, it := range p.Items {
		s := sha256.Sum256([]byte(it.Content()))
		if it.SHA256 != hex.EncodeToString(s[:]) {
			t.Errorf("%s: sha256 does not address its content", it.Ref)
		}
	}
	p2, _ := Build([]byte("raw"), []File{files[1], files[0]}, Options{Repository: "r", BaseSHA: sha1, HeadSHA: sha2})
	if p2.SHA256 != p.SHA256 {
		t.Error("packet hash depends on input order")
	}
	files[0].Content[4] = "changed context"
	p3, _ := Build([]byte("raw"), files, Options{Repository: "r", BaseSHA: sha1, HeadSHA: sha2})
	if p3.SHA256 == p.SHA256 {
		t.Error("packet hash ignores content")
	}
	if refs := p.RefsAt("b.go", 36, 36); strings.Join(refs, " ") != "f2:h2 f2:w2" {
		t.Errorf("RefsAt = %v", refs)
	}
	rc, err := p.ReviewContext()
	if err != nil || len(rc.EvidenceRegistry) != 6 || rc.EvidencePacketSHA256 != p.SHA256 {
		t.Errorf("review context: %v %+v", err, rc)
	}
}

func TestCoalesceToLimits(t *testing.T) {
	files := []File{fileWithHunks("a.go", 6), fileWithHunks("b.go", 6)}
	p, _ := Build(nil, files, Options{Repository: "r", BaseSHA: sha1, HeadSHA: sha2, MaxItems: 12})
	if len(p.Items) != 12 || !strings.Contains(p.Coalesced, "context windows") {
		t.Errorf("items = %d, coalesced = %q", len(p.Items), p.Coalesced)
	}
	p, _ = Build(nil, files, Options{Repository: "r", BaseSHA: sha1, HeadSHA: sha2, MaxItems: 5})
	if len(p.Items) != 2 || p.Items[0].Ref != "f1:diff" || !strings.Contains(p.Coalesced, "one item per file") {
		t.Errorf("items = %v, coalesced = %q", p.Refs(), p.Coalesced)
	}
	if s, e := p.Items[0].Lines(); s != 5 || e != 156 {
		t.Errorf("file item lines = %d-%d", s, e)
	}
	var many []File
	for i := 0; i < MaxChangedFiles+1; i++ {
		many = append(many, fileWithHunks(fmt.Sprintf("f%03d.go", i), 1))
	}
	p, _ = Build(nil, many, Options{Repository: "r", BaseSHA: sha1, HeadSHA: sha2})
	if _, err := p.ReviewContext(); err == nil || !strings.Contains(err.Error(), "501 changed files > 500") {
		t.Errorf("want a too-large error, got %v", err)
	}
	p, _ = Build(nil, files, Options{Repository: "r", BaseSHA: sha1})
	if _, err := p.ReviewContext(); err == nil || !strings.Contains(err.Error(), "committed base and head") {
		t.Errorf("work-tree packet: %v", err)
	}
}

// TestCountItemsMatchesBuild: the granularity is chosen by counting, so
// the count must be what building gives, in every mode and shape (no
// hunks, a deletion, a file without content, a window clipped at line 1).
func TestCountItemsMatchesBuild(t *testing.T) {
	deleted := fileWithHunks("d.go", 2)
	deleted.Diff.Status = diff.Deleted
	noContent := fileWithHunks("n.go", 3)
	noContent.Content = nil
	empty := File{Diff: &diff.File{NewPath: "e.bin", OldPath: "e.bin", Status: diff.Modified, Binary: true}}
	pureDel := File{Diff: &diff.File{NewPath: "p.go", OldPath: "p.go", Status: diff.Modified,
		Hunks: []diff.Hunk{{OldStart: 1, OldLines: 1, NewStart: 0, NewLines: 0, Lines: []diff.Line{{Kind: '-', Text: "x", OldNo: 1}}}}}, Content: []string{}}
	for _, f := range []File{fileWithHunks("a.go", 1), fileWithHunks("b.go", 4), deleted, noContent, empty, pureDel} {
		for _, mode := range []int{itemsHunksAndWindows, itemsHunks, itemsFiles} {
			clean := f.Content
			if got, want := countItems(f, mode), len(buildItems(0, f, clean, mode, Options{}, nil)); got != want {
				t.Errorf("%s mode %d: countItems = %d, buildItems made %d", f.Diff.Path(), mode, got, want)
			}
		}
	}
}

// TestHashOnly: a hash-only packet has the same items, hashes and packet
// hash as a full one, without the contents; a file's Text stands for its
// joined Content.
func TestHashOnly(t *testing.T) {
	files := []File{fileWithHunks("b.go", 2), fileWithHunks("a.go", 1)}
	full, err := Build([]byte("raw"), files, Options{Repository: "r", BaseSHA: sha1, HeadSHA: sha2})
	if err != nil {
		t.Fatal(err)
	}
	withText := append([]File(nil), files...)
	for i := range withText {
		withText[i].Text = strings.Join(withText[i].Content, "\n")
	}
	lean, err := Build([]byte("raw"), withText, Options{Repository: "r", BaseSHA: sha1, HeadSHA: sha2, HashOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if lean.SHA256 != full.SHA256 || len(lean.Items) != len(full.Items) || len(full.Items) == 0 {
		t.Fatalf("hash-only packet %s (%d items), full %s (%d items)", lean.SHA256, len(lean.Items), full.SHA256, len(full.Items))
	}
	for i, it := range lean.Items {
		if it.Ref != full.Items[i].Ref || it.SHA256 != full.Items[i].SHA256 {
			t.Errorf("item %d: %s %s, want %s %s", i, it.Ref, it.SHA256, full.Items[i].Ref, full.Items[i].SHA256)
		}
		if it.Content() != "" || full.Items[i].Content() == "" {
			t.Errorf("%s: hash-only content %q, full content %q", it.Ref, it.Content(), full.Items[i].Content())
		}
	}
}

// TestHunkRemovedLinesRedacted: a hunk with removed lines reads as the
// whole hunk redacted at once, and neither the added line's secret nor
// the removed line's (which the new content does not have) is in it.
func TestHunkRemovedLinesRedacted(t *testing.T) {
	added := "ghp_" + strings.Repeat("aB3dE5fG7h", 3) + "k9L2mN"
	removed := "ghp_" + strings.Repeat("Zy8Xw6Vu4t", 3) + "s2Q4rP"
	content := []string{"package p", "", "func f() {", `	token := "` + added + `"`, "	use(token)", "}"}
	lines := []diff.Line{
		{Kind: ' ', Text: content[2], OldNo: 3, NewNo: 3},
		{Kind: '-', Text: `	old := "` + removed + `"`, OldNo: 4},
		{Kind: '-', Text: "	use(old)", OldNo: 5},
		{Kind: '+', Text: content[3], NewNo: 4},
		{Kind: '+', Text: content[4], NewNo: 5},
		{Kind: ' ', Text: content[5], OldNo: 6, NewNo: 6},
	}
	f := File{Diff: &diff.File{NewPath: "p.go", OldPath: "p.go", Status: diff.Modified,
		Hunks: []diff.Hunk{{OldStart: 3, OldLines: 4, NewStart: 3, NewLines: 4, Lines: lines}}}, Content: content}
	p, err := Build([]byte("raw"), []File{f}, Options{Repository: "r", BaseSHA: sha1, HeadSHA: sha2})
	if err != nil {
		t.Fatal(err)
	}
	it, ok := p.Item("f1:h1")
	if !ok {
		t.Fatalf("no hunk item in %v", p.Refs())
	}
	got := it.Content()
	for _, s := range []string{added, removed} {
		if strings.Contains(got, s) {
			t.Errorf("secret %s left in the hunk:\n%s", s, got)
		}
	}
	var raw strings.Builder
	raw.WriteString("@@ -3,4 +3,4 @@\n")
	for _, l := range lines {
		raw.WriteByte(l.Kind)
		raw.WriteString(l.Text)
		raw.WriteByte('\n')
	}
	if want := p.Redactor().Redact(raw.String()); got != want {
		t.Errorf("hunk item:\n%s\nthe hunk redacted whole:\n%s", got, want)
	}
}

// TestItemsSHA256MatchesJCS: the items' hash written directly is the hash
// of their canonical JSON (jcs.SHA256Hex), over items with every optional
// member present or not and strings that need escaping, invalid UTF-8,
// characters outside the BMP and HTML-sensitive bytes.
func TestItemsSHA256MatchesJCS(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	pieces := []string{"a", "src/main.go", `"`, `\`, "\n", "\t", "\x00", "\x1f", "\x7f", "<>&", "\u2028", "é", "😀", "\xff", "\xc3", "/", " ", "f1:h1"}
	str := func() string {
		var b strings.Builder
		for k := rng.IntN(6); k > 0; k-- {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		return b.String()
	}
	nums := []int{0, 1, -1, 42, 1<<53 - 1, 1 << 53, -(1 << 53), 1 << 60}
	for _, items := range [][]Item{nil, {}} {
		want, err := jcs.SHA256Hex(items)
		if err != nil || itemsSHA256(items) != want {
			t.Fatalf("%#v: %s, want %s (%v)", items, itemsSHA256(items), want, err)
		}
	}
	for n := 0; n < 500; n++ {
		items := make([]Item, 1+rng.IntN(5))
		for i := range items {
			it := Item{Ref: str(), Kind: str(), SHA256: str()}
			if rng.IntN(2) == 0 {
				it.Path = ptr(str())
			}
			if rng.IntN(2) == 0 {
				it.Revision = ptr(str())
			}
			if rng.IntN(2) == 0 {
				it.Locator = ptr(str())
			}
			if rng.IntN(2) == 0 {
				it.StartLine = ptr(nums[rng.IntN(len(nums))])
			}
			if rng.IntN(2) == 0 {
				it.EndLine = ptr(nums[rng.IntN(len(nums))])
			}
			items[i] = it
		}
		want, err := jcs.SHA256Hex(items)
		if err != nil {
			t.Fatal(err)
		}
		if got := itemsSHA256(items); got != want {
			data, _ := jcs.Marshal(items)
			t.Fatalf("items %#v:\nhash %s, want %s (canonical %s)", items, got, want, data)
		}
	}
}

// refsAtScan is RefsAt as it was, a scan of every item (the oracle).
func (p *Packet) refsAtScan(path string, start, end int) []string {
	var diffs, srcs []string
	for _, it := range p.Items {
		if it.Path == nil || *it.Path != path {
			continue
		}
		s, e := it.Lines()
		if s == 0 || e < start || s > end {
			continue
		}
		if it.Kind == KindDiff {
			diffs = append(diffs, it.Ref)
		} else {
			srcs = append(srcs, it.Ref)
		}
	}
	return append(diffs, srcs...)
}

// TestRefsAtIndexed: RefsAt from the packet's path index answers as the
// scan of every item does, for every path and line of a packet.
func TestRefsAtIndexed(t *testing.T) {
	files := []File{fileWithHunks("b.go", 3), fileWithHunks("a.go", 1), fileWithHunks("c/d.go", 5)}
	p, err := Build([]byte("raw"), files, Options{Repository: "r", BaseSHA: sha1, HeadSHA: sha2})
	if err != nil {
		t.Fatal(err)
	}
	if p.byPath == nil {
		t.Fatal("no path index")
	}
	n := 0
	for _, path := range []string{"a.go", "b.go", "c/d.go", "none.go"} {
		for start := 0; start <= 160; start += 3 {
			for _, end := range []int{start, start + 7, start + 40} {
				got, want := p.RefsAt(path, start, end), p.refsAtScan(path, start, end)
				if !slices.Equal(got, want) {
					t.Fatalf("RefsAt(%s, %d, %d) = %v, scan gives %v", path, start, end, got, want)
				}
				n += len(got)
			}
		}
	}
	if n == 0 {
		t.Fatal("no refs found at all")
	}
}

// TestRemovedKeyBodyRedacted: an old key's last body lines, removed,
// between context body lines and a context END line, with the BEGIN
// outside the hunk, are not in the hunk item (redacting the removed lines
// apart from the lines around them leaked the short last one).
func TestRemovedKeyBodyRedacted(t *testing.T) {
	b64 := func(seed string, n int) string {
		const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
		var out []byte
		h := sha256.Sum256([]byte(seed))
		for len(out) < n {
			for _, c := range h {
				out = append(out, chars[int(c)%64])
			}
			h = sha256.Sum256(h[:])
		}
		return string(out[:n])
	}
	var body []string
	for i := 0; i < 6; i++ {
		body = append(body, b64(fmt.Sprint("body", i), 64))
	}
	oldLast := []string{b64("old-a", 64), "Z" + b64("old-b", 19) + "=="}
	newLast := []string{b64("new-a", 64), "Q" + b64("new-b", 19) + "=="}
	content := append([]string{"-----BEGIN EC PRIVATE KEY-----"}, body...)
	content = append(content, newLast...)
	content = append(content, "-----END EC PRIVATE KEY-----")
	var lines []diff.Line
	for i := 4; i <= 6; i++ { // context: the body's lines 4-6 (file lines 5-7)
		lines = append(lines, diff.Line{Kind: ' ', Text: content[i], OldNo: i + 1, NewNo: i + 1})
	}
	for i, l := range oldLast {
		lines = append(lines, diff.Line{Kind: '-', Text: l, OldNo: 8 + i})
	}
	for i, l := range newLast {
		lines = append(lines, diff.Line{Kind: '+', Text: l, NewNo: 8 + i})
	}
	lines = append(lines, diff.Line{Kind: ' ', Text: content[9], OldNo: 10, NewNo: 10})
	f := File{Diff: &diff.File{NewPath: "tls/client.key", OldPath: "tls/client.key", Status: diff.Modified,
		Hunks: []diff.Hunk{{OldStart: 5, OldLines: 6, NewStart: 5, NewLines: 6, Section: body[3], Lines: lines}}}, Content: content}
	p, err := Build([]byte("raw"), []File{f}, Options{Repository: "r", BaseSHA: sha1, HeadSHA: sha2})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range p.Items {
		for _, secret := range append(append([]string{}, oldLast...), newLast...) {
			if strings.Contains(it.Content(), secret[1:18]) {
				t.Errorf("%s holds key body %q:\n%s", it.Ref, secret, it.Content())
			}
		}
	}
}

// TestHashSinkBuffered: the buffered sink hashes exactly what was written,
// across buffer boundaries and with writes larger than its buffer.
func TestHashSinkBuffered(t *testing.T) {
	for _, sizes := range [][]int{{0}, {1, 1, 1}, {hashBuf - 1, 1, 1}, {hashBuf, 0, hashBuf}, {3, hashBuf + 5, 7}, {100, 2*hashBuf + 1, hashBuf - 100}} {
		s := newHashSink()
		var all strings.Builder
		for i, n := range sizes {
			v := strings.Repeat(string(rune('a'+i%26)), n)
			s.WriteString(v)
			all.WriteString(v)
			s.WriteByte('\n')
			all.WriteByte('\n')
		}
		want := sha256.Sum256([]byte(all.String()))
		if got := s.sum(); got != hex.EncodeToString(want[:]) {
			t.Errorf("sizes %v: sum %s, want %x", sizes, got, want)
		}
	}
}

// TestPrefoundSamePacket: a packet whose files' detection was run ahead
// (File.Found from Prefind, for some files and not others) is the packet
// Build makes finding them itself: the same items, contents, hash and
// learned secrets, a secret found in one file redacted in another.
func TestPrefoundSamePacket(t *testing.T) {
	token := "ghp_" + strings.Repeat("aB3dE5fG7h", 3) + "k9L2mN"
	texts := []string{
		"package a\n\nconst tok = \"" + token + "\"\n",
		"package b\n\n// copied: " + token + "\nfunc f() {}\n",
		"user,api_secret\nann,Zq8wX2vB7nM4kL9pT3rY\n",
		"package d\n\nfunc g() int { return 1 }\n",
	}
	var files []File
	for i, text := range texts {
		content := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
		var lines []diff.Line
		for n, l := range content {
			lines = append(lines, diff.Line{Kind: '+', Text: l, NewNo: n + 1})
		}
		path := fmt.Sprintf("f%d.txt", i)
		files = append(files, File{Diff: &diff.File{NewPath: path, OldPath: path, Status: diff.Added,
			Hunks: []diff.Hunk{{NewStart: 1, NewLines: len(content), Lines: lines}}},
			Content: content, Text: strings.Join(content, "\n")})
	}
	// A modified file whose hunks remove lines, one with an old secret
	// and one with a token learned from another file: they are redacted
	// whole, and their detection can be run ahead too.
	oldKey := "sk_live_" + strings.Repeat("Qw3rTy7u", 3)
	cell := "Zq8wX2vB7nM4kL9pT3rY" // a secret only under its CSV header (texts[2])
	mod := []string{"package m", "", "func h() {", "	use(1)", "}", "var v = 2"}
	mf := File{Diff: &diff.File{NewPath: "m.go", OldPath: "m.go", Status: diff.Modified, Hunks: []diff.Hunk{
		{OldStart: 3, OldLines: 3, NewStart: 3, NewLines: 2, Lines: []diff.Line{
			{Kind: ' ', Text: mod[2], OldNo: 3, NewNo: 3},
			{Kind: '-', Text: `	key := "` + oldKey + `"`, OldNo: 4},
			{Kind: '+', Text: mod[3], NewNo: 4},
			{Kind: ' ', Text: mod[4], OldNo: 5, NewNo: 5}}},
		{OldStart: 6, OldLines: 1, NewStart: 6, NewLines: 1, Lines: []diff.Line{
			{Kind: '-', Text: "var v = 1 // " + cell, OldNo: 6},
			{Kind: '+', Text: mod[5], NewNo: 6}}},
	}}, Content: mod, Text: strings.Join(mod, "\n")}
	files = append(files, mf)
	want, err := Build([]byte("raw"), files, Options{Repository: "r", BaseSHA: sha1, HeadSHA: sha2})
	if err != nil {
		t.Fatal(err)
	}
	if hs := PrefindHunks(mf); len(hs) != 2 || len(hs[0].Found) == 0 || len(hs[1].Found) != 0 ||
		hs[0].Raw != rawHunk(hunkHeader(mf.Diff.Hunks[0]), mf.Diff.Hunks[0]) || hs[1].Raw == "" {
		t.Fatalf("PrefindHunks: %v, want the old key in the first hunk and nothing learned-only in the second", hs)
	}
	for mask := 1; mask < 1<<(2*len(files)); mask <<= 1 {
		mask := mask | (mask * 5) // a spread of files and hunks
		pre := slices.Clone(files)
		for i := range pre {
			if mask&(1<<i) != 0 {
				pre[i].Found, pre[i].Prefound = Prefind(pre[i].Text), true
			}
			if mask&(1<<(len(files)+i)) != 0 {
				pre[i].HunksFound, pre[i].HunksPrefound = PrefindHunks(pre[i]), true
			}
		}
		got, err := Build([]byte("raw"), pre, Options{Repository: "r", BaseSHA: sha1, HeadSHA: sha2})
		if err != nil {
			t.Fatal(err)
		}
		if got.SHA256 != want.SHA256 || got.Redactor().Known() != want.Redactor().Known() || len(got.Items) != len(want.Items) {
			t.Fatalf("mask %b: packet %s with %d secrets learned, want %s with %d", mask, got.SHA256, got.Redactor().Known(), want.SHA256, want.Redactor().Known())
		}
		for i := range got.Items {
			if got.Items[i].Content() != want.Items[i].Content() {
				t.Errorf("mask %b: item %s:\n%s\nwant\n%s", mask, got.Items[i].Ref, got.Items[i].Content(), want.Items[i].Content())
			}
		}
	}
	if want.Redactor().Known() == 0 {
		t.Fatal("no secret learned: the test tests nothing")
	}
	for _, it := range want.Items {
		if strings.Contains(it.Content(), token) || strings.Contains(it.Content(), oldKey) || strings.Contains(it.Content(), cell) {
			t.Errorf("%s holds a secret:\n%s", it.Ref, it.Content())
		}
	}
	// A wrong Found is taken as given: Build does not detect again.
	pre := slices.Clone(files)
	pre[0].Found, pre[0].Prefound = nil, true
	pre[1].Found, pre[1].Prefound = nil, true
	got, err := Build([]byte("raw"), pre, Options{Repository: "r", BaseSHA: sha1, HeadSHA: sha2})
	if err != nil {
		t.Fatal(err)
	}
	if got.SHA256 == want.SHA256 {
		t.Error("a packet given no secrets for the token's files hashed as if it had found them: Found is not used")
	}
}
