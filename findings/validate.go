package findings

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Problem is one reason a bundle is invalid, or, in ReadInfo.Warnings,
// one value a reader accepted only after normalizing it.
type Problem struct {
	// Pointer is the RFC 6901 JSON pointer of the offending value ("" is the
	// whole document).
	Pointer string `json:"pointer"`
	// Reason says which rule was broken.
	Reason string `json:"reason"`
}

func (p Problem) String() string {
	ptr := p.Pointer
	if ptr == "" {
		ptr = "/"
	}
	return ptr + ": " + p.Reason
}

// Problems is every problem found in a bundle. As an error it reads as the
// first few problems and a count.
type Problems []Problem

func (ps Problems) Error() string {
	switch len(ps) {
	case 0:
		return "no problems"
	case 1:
		return "invalid bundle: " + ps[0].String()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "invalid bundle: %d problems: ", len(ps))
	for i, p := range ps {
		if i == 3 {
			fmt.Fprintf(&b, "; and %d more", len(ps)-3)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.String())
	}
	return b.String()
}

// Validate checks a bundle built or changed in Go against the rules of its
// version (a missing version is v1), returning every problem found, in
// document order. It does not change the bundle. It checks the canonical
// form a writer must produce, so a severity that is not lower-case is a
// problem here (Normalize lower-cases it), while decoding reads it with a
// warning (ReadInfo.Warnings).
func Validate(b *Bundle) Problems {
	if b == nil {
		return Problems{{Reason: "bundle is nil"}}
	}
	v := &validator{}
	version := b.Version
	if version == "" {
		version = V1
	}
	rules := rulesFor(version)
	if rules == nil {
		v.add("/version", fmt.Sprintf("unsupported version %q: want v1, v2, v3 or v4", b.Version))
		rules = rulesFor(CurrentVersion)
	}
	v.rules = rules
	v.bundleHeader(b, 0, 0)
	for i := range b.Findings {
		v.finding(&b.Findings[i], i)
	}
	return v.problems
}

// loc names an object in the bundle without building its JSON pointer,
// which is only needed when a problem is reported: valid bundles then cost
// no string building at all.
type loc struct {
	array string // "" for the bundle itself, else "findings" or "files"
	idx   int
	sub   string // nested object under the element, e.g. "evidence"
}

func (l loc) ptr(field string) string {
	var b strings.Builder
	if l.array != "" {
		b.WriteString("/" + l.array + "/" + strconv.Itoa(l.idx))
	}
	if l.sub != "" {
		b.WriteString("/" + l.sub)
	}
	if field != "" {
		b.WriteString("/" + field)
	}
	return b.String()
}

func (l loc) in(sub string) loc { l.sub = sub; return l }

// validator applies one version's compiled rules to decoded or built values.
type validator struct {
	rules    *versionRules
	problems Problems
}

func (v *validator) add(ptr, reason string) {
	v.problems = append(v.problems, Problem{Pointer: ptr, Reason: reason})
}

// present reports whether a field counts as given: decoded objects know
// exactly; objects built in Go (seen == 0) count a zero value as missing.
func present(seen fieldSet, id int, nonZero bool) bool {
	if seen != 0 {
		return seen.has(id)
	}
	return nonZero
}

// check runs the value-independent part: required and "not in this version".
// It reports whether the value should be checked further.
func (v *validator) check(k kind, id int, seen, bad fieldSet, nonZero bool, at loc) (*prop, bool) {
	if bad.has(id) {
		return nil, false // the decoder already reported a type error
	}
	r := v.rules.objs[k]
	p := r.props[id]
	if !present(seen, id, nonZero) {
		if r.required.has(id) {
			v.add(at.ptr(fieldNames[k][id]), "is required")
		}
		return nil, false
	}
	return p, p != nil
}

func (v *validator) str(k kind, id int, val string, seen, bad fieldSet, at loc) {
	p, ok := v.check(k, id, seen, bad, val != "", at)
	if !ok {
		return
	}
	if p.minLen > 0 && len(val) < p.minLen {
		v.add(at.ptr(p.name), "must not be empty")
		return
	}
	if p.enum != nil && !contains(p.enum, val) {
		v.add(at.ptr(p.name), enumReason(p.enum, val))
	}
}

// num checks a number. nonZero tells, for values built in Go, whether the
// field counts as given: a line of 0 is missing, a confidence of 0 is not.
func (v *validator) num(k kind, id int, val float64, nonZero bool, seen, bad fieldSet, at loc) {
	p, ok := v.check(k, id, seen, bad, nonZero, at)
	if !ok {
		return
	}
	if val >= p.min && val <= p.max && (p.types&tNumber != 0 || val == math.Trunc(val)) {
		return // the common case, without building a pointer
	}
	v.bounds(p, val, at.ptr(p.name))
}

