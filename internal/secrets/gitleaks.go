package secrets

import (
	"math/bits"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"sync"

	"github.com/rs/zerolog"
	"github.com/zricethezav/gitleaks/v8/config"
	"github.com/zricethezav/gitleaks/v8/detect"
	"github.com/zricethezav/gitleaks/v8/logging"
	"github.com/zricethezav/gitleaks/v8/report"
)

// gitleaks' detector with its default configuration (rules, keywords,
// entropy thresholds and allowlists). Its keyword prefilter is mirrored
// here so that a text without any keyword (most texts) costs one
// table-driven pass and no gitleaks call, and a text with keywords is
// handed to gitleaks only around the lines that hold them. The rules and
// their analysis come from a build-time snapshot (gitleaks_snapshot.go):
// nothing is compiled before a text needs it.

type glRule struct {
	info RuleInfo
	snap *snapRule
	idx  int // index into the snapshot's rules
	// semi: a keyword-and-value rule (name, operator, value); minValue is
	// the shortest value its regexp accepts. The keyword scan checks that
	// shape by hand before the regexp runs (the semi-generic regexps are
	// the slow ones: ~10µs a line for generic-api-key).
	semi     bool
	minValue int
	class    byteSet // the bytes the secret group may hold
	// anchored (see anchor), when snap.Anchored, is the rule's regexp
	// anchored at its start: every match begins with one of the rule's
	// keywords (jwt's "ey", vault's "s."), so a keyword hit counts only
	// where it matches there.
	anchorOnce sync.Once
	anchored   *regexp.Regexp
	start      *startFilter // checked before anchored (nil: none)
}

type glState struct {
	snap *glSnapshot
	// rules: the text rules by id; byID: every rule's index in snap.Rules
	rules map[string]*glRule
	byID  map[string]int
	list  []RuleInfo
	// keywords by their first two (lower-cased) bytes; kwFold, by a
	// text's two bytes as they are (ASCII case folded into the index)
	kwIndex  [1 << 16]uint16
	kwFold   [1 << 16]uint16
	kwGroups [][]string
	// kwThird[g]: what group g knows of its keywords' (lower-cased)
	// third bytes (thirdBytes).
	kwThird []thirdBytes
	// kwRules: the text rules (indexes into byIndex) each keyword
	// triggers; kwSel: all the rules (indexes into snap.Rules)
	kwRules map[string][]int
	kwSel   map[string][]int
	shortKw []string // keywords of one byte (none in the default rules)
	byIndex []*glRule
	// alwaysRun: some text rule has no keyword, so every text is scanned
	// whole; always: the rules without keywords (bits over snap.Rules)
	alwaysRun bool
	always    []uint64
	composite bool // some rule requires others
	// ruleCfgs: each rule of snap.Rules translated, on first use
	ruleCfgs []ruleCfg
	global   struct {
		once sync.Once
		vc   config.ViperConfig
		cfg  config.Config
		err  error
	}
	// dets: the subset detectors, by rule set (bitsKey)
	dets struct {
		mu    sync.Mutex
		m     map[string]*detect.Detector
		rules int // the rules the cached detectors hold
	}
	// full, when set (tests), is gitleaks' whole default detector, run
	// instead of the subset detectors.
	full *detect.Detector
	err  error
}

var gl struct {
	once sync.Once
	st   *glState
}

// detector returns the shared gitleaks state; st.err is set when
// gitleaks' default configuration could not be loaded (it is embedded,
// so never in practice), and detection then falls back to the package's
// own shapes.
func detector() *glState {
	gl.once.Do(func() {
		// gitleaks logs through a global zerolog logger to stderr: nothing
		// of it may reach diffpal's output.
		logging.Logger = zerolog.Nop()
		gl.st = snapshotState(&gitleaksSnapshot)
	})
	return gl.st
}

