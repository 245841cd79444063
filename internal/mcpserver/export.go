package mcpserver

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/qa"
)

// ExportOutput is the result of export_qa_findings: a findings bundle (v3)
// exactly as `diffpal validate` and findings.Parse read it, plus three keys
// the bundle schema does not know and readers ignore (the v3 schema allows
// unknown properties): how many confirmed findings had no source location,
// which ones, and which final finding and evidence refs each exported
// finding came from. A host can write the whole object to findings.json.
type ExportOutput struct {
	findings.Bundle
	UnlocatedFindings   int             `json:"unlocated_findings" jsonschema:"Confirmed final findings that have no source location and were therefore not exported."`
	UnlocatedFindingIDs []string        `json:"unlocated_finding_ids" jsonschema:"The final finding ids (candidate_id) of those findings."`
	FindingSources      []FindingSource `json:"finding_sources" jsonschema:"For each exported finding, in findings order: its id and the final review report entry it came from."`
}

// FindingSource traces one exported finding back to the session.
type FindingSource struct {
	FindingID      string       `json:"finding_id" jsonschema:"The exported finding's id (findings[].id)."`
	FinalFindingID string       `json:"final_finding_id" jsonschema:"candidate_id of the confirmed final finding."`
	SourceProfiles []qa.Profile `json:"source_profiles" jsonschema:"Profiles the final finding came from."`
	EvidenceRefs   []string     `json:"evidence_refs" jsonschema:"Evidence Packet refs supporting the final finding."`
}

// MarshalJSON writes the bundle as findings marshals it and appends the
// extra keys, so the output stays a valid bundle even if findings.Bundle
// grows its own marshaller.
func (o ExportOutput) MarshalJSON() ([]byte, error) {
	head, err := json.Marshal(&o.Bundle)
	if err != nil {
		return nil, err
	}
	extra, err := json.Marshal(struct {
		UnlocatedFindings   int             `json:"unlocated_findings"`
		UnlocatedFindingIDs []string        `json:"unlocated_finding_ids"`
		FindingSources      []FindingSource `json:"finding_sources"`
	}{o.UnlocatedFindings, nonNil(o.UnlocatedFindingIDs), nonNil(o.FindingSources)})
	if err != nil {
		return nil, err
	}
	head = bytes.TrimRight(head, " \n")
	if len(head) < 2 || head[len(head)-1] != '}' {
		return nil, errors.New("mcpserver: findings bundle did not marshal to an object")
	}
	var b bytes.Buffer
	b.Write(head[:len(head)-1])
	if len(head) > 2 {
		b.WriteByte(',')
	}
	b.Write(extra[1:])
	return b.Bytes(), nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// idBeforeNormalize is the id Normalize will give f: DiffPal's recipe over
// everything that distinguishes a finding, evidence included, so exported
// findings are matched with their sources exactly after Normalize sorts
// them (a key without the evidence let look-alike findings swap sources).
func idBeforeNormalize(repo string, b *findings.Bundle, f findings.Finding) string {
	if f.ReviewID == "" {
		f.ReviewID = b.ReviewID
	}
	return findings.ID(cmp.Or(repo, "local"), b.HeadSHA, &f)
}

func span(s qa.ExportSpan) *findings.Span {
	return &findings.Span{Path: s.Path, StartLine: s.StartLine, EndLine: s.EndLine}
}

// BuildBundle maps qa's findings export onto a findings bundle and
// normalizes it (ids, stable ids, blocking flags from block_on, order), so
// the result is what `diffpal review` would write for the same report.
func BuildBundle(exp qa.FindingsExport) (ExportOutput, error) {
	b := findings.Bundle{
		Version: exp.Version, ReviewID: exp.ReviewID, BaseSHA: exp.BaseSHA, HeadSHA: exp.HeadSHA, Repo: exp.Repo,
		Prompt: &findings.Prompt{PromptID: exp.Prompt.PromptID, PromptVersion: exp.Prompt.PromptVersion,
			Purpose: exp.Prompt.Purpose, SchemaVersion: exp.Prompt.SchemaVersion},
		ChangeSummary: slices.Clone(exp.ChangeSummary),
		ReviewResult:  exp.ReviewResult,
		Findings:      make([]findings.Finding, 0, len(exp.Findings)),
	}
	for _, p := range exp.Files {
		// files is optional: a changed path that a bundle may not carry
		// (absolute, "..", a drive-like name) is left out rather than
		// making the whole report unexportable.
		if findings.PathProblem(p) == "" {
			b.Files = append(b.Files, findings.File{Path: p})
		}
	}
	sources := map[string][]FindingSource{}
	for _, ef := range exp.Findings {
		f := findings.Finding{
			Category: ef.Category, Severity: findings.Severity(ef.Severity), Confidence: ef.Confidence,
			Path: ef.Path, StartLine: ef.StartLine, EndLine: ef.EndLine, ChangedSpan: span(ef.ChangedSpan),
			Title: ef.Title, Message: ef.Message,
			Evidence: &findings.Evidence{Anchor: ef.Evidence.Anchor, ReasoningBasis: ef.Evidence.ReasoningBasis,
				Source: ef.Evidence.Source},
			Impact:   &findings.Impact{Summary: ef.Impact.Summary, Scope: ef.Impact.Scope},
			Provider: ef.Provider,
		}
		if ef.SupportingSpan != nil {
			f.SupportingSpan = span(*ef.SupportingSpan)
		}
		k := idBeforeNormalize(exp.Repo, &b, f)
		sources[k] = append(sources[k], FindingSource{FinalFindingID: ef.FinalFindingID,
			SourceProfiles: nonNil(slices.Clone(ef.SourceProfiles)), EvidenceRefs: nonNil(slices.Clone(ef.EvidenceRefs))})
		b.Findings = append(b.Findings, f)
	}
	blockOn, err := findings.ParseSeverity(exp.BlockOn)
	if err != nil {
		return ExportOutput{}, &qa.Error{Code: qa.CodeInvalidArgument, Field: "block_on", Detail: err.Error()}
	}
	if err := findings.Normalize(&b, findings.Options{Repo: exp.Repo, Policy: findings.Policy{BlockOn: blockOn}}); err != nil {
		// The report's paths and lines passed qa's validation but not the
		// bundle's rules (for example an absolute or ".." path).
		return ExportOutput{}, &qa.Error{Code: qa.CodeInvalidArgument, Field: "",
			Detail: fmt.Sprintf("the exported findings bundle is invalid: %v", err)}
	}
	out := ExportOutput{Bundle: b, UnlocatedFindings: exp.UnlocatedFindings,
		UnlocatedFindingIDs: nonNil(slices.Clone(exp.UnlocatedFindingIDs)),
		FindingSources:      make([]FindingSource, 0, len(b.Findings))}
	for i := range b.Findings {
		f := &b.Findings[i]
		k := f.ID
		if len(sources[k]) == 0 {
			return ExportOutput{}, fmt.Errorf("mcpserver: exported finding %s changed during normalization", f.ID)
		}
		src := sources[k][0]
		sources[k] = sources[k][1:]
		src.FindingID = f.ID
		out.FindingSources = append(out.FindingSources, src)
	}
	return out, nil
}
