package findings_test

import (
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/diffpalhq/diffpal/findings"
)

// bundleJSON is a small v3 bundle as diffpal writes it (ids left out: a
// reader does not need them).
const bundleJSON = `{
  "version": "v3",
  "review_id": "rv-1",
  "base_sha": "1111111111111111111111111111111111111111",
  "head_sha": "2222222222222222222222222222222222222222",
  "findings": [
    {
      "review_id": "rv-1",
      "category": "security",
      "severity": "high",
      "confidence": 0.9,
      "path": "cmd/run.go",
      "start_line": 12,
      "end_line": 12,
      "changed_span": {"path": "cmd/run.go", "start_line": 12, "end_line": 12},
      "title": "Shell command built from variables",
      "message": "exec.Command runs a string built from request input",
      "evidence": {"anchor": "exec.Command(\"sh\", \"-c\", cmd)", "reasoning_basis": "cmd comes from the request", "source": "changed_line"},
      "impact": {"summary": "callers can run commands", "scope": "request handling"},
      "blocking": true
    },
    {
      "review_id": "rv-1",
      "category": "performance",
      "severity": "medium",
      "confidence": 0.6,
      "path": "cmd/loop.go",
      "start_line": 30,
      "end_line": 31,
      "changed_span": {"path": "cmd/loop.go", "start_line": 30, "end_line": 31},
      "title": "defer inside a loop",
      "message": "the deferred calls pile up until the function returns",
      "evidence": {"anchor": "defer f.Close()", "reasoning_basis": "inside for", "source": "changed_line"},
      "impact": {"summary": "file descriptors leak", "scope": "one call"},
      "blocking": false
    }
  ]
}`

// newFinding is a valid finding built in Go.
func newFinding(path string, line int, sev findings.Severity, confidence float64, title string) findings.Finding {
	return findings.Finding{
		Category: "correctness", Severity: sev, Confidence: confidence,
		Path: path, StartLine: line, EndLine: line,
		Title: title, Message: title + ", on a changed line",
		Evidence: &findings.Evidence{Anchor: title, ReasoningBasis: "seen in the diff", Source: "changed_line"},
		Impact:   &findings.Impact{Summary: "wrong results", Scope: "this function"},
	}
}

// Read decodes and validates a bundle of any published version.
func ExampleRead() {
	b, info, err := findings.Read(strings.NewReader(bundleJSON))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("version:", info.Version, "findings:", info.Findings)
	for _, f := range b.Findings {
		fmt.Printf("%s:%d %s %s (blocking %v)\n", f.Path, f.StartLine, f.Severity, f.Title, f.Blocking)
	}
	// Output:
	// version: v3 findings: 2
	// cmd/run.go:12 high Shell command built from variables (blocking true)
	// cmd/loop.go:30 medium defer inside a loop (blocking false)
}

// A v1 bundle (here without a version, which reads as v1) may carry
// evidence and impact as plain strings; Read upgrades them to objects.
func ExampleRead_v1() {
	const v1 = `{"review_id": "old", "base_sha": "", "head_sha": "", "findings": [{
	  "id": "f1", "review_id": "old", "category": "security", "severity": "low", "confidence": 0.5,
	  "path": "a.go", "start_line": 3, "end_line": 3, "title": "t", "message": "m",
	  "evidence": "line 3 calls exec", "impact": "commands run", "blocking": false}]}`
	b, info, err := findings.Read(strings.NewReader(v1))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("found %q, read as %s, %d legacy values upgraded\n", info.Version, info.Effective, info.Legacy)
	fmt.Printf("evidence anchor %q, impact summary %q\n", b.Findings[0].Evidence.Anchor, b.Findings[0].Impact.Summary)
	// Output:
	// found "", read as v1, 2 legacy values upgraded
	// evidence anchor "line 3 calls exec", impact summary "commands run"
}

// An invalid bundle is still returned, with every problem as a
// findings.Problems error (JSON pointer and reason).
func ExampleRead_invalid() {
	bad := strings.Replace(bundleJSON, `"confidence": 0.9`, `"confidence": 1.5`, 1)
	_, _, err := findings.Read(strings.NewReader(bad))
	var problems findings.Problems
	if errors.As(err, &problems) {
		for _, p := range problems {
			fmt.Println(p.Pointer)
		}
	}
	// Output:
	// /findings/0/confidence
}

// Validate checks a bundle built in Go; it changes nothing.
func ExampleValidate() {
	b := &findings.Bundle{Version: findings.V3, ReviewID: "rv-1", BaseSHA: "a", HeadSHA: "b"}
	b.Findings = []findings.Finding{newFinding("a.go", 3, findings.Low, 1.5, "Off by one")}
	b.Findings[0].ReviewID = "rv-1"
	b.Findings[0].ChangedSpan = &findings.Span{Path: "a.go", StartLine: 3, EndLine: 3}
	for _, p := range findings.Validate(b) {
		fmt.Println(p.Pointer)
	}

	b.Findings[0].Confidence = 0.5
	fmt.Println("problems after the fix:", len(findings.Validate(b)))
	// Output:
	// /findings/0/confidence
	// problems after the fix: 0
}

