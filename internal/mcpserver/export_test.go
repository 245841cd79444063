package mcpserver

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/qa"
)

func sampleExport() qa.FindingsExport {
	f := func(id, path string, start, end int, sev string) qa.ExportFinding {
		sp := qa.ExportSpan{Path: path, StartLine: start, EndLine: end}
		return qa.ExportFinding{Category: "correctness", Severity: sev, Confidence: 0.6, Path: path, StartLine: start,
			EndLine: end, ChangedSpan: sp, Title: "title " + id, Message: "message " + id,
			Evidence: qa.ExportEvidence{Anchor: "a", ReasoningBasis: "b", Source: "changed_line"},
			Impact:   qa.ExportImpact{Summary: "s", Scope: path}, Provider: qa.ExportProvider,
			FinalFindingID: id, SourceProfiles: []qa.Profile{qa.ProfileCodeReviewer}, EvidenceRefs: []string{"E1"}}
	}
	return qa.FindingsExport{Version: "v3", ReviewID: "qar-" + strings.Repeat("a", 32), Repo: "acme/shop",
		BaseSHA: baseSHA, HeadSHA: headSHA,
		Prompt:        qa.ExportPrompt{PromptID: qa.ExportPromptID, PromptVersion: "v1", Purpose: "p", SchemaVersion: "findings.v3"},
		ChangeSummary: []string{"one"}, ReviewResult: "r", Files: []string{"b.go", "a.go"}, BlockOn: "medium",
		// Out of order, and two findings identical except for their source.
		Findings:          []qa.ExportFinding{f("F-02", "b.go", 5, 6, "low"), f("F-01", "a.go", 1, 2, "high"), f("F-03", "a.go", 1, 2, "high")},
		UnlocatedFindings: 1, UnlocatedFindingIDs: []string{"F-04"}}
}

func TestBuildBundle(t *testing.T) {
	out, err := BuildBundle(sampleExport())
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(out)
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
	if extra.Unlocated != 1 || len(extra.IDs) != 1 || len(extra.Sources) != 3 {
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

func TestBuildBundleInvalid(t *testing.T) {
	exp := sampleExport()
	exp.Findings[0].Path, exp.Findings[0].ChangedSpan.Path = "/etc/passwd", "/etc/passwd"
	_, err := BuildBundle(exp)
	if err == nil || !strings.HasPrefix(err.Error(), "invalid argument: the exported findings bundle is invalid") {
		t.Fatalf("err = %v", err)
	}
	exp = sampleExport()
	exp.BlockOn = "urgent"
	if _, err := BuildBundle(exp); err == nil || !strings.HasPrefix(err.Error(), "invalid argument: block_on") {
		t.Fatalf("err = %v", err)
	}
}

func TestExportOutputEmpty(t *testing.T) {
	exp := sampleExport()
	exp.Findings, exp.UnlocatedFindingIDs, exp.UnlocatedFindings = nil, nil, 0
	out, err := BuildBundle(exp)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(out)
	for _, want := range []string{`"findings":[]`, `"unlocated_finding_ids":[]`, `"finding_sources":[]`, `"unlocated_findings":0`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("%s missing from %s", want, raw)
		}
	}
	if _, _, err := findings.Parse(raw); err != nil {
		t.Fatal(err)
	}
}