// snapshotState is the state of a snapshot (the embedded one), or, when
// that was made from another default configuration than the linked
// gitleaks' (the module was upgraded and `go generate ./internal/secrets`
// not run), of the live configuration.
func snapshotState(snap *glSnapshot) *glState {
	if snap.ConfigSHA256 != defaultConfigSHA256() {
		live, err := liveSnapshot()
		if err != nil {
			return &glState{err: err, rules: map[string]*glRule{}}
		}
		snap = live
	}
	return newState(snap)
}

// RuleInfo describes one gitleaks rule as diffpal reports it.
type RuleInfo struct {
	// ID is gitleaks' rule id (aws-access-token); diffpal's finding rule
	// id is "secrets." + ID.
	ID          string
	Description string
	// Severity is critical for a provider credential with a fixed format
	// (a literal prefix or structure: AWS, GitHub, Slack, Stripe, private
	// keys) and high for generic keyword-and-entropy rules.
	Severity string
	Fixed    bool
}

// Rules lists gitleaks' default rules (those that look at text), sorted
// by id, with the severity diffpal gives their findings.
func Rules() []RuleInfo {
	return slices.Clone(detector().list)
}

// Rules whose secret has a literal prefix but that are generic all the
// same: any JWT, any curl credential, any value under a name.
var genericRules = map[string]bool{
	"jwt": true, "jwt-base64": true, "curl-auth-header": true, "curl-auth-user": true,
	"kubernetes-secret-yaml": true, "nuget-config-password": true, "generic-api-key": true,
}

// Fixed formats the structural test below misses: a two-byte prefix
// (Twilio's SK, Azure's Q~ after three characters), a fixed host or
// suffix, a secret group gitleaks points at a part of the format.
var fixedRules = map[string]bool{
	"twilio-api-key": true, "azure-ad-client-secret": true, "microsoft-teams-webhook": true,
	"vault-service-token": true, "sidekiq-sensitive-url": true, "maxmind-license-key": true,
}

// semiGeneric is the assignment gitleaks' keyword-and-value rules share
// (name, then =, :, =>, ...; then the value).
const semiGeneric = `(?:=|>|:{1,3}=|\|\||:|=>|\?=|,)`

// fixedFormat reports whether a rule's secret has a fixed format. A
// keyword-and-value rule (adafruit-api-key, generic-api-key) is generic
// unless its value starts with a literal of three bytes or more (mapbox's
// "pk."); any other rule is fixed when its secret holds three literal
// bytes or more in every alternative (AKIA, ghp_, xoxb-, -----BEGIN,
// Azure's "Q~", Terraform's ".atlasv1."), a character class of at most
// four bytes counting as one.
func fixedFormat(id string, r config.Rule) bool {
	if genericRules[id] {
		return false
	}
	src := r.Regex.String()
	re, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		return false
	}
	re = re.Simplify()
	g := secretGroup(re, r.SecretGroup)
	if g == nil {
		g = re
	}
	prefix, _ := fixedPrefix(g)
	if fixedRules[id] {
		return true
	}
	if strings.Contains(src, semiGeneric) {
		return prefix >= 3
	}
	return fixedCount(g) >= 3
}

// smallClass: a character class of at most four bytes ([su], [Aa]).
func smallClass(re *syntax.Regexp) bool {
	if re.Op != syntax.OpCharClass {
		return false
	}
	n := 0
	for i := 0; i+1 < len(re.Rune); i += 2 {
		n += int(re.Rune[i+1]-re.Rune[i]) + 1
	}
	return n <= 4
}

// fixedCount is the number of literal bytes every match of re holds.
func fixedCount(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpLiteral:
		return len(string(re.Rune))
	case syntax.OpCharClass:
		if smallClass(re) {
			return 1
		}
	case syntax.OpCapture:
		return fixedCount(re.Sub[0])
	case syntax.OpConcat:
		n := 0
		for _, s := range re.Sub {
			n += fixedCount(s)
		}
		return n
	case syntax.OpAlternate:
		n := -1
		for _, s := range re.Sub {
			if k := fixedCount(s); n < 0 || k < n {
				n = k
			}
		}
		return max(n, 0)
	case syntax.OpPlus:
		return fixedCount(re.Sub[0])
	case syntax.OpRepeat:
		return fixedCount(re.Sub[0]) * re.Min
	}
	return 0
}

