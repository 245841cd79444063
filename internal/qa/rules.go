package qa

import (
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/diffpalhq/diffpal/findings"
)

// Rule is the constraint set of one wire field. FieldRules is the single
// source of both what is published and what is enforced: the MCP adapter
// turns every Rule into JSON Schema keywords of the tools' input (and
// output) schemas, and the library checks every input against the same
// Rules (checkRules) before its own semantic checks, so a constraint cannot
// be published without being enforced or the other way round.
//
// A Rule of a list of strings constrains the list (MinItems, MaxItems) and
// each item (the string keywords). A list that has a Rule is published as
// an array that is never null (hosts send [] or leave the key out; Go's nil
// is the same empty list in process).
type Rule struct {
	// MinLength and MaxLength bound a string in characters (Unicode code
	// points, as JSON Schema counts them); 0 means unbounded.
	MinLength, MaxLength int
	// Pattern is a regular expression a string must match, spelled as the
	// seed publishes it (RE2 syntax; "(?i)" marks case-insensitive hex).
	Pattern string
	// Format is a JSON Schema format; "date-time" (RFC 3339) is enforced.
	Format string
	// Enum narrows a string field to these values (for a field of an enum
	// type it replaces the type's value set).
	Enum []string
	// MinItems and MaxItems bound a list; 0 means unbounded.
	MinItems, MaxItems int
	// Minimum and Maximum bound a number; nil means unbounded.
	Minimum, Maximum *float64
	// Const is the only value the field may have (a bool or an int).
	Const any
}

// Patterns shared by several fields, exactly as the seed (v0.2.11)
// publishes them.
const (
	PatternRunID       = `^qar-[0-9a-f]{32}$`
	PatternRequestID   = `^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`
	PatternEvidenceRef = `^[A-Za-z0-9][A-Za-z0-9._:/-]*$`
	PatternRuleID      = `^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`
	PatternCandidateID = `^F-[0-9]{2,}$`
	PatternGitSHA      = `(?i)^(?:[a-f0-9]{40}|[a-f0-9]{64})$`
	PatternSHA256      = `(?i)^[a-f0-9]{64}$`
	// PatternLowerSHA256 is a server-computed hash (request_sha256).
	PatternLowerSHA256 = `^[a-f0-9]{64}$`
)

func num(f float64) *float64 { return &f }

func ruleText(min, max int) Rule { return Rule{MinLength: min, MaxLength: max} }

// refs is a list of evidence refs with min..max items.
func ruleRefs(min, max int) Rule {
	r := ruleRef()
	r.MinItems, r.MaxItems = min, max
	return r
}

func ruleRef() Rule { return Rule{MinLength: 1, MaxLength: 128, Pattern: PatternEvidenceRef} }

func rulePattern(p string) Rule { return Rule{Pattern: p} }

func ruleMin(n float64) Rule { return Rule{Minimum: num(n)} }

func ruleRange(lo, hi float64) Rule { return Rule{Minimum: num(lo), Maximum: num(hi)} }

func ruleItems(min, max int) Rule { return Rule{MinItems: min, MaxItems: max} }

// FieldRules returns the Rule of every constrained wire field, by Go
// struct type and JSON property name. Fields of an enum type (EnumValues)
// need no Rule to be checked against their values.
func FieldRules() map[reflect.Type]map[string]Rule {
	return ruleTable().rules
}

