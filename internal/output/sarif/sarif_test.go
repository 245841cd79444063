package sarif

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/textsafe"
	"github.com/rogpeppe/go-internal/txtar"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

var update = flag.Bool("update", false, "rewrite golden files")

func fixture(t *testing.T) *findings.Bundle {
	t.Helper()
	b, _, err := findings.ReadFile("testdata/bundle.json")
	if err != nil {
		t.Fatal(err)
	}
	b.Version = findings.V3
	if err := findings.Normalize(b, findings.Options{}); err != nil {
		t.Fatal(err)
	}
	return b
}

func encode(t *testing.T, l *Log) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Encode(&buf, l); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

var testTool = Tool{Name: "diffpal", Version: "1.2.3", InformationURI: "https://github.com/diffpalhq/diffpal"}

// TestValidatesAgainstOfficialSchema checks the output against the
// official SARIF 2.1.0 JSON Schema (a copy of shared/data's).
func TestValidatesAgainstOfficialSchema(t *testing.T) {
	schema := officialSchema(t)
	left := fixture(t)
	left.Findings[0].ChangedSpan.Side = "LEFT"
	for name, b := range map[string]*findings.Bundle{
		"fixture": fixture(t),
		"left":    left,
		"empty":   {Version: "v3", ReviewID: "r", Findings: []findings.Finding{}},
	} {
		out := encode(t, Convert(b, testTool))
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(out))
		if err != nil {
			t.Fatal(err)
		}
		if err := schema.Validate(inst); err != nil {
			t.Errorf("%s: SARIF does not validate: %v", name, err)
		}
	}
	// The check can fail: a broken log is rejected.
	broken := Convert(fixture(t), testTool)
	broken.Version = "2.0"
	inst, _ := jsonschema.UnmarshalJSON(bytes.NewReader(encode(t, broken)))
	if schema.Validate(inst) == nil {
		t.Error("schema accepted version 2.0")
	}
}

func TestConvert(t *testing.T) {
	b := fixture(t)
	l := Convert(b, testTool)
	if len(l.Runs) != 1 {
		t.Fatalf("runs = %d", len(l.Runs))
	}
	run := l.Runs[0]
	// One rule per category, deduplicated, sorted, worst severity wins.
	var ids []string
	for _, r := range run.Tool.Driver.Rules {
		ids = append(ids, r.ID+"="+r.DefaultConfiguration.Level+"/"+r.Properties.SecuritySeverity)
	}
	if got, want := strings.Join(ids, " "), "correctness=warning/5.5 security=error/9.5"; got != want {
		t.Errorf("rules = %s, want %s", got, want)
	}
	if len(run.Results) != len(b.Findings) {
		t.Fatalf("results = %d, want %d", len(run.Results), len(b.Findings))
	}
	for i, r := range run.Results {
		f := b.Findings[i]
		if run.Tool.Driver.Rules[r.RuleIndex].ID != r.RuleID {
			t.Errorf("result %d: ruleIndex points at the wrong rule", i)
		}
		if r.PartialFingerprints[FingerprintKey] != f.StableID || f.StableID == "" {
			t.Errorf("result %d: fingerprint %v, want stable id %s", i, r.PartialFingerprints, f.StableID)
		}
		if _, ok := r.PartialFingerprints["primaryLocationLineHash"]; ok {
			t.Errorf("result %d: must not set primaryLocationLineHash", i)
		}
		reg := r.Locations[0].PhysicalLocation.Region
		if reg == nil || reg.StartLine != f.StartLine || reg.EndLine != f.EndLine {
			t.Errorf("result %d: region %+v", i, reg)
		}
		if r.Properties.Blocking != f.Blocking || r.Properties.Confidence != f.Confidence {
			t.Errorf("result %d: properties %+v", i, r.Properties)
		}
	}
	// A finding on removed lines has no region in the new file.
	left := fixture(t)
	left.Findings[0].ChangedSpan.Side = "LEFT"
	lr := Convert(left, testTool).Runs[0].Results[0]
	if lr.Locations[0].PhysicalLocation.Region != nil || lr.Properties.RemovedLines == "" || !strings.HasPrefix(lr.Message.Text, "(removed lines ") {
		t.Errorf("LEFT result = %+v", lr)
	}
	if got := PathURI("dir with space/ünï#1?.go"); got != "dir%20with%20space/%C3%BCn%C3%AF%231%3F.go" {
		t.Errorf("PathURI = %s", got)
	}
}

