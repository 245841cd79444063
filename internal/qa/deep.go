package qa

// Assess computes the deep-review assessment from risk signals exactly as
// the anchor does: three rules in fixed order, reasons accumulated without
// duplicates in first-seen order.
func Assess(r RiskSignals) DeepAssessment {
	type signal struct {
		on     bool
		reason ReasonCode
	}
	complexity := []signal{
		{r.CrossSystemScope, ReasonCrossRepository},
		{r.MultiplePlausibleCauses, ReasonRootCause},
		{r.NonReproducible, ReasonNonReproducible},
		{r.HighBlastRadius, ReasonHighBlastRadius},
	}
	a := DeepAssessment{TriggeredRules: []DeepRule{}, ReasonCodes: []ReasonCode{}}
	add := func(rc ReasonCode) {
		for _, x := range a.ReasonCodes {
			if x == rc {
				return
			}
		}
		a.ReasonCodes = append(a.ReasonCodes, rc)
	}
	for _, s := range complexity {
		if s.on {
			a.ComplexitySignalCount++
		}
	}
	if r.HighRiskDomain && r.EvidenceUncertain {
		a.TriggeredRules = append(a.TriggeredRules, RuleHighRiskWithUncertainty)
		add(ReasonHighRiskDomain)
		add(ReasonEvidenceGap)
	}
	if a.ComplexitySignalCount >= 2 {
		a.TriggeredRules = append(a.TriggeredRules, RuleMultipleComplexity)
		for _, s := range complexity {
			if s.on {
				add(s.reason)
			}
		}
	}
	if r.EvidenceConflict && (r.HighRiskDomain || r.CrossSystemScope || r.HighBlastRadius) {
		a.TriggeredRules = append(a.TriggeredRules, RuleCriticalEvidenceConflict)
		add(ReasonEvidenceConflict)
		if r.HighBlastRadius {
			add(ReasonHighBlastRadius)
		}
	}
	a.ShouldEscalate = len(a.TriggeredRules) > 0
	return a
}
