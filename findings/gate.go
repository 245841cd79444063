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
// only for input that is not a JSON object.
func Gate(data []byte, policy *Policy) (GateResult, ReadInfo, Problems, error) {
	var sev, blockSev [5]int
	res := GateResult{Recomputed: policy != nil}
	_, info, problems, err := Decode(data, DecodeOptions{OnFinding: func(f *Finding, valid bool) {
		res.Findings++
		r := f.Severity.Rank()
		sev[r]++
		var blocks bool
		if policy != nil {
			blocks = policy.Blocks(f)
		} else {
			blocks = f.Blocking
		}
		if blocks {
			res.Blocking++
			blockSev[r]++
		}
	}})
	res.BySeverity = map[Severity]int{}
	res.BlockingBySeverity = map[Severity]int{}
	for _, s := range Severities {
		res.BySeverity[s] = sev[s.Rank()]
		res.BlockingBySeverity[s] = blockSev[s.Rank()]
	}
	return res, info, problems, err
}
