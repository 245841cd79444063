package review

import "context"

// baseline leaves out of the bundle the groups the baseline bundle already
// holds, and lists stable ids by status: new (reported now), unchanged
// (left out) and fixed (in the baseline, gone from the change).
type baseline struct{}

func (baseline) Name() string { return "baseline" }

func (baseline) Process(_ context.Context, e *engine) error {
	if e.o.Baseline == nil {
		return nil
	}
	sum := &BaselineSummary{New: []string{}, Unchanged: []string{}, Fixed: []string{}}
	current := map[string]bool{}
	e.keepGroups(func(g *group) bool {
		current[g.stableID] = true
		if g.baseline {
			sum.Unchanged = append(sum.Unchanged, g.stableID)
			return false
		}
		sum.New = append(sum.New, g.stableID)
		return true
	})
	for _, f := range e.o.Baseline.Findings {
		if f.StableID != "" && !current[f.StableID] {
			sum.Fixed = append(sum.Fixed, f.StableID)
		}
	}
	e.audit.Baseline = sum
	return nil
}

// BaselineSummary lists stable ids by baseline status.
type BaselineSummary struct {
	New       []string `json:"new"`
	Unchanged []string `json:"unchanged"`
	Fixed     []string `json:"fixed"`
}
