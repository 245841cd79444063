package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
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
type FindingSource = qa.FindingSource

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

// BuildBundle is the tool's output for a session's export: the bundle
// qa.BuildExport mapped from the final review report (the one mapping,
// which `diffpal review` uses too), with its trace as the extra keys.
func BuildBundle(exp qa.FindingsExport) (ExportOutput, error) {
	return ExportOutput{Bundle: exp.Bundle, UnlocatedFindings: exp.UnlocatedFindings,
		UnlocatedFindingIDs: nonNil(slices.Clone(exp.UnlocatedFindingIDs)),
		FindingSources:      nonNil(slices.Clone(exp.Sources))}, nil
}
