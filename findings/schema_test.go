package findings

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// referenceValidators compiles the embedded schemas with a complete JSON
// Schema implementation, to cross-check the compiled rule tables.
func referenceValidators(t testing.TB) map[string]*jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	out := map[string]*jsonschema.Schema{}
	for _, v := range SchemaVersions() {
		data, err := Schema(v)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("schema %s: %v", v, err)
		}
		url := "mem://findings-" + v + ".json"
		if err := c.AddResource(url, doc); err != nil {
			t.Fatal(err)
		}
		s, err := c.Compile(url)
		if err != nil {
			t.Fatalf("compile schema %s: %v", v, err)
		}
		out[v] = s
	}
	return out
}

// semanticReasons are the rules that only the Go validator enforces.
var semanticReasons = []string{
	"must be >= start_line", "NUL byte", "repository-relative", `".." segment`,
	"is required in v4", "duplicate \"findings\" key",
}

func isSemantic(p Problem) bool {
	for _, s := range semanticReasons {
		if strings.Contains(p.Reason, s) {
			return true
		}
	}
	return false
}

// checkAgainstReference asserts that the fast validator and the reference
// JSON Schema validator agree: every schema violation is found by both, and
// whatever only the fast validator reports is a documented semantic rule.
func checkAgainstReference(t *testing.T, refs map[string]*jsonschema.Schema, data []byte) {
	t.Helper()
	_, info, problems, err := Decode(data, DecodeOptions{})
	if err != nil {
		return // not JSON: nothing to compare
	}
	schema := refs[info.Effective]
	if schema == nil || (info.Version != "" && info.Version != info.Effective) {
		return // v4 or an unknown version: no schema of its own
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return
	}
	// Warnings name values the decoder normalized (a severity that is not
	// lower-case): the schema describes the canonical form, so it is shown
	// the document as read.
	for _, w := range info.Warnings {
		if !lowerAt(doc, w.Pointer) {
			t.Errorf("warning %v does not point at a string in:\n%s", w, data)
		}
	}
	refErr := schema.Validate(doc)
	var structural []Problem
	for _, p := range problems {
		if !isSemantic(p) {
			structural = append(structural, p)
		}
	}
	if refErr != nil && len(structural) == 0 {
		t.Errorf("reference schema rejects what the fast validator accepts:\n%s\n%v", data, refErr)
	}
	if refErr == nil && len(structural) > 0 {
		t.Errorf("fast validator rejects what the reference schema accepts:\n%s\n%s", data, problemList(structural))
	}
}

// lowerAt lower-cases the string at an RFC 6901 pointer of a generic JSON
// document, reporting whether there was one.
func lowerAt(doc any, ptr string) bool {
	if ptr == "" {
		return false
	}
	toks := strings.Split(ptr[1:], "/")
	for i, tok := range toks {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		last := i == len(toks)-1
		switch v := doc.(type) {
		case map[string]any:
			if last {
				s, ok := v[tok].(string)
				v[tok] = strings.ToLower(s)
				return ok
			}
			doc = v[tok]
		case []any:
			n, err := strconv.Atoi(tok)
			if err != nil || n < 0 || n >= len(v) {
				return false
			}
			if last {
				s, ok := v[n].(string)
				v[n] = strings.ToLower(s)
				return ok
			}
			doc = v[n]
		default:
			return false
		}
	}
	return false
}

func TestSchemasAgreeWithReference(t *testing.T) {
	refs := referenceValidators(t)
	var inputs [][]byte
	for _, v := range []string{"v1", "v2", "v3"} {
		b := validV3()
		b["version"] = v
		inputs = append(inputs, mustJSON(t, b))
	}
	// Every single-field mutation of a valid bundle, per version.
	mutations := []any{nil, "", "x", 0, -1, 1.5, 1e30, true, []any{}, map[string]any{}, "HIGH", "Medium", " low", "LEFT"}
	for _, v := range []string{"v1", "v2", "v3"} {
		for key := range validFinding() {
			for _, m := range mutations {
				b := validV3()
				b["version"] = v
				f0(b)[key] = m
				inputs = append(inputs, mustJSON(t, b))
			}
			b := validV3()
			b["version"] = v
			delete(f0(b), key)
			inputs = append(inputs, mustJSON(t, b))
		}
		for _, key := range []string{"version", "review_id", "base_sha", "head_sha", "findings", "files", "prompt", "inspection", "change_summary", "review_result", "gate", "language"} {
			for _, m := range mutations {
				b := validV3()
				b["version"] = v
				if key == "version" {
					continue
				}
				b[key] = m
				inputs = append(inputs, mustJSON(t, b))
			}
		}
		for _, sub := range []string{"evidence", "impact", "changed_span", "supporting_span"} {
			for _, key := range []string{"anchor", "reasoning_basis", "source", "summary", "scope", "path", "start_line", "end_line", "side"} {
				for _, m := range mutations {
					b := validV3()
					b["version"] = v
					obj := map[string]any{}
					if cur, ok := f0(b)[sub].(map[string]any); ok {
						for k, x := range cur {
							obj[k] = x
						}
					}
					obj[key] = m
					f0(b)[sub] = obj
					inputs = append(inputs, mustJSON(t, b))
				}
			}
		}
	}
	for _, in := range fuzzSeeds(t) {
		inputs = append(inputs, in)
	}
	for _, in := range inputs {
		checkAgainstReference(t, refs, in)
	}
	t.Logf("compared %d documents", len(inputs))
}

func TestSchemaRulesCompiled(t *testing.T) {
	// The compiled tables carry what the schemas say; spot-check the
	// version differences the contract cares about.
	if rulesFor(V1).objs[kFinding].required.has(fChangedSpan) {
		t.Error("v1 must not require changed_span")
	}
	for _, v := range []string{V2, V3, V4} {
		if !rulesFor(v).objs[kFinding].required.has(fChangedSpan) {
			t.Errorf("%s must require changed_span", v)
		}
		if rulesFor(v).objs[kFinding].props[fEvidence].types&tString != 0 {
			t.Errorf("%s must not allow string evidence", v)
		}
	}
	if rulesFor(V1).objs[kFinding].props[fEvidence].types&tString == 0 {
		t.Error("v1 must allow string evidence")
	}
	if rulesFor(V2).objs[kBundle].props[bReviewResult] != nil || rulesFor(V3).objs[kBundle].props[bReviewResult] == nil {
		t.Error("review_result belongs to v3 only")
	}
	if _, err := Schema("v4"); err == nil {
		t.Error("Schema(v4) should fail: v4 has no schema of its own")
	}
	for _, v := range SchemaVersions() {
		data, _ := Schema(v)
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil || m["$schema"] == nil {
			t.Errorf("schema %s is not a JSON Schema document: %v", v, err)
		}
	}
}
