package markdown

import (
	"bytes"
	"flag"
	"os"
	"testing"

	"github.com/diffpalhq/diffpal/findings"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestGolden(t *testing.T) {
	b := &findings.Bundle{ReviewID: "local", HeadSHA: "h", Findings: []findings.Finding{
		{Category: "security", Severity: "critical", Confidence: 0.95, Path: "api/run|cmd.go", StartLine: 10, EndLine: 12,
			Title: "Command injection", Message: "exec gets `request` input", Suggestion: "Use a fixed argv.",
			Evidence: &findings.Evidence{Anchor: "a", ReasoningBasis: "r", Source: "s"}, Impact: &findings.Impact{Summary: "s", Scope: "c"}},
		{Category: "style", Severity: "low", Confidence: 0.4, Path: "b.go", StartLine: 3, EndLine: 3, Title: "Naming", Message: "Rename.",
			Evidence: &findings.Evidence{Anchor: "a", ReasoningBasis: "r", Source: "s"}, Impact: &findings.Impact{Summary: "s", Scope: "c"}},
	}}
	if err := findings.Normalize(b, findings.Options{}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err := Write(&out, b, Info{
		Repository: "acme/shop", Range: "aaaa..bbbb", Why: "branch against main", Provider: "builtin",
		Triage: "bundle ordinary_mr", Files: 2, AddedLines: 40,
		Skips:      []Note{{What: "go.sum", Reason: "lock_file: dependency lock file"}},
		Drops:      []Note{{Reason: "outside changed lines (filter added)", Count: 3, What: "a.go:1 x"}},
		Suppressed: []Note{{What: "c.go:4 sec.x", Reason: "diffpal:ignore at c.go:3: fixture"}},
		Baseline:   &Baseline{New: 2, Unchanged: 1, Fixed: 4},
	})
	if err != nil {
		t.Fatal(err)
	}
	const golden = "testdata/summary.golden.md"
	if *update {
		os.MkdirAll("testdata", 0o755)
		os.WriteFile(golden, out.Bytes(), 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test -update)", err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Errorf("summary differs from %s (go test -update to accept):\n%s", golden, out.Bytes())
	}
}
