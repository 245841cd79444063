package qa

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/diffpalhq/diffpal/findings"
)

// Export metadata constants: the prompt block and provider of a bundle
// exported from a host's session.
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

// FindingsExport is the findings bundle built from a session's final
// review report (normalized: ids, stable ids, blocking flags, order), with
// what the bundle cannot say: which confirmed final findings had no source
// location, and which final finding each exported finding came from.
type FindingsExport struct {
	findings.Bundle
	// BlockOn is the threshold the blocking flags were computed with.
	BlockOn string
	// Confirmed final findings without a source location: counted, never
	// given an invented location.
	UnlocatedFindings   int
	UnlocatedFindingIDs []string
	// Sources trace Bundle.Findings, in order, back to the report.
	Sources []FindingSource
}

// FindingSource traces one exported finding back to the session.
type FindingSource struct {
	FindingID      string    `json:"finding_id" jsonschema:"The exported finding's id (findings[].id)."`
	FinalFindingID string    `json:"final_finding_id" jsonschema:"candidate_id of the confirmed final finding."`
	SourceProfiles []Profile `json:"source_profiles" jsonschema:"Profiles the final finding came from."`
	EvidenceRefs   []string  `json:"evidence_refs" jsonschema:"Evidence Packet refs supporting the final finding."`
}

