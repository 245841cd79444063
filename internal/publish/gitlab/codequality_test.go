package gitlab_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/publish/gitlab"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

func TestCodeQualityGolden(t *testing.T) {
	b := &findings.Bundle{Version: findings.V3, Findings: []findings.Finding{
		{ID: "f1", StableID: "sid-1", RuleID: "sec.sql", Category: "security", Severity: findings.Critical, Path: "db/q.go", StartLine: 10, EndLine: 12, Title: "SQL built from input"},
		{ID: "f2", StableID: "sid-2", Category: "correctness", Severity: findings.High, Path: "a.go", StartLine: 3, EndLine: 0, Title: "Nil map\x1b[31m write\u202e", Message: "m"},
		// Duplicate stable ids are disambiguated, in order, without
		// taking a fingerprint another finding has.
		{ID: "f3", StableID: "sid-1", Category: "maintainability", Severity: findings.Medium, Path: "db/q.go", StartLine: 20, EndLine: 20, Title: "Long function"},
		{ID: "f4", StableID: "sid-1~2", Category: "style", Severity: findings.Low, Path: "b.go", StartLine: 0, EndLine: 0, Title: "", Message: "Only a message\nsecond line"},
		{ID: "f5", Category: "testing", Severity: findings.Low, Path: "c_test.go", StartLine: 7, EndLine: 9, Title: "No stable id: the id is used"},
		{ID: "f6", StableID: "sid-1", Category: "unknown", Severity: findings.Medium, Path: "d.go", StartLine: 1, EndLine: 1, Title: "Third of sid-1"},
	}}
	got, err := gitlab.CodeQuality(b)
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "gl-code-quality-report.golden.json")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("report differs from %s (go test -run CodeQuality -update):\n%s", golden, got)
	}
	var issues []map[string]any
	if err := json.Unmarshal(got, &issues); err != nil {
		t.Fatal(err)
	}
	if len(issues) != len(b.Findings) {
		t.Fatalf("%d issues for %d findings", len(issues), len(b.Findings))
	}
	seen := map[string]bool{}
	for _, is := range issues {
		fp := is["fingerprint"].(string)
		if seen[fp] {
			t.Errorf("fingerprint %s repeated", fp)
		}
		seen[fp] = true
		switch is["severity"] {
		case "info", "minor", "major", "critical", "blocker":
		default:
			t.Errorf("severity %v", is["severity"])
		}
	}
	if empty, _ := gitlab.CodeQuality(&findings.Bundle{}); string(empty) != "[]\n" {
		t.Errorf("empty report %q", empty)
	}
}
