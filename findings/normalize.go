package findings

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Policy decides which findings block.
type Policy struct {
	// BlockOn is the lowest blocking severity; empty means high.
	BlockOn Severity
	// MinConfidence, when set, additionally requires confidence >= it.
	MinConfidence *float64
}

// DefaultBlockOn is the threshold when none is configured.
const DefaultBlockOn = High

func (p Policy) blockOn() Severity {
	if p.BlockOn == "" {
		return DefaultBlockOn
	}
	return p.BlockOn
}

// Blocks reports whether a finding meets the policy: severity rank at or
// above the threshold's and, when a minimum confidence is set, confidence
// at or above it.
func (p Policy) Blocks(f *Finding) bool {
	r := f.Severity.Rank()
	if r == 0 || r < p.blockOn().Rank() {
		return false
	}
	return p.MinConfidence == nil || f.Confidence >= *p.MinConfidence
}

// Options control Normalize and WriteFile.
type Options struct {
	// Repo enters DiffPal's id recipe; default the bundle's repo, else
	// "local" (DiffPal's default).
	Repo string
	// Policy computes every finding's blocking flag.
	Policy Policy
}

// FingerprintVersion is the recipe version of StableID.
const FingerprintVersion = "fp1"

// Normalize prepares a bundle for writing, in place: version (v3 unless
// set), per-finding review_id, lower-case severity, changed_span and
// path/start_line/end_line back-filled from each other, DiffPal-compatible
// ids, stable ids, blocking flags and a deterministic order. It then
// validates the result and returns every problem (Problems) if any remain.
func Normalize(b *Bundle, opts Options) error {
	if b.Version == "" {
		b.Version = CurrentVersion
	}
	if b.Findings == nil {
		b.Findings = []Finding{}
	}
	repo := cmp.Or(opts.Repo, b.Repo, "local")
	if opts.Repo != "" || b.Repo != "" {
		b.Repo = repo
	}
	if bo := opts.Policy.BlockOn; bo != "" && bo.Rank() == 0 {
		if s, err := ParseSeverity(string(bo)); err == nil {
			opts.Policy.BlockOn = s
		} else {
			return Problems{{Pointer: "/gate/block_on", Reason: err.Error()}}
		}
	}
	for i := range b.Findings {
		f := &b.Findings[i]
		normalizeFinding(f, b)
		f.ID = ID(repo, b.HeadSHA, f)
	}
	slices.SortStableFunc(b.Findings, compareFindings)
	assignStableIDs(b.Findings)
	for i := range b.Findings {
		f := &b.Findings[i]
		f.Blocking = opts.Policy.Blocks(f)
	}
	if len(b.Findings) > 0 {
		b.FingerprintVersion = FingerprintVersion
	}
	b.Gate = &GatePolicy{BlockOn: opts.Policy.blockOn(), MinConfidence: opts.Policy.MinConfidence}
	if ps := Validate(b); len(ps) > 0 {
		return ps
	}
	return nil
}

func normalizeFinding(f *Finding, b *Bundle) {
	// From here on the finding is a Go value: zero means missing.
	f.seen, f.bad = 0, 0
	if f.ReviewID == "" {
		f.ReviewID = b.ReviewID
	}
	if s, err := ParseSeverity(string(f.Severity)); err == nil {
		f.Severity = s
	}
	if cs := f.ChangedSpan; cs != nil {
		cs.seen, cs.bad = 0, 0
		if cs.Path == "" && cs.StartLine > 0 && cs.EndLine > 0 {
			cs.Path = f.Path
		}
		if f.Path == "" {
			f.Path = cs.Path
		}
		if f.StartLine == 0 {
			f.StartLine = cs.StartLine
		}
		if f.EndLine == 0 {
			f.EndLine = cs.EndLine
		}
		if b.Version == V4 && cs.Side == "" {
			cs.Side = "RIGHT"
		}
	} else if f.Path != "" && f.StartLine > 0 && f.EndLine > 0 {
		f.ChangedSpan = &Span{Path: f.Path, StartLine: f.StartLine, EndLine: f.EndLine}
		if b.Version == V4 {
			f.ChangedSpan.Side = "RIGHT"
		}
	}
	if f.SupportingSpan != nil {
		f.SupportingSpan.seen, f.SupportingSpan.bad = 0, 0
	}
	if f.Evidence != nil {
		f.Evidence.seen, f.Evidence.bad = 0, 0
	}
	if f.Impact != nil {
		f.Impact.seen, f.Impact.bad = 0, 0
	}
}