// constrained lists the rules; see FieldRules.
func constrained() map[reflect.Type]map[string]Rule {
	runID := rulePattern(PatternRunID)
	requestID := rulePattern(PatternRequestID)
	revision := ruleMin(0)
	line := ruleRange(1, maxLine)
	dateTime := Rule{Format: "date-time"}
	alwaysTrue := Rule{Const: true}
	modes := Rule{Enum: []string{PolicyModeConfigured, PolicyModeHostDefault}}
	candidate := map[string]Rule{
		"candidate_id": rulePattern(PatternCandidateID), "title": ruleText(1, 256), "description": ruleText(1, 5000),
		"verification_gap": ruleText(1, 2000), "evidence_refs": ruleRefs(1, 32), "affected_area": ruleText(0, 256),
		"impact": ruleText(0, 2000), "failure_condition": ruleText(1, 2000), "flip_condition": ruleText(1, 2000),
		"source_locations": ruleItems(0, 20),
	}
	final := map[string]Rule{"source_profiles": ruleItems(1, 0), "source_candidates": ruleItems(1, 0)}
	for k, v := range candidate {
		final[k] = v
	}
	return map[reflect.Type]map[string]Rule{
		// Inputs of the tools.
		reflect.TypeFor[GetInput]():  {"run_id": runID},
		reflect.TypeFor[ListInput](): {"limit": ruleRange(1, MaxListLimit), "cursor": ruleText(1, maxCursor)},
		reflect.TypeFor[AdvanceInput](): {"run_id": runID, "completed_step": {Enum: strs(CompletableSteps())},
			"expected_revision": revision, "request_id": requestID},
		reflect.TypeFor[FinishInput](): {"run_id": runID, "expected_revision": revision, "request_id": requestID},
		reflect.TypeFor[DeleteInput](): {"run_id": runID, "expected_revision": revision, "request_id": requestID},
		reflect.TypeFor[ExportInput](): {"run_id": runID, "block_on": {Enum: findings.SeverityNames()}},

		// review_context (seed v0.2.11 input schema).
		reflect.TypeFor[ReviewContextInput](): {
			"repository": ruleText(1, 512), "base_sha": rulePattern(PatternGitSHA), "head_sha": rulePattern(PatternGitSHA),
			"diff_sha256": rulePattern(PatternSHA256), "evidence_packet_sha256": rulePattern(PatternSHA256),
			"changed_files": {MinLength: 1, MaxLength: 1024, MinItems: 1, MaxItems: 500},
			"evidence_refs": ruleRefs(1, 1000), "evidence_registry": ruleItems(0, 1000),
		},
		reflect.TypeFor[RegistryEntry](): {
			"evidence_ref": ruleRef(), "sha256": rulePattern(PatternSHA256), "path": ruleText(1, 1024),
			"revision": rulePattern(PatternGitSHA), "start_line": ruleMin(1), "end_line": ruleMin(1), "locator": ruleText(1, 1024),
		},
		reflect.TypeFor[ReviewRules](): {"schema_version": {Const: 1}, "rules": ruleItems(0, 100)},
		reflect.TypeFor[ReviewRule](): {"rule_id": rulePattern(PatternRuleID), "paths": ruleItems(1, 32),
			"condition": ruleText(1, 2000), "text": ruleText(1, 2000), "rationale": ruleText(1, 2000)},

		// Profile reports, risk signals and the final review report (the
		// seed's output shapes of profile_reports, risk_signals and
		// final_review_report, which advance and finish accept).
		reflect.TypeFor[ProfileReport](): {"scope": ruleText(1, 2000), "evidence_map": ruleItems(0, 500),
			"finding_candidates": ruleItems(0, 100), "coverage_gaps": ruleItems(0, 100), "unverified": ruleItems(0, 100),
			"review_rules_sha256": rulePattern(PatternSHA256)},
		reflect.TypeFor[EvidenceMapEntry](): {"evidence_ref": ruleRef(), "description": ruleText(1, 2000)},
		reflect.TypeFor[RefNote]():          {"text": ruleText(1, 2000), "evidence_refs": ruleRefs(0, 32)},
		reflect.TypeFor[ProfileCandidate](): candidate,
		reflect.TypeFor[SourceLocation]():   {"path": ruleText(1, 1024), "start_line": line, "end_line": line},
		reflect.TypeFor[ContextSelection](): {"source_packet_sha256": rulePattern(PatternSHA256),
			"selected_packet_sha256": rulePattern(PatternSHA256), "included_refs": ruleRefs(0, 1000),
			"omitted_refs": ruleRefs(0, 1000), "budget_omitted_refs": ruleRefs(0, 1000),
			"max_bytes": ruleRange(1, 2_000_000), "selected_bytes": ruleRange(0, 2_000_000)},
		reflect.TypeFor[ExecutionMetrics](): {"started_at": dateTime, "completed_at": dateTime,
			"attempt_count": ruleRange(1, 4), "attempts": ruleItems(0, 4), "input_tokens": ruleMin(0), "output_tokens": ruleMin(0)},
		reflect.TypeFor[ExecutionAttempt](): {"attempt": ruleRange(1, 4), "started_at": dateTime, "completed_at": dateTime,
			"queue_seconds": ruleMin(0), "executor_seconds": ruleMin(0), "preparation_seconds": ruleMin(0),
			"model_seconds": ruleMin(0), "validation_seconds": ruleMin(0), "input_tokens": ruleMin(0),
			"output_tokens": ruleMin(0), "cached_input_tokens": ruleMin(0)},
		reflect.TypeFor[RiskSignals](): {"evidence_refs": ruleRefs(0, 32), "rationale": ruleText(0, 2000)},
		reflect.TypeFor[FinalReviewReport](): {"summary": ruleText(1, 5000), "profiles_reviewed": {},
			"finding_candidates": ruleItems(0, 100), "candidate_decisions": ruleItems(0, 1000),
			"coverage_gaps": ruleItems(0, 100), "unverified": ruleItems(0, 100), "review_rules_sha256": rulePattern(PatternSHA256)},
		reflect.TypeFor[FinalCandidate]():    final,
		reflect.TypeFor[CandidateRef]():      {"candidate_id": rulePattern(PatternCandidateID)},
		reflect.TypeFor[CandidateDecision](): {"final_finding_id": rulePattern(PatternCandidateID), "rationale": ruleText(1, 2000), "evidence_refs": ruleRefs(1, 32)},
		reflect.TypeFor[Refutation](): {"candidate_sha256": rulePattern(PatternSHA256), "context_sha256": rulePattern(PatternSHA256),
			"rationale": ruleText(1, 2000), "evidence_refs": ruleRefs(1, 32)},

		// Outputs: the server's own values, published for hosts and
		// checked by the SDK against the output schemas.
		reflect.TypeFor[Session](): {"read_only": alwaysTrue, "host_owns_decisions": alwaysTrue, "revision": revision,
			"transition_receipts": ruleItems(0, MaxReceipts)},
		reflect.TypeFor[TransitionReceipt](): {"request_id": requestID, "request_sha256": rulePattern(PatternLowerSHA256),
			"applied_revision": ruleMin(1)},
		reflect.TypeFor[ListOutput]():      {"read_only": alwaysTrue, "host_owns_decisions": alwaysTrue},
		reflect.TypeFor[ReviewRoute]():     {"read_only": alwaysTrue, "host_owns_decisions": alwaysTrue},
		reflect.TypeFor[Catalog]():         {"read_only": alwaysTrue, "host_owns_decisions": alwaysTrue},
		reflect.TypeFor[ModelPolicy]():     {"mode": modes},
		reflect.TypeFor[ModelPolicyInfo](): {"mode": modes},
	}
}

