package mcpserver

import (
	"fmt"
	"testing"

	"github.com/diffpalhq/diffpal/internal/qa"
)

// Look-alike final findings (same place, title, message) that differ only
// in their evidence keep their own sources after Normalize re-sorts them,
// and a changed path no bundle may carry is left out of files instead of
// failing the export.
func TestExportSourcesMatchTheirFindings(t *testing.T) {
	mk := func(id, anchor string) qa.ExportFinding {
		sp := qa.ExportSpan{Path: "src/cart.tsx", StartLine: 10, EndLine: 12}
		return qa.ExportFinding{Category: "correctness", Severity: "high", Confidence: 0.9, Path: sp.Path, StartLine: 10, EndLine: 12,
			ChangedSpan: sp, Title: "same title", Message: "same message",
			Evidence:       qa.ExportEvidence{Anchor: anchor, ReasoningBasis: "r", Source: "diff"},
			Impact:         qa.ExportImpact{Summary: "s", Scope: "c"},
			FinalFindingID: id, SourceProfiles: []qa.Profile{qa.ProfileSecurityReviewer}, EvidenceRefs: []string{"ref-" + id}}
	}
	for i := 0; i < 6; i++ {
		exp := qa.FindingsExport{Version: "v3", ReviewID: "qar-x", Repo: "r", BaseSHA: "a", HeadSHA: "b", BlockOn: "high",
			Files:    []string{"c:weird.ts", "src/cart.tsx"},
			Findings: []qa.ExportFinding{mk("F-01", fmt.Sprintf("cond A%d", i)), mk("F-02", fmt.Sprintf("cond B%d", i))}}
		out, err := BuildBundle(exp)
		if err != nil {
			t.Fatalf("export failed: %v", err)
		}
		for j, f := range out.Bundle.Findings {
			src := out.FindingSources[j]
			want := "F-01"
			if f.Evidence.Anchor == fmt.Sprintf("cond B%d", i) {
				want = "F-02"
			}
			if src.FinalFindingID != want || src.FindingID != f.ID {
				t.Errorf("finding %q attributed to %s, want %s", f.Evidence.Anchor, src.FinalFindingID, want)
			}
		}
		if len(out.Bundle.Files) != 1 || out.Bundle.Files[0].Path != "src/cart.tsx" {
			t.Errorf("files = %+v", out.Bundle.Files)
		}
	}
}
