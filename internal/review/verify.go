package review

import (
	"context"
	"fmt"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/provider"
	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/diffpalhq/diffpal/internal/rules"
)

// Verification: the deep-review pass (driven by the deepReview stage,
// engine.go) and model-backed synthesis (the verifySynthesis stage).
// deepPass runs the deep review. With a verifier (a model), the severe
// candidates are checked against wider evidence: refuted ones are
// rejected, confirmed ones gain confidence. Without one, the builtin
// heuristics re-weigh the severe groups with the whole file in view:
// security matches inside test code and fixtures are less likely to
// matter, matches that several independent rules agree on more likely.

func (e *engine) deepPass(ctx context.Context, groups []*group, a *qa.DeepAssessment) (*DeepPass, error) {
	d := &DeepPass{By: "builtin heuristics"}
	if a != nil {
		for _, r := range a.ReasonCodes {
			d.Reasons = append(d.Reasons, string(r))
		}
	}
	var severe []*group
	for _, g := range groups {
		if g.severity().Rank() >= findings.High.Rank() {
			severe = append(severe, g)
		}
	}
	d.Examined = len(severe)
	if v := e.o.DeepVerifier; v != nil {
		d.By = v.Name()
		verdicts, err := e.verify(ctx, v, severe, d.Reasons)
		if err != nil {
			return nil, err
		}
		for i, g := range severe {
			switch verdicts[i].Verdict {
			case "rejected":
				g.rejected = true
				d.Rejected++
				d.Rationale = append(d.Rationale, fmt.Sprintf("%s:%d %s refuted: %s", g.best.Path, g.best.StartLine, g.best.RuleID, fieldText(verdicts[i].Rationale, 300)))
			case "confirmed":
				if g.confidence < 1 {
					g.confidence = min(1, g.confidence+0.1)
					d.Raised++
				}
			}
		}
		return d, nil
	}
	for _, g := range severe {
		if g.best.Category == "security" && rules.IsTestPath(g.best.Path) {
			g.confidence = max(0.3, g.confidence-0.2)
			d.Lowered++
			d.Rationale = append(d.Rationale, fmt.Sprintf("%s:%d %s is in test code: confidence lowered", g.best.Path, g.best.StartLine, g.best.RuleID))
			continue
		}
		rulesAgree := map[string]bool{}
		for _, m := range g.members {
			rulesAgree[m.RuleID] = true
		}
		if len(rulesAgree) >= 2 && g.confidence < 1 {
			g.confidence = min(1, g.confidence+0.1)
			d.Raised++
			d.Rationale = append(d.Rationale, fmt.Sprintf("%s:%d: %d rules agree: confidence raised", g.best.Path, g.best.StartLine, len(rulesAgree)))
		}
	}
	return d, nil
}

// verify asks v about the groups' leading candidates and records each
// verdict on its group; a verifier that skips a candidate leaves it
// unverified.
func (e *engine) verify(ctx context.Context, v provider.Verifier, gs []*group, reasons []string) ([]provider.Verdict, error) {
	out := make([]provider.Verdict, len(gs))
	for i := range out {
		out[i] = provider.Verdict{Index: i, Verdict: "unverified"}
	}
	if len(gs) == 0 {
		return out, nil
	}
	cands := make([]provider.Candidate, len(gs))
	for i, g := range gs {
		cands[i] = g.best.Candidate
		cands[i].EvidenceRefs = g.best.refs
	}
	got, err := v.Verify(ctx, e.pc, cands, reasons)
	if err != nil {
		return nil, err
	}
	for _, vd := range got {
		if vd.Index < 0 || vd.Index >= len(gs) {
			continue
		}
		var refs []string
		for _, r := range vd.EvidenceRefs {
			if _, ok := e.ch.Packet.Item(r); ok {
				refs = append(refs, r)
			}
		}
		vd.EvidenceRefs = refs
		out[vd.Index] = vd
		g := gs[vd.Index]
		g.verdict, g.rationale, g.vrefs = vd.Verdict, vd.Rationale, refs
	}
	return out, nil
}

// verifySynthesis lets a model verifier decide every candidate bound to
// the session before the final report records the decisions; rejected
// ones are refuted there and left out of the bundle.
type verifySynthesis struct{}

func (verifySynthesis) Name() string { return "verify" }

func (verifySynthesis) Process(ctx context.Context, e *engine) error {
	e.progress("synthesis")
	v := e.o.SynthesisVerifier
	if v == nil {
		return nil
	}
	var gs []*group
	for _, g := range e.groups {
		if e.bound[g] && !g.rejected && !g.baseline {
			gs = append(gs, g)
		}
	}
	verdicts, err := e.verify(ctx, v, gs, nil)
	if err != nil {
		return fmt.Errorf("synthesis: %w", err)
	}
	for i, g := range gs {
		if verdicts[i].Verdict == "rejected" {
			g.rejected = true
		}
	}
	return nil
}

// refuted drops the groups a verifier refuted (the deep review or
// synthesis); the final report already records why.
type refuted struct{}

func (refuted) Name() string { return "refuted" }

func (refuted) Process(_ context.Context, e *engine) error {
	e.keepGroups(func(g *group) bool {
		if g.rejected {
			c := g.best
			e.drop("refuted by verification", fmt.Sprintf("%s:%d %s", c.Path, c.StartLine, c.RuleID))
			return false
		}
		return true
	})
	return nil
}
