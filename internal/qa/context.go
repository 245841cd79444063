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
	c.text(p+".repository", in.Repository, 1, 512)
	for _, f := range []struct{ name, v string }{{"base_sha", in.BaseSHA}, {"head_sha", in.HeadSHA}} {
		if !isGitSHA(f.v) {
			c.failf(p+"."+f.name, "must be 40 or 64 hex characters")
		}
	}
	c.sha256(p+".diff_sha256", in.DiffSHA256)
	c.sha256(p+".evidence_packet_sha256", in.EvidencePacketSHA256)

	c.count(p+".changed_files", len(in.ChangedFiles), 1, 500)
	seenFiles := map[string]bool{}
	for i, f := range in.ChangedFiles {
		field := fmt.Sprintf("%s.changed_files[%d]", p, i)
		c.text(field, f, 1, 1024)
		if seenFiles[f] {
			c.failf(field, "duplicate path %q", f)
		}
		seenFiles[f] = true
	}

	c.count(p+".evidence_refs", len(in.EvidenceRefs), 1, 1000)
	refs := map[string]bool{}
	for i, r := range in.EvidenceRefs {
		field := fmt.Sprintf("%s.evidence_refs[%d]", p, i)
		c.ref(field, r, nil)
		if refs[r] {
			c.failf(field, "duplicate evidence ref %q", r)
		}
		refs[r] = true
	}

	c.count(p+".evidence_registry", len(in.EvidenceRegistry), 0, 1000)
	registry := make([]RegistryEntry, 0, len(in.EvidenceRegistry))
	covered := map[string]bool{}
	for i, e := range in.EvidenceRegistry {
		field := fmt.Sprintf("%s.evidence_registry[%d]", p, i)
		c.ref(field+".evidence_ref", e.EvidenceRef, refs)
		if covered[e.EvidenceRef] {
			c.failf(field+".evidence_ref", "duplicate registry entry for %q", e.EvidenceRef)
		}
		covered[e.EvidenceRef] = true
		if !e.Kind.valid() {
			c.failf(field+".kind", "must be one of source, diff, requirement, runtime, other")
		}
		c.sha256(field+".sha256", e.SHA256)
		c.optText(field+".path", e.Path, 1, 1024)
		if e.Revision != nil && !isGitSHA(*e.Revision) {
			c.failf(field+".revision", "must be 40 or 64 hex characters")
		}
		if e.StartLine != nil && *e.StartLine < 1 {
			c.failf(field+".start_line", "must be >= 1")
		}
		if e.EndLine != nil && *e.EndLine < 1 {
			c.failf(field+".end_line", "must be >= 1")
		}
		if e.StartLine != nil && e.EndLine != nil && *e.EndLine < *e.StartLine {
			c.failf(field+".end_line", "must be >= start_line")
		}
		c.optText(field+".locator", e.Locator, 1, 1024)
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

func normalizeRules(c *checker, in *ReviewRules) *ReviewRules {
	const p = "review_context.review_rules"
	if in.SchemaVersion != nil && *in.SchemaVersion != 1 {
		c.failf(p+".schema_version", "must be 1")
	}
	c.count(p+".rules", len(in.Rules), 0, 100)
	seen := map[string]bool{}
	out := make([]ReviewRule, 0, len(in.Rules))
	for i, r := range in.Rules {
		field := fmt.Sprintf("%s.rules[%d]", p, i)
		if !isRuleID(r.RuleID) {
			c.failf(field+".rule_id", "must match %s", patternRuleID)
		}
		if seen[r.RuleID] {
			c.failf(field+".rule_id", "duplicate rule_id %q", r.RuleID)
		}
		seen[r.RuleID] = true
		if r.Kind != RuleKindRaise && r.Kind != RuleKindGuard {
			c.failf(field+".kind", "must be raise or guard")
		}
		c.count(field+".paths", len(r.Paths), 1, 32)
		for j, g := range r.Paths {
			gf := fmt.Sprintf("%s.paths[%d]", field, j)
			if g == "" {
				c.failf(gf, "must not be empty")
			} else if _, err := path.Match(g, ""); err != nil {
				c.failf(gf, "is not a valid glob: %v", err)
			}
		}
		c.text(field+".condition", r.Condition, 1, 2000)
		c.text(field+".text", r.Text, 1, 2000)
		c.text(field+".rationale", r.Rationale, 1, 2000)
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
