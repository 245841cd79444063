package secrets

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/bits"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/spf13/viper"
	"github.com/zricethezav/gitleaks/v8/config"
	"github.com/zricethezav/gitleaks/v8/detect"
	glregexp "github.com/zricethezav/gitleaks/v8/regexp"
)

// Building gitleaks' default detector (a TOML parse, ~200 regexps, an
// Aho–Corasick trie) and this package's analysis of its rules took ~30 ms
// of CPU in every process, ~40% of a small review's. Instead, the
// configuration and the analysis are a build-time snapshot
// (gitleaks_snapdata.go, `go generate ./internal/secrets`), each rule is
// translated (its regexp and allowlists compiled, by gitleaks' Translate
// of that rule alone) when a text first needs it, and gitleaks runs, on a
// window that needs it, as a detector holding only the rules it would run
// there (see subsetDetector). TestGitleaksSnapshot fails while the
// snapshot differs from what the linked gitleaks computes; at run time a
// snapshot made from another default configuration is not used (the
// state is computed from the live configuration instead), so a stale
// snapshot costs time, never correctness.
//
//go:generate go test -run ^TestGitleaksSnapshot$ -update-gitleaks-snapshot .

// gitleaksModule is the module the snapshot is taken from.
const gitleaksModule = "github.com/zricethezav/gitleaks/v8"

// glSnapshot is gitleaks' default configuration and this package's
// analysis of it.
type glSnapshot struct {
	// Gitleaks is the version of the gitleaks module the snapshot was
	// made with; ConfigSHA256 the hash of its config.DefaultConfig.
	Gitleaks     string
	ConfigSHA256 string
	// Global is the config.ViperConfig that viper decodes from the
	// default configuration, without its rules, as JSON.
	Global string
	// Rules are the rules, in the configuration's order.
	Rules []snapRule
}

// snapRule is one rule of the configuration.
type snapRule struct {
	ID string
	// Viper is the rule as config.ViperConfig holds it (an element of its
	// Rules), as JSON.
	Viper string
	// Keywords are the rule's keywords lower-cased (as Translate makes
	// them); Required the ids of the rules it requires (a composite rule).
	Keywords []string
	Required []string
	// Text: the rule has a regexp (pkcs12-file matches paths only). The
	// fields below are set for text rules only.
	Text        bool
	Description string
	Severity    string
	Fixed       bool
	Regex       string
	SecretGroup int
	Entropy     float64
	// Semi, MinValue and Class are semiShape's; Class is a bitmask over
	// bytes. Anchored: startsWithKeyword.
	Semi     bool
	MinValue int
	Class    byteSet
	Anchored bool
}

// byteSet is a set of bytes.
type byteSet [4]uint64

func (b *byteSet) has(c byte) bool { return b[c>>6]&(1<<(c&63)) != 0 }

func byteSetOf(c *[256]bool) byteSet {
	var b byteSet
	for i, ok := range c {
		if ok {
			b[i>>6] |= 1 << (i & 63)
		}
	}
	return b
}

// defaultConfigSHA256 is the hash of gitleaks' embedded default config.
func defaultConfigSHA256() string {
	// (read in place: the string is 150 KB)
	sum := sha256.Sum256(unsafe.Slice(unsafe.StringData(config.DefaultConfig), len(config.DefaultConfig)))
	return hex.EncodeToString(sum[:])
}

// gitleaksVersion is the version of the linked gitleaks module: from the
// binary's build information, or (a test binary has no dependencies in
// it) from the path of gitleaks' source the build recorded
// (.../gitleaks/v8@v8.30.1/detect/detect.go, with -trimpath too); "" when
// neither tells.
func gitleaksVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == gitleaksModule {
				if m.Replace != nil {
					return m.Replace.Path + "@" + m.Replace.Version
				}
				return m.Version
			}
		}
	}
	pc := reflect.ValueOf(detect.NewDetector).Pointer()
	file, _ := runtime.FuncForPC(pc).FileLine(pc)
	file = filepath.ToSlash(file)
	if k := strings.Index(file, "/v8@"); k >= 0 {
		v := file[k+len("/v8@"):]
		if e := strings.IndexByte(v, '/'); e >= 0 {
			return v[:e]
		}
	}
	return ""
}

