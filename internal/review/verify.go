package review

import (
	"context"
	"fmt"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/diffpalhq/diffpal/internal/rules"
)

// Verification: the deep-review pass and model-backed synthesis.
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
func (e *engine) verify(ctx context.Context, v Verifier, gs []*group, reasons []string) ([]Verdict, error) {
	out := make([]Verdict, len(gs))
	for i := range out {
		out[i] = Verdict{Index: i, Verdict: "unverified"}
	}
	if len(gs) == 0 {
		return out, nil
	}
	cands := make([]Candidate, len(gs))
	for i, g := range gs {
		cands[i] = g.best.Candidate
		cands[i].EvidenceRefs = g.best.refs
	}
	got, err := v.Verify(ctx, e.ch, cands, reasons)
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

// verifyAtSynthesis lets a model verifier decide every candidate bound to
// the session before the final report records the decisions.
func (e *engine) verifyAtSynthesis(ctx context.Context, groups []*group, bound map[*group]bool) error {
	v := e.o.SynthesisVerifier
	if v == nil {
		return nil
	}
	var gs []*group
	for _, g := range groups {
		if bound[g] && !g.rejected && !g.baseline {
			gs = append(gs, g)
		}
	}
	verdicts, err := e.verify(ctx, v, gs, nil)
	if err != nil {
		return err
	}
	for i, g := range gs {
		if verdicts[i].Verdict == "rejected" {
			g.rejected = true
		}
	}
	return nil
}