// compareFindings orders by location, then most severe first, then
// category and id, so output never depends on provider or map order.
func compareFindings(a, b Finding) int { return compareKeys(keyOf(&a), keyOf(&b)) }

// sortKey is what compareFindings compares of a finding: kept apart from
// the finding, it orders findings that are not in memory (the streaming
// Normalize of NormalizeFile, FillIDs' stream).
type sortKey struct {
	path, category, id string
	start, end, rank   int
}

func keyOf(f *Finding) sortKey {
	return sortKey{path: f.Path, category: f.Category, id: f.ID, start: f.StartLine, end: f.EndLine, rank: f.Severity.Rank()}
}

func compareKeys(a, b sortKey) int {
	return cmp.Or(
		strings.Compare(a.path, b.path),
		cmp.Compare(a.start, b.start),
		cmp.Compare(a.end, b.end),
		cmp.Compare(b.rank, a.rank),
		strings.Compare(a.category, b.category),
		strings.Compare(a.id, b.id),
	)
}

// ID is DiffPal's deterministic finding id: the hex SHA-256 of the compact
// encoding/json serialization (HTML-escaped) of a fixed-order object of
// platform, repo, review id, head SHA, path, lines, category, normalized
// message, evidence hash and, for LEFT-side findings only, the side. Using
// the same recipe means DiffPal and diffpal agree on ids for the same
// finding, repo, review and head.
func ID(repo, headSHA string, f *Finding) string {
	evSum := sha256.Sum256([]byte(f.Evidence.Text()))
	buf := make([]byte, 0, 256+len(f.Message))
	buf = append(buf, `{"platform":"diffpal","repo":`...)
	buf = appendGoJSONString(buf, repo)
	buf = append(buf, `,"review_id":`...)
	buf = appendGoJSONString(buf, f.ReviewID)
	buf = append(buf, `,"head_sha":`...)
	buf = appendGoJSONString(buf, headSHA)
	buf = append(buf, `,"path":`...)
	buf = appendGoJSONString(buf, strings.TrimSpace(f.Path))
	buf = append(buf, `,"line_start":`...)
	buf = strconv.AppendInt(buf, int64(f.StartLine), 10)
	buf = append(buf, `,"line_end":`...)
	buf = strconv.AppendInt(buf, int64(f.EndLine), 10)
	buf = append(buf, `,"category":`...)
	buf = appendGoJSONString(buf, strings.ToLower(strings.TrimSpace(f.Category)))
	buf = append(buf, `,"message_norm":`...)
	buf = appendGoJSONString(buf, strings.ToLower(strings.TrimSpace(f.Message)))
	buf = append(buf, `,"evidence":"`...)
	buf = hex.AppendEncode(buf, evSum[:])
	buf = append(buf, '"')
	if f.ChangedSpan != nil && f.ChangedSpan.Side == "LEFT" {
		buf = append(buf, `,"side":"LEFT"`...)
	}
	buf = append(buf, '}')
	sum := sha256.Sum256(buf)
	return hex.EncodeToString(sum[:])
}

