package rules

import (
	"fmt"
	"sort"
	"strings"
	"testing"
)

type corpusScore struct {
	tp, fp, fn int
	fpList     []string
	fnList     []string
	perLang    map[string][2]int // lang -> positives, negatives
}

func (s corpusScore) precision() float64 {
	if s.tp+s.fp == 0 {
		return 1
	}
	return float64(s.tp) / float64(s.tp+s.fp)
}

func (s corpusScore) recall() float64 {
	if s.tp+s.fn == 0 {
		return 1
	}
	return float64(s.tp) / float64(s.tp+s.fn)
}

// scoreCorpus evaluates the rules on the labelled corpus. A hit is a true
// positive when its rule id and path match an expectation and its line range
// covers the expected line; every other hit is a false positive.
func scoreCorpus(s *Set, cases []CorpusCase) corpusScore {
	sc := corpusScore{perLang: map[string][2]int{}}
	for _, c := range cases {
		pl := sc.perLang[c.Lang]
		if c.Kind == "positive" {
			pl[0]++
		} else {
			pl[1]++
		}
		sc.perLang[c.Lang] = pl
		files := c.Changes()
		var hits []Hit
		for _, f := range files {
			hits = append(hits, s.MatchFile(f, nil)...)
		}
		hits = append(hits, s.MatchChange(files, nil)...)
		matched := make([]bool, len(c.Expect))
		for _, h := range hits {
			ok := false
			for i, e := range c.Expect {
				if !matched[i] && e.RuleID == h.RuleID && e.Path == h.Path && h.StartLine <= e.Line && e.Line <= h.EndLine {
					matched[i] = true
					ok = true
					break
				}
			}
			if ok {
				sc.tp++
			} else {
				sc.fp++
				sc.fpList = append(sc.fpList, fmt.Sprintf("%s (%s): %v", c.Name, c.Kind, h))
			}
		}
		for i, e := range c.Expect {
			if !matched[i] {
				sc.fn++
				sc.fnList = append(sc.fnList, fmt.Sprintf("%s: missed %s %s:%d", c.Name, e.RuleID, e.Path, e.Line))
			}
		}
	}
	return sc
}

func TestCorpusPrecisionRecall(t *testing.T) {
	cases, err := LoadCorpus("testdata/corpus")
	if err != nil {
		t.Fatal(err)
	}
	pos, neg := 0, 0
	for _, c := range cases {
		if c.Kind == "positive" {
			pos++
		} else {
			neg++
		}
	}
	if pos < 60 || neg < 40 {
		t.Fatalf("corpus has %d positive and %d negative cases, want >= 60 and >= 40", pos, neg)
	}
	sc := scoreCorpus(mustBuiltin(t), cases)
	var langs []string
	for l := range sc.perLang {
		langs = append(langs, l)
	}
	sort.Strings(langs)
	var per []string
	for _, l := range langs {
		per = append(per, fmt.Sprintf("%s %d/%d", l, sc.perLang[l][0], sc.perLang[l][1]))
	}
	t.Logf("corpus: %d cases (%d positive, %d negative); per lang (pos/neg): %s", len(cases), pos, neg, strings.Join(per, ", "))
	t.Logf("corpus: tp=%d fp=%d fn=%d precision=%.3f recall=%.3f", sc.tp, sc.fp, sc.fn, sc.precision(), sc.recall())
	for _, s := range sc.fpList {
		t.Logf("false positive: %s", s)
	}
	for _, s := range sc.fnList {
		t.Logf("false negative: %s", s)
	}
	if sc.precision() < 0.90 || sc.recall() < 0.80 {
		t.Errorf("precision %.3f (want >= 0.90), recall %.3f (want >= 0.80)", sc.precision(), sc.recall())
	}
}