// fixedPrefix is the number of literal bytes every match of re starts
// with, and whether all of re is such a prefix.
func fixedPrefix(re *syntax.Regexp) (int, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		return len(string(re.Rune)), true
	case syntax.OpCharClass:
		if smallClass(re) {
			return 1, true
		}
	case syntax.OpBeginText, syntax.OpBeginLine, syntax.OpWordBoundary, syntax.OpEmptyMatch:
		return 0, true
	case syntax.OpCapture:
		return fixedPrefix(re.Sub[0])
	case syntax.OpConcat:
		n := 0
		for _, s := range re.Sub {
			k, whole := fixedPrefix(s)
			n += k
			if !whole {
				return n, false
			}
		}
		return n, true
	case syntax.OpAlternate:
		n, whole := -1, true
		for _, s := range re.Sub {
			k, w := fixedPrefix(s)
			if n >= 0 && k != n {
				whole = false
			}
			if n < 0 || k < n {
				n = k
			}
			whole = whole && w
		}
		return max(n, 0), whole
	}
	return 0, false
}

// A Match is one secret gitleaks found in a text.
type Match struct {
	RuleID      string // gitleaks rule id (aws-access-token)
	Description string
	Severity    string // critical (fixed format) or high (generic)
	Fixed       bool
	// Line and EndLine are the 1-based lines of the secret in the text,
	// Column and EndColumn its 1-based byte columns (EndColumn inclusive).
	Line, EndLine     int
	Column, EndColumn int
	// Start and End are the secret's byte offsets in the text.
	Start, End int
	// Snippet is the line the secret starts on, with every secret on it
	// redacted (a public prefix at most); Redacted is the secret itself
	// redacted (AKIA[REDACTED], [REDACTED]).
	Snippet, Redacted string
}

// Scan returns the secrets gitleaks' default rules find in text, in
// order. Consecutive lines are scanned together (a private key spans
// lines).
func Scan(text string) []Match { return ScanPath("", text) }

// ScanPath is Scan for the content of a file at path: gitleaks' path
// allowlists and the rules that apply only to some paths (Terraform
// variables, for one) see the path.
func ScanPath(path, text string) []Match { return detector().scanPath(path, text) }

func (st *glState) scanPath(path, text string) []Match {
	if st.err != nil {
		return nil
	}
	hits := st.find(path, text)
	if len(hits) == 0 {
		return nil
	}
	ls := lineStarts(text)
	out := make([]Match, 0, len(hits))
	for _, h := range hits {
		g := st.rules[h.rule]
		m := Match{RuleID: h.rule, Start: h.start, End: h.end}
		if g != nil {
			m.Description, m.Severity, m.Fixed = g.info.Description, g.info.Severity, g.info.Fixed
		}
		li := lineIndex(ls, h.start)
		le := lineIndex(ls, max(h.start, h.end-1))
		m.Line, m.EndLine = li+1, le+1
		m.Column = h.start - ls[li] + 1
		m.EndColumn = h.end - ls[le]
		lineEnd := len(text)
		if k := strings.IndexByte(text[ls[li]:], '\n'); k >= 0 {
			lineEnd = ls[li] + k
		}
		m.Redacted = redactOne(text[h.start:h.end])
		// The snippet: the first line of the secret, redacted both by what
		// gitleaks found and by everything else the package knows.
		lineText := text[ls[li]:lineEnd]
		cut := min(h.end, lineEnd) - ls[li]
		lineText = lineText[:h.start-ls[li]] + m.Redacted + lineText[cut:]
		m.Snippet = strings.TrimSpace(Redact(lineText))
		out = append(out, m)
	}
	return out
}

// redactOne is a secret with its public prefix at most: the prefix the
// package's own formats know to be public (AKIA, ghp_, sk_live_), never
// more of a gitleaks rule's literal (pypi-AgEIcHlwaS5vcmc is a base64
// header some readers would take for the secret).
func redactOne(v string) string {
	keep := len(PublicPrefix(v))
	if keep > len(v)/2 || strings.ContainsAny(v[:keep], "\n") {
		keep = 0
	}
	return v[:keep] + Mask
}

