package review

import (
	"fmt"
	"slices"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/qa"
)

// The final review report: one decision for every candidate (the
// finalReport stage, engine.go, records it). finalReport records a decision for every candidate of every profile
// report, with a refutation attempt bound to the candidate's hash.

func (e *engine) finalReport(s qa.Session, groups []*group, bound map[*group]bool) (*qa.FinalReviewReport, error) {
	stored := map[string]qa.ProfileCandidate{}
	for _, r := range s.ProfileReports {
		for _, c := range r.FindingCandidates {
			stored[string(r.Profile)+"\x00"+c.CandidateID] = c
		}
	}
	fr := &qa.FinalReviewReport{ProfilesReviewed: s.CompletedProfiles}
	counts := map[findings.Severity]int{}
	kept, refuted := 0, 0
	for _, g := range groups {
		if g.rejected {
			refuted++
			continue
		}
		if g.baseline {
			continue
		}
		kept++
		counts[g.severity()]++
	}
	fr.Summary = fieldText(fmt.Sprintf("%s review of %d files (%d added lines): %d findings (critical %d, high %d, medium %d, low %d); %d candidates refuted by verification.",
		e.o.Provider.Name(), e.audit.Files, e.audit.AddedLines, kept, counts[findings.Critical], counts[findings.High], counts[findings.Medium], counts[findings.Low], refuted), 5000)
	bindContext := s.ReviewContext != nil
	hashOf := func(m *candidate) (string, error) {
		pc, ok := stored[string(m.profile)+"\x00"+m.id]
		if !ok {
			return "", fmt.Errorf("internal: candidate %s/%s not in the session", m.profile, m.id)
		}
		return qa.CandidateSHA256(pc)
	}
	for _, g := range groups {
		if !bound[g] {
			continue
		}
		if g.baseline && !g.rejected {
			// Already reported before: not a new finding of this review.
			for _, m := range g.members {
				if m.id == "" {
					continue
				}
				fr.CandidateDecisions = append(fr.CandidateDecisions, qa.CandidateDecision{
					Source: qa.CandidateRef{Profile: m.profile, CandidateID: m.id}, Verdict: qa.VerdictRejected,
					Rationale:    fieldText("Already in the baseline bundle as stable_id "+g.stableID+"; not reported again.", 2000),
					EvidenceRefs: e.refsOrPlaceholder(m.refs)})
			}
			continue
		}
		if g.rejected {
			// Refuted by a verifier: every member is rejected with the
			// refutation bound to its hash, and nothing reaches the bundle.
			for _, m := range g.members {
				if m.id == "" {
					continue
				}
				refs := e.refsOrPlaceholder(nonEmptyRefs(g.vrefs, m.refs))
				d := qa.CandidateDecision{Source: qa.CandidateRef{Profile: m.profile, CandidateID: m.id}, Verdict: qa.VerdictRejected,
					Rationale: fieldText(nonEmpty(g.rationale, "Refuted by verification against the evidence."), 2000), EvidenceRefs: refs}
				if bindContext {
					h, err := hashOf(m)
					if err != nil {
						return nil, err
					}
					d.Refutation = &qa.Refutation{Status: qa.RefutationRefuted, CandidateSHA256: h, ContextSHA256: s.ReviewContext.EvidencePacketSHA256,
						Rationale: d.Rationale, EvidenceRefs: refs}
				}
				fr.CandidateDecisions = append(fr.CandidateDecisions, d)
			}
			continue
		}
		var srcProfiles []qa.Profile
		var srcCands []qa.CandidateRef
		for _, m := range g.members {
			if m.id == "" {
				continue
			}
			if !slices.Contains(srcProfiles, m.profile) {
				srcProfiles = append(srcProfiles, m.profile)
			}
			srcCands = append(srcCands, qa.CandidateRef{Profile: m.profile, CandidateID: m.id})
		}
		if len(srcCands) == 0 {
			continue // its profile may not report candidates
		}
		fc := e.profileCandidate(g.best, g.finalID)
		sev := qaSeverity(g.severity())
		fr.FindingCandidates = append(fr.FindingCandidates, qa.FinalCandidate{
			CandidateID: g.finalID, Title: fc.Title, Description: fc.Description, Confidence: confidenceLevel(g.confidence),
			VerificationGap: fc.VerificationGap, EvidenceRefs: fc.EvidenceRefs, AffectedArea: fc.AffectedArea, Impact: fc.Impact,
			FailureCondition: fc.FailureCondition, FlipCondition: fc.FlipCondition, SourceLocations: fc.SourceLocations,
			Severity: &sev, SourceProfiles: srcProfiles, SourceCandidates: srcCands,
		})
		for _, m := range g.members {
			if m.id == "" {
				continue
			}
			finalID := g.finalID
			d := qa.CandidateDecision{Source: qa.CandidateRef{Profile: m.profile, CandidateID: m.id}, FinalFindingID: &finalID,
				EvidenceRefs: e.refsOrPlaceholder(m.refs)}
			if m == g.best {
				d.Verdict = qa.VerdictConfirmed
				d.Rationale = fieldText(fmt.Sprintf("%s reported it at %s:%d on changed lines; it survived anchoring, suppression and the baseline.", nonEmpty(m.RuleID, e.o.Provider.Name()), m.Path, m.StartLine), 2000)
			} else {
				d.Verdict = qa.VerdictDuplicate
				d.Rationale = fieldText(fmt.Sprintf("Same location and category as %s (rule %s).", g.finalID, g.best.RuleID), 2000)
			}
			if bindContext {
				h, err := hashOf(m)
				if err != nil {
					return nil, err
				}
				status, why := qa.RefutationNotRefuted, "Re-checked the rule match against the comment- and string-masked changed line; the match stands."
				switch g.verdict {
				case "confirmed":
					why = nonEmpty(g.rationale, "Verified against the evidence.")
				case "unverified":
					status, why = qa.RefutationUnverified, nonEmpty(g.rationale, "The verifier could not decide from the evidence.")
				}
				d.Refutation = &qa.Refutation{Status: status, CandidateSHA256: h, ContextSHA256: s.ReviewContext.EvidencePacketSHA256,
					Rationale: fieldText(why, 2000), EvidenceRefs: e.refsOrPlaceholder(nonEmptyRefs(g.vrefs, d.EvidenceRefs))}
			}
			fr.CandidateDecisions = append(fr.CandidateDecisions, d)
		}
	}
	if n := kept - len(fr.FindingCandidates); n > 0 {
		fr.CoverageGaps = append(fr.CoverageGaps, qa.RefNote{Text: fmt.Sprintf("%d findings are recorded only in findings.json (beyond the session's %d-finding limit, or from profiles that report no candidates).", n, maxSessionFindings)})
	}
	if n := len(e.ch.Skips); n > 0 {
		fr.CoverageGaps = append(fr.CoverageGaps, qa.RefNote{Text: fmt.Sprintf("%d changed files were not reviewed (skips are listed with reasons in qa-session.json).", n)})
	}
	return fr, nil
}

func nonEmptyRefs(a, b []string) []string {
	if len(a) > 0 {
		if len(a) > 32 {
			return a[:32]
		}
		return a
	}
	return b
}

func qaSeverity(s findings.Severity) qa.Severity {
	switch s {
	case findings.Critical, findings.High:
		return qa.SeverityHigh
	case findings.Medium:
		return qa.SeverityMedium
	}
	return qa.SeverityLow
}