// compiledRules is the rule table with its patterns compiled, built once.
type compiledRules struct {
	rules    map[reflect.Type]map[string]Rule
	patterns map[string]func(string) bool
	enums    map[reflect.Type][]string
	// plans: each struct type's fields as checkRules walks them, made
	// once per type (sync.Map: reflect.Type -> []fieldPlan).
	plans sync.Map
}

var ruleTable = sync.OnceValue(func() *compiledRules {
	t := &compiledRules{rules: constrained(), patterns: map[string]func(string) bool{}, enums: EnumValues()}
	for _, fields := range t.rules {
		for _, r := range fields {
			if r.Pattern != "" && t.patterns[r.Pattern] == nil {
				m, err := PatternMatcher(r.Pattern)
				if err != nil {
					panic(err) // the table's own patterns (TestPatternMatchers)
				}
				t.patterns[r.Pattern] = m
			}
		}
	}
	return t
})

// fieldPlan is one JSON field of a struct type, with its rule.
type fieldPlan struct {
	index int
	name  string
	rule  Rule
	has   bool
	// walk: a struct, a pointer to one or a list of them, which a deep
	// check descends into.
	walk bool
}

func (t *compiledRules) plan(rt reflect.Type) []fieldPlan {
	if p, ok := t.plans.Load(rt); ok {
		return p.([]fieldPlan)
	}
	fields := t.rules[rt]
	var plan []fieldPlan
	for i := range rt.NumField() {
		f := rt.Field(i)
		name := JSONName(f)
		if name == "" {
			continue
		}
		r, has := fields[name]
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		walk := isStructish(ft) || ft.Kind() == reflect.Slice && isStructish(ft.Elem())
		plan = append(plan, fieldPlan{index: i, name: name, rule: r, has: has, walk: walk})
	}
	p, _ := t.plans.LoadOrStore(rt, plan)
	return p.([]fieldPlan)
}