// viperDefaultConfig decodes gitleaks' default configuration exactly as
// detect.NewDetectorDefaultConfig does.
func viperDefaultConfig() (config.ViperConfig, error) {
	var vc config.ViperConfig
	viper.SetConfigType("toml")
	if err := viper.ReadConfig(strings.NewReader(config.DefaultConfig)); err != nil {
		return vc, err
	}
	err := viper.Unmarshal(&vc)
	return vc, err
}

// liveSnapshot computes the snapshot from the linked gitleaks' default
// configuration (what `go generate` writes, and what is used when the
// written snapshot is stale).
func liveSnapshot() (*glSnapshot, error) {
	vc, err := viperDefaultConfig()
	if err != nil {
		return nil, err
	}
	snap, err := snapshotOf(vc)
	if err != nil {
		return nil, err
	}
	snap.Gitleaks, snap.ConfigSHA256 = gitleaksVersion(), defaultConfigSHA256()
	return snap, nil
}

// snapshotOf is the snapshot of a configuration (Translate changes vc).
func snapshotOf(vc config.ViperConfig) (*glSnapshot, error) {
	// Translate lower-cases the rules' keywords in place: encode first.
	snap := &glSnapshot{}
	global := vc
	global.Rules = nil
	b, err := json.Marshal(global)
	if err != nil {
		return nil, err
	}
	snap.Global = string(b)
	vipers := make([]string, len(vc.Rules))
	for i := range vc.Rules {
		b, err := json.Marshal(vc.Rules[i])
		if err != nil {
			return nil, err
		}
		vipers[i] = string(b)
	}
	cfg, err := vc.Translate()
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for i, vr := range vc.Rules {
		if seen[vr.ID] {
			return nil, fmt.Errorf("gitleaks rule %s defined twice", vr.ID)
		}
		seen[vr.ID] = true
		r := cfg.Rules[vr.ID]
		sr := snapRule{ID: vr.ID, Viper: vipers[i], Keywords: slices.Clone(r.Keywords)}
		for _, rr := range r.RequiredRules {
			sr.Required = append(sr.Required, rr.RuleID)
		}
		if r.Regex != nil {
			sr.Text = true
			sr.Fixed = fixedFormat(vr.ID, r)
			sr.Severity = "high"
			if sr.Fixed {
				sr.Severity = "critical"
			}
			sr.Description = r.Description
			sr.Regex = r.Regex.String()
			sr.SecretGroup = r.SecretGroup
			sr.Entropy = r.Entropy
			var class *[256]bool
			sr.Semi, sr.MinValue, class = semiShape(r)
			if class != nil {
				sr.Class = byteSetOf(class)
			}
			sr.Anchored = startsWithKeyword(r)
		}
		snap.Rules = append(snap.Rules, sr)
	}
	return snap, nil
}

