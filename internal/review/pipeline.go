package review

import (
	"context"
	"fmt"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/provider"
	"github.com/diffpalhq/diffpal/internal/qa"
)

// The findings pipeline. After the providers have answered, every
// candidate goes through the stages below, in this order, and what is
// left at the end is the findings bundle. Each stage is a small type in a
// file of its own; a stage that removes something records why (the
// audit's dropped, suppressed and baseline lists), so nothing disappears
// without a record.
//
// Three stages are the session's steps (engine.go): the session sees the
// profile reports once candidates are merged, identified and bound, runs
// the deep review if it asks for one, and receives the final report
// before anything leaves the bundle, so its decisions cover every
// candidate.
func stages() []stage {
	return []stage{
		wellFormed{},      // validate.go: drop candidates without path, category, title or a valid severity
		inScope{},         // scope.go:    drop candidates on files outside the review scope
		anchor{},          // anchor.go:   place each on the changed lines the filter mode allows, or drop it
		suppress{},        // suppress.go: config ignores and diffpal:ignore comments (policy findings skip this)
		cite{},            // cite.go:     the evidence refs each candidate cites
		merge{},           // synth.go:    one group per problem across rules and profiles, ranked
		identify{},        // identify.go: stable ids; mark the groups the baseline already holds
		bind{},            // synth.go:    the first 100 groups are the session's final findings
		profileReports{},  // engine.go:   session: every profile's report, then the risk signals
		deepReview{},      // engine.go:   session: the deep review, when the session asks for it
		verifySynthesis{}, // verify.go:   a model verifier decides every bound candidate
		finalReport{},     // engine.go:   session: a decision for every candidate; finish
		refuted{},         // verify.go:   drop the groups verification refuted
		baseline{},        // baseline.go: leave out what the baseline holds (new / unchanged / fixed)
		bundle{},          // bundle.go:   the bundle, mapped from the final report (qa.BuildExport),
		//                                 normalized: ids, stable ids, blocking flags, sorted
	}
}

// A stage is one step of the findings pipeline. It works on the engine's
// items (candidates, then groups, then the bundle) in place.
type stage interface {
	Name() string
	Process(ctx context.Context, e *engine) error
}

func (e *engine) runPipeline(ctx context.Context) error {
	for _, s := range stages() {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := s.Process(ctx, e); err != nil {
			return err
		}
		e.clock.mark("pipeline: " + s.Name())
	}
	return nil
}

// keepCands keeps the candidates keep accepts, in order.
func (e *engine) keepCands(keep func(*candidate) bool) {
	out := e.cands[:0]
	for _, c := range e.cands {
		if keep(c) {
			out = append(out, c)
		}
	}
	clear(e.cands[len(out):])
	e.cands = out
}

// keepGroups keeps the groups keep accepts, in order.
func (e *engine) keepGroups(keep func(*group) bool) {
	out := e.groups[:0]
	for _, g := range e.groups {
		if keep(g) {
			out = append(out, g)
		}
	}
	clear(e.groups[len(out):])
	e.groups = out
}

// candidate is a provider's candidate on its way through the pipeline.
type candidate struct {
	provider.Candidate
	profile qa.Profile // the session profile it is reported under
	// policy marks a policy.self-edit finding: the edit under report must
	// not be able to silence itself, so suppression skips it.
	policy bool
	line0  int          // the line the provider gave, for drop samples
	file   *ChangedFile // set by inScope
	side   string       // "LEFT" for removed-line findings, set by anchor
	refs   []string     // set by cite
	id     string       // F-NN in its profile report, when bound
	group  *group
}

func newCandidate(c provider.Candidate, p qa.Profile, policy bool) *candidate {
	return &candidate{Candidate: c, profile: p, policy: policy, line0: max(c.StartLine, c.OldLine)}
}

// where is the candidate as the provider placed it, for drop samples.
func (c *candidate) where() string { return fmt.Sprintf("%s:%d %s", c.Path, c.line0, c.RuleID) }

// group is one problem: the candidates about it and what was decided.
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
