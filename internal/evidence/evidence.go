// Package evidence builds the evidence packet of a review: every hunk and
// a context window around it become items with stable, content-addressed
// refs; diff_sha256 hashes the diff bytes and evidence_packet_sha256 the
// RFC 8785 canonical registry. It produces the review_context that binds an
// orchestration session to exactly this evidence. It reads nothing itself:
// callers pass the diff and file contents.
//
// Item contents are what reviewers receive, so they are redacted
// (internal/secrets) before they are hashed: a model prompt, `diffpal
// context --packet` and an MCP host all see the same secret-free text, and
// an item's sha256 still addresses exactly that text. The detector also
// learns every secret found in the changed files' full contents, so a hunk
// that shows a CSV row without its header, or key lines without their
// BEGIN, is redacted all the same.
package evidence

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/diffpalhq/diffpal/internal/diff"
	"github.com/diffpalhq/diffpal/internal/jcs"
	"github.com/diffpalhq/diffpal/internal/par"
	"github.com/diffpalhq/diffpal/internal/secrets"
)

// Contract limits of a review-bound session (QA-CONTRACT.md §3).
const (
	MaxRefs         = 1000
	MaxChangedFiles = 500
	MaxPathLen      = 1024
	// ContextLines is how far a context window reaches around a hunk.
	ContextLines = 10
)