func lineStarts(s string) []int {
	ls := make([]int, 1, strings.Count(s, "\n")+1)
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			ls = append(ls, i+1)
		}
	}
	return ls
}

func lineIndex(ls []int, pos int) int {
	i, found := slices.BinarySearch(ls, pos)
	if found {
		return i
	}
	return i - 1
}

// glHit is one gitleaks finding as offsets into the scanned text.
type glHit struct {
	start, end int // the secret
	rule       string
}

// find runs gitleaks over the windows of s that hold a keyword.
func (st *glState) find(path, s string) []glHit {
	if len(s) < 6 {
		return nil
	}
	// The list is pooled as Find's are (startLists): ScanPath runs over
	// every added block of a change.
	l := startsPool.Get().(*startLists)
	l.leakAt = st.keywordStarts(s, l.leakAt[:0])
	hits := st.findAt(path, s, l.leakAt)
	startsPool.Put(l)
	return hits
}

// findAt is find given the keyword starts of s (keywordStarts).
func (st *glState) findAt(path, s string, at []int) []glHit {
	if len(s) < 6 {
		return nil
	}
	ws := st.windowsAt(s, at)
	var out []glHit
	for _, w := range ws {
		frag := s[w.start:w.end]
		// gitleaks runs every rule a keyword of the fragment triggers over
		// all of it, and then its entropy and allowlist checks: ask the
		// triggered rules' regexps first, which on a window of a few lines
		// is cheap, and call gitleaks only where one matches.
		if !st.anyMatch(frag, w.rules) {
			continue
		}
		d := st.full
		if d == nil {
			var err error
			if d, err = st.subsetDetector(frag); err != nil {
				continue
			}
		}
		fs := d.Detect(detect.Fragment{Raw: frag, FilePath: path})
		if len(fs) == 0 {
			continue
		}
		var wls []int
		for _, f := range fs {
			if f.Secret == "" || f.Match == "" {
				continue
			}
			if wls == nil {
				wls = lineStarts(frag)
			}
			a, b, ok := st.locate(frag, wls, f)
			if !ok {
				continue
			}
			out = append(out, glHit{start: w.start + a, end: w.start + b, rule: f.RuleID})
		}
	}
	slices.SortFunc(out, func(a, b glHit) int {
		if a.start != b.start {
			return a.start - b.start
		}
		if a.end != b.end {
			return b.end - a.end
		}
		return strings.Compare(a.rule, b.rule)
	})
	return slices.Compact(out)
}

// locate finds a finding's secret in the fragment it came from: the match
// starts at the finding's line and column (gitleaks counts columns from
// the newline before a line, so they are one more on every line but the
// first), and the secret is the rule's secret group within the match.
func (st *glState) locate(frag string, ls []int, f report.Finding) (int, int, bool) {
	ms := -1
	if f.StartLine >= 0 && f.StartLine < len(ls) {
		p := ls[f.StartLine] + f.StartColumn - 1
		if f.StartLine > 0 {
			p--
		}
		if p >= 0 && p <= len(frag) && strings.HasPrefix(frag[p:], f.Match) {
			ms = p
		} else if k := strings.Index(frag[ls[f.StartLine]:], f.Match); k >= 0 {
			ms = ls[f.StartLine] + k
		}
	}
	if ms < 0 {
		k := strings.Index(frag, f.Match)
		if k < 0 {
			return 0, 0, false
		}
		ms = k
	}
	off := -1
	if g := st.rules[f.RuleID]; g != nil && f.Secret != f.Match && g.regex(st) != nil {
		if idx := g.regex(st).FindStringSubmatchIndex(f.Match); idx != nil {
			n := g.snap.SecretGroup
			if n == 0 {
				for k := 1; 2*k+1 < len(idx); k++ {
					if idx[2*k] >= 0 && idx[2*k+1] > idx[2*k] {
						n = k
						break
					}
				}
			}
			if n > 0 && 2*n+1 < len(idx) && idx[2*n] >= 0 && f.Match[idx[2*n]:idx[2*n+1]] == f.Secret {
				off = idx[2*n]
			}
		}
	}
	if off < 0 {
		off = strings.Index(f.Match, f.Secret)
		if off < 0 {
			return 0, 0, false
		}
	}
	return ms + off, ms + off + len(f.Secret), true
}

