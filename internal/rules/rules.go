// Package rules is diffpal's built-in, offline review provider: data-driven
// rule packs (YAML, embedded plus user-supplied) matched against the changed
// lines of a git change, a comment/string masker per language, and the
// explorer's changed-symbol map.
package rules

import (
	"embed"
	"fmt"
	"path"
	"regexp"
	"strings"
	"sync"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/par"
	"github.com/diffpalhq/diffpal/internal/secrets"
	"github.com/diffpalhq/diffpal/internal/yamlsafe"
)

// Line is one line of a changed file's new version (or, for Removed, the old version).
type Line struct {
	No   int
	Text string
}

// File is one changed file as the engine sees it.
type File struct {
	Path     string   // repo-relative, forward slashes
	Language string   // from DetectLanguage(path, firstLine)
	Status   string   // added, modified, deleted, renamed
	Added    []Line   // added lines (new-side line numbers), in order
	Removed  []Line   // removed lines (old-side numbers), in order
	Content  []string // the whole new file, index i = line i+1 (nil if deleted or unavailable)
	// Text, when not empty, must be strings.Join(Content, "\n"): the
	// caller's copy of the file, used instead of joining Content again.
	Text string

	// ctx caches the masked views so that MatchFile, MatchChange and
	// ChangedSymbols mask each file once; a File must not be changed after
	// it was first matched.
	ctx *fileCtx
}

// Hit is one rule match.
type Hit struct {
	RuleID, Profile, Category string
	Severity                  string
	Confidence                float64
	Title, Message, Impact    string
	ImpactScope               string // who or what is affected (impact.scope)
	Suggestion                string
	Path                      string
	StartLine, EndLine        int    // new-side lines (RIGHT)
	OldLine                   int    // for removed-line rules: the old-side line that was removed (LEFT), else 0
	Source                    string // evidence source: changed_line or nearby_context
	Snippet                   string // matched line text, trimmed, secrets redacted
	Anchor                    string // short description of what matched
	// SupportStart..SupportEnd (new-side lines), when set, is where the
	// value reaching the sink was built: the finding's supporting_span.
	SupportStart, SupportEnd int
}

// Valid profile ids.
var Profiles = []string{
	"pr_test_analyzer", "code_reviewer", "security_reviewer", "silent_failure_hunter", "code_explorer",
	"typescript_reviewer", "react_reviewer", "ruby_reviewer", "python_reviewer", "mobile_reviewer",
}

// Categories accepted in rules: the findings taxonomy.
var Categories = findings.CategoryNames()

// Severities in rank order, from the findings contract.
var Severities = findings.SeverityNames()

// Example is a snippet a rule must (positive) or must not (negative) match.
// Code is the new file content; Before, when set, is the old content (the
// example is then a modification and the diff between them is matched).
type Example struct {
	Path   string `yaml:"path" json:"path"`
	Before string `yaml:"before,omitempty" json:"before,omitempty"`
	Code   string `yaml:"code" json:"code"`
	// Extra files of the same change (for change-level rules).
	Extra []Example `yaml:"extra,omitempty" json:"extra,omitempty"`
}

// Files returns the example's changed files (the main file first).
func (ex Example) Files() []*File {
	mk := func(e Example) *File {
		var old []byte
		if e.Before != "" {
			old = []byte(e.Before)
		}
		return DiffFile(e.Path, old, []byte(e.Code))
	}
	out := []*File{mk(ex)}
	for _, e := range ex.Extra {
		out = append(out, mk(e))
	}
	return out
}

// Context requires or forbids nearby lines (from the file's Content).
type Context struct {
	Before      int    `yaml:"before,omitempty"`
	After       int    `yaml:"after,omitempty"`
	Require     string `yaml:"require,omitempty"`      // some line in the window must match
	Forbid      string `yaml:"forbid,omitempty"`       // no line in the window may match
	MatchIn     string `yaml:"match_in,omitempty"`     // code (default) or raw
	ExcludeSelf bool   `yaml:"exclude_self,omitempty"` // the matched line is not part of the window

	require, forbid *lazyRE
}

// Block describes a block opened on the matched line whose body is checked.
type Block struct {
	Kind string `yaml:"kind"` // braces, indent (Python), ruby (until end/rescue/ensure/else)
	Body string `yaml:"body"` // RE2 the trimmed raw body (lines joined by \n) must match; default empty

	body *lazyRE
}

// Enclosing walks the brace blocks around the matched line outward: the first
// opener line matching Stop cancels the hit, the first matching Match confirms it.
type Enclosing struct {
	Match string `yaml:"match"`
	Stop  string `yaml:"stop,omitempty"`

	match, stop *lazyRE
}