func TestGolden(t *testing.T) {
	out := encode(t, Convert(fixture(t), testTool))
	const golden = "testdata/bundle.sarif.golden"
	if *update {
		os.WriteFile(golden, out, 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if !bytes.Equal(out, want) {
		t.Errorf("SARIF differs from %s (go test -update to accept):\n%s", golden, out)
	}
}

func hostileFixture(t *testing.T) *findings.Bundle {
	t.Helper()
	b, _, err := findings.ReadFile("testdata/hostile.json")
	if err != nil {
		t.Fatal(err)
	}
	b.Version = findings.V3
	if err := findings.Normalize(b, findings.Options{}); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestHostileGolden converts a bundle whose paths, titles, messages and
// categories carry line breaks, escape sequences, bidi overrides, HTML,
// links and a URI scheme: the golden file, the official schema, and the
// properties that matter checked one by one.
func TestHostileGolden(t *testing.T) {
	b := hostileFixture(t)
	l := Convert(b, testTool)
	out := encode(t, l)
	const golden = "testdata/hostile.sarif.golden"
	if *update {
		os.WriteFile(golden, out, 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if !bytes.Equal(out, want) {
		t.Errorf("SARIF differs from %s (go test -update to accept):\n%s", golden, out)
	}
	validateSchema(t, out)
	for i, r := range l.Runs[0].Results {
		f := b.Findings[i]
		assertPlain(t, "message", r.Message.Text)
		if strings.Contains(strings.ReplaceAll(r.Message.Text, `\[`, ""), "[") || strings.Contains(strings.ReplaceAll(r.Message.Text, `\]`, ""), "]") {
			t.Errorf("result %d: unescaped bracket in %q", i, r.Message.Text)
		}
		uri := r.Locations[0].PhysicalLocation.ArtifactLocation.URI
		u, err := url.Parse(uri)
		if err != nil {
			t.Errorf("result %d: uri %q: %v", i, uri, err)
			continue
		}
		if u.Scheme != "" || u.Host != "" || u.RawQuery != "" || u.Fragment != "" || u.IsAbs() || strings.HasPrefix(uri, "/") {
			t.Errorf("result %d: uri %q is not a relative path reference: %#v", i, uri, u)
		}
		if u.Path != f.Path {
			t.Errorf("result %d: uri %q decodes to %q, want %q", i, uri, u.Path, f.Path)
		}
		for _, c := range uri {
			if c <= ' ' || c >= 0x7f || strings.ContainsRune(`"<>\^`+"`{|}[]#?", c) {
				t.Errorf("result %d: uri %q has a raw %q", i, uri, c)
			}
		}
	}
	for _, r := range l.Runs[0].Tool.Driver.Rules {
		assertPlain(t, "rule name", r.Name)
		assertPlain(t, "rule description", r.ShortDescription.Text)
	}
}

func assertPlain(t *testing.T, what, s string) {
	t.Helper()
	for _, r := range s {
		if textsafe.Hidden(r) {
			t.Errorf("%s %q has a raw U+%04X", what, s, r)
		}
	}
}

func TestPlainText(t *testing.T) {
	for in, want := range map[string]string{
		"plain":                    "plain",
		"[x](javascript:alert(1))": `\[x\](javascript:alert(1))`,
		`\[y](1)`:                  `\\\[y\](1)`,
		`a\b`:                      `a\b`,
		"line\nbreak\x1b[0m\u202e": `line\nbreak\x1b\[0m\u202e`,
		`\\]`:                      `\\\\\]`,
	} {
		if got := PlainText(in); got != want {
			t.Errorf("PlainText(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{
		"javascript:alert(1).go": "javascript%3Aalert%281%29.go",
		"C:/x.go":                "C%3A/x.go",
		"a\nb/<img>.go":          "a%0Ab/%3Cimg%3E.go",
		"esc\x1b\u202e.go":       "esc%1B%E2%80%AE.go",
		"100%/a b#c?d.go":        "100%25/a%20b%23c%3Fd.go",
	} {
		if got := PathURI(in); got != want {
			t.Errorf("PathURI(%q) = %q, want %q", in, got, want)
		}
	}
}

func officialSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open("testdata/sarif-schema-2.1.0.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("mem://sarif.json", doc); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile("mem://sarif.json")
	if err != nil {
		t.Fatal(err)
	}
	return schema
}

func validateSchema(t *testing.T, out []byte) {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if err := officialSchema(t).Validate(inst); err != nil {
		t.Errorf("SARIF does not validate: %v", err)
	}
}

// seedMinimal reads testdata/seed-minimal.txtar, the seed's minimal bundle
// (no id, stable_id or blocking; see the archive's comment).
func seedMinimal(t *testing.T) []byte {
	t.Helper()
	ar, err := txtar.ParseFile("testdata/seed-minimal.txtar")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range ar.Files {
		if f.Name == "findings.json" {
			return f.Data
		}
	}
	t.Fatal("seed-minimal.txtar has no findings.json")
	return nil
}

// TestSeedMinimalBundleHasFingerprints: converting the seed's minimal
// bundle as read, without normalizing it, gives every result
// partialFingerprints and an id, equal to what Normalize (and so
// `diffpal upgrade`) computes, without changing the bundle; a second
// occurrence of the same anchor gets its own fingerprint.
func TestSeedMinimalBundleHasFingerprints(t *testing.T) {
	data := seedMinimal(t)
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	f0 := raw["findings"].([]any)[0].(map[string]any)
	for _, k := range []string{"id", "stable_id", "blocking", "review_id"} {
		if _, ok := f0[k]; ok {
			t.Fatalf("fixture finding has %q: the seed's minimal bundle does not", k)
		}
	}
	// The same finding again, ten lines down: a second occurrence.
	second := map[string]any{}
	for k, v := range f0 {
		second[k] = v
	}
	second["start_line"], second["end_line"] = 22, 24
	second["changed_span"] = map[string]any{"path": "internal/session.go", "start_line": 22, "end_line": 24}
	raw["findings"] = []any{second, f0}
	twice, _ := json.Marshal(raw)

	for name, in := range map[string][]byte{"seed": data, "two occurrences": twice} {
		b, _, err := findings.Parse(in)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want, _, _ := findings.Parse(in)
		if err := findings.Normalize(want, findings.Options{}); err != nil {
			t.Fatal(err)
		}
		byLine := map[int]findings.Finding{}
		for _, f := range want.Findings {
			byLine[f.StartLine] = f
		}
		l := Convert(b, testTool)
		results := l.Runs[0].Results
		if len(results) != len(b.Findings) {
			t.Fatalf("%s: %d results for %d findings", name, len(results), len(b.Findings))
		}
		seen := map[string]bool{}
		for i, r := range results {
			fp := r.PartialFingerprints[FingerprintKey]
			w := byLine[b.Findings[i].StartLine]
			if len(fp) != 32 || fp != w.StableID || r.Properties.StableID != fp {
				t.Errorf("%s result %d: fingerprint %q (property %q), want Normalize's stable id %q", name, i, fp, r.Properties.StableID, w.StableID)
			}
			if len(r.Properties.ID) != 64 || r.Properties.ID != w.ID {
				t.Errorf("%s result %d: id %q, want Normalize's %q", name, i, r.Properties.ID, w.ID)
			}
			if seen[fp] {
				t.Errorf("%s result %d: fingerprint %s repeated", name, i, fp)
			}
			seen[fp] = true
		}
		for i, f := range b.Findings {
			if f.ID != "" || f.StableID != "" {
				t.Errorf("%s: Convert changed finding %d of its input: %q %q", name, i, f.ID, f.StableID)
			}
		}
		validateSchema(t, encode(t, l))
	}
}
