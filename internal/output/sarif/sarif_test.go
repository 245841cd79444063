package sarif

import (
	"bytes"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/diffpalhq/diffpal/findings"
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