// Entropy requires a captured group to look random.
type Entropy struct {
	Group  string  `yaml:"group"`   // named capture group of pattern
	Min    float64 `yaml:"min"`     // minimum Shannon entropy (bits per char)
	MinLen int     `yaml:"min_len"` // minimum length of the value
}

// Rule is one rule of a pack. Fields are documented in packs/README.md.
type Rule struct {
	ID          string   `yaml:"id"`
	Profile     string   `yaml:"profile"`
	Languages   []string `yaml:"languages,omitempty"`
	Category    string   `yaml:"category"`
	Severity    string   `yaml:"severity"`
	Confidence  float64  `yaml:"confidence"`
	Title       string   `yaml:"title"`
	Message     string   `yaml:"message"`
	Impact      string   `yaml:"impact"`
	ImpactScope string   `yaml:"impact_scope,omitempty"`
	Suggestion  string   `yaml:"suggestion"`

	// Query holds tree-sitter queries by language id, run on the syntax
	// tree over the added lines (see query.go and packs/README.md).
	Query map[string]string `yaml:"query,omitempty"`
	// Prefilter lists literals of which one must occur in a file for the
	// query to run (default: derived from the query's predicates).
	Prefilter []string `yaml:"prefilter,omitempty"`
	// Flow reports a sink whose argument is built from non-constant
	// parts or derives from a source (see flow.go and packs/README.md).
	Flow *Flow `yaml:"flow,omitempty"`

	Scope      string   `yaml:"scope,omitempty"`    // added (default), removed, file, change
	MatchIn    string   `yaml:"match_in,omitempty"` // code (default: comments/strings masked) or raw
	Pattern    string   `yaml:"pattern,omitempty"`
	NotPattern string   `yaml:"not_pattern,omitempty"` // on the same text as pattern
	Unless     []string `yaml:"unless,omitempty"`      // on the raw line
	Require    []string `yaml:"require,omitempty"`     // on the raw line, all must match
	// RequireCode: on the masked line, all must match (useful for raw rules).
	RequireCode []string `yaml:"require_code,omitempty"`

	Paths        []string `yaml:"paths,omitempty"`         // globs; a glob without '/' matches the base name
	ExcludePaths []string `yaml:"exclude_paths,omitempty"` // globs
	Tests        string   `yaml:"tests,omitempty"`         // any, only, exclude, advisory (see compile)

	FileRequires      string `yaml:"file_requires,omitempty"`        // raw file content must match
	FileUnless        string `yaml:"file_unless,omitempty"`          // raw file content must not match
	UnlessAddedInFile string `yaml:"unless_added_in_file,omitempty"` // removed scope: skip when an added line matches
	// UnlessRemovedWith (removed scope) skips a removed line when the run of
	// consecutive removed lines it belongs to contains, at or above it, a
	// line matching this: the enclosing definition (a whole test) was
	// deleted too, not just the line.
	UnlessRemovedWith string `yaml:"unless_removed_with,omitempty"`

	Context   *Context   `yaml:"context,omitempty"`
	Block     *Block     `yaml:"block,omitempty"`
	Enclosing *Enclosing `yaml:"enclosing,omitempty"`
	Entropy   *Entropy   `yaml:"entropy,omitempty"`
	Check     string     `yaml:"check,omitempty"` // a built-in detector (see checks.go)

	// SecretUnless drops the match when the pattern's "secret" group matches
	// it (placeholders such as changeme, xxx, ${VAR}, <token>).
	SecretUnless string `yaml:"secret_unless,omitempty"`

	SuppressedBy []string `yaml:"suppressed_by,omitempty"` // drop when one of these rules hit the same line
	Redact       bool     `yaml:"redact,omitempty"`        // the match is a secret: redact it in snippet/anchor

	// OptIn rules are loaded and documented but run only when a user
	// enables them (rules.enable in the config): their measured precision
	// on real code is too low for a default that gates CI.
	OptIn bool `yaml:"opt_in,omitempty"`

	Positive []Example `yaml:"positive"`
	Negative []Example `yaml:"negative"`

	Pack string `yaml:"-"` // name of the pack the rule came from
	// Declared is the pack's severity when the measured precision capped
	// it (see gateSeverity); "" when Severity is the pack's own.
	Declared string `yaml:"-"`

	c *compiled
}

