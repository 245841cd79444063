package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// bandit: examples/*.py each demonstrate one plugin; bandit's functional
// tests expect issues in every file but a few. Scoring is per file: a file
// mapped to a subject in subjects.tsv is one expected positive (any finding of
// that subject in the file is a TP); a file mapped to "!SUBJECT" (or "!*", all
// claimed subjects) is a negative example, where each finding line of that
// subject is an FP.
func (p *prep) bandit() error {
	files, err := filepath.Glob(filepath.Join(p.src, "examples", "*.py"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("bandit: no examples/*.py under %s", p.src)
	}
	sort.Strings(files)
	claimed := make([]string, 0, len(p.claimed))
	for s := range p.claimed {
		claimed = append(claimed, s)
	}
	sort.Strings(claimed)
	for _, file := range files {
		rel := "examples/" + filepath.Base(file)
		s := subjectOf(p.subj, p.suite, rel)
		var items []Item
		switch {
		case s == "" || s == "-":
			p.stats["unmapped_files"]++
			continue
		case s == "!*":
			for _, c := range claimed {
				items = append(items, Item{Suite: p.suite, Kind: "neg", Subject: c, Path: "bandit/" + rel, Rule: "-", Lang: "python"})
			}
		case strings.HasPrefix(s, "!"):
			if !p.claimed[s[1:]] {
				continue
			}
			items = append(items, Item{Suite: p.suite, Kind: "neg", Subject: s[1:], Path: "bandit/" + rel, Rule: "-", Lang: "python"})
		default:
			if !p.claimed[s] {
				p.stats["unclaimed"]++
				continue
			}
			items = append(items, Item{Suite: p.suite, Kind: "pos", Subject: s, Path: "bandit/" + rel,
				Rule: strings.TrimSuffix(filepath.Base(file), ".py"), Lang: "python"})
		}
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		for i := range items {
			items[i].Text = firstCodeLine(string(data))
		}
		if err := p.write("bandit/"+rel, data); err != nil {
			return err
		}
		p.items = append(p.items, items...)
	}
	return nil
}
