package main

import (
	"bufio"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// prepare writes the selected test files of one suite under -out and prints
// the expectations (items) on stdout.
func prepareMain(args []string) error {
	fl := flag.NewFlagSet("prepare", flag.ExitOnError)
	suite := fl.String("suite", "", "semgrep-rules, gosec, gitleaks or bandit")
	src := fl.String("src", "", "local clone of the suite")
	out := fl.String("out", "", "scratch work tree to write the selected files into")
	subjects := fl.String("subjects", "", "bench/recall/subjects.tsv")
	oursFile := fl.String("ours", "", "bench/recall/ours.tsv (claimed subjects)")
	_ = fl.Parse(args)
	if *suite == "" || *src == "" || *out == "" || *subjects == "" || *oursFile == "" {
		return fmt.Errorf("prepare: -suite, -src, -out, -subjects and -ours are required")
	}
	subj, err := readMapping(*subjects, true)
	if err != nil {
		return err
	}
	ours, err := readMapping(*oursFile, false)
	if err != nil {
		return err
	}
	p := &prep{suite: *suite, src: *src, out: *out, subj: subj, claimed: claimedSubjects(ours), stats: map[string]int{}}
	switch *suite {
	case "semgrep-rules":
		err = p.semgrep()
	case "gosec":
		err = p.gosec()
	case "gitleaks":
		err = p.gitleaks()
	case "bandit":
		err = p.bandit()
	default:
		return fmt.Errorf("prepare: unknown suite %q", *suite)
	}
	if err != nil {
		return err
	}
	w := bufio.NewWriter(os.Stdout)
	for _, it := range p.items {
		fmt.Fprintln(w, it.row())
	}
	if err := w.Flush(); err != nil {
		return err
	}
	keys := make([]string, 0, len(p.stats))
	for k := range p.stats {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, p.stats[k]))
	}
	fmt.Fprintf(os.Stderr, "  %s: %d files, %d expectations (%s)\n", *suite, p.files, len(p.items), strings.Join(parts, " "))
	return nil
}

type prep struct {
	suite, src, out string
	subj            []mapRow
	claimed         map[string]bool
	items           []Item
	files           int
	stats           map[string]int
}

// subject maps a suite key to a claimed subject ("" when unmapped or unclaimed).
func (p *prep) subject(key string) string {
	s := subjectOf(p.subj, p.suite, key)
	if s == "" || s == "-" || !p.claimed[s] {
		return ""
	}
	return s
}

func (p *prep) write(rel string, data []byte) error {
	dst := filepath.Join(p.out, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	p.files++
	return os.WriteFile(dst, data, 0o644)
}

func walkFiles(root string, skipDir func(rel string) bool, fn func(rel string) error) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || skipDir(rel)) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		return fn(rel)
	})
}
