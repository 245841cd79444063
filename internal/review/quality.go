package review

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/diffpalhq/diffpal/internal/provider/builtin"
	"github.com/diffpalhq/diffpal/internal/rules"
)

// QualityReport is the precision and recall of the full review engine on
// a labelled corpus (internal/rules/testdata/corpus).
type QualityReport struct {
	Cases, Positive, Negative int
	TP, FP, FN                int
	ByLang                    map[string]*LangScore
	Misses                    []string // expected but not found
	Extras                    []string // found but not expected
}

// LangScore is the tally for one language.
type LangScore struct{ TP, FP, FN int }

// Precision is TP / (TP + FP); 1 when nothing was reported.
func (q *QualityReport) Precision() float64 { return ratio(q.TP, q.TP+q.FP) }

// Recall is TP / (TP + FN); 1 when nothing was expected.
func (q *QualityReport) Recall() float64 { return ratio(q.TP, q.TP+q.FN) }

func ratio(a, b int) float64 {
	if b == 0 {
		return 1
	}
	return float64(a) / float64(b)
}

// EvaluateCorpus builds a real git repository for every case (old files on
// main, new files on a feature branch), runs the whole review on it with
// default options, and scores findings against the planted issues: a
// finding is a true positive when its rule id and path match an expected
// issue and its lines cover the expected line; anything else it reports is
// a false positive.
//
// Every opt-in rule is on (the corpus has cases for each), except the
// rules disable names (config syntax: ids or "prefix*"), whose expected
// issues are then not scored either.
func EvaluateCorpus(ctx context.Context, dir string, disable ...string) (*QualityReport, error) {
	cases, err := rules.LoadCorpus(dir)
	if err != nil {
		return nil, err
	}
	rulesOnly, err := builtin.New()
	if err != nil {
		return nil, err
	}
	if err := rulesOnly.Rules.Configure([]string{"*"}, disable); err != nil {
		return nil, err
	}
	off := func(id string) bool {
		for _, d := range disable {
			if p, ok := strings.CutSuffix(d, "*"); ok && strings.HasPrefix(id, p) || id == d {
				return true
			}
		}
		return false
	}
	for i := range cases {
		cases[i].Expect = slices.DeleteFunc(cases[i].Expect, func(e rules.Expectation) bool { return off(e.RuleID) })
	}
	q := &QualityReport{ByLang: map[string]*LangScore{}}
	work, err := os.MkdirTemp("", "diffpal-corpus-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	for i, c := range cases {
		q.Cases++
		if c.Kind == "positive" {
			q.Positive++
		} else {
			q.Negative++
		}
		repo := filepath.Join(work, fmt.Sprintf("case%03d", i))
		if err := buildCaseRepo(repo, c); err != nil {
			return nil, fmt.Errorf("case %s: %w", c.Name, err)
		}
		// A fresh provider per case: the builtin caches hits per change.
		p := rulesOnly.Fresh()
		res, err := Run(ctx, Options{Change: ChangeOptions{Dir: repo}, Provider: p})
		if err != nil {
			return nil, fmt.Errorf("case %s: %w", c.Name, err)
		}
		ls := q.ByLang[c.Lang]
		if ls == nil {
			ls = &LangScore{}
			q.ByLang[c.Lang] = ls
		}
		matched := make([]bool, len(c.Expect))
		for _, f := range res.Bundle.Findings {
			hit := false
			for k, e := range c.Expect {
				// A data-flow finding sits on the sink; the planted line may
				// be where the value was built, its supporting span.
				covers := f.StartLine <= e.Line && e.Line <= f.EndLine
				if sp := f.SupportingSpan; sp != nil && sp.StartLine <= e.Line && e.Line <= sp.EndLine {
					covers = true
				}
				if !matched[k] && e.RuleID == f.RuleID && e.Path == f.Path && covers {
					matched[k], hit = true, true
					break
				}
			}
			if hit {
				q.TP++
				ls.TP++
			} else {
				q.FP++
				ls.FP++
				q.Extras = append(q.Extras, fmt.Sprintf("%s: %s %s:%d", c.Name, f.RuleID, f.Path, f.StartLine))
			}
		}
		for k, e := range c.Expect {
			if !matched[k] {
				q.FN++
				ls.FN++
				q.Misses = append(q.Misses, fmt.Sprintf("%s: %s %s:%d", c.Name, e.RuleID, e.Path, e.Line))
			}
		}
	}
	return q, nil
}

func buildCaseRepo(dir string, c rules.CorpusCase) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	git := func(args ...string) error {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir,
			"GIT_AUTHOR_NAME=corpus", "GIT_AUTHOR_EMAIL=corpus@example.com",
			"GIT_COMMITTER_NAME=corpus", "GIT_COMMITTER_EMAIL=corpus@example.com",
			"GIT_AUTHOR_DATE=2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	write := func(p string, data []byte) error {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		return os.WriteFile(full, data, 0o644)
	}
	if err := git("init", "-q", "-b", "main"); err != nil {
		return err
	}
	if err := write(".corpus-base", []byte("base\n")); err != nil {
		return err
	}
	for _, f := range c.Files {
		if f.Old != nil {
			if err := write(f.Path, f.Old); err != nil {
				return err
			}
		}
	}
	if err := git("add", "-A"); err != nil {
		return err
	}
	if err := git("commit", "-q", "-m", "base"); err != nil {
		return err
	}
	if err := git("checkout", "-q", "-b", "change"); err != nil {
		return err
	}
	for _, f := range c.Files {
		full := filepath.Join(dir, filepath.FromSlash(f.Path))
		if f.New == nil {
			if err := os.Remove(full); err != nil {
				return err
			}
			continue
		}
		if err := write(f.Path, f.New); err != nil {
			return err
		}
	}
	if err := git("add", "-A"); err != nil {
		return err
	}
	return git("commit", "-q", "--allow-empty", "-m", "change")
}

// Languages returns the report's languages, sorted.
func (q *QualityReport) Languages() []string {
	var out []string
	for l := range q.ByLang {
		out = append(out, l)
	}
	sort.Strings(out)
	return out
}
