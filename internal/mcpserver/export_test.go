package mcpserver

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/qa"
)

// finalAt is a confirmed final finding at path:start-end.
func finalAt(id, path string, start, end int, sev qa.Severity) qa.FinalCandidate {
	return qa.FinalCandidate{CandidateID: id, Title: "title " + id, Description: "message " + id, Confidence: qa.ConfidenceMedium,
		VerificationGap: "gap", EvidenceRefs: []string{"E1"}, FailureCondition: ptr("a"), Impact: ptr("s"),
		SourceLocations: []qa.SourceLocation{{Path: path, StartLine: start, EndLine: &end}}, Severity: &sev,
		SourceProfiles: []qa.Profile{qa.ProfileCodeReviewer}}
}

// sampleSession is a bound session whose final report holds fcs.
func sampleSession(fcs ...qa.FinalCandidate) qa.Session {
	return qa.Session{RunID: "qar-" + strings.Repeat("a", 32), Status: qa.StatusCompleted,
		ReviewContext:     &qa.ReviewContext{Repository: "acme/shop", BaseSHA: baseSHA, HeadSHA: headSHA, ChangedFiles: []string{"b.go", "a.go"}},
		FinalReviewReport: &qa.FinalReviewReport{Summary: "one", FindingCandidates: fcs}}
}

// sample has findings out of order, and two alike but for their id.
func sample() qa.Session {
	f4 := finalAt("F-04", "c.go", 1, 1, qa.SeverityLow)
	f4.SourceLocations = nil // unlocated: counted, not exported
	return sampleSession(finalAt("F-02", "b.go", 5, 6, qa.SeverityLow), finalAt("F-01", "a.go", 1, 2, qa.SeverityHigh),
		finalAt("F-03", "a.go", 1, 2, qa.SeverityHigh), f4)
}

func exportOf(t *testing.T, s qa.Session, blockOn findings.Severity) ExportOutput {
	t.Helper()
	exp, err := qa.BuildExport(s, qa.ExportOptions{Policy: findings.Policy{BlockOn: blockOn}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := BuildBundle(exp)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestBuildBundle(t *testing.T) {
	raw, err := json.Marshal(exportOf(t, sample(), findings.Medium))
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := findings.Parse(raw)
	if err != nil {
		t.Fatalf("Parse: %v\n%s", err, raw)
	}
	if len(b.Findings) != 3 || b.Findings[0].Path != "a.go" || b.Gate.BlockOn != findings.Medium {
		t.Fatalf("bundle: %+v", b)
	}
	if !b.Findings[0].Blocking || b.Findings[2].Blocking {
		t.Errorf("blocking flags not computed from block_on medium")
	}
	var extra struct {
		Unlocated int             `json:"unlocated_findings"`
		IDs       []string        `json:"unlocated_finding_ids"`
		Sources   []FindingSource `json:"finding_sources"`
	}
	if err := json.Unmarshal(raw, &extra); err != nil {
		t.Fatal(err)
	}
	if extra.Unlocated != 1 || len(extra.IDs) != 1 || extra.IDs[0] != "F-04" || len(extra.Sources) != 3 {
		t.Fatalf("extra keys: %+v", extra)
	}
	finals := map[string]bool{}
	for i, s := range extra.Sources {
		if s.FindingID != b.Findings[i].ID {
			t.Errorf("finding_sources[%d] is for %s, findings[%d] is %s", i, s.FindingID, i, b.Findings[i].ID)
		}
		finals[s.FinalFindingID] = true
	}
	if len(finals) != 3 || extra.Sources[2].FinalFindingID != "F-02" {
		t.Errorf("sources lost or misattributed: %+v", extra.Sources)
	}
}

// A report whose paths no bundle may carry fails as findings.Problems
// (Export turns it into an invalid-argument tool error), and a block_on
// outside the severities is an invalid argument.
func TestBuildBundleInvalid(t *testing.T) {
	s := sample()
	s.FinalReviewReport.FindingCandidates[0].SourceLocations[0].Path = "/etc/passwd"
	_, err := qa.BuildExport(s, qa.ExportOptions{})
	var ps findings.Problems
	if !errors.As(err, &ps) {
		t.Fatalf("err = %v, want findings.Problems", err)
	}
	_, err = qa.BuildExport(sample(), qa.ExportOptions{Policy: findings.Policy{BlockOn: "urgent"}})
	if err == nil || !strings.HasPrefix(err.Error(), "invalid argument: block_on") {
		t.Fatalf("err = %v", err)
	}
}

func TestExportOutputEmpty(t *testing.T) {
	raw, _ := json.Marshal(exportOf(t, sampleSession(), ""))
	for _, want := range []string{`"findings":[]`, `"unlocated_finding_ids":[]`, `"finding_sources":[]`, `"unlocated_findings":0`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("%s missing from %s", want, raw)
		}
	}
	if _, _, err := findings.Parse(raw); err != nil {
		t.Fatal(err)
	}
}

// The review engine's options: its header, its own findings for final
// findings and the findings the report does not hold, and its
// review_result, all through the same mapping.
func TestBuildExportEngineOptions(t *testing.T) {
	s := sample()
	s.ReviewContext = nil // the engine may export an unbound session
	head := &findings.Bundle{Version: findings.CurrentVersion, ReviewID: "local", BaseSHA: baseSHA, Repo: "acme/shop",
		Files: []findings.File{{Path: "a.go", Status: "modified"}}}
	mine := func(path string, line int, rule string) findings.Finding {
		return findings.Finding{StableID: "sid-" + rule, RuleID: rule, Category: "security", Severity: findings.Critical, Confidence: 0.95,
			Path: path, StartLine: line, EndLine: line, ChangedSpan: &findings.Span{Path: path, StartLine: line, EndLine: line, Side: "LEFT"},
			Title: "t " + rule, Message: "m " + rule, Evidence: &findings.Evidence{Anchor: "x", ReasoningBasis: "rule", Source: "changed_line"},
			Impact: &findings.Impact{Summary: "i", Scope: path}, Provider: "builtin"}
	}
	exp, err := qa.BuildExport(s, qa.ExportOptions{Header: head,
		Findings:   map[string]findings.Finding{"F-01": mine("a.go", 1, "r1"), "F-04": mine("a.go", 9, "r4")},
		Unreported: []findings.Finding{mine("z.go", 3, "r9")},
		Result:     func(b *findings.Bundle) string { return "n=" + strings.Repeat("x", len(b.Findings)) }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := qa.BuildExport(s, qa.ExportOptions{}); err == nil {
		t.Error("an unbound session exported without a header")
	}
	// F-01 and F-04 are the engine's (F-04 no longer unlocated), F-02 and
	// F-03 mapped from the report, r9 appended.
	if exp.ReviewID != "local" || exp.UnlocatedFindings != 0 || len(exp.Findings) != 5 || exp.ReviewResult != "n=xxxxx" || len(exp.Files) != 1 {
		t.Fatalf("export = %+v", exp)
	}
	byRule := map[string]string{}
	for i, f := range exp.Findings {
		byRule[f.RuleID] = exp.Sources[i].FinalFindingID
		if f.RuleID != "" && (f.StableID != "sid-"+f.RuleID || f.Severity != findings.Critical || !f.Blocking || f.ChangedSpan.Side != "LEFT") {
			t.Errorf("engine finding changed: %+v", f)
		}
	}
	if byRule["r1"] != "F-01" || byRule["r4"] != "F-04" || byRule["r9"] != "" {
		t.Errorf("sources: %v", byRule)
	}
}