// newState is the detector state of a snapshot: the rules, the keyword
// index, nothing compiled.
func newState(snap *glSnapshot) *glState {
	nkw := 0
	for i := range snap.Rules {
		nkw += len(snap.Rules[i].Keywords)
	}
	n := len(snap.Rules)
	st := &glState{snap: snap, rules: make(map[string]*glRule, n), byID: make(map[string]int, n)}
	st.kwGroups = make([][]string, 1, nkw+1)
	st.kwThird = make([]thirdBytes, 1, nkw+1)
	st.kwRules = make(map[string][]int, nkw)
	st.kwSel = make(map[string][]int, nkw)
	st.byIndex = make([]*glRule, 0, n)
	st.list = make([]RuleInfo, 0, n)
	st.always = make([]uint64, (n+63)/64)
	st.ruleCfgs = make([]ruleCfg, len(snap.Rules))
	addKw := func(kw string) {
		if len(kw) < 2 {
			if !slices.Contains(st.shortKw, kw) {
				st.shortKw = append(st.shortKw, kw)
			}
			kw += " " // never happens with the default rules; keep the index sound
		}
		k := uint16(kw[0])<<8 | uint16(kw[1])
		g := st.kwIndex[k]
		if g == 0 {
			st.kwGroups = append(st.kwGroups, nil)
			st.kwThird = append(st.kwThird, thirdBytes{})
			g = uint16(len(st.kwGroups) - 1)
			st.kwIndex[k] = g
		}
		if !slices.Contains(st.kwGroups[g], kw) {
			st.kwGroups[g] = append(st.kwGroups[g], kw)
			st.kwThird[g].add(kw, true)
		}
	}
	for i := range snap.Rules {
		sr := &snap.Rules[i]
		st.byID[sr.ID] = i
		for _, kw := range sr.Keywords {
			if kw == "" {
				continue // gitleaks' prefilter never matches it
			}
			addKw(kw)
			if !slices.Contains(st.kwSel[kw], i) {
				st.kwSel[kw] = append(st.kwSel[kw], i)
			}
		}
		if len(sr.Keywords) == 0 {
			st.always[i/64] |= 1 << (i % 64)
		}
		if len(sr.Required) > 0 {
			st.composite = true
		}
		if !sr.Text {
			continue // path-only rules (pkcs12-file) need no text
		}
		g := &glRule{
			snap: sr, idx: i,
			info: RuleInfo{ID: sr.ID, Description: sr.Description, Severity: sr.Severity, Fixed: sr.Fixed},
			semi: sr.Semi, minValue: sr.MinValue, class: sr.Class,
		}
		st.rules[sr.ID] = g
		st.list = append(st.list, g.info)
		st.byIndex = append(st.byIndex, g)
		bi := len(st.byIndex) - 1
		for _, kw := range sr.Keywords {
			if !slices.Contains(st.kwRules[kw], bi) {
				st.kwRules[kw] = append(st.kwRules[kw], bi)
			}
		}
		if len(sr.Keywords) == 0 {
			st.alwaysRun = true
		}
	}
	slices.SortFunc(st.list, func(a, b RuleInfo) int { return strings.Compare(a.ID, b.ID) })
	st.foldKwIndex()
	return st
}

// foldKwIndex fills kwFold from kwIndex: kwFold[a<<8|b] is
// kwIndex[lower(a)<<8|lower(b)], so a text's pairs are looked up as they
// are, without lowering each byte first.
func (st *glState) foldKwIndex() {
	upper := func(c byte) (byte, bool) {
		if c >= 'a' && c <= 'z' {
			return c - 'a' + 'A', true
		}
		return 0, false
	}
	for k, g := range st.kwIndex {
		x, y := byte(k>>8), byte(k)
		if g == 0 || lowerTable[x] != x || lowerTable[y] != y {
			continue // no lowered pair is this one
		}
		xs, ys := []byte{x}, []byte{y}
		if u, ok := upper(x); ok {
			xs = append(xs, u)
		}
		if u, ok := upper(y); ok {
			ys = append(ys, u)
		}
		for _, a := range xs {
			for _, b := range ys {
				st.kwFold[uint16(a)<<8|uint16(b)] = g
			}
		}
	}
}

// ruleCfg is one rule as gitleaks' Translate makes it, made on first use.
type ruleCfg struct {
	once sync.Once
	rule config.Rule
	err  error
}

// ruleConfig is rule i of the snapshot translated: a configuration of the
// rule (and the rules it requires, which Translate wants present) and of
// the global allowlists that target it, translated, gives the rule
// exactly as translating the whole configuration does (Translate makes
// each rule on its own; only the keyword set, the rule order and the
// global allowlists are the configuration's, and subsetDetector makes
// those).
func (st *glState) ruleConfig(i int) (config.Rule, error) {
	rc := &st.ruleCfgs[i]
	rc.once.Do(func() {
		rc.rule, rc.err = st.translateRule(i)
	})
	return rc.rule, rc.err
}

