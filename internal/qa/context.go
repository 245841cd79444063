package qa

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/diffpalhq/diffpal/internal/jcs"
)

// normalizeReviewContext validates a start input's review_context and returns
// the stored form: hex identifiers lower-cased, defaults filled, and the
// rules hash computed. Field paths in errors start at "review_context".
func normalizeReviewContext(in *ReviewContextInput) (*ReviewContext, error) {
	c := &checker{code: CodeInvalidReviewContext}
	const p = "review_context"
	c.checkRules(p, in, true)

	seenFiles := map[string]bool{}
	for i, f := range in.ChangedFiles {
		if seenFiles[f] {
			c.failf(fmt.Sprintf("%s.changed_files[%d]", p, i), "duplicate path %q", f)
		}
		seenFiles[f] = true
	}

	refs := map[string]bool{}
	for i, r := range in.EvidenceRefs {
		if refs[r] {
			c.failf(fmt.Sprintf("%s.evidence_refs[%d]", p, i), "duplicate evidence ref %q", r)
		}
		refs[r] = true
	}

	registry := make([]RegistryEntry, 0, len(in.EvidenceRegistry))
	covered := map[string]bool{}
	for i, e := range in.EvidenceRegistry {
		field := fmt.Sprintf("%s.evidence_registry[%d]", p, i)
		c.knownRef(field+".evidence_ref", e.EvidenceRef, refs)
		if covered[e.EvidenceRef] {
			c.failf(field+".evidence_ref", "duplicate registry entry for %q", e.EvidenceRef)
		}
		covered[e.EvidenceRef] = true
		if e.StartLine != nil && e.EndLine != nil && *e.EndLine < *e.StartLine {
			c.failf(field+".end_line", "must be >= start_line")
		}
		e.SHA256 = strings.ToLower(e.SHA256)
		e.Revision = lowerPtr(e.Revision)
		registry = append(registry, e)
	}
	// A partial registry would let a report cite refs whose provenance the
	// host never declared, so a non-empty registry must cover every ref.
	if len(in.EvidenceRegistry) > 0 && c.err == nil {
		for i, r := range in.EvidenceRefs {
			if !covered[r] {
				c.failf(fmt.Sprintf("%s.evidence_refs[%d]", p, i), "evidence ref %q has no evidence_registry entry", r)
			}
		}
	}

	var rules *ReviewRules
	var rulesHash *string
	if in.ReviewRules != nil {
		rules = normalizeRules(c, in.ReviewRules)
		if c.err == nil {
			h, err := jcs.SHA256Hex(rules)
			if err != nil {
				c.failf(p+".review_rules", "cannot be canonicalized: %v", err)
			}
			rulesHash = &h
		}
	}
	if err := c.result(); err != nil {
		return nil, err
	}
	return &ReviewContext{
		Repository:           in.Repository,
		BaseSHA:              strings.ToLower(in.BaseSHA),
		HeadSHA:              strings.ToLower(in.HeadSHA),
		DiffSHA256:           strings.ToLower(in.DiffSHA256),
		EvidencePacketSHA256: strings.ToLower(in.EvidencePacketSHA256),
		ChangedFiles:         slices.Clone(in.ChangedFiles),
		EvidenceRefs:         slices.Clone(in.EvidenceRefs),
		EvidenceRegistry:     registry,
		ReviewRules:          rules,
		ReviewRulesSHA256:    rulesHash,
	}, nil
}

// normalizeRules checks what the rules' schema cannot (unique ids, valid
// globs; checkRules has run) and returns the stored form.
func normalizeRules(c *checker, in *ReviewRules) *ReviewRules {
	const p = "review_context.review_rules"
	seen := map[string]bool{}
	out := make([]ReviewRule, 0, len(in.Rules))
	for i, r := range in.Rules {
		field := fmt.Sprintf("%s.rules[%d]", p, i)
		if seen[r.RuleID] {
			c.failf(field+".rule_id", "duplicate rule_id %q", r.RuleID)
		}
		seen[r.RuleID] = true
		for j, g := range r.Paths {
			gf := fmt.Sprintf("%s.paths[%d]", field, j)
			if g == "" {
				c.failf(gf, "must not be empty")
			} else if _, err := path.Match(g, ""); err != nil {
				c.failf(gf, "is not a valid glob: %v", err)
			}
		}
		r.Paths = slices.Clone(r.Paths)
		out = append(out, r)
	}
	return &ReviewRules{SchemaVersion: ptr(1), Rules: out}
}

// evidenceSet returns the session's evidence refs as a set, or nil for an
// unbound session, where refs are checked against the pattern only.
func (s *Session) evidenceSet() map[string]bool {
	if s.ReviewContext == nil {
		return nil
	}
	m := make(map[string]bool, len(s.ReviewContext.EvidenceRefs))
	for _, r := range s.ReviewContext.EvidenceRefs {
		m[r] = true
	}
	return m
}