// PatternMatcher returns a matcher for pattern: written out for the
// patterns above (regexp matching was most of a review-bound start's input
// checks: every registry item has a ref and a hash), compiled for any
// other. TestPatternMatchers compares each written-out one with its
// regexp.
func PatternMatcher(pattern string) (func(string) bool, error) {
	if m := patternMatcher(pattern); m != nil {
		return m, nil
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, err
	}
	return re.MatchString, nil
}

// patternMatcher is the written-out matcher of one of the patterns above
// (nil for any other).
func patternMatcher(pattern string) func(string) bool {
	switch pattern {
	case PatternRunID:
		return func(s string) bool { return len(s) == 36 && s[:4] == "qar-" && allBytes(s[4:], isLowerHex) }
	case PatternRequestID:
		return func(s string) bool { return isIdent(s, 128, "._:-") }
	case PatternEvidenceRef:
		return func(s string) bool { return isIdent(s, math.MaxInt, "._:/-") }
	case PatternRuleID:
		return func(s string) bool { return isIdent(s, 128, "._-") }
	case PatternCandidateID:
		return func(s string) bool { return len(s) >= 4 && s[:2] == "F-" && allBytes(s[2:], isDigit) }
	case PatternGitSHA:
		return func(s string) bool { return (len(s) == 40 || len(s) == 64) && allBytes(s, isHex) }
	case PatternSHA256:
		return func(s string) bool { return len(s) == 64 && allBytes(s, isHex) }
	case PatternLowerSHA256:
		return func(s string) bool { return len(s) == 64 && allBytes(s, isLowerHex) }
	}
	return nil
}

func allBytes(s string, ok func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}

func isDigit(c byte) bool    { return c >= '0' && c <= '9' }
func isLowerHex(c byte) bool { return isDigit(c) || c >= 'a' && c <= 'f' }
func isHex(c byte) bool      { return isLowerHex(c) || c >= 'A' && c <= 'F' }

// JSONName is a struct field's JSON property name ("" for none), as
// encoding/json and the schema inference name it.
func JSONName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	switch name {
	case "-":
		return ""
	case "":
		return f.Name
	}
	return name
}

// checkRules enforces FieldRules and EnumValues on v (a struct or a
// pointer to one), recording the first failure on c with field paths
// under path. With deep it descends into nested structs, pointers to them
// and lists of them; without, only v's own fields are checked (a nested
// report has its own error code and is checked by its own validator).
func (c *checker) checkRules(path string, v any, deep bool) {
	root := fieldPath{name: path, idx: -1}
	c.walkRules(&root, reflect.ValueOf(v), deep)
}

// fieldPath is a field's path (a.b[2].c), spelled out only when a check
// fails: a review-bound start checks thousands of fields.
type fieldPath struct {
	parent *fieldPath
	name   string // "" for a list item
	idx    int    // the list index of an item, else -1
}

func (p *fieldPath) String() string {
	if p == nil {
		return ""
	}
	prefix := p.parent.String()
	switch {
	case p.idx >= 0:
		return prefix + "[" + strconv.Itoa(p.idx) + "]"
	case prefix == "":
		return p.name
	case p.name == "":
		return prefix
	}
	return prefix + "." + p.name
}

func (c *checker) walkRules(path *fieldPath, rv reflect.Value, deep bool) {
	for rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return
		}
		rv = rv.Elem()
	}
	if rv.Kind() != reflect.Struct || c.err != nil {
		return
	}
	t := ruleTable()
	for _, f := range t.plan(rv.Type()) {
		fp := fieldPath{parent: path, name: f.name, idx: -1}
		fv := rv.Field(f.index)
		c.checkField(&fp, fv, f.rule, f.has)
		if !deep || !f.walk || c.err != nil {
			continue
		}
		for fv.Kind() == reflect.Pointer && !fv.IsNil() {
			fv = fv.Elem()
		}
		switch fv.Kind() {
		case reflect.Struct:
			c.walkRules(&fp, fv, true)
		case reflect.Slice:
			for j := range fv.Len() {
				item := fieldPath{parent: &fp, idx: j}
				c.walkRules(&item, fv.Index(j), true)
			}
		}
	}
}