// appendGoJSONString appends s quoted exactly as encoding/json.Marshal
// quotes it (HTML-safe escaping, \u2028/\u2029, invalid UTF-8 as \ufffd),
// which the id recipe depends on; a test checks it against Marshal.
func appendGoJSONString(dst []byte, s string) []byte {
	const hexd = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '\\', '"':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexd[c>>4], hexd[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexd[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// StableID is diffpal's content fingerprint, recipe fp1: the first 32 hex
// digits of SHA-256 over "fp1", the lower-cased trimmed category, the
// repository-relative path, the anchor with all white space removed and
// lower-cased, and the occurrence index of that (category, path, anchor)
// within the bundle, separated by NUL bytes. It holds no SHA, line number or
// free-form message, so it survives pushes, line shifts and re-worded
// model output; it keys baselines, suppressions and SARIF
// partialFingerprints.
func StableID(category, path, anchor string, occurrence int) string {
	h := sha256.New()
	h.Write([]byte(FingerprintVersion + "\x00"))
	h.Write([]byte(strings.ToLower(strings.TrimSpace(category))))
	h.Write([]byte{0})
	h.Write([]byte(strings.TrimSpace(path)))
	h.Write([]byte{0})
	h.Write([]byte(normalizeAnchor(anchor)))
	h.Write([]byte{0})
	h.Write([]byte(strconv.Itoa(occurrence)))
	sum := h.Sum(nil)
	return hex.EncodeToString(sum[:16])
}

// StableIDKey is the identity StableID hashes apart from the occurrence
// index: producers that number occurrences themselves must group by it,
// or two findings differing only in white space would share an id.
func StableIDKey(category, path, anchor string) string {
	return strings.ToLower(strings.TrimSpace(category)) + "\x00" + strings.TrimSpace(path) + "\x00" + normalizeAnchor(anchor)
}

func normalizeAnchor(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return unicode.ToLower(r)
	}, s)
}

// anchorOf is the text a finding's stable id is computed from when the
// producer did not set one: the evidence anchor, else the title.
func anchorOf(f *Finding) string {
	if f.Evidence != nil && strings.TrimSpace(f.Evidence.Anchor) != "" {
		return f.Evidence.Anchor
	}
	return f.Title
}

// assignStableIDs fills missing stable ids; findings must already be in
// their final order so occurrence indexes are deterministic.
func assignStableIDs(fs []Finding) {
	var o occurrences
	for i := range fs {
		o.fill(&fs[i])
	}
}

// occurrences numbers, in the findings' final order, the findings without
// a stable id that share a (category, path, anchor), and fills their
// stable ids (assignStableIDs one finding at a time).
type occurrences struct{ seen map[string]int }

func (o *occurrences) fill(f *Finding) {
	if f.StableID != "" {
		return
	}
	if o.seen == nil {
		o.seen = map[string]int{}
	}
	k := StableIDKey(f.Category, f.Path, anchorOf(f))
	n := o.seen[k]
	o.seen[k] = n + 1
	f.StableID = StableID(f.Category, f.Path, anchorOf(f), n)
}

// FillIDs sets, in place, every finding's missing id and stable_id to what
// Normalize would compute for it, without reordering the findings or
// changing any other field (fingerprint_version aside: it is set to fp1
// when a stable id is computed and the bundle names no recipe). The id
// follows DiffPal's recipe (ID) with repo, else the bundle's repo, else
// "local", as Normalize does; the stable id follows recipe fp1 (StableID),
// with occurrence indexes counted in Normalize's order. Ids already
// present are kept. It is for consumers of bundles as written by others,
// such as the seed's minimal bundle, which carry neither: SARIF needs a
// stable id for every result's partialFingerprints. It is IDFiller over
// the bundle's findings.
func FillIDs(b *Bundle, repo string) {
	if !MissingIDs(b.Findings) {
		return
	}
	x := NewIDFiller(b, repo)
	for i := range b.Findings {
		x.Add(&b.Findings[i])
	}
	x.Done()
	computed := false
	for i := range b.Findings {
		computed = x.Fill(&b.Findings[i]) || computed
	}
	if computed && b.FingerprintVersion == "" {
		b.FingerprintVersion = FingerprintVersion
	}
}

// MissingIDs reports whether a finding lacks an id or a stable id.
func MissingIDs(fs []Finding) bool {
	for i := range fs {
		if fs[i].ID == "" || fs[i].StableID == "" {
			return true
		}
	}
	return false
}

// IDFiller is FillIDs for findings that are not in memory together: Add
// sees every finding of the bundle in order (the first pass), Done orders
// what it kept, and Fill then sees the same findings in the same order
// again (the second pass) and fills each one's missing ids. It keeps, per
// finding without a stable id, its place in Normalize's order (path,
// category, computed id, lines, severity and the stable id's key); nothing
// for the others.
type IDFiller struct {
	hdr              *Bundle
	repo             string
	recs             []idRec
	added, filled, r int
	done             bool
}

type idRec struct {
	key sortKey
	ord int
	sid string // the StableIDKey
	occ int
}

// NewIDFiller fills ids of findings of the bundle whose header is hdr
// (its findings are not read); repo as FillIDs'.
func NewIDFiller(hdr *Bundle, repo string) *IDFiller {
	return &IDFiller{hdr: hdr, repo: cmp.Or(repo, hdr.Repo, "local")}
}

// Add records f (the next finding in order), which it does not keep.
func (x *IDFiller) Add(f *Finding) {
	ord := x.added
	x.added++
	if f.StableID != "" {
		return
	}
	v := idView(f, x.hdr)
	v.ID = ID(x.repo, x.hdr.HeadSHA, &v)
	k := keyOf(&v)
	k.path, k.category = strings.Clone(k.path), strings.Clone(k.category)
	x.recs = append(x.recs, idRec{key: k, ord: ord, sid: StableIDKey(v.Category, v.Path, anchorOf(&v))})
}

// Done numbers the occurrences; call it between the passes.
func (x *IDFiller) Done() {
	x.done = true
	recs := x.recs
	slices.SortFunc(recs, func(a, b idRec) int { return cmp.Or(compareKeys(a.key, b.key), cmp.Compare(a.ord, b.ord)) })
	seen := map[string]int{}
	for i := range recs {
		recs[i].occ = seen[recs[i].sid]
		seen[recs[i].sid]++
	}
	slices.SortFunc(recs, func(a, b idRec) int { return cmp.Compare(a.ord, b.ord) })
}

// Fill sets f's missing id and stable id (f is the next finding in the
// order Add saw them); it reports whether it computed a stable id.
func (x *IDFiller) Fill(f *Finding) bool {
	if !x.done {
		panic("findings: IDFiller.Fill before Done")
	}
	ord := x.filled
	x.filled++
	if f.ID != "" && f.StableID != "" {
		return false
	}
	v := idView(f, x.hdr)
	if f.ID == "" {
		f.ID = ID(x.repo, x.hdr.HeadSHA, &v)
	}
	if f.StableID != "" {
		return false
	}
	for x.r < len(x.recs) && x.recs[x.r].ord < ord {
		x.r++
	}
	if x.r >= len(x.recs) || x.recs[x.r].ord != ord {
		panic("findings: IDFiller.Fill saw other findings than Add")
	}
	f.StableID = StableID(v.Category, v.Path, anchorOf(&v), x.recs[x.r].occ)
	return true
}

// idView is what the id recipes and Normalize's order see of f, computed
// as normalizeFinding would but without changing f or anything it points
// to. Evidence is shared (read only).
func idView(f *Finding, b *Bundle) Finding {
	v := Finding{
		ReviewID: cmp.Or(f.ReviewID, b.ReviewID),
		Category: f.Category, Severity: f.Severity,
		Path: f.Path, StartLine: f.StartLine, EndLine: f.EndLine,
		Title: f.Title, Message: f.Message, Evidence: f.Evidence,
	}
	if s, err := ParseSeverity(string(f.Severity)); err == nil {
		v.Severity = s
	}
	if cs := f.ChangedSpan; cs != nil {
		if v.Path == "" {
			v.Path = cs.Path
		}
		if v.StartLine == 0 {
			v.StartLine = cs.StartLine
		}
		if v.EndLine == 0 {
			v.EndLine = cs.EndLine
		}
		// Only a LEFT side enters the id.
		v.ChangedSpan = &Span{Side: cs.Side}
	}
	return v
}
