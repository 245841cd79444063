package review

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/diffpalhq/diffpal/findings"
)

// identify gives every group its stable id (over the anchored snippet,
// occurrence-numbered in location order so that ranking does not matter)
// and marks the groups the baseline already has, before the session
// decides anything about them.
type identify struct{}

func (identify) Name() string { return "identify" }

func (identify) Process(_ context.Context, e *engine) error {
	byLoc := slices.Clone(e.groups)
	slices.SortStableFunc(byLoc, func(a, b *group) int {
		return cmp.Or(strings.Compare(a.best.Path, b.best.Path), cmp.Compare(a.best.StartLine, b.best.StartLine), strings.Compare(a.best.Category, b.best.Category))
	})
	occ := map[string]int{}
	for _, g := range byLoc {
		anchor := nonEmpty(g.best.Snippet, nonEmpty(g.best.Anchor, g.best.Title))
		k := findings.StableIDKey(g.best.Category, g.best.Path, anchor)
		g.stableID = findings.StableID(g.best.Category, g.best.Path, anchor, occ[k])
		occ[k]++
	}
	if e.o.Baseline == nil {
		return nil
	}
	base := map[string]bool{}
	for _, f := range e.o.Baseline.Findings {
		if f.StableID != "" {
			base[f.StableID] = true
		}
	}
	for _, g := range e.groups {
		g.baseline = base[g.stableID]
	}
	return nil
}
