package review

import (
	"cmp"
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

type candidate struct {
	Candidate
	profile qa.Profile
	side    string // "LEFT" for removed-line findings
	refs    []string
	id      string // F-NN in its profile report, when bound
	group   *group
}

type group struct {
	members    []*candidate
	best       *candidate
	confidence float64
	finalID    string // F-NN when bound to the session
	stableID   string
	baseline   bool // already in the baseline
	// rejected is set when a verifier refuted the group; verdict and
	// rationale come from the last verifier that looked at it.
	rejected  bool
	verdict   string
	rationale string
	vrefs     []string
}

func (g *group) severity() findings.Severity { return findings.Severity(g.best.Severity) }

// ---- triage ----------------------------------------------------------------

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

func better(a, b *candidate) bool {
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
