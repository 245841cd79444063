package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

type finding struct {
	suite, rule, path string
	start, end        int
	supStart, supEnd  int // supporting span (0: none)
	subjects          []string
}

type counts struct{ exp, tp, fn, fp, neg, extra int }

func (c *counts) add(o counts) {
	c.exp += o.exp
	c.tp += o.tp
	c.fn += o.fn
	c.fp += o.fp
	c.neg += o.neg
	c.extra += o.extra
}

func ratio(a, b int) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", float64(a)/float64(b))
}

func (c counts) recall() string    { return ratio(c.tp, c.exp) }
func (c counts) precision() string { return ratio(c.tp, c.tp+c.fp) }

// meets: recall >= 0.6 at precision >= 0.9 (issue 11).
func (c counts) meets() string {
	if c.exp == 0 {
		return "-"
	}
	r := float64(c.tp) / float64(c.exp)
	pr := 1.0
	if c.tp+c.fp > 0 {
		pr = float64(c.tp) / float64(c.tp+c.fp)
	}
	if c.tp+c.fp == 0 {
		pr = 0
	}
	if r >= 0.6 && pr >= 0.9 {
		return "yes"
	}
	return "no"
}

func scoreMain(args []string) error {
	fl := flag.NewFlagSet("score", flag.ExitOnError)
	itemsFile := fl.String("items", "", "expectations (all suites)")
	findingsFile := fl.String("findings", "", "findings TSV: suite, rule_id, path, start_line, end_line")
	oursFile := fl.String("ours", "", "bench/recall/ours.tsv")
	rulesFile := fl.String("rules", "", "our rule ids, one a line")
	scratch := fl.String("scratch", "", "scratch root (<scratch>/<suite>/<path>)")
	outDir := fl.String("out", "", "directory for misses.tsv and fps.tsv")
	verbose := fl.Bool("v", false, "print the misses and false positives")
	_ = fl.Parse(args)
	ours, err := readMapping(*oursFile, false)
	if err != nil {
		return err
	}
	claimed := claimedSubjects(ours)
	nRules := map[string]int{}
	if ids, err := readLines(*rulesFile); err == nil {
		for _, id := range ids {
			for _, s := range subjectsOf(ours, id) {
				nRules[s]++
			}
		}
	}
	var items []Item
	rows, err := readTSV(*itemsFile)
	if err != nil {
		return err
	}
	for _, c := range rows {
		if len(c) < 9 {
			continue
		}
		st, _ := strconv.Atoi(c[4])
		en, _ := strconv.Atoi(c[5])
		items = append(items, Item{Suite: c[0], Kind: c[1], Subject: c[2], Path: c[3], Start: st, End: en, Rule: c[6], Lang: c[7], Text: c[8]})
	}
	bySuite := map[string][]*finding{}
	fr, err := readTSV(*findingsFile)
	if err != nil {
		return err
	}
	for _, c := range fr {
		if len(c) < 5 {
			continue
		}
		st, _ := strconv.Atoi(c[3])
		en, _ := strconv.Atoi(c[4])
		if en < st {
			en = st
		}
		f := &finding{suite: c[0], rule: c[1], path: c[2], start: st, end: en, subjects: subjectsOf(ours, c[1])}
		// A data-flow finding sits on the sink; its supporting span is
		// where the value was built, the line a suite may annotate.
		if len(c) >= 7 {
			f.supStart, _ = strconv.Atoi(c[5])
			f.supEnd, _ = strconv.Atoi(c[6])
		}
		if len(f.subjects) > 0 {
			bySuite[f.suite] = append(bySuite[f.suite], f)
		}
	}
	has := func(f *finding, s string) bool {
		for _, x := range f.subjects {
			if x == s {
				return true
			}
		}
		return false
	}
	covers := func(it *Item, f *finding) bool {
		if strings.HasSuffix(it.Path, "/") {
			return strings.HasPrefix(f.path, it.Path)
		}
		if f.path != it.Path {
			return false
		}
		if it.Start == 0 || (f.start <= it.End && f.end >= it.Start) {
			return true
		}
		// On an expected positive, the finding's supporting span (where a
		// data-flow value was built) counts as well; an expected negative
		// is only contradicted by the lines the finding is reported on.
		return it.Kind == "pos" && f.supStart > 0 && f.supStart <= it.End && f.supEnd >= it.Start
	}
	type sk struct{ suite, subject string }
	table := map[sk]*counts{}
	langs := map[[2]string]*counts{}
	get := func(m map[sk]*counts, k sk) *counts {
		if m[k] == nil {
			m[k] = &counts{}
		}
		return m[k]
	}
	lines := newLineReader(*scratch)
	var misses, fps []string
	used := map[*finding]map[string]bool{} // finding -> subjects it was matched to an item for
	// Per rule: a finding on an expected positive is a true one, a finding
	// only on expected negatives a false one (others are not scored); the
	// table feeds the precision that gates severity (bench/rulesdoc).
	onPos, onNeg := map[*finding]bool{}, map[*finding]bool{}
	inFile := map[string]bool{} // suite|path|subject with any item (or suite|dir)
	for i := range items {
		it := &items[i]
		if !claimed[it.Subject] {
			continue
		}
		c := get(table, sk{it.Suite, it.Subject})
		lk := [2]string{it.Suite, it.Lang}
		if langs[lk] == nil {
			langs[lk] = &counts{}
		}
		inFile[it.Suite+"|"+it.Path+"|"+it.Subject] = true
		var hits []*finding
		for _, f := range bySuite[it.Suite] {
			if has(f, it.Subject) && covers(it, f) {
				hits = append(hits, f)
				if it.Kind == "pos" {
					onPos[f] = true
				} else {
					onNeg[f] = true
				}
				if used[f] == nil {
					used[f] = map[string]bool{}
				}
				used[f][it.Subject] = true
			}
		}
		line := strconv.Itoa(it.Start)
		if it.Kind == "pos" {
			c.exp++
			langs[lk].exp++
			if len(hits) > 0 {
				c.tp++
				langs[lk].tp++
			} else {
				c.fn++
				misses = append(misses, strings.Join([]string{it.Suite, it.Subject, it.Lang, it.Path, line, it.Rule, it.Text}, "\t"))
			}
			continue
		}
		c.neg++
		if len(hits) == 0 {
			continue
		}
		c.fp++
		langs[lk].fp++
		for _, f := range hits {
			text := it.Text
			if it.Start == 0 || text == "" {
				text = clean(lines.get(it.Suite, f.path, f.start))
			}
			fps = append(fps, strings.Join([]string{it.Suite, it.Subject, f.rule, f.path, strconv.Itoa(f.start), it.Rule, text}, "\t"))
		}
	}
	// findings of a scored subject elsewhere in a file with expectations of it
	seenExtra := map[string]bool{}
	var extras []string
	for suite, fs := range bySuite {
		for _, f := range fs {
			for _, s := range f.subjects {
				if used[f][s] || !inFile[suite+"|"+f.path+"|"+s] {
					continue
				}
				k := fmt.Sprintf("%s|%s|%d|%s", suite, f.path, f.start, s)
				if seenExtra[k] {
					continue
				}
				seenExtra[k] = true
				get(table, sk{suite, s}).extra++
				extras = append(extras, strings.Join([]string{suite, s, f.rule, f.path, strconv.Itoa(f.start), "-", clean(lines.get(suite, f.path, f.start))}, "\t"))
			}
		}
	}
	sort.Strings(misses)
	sort.Strings(fps)
	sort.Strings(extras)
	if *outDir != "" {
		if err := writeTSV(filepath.Join(*outDir, "misses.tsv"), "suite\tsubject\tlang\tpath\tline\tsuite_rule\ttext", misses); err != nil {
			return err
		}
		if err := writeTSV(filepath.Join(*outDir, "fps.tsv"), "suite\tsubject\tour_rule\tpath\tline\tsuite_rule\ttext", fps); err != nil {
			return err
		}
		type rk struct{ suite, rule string }
		per := map[rk]*[2]int{}
		for suite, fs := range bySuite {
			for _, f := range fs {
				if !onPos[f] && !onNeg[f] {
					continue
				}
				k := rk{suite, f.rule}
				if per[k] == nil {
					per[k] = &[2]int{}
				}
				if onPos[f] {
					per[k][0]++
				} else {
					per[k][1]++
				}
			}
		}
		var perRows []string
		for k, c := range per {
			perRows = append(perRows, fmt.Sprintf("%s\t%s\t%d\t%d", k.suite, k.rule, c[0], c[1]))
		}
		sort.Strings(perRows)
		if err := writeTSV(filepath.Join(*outDir, "per-rule.tsv"), "suite\trule_id\ttp\tfp", perRows); err != nil {
			return err
		}
		if err := writeTSV(filepath.Join(*outDir, "extra.tsv"), "suite\tsubject\tour_rule\tpath\tline\tsuite_rule\ttext", extras); err != nil {
			return err
		}
	}

	// ---- print ----
	var keys []sk
	suites := map[string]bool{}
	for k := range table {
		keys = append(keys, k)
		suites[k.suite] = true
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].suite != keys[j].suite {
			return keys[i].suite < keys[j].suite
		}
		return keys[i].subject < keys[j].subject
	})
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	hdr := "%-14s %-22s %5s %8s %6s %6s %6s %6s %6s %7s %9s\n"
	row := "%-14s %-22s %5s %8d %6d %6d %6d %6d %6d %7s %9s\n"
	fmt.Fprintf(w, hdr, "suite", "subject", "rules", "expected", "TP", "FN", "neg", "FP", "extra", "recall", "precision")
	var all counts
	perSubject := map[string]*counts{}
	cur := ""
	var suiteTot counts
	flush := func() {
		if cur != "" {
			fmt.Fprintf(w, row, cur, "OVERALL", "", suiteTot.exp, suiteTot.tp, suiteTot.fn, suiteTot.neg, suiteTot.fp, suiteTot.extra, suiteTot.recall(), suiteTot.precision())
			fmt.Fprintln(w)
		}
	}
	for _, k := range keys {
		if k.suite != cur {
			flush()
			cur, suiteTot = k.suite, counts{}
		}
		c := table[k]
		if c.exp > 0 || c.fp > 0 || c.extra > 0 {
			fmt.Fprintf(w, row, k.suite, k.subject, strconv.Itoa(nRules[k.subject]), c.exp, c.tp, c.fn, c.neg, c.fp, c.extra, c.recall(), c.precision())
		}
		suiteTot.add(*c)
		all.add(*c)
		if perSubject[k.subject] == nil {
			perSubject[k.subject] = &counts{}
		}
		perSubject[k.subject].add(*c)
	}
	flush()
	fmt.Fprintf(w, row, "ALL", "OVERALL", "", all.exp, all.tp, all.fn, all.neg, all.fp, all.extra, all.recall(), all.precision())

	// per language (expected positives)
	fmt.Fprintf(w, "\nper language (expected positives): suite lang expected TP recall FP\n")
	var lks [][2]string
	for k := range langs {
		if langs[k].exp > 0 || langs[k].fp > 0 {
			lks = append(lks, k)
		}
	}
	sort.Slice(lks, func(i, j int) bool {
		if lks[i][0] != lks[j][0] {
			return lks[i][0] < lks[j][0]
		}
		return langs[lks[i]].exp > langs[lks[j]].exp
	})
	for _, k := range lks {
		c := langs[k]
		fmt.Fprintf(w, "  %-14s %-12s %6d %6d %6s %5d\n", k[0], k[1], c.exp, c.tp, c.recall(), c.fp)
	}

	// per subject over all suites, against the target
	fmt.Fprintf(w, "\nper subject, all suites (target: recall >= 0.6 at precision >= 0.9 for claimed subjects)\n")
	fmt.Fprintf(w, "  %-22s %5s %8s %6s %6s %7s %9s %5s\n", "subject", "rules", "expected", "TP", "FP", "recall", "precision", "meets")
	var subs []string
	for s := range claimed {
		subs = append(subs, s)
	}
	sort.Strings(subs)
	met, notMet, none := []string{}, []string{}, []string{}
	for _, s := range subs {
		c := perSubject[s]
		if c == nil || c.exp == 0 {
			none = append(none, s)
			continue
		}
		fmt.Fprintf(w, "  %-22s %5d %8d %6d %6d %7s %9s %5s\n", s, nRules[s], c.exp, c.tp, c.fp, c.recall(), c.precision(), c.meets())
		if c.meets() == "yes" {
			met = append(met, s)
		} else {
			notMet = append(notMet, s)
		}
	}
	// mean over the subjects with expectations (each subject weighs the same;
	// pooled counts are dominated by the suite with the most examples)
	var sumR, sumP float64
	nR, nP := 0, 0
	for _, s := range subs {
		c := perSubject[s]
		if c == nil || c.exp == 0 {
			continue
		}
		sumR += float64(c.tp) / float64(c.exp)
		nR++
		if c.tp+c.fp > 0 {
			sumP += float64(c.tp) / float64(c.tp+c.fp)
			nP++
		}
	}
	mean := func(s float64, n int) string {
		if n == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", s/float64(n))
	}
	verdict := "NOT MET"
	if len(notMet) == 0 && len(met) > 0 {
		verdict = "MET"
	}
	fmt.Fprintf(w, "\nTARGET recall >= 0.6 at precision >= 0.9 for claimed subjects: %s (%d/%d subjects meet it: %s)\n",
		verdict, len(met), len(met)+len(notMet), strings.Join(met, ", "))
	fmt.Fprintf(w, "  pooled over all expectations: recall %s, precision %s; mean over %d subjects: recall %s, precision %s (over %d subjects with a TP or FP)\n",
		all.recall(), all.precision(), nR, mean(sumR, nR), mean(sumP, nP), nP)
	fmt.Fprintf(w, "  not met: %s", strings.Join(notMet, ", "))
	if len(none) > 0 {
		fmt.Fprintf(w, "; claimed subjects without expectations in these suites: %s", strings.Join(none, ", "))
	}
	fmt.Fprintln(w)
	if *outDir != "" {
		fmt.Fprintf(w, "misses: %s (%d), false positives: %s (%d), unscored findings of a scored subject: %s (%d)\n",
			filepath.Join(*outDir, "misses.tsv"), len(misses), filepath.Join(*outDir, "fps.tsv"), len(fps), filepath.Join(*outDir, "extra.tsv"), len(extras))
	}
	if *verbose {
		fmt.Fprintln(w, "\n# misses (FN): suite subject lang path line suite_rule text")
		for _, m := range misses {
			fmt.Fprintln(w, m)
		}
		fmt.Fprintln(w, "\n# false positives: suite subject our_rule path line suite_rule text")
		for _, m := range fps {
			fmt.Fprintln(w, m)
		}
	}
	return nil
}

func readLines(file string) ([]string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out, nil
}

func readTSV(file string) ([][]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out [][]string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		if l := sc.Text(); l != "" {
			out = append(out, strings.Split(l, "\t"))
		}
	}
	return out, sc.Err()
}

func writeTSV(file, header string, rows []string) error {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	return os.WriteFile(file, []byte(header+"\n"+strings.Join(rows, "\n")+"\n"), 0o644)
}

type lineReader struct {
	root  string
	cache map[string][]string
}

func newLineReader(root string) *lineReader {
	return &lineReader{root: root, cache: map[string][]string{}}
}

func (l *lineReader) get(suite, p string, n int) string {
	k := suite + "/" + p
	ls, ok := l.cache[k]
	if !ok {
		data, _ := os.ReadFile(filepath.Join(l.root, suite, filepath.FromSlash(p)))
		ls = strings.Split(string(data), "\n")
		l.cache[k] = ls
	}
	if n >= 1 && n <= len(ls) {
		return ls[n-1]
	}
	return ""
}
