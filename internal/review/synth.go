package review

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/clip"
	"github.com/diffpalhq/diffpal/internal/qa"
)

// maxSessionFindings is the contract's cap on candidates per report and
// final findings; the bundle itself is not capped.
const maxSessionFindings = 100

// merge is synthesis: candidates about the same problem become one group,
// led by the most severe, then most confident, then earliest profile's
// candidate, and the groups are ranked (severity, confidence, location).
type merge struct{}

func (merge) Name() string { return "merge" }

func (merge) Process(_ context.Context, e *engine) error {
	e.per = map[qa.Profile][]*candidate{}
	for _, c := range e.cands {
		e.per[c.profile] = append(e.per[c.profile], c)
	}
	e.audit.Candidates = len(e.cands)
	e.groups = synthesize(e.per, e.profiles)
	return nil
}

// bind numbers the highest-ranked groups (at most the contract's 100
// final findings) and binds them to the session; the others reach only
// the bundle.
type bind struct{}

func (bind) Name() string { return "bind" }

func (bind) Process(_ context.Context, e *engine) error {
	e.bound = groupsForSession(e.groups)
	return nil
}

// synthesize merges candidates about the same problem (same file, side,
// first line and category) across rules and profiles; the most severe,
// then most confident, then earliest profile's candidate leads the group.
func synthesize(per map[qa.Profile][]*candidate, order []qa.Profile) []*group {
	byKey := map[string]*group{}
	var groups []*group
	for _, p := range order {
		for _, c := range per[p] {
			key := c.Path + "\x00" + c.side + "\x00" + strconv.Itoa(c.StartLine) + "\x00" + c.Category
			g := byKey[key]
			if g == nil {
				g = &group{}
				byKey[key] = g
				groups = append(groups, g)
			}
			g.members = append(g.members, c)
			c.group = g
			if g.best == nil || better(c, g.best) {
				g.best = c
			}
			g.confidence = max(g.confidence, c.Confidence)
		}
	}
	slices.SortStableFunc(groups, func(a, b *group) int {
		return cmp.Or(
			cmp.Compare(b.severity().Rank(), a.severity().Rank()),
			cmp.Compare(b.confidence, a.confidence),
			strings.Compare(a.best.Path, b.best.Path),
			cmp.Compare(a.best.StartLine, b.best.StartLine),
			strings.Compare(a.best.RuleID, b.best.RuleID),
		)
	})
	return groups
}

// better says whether a should lead b's group. A specific rule leads an
// audit.* rule on the same line whatever their severities: the audit rule
// reports every use of an API, the other one why this use is a problem.
func better(a, b *candidate) bool {
	if aa, ab := strings.HasPrefix(a.RuleID, "audit."), strings.HasPrefix(b.RuleID, "audit."); aa != ab {
		return ab
	}
	ra, rb := findings.Severity(a.Severity).Rank(), findings.Severity(b.Severity).Rank()
	if ra != rb {
		return ra > rb
	}
	return a.Confidence > b.Confidence
}

// groupsForSession binds the highest-ranked groups (at most the contract's
// 100 final findings) to the session and numbers them.
func groupsForSession(groups []*group) map[*group]bool {
	bound := map[*group]bool{}
	for i, g := range groups {
		if i >= maxSessionFindings {
			break
		}
		bound[g] = true
		g.finalID = fmt.Sprintf("F-%02d", i+1)
	}
	return bound
}

func confidenceLevel(f float64) qa.Confidence {
	switch {
	case f >= 0.8:
		return qa.ConfidenceHigh
	case f >= 0.5:
		return qa.ConfidenceMedium
	}
	return qa.ConfidenceLow
}

func nonEmpty(s, fallback string) string {
	if strings.TrimSpace(s) == "" {
		return fallback
	}
	return s
}

// fieldText trims s and clips it to a contract field's byte limit.
func fieldText(s string, n int) string { return clip.Text(strings.TrimSpace(s), n) }
