package findings

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// validV3 is a minimal valid v3 bundle as a generic value that cases edit.
func validV3() map[string]any {
	return map[string]any{
		"version":   "v3",
		"review_id": "rev-1",
		"base_sha":  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		"head_sha":  "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
		"findings":  []any{validFinding()},
	}
}

func validFinding() map[string]any {
	return map[string]any{
		"category":     "security",
		"severity":     "high",
		"confidence":   0.9,
		"path":         "internal/session.go",
		"start_line":   12,
		"end_line":     14,
		"changed_span": map[string]any{"path": "internal/session.go", "start_line": 12, "end_line": 14},
		"title":        "Command injection",
		"message":      "exec receives request input",
		"evidence":     map[string]any{"anchor": "exec.Command(name)", "reasoning_basis": "name comes from the request", "source": "changed_line"},
		"impact":       map[string]any{"summary": "users can run commands", "scope": "request handling"},
	}
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func f0(b map[string]any) map[string]any { return b["findings"].([]any)[0].(map[string]any) }

// TestValidationRules has one case per rule: each edits a valid bundle to
// break exactly one rule and names the pointer and reason it must produce.
func TestValidationRules(t *testing.T) {
	type edit func(b map[string]any)
	cases := []struct {
		name    string
		version string // base version; default v3
		edit    edit
		want    []string // "pointer: reason substring", all must appear, and nothing else
	}{
		{"valid v3", "", func(map[string]any) {}, nil},
		{"unsupported version", "", func(b map[string]any) { b["version"] = "v9" }, []string{`/version: unsupported version "v9"`}},
		{"version wrong type", "", func(b map[string]any) { b["version"] = 3 }, []string{"/version: must be a string, got number"}},
		{"review_id missing", "", func(b map[string]any) { delete(b, "review_id") }, []string{"/review_id: is required"}},
		{"review_id empty", "", func(b map[string]any) { b["review_id"] = "" }, []string{"/review_id: must not be empty"}},
		{"base_sha missing", "", func(b map[string]any) { delete(b, "base_sha") }, []string{"/base_sha: is required"}},
		{"head_sha wrong type", "", func(b map[string]any) { b["head_sha"] = true }, []string{"/head_sha: must be a string, got boolean"}},
		{"empty SHAs allowed", "", func(b map[string]any) { b["base_sha"], b["head_sha"] = "", "" }, nil},
		{"findings missing", "", func(b map[string]any) { delete(b, "findings") }, []string{"/findings: is required"}},
		{"findings not array", "", func(b map[string]any) { b["findings"] = map[string]any{} }, []string{"/findings: must be an array, got object"}},
		{"findings empty ok", "", func(b map[string]any) { b["findings"] = []any{} }, nil},
		{"finding not object", "", func(b map[string]any) { b["findings"] = []any{"x"} }, []string{"/findings/0: must be an object, got string"}},
		{"files path empty", "", func(b map[string]any) { b["files"] = []any{map[string]any{"path": ""}} }, []string{"/files/0/path: must not be empty"}},
		{"files path missing", "", func(b map[string]any) { b["files"] = []any{map[string]any{"status": "added"}} }, []string{"/files/0/path: is required"}},
		{"files path absolute", "", func(b map[string]any) { b["files"] = []any{map[string]any{"path": "/etc/passwd"}} }, []string{"/files/0/path: must be repository-relative"}},
		{"change_summary wrong item", "", func(b map[string]any) { b["change_summary"] = []any{"ok", 5} }, []string{"/change_summary/1: must be a string, got number"}},
		{"prompt wrong type", "", func(b map[string]any) { b["prompt"] = "p" }, []string{"/prompt: must be an object, got string"}},
		{"inspection field wrong type", "", func(b map[string]any) { b["inspection"] = map[string]any{"required": "yes"} }, []string{"/inspection/required: must be a boolean, got string"}},
		{"gate block_on invalid", "", func(b map[string]any) { b["gate"] = map[string]any{"block_on": "severe"} }, []string{`/gate/block_on: must be one of low, medium, high, critical, got "severe"`}},
		{"unknown fields ignored", "", func(b map[string]any) {
			b["x_extra"] = map[string]any{"deep": []any{1, 2, map[string]any{}}}
			f0(b)["rule_hint"] = 7
			f0(b)["evidence"].(map[string]any)["kind"] = "code"
		}, nil},
		{"category missing", "", func(b map[string]any) { delete(f0(b), "category") }, []string{"/findings/0/category: is required"}},
		{"category empty", "", func(b map[string]any) { f0(b)["category"] = "" }, []string{"/findings/0/category: must not be empty"}},
		{"severity missing", "", func(b map[string]any) { delete(f0(b), "severity") }, []string{"/findings/0/severity: is required"}},
		{"severity unknown", "", func(b map[string]any) { f0(b)["severity"] = "blocker" }, []string{`/findings/0/severity: must be one of low, medium, high, critical, got "blocker"`}},
		// Not lower-case is a warning, not a problem (TestSeverityCaseIsAWarning).
		{"severity upper-case", "", func(b map[string]any) { f0(b)["severity"] = "HIGH" }, nil},
		{"severity padded", "", func(b map[string]any) { f0(b)["severity"] = " high" }, []string{`/findings/0/severity: must be one of low, medium, high, critical, got " high"`}},
		{"confidence missing", "", func(b map[string]any) { delete(f0(b), "confidence") }, []string{"/findings/0/confidence: is required"}},
		{"confidence above 1", "", func(b map[string]any) { f0(b)["confidence"] = 1.5 }, []string{"/findings/0/confidence: must be <= 1, got 1.5"}},
		{"confidence negative", "", func(b map[string]any) { f0(b)["confidence"] = -0.1 }, []string{"/findings/0/confidence: must be >= 0, got -0.1"}},
		{"confidence string NaN", "", func(b map[string]any) { f0(b)["confidence"] = "NaN" }, []string{"/findings/0/confidence: must be a number, got string"}},
		{"confidence bounds inclusive", "", func(b map[string]any) { f0(b)["confidence"] = 0 }, nil},
		{"path missing", "", func(b map[string]any) { delete(f0(b), "path") }, []string{"/findings/0/path: is required"}},
		{"path dotdot", "", func(b map[string]any) { f0(b)["path"] = "a/../../etc/passwd" }, []string{`/findings/0/path: must not contain a ".." segment`}},
		{"path NUL", "", func(b map[string]any) { f0(b)["path"] = "a\x00b.go" }, []string{"/findings/0/path: must not contain a NUL byte"}},
		{"path absolute", "", func(b map[string]any) { f0(b)["path"] = "/abs.go" }, []string{"/findings/0/path: must be repository-relative, got absolute path"}},
		{"path drive", "", func(b map[string]any) { f0(b)["path"] = `C:\x.go` }, []string{"/findings/0/path: must be repository-relative, got drive path"}},
		{"path dots inside names ok", "", func(b map[string]any) { f0(b)["path"] = "a..b/..c/x..go" }, nil},
		{"start_line zero", "", func(b map[string]any) { f0(b)["start_line"] = 0 }, []string{"/findings/0/start_line: must be a positive integer, got 0"}},
		{"start_line negative", "", func(b map[string]any) { f0(b)["start_line"] = -3 }, []string{"/findings/0/start_line: must be a positive integer, got -3"}},
		{"start_line fraction", "", func(b map[string]any) { f0(b)["start_line"] = 1.5 }, []string{"/findings/0/start_line: must be an integer"}},
		{"start_line huge", "", func(b map[string]any) { f0(b)["start_line"] = 1e30 }, []string{"/findings/0/start_line: must be <= 2147483647, got 1e+30"}},
		{"end_line missing", "", func(b map[string]any) { delete(f0(b), "end_line") }, []string{"/findings/0/end_line: is required"}},
		{"end before start", "", func(b map[string]any) { f0(b)["end_line"] = 11 }, []string{"/findings/0/end_line: must be >= start_line (12), got 11"}},
		{"changed_span missing v3", "", func(b map[string]any) { delete(f0(b), "changed_span") }, []string{"/findings/0/changed_span: is required"}},
		{"changed_span missing v2", "v2", func(b map[string]any) { delete(f0(b), "changed_span") }, []string{"/findings/0/changed_span: is required"}},
		{"changed_span missing v1 ok", "v1", func(b map[string]any) { delete(f0(b), "changed_span") }, nil},
		{"changed_span wrong type", "", func(b map[string]any) { f0(b)["changed_span"] = []any{} }, []string{"/findings/0/changed_span: must be an object, got array"}},
		{"changed_span.path missing", "", func(b map[string]any) { delete(f0(b)["changed_span"].(map[string]any), "path") }, []string{"/findings/0/changed_span/path: is required"}},
		{"changed_span.start_line zero", "", func(b map[string]any) { f0(b)["changed_span"].(map[string]any)["start_line"] = 0 }, []string{"/findings/0/changed_span/start_line: must be a positive integer, got 0"}},
		{"changed_span end before start", "", func(b map[string]any) { f0(b)["changed_span"].(map[string]any)["end_line"] = 2 }, []string{"/findings/0/changed_span/end_line: must be >= start_line (12), got 2"}},
		{"changed_span bad side", "", func(b map[string]any) { f0(b)["changed_span"].(map[string]any)["side"] = "MIDDLE" }, []string{`/findings/0/changed_span/side: must be one of LEFT, RIGHT, got "MIDDLE"`}},
		{"supporting_span checked", "", func(b map[string]any) {
			f0(b)["supporting_span"] = map[string]any{"path": "../x", "start_line": 3, "end_line": 1}
		}, []string{`/findings/0/supporting_span/path: must not contain a ".." segment`, "/findings/0/supporting_span/end_line: must be >= start_line (3), got 1"}},
		{"title empty", "", func(b map[string]any) { f0(b)["title"] = "" }, []string{"/findings/0/title: must not be empty"}},
		{"message missing", "", func(b map[string]any) { delete(f0(b), "message") }, []string{"/findings/0/message: is required"}},
		{"evidence missing", "", func(b map[string]any) { delete(f0(b), "evidence") }, []string{"/findings/0/evidence: is required"}},
		{"evidence string in v3", "", func(b map[string]any) { f0(b)["evidence"] = "legacy" }, []string{"/findings/0/evidence: must be an object, got string"}},
		{"evidence string in v2", "v2", func(b map[string]any) { f0(b)["evidence"] = "legacy" }, []string{"/findings/0/evidence: must be an object, got string"}},
		{"evidence string in v1 ok", "v1", func(b map[string]any) { f0(b)["evidence"] = "legacy" }, nil},
		{"evidence empty string v1", "v1", func(b map[string]any) { f0(b)["evidence"] = "" }, []string{"/findings/0/evidence: must not be empty"}},
		{"evidence number v1", "v1", func(b map[string]any) { f0(b)["evidence"] = 1 }, []string{"/findings/0/evidence: must be a string or an object, got number"}},
		{"evidence subfields", "", func(b map[string]any) {
			f0(b)["evidence"] = map[string]any{"anchor": 1, "source": ""}
		}, []string{"/findings/0/evidence/anchor: must be a string, got number", "/findings/0/evidence/reasoning_basis: is required", "/findings/0/evidence/source: must not be empty"}},
		{"impact missing", "", func(b map[string]any) { delete(f0(b), "impact") }, []string{"/findings/0/impact: is required"}},
		{"impact string in v1 ok", "v1", func(b map[string]any) { f0(b)["impact"] = "bad things" }, nil},
		{"impact subfields", "", func(b map[string]any) { f0(b)["impact"] = map[string]any{"summary": "s"} }, []string{"/findings/0/impact/scope: is required"}},
		{"blocking wrong type", "", func(b map[string]any) { f0(b)["blocking"] = "true" }, []string{"/findings/0/blocking: must be a boolean, got string"}},
		{"suggestion wrong type", "", func(b map[string]any) { f0(b)["suggestion"] = nil }, []string{"/findings/0/suggestion: must be a string, got null"}},
		{"v1 without version", "v1", func(b map[string]any) { delete(b, "version") }, nil},
		{"v4 side required", "v4", func(b map[string]any) {}, []string{"/findings/0/changed_span/side: is required in v4"}},
		{"v4 side given", "v4", func(b map[string]any) { f0(b)["changed_span"].(map[string]any)["side"] = "LEFT" }, nil},
		{"review_result type only in v3", "", func(b map[string]any) { b["review_result"] = 5 }, []string{"/review_result: must be a string, got number"}},
		{"review_result unknown in v2", "v2", func(b map[string]any) { b["review_result"] = 5 }, nil},
		{"many problems all reported", "", func(b map[string]any) {
			f := f0(b)
			f["severity"], f["confidence"], f["start_line"], f["title"] = "x", 2, 0, ""
			b["findings"] = append(b["findings"].([]any), map[string]any{})
		}, []string{
			"/findings/0/severity:", "/findings/0/confidence:", "/findings/0/start_line:", "/findings/0/title:",
			"/findings/1/category: is required", "/findings/1/severity: is required", "/findings/1/confidence: is required",
			"/findings/1/path: is required", "/findings/1/start_line: is required", "/findings/1/end_line: is required",
			"/findings/1/changed_span: is required", "/findings/1/title: is required", "/findings/1/message: is required",
			"/findings/1/evidence: is required", "/findings/1/impact: is required",
		}},
		{"pointer escaping", "", func(b map[string]any) {
			f0(b)["changed_span"] = map[string]any{"path": "x", "start_line": 1, "end_line": 1}
			b["files"] = []any{map[string]any{"path": "a", "status": 1}}
		}, []string{"/files/0/status: must be a string, got number"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := validV3()
			if tc.version != "" {
				b["version"] = tc.version
			}
			tc.edit(b)
			data := mustJSON(t, b)
			_, _, problems, err := Decode(data, DecodeOptions{})
			if err != nil {
				t.Fatalf("Decode error: %v", err)
			}
			checkProblems(t, problems, tc.want)
			// The streaming path (gate, validate) must report the same.
			_, _, streamed, _ := Decode(data, DecodeOptions{OnFinding: func(*Finding, bool) {}})
			if fmt.Sprint(streamed) != fmt.Sprint(problems) {
				t.Errorf("streaming decode differs:\n%v\nvs\n%v", streamed, problems)
			}
		})
	}
}

func checkProblems(t *testing.T, got Problems, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("got %d problems, want %d:\n%s", len(got), len(want), problemList(got))
	}
	for _, w := range want {
		found := false
		for _, p := range got {
			if strings.Contains(p.String(), w) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("missing problem %q in:\n%s", w, problemList(got))
		}
	}
}

