package findings

// GateResult summarizes a gate decision over one bundle.
type GateResult struct {
	// Findings is the number of findings.
	Findings int `json:"findings"`
	// Blocking is the number of blocking findings.
	Blocking int `json:"blocking"`
	// BySeverity counts all findings per severity.
	BySeverity map[Severity]int `json:"by_severity"`
	// BlockingBySeverity counts blocking findings per severity.
	BlockingBySeverity map[Severity]int `json:"blocking_by_severity"`
	// Recomputed is true when blocking came from a policy rather than the
	// stored flags.
	Recomputed bool `json:"recomputed"`
}

// Blocked reports whether anything blocks.
func (r GateResult) Blocked() bool { return r.Blocking > 0 }

// Gate decodes, validates and gates a bundle in one streaming pass without
// keeping its findings. With a nil policy it trusts each finding's stored
// blocking flag, which is exactly the seed's
// `jq -e '[.findings[] | select(.blocking == true)] | length == 0'`; with a
// policy it recomputes blocking from severity (and confidence).
// Problems are returned when the bundle is invalid; the error is non-nil
// only for input that is not a JSON object. A severity that is not
// lower-case ("HIGH") is no problem: it is counted, and recomputed, as its
// lower-case value and listed in info.Warnings, as Read does.
func Gate(data []byte, policy *Policy) (GateResult, ReadInfo, Problems, error) {
	var t tally
	_, info, problems, err := Decode(data, DecodeOptions{OnFinding: func(f *Finding, valid bool) {
		if policy != nil {
			t.add(f, policy.Blocks(f))
		} else {
			t.add(f, f.Blocking)
		}
	}})
	res := t.result()
	res.Recomputed = policy != nil
	return res, info, problems, err
}

// Tally counts a decoded bundle's findings as Gate does with a nil policy,
// trusting each finding's stored blocking flag.
func (b *Bundle) Tally() GateResult {
	var t tally
	for i := range b.Findings {
		t.add(&b.Findings[i], b.Findings[i].Blocking)
	}
	return t.result()
}

// tally accumulates the counts of a GateResult one finding at a time, so a
// streamed bundle (Gate) and a decoded one (Tally) are counted alike.
type tally struct {
	findings, blocking int
	sev, blockSev      [5]int
}

func (t *tally) add(f *Finding, blocks bool) {
	t.findings++
	r := f.Severity.Rank()
	t.sev[r]++
	if blocks {
		t.blocking++
		t.blockSev[r]++
	}
}

func (t *tally) result() GateResult {
	res := GateResult{Findings: t.findings, Blocking: t.blocking, BySeverity: map[Severity]int{}, BlockingBySeverity: map[Severity]int{}}
	for _, s := range Severities {
		res.BySeverity[s] = t.sev[s.Rank()]
		res.BlockingBySeverity[s] = t.blockSev[s.Rank()]
	}
	return res
}