func (st *glState) translateRule(i int) (config.Rule, error) {
	gv, err := st.globalViper()
	if err != nil {
		return config.Rule{}, err
	}
	id := st.snap.Rules[i].ID
	var vc config.ViperConfig
	ids := st.closure([]int{i})
	parts := make([]string, len(ids))
	for k, j := range ids {
		parts[k] = st.snap.Rules[j].Viper
	}
	if err := json.Unmarshal([]byte("["+strings.Join(parts, ",")+"]"), &vc.Rules); err != nil {
		return config.Rule{}, err
	}
	als := gv.Allowlists
	if gv.AllowList != nil {
		als = append(als, gv.AllowList)
	}
	for _, a := range als {
		if slices.Contains(a.TargetRules, id) {
			ta := *a
			ta.TargetRules = []string{id}
			vc.Allowlists = append(vc.Allowlists, &ta)
		}
	}
	cfg, err := vc.Translate()
	if err != nil {
		return config.Rule{}, err
	}
	r, ok := cfg.Rules[id]
	if !ok {
		return config.Rule{}, fmt.Errorf("gitleaks rule %s: not translated", id)
	}
	return r, nil
}

// globalViper is the configuration without its rules, decoded once, and
// (in st.global.cfg) its own fields and untargeted global allowlists
// translated.
func (st *glState) globalViper() (config.ViperConfig, error) {
	st.global.once.Do(func() {
		var vc config.ViperConfig
		if err := json.Unmarshal([]byte(st.snap.Global), &vc); err != nil {
			st.global.err = err
			return
		}
		st.global.vc = vc
		g := vc
		g.AllowList, g.Allowlists = nil, nil
		als := vc.Allowlists
		if vc.AllowList != nil {
			if len(als) > 0 {
				st.global.err = fmt.Errorf("gitleaks: [allowlist] alongside [[allowlists]]")
				return
			}
			als = append(als, vc.AllowList)
		}
		for _, a := range als {
			if len(a.TargetRules) == 0 {
				g.Allowlists = append(g.Allowlists, a)
				continue
			}
			for _, id := range a.TargetRules {
				if _, ok := st.byID[id]; !ok {
					st.global.err = fmt.Errorf("gitleaks: [[allowlists]] target rule ID '%s' does not exist", id)
					return
				}
			}
		}
		st.global.cfg, st.global.err = g.Translate()
	})
	return st.global.vc, st.global.err
}

// closure is the rules (indexes into the snapshot) and, transitively, the
// rules they require, sorted.
func (st *glState) closure(sel []int) []int {
	out := slices.Clone(sel)
	for k := 0; k < len(out); k++ {
		for _, id := range st.snap.Rules[out[k]].Required {
			if j, ok := st.byID[id]; ok && !slices.Contains(out, j) {
				out = append(out, j)
			}
		}
	}
	slices.Sort(out)
	return out
}

// maxCachedRules bounds the cached subset detectors by the rules they
// hold together (a detector costs ~25 KB a rule, mostly its keyword
// trie); past it, a window's detector is built and dropped (~10µs a
// rule). The rule sets windows select repeat: a review needs a few dozen.
const maxCachedRules = 512

// subsetDetector is a gitleaks detector for frag holding only the rules
// gitleaks' own detector runs on it: every rule with a keyword anywhere
// in the lower-cased fragment (gitleaks' prefilter), every rule without
// keywords, and the rules those require. Detect's findings on frag are
// what each rule it runs finds, then filtered across them (a generic
// finding gives way to a specific one on its line), so they are exactly
// the full detector's. Detectors are cached by rule set.
func (st *glState) subsetDetector(frag string) (*detect.Detector, error) {
	sel := st.selectRules(frag)
	key := bitsKey(sel)
	st.dets.mu.Lock()
	d := st.dets.m[key]
	st.dets.mu.Unlock()
	if d != nil {
		return d, nil
	}
	var ids []int
	for wi, set := range sel {
		for set != 0 {
			k := set & -set
			set &^= k
			ids = append(ids, wi*64+bits.TrailingZeros64(k))
		}
	}
	d, err := st.newDetector(ids)
	if err != nil {
		return nil, err
	}
	st.dets.mu.Lock()
	defer st.dets.mu.Unlock()
	if prev := st.dets.m[key]; prev != nil {
		return prev, nil
	}
	if st.dets.m == nil {
		st.dets.m = map[string]*detect.Detector{}
	}
	if st.dets.rules+len(ids) <= maxCachedRules {
		st.dets.m[key] = d
		st.dets.rules += len(ids)
	}
	return d, nil
}

