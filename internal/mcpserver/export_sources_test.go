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
	mk := func(id, anchor string) qa.FinalCandidate {
		fc := finalAt(id, "src/cart.tsx", 10, 12, qa.SeverityHigh)
		fc.Title, fc.Description, fc.FailureCondition = "same title", "same message", &anchor
		fc.SourceProfiles, fc.EvidenceRefs = []qa.Profile{qa.ProfileSecurityReviewer}, []string{"ref-" + id}
		return fc
	}
	for i := 0; i < 6; i++ {
		s := sampleSession(mk("F-01", fmt.Sprintf("cond A%d", i)), mk("F-02", fmt.Sprintf("cond B%d", i)))
		s.ReviewContext.ChangedFiles = []string{"c:weird.ts", "src/cart.tsx"}
		out := exportOf(t, s, "")
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