func isStructish(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind() == reflect.Struct && t != reflect.TypeFor[time.Time]()
}

// checkField applies one field's rule (has reports whether it has one) and
// its type's value set.
func (c *checker) checkField(fp *fieldPath, fv reflect.Value, r Rule, has bool) {
	if fv.Kind() == reflect.Pointer {
		if fv.IsNil() {
			return
		}
		fv = fv.Elem()
	}
	if fv.Kind() == reflect.Slice {
		if has && (r.MinItems > 0 || r.MaxItems > 0) {
			c.itemCount(fp, fv.Len(), r.MinItems, r.MaxItems)
		}
		for i := range fv.Len() {
			item := fieldPath{parent: fp, idx: i}
			c.checkValue(&item, fv.Index(i), r, has)
		}
		return
	}
	c.checkValue(fp, fv, r, has)
}

func (c *checker) checkValue(fp *fieldPath, v reflect.Value, r Rule, has bool) {
	t := ruleTable()
	if v.Kind() == reflect.String {
		allowed := t.enums[v.Type()]
		if has && len(r.Enum) > 0 {
			allowed = r.Enum
		}
		if allowed != nil && !slices.Contains(allowed, v.String()) {
			c.failAt(fp, "must be one of %s (got %q)", strings.Join(allowed, ", "), v.String())
			return
		}
	}
	if !has {
		return
	}
	switch v.Kind() {
	case reflect.String:
		s := v.String()
		if r.MinLength > 0 || r.MaxLength > 0 {
			n := utf8.RuneCountInString(s)
			switch {
			case r.MaxLength == 0 && n < r.MinLength:
				c.failAt(fp, "must be at least %d characters (got %d)", r.MinLength, n)
			case r.MinLength == 0 && r.MaxLength > 0 && n > r.MaxLength:
				c.failAt(fp, "must be at most %d characters (got %d)", r.MaxLength, n)
			case r.MinLength > 0 && r.MaxLength > 0 && (n < r.MinLength || n > r.MaxLength):
				c.failAt(fp, "must be %d-%d characters (got %d)", r.MinLength, r.MaxLength, n)
			}
		}
		if r.Pattern != "" && !t.patterns[r.Pattern](s) {
			c.failAt(fp, "must match %s", r.Pattern)
		}
		if r.Format == "date-time" {
			if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
				c.failAt(fp, "must be an RFC 3339 date-time")
			}
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		c.bounds(fp, float64(v.Int()), r)
	case reflect.Float32, reflect.Float64:
		c.bounds(fp, v.Float(), r)
	}
	if r.Const != nil && !constEqual(v, r.Const) {
		c.failAt(fp, "must be %v", r.Const)
	}
}

func (c *checker) bounds(fp *fieldPath, n float64, r Rule) {
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
	switch {
	case r.Minimum != nil && r.Maximum != nil && (n < *r.Minimum || n > *r.Maximum):
		c.failAt(fp, "must be %s-%s", f(*r.Minimum), f(*r.Maximum))
	case r.Minimum != nil && r.Maximum == nil && n < *r.Minimum:
		c.failAt(fp, "must be >= %s", f(*r.Minimum))
	case r.Maximum != nil && r.Minimum == nil && n > *r.Maximum:
		c.failAt(fp, "must be <= %s", f(*r.Maximum))
	}
}

func (c *checker) itemCount(fp *fieldPath, n, min, max int) {
	switch {
	case max == 0 && n < min:
		c.failAt(fp, "must have at least %d items (got %d)", min, n)
	case min == 0 && max > 0 && n > max:
		c.failAt(fp, "must have at most %d items (got %d)", max, n)
	case min > 0 && max > 0 && (n < min || n > max):
		c.failAt(fp, "must have %d-%d items (got %d)", min, max, n)
	}
}

// failAt is failf at a field path, spelled out only for the first failure.
func (c *checker) failAt(fp *fieldPath, format string, args ...any) {
	if c.err == nil {
		c.failf(fp.String(), format, args...)
	}
}

func constEqual(v reflect.Value, want any) bool {
	switch w := want.(type) {
	case bool:
		return v.Kind() == reflect.Bool && v.Bool() == w
	case int:
		return v.CanInt() && v.Int() == int64(w)
	case string:
		return v.Kind() == reflect.String && v.String() == w
	}
	return false
}