// ExportOptions control BuildExport. The zero value is what
// export_qa_findings uses by default; the review engine, which holds more
// than the report can carry, sets the rest.
type ExportOptions struct {
	// Repo is the bundle's repository id (it enters finding ids); default
	// the header's, else review_context.repository.
	Repo string
	// Policy computes the blocking flags (BlockOn empty means high).
	Policy findings.Policy
	// Header, when set, is the bundle's header (review id, SHAs, prompt,
	// inspection, change summary, files, review result) in place of the
	// one derived from the review context; a session need not be bound
	// then.
	Header *findings.Bundle
	// Findings, keyed by final finding id (candidate_id), are the findings
	// of those final findings in place of the ones mapped from the report:
	// the review engine knows each one's rule, exact severity, confidence,
	// suggestion and side, which the report's fields cannot hold.
	Findings map[string]findings.Finding
	// Unreported are findings the report does not hold, exported after
	// its own: the review engine's findings beyond the session's limits or
	// from profiles that report no candidates (the report's coverage gaps
	// say so).
	Unreported []findings.Finding
	// Result, when set, writes review_result from the bundle, before and
	// after normalization (blocking flags are known only after).
	Result func(*findings.Bundle) string
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

// exportHeader is the bundle header of a bound session's export.
func exportHeader(s Session, repo string) findings.Bundle {
	rc, fr := s.ReviewContext, s.FinalReviewReport
	b := findings.Bundle{
		Version: ExportBundleVersion, ReviewID: s.RunID, Repo: cmp.Or(repo, rc.Repository),
		BaseSHA: rc.BaseSHA, HeadSHA: rc.HeadSHA,
		Prompt: &findings.Prompt{PromptID: ExportPromptID, PromptVersion: ExportPromptVersion,
			Purpose:       "QA orchestration " + s.RunID + " final review report",
			SchemaVersion: ExportSchemaVersion},
		ChangeSummary: changeSummary(fr.Summary),
	}
	for _, p := range rc.ChangedFiles {
		// files is optional: a changed path that a bundle may not carry
		// (absolute, "..", a drive-like name) is left out rather than
		// making the whole report unexportable.
		if findings.PathProblem(p) == "" {
			b.Files = append(b.Files, findings.File{Path: p})
		}
	}
	return b
}

// exportFinding maps a located final finding onto a finding; the ids,
// blocking flag and review id are Normalize's.
func exportFinding(fc FinalCandidate, rationale string, reg []RegistryEntry) findings.Finding {
	span := func(l SourceLocation) *findings.Span {
		end := l.StartLine
		if l.EndLine != nil {
			end = *l.EndLine
		}
		return &findings.Span{Path: l.Path, StartLine: l.StartLine, EndLine: end}
	}
	primary := span(fc.SourceLocations[0])
	var supporting *findings.Span
	if len(fc.SourceLocations) > 1 {
		supporting = span(fc.SourceLocations[1])
	}
	sev := string(SeverityMedium)
	if fc.Severity != nil {
		sev = string(*fc.Severity)
	}
	anchor := fc.Title
	if fc.FailureCondition != nil {
		anchor = *fc.FailureCondition
	}
	impact := &findings.Impact{Summary: fc.Title, Scope: primary.Path}
	if fc.Impact != nil && *fc.Impact != "" {
		impact.Summary = *fc.Impact
	}
	if fc.AffectedArea != nil && *fc.AffectedArea != "" {
		impact.Scope = *fc.AffectedArea
	}
	basis := fmt.Sprintf("%s (evidence: %s)", cmp.Or(rationale, fc.Description), strings.Join(fc.EvidenceRefs, ", "))
	return findings.Finding{
		Category: exportCategory(fc.SourceProfiles), Severity: findings.Severity(sev), Confidence: exportConfidence(fc.Confidence),
		Path: primary.Path, StartLine: primary.StartLine, EndLine: primary.EndLine, ChangedSpan: primary,
		SupportingSpan: supporting, Title: fc.Title, Message: fc.Description,
		Evidence: &findings.Evidence{Anchor: anchor, ReasoningBasis: basis, Source: exportSource(fc.EvidenceRefs, reg)},
		Impact:   impact, Provider: ExportProvider,
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// BuildExport is the one mapping from a session's final review report to
// a findings bundle: export_qa_findings (Export) and the review engine
// both call it. Every confirmed final finding becomes a finding (one
// without a source location is counted instead, never given an invented
// one) and the bundle is normalized; each finding keeps the final finding
// it came from.
//
// A Normalize failure is returned as is (findings.Problems): the caller
// says whose fault it is.
func BuildExport(s Session, o ExportOptions) (FindingsExport, error) {
	if s.ReviewContext == nil && o.Header == nil {
		return FindingsExport{}, errCode(CodeExportNotBound)
	}
	fr := s.FinalReviewReport
	if fr == nil {
		return FindingsExport{}, errCode(CodeExportNoReport)
	}
	blockOn, err := findings.ParseSeverity(string(cmp.Or(o.Policy.BlockOn, findings.DefaultBlockOn)))
	if err != nil {
		return FindingsExport{}, newError(CodeInvalidArgument, "block_on", "must be low, medium, high or critical")
	}
	o.Policy.BlockOn = blockOn
	var b findings.Bundle
	if o.Header != nil {
		b = *o.Header
	} else {
		b = exportHeader(s, o.Repo)
	}
	repo := cmp.Or(o.Repo, b.Repo)
	if o.Repo != "" {
		b.Repo = repo
	}
	out := FindingsExport{BlockOn: string(blockOn), UnlocatedFindingIDs: []string{}}

	type entry struct {
		f   findings.Finding
		src FindingSource
	}
	var entries []entry
	rationale := map[string]string{}
	for _, d := range fr.CandidateDecisions {
		if d.Verdict == VerdictConfirmed && d.FinalFindingID != nil && rationale[*d.FinalFindingID] == "" {
			rationale[*d.FinalFindingID] = d.Rationale
		}
	}
	var reg []RegistryEntry
	if s.ReviewContext != nil {
		reg = s.ReviewContext.EvidenceRegistry
	}
	for _, fc := range fr.FindingCandidates {
		src := FindingSource{FinalFindingID: fc.CandidateID,
			SourceProfiles: nonNil(slices.Clone(fc.SourceProfiles)), EvidenceRefs: nonNil(slices.Clone(fc.EvidenceRefs))}
		if f, ok := o.Findings[fc.CandidateID]; ok {
			entries = append(entries, entry{f, src})
			continue
		}
		if len(fc.SourceLocations) == 0 {
			out.UnlocatedFindings++
			out.UnlocatedFindingIDs = append(out.UnlocatedFindingIDs, fc.CandidateID)
			continue
		}
		entries = append(entries, entry{exportFinding(fc, rationale[fc.CandidateID], reg), src})
	}
	for _, f := range o.Unreported {
		entries = append(entries, entry{f, FindingSource{SourceProfiles: []Profile{}, EvidenceRefs: []string{}}})
	}
	// Normalize orders findings by content; this order only decides
	// between findings it cannot tell apart, so that their sources stay
	// deterministic.
	slices.SortStableFunc(entries, func(x, y entry) int {
		return cmp.Or(strings.Compare(x.f.Path, y.f.Path), cmp.Compare(x.f.StartLine, y.f.StartLine),
			cmp.Compare(x.f.EndLine, y.f.EndLine), strings.Compare(x.src.FinalFindingID, y.src.FinalFindingID))
	})

	// Sources are matched to findings by the id Normalize will give each
	// one: DiffPal's recipe over everything that distinguishes a finding,
	// evidence included (a key without the evidence let look-alike
	// findings swap sources).
	sources := map[string][]FindingSource{}
	b.Findings = make([]findings.Finding, 0, len(entries))
	for _, e := range entries {
		f := e.f
		if f.ReviewID == "" {
			f.ReviewID = b.ReviewID
		}
		k := findings.ID(cmp.Or(repo, "local"), b.HeadSHA, &f)
		sources[k] = append(sources[k], e.src)
		b.Findings = append(b.Findings, e.f)
	}
	if o.Header == nil {
		b.ReviewResult = fmt.Sprintf("QA orchestration %s: %d confirmed finding(s), %d exported with a source location.",
			s.Status, len(fr.FindingCandidates), len(b.Findings))
	}
	if o.Result != nil {
		b.ReviewResult = o.Result(&b)
	}
	if err := findings.Normalize(&b, findings.Options{Repo: repo, Policy: o.Policy}); err != nil {
		return FindingsExport{}, err
	}
	if o.Result != nil {
		b.ReviewResult = o.Result(&b)
	}
	out.Sources = make([]FindingSource, 0, len(b.Findings))
	for i := range b.Findings {
		f := &b.Findings[i]
		if len(sources[f.ID]) == 0 {
			return FindingsExport{}, fmt.Errorf("qa: exported finding %s changed during normalization", f.ID)
		}
		src := sources[f.ID][0]
		sources[f.ID] = sources[f.ID][1:]
		src.FindingID = f.ID
		out.Sources = append(out.Sources, src)
	}
	out.Bundle = b
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
	s, err := o.Get(withoutSessionJSON(ctx), GetInput{RunID: in.RunID})
	if err != nil {
		return FindingsExport{}, err
	}
	var opts ExportOptions
	if in.Repo != nil {
		opts.Repo = *in.Repo
	}
	if in.BlockOn != nil {
		opts.Policy.BlockOn = findings.Severity(*in.BlockOn)
	}
	exp, err := BuildExport(s, opts)
	var ps findings.Problems
	if errors.As(err, &ps) {
		// The report's paths and lines passed validation but not the
		// bundle's rules (for example an absolute or ".." path).
		return FindingsExport{}, &Error{Code: CodeInvalidArgument,
			Detail: fmt.Sprintf("the exported findings bundle is invalid: %v", err)}
	}
	return exp, err
}