type compiled struct {
	langs         map[string]bool // nil = all
	pattern       *lazyRE
	notPattern    *lazyRE
	unless        []*lazyRE
	require       []*lazyRE
	requireCode   []*lazyRE
	paths         []*lazyRE
	exclude       []*lazyRE
	fileRequires  *lazyRE
	fileUnless    *lazyRE
	unlessAdded   *lazyRE
	unlessRemWith *lazyRE
	check         checkFunc
	changeCheck   changeCheckFunc
	query         *queryRule
	flow          *flowRule
	secretGroup   int
	secretUnless  *lazyRE

	// prefilter holds literals of which at least one must occur in a line
	// for pattern to match (lower-cased when fold); nil when none could be
	// derived. Checking them first skips the regexp on almost every line.
	prefilter []string
	fold      bool
	litIDs    []int // prefilter literals' ids in the Set's literalIndex

	// synLits (query and flow sink literals) and valLits (a flow rule's
	// value_pattern literals) decide whether a file is parsed; ids into
	// the Set's syntax literal index.
	synLits, valLits []string
	synIDs, valIDs   []int
	valFold          bool
	// gramLits are a syntax rule's literals by grammar (grammarLiterals),
	// looked for in the whole file; gramIDs their ids in the syntax index.
	gramLits map[string][]string
	gramIDs  map[string][]int

	fileReqLits, fileUnlessLits []string // prefilters of file_requires/file_unless
	fileReqIDs, fileUnlessIDs   []int    // their ids in Set.file
	// pathIDs and excludeIDs index paths and exclude in Set.globs (the
	// set's distinct globs), so that a file's path is matched against
	// each glob once, not once per rule (appliesToFile).
	pathIDs, excludeIDs         []int
	fileReqFold, fileUnlessFold bool
}

// Set is a compiled collection of rules.
type Set struct {
	rules    []*Rule
	byID     map[string]*Rule
	profiles []string
	lits     *literalIndex
	// litRules[id] are the rules (indexes into rules, ascending) with line
	// literal id (buildPrefilter); ruleWords is the width of a bitset over
	// rules.
	litRules  [][]int32
	ruleWords int
	syn       *literalIndex // syntax rules' literals (see buildPrefilter)
	// synNewline: a syntax rule's window literal holds a newline (fileCtx.window)
	synNewline bool
	file       *literalIndex // file_requires/file_unless literals (buildPrefilter)
	globs      []*lazyRE
	// globLits[i] are literals one of which every path globs[i] matches
	// holds (nil: none derived); globFold when they are case-insensitive.
	globLits [][]string
	globFold []bool
	// off holds the rules that do not run: opt-in rules not enabled and
	// rules a user disabled (see Configure).
	off    map[*Rule]bool
	offIDs map[string]bool // disabled secret detector rules, by id
	// eligible caches eligibleRules, by language and profiles; cleared
	// when off changes.
	eligible sync.Map
}

// eligibleRules is the rules (bits over s.rules) that may run on a file
// in lang for these profiles (nil: all): not off, of a wanted profile,
// and for the language (the per-rule tests MatchFile did for every rule of
// every file, once per language now).
func (s *Set) eligibleRules(lang string, profiles []string) []uint64 {
	key := lang + "\x00*"
	if profiles != nil {
		key = lang + "\x00" + strings.Join(profiles, "\x00")
	}
	if v, ok := s.eligible.Load(key); ok {
		return v.([]uint64)
	}
	out := make([]uint64, (len(s.rules)+63)/64)
	for ri, r := range s.rules {
		if !s.off[r] && wantProfile(profiles, r.Profile) && (r.c == nil || r.c.langs == nil || r.c.langs[lang]) {
			out[ri/64] |= 1 << (ri % 64)
		}
	}
	v, _ := s.eligible.LoadOrStore(key, out)
	return v.([]uint64)
}

type pack struct {
	Pack  string `yaml:"pack"`
	Rules []Rule `yaml:"rules"`
}

//go:embed packs/*.yaml
var packFS embed.FS

// isPackFile reports whether an embedded file name is a rule pack.
func isPackFile(name string) bool { return strings.HasSuffix(name, ".yaml") }

// BuiltinPacks returns the raw embedded packs, sorted by file name.
func BuiltinPacks() (map[string][]byte, error) {
	ents, err := packFS.ReadDir("packs")
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, e := range ents {
		if e.IsDir() || !isPackFile(e.Name()) {
			continue
		}
		b, err := packFS.ReadFile("packs/" + e.Name())
		if err != nil {
			return nil, err
		}
		out[e.Name()] = b
	}
	return out, nil
}

// Builtin returns the embedded rule packs, compiled.
func Builtin() (*Set, error) {
	return Load()
}

// Load compiles the embedded packs plus the given user packs (YAML). Errors
// name the pack, the rule id and the field.
func Load(packs ...[]byte) (*Set, error) { return LoadNamed(nil, packs) }

