// Command rulesdoc writes docs/rules.md from the rule packs and the
// measured precision table, and with -measure first recomputes that table
// (internal/rules/precision.tsv) from the last measurement runs:
//
//	go run ./bench/rulesdoc                 # docs/rules.md from precision.tsv
//	go run ./bench/rulesdoc -measure        # precision.tsv from the runs, then the doc
//
// -measure reads bench/.out/real/all.tsv (bench/quality-real.sh: repo,
// stable_id, rule_id, severity, path, line, title, run) joined with
// bench/realcode/verdicts.tsv, and, when present, bench/.out/recall/per-rule.tsv
// (bench/recall.sh: suite, rule_id, tp, fp). Run it from the project root.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"

	"github.com/diffpalhq/diffpal/internal/rules"
)

func main() {
	measure := flag.Bool("measure", false, "recompute internal/rules/precision.tsv from the last runs first")
	realFindings := flag.String("real", "bench/.out/real/all.tsv", "findings of the last bench/quality-real.sh run")
	verdicts := flag.String("verdicts", "bench/realcode/verdicts.tsv", "real-code verdicts")
	suites := flag.String("suites", "bench/.out/recall/per-rule.tsv", "per-rule counts of the last bench/recall.sh run (optional)")
	flag.Parse()
	if err := run(*measure, *realFindings, *verdicts, *suites); err != nil {
		fmt.Fprintln(os.Stderr, "rulesdoc:", err)
		os.Exit(1)
	}
}

func run(measure bool, realFindings, verdicts, suites string) error {
	if measure {
		ms, err := measureAll(realFindings, verdicts, suites)
		if err != nil {
			return err
		}
		if err := os.WriteFile("internal/rules/precision.tsv", rules.FormatPrecision(ms), 0o644); err != nil {
			return err
		}
		fmt.Printf("wrote internal/rules/precision.tsv (%d rows)\n", len(ms))
		// This binary embeds the table it was built with, which gates the
		// severities the doc shows: the doc comes from a fresh build.
		cmd := exec.Command("go", "run", "./bench/rulesdoc")
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		return cmd.Run()
	}
	data, err := os.ReadFile("internal/rules/precision.tsv")
	if err != nil {
		return err
	}
	prec, err := rules.ParsePrecision(data)
	if err != nil {
		return err
	}
	s, err := rules.Builtin()
	if err != nil {
		return err
	}
	if err := os.WriteFile("docs/rules.md", rules.RulesDoc(s, prec, rules.SecretDocRules()), 0o644); err != nil {
		return err
	}
	fmt.Println("wrote docs/rules.md")
	return nil
}

func readTSV(path string) ([][]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out [][]string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if sc.Text() == "" || strings.HasPrefix(sc.Text(), "#") {
			continue
		}
		out = append(out, strings.Split(sc.Text(), "\t"))
	}
	return out, sc.Err()
}

func measureAll(realFindings, verdicts, suites string) ([]rules.Measure, error) {
	vs, err := readTSV(verdicts)
	if err != nil {
		return nil, err
	}
	verdict := map[string]string{} // repo \t stable id -> verdict
	for _, v := range vs[1:] {
		if len(v) >= 4 {
			verdict[v[0]+"\t"+v[1]] = v[3]
		}
	}
	fs, err := readTSV(realFindings)
	if err != nil {
		return nil, fmt.Errorf("%v (run bench/quality-real.sh first)", err)
	}
	by := map[string]*rules.Measure{}
	get := func(id, corpus string) *rules.Measure {
		k := id + "\t" + corpus
		if by[k] == nil {
			by[k] = &rules.Measure{RuleID: id, Corpus: corpus}
		}
		return by[k]
	}
	seen := map[string]bool{}
	for _, f := range fs {
		if len(f) < 3 || seen[f[0]+"\t"+f[1]] {
			continue
		}
		seen[f[0]+"\t"+f[1]] = true
		m := get(f[2], "real")
		m.Findings++
		switch verdict[f[0]+"\t"+f[1]] {
		case "true":
			m.True++
		case "false":
			m.False++
		case "debatable":
			m.Debatable++
		}
	}
	if rows, err := readTSV(suites); err == nil {
		for _, r := range rows {
			if len(r) < 4 || r[0] == "suite" {
				continue
			}
			tp, err1 := strconv.Atoi(r[2])
			fp, err2 := strconv.Atoi(r[3])
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("%s: bad counts in %q", suites, strings.Join(r, "\t"))
			}
			m := get(r[1], r[0])
			m.Findings += tp + fp
			m.True += tp
			m.False += fp
		}
	} else if !os.IsNotExist(err) {
		return nil, err
	}
	out := make([]rules.Measure, 0, len(by))
	for _, m := range by {
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].RuleID+out[i].Corpus < out[j].RuleID+out[j].Corpus })
	return out, nil
}