var lowerTable = func() (t [256]byte) {
	for i := range t {
		t[i] = byte(i)
		if i >= 'A' && i <= 'Z' {
			t[i] = byte(i) + 'a' - 'A'
		}
	}
	return t
}()

// hasPrefixFold reports whether s starts with kw (lower-case ASCII),
// ignoring ASCII case.
func hasPrefixFold(s, kw string) bool {
	if len(s) < len(kw) {
		return false
	}
	for i := 0; i < len(kw); i++ {
		if lowerTable[s[i]] != kw[i] {
			return false
		}
	}
	return true
}

// maxWindow bounds how far a private key's window runs from its BEGIN.
const maxWindow = 64 << 10

// A window is a part of a text gitleaks must see: whole lines, and the
// rules the keywords in it trigger (bits over byIndex).
type window struct {
	start, end int
	rules      []uint64
}

// maxMerge bounds the windows merged into one: Go's regexp runs a
// backtracker, much faster than its NFA, on inputs of up to a few hundred
// bytes per regexp, so many small windows beat one large one.
const maxMerge = 512

// windows returns the parts of s gitleaks must see, sorted and disjoint:
// each line holding a keyword with the line before and after it (a
// keyword and its value may sit on neighbouring lines), and from a
// "-----BEGIN" to the line of the "-----END" after it (a key spans
// lines). Lines without a keyword nearby cannot hold a match of a rule
// with keywords.
func (st *glState) windows(s string) []window { return st.windowsAt(s, st.keywordStarts(s, nil)) }

// keywordStarts appends to at the offsets of s where a pair of bytes (and
// the third byte after it) may start a keyword: the only offsets
// windowsAt looks at. Find has them from its one pass for all three
// keyword scans (finder.scanStarts); this is that pass for the gitleaks
// rules alone, as ScanPath needs.
func (st *glState) keywordStarts(s string, at []int) []int {
	for i := 0; i+1 < len(s); i++ {
		g := st.kwFold[uint16(s[i])<<8|uint16(s[i+1])]
		if g == 0 || i+2 < len(s) && st.kwThird[g].rulesOut(lowerTable[s[i+2]]) {
			continue
		}
		at = append(at, i)
	}
	return at
}

// windowsAt is windows of s given its keyword starts (keywordStarts, in
// increasing order).
func (st *glState) windowsAt(s string, at []int) []window {
	nw := (len(st.byIndex) + 63) / 64
	if st.alwaysRun {
		all := make([]uint64, nw)
		for i := range st.byIndex {
			all[i/64] |= 1 << (i % 64)
		}
		return []window{{0, len(s), all}}
	}
	var ws []window
	add := func(a, b int, hit []uint64) {
		// Join the previous window when it touches this one and the two
		// stay small; else start another (windows may overlap: a secret
		// two windows find is one hit).
		n := len(ws)
		if n > 0 && a <= ws[n-1].end && max(b, ws[n-1].end)-ws[n-1].start <= maxMerge {
			ws[n-1].end = max(ws[n-1].end, b)
		} else {
			ws = append(ws, window{start: a, end: b, rules: make([]uint64, nw)})
			n++
		}
		for k, b := range hit {
			ws[n-1].rules[k] |= b
		}
	}
	lineDone := -1 // hits before this offset are on a line already windowed
	for _, i := range at {
		g := st.kwFold[uint16(s[i])<<8|uint16(s[i+1])]
		for _, kw := range st.kwGroups[g] {
			if !hasPrefixFold(s[i:], kw) {
				continue
			}
			hit := st.hitRules(s, i, kw, nw)
			if hit == nil {
				continue
			}
			if i < lineDone && kw != "-----begin" {
				// same line: its window is there; add the keyword's rules
				for k, b := range hit {
					ws[len(ws)-1].rules[k] |= b
				}
				continue
			}
			// The line before, this line and the line after.
			ls := strings.LastIndexByte(s[:i], '\n') + 1
			a := 0
			if ls > 0 {
				a = strings.LastIndexByte(s[:ls-1], '\n') + 1
			}
			b := continued(s, lineEndAfter(s, i, 2))
			lineDone = lineEndAfter(s, i, 1)
			if kw == "-----begin" {
				lim := min(len(s), i+maxWindow)
				if k := indexFold(s[i:lim], "-----end"); k >= 0 {
					b = max(b, lineEndAfter(s, i+k, 2))
				} else {
					b = max(b, lim)
				}
			}
			add(a, b, hit)
		}
	}
	return ws
}