// LoadNamed is Load with names for the user packs (names[i] labels
// packs[i] in errors; missing names are "user pack #N"). User packs may
// come from the change under review, so they are decoded within
// yamlsafe.RulePack's bounds and their errors quote at most one line.
func LoadNamed(names []string, packs [][]byte) (*Set, error) {
	if len(packs) == 0 {
		if ch := takePrewarmed(); ch != nil {
			r := <-ch
			return r.set, r.err
		}
	}
	return loadNamed(names, packs)
}

// The Set a Prewarm started: built once, handed to one LoadNamed.
var prewarm struct {
	mu sync.Mutex
	ch chan loaded
}

type loaded struct {
	set *Set
	err error
}

// Prewarm starts compiling the embedded rule packs (and, through it, the
// secret detector's configuration) on another core; the next LoadNamed
// without user packs takes that Set instead of compiling its own. A
// command that will load the rules calls it as early as it can (review:
// before it asks git for the range and the policy), so the compiling
// overlaps the git processes. A LoadNamed with user packs compiles its own.
func Prewarm() {
	prewarm.mu.Lock()
	defer prewarm.mu.Unlock()
	if prewarm.ch != nil {
		return
	}
	ch := make(chan loaded, 1)
	prewarm.ch = ch
	go func() {
		s, err := loadNamed(nil, nil)
		ch <- loaded{s, err}
	}()
}

// DiscardPrewarm drops a prewarmed Set nobody took (the review's
// providers did not use the built-in rules after all), so it is not held
// for the rest of the process.
func DiscardPrewarm() { takePrewarmed() }

func takePrewarmed() chan loaded {
	prewarm.mu.Lock()
	defer prewarm.mu.Unlock()
	ch := prewarm.ch
	prewarm.ch = nil
	return ch
}

func loadNamed(names []string, packs [][]byte) (*Set, error) {
	builtin, err := builtinDecoded()
	if err != nil {
		return nil, err
	}
	s := &Set{byID: map[string]*Rule{}}
	for _, np := range builtin {
		if err := s.addPack("builtin:"+np.Name, np.Pack, false); err != nil {
			return nil, err
		}
	}
	if err := gateSeverity(s.rules); err != nil {
		return nil, err
	}
	for i, p := range packs {
		label := fmt.Sprintf("user pack #%d", i+1)
		if i < len(names) && names[i] != "" {
			label = names[i]
		}
		if err := s.addUser(label, p); err != nil {
			return nil, err
		}
	}
	if err := s.finish(); err != nil {
		return nil, err
	}
	return s, nil
}

// LoadPacks compiles only the given packs (no builtin rules); name[i] labels data[i] in errors.
func LoadPacks(names []string, data [][]byte) (*Set, error) {
	s := &Set{byID: map[string]*Rule{}}
	for i, d := range data {
		label := fmt.Sprintf("pack #%d", i+1)
		if i < len(names) && names[i] != "" {
			label = names[i]
		}
		if err := s.addUser(label, d); err != nil {
			return nil, err
		}
	}
	if err := s.finish(); err != nil {
		return nil, err
	}
	return s, nil
}

// Rules returns copies of the rules, in load order.
func (s *Set) Rules() []Rule {
	out := make([]Rule, len(s.rules))
	for i, r := range s.rules {
		out[i] = *r
	}
	return out
}

// Rule returns the rule with the given id.
func (s *Set) Rule(id string) (Rule, bool) {
	r, ok := s.byID[id]
	if !ok {
		return Rule{}, false
	}
	return *r, true
}

// Profiles returns the profiles that have rules, in the canonical order.
func (s *Set) Profiles() []string { return append([]string(nil), s.profiles...) }

// addUser adds a pack that is not embedded: bounded decoding first.
func (s *Set) addUser(label string, data []byte) error {
	var p pack
	if err := yamlsafe.Decode(label, data, &p, yamlsafe.RulePack, nil); err != nil {
		return fmt.Errorf("rules: pack %w", err)
	}
	return s.addPack(label, p, true)
}

