package qa

import (
	"fmt"
	"slices"
	"strings"

	"github.com/diffpalhq/diffpal/internal/jcs"
)

// CandidateSHA256 returns the hash a refutation must carry for a profile
// candidate: SHA-256 of the RFC 8785 canonical JSON of the candidate exactly
// as the session returns it (every key present, nulls and empty lists
// included).
func CandidateSHA256(c ProfileCandidate) (string, error) { return jcs.SHA256Hex(c) }

type candidateKey struct {
	profile Profile
	id      string
}

// normalizeFinalReport validates a final report against the session's
// completed profiles and stored profile reports and returns its stored form.
func normalizeFinalReport(s *Session, r FinalReviewReport) (FinalReviewReport, error) {
	c := &checker{code: CodeInvalidFinalReport}
	const p = "final_review_report"
	known := s.evidenceSet()
	c.checkRules(p, &r, true)

	completed := map[Profile]bool{}
	for _, cp := range s.CompletedProfiles {
		completed[cp] = true
	}
	reviewed := map[Profile]bool{}
	for i, pr := range r.ProfilesReviewed {
		f := fmt.Sprintf("%s.profiles_reviewed[%d]", p, i)
		switch {
		case reviewed[pr]:
			c.failf(f, "duplicate profile %q", pr)
		case !completed[pr]:
			c.failf(f, "%q is not a completed profile of this session", pr)
		}
		reviewed[pr] = true
	}
	// Exactly the completed profiles, which is the empty set when a
	// session stopped early before any profile completed.
	if len(reviewed) != len(completed) {
		c.failf(p+".profiles_reviewed", "must list exactly the completed profiles %s", joinProfiles(s.CompletedProfiles))
	}

	// Index every stored profile candidate with its owning report.
	candidates := map[candidateKey]ProfileCandidate{}
	reports := map[candidateKey]ProfileReport{}
	var order []candidateKey
	for _, rep := range s.ProfileReports {
		for _, fc := range rep.FindingCandidates {
			k := candidateKey{rep.Profile, fc.CandidateID}
			candidates[k] = fc
			reports[k] = rep
			order = append(order, k)
		}
	}

	finals := map[string]int{}
	sourceOf := map[candidateKey]string{} // profile candidate → final finding listing it
	for i, fc := range r.FindingCandidates {
		f := fmt.Sprintf("%s.finding_candidates[%d]", p, i)
		checkCandidate(c, f, fc.EvidenceRefs, fc.SourceLocations, known)
		if _, dup := finals[fc.CandidateID]; dup {
			c.failf(f+".candidate_id", "duplicate candidate_id %q", fc.CandidateID)
		}
		finals[fc.CandidateID] = i
		for j, sp := range fc.SourceProfiles {
			if !completed[sp] {
				c.failf(fmt.Sprintf("%s.source_profiles[%d]", f, j), "%q is not a completed profile of this session", sp)
			}
		}
		for j, sc := range fc.SourceCandidates {
			sf := fmt.Sprintf("%s.source_candidates[%d]", f, j)
			k := candidateKey{sc.Profile, sc.CandidateID}
			if _, ok := candidates[k]; !ok {
				c.failf(sf, "no profile report candidate %s/%s", sc.Profile, sc.CandidateID)
				continue
			}
			if !slices.Contains(fc.SourceProfiles, sc.Profile) {
				c.failf(sf+".profile", "%q must also be listed in source_profiles", sc.Profile)
			}
			if other, ok := sourceOf[k]; ok {
				c.failf(sf, "candidate %s/%s is already merged into %s", sc.Profile, sc.CandidateID, other)
			}
			sourceOf[k] = fc.CandidateID
		}
	}

	decided := map[candidateKey]bool{}
	confirmedFor := map[string]bool{}
	decisions := make([]CandidateDecision, 0, len(r.CandidateDecisions))
	for i, d := range r.CandidateDecisions {
		f := fmt.Sprintf("%s.candidate_decisions[%d]", p, i)
		k := candidateKey{d.Source.Profile, d.Source.CandidateID}
		stored, ok := candidates[k]
		switch {
		case !ok:
			c.failf(f+".source", "no profile report candidate %s/%s", d.Source.Profile, d.Source.CandidateID)
		case decided[k]:
			c.failf(f+".source", "candidate %s/%s already has a decision", d.Source.Profile, d.Source.CandidateID)
		}
		decided[k] = true
		switch d.Verdict {
		case VerdictConfirmed, VerdictDuplicate:
			if d.FinalFindingID == nil {
				c.failf(f+".final_finding_id", "is required for verdict %s", d.Verdict)
				break
			}
			if _, ok := finals[*d.FinalFindingID]; !ok {
				c.failf(f+".final_finding_id", "no final finding %q", *d.FinalFindingID)
				break
			}
			if sourceOf[k] != *d.FinalFindingID {
				c.failf(f+".final_finding_id", "final finding %q does not list %s/%s in source_candidates",
					*d.FinalFindingID, d.Source.Profile, d.Source.CandidateID)
			}
			if d.Verdict == VerdictConfirmed {
				confirmedFor[*d.FinalFindingID] = true
			}
		case VerdictRejected, VerdictUnverified:
			if d.FinalFindingID != nil {
				c.failf(f+".final_finding_id", "must be null for verdict %s", d.Verdict)
			}
		}
		c.known(f+".evidence_refs", d.EvidenceRefs, known)
		if d.Refutation != nil {
			ref := *d.Refutation
			validateRefutation(c, f+".refutation", &ref, d.Verdict, stored, ok, reports[k], s, known)
			d.Refutation = &ref
		}
		decisions = append(decisions, d)
	}
	for _, k := range order {
		if !decided[k] {
			c.failf(p+".candidate_decisions", "missing decision for candidate %s/%s", k.profile, k.id)
			break
		}
	}
	for i, fc := range r.FindingCandidates {
		if !confirmedFor[fc.CandidateID] {
			c.failf(fmt.Sprintf("%s.finding_candidates[%d]", p, i), "final finding %q is not backed by a confirmed decision", fc.CandidateID)
		}
		for j, sc := range fc.SourceCandidates {
			k := candidateKey{sc.Profile, sc.CandidateID}
			if _, ok := candidates[k]; ok && !decidedInto(r.CandidateDecisions, k, fc.CandidateID) {
				c.failf(fmt.Sprintf("%s.finding_candidates[%d].source_candidates[%d]", p, i, j),
					"the decision for %s/%s must be confirmed or duplicate with final_finding_id %q", sc.Profile, sc.CandidateID, fc.CandidateID)
			}
		}
	}
	checkNotes(c, p+".coverage_gaps", r.CoverageGaps, known)
	checkNotes(c, p+".unverified", r.Unverified, known)
	validateRulesHash(c, p+".review_rules_sha256", r.ReviewRulesSHA256, s)
	if err := c.result(); err != nil {
		return FinalReviewReport{}, err
	}
	r.CandidateDecisions = decisions
	r.ReviewRulesSHA256 = lowerPtr(r.ReviewRulesSHA256)
	return r, nil
}

