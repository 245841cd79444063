package qa

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
)

// Export metadata constants; the integrator maps them onto the findings
// bundle's prompt block.
const (
	ExportBundleVersion = "v3"
	ExportPromptID      = "diffpal.qa_orchestration"
	ExportPromptVersion = "v1"
	ExportSchemaVersion = "findings.v3"
	ExportProvider      = "qa_orchestration"
	DefaultBlockOn      = "high"
)

// ExportInput is the input of export_qa_findings.
type ExportInput struct {
	RunID   string  `json:"run_id" jsonschema:"Review-bound session whose recorded final review report to export."`
	Repo    *string `json:"repo,omitzero" jsonschema:"Repository id for the bundle (enters finding fingerprints); defaults to review_context.repository."`
	BlockOn *string `json:"block_on,omitzero" jsonschema:"Severity threshold for blocking: low, medium, high (default) or critical."`
}

// ExportSpan is a path and line range.
type ExportSpan struct {
	Path      string `json:"path"`
	StartLine int    `json:"start_line"`
	EndLine   int    `json:"end_line"`
}

// ExportEvidence mirrors the findings bundle's structured evidence.
type ExportEvidence struct {
	Anchor         string `json:"anchor"`
	ReasoningBasis string `json:"reasoning_basis"`
	Source         string `json:"source"`
}

// ExportImpact mirrors the findings bundle's structured impact.
type ExportImpact struct {
	Summary string `json:"summary"`
	Scope   string `json:"scope"`
}

// ExportFinding is one finding derived from a confirmed final finding. It
// has no id: fingerprints belong to the findings package.
type ExportFinding struct {
	Category       string         `json:"category"`
	Severity       string         `json:"severity"`
	Confidence     float64        `json:"confidence"`
	Path           string         `json:"path"`
	StartLine      int            `json:"start_line"`
	EndLine        int            `json:"end_line"`
	ChangedSpan    ExportSpan     `json:"changed_span"`
	SupportingSpan *ExportSpan    `json:"supporting_span"`
	Title          string         `json:"title"`
	Message        string         `json:"message"`
	Evidence       ExportEvidence `json:"evidence"`
	Impact         ExportImpact   `json:"impact"`
	Blocking       bool           `json:"blocking"`
	Provider       string         `json:"provider"`
	// Traceability back to the session; not part of the findings schema.
	FinalFindingID string    `json:"final_finding_id"`
	SourceProfiles []Profile `json:"source_profiles"`
	EvidenceRefs   []string  `json:"evidence_refs"`
}

// ExportPrompt names the orchestration as the findings' prompt.
type ExportPrompt struct {
	PromptID      string `json:"prompt_id"`
	PromptVersion string `json:"prompt_version"`
	Purpose       string `json:"purpose"`
	SchemaVersion string `json:"schema_version"`
}

// FindingsExport is a findings-bundle-shaped value built from a session's
// final review report.
type FindingsExport struct {
	Version       string          `json:"version"`
	ReviewID      string          `json:"review_id"`
	Repo          string          `json:"repo"`
	BaseSHA       string          `json:"base_sha"`
	HeadSHA       string          `json:"head_sha"`
	Prompt        ExportPrompt    `json:"prompt"`
	ChangeSummary []string        `json:"change_summary"`
	ReviewResult  string          `json:"review_result"`
	Files         []string        `json:"files"`
	Findings      []ExportFinding `json:"findings"`
	BlockOn       string          `json:"block_on"`
	// Confirmed final findings without a source location: counted, never
	// given an invented location.
	UnlocatedFindings   int      `json:"unlocated_findings"`
	UnlocatedFindingIDs []string `json:"unlocated_finding_ids"`
}

func severityRank(s string) int {
	return map[string]int{"low": 1, "medium": 2, "high": 3, "critical": 4}[s]
}

// exportCategory picks the category by the most specific source profile.
func exportCategory(ps []Profile) string {
	switch {
	case slices.Contains(ps, ProfileSecurityReviewer):
		return "security"
	case slices.Contains(ps, ProfileSilentFailureHunter):
		return "reliability"
	case slices.Contains(ps, ProfilePRTestAnalyzer):
		return "testing"
	}
	return "correctness"
}

func exportConfidence(c Confidence) float64 {
	switch c {
	case ConfidenceHigh:
		return 0.9
	case ConfidenceMedium:
		return 0.6
	}
	return 0.3
}

// exportSource maps the registry kinds of a finding's refs to the bundle's
// evidence.source: diff evidence is a changed line, runtime evidence a tool
// result, anything else nearby context. Without a registry the anchor is
// assumed to be a changed line, since reviews are diff-scoped.
func exportSource(refs []string, reg []RegistryEntry) string {
	if len(reg) == 0 {
		return "changed_line"
	}
	kinds := map[string]EvidenceKind{}
	for _, e := range reg {
		kinds[e.EvidenceRef] = e.Kind
	}
	src := ""
	for _, r := range refs {
		switch kinds[r] {
		case EvidenceDiff:
			return "changed_line"
		case EvidenceRuntime:
			src = cmp.Or(src, "tool_result")
		default:
			src = cmp.Or(src, "nearby_context")
		}
	}
	return cmp.Or(src, "changed_line")
}

func changeSummary(summary string) []string {
	out := []string{}
	seen := map[string]bool{}
	for _, line := range strings.Split(summary, "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "- "))
		if line == "" || seen[strings.ToLower(line)] {
			continue
		}
		seen[strings.ToLower(line)] = true
		out = append(out, line)
		if len(out) == 8 {
			break
		}
	}
	return out
}