// addPack compiles a pack's rules. Queries of a user pack (eager) are
// compiled now, so a broken one is a load error naming it; the embedded
// packs' queries compile on first use (their tests compile every one).
func (s *Set) addPack(label string, p pack, eager bool) error {
	name := label
	if p.Pack != "" {
		name = fmt.Sprintf("%s (%s)", p.Pack, label)
	}
	if len(p.Rules) == 0 {
		return fmt.Errorf("rules: pack %s: no rules", name)
	}
	// Rules compile independently (start-up waits for the built-in ones):
	// on every core, then added in order, so the first error reported is
	// the first rule's.
	rules := make([]Rule, len(p.Rules))
	errs := make([]error, len(p.Rules))
	par.For(len(rules), 8, func(i int) {
		rules[i] = p.Rules[i]
		rules[i].Pack = name
		errs[i] = compileRule(&rules[i], eager)
	})
	for i := range rules {
		r := &rules[i]
		if err := errs[i]; err != nil {
			id := r.ID
			if id == "" {
				id = fmt.Sprintf("#%d", i+1)
			}
			return fmt.Errorf("rules: pack %s: rule %s: %w", name, id, err)
		}
		if prev, dup := s.byID[r.ID]; dup {
			return fmt.Errorf("rules: pack %s: rule %s: field id: duplicate rule id (already defined in pack %s)", name, r.ID, prev.Pack)
		}
		s.byID[r.ID] = r
		s.rules = append(s.rules, r)
	}
	return nil
}

func (s *Set) finish() error {
	has := map[string]bool{}
	for _, r := range s.rules {
		has[r.Profile] = true
		for _, id := range r.SuppressedBy {
			if _, ok := s.byID[id]; !ok {
				return fmt.Errorf("rules: pack %s: rule %s: field suppressed_by: unknown rule id %q", r.Pack, r.ID, id)
			}
		}
	}
	for _, p := range Profiles {
		if has[p] {
			s.profiles = append(s.profiles, p)
		}
	}
	s.off = map[*Rule]bool{}
	for _, r := range s.rules {
		if r.OptIn {
			s.off[r] = true
		}
	}
	s.buildPrefilter()
	return nil
}

// Configure turns opt-in rules on (enable) and any rule off (disable), by
// id; a pattern ending in "*" names every rule with that prefix. An id
// that names no rule is an error naming the field, so a typo does not
// silently leave a rule running.
func (s *Set) Configure(enable, disable []string) error {
	defer s.eligible.Clear()
	pick := func(field string, ids []string, on bool) error {
		for i, id := range ids {
			n := 0
			for _, r := range s.rules {
				if idMatches(id, r.ID) {
					n++
					if on {
						delete(s.off, r)
					} else {
						s.off[r] = true
					}
				}
			}
			// The secret detector's rules (secrets.<gitleaks id>) are not
			// pack rules; the builtin provider asks Enabled for them.
			for _, sr := range secrets.Rules() {
				sid := "secrets." + sr.ID
				if idMatches(id, sid) {
					n++
					if s.offIDs == nil {
						s.offIDs = map[string]bool{}
					}
					s.offIDs[sid] = !on
				}
			}
			if n == 0 {
				return fmt.Errorf("rules.%s[%d]: %q names no rule (see docs/rules.md)", field, i, id)
			}
		}
		return nil
	}
	if err := pick("enable", enable, true); err != nil {
		return err
	}
	return pick("disable", disable, false)
}

// idMatches reports whether a configured id names rule id: exactly, or
// as a prefix ending in "*" (tests.*, secrets.github-*).
func idMatches(pattern, id string) bool {
	if p, ok := strings.CutSuffix(pattern, "*"); ok {
		return strings.HasPrefix(id, p)
	}
	return pattern == id
}

// Enabled reports whether the rule with this id runs: a pack rule not
// turned off, or a secret detector rule not disabled.
func (s *Set) Enabled(id string) bool {
	if r, ok := s.byID[id]; ok {
		return !s.off[r]
	}
	return strings.HasPrefix(id, "secrets.") && !s.offIDs[id]
}