func (v *validator) bounds(p *prop, val float64, ptr string) {
	switch {
	case math.IsNaN(val) || math.IsInf(val, 0):
		v.add(ptr, "must be a finite number, got a value out of range")
	case p.types&tNumber == 0 && p.types&tInteger != 0 && val != math.Trunc(val):
		v.add(ptr, "must be an integer")
	case val < p.min:
		if p.min == 1 && p.types&tInteger != 0 {
			v.add(ptr, fmt.Sprintf("must be a positive integer, got %s", fmtNum(val)))
		} else {
			v.add(ptr, fmt.Sprintf("must be >= %s, got %s", fmtNum(p.min), fmtNum(val)))
		}
	case val > p.max:
		v.add(ptr, fmt.Sprintf("must be <= %s, got %s", fmtNum(p.max), fmtNum(val)))
	}
}

func (v *validator) obj(k kind, id int, isNil bool, seen, bad fieldSet, at loc) bool {
	_, ok := v.check(k, id, seen, bad, !isNil, at)
	return ok && !isNil
}

func (v *validator) bundleHeader(b *Bundle, seen, bad fieldSet) {
	v.str(kBundle, bVersion, b.Version, seen, bad, loc{})
	v.str(kBundle, bReviewID, b.ReviewID, seen, bad, loc{})
	// base_sha/head_sha are required but may be empty strings (DiffPal writes
	// "" when a SHA is unknown), so presence is all that is checked for
	// decoded bundles; built bundles always carry them.
	if seen != 0 {
		v.str(kBundle, bBaseSHA, b.BaseSHA, seen, bad, loc{})
		v.str(kBundle, bHeadSHA, b.HeadSHA, seen, bad, loc{})
	}
	for _, id := range []int{bRepo, bLanguage, bReviewResult, bFingerprintVersion} {
		var s string
		switch id {
		case bRepo:
			s = b.Repo
		case bLanguage:
			s = b.Language
		case bReviewResult:
			s = b.ReviewResult
		case bFingerprintVersion:
			s = b.FingerprintVersion
		}
		v.str(kBundle, id, s, seen, bad, loc{})
	}
	for i, f := range b.Files {
		at := loc{array: "files", idx: i}
		v.str(kFile, flPath, f.Path, f.seen, f.bad, at)
		v.str(kFile, flStatus, f.Status, f.seen, f.bad, at)
		if f.Path != "" && !f.bad.has(flPath) {
			v.path(f.Path, at, "path")
		}
	}
	if b.Gate != nil && v.rules.objs[kBundle].props[bGate] != nil {
		v.str(kGate, gBlockOn, string(b.Gate.BlockOn), 0, 0, loc{sub: "gate"})
		if b.Gate.MinConfidence != nil {
			v.num(kGate, gMinConfidence, *b.Gate.MinConfidence, true, 0, 0, loc{sub: "gate"})
		}
	}
	if seen == 0 && b.Findings == nil {
		// A nil slice is written as [] so it is never "missing" in Go.
		return
	}
	v.check(kBundle, bFindings, seen, bad, true, loc{})
}

// finding validates one finding.
func (v *validator) finding(f *Finding, i int) {
	base := loc{array: "findings", idx: i}
	s, bad := f.seen, f.bad
	v.str(kFinding, fID, f.ID, s, bad, base)
	v.str(kFinding, fReviewID, f.ReviewID, s, bad, base)
	v.str(kFinding, fStableID, f.StableID, s, bad, base)
	v.str(kFinding, fCategory, f.Category, s, bad, base)
	v.str(kFinding, fSeverity, string(f.Severity), s, bad, base)
	v.num(kFinding, fConfidence, f.Confidence, true, s, bad, base)
	v.str(kFinding, fPath, f.Path, s, bad, base)
	if f.Path != "" && !bad.has(fPath) {
		v.path(f.Path, base, "path")
	}
	v.num(kFinding, fStartLine, float64(f.StartLine), f.StartLine != 0, s, bad, base)
	v.num(kFinding, fEndLine, float64(f.EndLine), f.EndLine != 0, s, bad, base)
	if f.StartLine > 0 && f.EndLine > 0 && f.EndLine < f.StartLine {
		v.add(base.ptr("end_line"), fmt.Sprintf("must be >= start_line (%d), got %d", f.StartLine, f.EndLine))
	}
	if v.obj(kFinding, fChangedSpan, f.ChangedSpan == nil, s, bad, base) {
		v.span(f.ChangedSpan, base.in("changed_span"), v.rules.version == V4)
	}
	if v.obj(kFinding, fSupportingSpan, f.SupportingSpan == nil, s, bad, base) {
		v.span(f.SupportingSpan, base.in("supporting_span"), false)
	}
	v.str(kFinding, fTitle, f.Title, s, bad, base)
	v.str(kFinding, fMessage, f.Message, s, bad, base)
	if v.obj(kFinding, fEvidence, f.Evidence == nil, s, bad, base) {
		e := f.Evidence
		b := base.in("evidence")
		v.str(kEvidence, eAnchor, e.Anchor, e.seen, e.bad, b)
		v.str(kEvidence, eReasoningBasis, e.ReasoningBasis, e.seen, e.bad, b)
		v.str(kEvidence, eSource, e.Source, e.seen, e.bad, b)
	}
	if v.obj(kFinding, fImpact, f.Impact == nil, s, bad, base) {
		m := f.Impact
		b := base.in("impact")
		v.str(kImpact, iSummary, m.Summary, m.seen, m.bad, b)
		v.str(kImpact, iScope, m.Scope, m.seen, m.bad, b)
	}
	v.str(kFinding, fSuggestion, f.Suggestion, s, bad, base)
	v.str(kFinding, fProvider, f.Provider, s, bad, base)
	v.str(kFinding, fRuleID, f.RuleID, s, bad, base)
}