// hitRules is the rules (bits over byIndex) a keyword at s[i:] triggers:
// all of its rules but the keyword-and-value ones whose shape does not
// follow it; nil when none.
func (st *glState) hitRules(s string, i int, kw string, nw int) []uint64 {
	var out []uint64
	for _, ri := range st.kwRules[kw] {
		g := st.byIndex[ri]
		if g.semi && !semiTail(s, i+len(kw), g) {
			continue
		}
		if a := g.anchor(); a != nil && (g.start != nil && !g.start.allows(s[i:]) || !a.MatchString(s[i:min(len(s), i+maxAnchored)])) {
			continue
		}
		if out == nil {
			out = make([]uint64, nw)
		}
		out[ri/64] |= 1 << (ri % 64)
	}
	return out
}

// anyMatch reports whether one of the rules (bits over byIndex) matches
// frag.
func (st *glState) anyMatch(frag string, rules []uint64) bool {
	for wi, set := range rules {
		for set != 0 {
			k := set & -set
			set &^= k
			ri := wi*64 + bits.TrailingZeros64(k)
			if re := st.byIndex[ri].regex(st); re != nil && re.MatchString(frag) {
				return true
			}
		}
	}
	return false
}

// maxContinued bounds how many continued lines a window takes.
const maxContinued = 20

// continued extends a window ending at b (past a newline) over the lines
// a trailing backslash continues: a curl command's -u or -H sits lines
// below its keyword.
func continued(s string, b int) int {
	for n := 0; n < maxContinued && b < len(s); n++ {
		e := b - 1 // the newline
		if e < 1 || s[e] != '\n' {
			return b
		}
		t := strings.TrimRight(s[:e], " \t\r")
		if !strings.HasSuffix(t, "\\") {
			return b
		}
		b = lineEndAfter(s, b, 1)
	}
	return b
}

// lineEndAfter is the end (past the newline) of the n-th line end at or
// after p, or len(s).
func lineEndAfter(s string, p, n int) int {
	for ; n > 0; n-- {
		k := strings.IndexByte(s[p:], '\n')
		if k < 0 {
			return len(s)
		}
		p += k + 1
	}
	return p
}

// indexFold is strings.Index ignoring ASCII case; sub is lower-case.
func indexFold(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if lowerTable[s[i]] == sub[0] && hasPrefixFold(s[i:], sub) {
			return i
		}
	}
	return -1
}

// gitleaks adds the secrets gitleaks' default rules find.
func (f *finder) gitleaks() {
	st := detector()
	if st.err != nil {
		return
	}
	f.scanStarts()
	for _, h := range st.findAt("", f.s, f.leakAt) {
		if masked(f.s[h.start:h.end], f.r.mask()) {
			continue
		}
		f.add(h.start, h.end, 0, "gitleaks:"+h.rule)
	}
}