// BuildExport converts a session's final review report into a findings
// export. It is pure so the review engine can call it on a session it holds.
func BuildExport(s Session, repo, blockOn string) (FindingsExport, error) {
	if s.ReviewContext == nil {
		return FindingsExport{}, errCode(CodeExportNotBound)
	}
	if s.FinalReviewReport == nil {
		return FindingsExport{}, errCode(CodeExportNoReport)
	}
	blockOn = strings.ToLower(cmp.Or(blockOn, DefaultBlockOn))
	if severityRank(blockOn) == 0 {
		return FindingsExport{}, newError(CodeInvalidArgument, "block_on", "must be low, medium, high or critical")
	}
	rc, fr := s.ReviewContext, s.FinalReviewReport
	out := FindingsExport{
		Version: ExportBundleVersion, ReviewID: s.RunID, Repo: cmp.Or(repo, rc.Repository),
		BaseSHA: rc.BaseSHA, HeadSHA: rc.HeadSHA,
		Prompt: ExportPrompt{PromptID: ExportPromptID, PromptVersion: ExportPromptVersion,
			Purpose:       "QA orchestration " + s.RunID + " final review report",
			SchemaVersion: ExportSchemaVersion},
		ChangeSummary: changeSummary(fr.Summary), Files: slices.Clone(rc.ChangedFiles),
		Findings: []ExportFinding{}, BlockOn: blockOn, UnlocatedFindingIDs: []string{},
	}
	rationale := map[string]string{}
	for _, d := range fr.CandidateDecisions {
		if d.Verdict == VerdictConfirmed && d.FinalFindingID != nil && rationale[*d.FinalFindingID] == "" {
			rationale[*d.FinalFindingID] = d.Rationale
		}
	}
	for _, fc := range fr.FindingCandidates {
		if len(fc.SourceLocations) == 0 {
			out.UnlocatedFindings++
			out.UnlocatedFindingIDs = append(out.UnlocatedFindingIDs, fc.CandidateID)
			continue
		}
		span := func(l SourceLocation) ExportSpan {
			end := l.StartLine
			if l.EndLine != nil {
				end = *l.EndLine
			}
			return ExportSpan{Path: l.Path, StartLine: l.StartLine, EndLine: end}
		}
		primary := span(fc.SourceLocations[0])
		var supporting *ExportSpan
		if len(fc.SourceLocations) > 1 {
			s2 := span(fc.SourceLocations[1])
			supporting = &s2
		}
		sev := string(SeverityMedium)
		if fc.Severity != nil {
			sev = string(*fc.Severity)
		}
		anchor := fc.Title
		if fc.FailureCondition != nil {
			anchor = *fc.FailureCondition
		}
		impact := ExportImpact{Summary: fc.Title, Scope: primary.Path}
		if fc.Impact != nil && *fc.Impact != "" {
			impact.Summary = *fc.Impact
		}
		if fc.AffectedArea != nil && *fc.AffectedArea != "" {
			impact.Scope = *fc.AffectedArea
		}
		basis := fmt.Sprintf("%s (evidence: %s)", cmp.Or(rationale[fc.CandidateID], fc.Description),
			strings.Join(fc.EvidenceRefs, ", "))
		out.Findings = append(out.Findings, ExportFinding{
			Category: exportCategory(fc.SourceProfiles), Severity: sev, Confidence: exportConfidence(fc.Confidence),
			Path: primary.Path, StartLine: primary.StartLine, EndLine: primary.EndLine, ChangedSpan: primary,
			SupportingSpan: supporting, Title: fc.Title, Message: fc.Description,
			Evidence: ExportEvidence{Anchor: anchor, ReasoningBasis: basis, Source: exportSource(fc.EvidenceRefs, rc.EvidenceRegistry)},
			Impact:   impact, Blocking: severityRank(sev) >= severityRank(blockOn), Provider: ExportProvider,
			FinalFindingID: fc.CandidateID, SourceProfiles: slices.Clone(fc.SourceProfiles),
			EvidenceRefs: slices.Clone(fc.EvidenceRefs),
		})
	}
	slices.SortStableFunc(out.Findings, func(a, b ExportFinding) int {
		return cmp.Or(strings.Compare(a.Path, b.Path), cmp.Compare(a.StartLine, b.StartLine),
			cmp.Compare(a.EndLine, b.EndLine), strings.Compare(a.FinalFindingID, b.FinalFindingID))
	})
	confirmed := len(fr.FindingCandidates)
	out.ReviewResult = fmt.Sprintf("QA orchestration %s: %d confirmed finding(s), %d exported with a source location.",
		s.Status, confirmed, len(out.Findings))
	return out, nil
}

// Export reads a session and builds its findings export.
func (o *Orchestrator) Export(ctx context.Context, in ExportInput) (FindingsExport, error) {
	// block_on's value set is a rule (published as an enum); in process
	// the library also takes it in any case, as BuildExport does.
	in.BlockOn = lowerPtr(in.BlockOn)
	if err := checkArgs(in); err != nil {
		return FindingsExport{}, err
	}
	s, err := o.Get(ctx, GetInput{RunID: in.RunID})
	if err != nil {
		return FindingsExport{}, err
	}
	var repo, blockOn string
	if in.Repo != nil {
		repo = *in.Repo
	}
	if in.BlockOn != nil {
		blockOn = *in.BlockOn
	}
	return BuildExport(s, repo, blockOn)
}