// Gate answers "does anything block?" in one streaming pass. With a nil
// policy it trusts the stored blocking flags (as `diffpal gate` does);
// with a policy it recomputes them from severity and confidence.
func ExampleGate() {
	data := []byte(bundleJSON)

	res, _, problems, err := findings.Gate(data, nil)
	if err != nil || len(problems) > 0 {
		log.Fatal(err, problems)
	}
	fmt.Printf("stored flags: %d of %d block, blocked %v\n", res.Blocking, res.Findings, res.Blocked())

	strict := &findings.Policy{BlockOn: findings.Medium}
	res, _, _, _ = findings.Gate(data, strict)
	fmt.Printf("block on medium: %d block (high %d, medium %d)\n", res.Blocking,
		res.BlockingBySeverity[findings.High], res.BlockingBySeverity[findings.Medium])

	confident := 0.95
	res, _, _, _ = findings.Gate(data, &findings.Policy{MinConfidence: &confident})
	fmt.Printf("block on high with confidence >= 0.95: blocked %v\n", res.Blocked())
	// Output:
	// stored flags: 1 of 2 block, blocked true
	// block on medium: 2 block (high 1, medium 1)
	// block on high with confidence >= 0.95: blocked false
}

// Normalize fills in what a writer must produce: version, review ids,
// changed spans, ids and stable ids, blocking flags from the policy, the
// gate record and a deterministic order; then it validates.
func ExampleNormalize() {
	b := &findings.Bundle{ReviewID: "rv-2", BaseSHA: "a", HeadSHA: "b"}
	b.Findings = []findings.Finding{
		newFinding("z.go", 9, findings.Medium, 0.8, "Unchecked error"),
		newFinding("a.go", 7, findings.Critical, 0.9, "Nil map write"),
		newFinding("a.go", 7, findings.Low, 0.9, "Shadowed variable"),
	}
	if err := findings.Normalize(b, findings.Options{Policy: findings.Policy{BlockOn: findings.Medium}}); err != nil {
		log.Fatal(err)
	}
	fmt.Println(b.Version, "gate:", b.Gate.BlockOn, "fingerprint:", b.FingerprintVersion)
	for _, f := range b.Findings {
		fmt.Printf("%s:%d %-8s blocking=%-5v review=%s span=%s:%d-%d\n", f.Path, f.StartLine, f.Severity,
			f.Blocking, f.ReviewID, f.ChangedSpan.Path, f.ChangedSpan.StartLine, f.ChangedSpan.EndLine)
	}
	f := b.Findings[0]
	fmt.Printf("id: %d hex digits, stable_id: %d\n", len(f.ID), len(f.StableID))
	// Output:
	// v3 gate: medium fingerprint: fp1
	// a.go:7 critical blocking=true  review=rv-2 span=a.go:7-7
	// a.go:7 low      blocking=false review=rv-2 span=a.go:7-7
	// z.go:9 medium   blocking=true  review=rv-2 span=z.go:9-9
	// id: 64 hex digits, stable_id: 32
}

// WriteFile normalizes, validates and writes a bundle atomically, creating
// parent directories; an invalid bundle is refused and nothing is written.
func ExampleWriteFile() {
	dir, err := os.MkdirTemp("", "findings-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, findings.DefaultPath)

	b := &findings.Bundle{ReviewID: "rv-3", BaseSHA: "a", HeadSHA: "b"}
	b.Findings = []findings.Finding{newFinding("main.go", 4, findings.High, 0.9, "Ignored error")}
	if err := findings.WriteFile(path, b, findings.Options{Repo: "example/repo"}); err != nil {
		log.Fatal(err)
	}
	back, info, err := findings.ReadFile(path)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("wrote", filepath.ToSlash(strings.TrimPrefix(path, dir)))
	fmt.Println("read back:", info.Version, back.Repo, len(back.Findings), "finding, blocking", back.Findings[0].Blocking)

	bad := &findings.Bundle{ReviewID: "rv-4", Findings: []findings.Finding{newFinding("x.go", 0, findings.Low, 0.5, "No line")}}
	err = findings.WriteFile(filepath.Join(dir, "bad.json"), bad, findings.Options{})
	_, statErr := os.Stat(filepath.Join(dir, "bad.json"))
	fmt.Println("invalid bundle refused:", err != nil, "file written:", statErr == nil)
	// Output:
	// wrote /.artifacts/diffpal/findings.json
	// read back: v3 example/repo 1 finding, blocking true
	// invalid bundle refused: true file written: false
}