var idRe = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]*[a-z0-9]$`)

type fieldErr struct{ field, msg string }

func (e fieldErr) Error() string { return "field " + e.field + ": " + e.msg }

func ferr(field, format string, args ...any) error {
	return fieldErr{field, fmt.Sprintf(format, args...)}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func compileRE(eager bool, field, expr string) (*lazyRE, error) {
	if expr == "" {
		return nil, nil
	}
	re, err := newLazyRE(expr, eager)
	if err != nil {
		return nil, ferr(field, "invalid regular expression %q: %v", expr, err)
	}
	return re, nil
}

func compileRule(r *Rule, eagerQueries bool) error {
	c := &compiled{}
	r.c = c
	if r.ID == "" {
		return ferr("id", "required")
	}
	if !idRe.MatchString(r.ID) {
		return ferr("id", "%q must be lower-case letters, digits, '.', '_' or '-'", r.ID)
	}
	if !contains(Profiles, r.Profile) {
		return ferr("profile", "unknown profile %q (want one of %s)", r.Profile, strings.Join(Profiles, ", "))
	}
	r.Category = strings.ToLower(strings.TrimSpace(r.Category))
	if !contains(Categories, r.Category) {
		return ferr("category", "unknown category %q (want one of %s)", r.Category, strings.Join(Categories, ", "))
	}
	r.Severity = strings.ToLower(strings.TrimSpace(r.Severity))
	if !contains(Severities, r.Severity) {
		return ferr("severity", "unknown severity %q (want one of %s)", r.Severity, strings.Join(Severities, ", "))
	}
	if r.Confidence <= 0 || r.Confidence > 1 {
		return ferr("confidence", "%v must be in (0, 1]", r.Confidence)
	}
	for _, f := range []struct{ name, v string }{{"title", r.Title}, {"message", r.Message}, {"impact", r.Impact}, {"suggestion", r.Suggestion}} {
		if strings.TrimSpace(f.v) == "" {
			return ferr(f.name, "required")
		}
	}
	if r.ImpactScope == "" {
		r.ImpactScope = "changed code"
	}
	if len(r.Languages) > 0 {
		c.langs = map[string]bool{}
		for _, l := range r.Languages {
			l = strings.ToLower(strings.TrimSpace(l))
			switch {
			case l == "*":
				c.langs = nil
			case languageAliases[l] != nil:
				for _, x := range languageAliases[l] {
					c.langs[x] = true
				}
			case knownLanguages[l]:
				c.langs[l] = true
			default:
				return ferr("languages", "unknown language %q", l)
			}
			if c.langs == nil {
				break
			}
		}
	}
	switch r.Scope {
	case "":
		r.Scope = "added"
	case "added", "removed", "file", "change":
	default:
		return ferr("scope", "unknown scope %q (want added, removed, file or change)", r.Scope)
	}
	switch r.MatchIn {
	case "":
		r.MatchIn = "code"
	case "code", "raw":
	default:
		return ferr("match_in", "unknown value %q (want code or raw)", r.MatchIn)
	}
	switch r.Tests {
	case "", "any", "only", "exclude", "advisory":
	default:
		return ferr("tests", "unknown value %q (want any, only, exclude or advisory)", r.Tests)
	}
	var err error
	if c.pattern, err = compileRE(eagerQueries, "pattern", r.Pattern); err != nil {
		return err
	}
	if r.Pattern != "" {
		c.prefilter, c.fold = requiredLiterals(r.Pattern)
	}
	if c.notPattern, err = compileRE(eagerQueries, "not_pattern", r.NotPattern); err != nil {
		return err
	}
	for i, u := range r.Unless {
		re, err := compileRE(eagerQueries, fmt.Sprintf("unless[%d]", i), u)
		if err != nil {
			return err
		}
		c.unless = append(c.unless, re)
	}
	for i, u := range r.Require {
		re, err := compileRE(eagerQueries, fmt.Sprintf("require[%d]", i), u)
		if err != nil {
			return err
		}
		c.require = append(c.require, re)
	}
	for i, u := range r.RequireCode {
		re, err := compileRE(eagerQueries, fmt.Sprintf("require_code[%d]", i), u)
		if err != nil {
			return err
		}
		c.requireCode = append(c.requireCode, re)
	}
	for i, g := range r.Paths {
		re, err := globToRegexp(g, eagerQueries)
		if err != nil {
			return ferr(fmt.Sprintf("paths[%d]", i), "%v", err)
		}
		c.paths = append(c.paths, re)
	}
	for i, g := range r.ExcludePaths {
		re, err := globToRegexp(g, eagerQueries)
		if err != nil {
			return ferr(fmt.Sprintf("exclude_paths[%d]", i), "%v", err)
		}
		c.exclude = append(c.exclude, re)
	}
	if r.FileRequires != "" {
		c.fileReqLits, c.fileReqFold = requiredLiterals(r.FileRequires)
	}
	if r.FileUnless != "" {
		c.fileUnlessLits, c.fileUnlessFold = requiredLiterals(r.FileUnless)
	}
	if c.fileRequires, err = compileRE(eagerQueries, "file_requires", r.FileRequires); err != nil {
		return err
	}
	if c.fileUnless, err = compileRE(eagerQueries, "file_unless", r.FileUnless); err != nil {
		return err
	}
	if c.unlessAdded, err = compileRE(eagerQueries, "unless_added_in_file", r.UnlessAddedInFile); err != nil {
		return err
	}
	if r.UnlessAddedInFile != "" && r.Scope != "removed" {
		return ferr("unless_added_in_file", "only valid with scope: removed")
	}
	if c.unlessRemWith, err = compileRE(eagerQueries, "unless_removed_with", r.UnlessRemovedWith); err != nil {
		return err
	}
	if r.UnlessRemovedWith != "" && r.Scope != "removed" {
		return ferr("unless_removed_with", "only valid with scope: removed")
	}
	if x := r.Context; x != nil {
		if x.Before < 0 || x.After < 0 {
			return ferr("context", "before/after must not be negative")
		}
		if x.Require == "" && x.Forbid == "" {
			return ferr("context", "needs require or forbid")
		}
		if x.MatchIn != "" && x.MatchIn != "code" && x.MatchIn != "raw" {
			return ferr("context.match_in", "unknown value %q (want code or raw)", x.MatchIn)
		}
		if x.require, err = compileRE(eagerQueries, "context.require", x.Require); err != nil {
			return err
		}
		if x.forbid, err = compileRE(eagerQueries, "context.forbid", x.Forbid); err != nil {
			return err
		}
	}
	if b := r.Block; b != nil {
		switch b.Kind {
		case "braces", "indent", "ruby":
		default:
			return ferr("block.kind", "unknown kind %q (want braces, indent or ruby)", b.Kind)
		}
		body := b.Body
		if body == "" {
			body = `^\s*$`
		}
		if b.body, err = compileRE(eagerQueries, "block.body", body); err != nil {
			return err
		}
	}
	if e := r.Enclosing; e != nil {
		if e.Match == "" {
			return ferr("enclosing.match", "required")
		}
		if e.match, err = compileRE(eagerQueries, "enclosing.match", e.Match); err != nil {
			return err
		}
		if e.stop, err = compileRE(eagerQueries, "enclosing.stop", e.Stop); err != nil {
			return err
		}
	}
	if c.pattern != nil {
		c.secretGroup = c.pattern.SubexpIndex("secret")
	}
	if err := compileQuery(r, eagerQueries); err != nil {
		return err
	}
	if err := compileFlow(r, eagerQueries); err != nil {
		return err
	}
	if r.Tests == "" {
		// A security rule describes a production risk: in test code (a
		// test that disables TLS, deserializes a fixture, hashes with MD5)
		// it is advisory, as measured on real repositories, where every
		// such blocking finding was false (docs/quality-real.md). A rule
		// that captures a committed secret keeps its severity there: a
		// live key in a fixture is still a leak.
		r.Tests = "any"
		if r.Category == "security" && c.secretGroup <= 0 {
			r.Tests = "advisory"
		}
	}
	if c.secretUnless, err = compileRE(eagerQueries, "secret_unless", r.SecretUnless); err != nil {
		return err
	}
	if c.secretUnless != nil && c.secretGroup <= 0 {
		return ferr("secret_unless", "pattern has no named group \"secret\"")
	}
	if e := r.Entropy; e != nil {
		if c.pattern == nil || c.pattern.SubexpIndex(e.Group) < 0 {
			return ferr("entropy.group", "pattern has no named group %q", e.Group)
		}
		if e.Min <= 0 {
			return ferr("entropy.min", "must be positive")
		}
	}
	if r.Check != "" {
		if f, ok := changeChecks[r.Check]; ok {
			if r.Scope != "change" {
				return ferr("check", "%q is a change-level check; set scope: change", r.Check)
			}
			c.changeCheck = f
		} else if f, ok := fileChecks[r.Check]; ok {
			if r.Scope == "change" {
				return ferr("check", "%q is a per-file check; it cannot have scope: change", r.Check)
			}
			c.check = f
		} else {
			return ferr("check", "unknown check %q", r.Check)
		}
	}
	if r.Scope == "change" && c.changeCheck == nil {
		return ferr("check", "scope: change needs a change-level check")
	}
	if c.pattern == nil && c.check == nil && c.changeCheck == nil && c.query == nil && c.flow == nil {
		return ferr("pattern", "required (or a query or a check)")
	}
	if len(r.Positive) == 0 {
		return ferr("positive", "at least one positive example is required")
	}
	if len(r.Negative) == 0 {
		return ferr("negative", "at least one negative example is required")
	}
	for i, ex := range append(append([]Example(nil), r.Positive...), r.Negative...) {
		kind, idx := "positive", i
		if i >= len(r.Positive) {
			kind, idx = "negative", i-len(r.Positive)
		}
		if strings.TrimSpace(ex.Path) == "" {
			return ferr(fmt.Sprintf("%s[%d].path", kind, idx), "required")
		}
		if ex.Code == "" && ex.Before == "" {
			return ferr(fmt.Sprintf("%s[%d].code", kind, idx), "required")
		}
	}
	return nil
}

// globToRegexp converts a path glob (*, **, ?, {a,b}, [..]) to a regexp. A
// glob without '/' matches the base name.
func globToRegexp(g string, eager bool) (*lazyRE, error) {
	if g == "" {
		return nil, fmt.Errorf("empty glob")
	}
	base := !strings.Contains(g, "/")
	var sb strings.Builder
	if base {
		sb.WriteString(`(^|/)`)
	} else {
		sb.WriteString(`^`)
		g = strings.TrimPrefix(g, "/")
	}
	inBrace := 0
	for i := 0; i < len(g); i++ {
		c := g[i]
		switch c {
		case '*':
			if i+1 < len(g) && g[i+1] == '*' {
				i++
				if i+1 < len(g) && g[i+1] == '/' {
					i++
					sb.WriteString(`(.*/)?`)
				} else {
					sb.WriteString(`.*`)
				}
			} else {
				sb.WriteString(`[^/]*`)
			}
		case '?':
			sb.WriteString(`[^/]`)
		case '{':
			inBrace++
			sb.WriteString(`(?:`)
		case '}':
			if inBrace == 0 {
				return nil, fmt.Errorf("unbalanced } in glob %q", g)
			}
			inBrace--
			sb.WriteString(`)`)
		case ',':
			if inBrace > 0 {
				sb.WriteString(`|`)
			} else {
				sb.WriteString(`,`)
			}
		case '[':
			j := strings.IndexByte(g[i:], ']')
			if j < 0 {
				return nil, fmt.Errorf("unbalanced [ in glob %q", g)
			}
			sb.WriteString(g[i : i+j+1])
			i += j
		default:
			sb.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	if inBrace != 0 {
		return nil, fmt.Errorf("unbalanced { in glob %q", g)
	}
	sb.WriteString(`$`)
	return newLazyRE(sb.String(), eager)
}

func (r *Rule) appliesTo(f *File) bool {
	return r.appliesToFile(f, &fileFacts{path: path.Clean(f.Path)}, nil)
}

// fileFacts are what appliesTo asks of one file, worked out once for all
// of a set's rules: its clean path, whether it is a test, and its path
// against each of the set's globs (0 unknown, 1 no, 2 yes).
type fileFacts struct {
	path  string
	test  int8
	globs []int8
	set   *Set
}

func newFileFacts(s *Set, f *File) *fileFacts {
	return &fileFacts{path: path.Clean(f.Path), globs: make([]int8, len(s.globs)), set: s}
}

func (ff *fileFacts) isTest() bool {
	if ff.test == 0 {
		ff.test = 1
		if IsTestPath(ff.path) {
			ff.test = 2
		}
	}
	return ff.test == 2
}

// glob reports whether the path matches s.globs[id] (re, when the set
// has no glob table, as for a rule outside a set).
func (ff *fileFacts) glob(globs []*lazyRE, id int, re *lazyRE) bool {
	if globs == nil || id >= len(ff.globs) {
		return re.MatchString(ff.path)
	}
	if ff.globs[id] == 0 {
		ff.globs[id] = 1
		if (ff.set == nil || anyLiteral(ff.path, ff.set.globLits[id], ff.set.globFold[id])) && globs[id].MatchString(ff.path) {
			ff.globs[id] = 2
		}
	}
	return ff.globs[id] == 2
}

// appliesToFile is appliesTo with the file's facts, shared by the rules
// of globs' set (nil: no table).
func (r *Rule) appliesToFile(f *File, ff *fileFacts, globs []*lazyRE) bool {
	if r.c.langs != nil && !r.c.langs[f.Language] {
		return false
	}
	return r.appliesToPath(ff, globs)
}

// appliesToPath is appliesToFile but for the language.
func (r *Rule) appliesToPath(ff *fileFacts, globs []*lazyRE) bool {
	c := r.c
	if len(c.pathIDs) != len(c.paths) || len(c.excludeIDs) != len(c.exclude) {
		globs = nil // not indexed by this set
	}
	if len(c.paths) > 0 {
		ok := false
		for i, re := range c.paths {
			id := 0
			if globs != nil {
				id = c.pathIDs[i]
			}
			if ff.glob(globs, id, re) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	for i, re := range c.exclude {
		id := 0
		if globs != nil {
			id = c.excludeIDs[i]
		}
		if ff.glob(globs, id, re) {
			return false
		}
	}
	switch r.Tests {
	case "only":
		if !ff.isTest() {
			return false
		}
	case "exclude":
		if ff.isTest() {
			return false
		}
	}
	return true
}