// secretGroup finds the capture group gitleaks takes the secret from: the
// numbered group, or else the first group (gitleaks takes the first that
// matched, which is the first for all default rules).
func secretGroup(re *syntax.Regexp, n int) *syntax.Regexp {
	if n == 0 {
		n = 1
	}
	var found *syntax.Regexp
	var walk func(*syntax.Regexp)
	walk = func(x *syntax.Regexp) {
		if found != nil {
			return
		}
		if x.Op == syntax.OpCapture && x.Cap == n {
			found = x.Sub[0]
			return
		}
		for _, s := range x.Sub {
			walk(s)
		}
	}
	walk(re)
	return found
}

// semiShape reports a keyword-and-value rule, the shortest value its
// secret group accepts and the bytes the group may hold.
func semiShape(r config.Rule) (bool, int, *[256]bool) {
	src := r.Regex.String()
	if !strings.Contains(src, semiGeneric) {
		return false, 0, nil
	}
	re, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		return false, 0, nil
	}
	re = re.Simplify()
	if re.Op == syntax.OpAlternate {
		// atlassian-api-token: a keyword-and-value branch or a prefixed
		// token; the hand check would miss the token
		return false, 0, nil
	}
	g := secretGroup(re, r.SecretGroup)
	if g == nil {
		return false, 0, nil
	}
	var class [256]bool
	byteClass(g, &class)
	return true, minLen(g), &class
}

// byteClass adds to c every byte a match of re may hold (every byte past
// ASCII, for anything not ASCII).
func byteClass(re *syntax.Regexp, c *[256]bool) {
	addRune := func(r rune, fold bool) {
		if r >= 0x80 {
			for b := 0x80; b < 256; b++ {
				c[b] = true
			}
			return
		}
		c[r] = true
		if fold {
			c[lowerTable[byte(r)]] = true
			if r >= 'a' && r <= 'z' {
				c[r-'a'+'A'] = true
			}
		}
	}
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			addRune(r, re.Flags&syntax.FoldCase != 0)
		}
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1] && r < 0x80; r++ {
				addRune(r, false)
			}
			if re.Rune[i+1] >= 0x80 {
				addRune(0x80, false)
			}
		}
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		for b := range c {
			c[b] = true
		}
	}
	for _, sub := range re.Sub {
		byteClass(sub, c)
	}
}

// minLen is the length of the shortest match of re (in runes, a lower
// bound on bytes).
func minLen(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpLiteral:
		return len(re.Rune)
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return 1
	case syntax.OpCapture, syntax.OpPlus:
		return minLen(re.Sub[0])
	case syntax.OpRepeat:
		return minLen(re.Sub[0]) * re.Min
	case syntax.OpConcat:
		n := 0
		for _, s := range re.Sub {
			n += minLen(s)
		}
		return n
	case syntax.OpAlternate:
		n := -1
		for _, s := range re.Sub {
			if k := minLen(s); n < 0 || k < n {
				n = k
			}
		}
		return max(n, 0)
	}
	return 0
}

// semiTail checks the shape gitleaks' keyword-and-value rules require
// after the keyword at p, as a necessary condition (it may accept what
// the regexp rejects, never the reverse): up to 20 of [ \t\w.-] and 3 of
// [\s'"], an operator (=, >, :, :=, ::=, ||, =>, ?=, ","), up to 5 of
// [`'"\s=], then a value of the group's bytes, at least minValue long,
// that ends where the rule's terminator ([`'"\s;], \n, \r, the end)
// follows and whose entropy passes the rule's threshold.
func semiTail(s string, p int, g *glRule) bool {
	lim := min(len(s), p+20+3+1)
	for q := p; q < lim; q++ {
		switch c := s[q]; c {
		case '=', '>', ':', '|', '?', ',':
			if valueAfter(s, q+1, g) {
				return true
			}
		case ' ', '\t', '.', '-', '\'', '"', '\n', '\r', '\f', '\v':
		default:
			if !isIdentByte(c) {
				return false
			}
		}
	}
	return false
}

func isSpaceByte(b byte) bool {
	return b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == '\f' || b == '\v'
}

