package rules

import (
	"bufio"
	"bytes"
	_ "embed"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Measure is a rule's measured precision on one corpus: how many findings
// it produced there and how they were judged. Real-code corpora judge by
// reading each finding (bench/realcode/verdicts.tsv); the public suites
// judge by their annotations (bench/recall.sh).
type Measure struct {
	RuleID    string
	Corpus    string // "real" or a suite name
	Findings  int
	True      int
	False     int
	Debatable int
}

// Judged is the number of findings with a verdict.
func (m Measure) Judged() int { return m.True + m.False + m.Debatable }

// Precision is strict precision: true / judged (debatable counts against).
func (m Measure) Precision() float64 {
	if m.Judged() == 0 {
		return 0
	}
	return float64(m.True) / float64(m.Judged())
}

// MinBlockingPrecision is the measured precision a rule needs to emit high
// or critical findings, which block a gate.
const MinBlockingPrecision = 0.9

//go:embed precision.tsv
var precisionTSV []byte

var (
	precOnce sync.Once
	precMap  map[string][]Measure
	precErr  error
)

// Precision is the committed measurement table (precision.tsv, written by
// `go run ./bench/rulesdoc` from the last real-code and suite runs),
// parsed once; callers must not modify it.
func Precision() (map[string][]Measure, error) {
	precOnce.Do(func() { precMap, precErr = ParsePrecision(precisionTSV) })
	return precMap, precErr
}

// ParsePrecision reads a precision table: rule_id, corpus, findings, true,
// false, debatable, tab-separated, with a header line.
func ParsePrecision(data []byte) (map[string][]Measure, error) {
	out := map[string][]Measure{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if n == 1 || strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 6 {
			return nil, fmt.Errorf("precision.tsv:%d: want 6 tab-separated fields, got %d", n, len(f))
		}
		m := Measure{RuleID: f[0], Corpus: f[1]}
		for i, p := range []*int{&m.Findings, &m.True, &m.False, &m.Debatable} {
			v, err := strconv.Atoi(f[2+i])
			if err != nil || v < 0 {
				return nil, fmt.Errorf("precision.tsv:%d: field %d: %q is not a count", n, 3+i, f[2+i])
			}
			*p = v
		}
		out[m.RuleID] = append(out[m.RuleID], m)
	}
	return out, sc.Err()
}

// FormatPrecision writes a table ParsePrecision reads, sorted.
func FormatPrecision(ms []Measure) []byte {
	sort.Slice(ms, func(i, j int) bool {
		if ms[i].RuleID != ms[j].RuleID {
			return ms[i].RuleID < ms[j].RuleID
		}
		return ms[i].Corpus < ms[j].Corpus
	})
	var b bytes.Buffer
	b.WriteString("rule_id\tcorpus\tfindings\ttrue\tfalse\tdebatable\n")
	for _, m := range ms {
		fmt.Fprintf(&b, "%s\t%s\t%d\t%d\t%d\t%d\n", m.RuleID, m.Corpus, m.Findings, m.True, m.False, m.Debatable)
	}
	return b.Bytes()
}

// GatingMeasure is the measurement that decides a rule's severity: real
// code when the rule produced judged findings there (what users see),
// else the public suites together, else none.
func GatingMeasure(ms []Measure) (Measure, bool) {
	var suites Measure
	for _, m := range ms {
		if m.Corpus == "real" && m.Judged() > 0 {
			return m, true
		}
		if m.Corpus != "real" {
			suites.RuleID = m.RuleID
			if suites.Corpus == "" {
				suites.Corpus = m.Corpus
			} else if !strings.Contains(suites.Corpus, m.Corpus) {
				suites.Corpus += "+" + m.Corpus
			}
			suites.Findings += m.Findings
			suites.True += m.True
			suites.False += m.False
			suites.Debatable += m.Debatable
		}
	}
	return suites, suites.Judged() > 0
}

// MayBlock reports whether the measurements allow high or critical.
func MayBlock(ms []Measure) bool {
	m, ok := GatingMeasure(ms)
	return ok && m.Precision() >= MinBlockingPrecision
}

// gateSeverity caps the built-in rules that the measurements do not allow
// to block at medium: precision decides severity. The pack's severity is
// kept in Declared, so the rule regains it once measured precise enough.
// User packs keep their severities: their authors own that decision.
func gateSeverity(rs []*Rule) error {
	return gateSeverityWith(rs, Precision)
}

func gateSeverityWith(rs []*Rule, table func() (map[string][]Measure, error)) error {
	prec, err := table()
	if err != nil {
		return err
	}
	for _, r := range rs {
		if r.Severity != "high" && r.Severity != "critical" {
			continue
		}
		if !MayBlock(prec[r.ID]) {
			r.Declared, r.Severity = r.Severity, "medium"
		}
	}
	return nil
}

// GateSeverity is the severity a built-in finding of rule id may have,
// given the severity its detector chose: high and critical need the
// measured precision (used for the secret detector's rules, which are
// not pack rules).
func GateSeverity(id, sev string) string {
	if sev != "high" && sev != "critical" {
		return sev
	}
	prec, err := Precision()
	if err != nil || !MayBlock(prec[id]) {
		return "medium"
	}
	return sev
}
