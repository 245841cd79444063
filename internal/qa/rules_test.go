package qa

import (
	"math/rand/v2"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// TestFieldRulesNameRealFields: every rule names a JSON property of its
// type, every pattern compiles, and rules on lists or strings only use the
// keywords that apply to them, so a rename cannot silently drop a
// constraint from both the schemas and the checks.
func TestFieldRulesNameRealFields(t *testing.T) {
	for typ, fields := range FieldRules() {
		props := map[string]reflect.Type{}
		for i := range typ.NumField() {
			f := typ.Field(i)
			if f.Anonymous {
				for j := range f.Type.NumField() {
					props[JSONName(f.Type.Field(j))] = f.Type.Field(j).Type
				}
				continue
			}
			props[JSONName(f)] = f.Type
		}
		for name, r := range fields {
			ft, ok := props[name]
			if !ok {
				t.Errorf("rule %s.%s names no field", typ.Name(), name)
				continue
			}
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if r.Pattern != "" {
				if _, err := regexp.Compile(r.Pattern); err != nil {
					t.Errorf("%s.%s: pattern %q: %v", typ.Name(), name, r.Pattern, err)
				}
			}
			if (r.MinItems > 0 || r.MaxItems > 0) && ft.Kind() != reflect.Slice {
				t.Errorf("%s.%s: item counts on a %s", typ.Name(), name, ft.Kind())
			}
			elem := ft
			if ft.Kind() == reflect.Slice {
				elem = ft.Elem()
			}
			if (r.MinLength > 0 || r.MaxLength > 0 || r.Pattern != "" || r.Format != "" || len(r.Enum) > 0) && elem.Kind() != reflect.String {
				t.Errorf("%s.%s: string keywords on a %s", typ.Name(), name, elem.Kind())
			}
		}
	}
}

// TestRulePatterns pins the seed's patterns against examples.
func TestRulePatterns(t *testing.T) {
	for _, c := range []struct {
		pattern string
		ok, bad []string
	}{
		{PatternRunID, []string{"qar-" + strings.Repeat("a0", 16)}, []string{"qar-" + strings.Repeat("A0", 16), "run-1", "qar-" + strings.Repeat("0", 31)}},
		{PatternGitSHA, []string{sha40, strings.ToUpper(sha40), shaA}, []string{"main", sha40[:39], sha40 + "0"}},
		{PatternSHA256, []string{shaA, strings.ToUpper(shaB)}, []string{sha40, "x"}},
		{PatternEvidenceRef, []string{"E1", "f1:h1", "diff:src/a.go:h1"}, []string{".x", "", "a b"}},
		{PatternCandidateID, []string{"F-01", "F-123"}, []string{"F-1", "f-01", "F-0a"}},
		{PatternRequestID, []string{"r1", "host:triage-1"}, []string{"-x", "a/b", strings.Repeat("a", 129)}},
		{PatternRuleID, []string{"auth-001", "a.b_c"}, []string{"-bad", "a:b"}},
	} {
		re := regexp.MustCompile(c.pattern)
		for _, s := range c.ok {
			if !re.MatchString(s) {
				t.Errorf("%s rejects %q", c.pattern, s)
			}
		}
		for _, s := range c.bad {
			if re.MatchString(s) {
				t.Errorf("%s accepts %q", c.pattern, s)
			}
		}
	}
}

// TestEnumValuesAreTheValidators: the value sets published as enums are
// the ones the library accepts (Valid and the rule check).
func TestEnumValuesAreTheValidators(t *testing.T) {
	ev := EnumValues()
	if strings.Join(ev[reflect.TypeFor[TaskType]()], ",") != strings.Join(strs(TaskTypes()), ",") ||
		strings.Join(ev[reflect.TypeFor[Step]()], ",") != "triage,primary_review,deep_review,synthesis,awaiting_host_outcome" ||
		len(ev[reflect.TypeFor[Profile]()]) != 10 || len(ev[reflect.TypeFor[Bundle]()]) != 9 {
		t.Fatalf("enum values: %v", ev)
	}
	c := &checker{code: CodeInvalidArgument}
	c.checkRules("", AdvanceInput{RunID: "qar-" + strings.Repeat("0", 32), CompletedStep: StepAwaitingHostOutcome, Status: OutcomeCompleted}, false)
	if c.err == nil || c.err.Field != "completed_step" {
		t.Fatalf("completed_step narrowed by its rule: %v", c.err)
	}
	c = &checker{code: CodeInvalidArgument}
	c.checkRules("", AdvanceInput{RunID: "qar-" + strings.Repeat("0", 32), CompletedStep: StepTriage, Status: "done"}, false)
	if c.err == nil || c.err.Field != "status" {
		t.Fatalf("status outside its enum: %v", c.err)
	}
}

// TestPatternMatchers checks each written-out pattern matcher against the
// pattern's regexp, on strings built from the bytes the patterns care
// about (and some they refuse) at every length around their bounds.
func TestPatternMatchers(t *testing.T) {
	patterns := []string{PatternRunID, PatternRequestID, PatternEvidenceRef, PatternRuleID,
		PatternCandidateID, PatternGitSHA, PatternSHA256, PatternLowerSHA256}
	alphabet := "09afAFgzGZ._:/-qr F\n\x00é"
	rng := rand.New(rand.NewPCG(1, 2))
	var inputs []string
	for n := range 131 {
		for range 40 {
			b := make([]byte, n)
			for i := range b {
				b[i] = alphabet[rng.IntN(len(alphabet))]
			}
			inputs = append(inputs, string(b))
		}
		// Valid-looking strings with one byte changed, and their prefixes.
		inputs = append(inputs, "qar-"+strings.Repeat("0a", n/2), "F-"+strings.Repeat("7", n),
			strings.Repeat("aB3", n/3+1)[:n], strings.Repeat("a", n)+"\n", "a"+strings.Repeat("._:/-", n/5))
	}
	inputs = append(inputs, "qar-0123456789abcdef0123456789abcdef", "qar-0123456789abcdef0123456789abcdeF",
		"F-1", "F-12", "F-12a", strings.Repeat("f", 40), strings.Repeat("F", 64), strings.Repeat("0", 64)+"\n", strings.Repeat("0a", 32), strings.Repeat("0a", 20))
	for _, p := range patterns {
		fast, re := patternMatcher(p), regexp.MustCompile(p)
		if fast == nil {
			t.Fatalf("pattern %s has no written-out matcher", p)
		}
		matched := 0
		for _, s := range inputs {
			if got, want := fast(s), re.MatchString(s); got != want {
				t.Errorf("pattern %s on %q: matcher says %v, regexp %v", p, s, got, want)
			}
			if re.MatchString(s) {
				matched++
			}
		}
		if matched == 0 {
			t.Errorf("pattern %s: no input matched; the comparison tests refusals only", p)
		}
	}
}