// newDetector is the detector of the rules ids (indexes into the
// snapshot, sorted, closed under Required): the configuration Translate
// makes of them and the global allowlists.
func (st *glState) newDetector(ids []int) (*detect.Detector, error) {
	cfg, err := st.subsetConfig(ids)
	if err != nil {
		return nil, err
	}
	d := detect.NewDetector(cfg)
	d.MaxDecodeDepth = 0
	return d, nil
}

// subsetConfig is what Translate makes of the configuration with only the
// rules ids, from rules translated one by one.
func (st *glState) subsetConfig(ids []int) (config.Config, error) {
	if _, err := st.globalViper(); err != nil {
		return config.Config{}, err
	}
	cfg := st.global.cfg
	cfg.Rules = make(map[string]config.Rule, len(ids))
	cfg.Keywords = map[string]struct{}{}
	cfg.OrderedRules = make([]string, 0, len(ids))
	for _, i := range ids {
		r, err := st.ruleConfig(i)
		if err != nil {
			return config.Config{}, err
		}
		cfg.Rules[r.RuleID] = r
		for _, kw := range r.Keywords {
			cfg.Keywords[kw] = struct{}{}
		}
		cfg.OrderedRules = append(cfg.OrderedRules, r.RuleID)
	}
	return cfg, nil
}

// selectRules is the rules (bits over the snapshot's rules) gitleaks runs
// on frag: those with a keyword in it (its keywords are lower-case, and
// gitleaks looks for them in strings.ToLower(frag)), those without
// keywords, and the rules they require.
func (st *glState) selectRules(frag string) []uint64 {
	lower := strings.ToLower(frag)
	sel := slices.Clone(st.always)
	for i := 0; i+1 < len(lower); i++ {
		g := st.kwIndex[uint16(lower[i])<<8|uint16(lower[i+1])]
		if g == 0 {
			continue
		}
		for _, kw := range st.kwGroups[g] {
			if strings.HasPrefix(lower[i:], kw) {
				for _, j := range st.kwSel[kw] {
					sel[j/64] |= 1 << (j % 64)
				}
			}
		}
	}
	for _, kw := range st.shortKw {
		if strings.Contains(lower, kw) {
			for _, j := range st.kwSel[kw] {
				sel[j/64] |= 1 << (j % 64)
			}
		}
	}
	if st.composite {
		var ids []int
		for j := range st.snap.Rules {
			if sel[j/64]&(1<<(j%64)) != 0 {
				ids = append(ids, j)
			}
		}
		for _, j := range st.closure(ids) {
			sel[j/64] |= 1 << (j % 64)
		}
	}
	return sel
}

// bitsKey is a rule set as a map key.
func bitsKey(sel []uint64) string {
	b := make([]byte, 0, 8*len(sel))
	for _, w := range sel {
		for k := range 8 {
			b = append(b, byte(w>>(8*k)))
		}
	}
	return string(b)
}

// regex is the rule's regexp (gitleaks' own, from Translate), compiled
// on first use; nil when the rule cannot be translated (never with the
// default rules: TestGitleaksSnapshot translates them all).
func (g *glRule) regex(st *glState) *glregexp.Regexp {
	r, err := st.ruleConfig(g.idx)
	if err != nil {
		return nil
	}
	return r.Regex
}

// anchor is the rule's regexp anchored at its start, compiled on first
// use, or nil when not every match starts with a keyword.
func (g *glRule) anchor() *regexp.Regexp {
	if !g.snap.Anchored {
		return nil
	}
	g.anchorOnce.Do(func() {
		g.anchored = regexp.MustCompile(`^(?:` + g.snap.Regex + `)`)
		g.start = newStartFilter(g.snap.Regex)
	})
	return g.anchored
}