func (v *validator) span(sp *Span, base loc, sideRequired bool) {
	s, bad := sp.seen, sp.bad
	v.str(kSpan, sPath, sp.Path, s, bad, base)
	if sp.Path != "" && !bad.has(sPath) {
		v.path(sp.Path, base, "path")
	}
	v.num(kSpan, sStartLine, float64(sp.StartLine), sp.StartLine != 0, s, bad, base)
	v.num(kSpan, sEndLine, float64(sp.EndLine), sp.EndLine != 0, s, bad, base)
	if sp.StartLine > 0 && sp.EndLine > 0 && sp.EndLine < sp.StartLine {
		v.add(base.ptr("end_line"), fmt.Sprintf("must be >= start_line (%d), got %d", sp.StartLine, sp.EndLine))
	}
	if sideRequired && !bad.has(sSide) && !present(s, sSide, sp.Side != "") {
		v.add(base.ptr("side"), "is required in v4 (LEFT or RIGHT)")
		return
	}
	v.str(kSpan, sSide, sp.Side, s, bad, base)
}

// path enforces repository-relative, forward-slash paths: a bundle is read
// by tools that join these paths onto a checkout, so absolute paths, ".."
// segments and NUL bytes are never acceptable.
func (v *validator) path(p string, at loc, field string) {
	if reason := pathProblem(p); reason != "" {
		v.add(at.ptr(field), reason)
	}
}

// PathProblem says why p cannot be a finding or file path of a bundle
// (absolute, a drive path, a ".." segment, a NUL byte), or "" when it can.
func PathProblem(p string) string { return pathProblem(p) }

func pathProblem(p string) string {
	switch {
	case strings.IndexByte(p, 0) >= 0:
		return "must not contain a NUL byte"
	case strings.HasPrefix(p, "/"):
		return fmt.Sprintf("must be repository-relative, got absolute path %q", p)
	case len(p) >= 2 && p[1] == ':' && (p[0]|0x20) >= 'a' && (p[0]|0x20) <= 'z':
		return fmt.Sprintf("must be repository-relative, got drive path %q", p)
	}
	for rest := p; rest != ""; {
		seg := rest
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			seg, rest = rest[:i], rest[i+1:]
		} else {
			rest = ""
		}
		if seg == ".." {
			return fmt.Sprintf("must not contain a \"..\" segment, got %q", p)
		}
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func enumReason(enum []string, got string) string {
	if len(enum) == 1 {
		return fmt.Sprintf("must be %q, got %q", enum[0], got)
	}
	reason := fmt.Sprintf("must be one of %s, got %q", strings.Join(enum, ", "), got)
	if contains(enum, strings.ToLower(got)) {
		reason += " (lower-case required; `diffpal upgrade` normalizes it)"
	}
	return reason
}

func fmtNum(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// sortProblems puts the problems of one object (all starting with base+"/")
// in the order of the kind's fields, so decoder type errors and validator
// rule errors read in document order. It is only called when there are
// problems, so valid bundles pay nothing.
func sortProblems(ps []Problem, base string, k kind) {
	rank := func(p Problem) int {
		rest := strings.TrimPrefix(p.Pointer, base+"/")
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			rest = rest[:i]
		}
		for i, n := range fieldNames[k] {
			if n == rest {
				return i
			}
		}
		return len(fieldNames[k])
	}
	slices.SortStableFunc(ps, func(a, b Problem) int { return rank(a) - rank(b) })
}