// RefPattern is what every ref must match.
var RefPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/-]*$`)

// Kinds of items.
const (
	KindDiff   = "diff"
	KindSource = "source"
)

// Item is one evidence item; its JSON is a registry entry of the
// review_context.
type Item struct {
	Ref       string  `json:"evidence_ref"`
	Kind      string  `json:"kind"`
	SHA256    string  `json:"sha256"`
	Path      *string `json:"path,omitempty"`
	Revision  *string `json:"revision,omitempty"`
	StartLine *int    `json:"start_line,omitempty"`
	EndLine   *int    `json:"end_line,omitempty"`
	Locator   *string `json:"locator,omitempty"`

	content string
	file    int
}

// Content is the item's text as reviewers receive it.
func (it *Item) Content() string { return it.content }

// Lines returns the item's line range (0, 0 when it has none).
func (it *Item) Lines() (int, int) {
	if it.StartLine == nil || it.EndLine == nil {
		return 0, 0
	}
	return *it.StartLine, *it.EndLine
}

// File is one reviewed file's input to the packet.
type File struct {
	Diff *diff.File
	// Content is the new version split into lines (nil for deleted files).
	Content []string
	// Text, when not empty, is Content joined by "\n" (the caller's copy,
	// used instead of joining again).
	Text string
	// Found, when Prefound, is Prefind(Text), run by the caller ahead (a
	// review runs it on each file as the patch streams, while a core
	// would otherwise wait for git): Build does not run it again.
	Found    []secrets.Span
	Prefound bool
	// HunksFound, when HunksPrefound, is PrefindHunks(this file), run by
	// the caller ahead too.
	HunksFound    []HunkFound
	HunksPrefound bool
}

// HunkFound is one hunk's part of PrefindHunks: Raw is the hunk's text
// when Build redacts it whole ("" when it does not), and Found the
// secrets detected in Raw. Build writes Raw as it is rather than making
// the hunk's text again.
type HunkFound struct {
	Raw   string
	Found []secrets.Span
}

// hunkFound is hunk k's detection run ahead, if it was.
func hunkFound(f File, k int) (HunkFound, bool) {
	if !f.HunksPrefound || k >= len(f.HunksFound) {
		return HunkFound{}, false
	}
	return f.HunksFound[k], true
}

// Prefind is the secret detection Build runs over each file's text on its
// own, before what it learns from all of them is applied: a caller that
// has a file's Text early may run it then and set File.Found.
func Prefind(text string) []secrets.Span { return learner.Prefind(text) }

// learner is the redactor Build learns the change's secrets from: the
// default one, which knows none (LearnAndRedactFound returns a new one
// and leaves it as it is).
var learner = &secrets.Redactor{}

// Options tune Build.
type Options struct {
	Repository string
	BaseSHA    string
	HeadSHA    string // "" for a work-tree review
	// MaxItems caps the packet (default MaxRefs): above it, context windows
	// go first, then hunks merge into one item per file.
	MaxItems int
	// HashOnly keeps each item's hash and coordinates but not its text
	// (Content returns ""): for reviews where nothing reads the contents
	// (the built-in rules), whose packet would otherwise hold the change's
	// hunks and context again for the whole review.
	HashOnly bool
	// DiffSHA256, when set, is the hex SHA-256 of the reviewed diff,
	// computed as it was read (Build's rawDiff is then not hashed).
	DiffSHA256 string
}

// Packet is the evidence of one review.
type Packet struct {
	Repository   string
	BaseSHA      string
	HeadSHA      string
	DiffSHA256   string
	ChangedFiles []string
	Items        []Item
	SHA256       string
	// Coalesced says how the packet was shrunk to fit MaxItems.
	Coalesced string

	byRef map[string]int
	// byPath lists each path's items (indexes into Items, in order), for
	// RefsAt: a review asks for the refs at a line once per finding and
	// per changed symbol, and scanning every item each time made that
	// quadratic. Nil for a packet not made by Build.
	byPath map[string][]int
	red    *secrets.Redactor
}

// Redactor is the secret detector the packet's contents were redacted
// with: it knows every secret found in the changed files, for redacting
// what a review derives from them (findings, notes) the same way.
func (p *Packet) Redactor() *secrets.Redactor {
	if p == nil || p.red == nil {
		return &secrets.Redactor{}
	}
	return p.red
}

// Build creates the packet. rawDiff is the exact diff text reviewed.
func Build(rawDiff []byte, files []File, o Options) (*Packet, error) {
	if o.MaxItems <= 0 {
		o.MaxItems = MaxRefs
	}
	p := &Packet{Repository: o.Repository, BaseSHA: o.BaseSHA, HeadSHA: o.HeadSHA, DiffSHA256: o.DiffSHA256}
	if p.DiffSHA256 == "" {
		sum := sha256.Sum256(rawDiff)
		p.DiffSHA256 = hex.EncodeToString(sum[:])
	}
	sorted := append([]File(nil), files...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Diff.Path() < sorted[j].Diff.Path() })
	// Each file's content is redacted once, learning its secrets; items
	// then take their lines from the redacted content.
	var texts []string
	var withContent []int
	var found [][]secrets.Span
	var done []bool
	for i, f := range sorted {
		p.ChangedFiles = append(p.ChangedFiles, f.Diff.Path())
		if f.Content != nil {
			text := f.Text
			if text == "" {
				text = strings.Join(f.Content, "\n")
			}
			texts = append(texts, text)
			withContent = append(withContent, i)
			// Found is of Text: a text joined here was not prefound.
			ok := f.Prefound && f.Text != ""
			found, done = append(found, f.Found), append(done, ok)
		}
	}
	var redacted []string
	p.red, redacted = learner.LearnAndRedactFound(texts, found, done)
	clean := make([][]string, len(sorted))
	for k, i := range withContent {
		if redacted[k] == texts[k] {
			clean[i] = sorted[i].Content
		} else {
			clean[i] = strings.Split(redacted[k], "\n")
		}
	}
	// The finest granularity that fits MaxItems is chosen by counting
	// (building an item hashes and redacts its text): only the chosen
	// one is built.
	mode := itemsFiles
	for _, m := range []int{itemsHunksAndWindows, itemsHunks, itemsFiles} {
		n := 0
		for _, f := range sorted {
			n += countItems(f, m)
		}
		if n <= o.MaxItems {
			mode = m
			switch m {
			case itemsHunks:
				p.Coalesced = "context windows left out to stay within " + strconv.Itoa(o.MaxItems) + " items"
			case itemsFiles:
				p.Coalesced = "one item per file to stay within " + strconv.Itoa(o.MaxItems) + " items"
			}
			break
		}
	}
	n := 0
	for _, f := range sorted {
		n += countItems(f, mode)
	}
	if n > 0 {
		p.Items = make([]Item, 0, n)
	}
	// Files' items are independent once the redactor knows every
	// secret: build them on every core, keep them in file order.
	per := make([][]Item, len(sorted))
	par.For(len(sorted), 1, func(i int) { per[i] = buildItems(i, sorted[i], clean[i], mode, o, p.red) })
	for _, items := range per {
		p.Items = append(p.Items, items...)
	}
	if len(p.Items) > o.MaxItems {
		p.Coalesced = fmt.Sprintf("%d files exceed the %d-item packet limit", len(sorted), o.MaxItems)
	}
	p.byRef = make(map[string]int, len(p.Items))
	p.byPath = make(map[string][]int, len(sorted))
	for i, it := range p.Items {
		p.byRef[it.Ref] = i
		if it.Path != nil {
			p.byPath[*it.Path] = append(p.byPath[*it.Path], i)
		}
	}
	p.SHA256 = itemsSHA256(p.Items)
	return p, nil
}

// itemsSHA256 is jcs.SHA256Hex(items), the items' canonical JSON written
// directly and hashed as it is written: a large change has thousands of
// items, and encoding/json plus the canonicalizer's re-parse of them was
// ~4% of its review (TestItemsSHA256MatchesJCS).
func itemsSHA256(items []Item) string {
	h := sha256.New()
	if items == nil {
		h.Write([]byte("null"))
		return hex.EncodeToString(h.Sum(nil))
	}
	var buf bytes.Buffer
	buf.WriteByte('[')
	for i := range items {
		if i > 0 {
			buf.WriteByte(',')
		}
		writeItem(&buf, &items[i])
		if buf.Len() >= 32<<10 {
			h.Write(buf.Bytes())
			buf.Reset()
		}
	}
	buf.WriteByte(']')
	h.Write(buf.Bytes())
	return hex.EncodeToString(h.Sum(nil))
}

// writeItem writes an item's canonical JSON: its members in key order.
func writeItem(buf *bytes.Buffer, it *Item) {
	sep := byte('{')
	str := func(k, v string) {
		buf.WriteByte(sep)
		sep = ','
		buf.WriteString(k)
		jcs.WriteString(buf, v)
	}
	num := func(k string, n int) {
		buf.WriteByte(sep)
		sep = ','
		buf.WriteString(k)
		if n > -(1<<53) && n < 1<<53 {
			buf.WriteString(strconv.Itoa(n))
		} else {
			f, _ := jcs.FormatNumber(float64(n))
			buf.WriteString(f)
		}
	}
	if it.EndLine != nil {
		num(`"end_line":`, *it.EndLine)
	}
	str(`"evidence_ref":`, it.Ref)
	str(`"kind":`, it.Kind)
	if it.Locator != nil {
		str(`"locator":`, *it.Locator)
	}
	if it.Path != nil {
		str(`"path":`, *it.Path)
	}
	if it.Revision != nil {
		str(`"revision":`, *it.Revision)
	}
	str(`"sha256":`, it.SHA256)
	if it.StartLine != nil {
		num(`"start_line":`, *it.StartLine)
	}
	buf.WriteByte('}')
}

const (
	itemsHunksAndWindows = iota
	itemsHunks
	itemsFiles
)

// countItems is len(buildItems(…, mode, …)) without building them.
func countItems(f File, mode int) int {
	d := f.Diff
	if len(d.Hunks) == 0 || mode == itemsFiles {
		return 1
	}
	n := len(d.Hunks)
	if mode == itemsHunksAndWindows && f.Content != nil && d.Status != diff.Deleted {
		for _, h := range d.Hunks {
			s, e := newRange(h)
			if max(1, s-ContextLines) <= min(len(f.Content), e+ContextLines) {
				n++
			}
		}
	}
	return n
}

// buildItems makes a file's items; clean is its redacted content (same
// lines as f.Content), red the detector for what is not content.
func buildItems(idx int, f File, clean []string, mode int, o Options, red *secrets.Redactor) []Item {
	d := f.Diff
	path := d.Path()
	var rev *string
	switch {
	case d.Status == diff.Deleted && isSHA(o.BaseSHA):
		rev = ptr(o.BaseSHA)
	case d.Status != diff.Deleted && isSHA(o.HeadSHA):
		rev = ptr(o.HeadSHA)
	}
	fileRef := "f" + strconv.Itoa(idx+1)
	// An item's text is written into a sink: a builder that keeps it, or,
	// for a hash-only packet, the hash itself (no text is built at all).
	sink := func() textSink {
		if o.HashOnly {
			return newHashSink()
		}
		return &strings.Builder{}
	}
	mk := func(ref, kind string, w textSink, start, end int) Item {
		it := Item{Ref: ref, Kind: kind, Path: ptr(path), Revision: rev, file: idx}
		switch w := w.(type) {
		case *hashSink:
			it.SHA256 = w.sum()
		case *strings.Builder:
			it.content = w.String()
			s := sha256.Sum256([]byte(it.content))
			it.SHA256 = hex.EncodeToString(s[:])
		}
		if start > 0 {
			it.StartLine, it.EndLine = ptr(start), ptr(max(end, start))
		}
		return it
	}
	if len(d.Hunks) == 0 || mode == itemsFiles {
		b := sink()
		lo, hi := 0, 0
		for k, h := range d.Hunks {
			pre, ok := hunkFound(f, k)
			writeHunk(b, h, f.Content, clean, red, pre, ok)
			s, e := newRange(h)
			if lo == 0 || s < lo {
				lo = s
			}
			hi = max(hi, e)
		}
		if len(d.Hunks) == 0 {
			b.WriteString(red.Redact(d.Status + " " + path))
		}
		return []Item{mk(fileRef+":diff", KindDiff, b, lo, hi)}
	}
	var out []Item
	for k, h := range d.Hunks {
		b := sink()
		pre, ok := hunkFound(f, k)
		writeHunk(b, h, f.Content, clean, red, pre, ok)
		s, e := newRange(h)
		out = append(out, mk(fileRef+":h"+strconv.Itoa(k+1), KindDiff, b, s, e))
		if mode == itemsHunksAndWindows && f.Content != nil && d.Status != diff.Deleted {
			ws, we := max(1, s-ContextLines), min(len(f.Content), e+ContextLines)
			if ws <= we {
				w := sink()
				for i, l := range clean[ws-1 : we] {
					if i > 0 {
						w.WriteByte('\n')
					}
					w.WriteString(l)
				}
				out = append(out, mk(fileRef+":w"+strconv.Itoa(k+1), KindSource, w, ws, we))
			}
		}
	}
	return out
}

// textSink is where an item's text is written: a strings.Builder, or a
// hashSink.
type textSink interface {
	WriteString(string) (int, error)
	WriteByte(byte) error
	Grow(int)
}

// hashSink hashes what is written to it instead of keeping it. An item
// is written a line at a time, its kind byte, its text and its newline
// apart, and each small Write to the hash cost more than hashing its
// bytes (a fifth of a large review's hashing): writes are gathered in a
// pooled buffer and hashed a buffer at a time, the same bytes in the
// same order.
type hashSink struct {
	h   hash.Hash
	buf *[hashBuf]byte
	n   int
}

const hashBuf = 4 << 10

var hashBufs = sync.Pool{New: func() any { return new([hashBuf]byte) }}

func newHashSink() *hashSink {
	return &hashSink{h: sha256.New(), buf: hashBufs.Get().(*[hashBuf]byte)}
}

func (s *hashSink) flush() {
	s.h.Write(s.buf[:s.n])
	s.n = 0
}

func (s *hashSink) WriteString(v string) (int, error) {
	if s.n+len(v) > hashBuf {
		s.flush()
		if len(v) > hashBuf {
			return s.h.Write(unsafe.Slice(unsafe.StringData(v), len(v))) // Write does not keep its argument
		}
	}
	s.n += copy(s.buf[s.n:], v)
	return len(v), nil
}

func (s *hashSink) WriteByte(c byte) error {
	if s.n == hashBuf {
		s.flush()
	}
	s.buf[s.n] = c
	s.n++
	return nil
}

// sum is the hex SHA-256 of everything written; the sink is spent.
func (s *hashSink) sum() string {
	s.flush()
	hashBufs.Put(s.buf)
	s.buf = nil
	return hex.EncodeToString(s.h.Sum(nil))
}

func (s *hashSink) Grow(int) {}

// newRange is a hunk's new-side line range; a pure deletion has none, so
// it is pinned to the line after which lines were removed.
func newRange(h diff.Hunk) (int, int) {
	if h.NewLines == 0 {
		return max(h.NewStart, 1), max(h.NewStart, 1)
	}
	return h.NewStart, h.NewStart + h.NewLines - 1
}

// writeHunk writes a hunk, redacted. A hunk of added and context lines
// takes them from the redacted content (which saw the whole file); one
// with removed lines, or that does not match the content, is redacted as
// a whole (the detector still knows the content's secrets). Removed lines
// are redacted in the hunk, not run by run: an old key's body is found by
// the END line after it, which may be a context line
// (TestSecretCorpusNeverLeaves caught a per-run version leaking it). Such
// a hunk's text and detection may have been made ahead (pre, when
// prefound: its PrefindHunks entry); what red has learned since is joined
// to the detection.
func writeHunk(b textSink, h diff.Hunk, content, clean []string, red *secrets.Redactor, pre HunkFound, prefound bool) {
	if prefound {
		if pre.Raw != "" {
			b.WriteString(red.RedactFound(pre.Raw, pre.Found))
			return
		}
	} else if raw, whole := wholeHunk(h, content); whole {
		b.WriteString(red.Redact(raw))
		return
	}
	b.WriteString(red.Redact(hunkHeader(h)))
	b.WriteByte('\n')
	n := 0
	for _, l := range h.Lines {
		n += len(clean[l.NewNo-1]) + 2
	}
	b.Grow(n)
	for _, l := range h.Lines {
		b.WriteByte(l.Kind)
		b.WriteString(clean[l.NewNo-1])
		b.WriteByte('\n')
	}
}

func hunkHeader(h diff.Hunk) string {
	header := fmt.Sprintf("@@ -%d,%d +%d,%d @@", h.OldStart, h.OldLines, h.NewStart, h.NewLines)
	if h.Section != "" {
		header += " " + h.Section
	}
	return header
}

// wholeHunk is the hunk's raw text when writeHunk redacts it whole: the
// file has no content (deleted), or the hunk removes lines, or its lines
// are not the content's.
func wholeHunk(h diff.Hunk, content []string) (string, bool) {
	whole := content == nil
	for _, l := range h.Lines {
		if whole {
			break
		}
		whole = l.Kind == '-' || l.NewNo < 1 || l.NewNo > len(content) || content[l.NewNo-1] != l.Text
	}
	if !whole {
		return "", false
	}
	return rawHunk(hunkHeader(h), h), true
}

func rawHunk(header string, h diff.Hunk) string {
	var raw strings.Builder
	n := len(header) + 1
	for _, l := range h.Lines {
		n += len(l.Text) + 2
	}
	raw.Grow(n)
	raw.WriteString(header)
	raw.WriteByte('\n')
	for _, l := range h.Lines {
		raw.WriteByte(l.Kind)
		raw.WriteString(l.Text)
		raw.WriteByte('\n')
	}
	return raw.String()
}

// PrefindHunks is the secret detection Build runs over each of f's hunks
// that it redacts whole (one that removes lines, or whose lines are not
// the content's), by hunk, with the text it redacts (a zero HunkFound for
// the others): a caller that has the file early may run it then and set
// File.HunksFound.
func PrefindHunks(f File) []HunkFound {
	out := make([]HunkFound, len(f.Diff.Hunks))
	for k, h := range f.Diff.Hunks {
		if raw, whole := wholeHunk(h, f.Content); whole {
			out[k] = HunkFound{Raw: raw, Found: learner.Prefind(raw)}
		}
	}
	return out
}

// Item returns the item with ref.
func (p *Packet) Item(ref string) (*Item, bool) {
	i, ok := p.byRef[ref]
	if !ok {
		return nil, false
	}
	return &p.Items[i], true
}

// Refs returns every ref in packet order.
func (p *Packet) Refs() []string {
	out := make([]string, len(p.Items))
	for i, it := range p.Items {
		out[i] = it.Ref
	}
	return out
}

// RefsAt returns the refs of path whose line range covers [start, end]
// (diff items first), for citing evidence of a finding.
func (p *Packet) RefsAt(path string, start, end int) []string {
	var diffs, srcs []string
	visit := func(it *Item) {
		if it.Path == nil || *it.Path != path {
			return
		}
		s, e := it.Lines()
		if s == 0 || e < start || s > end {
			return
		}
		if it.Kind == KindDiff {
			diffs = append(diffs, it.Ref)
		} else {
			srcs = append(srcs, it.Ref)
		}
	}
	if p.byPath != nil {
		for _, i := range p.byPath[path] {
			visit(&p.Items[i])
		}
		return append(diffs, srcs...)
	}
	for i := range p.Items {
		visit(&p.Items[i])
	}
	return append(diffs, srcs...)
}

// ReviewContext is the review_context object of start_qa_orchestration.
type ReviewContext struct {
	Repository           string   `json:"repository"`
	BaseSHA              string   `json:"base_sha"`
	HeadSHA              string   `json:"head_sha"`
	DiffSHA256           string   `json:"diff_sha256"`
	EvidencePacketSHA256 string   `json:"evidence_packet_sha256"`
	ChangedFiles         []string `json:"changed_files"`
	EvidenceRefs         []string `json:"evidence_refs"`
	EvidenceRegistry     []Item   `json:"evidence_registry"`
}

// ErrTooLarge is returned when a change cannot be bound to a session.
var ErrTooLarge = errors.New("change too large for a review-bound session")

// ReviewContext returns the packet's review_context, or an error naming
// the contract limit a change breaks (an unbound session must be used).
func (p *Packet) ReviewContext() (*ReviewContext, error) {
	switch {
	case len(p.ChangedFiles) == 0:
		return nil, errors.New("no changed files: nothing to bind a review to")
	case len(p.ChangedFiles) > MaxChangedFiles:
		return nil, fmt.Errorf("%w: %d changed files > %d (narrow the review with paths or include/exclude globs)", ErrTooLarge, len(p.ChangedFiles), MaxChangedFiles)
	case len(p.Items) > MaxRefs:
		return nil, fmt.Errorf("%w: %d evidence items > %d", ErrTooLarge, len(p.Items), MaxRefs)
	case len(p.Repository) == 0 || len(p.Repository) > 512:
		return nil, fmt.Errorf("repository id must be 1-512 characters, got %d", len(p.Repository))
	case !isSHA(p.BaseSHA) || !isSHA(p.HeadSHA):
		return nil, errors.New("a review-bound session needs committed base and head (40 or 64 hex); commit the change or review without binding")
	}
	for _, f := range p.ChangedFiles {
		if len(f) > MaxPathLen {
			return nil, fmt.Errorf("%w: path longer than %d characters: %.60s…", ErrTooLarge, MaxPathLen, f)
		}
	}
	for _, it := range p.Items {
		if len(it.Ref) > 128 || !RefPattern.MatchString(it.Ref) {
			return nil, fmt.Errorf("internal: bad evidence ref %q", it.Ref)
		}
	}
	return &ReviewContext{
		Repository: p.Repository, BaseSHA: p.BaseSHA, HeadSHA: p.HeadSHA,
		DiffSHA256: p.DiffSHA256, EvidencePacketSHA256: p.SHA256,
		ChangedFiles: p.ChangedFiles, EvidenceRefs: p.Refs(), EvidenceRegistry: p.Items,
	}, nil
}

func isSHA(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

func ptr[T any](v T) *T { return &v }