func problemList(ps Problems) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString("  " + p.String() + "\n")
	}
	return b.String()
}

func TestSyntaxErrors(t *testing.T) {
	cases := []struct {
		in, want string
	}{
		{"", "empty input"},
		{"   \n ", "empty input"},
		{"[]", "must be a JSON object, got array"},
		{`"x"`, "must be a JSON object, got string"},
		{"null", "must be a JSON object, got null"},
		{"\xff", "invalid character byte 0xff"},
		{`{"version":"v3","findings":[{"category":`, "unexpected end of input (is the file truncated?)"},
		{`{"version":"v3","findings":[{"category":"a`, "inside a string (is the file truncated?)"},
		{`{"version":"v3"`, "unexpected end of input"},
		{`{"a":1}x`, "after the end of the bundle"},
		{`{"a":01}`, "leading zero"},
		{`{"a":1.}`, "no digits after the decimal point"},
		{`{"a":1e}`, "no digits in the exponent"},
		{`{"a":NaN}`, "looking for a value"},
		{`{"a":tru}`, "in literal true"},
		{`{"a":"\q"}`, `invalid escape "\\q"`},
		{`{"a":"\u12G4"}`, "not a hex digit"},
		{"{\"a\":\"\x01\"}", "invalid control character"},
		{`{"a" 1}`, "after object key"},
		{`{"a":1 "b":2}`, "missing comma"},
		{`{"findings":[1 2]}`, "missing comma or ']'"},
		{`{1:2}`, "looking for an object key"},
		{`{"x":` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + `}`, "nesting deeper than 1000 levels"},
	}
	for _, tc := range cases {
		_, _, _, err := Decode([]byte(tc.in), DecodeOptions{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Decode(%.40q) error = %v, want containing %q", tc.in, err, tc.want)
		}
		var se *SyntaxError
		if err != nil && !asSyntax(err, &se) {
			t.Errorf("Decode(%.40q) error %T is not a *SyntaxError", tc.in, err)
		}
	}
	// Pointer and position are reported.
	_, _, _, err := Decode([]byte("{\"version\":\"v3\",\n\"findings\":[{\"title\": x}]}"), DecodeOptions{})
	var se *SyntaxError
	if !asSyntax(err, &se) || se.Line != 2 || se.Pointer != "/findings/0/title" {
		t.Errorf("got %#v, want line 2 at /findings/0/title", err)
	}
}

func asSyntax(err error, target **SyntaxError) bool {
	se, ok := err.(*SyntaxError)
	if ok {
		*target = se
	}
	return ok
}

func TestDuplicateFindingsKey(t *testing.T) {
	in := `{"version":"v3","review_id":"r","base_sha":"","head_sha":"","findings":[],"findings":[]}`
	_, _, ps, err := Decode([]byte(in), DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkProblems(t, ps, []string{`/findings: duplicate "findings" key`})
}

func TestValidateGoBuiltBundle(t *testing.T) {
	b := &Bundle{Version: V3, ReviewID: "r", Findings: []Finding{{
		Category: "bug", Severity: "medium", Confidence: 0.5, Path: "a.go", StartLine: 3, EndLine: 2,
		Title: "t", Message: "m",
	}}}
	checkProblems(t, Validate(b), []string{
		"/findings/0/end_line: must be >= start_line (3), got 2",
		"/findings/0/changed_span: is required",
		"/findings/0/evidence: is required",
		"/findings/0/impact: is required",
	})
	if ps := Validate(nil); len(ps) != 1 {
		t.Errorf("Validate(nil) = %v", ps)
	}
}