// valueAfter: a value may start at p after the rest of a multi-byte
// operator (:=, ::=, ||, =>) and up to 5 of [`'"\s=].
func valueAfter(s string, p int, g *glRule) bool {
	for k := 0; k < 3 && p < len(s) && strings.IndexByte(":=>|", s[p]) >= 0; k++ {
		if valueAt(s, p, g) {
			return true
		}
		p++
	}
	for k := 0; k <= 5 && p < len(s); k++ {
		if valueAt(s, p, g) {
			return true
		}
		if c := s[p]; !(c == '`' || c == '\'' || c == '"' || c == '=' || isSpaceByte(c)) {
			return false
		}
		p++
	}
	return false
}

// valueAt: a value of the group's bytes starts at p, long enough, ends
// at a terminator, and (when the rule has an entropy threshold) is random
// enough. The value must run to the end of the group's bytes (a
// terminator is not one of them), so it is s[p:e].
func valueAt(s string, p int, g *glRule) bool {
	e := p
	for e < len(s) && g.class.has(s[e]) {
		e++
	}
	if e-p < g.minValue {
		return false
	}
	if e < len(s) {
		switch c := s[e]; {
		case c == '`' || c == '\'' || c == '"' || c == ';' || isSpaceByte(c):
		case c == '\\' && e+1 < len(s) && (s[e+1] == 'n' || s[e+1] == 'r'):
		default:
			// the value may end earlier on a byte the class and the
			// terminator share; be loose
			return terminatorInClass(g)
		}
	}
	if g.snap.Entropy > 0 && e-p <= 150 && Entropy(s[p:e]) <= g.snap.Entropy {
		// a shorter value (the regexp's {n,m} bounds) could pass the
		// threshold only if it ended earlier, at a terminator inside the
		// run: only possible when the class holds one
		return terminatorInClass(g)
	}
	return true
}

// terminatorInClass: the group's bytes include one of the terminator's.
func terminatorInClass(g *glRule) bool {
	for _, c := range []byte("`'\";\\ \t\n\r\f\v") {
		if g.class.has(c) {
			return true
		}
	}
	return false
}

// maxAnchored bounds the text an anchored check reads.
const maxAnchored = 4096

// startsWithKeyword reports a rule whose every match begins with one of
// its keywords: each alternative of its regexp (past \b and groups)
// starts with a literal that starts with a keyword.
func startsWithKeyword(r config.Rule) bool {
	if len(r.Keywords) == 0 {
		return false
	}
	re, err := syntax.Parse(r.Regex.String(), syntax.Perl)
	if err != nil {
		return false
	}
	ps, ok := literalStarts(re)
	if !ok || len(ps) == 0 {
		return false
	}
	for _, p := range ps {
		hit := false
		for _, kw := range r.Keywords {
			if strings.HasPrefix(p, strings.ToLower(kw)) {
				hit = true
				break
			}
		}
		if !hit {
			return false
		}
	}
	return true
}

// literalStarts is the lower-cased literal every match of re starts with,
// one per alternative; ok is false when some alternative starts with no
// literal.
func literalStarts(re *syntax.Regexp) ([]string, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		return []string{strings.ToLower(string(re.Rune))}, true
	case syntax.OpCapture:
		return literalStarts(re.Sub[0])
	case syntax.OpAlternate:
		var out []string
		for _, sub := range re.Sub {
			ps, ok := literalStarts(sub)
			if !ok {
				return nil, false
			}
			out = append(out, ps...)
		}
		return out, true
	case syntax.OpConcat:
		for i, sub := range re.Sub {
			switch sub.Op {
			case syntax.OpWordBoundary, syntax.OpBeginText, syntax.OpBeginLine, syntax.OpEmptyMatch:
				continue
			}
			ps, ok := literalStarts(sub)
			if !ok {
				return nil, false
			}
			// a whole literal continues with what follows it
			if sub.Op == syntax.OpLiteral && i+1 < len(re.Sub) {
				if next, ok := literalStarts(&syntax.Regexp{Op: syntax.OpConcat, Sub: re.Sub[i+1:]}); ok {
					var out []string
					for _, a := range ps {
						for _, b := range next {
							out = append(out, a+b)
						}
					}
					return out, true
				}
			}
			return ps, true
		}
	}
	return nil, false
}