func decidedInto(ds []CandidateDecision, k candidateKey, final string) bool {
	for _, d := range ds {
		if d.Source.Profile == k.profile && d.Source.CandidateID == k.id {
			return (d.Verdict == VerdictConfirmed || d.Verdict == VerdictDuplicate) &&
				d.FinalFindingID != nil && *d.FinalFindingID == final
		}
	}
	return false
}

func validateRefutation(c *checker, f string, ref *Refutation, verdict Verdict, stored ProfileCandidate, found bool,
	rep ProfileReport, s *Session, known map[string]bool) {
	if ref.Status == RefutationRefuted && verdict != VerdictRejected {
		c.failf(f+".status", "refuted is only compatible with verdict rejected")
	}
	if found {
		want, err := CandidateSHA256(stored)
		if err != nil || !strings.EqualFold(want, ref.CandidateSHA256) {
			c.failf(f+".candidate_sha256", "does not match the stored candidate (expected %s)", want)
		}
	}
	var allowed []string
	if s.ReviewContext != nil {
		allowed = append(allowed, s.ReviewContext.EvidencePacketSHA256)
	}
	if rep.ContextSelection != nil {
		allowed = append(allowed, rep.ContextSelection.SelectedPacketSHA256)
	}
	if len(allowed) > 0 && !slices.Contains(allowed, strings.ToLower(ref.ContextSHA256)) {
		c.failf(f+".context_sha256", "must equal evidence_packet_sha256 or the profile's selected_packet_sha256")
	}
	c.known(f+".evidence_refs", ref.EvidenceRefs, known)
	ref.CandidateSHA256 = strings.ToLower(ref.CandidateSHA256)
	ref.ContextSHA256 = strings.ToLower(ref.ContextSHA256)
}

func joinProfiles(ps []Profile) string {
	if len(ps) == 0 {
		return "(none)"
	}
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = string(p)
	}
	return strings.Join(s, ", ")
}
