package main

import (
	"bytes"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/goccy/go-yaml"
)

// semgrepSkipDirs are top-level directories of semgrep-rules not reviewed:
// languages diffpal has no rules for, copies of other rules, tooling.
var semgrepSkipDirs = map[string]bool{
	"terraform": true, "solidity": true, "ocaml": true, "apex": true, "elixir": true, "clojure": true,
	"libsonnet": true, "problem-based-packs": true, "ai": true, "stats": true, "scripts": true,
	"trusted_python": true, "yaml/semgrep": true,
}

// annotation: a comment marker, then ruleid/ok (and the todo/deep/pro
// variants), a colon and comma-separated rule ids.
var semgrepAnnot = regexp.MustCompile(`(^|\s)(#|//|<!--|--|/\*|\{#|\{\{/\*|\{\{!--|;)\s*(todoruleid|ruleid|deepruleid|proruleid|todook|ok|deepok|prook)\s*:\s*([A-Za-z0-9_.,\- ]+)`)

var cweRe = regexp.MustCompile(`CWE-\d+`)

type semgrepRule struct {
	file string // rule yaml, relative, without extension
	cwe  string
}

func (p *prep) semgrep() error {
	// 1. rules: id -> (file, CWE), indexed by rule file too
	byFile := map[string]map[string]semgrepRule{} // rule file (no ext) -> id -> rule
	global := map[string][]semgrepRule{}
	var testFiles []string
	err := walkFiles(p.src, func(rel string) bool {
		return semgrepSkipDirs[rel]
	}, func(rel string) error {
		base := path.Base(rel)
		if strings.Contains(base, ".fixed.") {
			return nil
		}
		ext := path.Ext(base)
		isYAML := ext == ".yaml" || ext == ".yml"
		if isYAML && !strings.Contains(base, ".test.") {
			data, err := os.ReadFile(filepath.Join(p.src, rel))
			if err != nil {
				return err
			}
			if !bytes.HasPrefix(data, []byte("rules:")) && !bytes.Contains(data, []byte("\nrules:")) {
				return nil
			}
			noext := strings.TrimSuffix(rel, ext)
			m := parseSemgrepRules(data)
			if len(m) == 0 {
				return nil
			}
			byFile[noext] = map[string]semgrepRule{}
			for id, cwe := range m {
				r := semgrepRule{file: noext, cwe: cwe}
				byFile[noext][id] = r
				global[id] = append(global[id], r)
			}
			return nil
		}
		testFiles = append(testFiles, rel)
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(testFiles)
	// 2. test files: a sibling of a rule file (rule.ext, rule.test.yaml)
	for _, rel := range testFiles {
		dir, base := path.Split(rel)
		stem := base
		if i := strings.Index(base, "."); i > 0 {
			stem = base[:i]
		}
		ruleFile := dir + stem
		local, ok := byFile[ruleFile]
		if !ok {
			continue
		}
		data, err := os.ReadFile(filepath.Join(p.src, rel))
		if err != nil {
			return err
		}
		if !bytes.Contains(data, []byte("ruleid")) && !bytes.Contains(data, []byte("ok")) {
			continue
		}
		dst := rel
		if strings.HasPrefix(rel, "yaml/github-actions/") {
			// workflow rules only run on workflow paths
			dst = ".github/workflows/" + strings.ReplaceAll(rel, "/", "__")
		}
		items := p.semgrepItems(rel, dst, data, local, global)
		if len(items) == 0 {
			continue
		}
		if err := p.write(dst, data); err != nil {
			return err
		}
		p.items = append(p.items, items...)
	}
	return nil
}

// parseSemgrepRules returns rule id -> CWE list (comma-joined).
func parseSemgrepRules(data []byte) map[string]string {
	var doc struct {
		Rules []struct {
			ID       string         `yaml:"id"`
			Metadata map[string]any `yaml:"metadata"`
		} `yaml:"rules"`
	}
	out := map[string]string{}
	if err := yaml.Unmarshal(data, &doc); err == nil && len(doc.Rules) > 0 {
		for _, r := range doc.Rules {
			if r.ID == "" {
				continue
			}
			cwes := cweRe.FindAllString(fmt.Sprint(r.Metadata["cwe"]), -1)
			out[r.ID] = strings.Join(uniq(cwes), ",")
		}
		return out
	}
	// fallback: line scan; every CWE of the file goes to every id
	cwes := strings.Join(uniq(cweRe.FindAllString(string(data), -1)), ",")
	for _, m := range regexp.MustCompile(`(?m)^\s*-\s*id:\s*['"]?([A-Za-z0-9_.\-]+)`).FindAllSubmatch(data, -1) {
		out[string(m[1])] = cwes
	}
	return out
}

func uniq(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

func isCommentLine(t string) bool {
	for _, pre := range []string{"#", "//", "/*", "*", "<!--", "--", "{#", "{{/*", "{{!--"} {
		if strings.HasPrefix(t, pre) {
			return true
		}
	}
	return false
}

// semgrepItems reads the annotations of one test file.
func (p *prep) semgrepItems(rel, dst string, data []byte, local map[string]semgrepRule, global map[string][]semgrepRule) []Item {
	lines := strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n")
	type key struct {
		line    int
		subject string
	}
	agg := map[key]*Item{}
	var order []key
	annotOnly := make([]bool, len(lines))
	for i, l := range lines {
		if loc := semgrepAnnot.FindStringSubmatchIndex(l); loc != nil && strings.TrimSpace(l[:loc[4]]) == "" {
			annotOnly[i] = true
		}
	}
	for i, l := range lines {
		m := semgrepAnnot.FindStringSubmatchIndex(l)
		if m == nil {
			continue
		}
		kindWord := l[m[6]:m[7]]
		kind := "neg"
		if strings.Contains(kindWord, "ruleid") {
			kind = "pos"
		}
		target := i
		if annotOnly[i] {
			target = -1
			for j := i + 1; j < len(lines); j++ {
				t := strings.TrimSpace(lines[j])
				if t == "" || annotOnly[j] || isCommentLine(t) {
					continue
				}
				target = j
				break
			}
			if target < 0 {
				continue
			}
		}
		stmtEnd, nodeEnd := regionEnd(lines, target, strings.HasSuffix(dst, ".yaml") || strings.HasSuffix(dst, ".yml"))
		for _, id := range strings.FieldsFunc(l[m[8]:m[9]], func(r rune) bool { return r == ',' || r == ' ' }) {
			id = strings.Trim(id, ".-")
			if id == "" {
				continue
			}
			r, ok := local[id]
			if !ok {
				short := id[strings.LastIndex(id, ".")+1:]
				if r, ok = local[short]; !ok {
					if g := global[id]; len(g) > 0 {
						r, ok = g[0], true
					} else if g := global[short]; len(g) > 0 {
						r, ok = g[0], true
					}
				}
				if !ok {
					p.stats["unresolved_ids"]++
					continue
				}
				id = short
			}
			mkey := r.file + "#" + id + "#" + r.cwe
			if os.Getenv("RECALL_KEYS") != "" {
				fmt.Fprintf(os.Stderr, "key\t%s\t%s\n", mkey, subjectOf(p.subj, p.suite, mkey))
			}
			s := p.subject(mkey)
			if s == "" {
				p.stats["unclaimed"]++
				continue
			}
			k := key{target, s}
			it := agg[k]
			if it == nil {
				it = &Item{Suite: p.suite, Kind: kind, Subject: s, Path: dst, Start: target + 1, End: stmtEnd + 1,
					Rule: id, Lang: langOf(dst), Text: lines[target]}
				if kind == "pos" {
					it.End = nodeEnd + 1
				}
				agg[k] = it
				order = append(order, k)
				continue
			}
			if kind == "pos" && it.Kind == "neg" {
				it.Kind, it.Rule = "pos", id
				it.End = nodeEnd + 1
			} else if kind == it.Kind && !strings.Contains(","+it.Rule+",", ","+id+",") {
				it.Rule += "," + id
			}
		}
	}
	out := make([]Item, 0, len(order))
	for _, k := range order {
		out = append(out, *agg[k])
	}
	return out
}

// regionEnd extends a target line over the lines of the same statement:
// while brackets opened on it are still open (at most 8 lines), and over the
// more-indented lines that follow it when it opens a block (YAML: always, a
// node's children; other files: a line ending in ':', '|' or '>'), at most
// 20 lines. A semgrep match starts on the annotated line and spans the
// statement or node.
//
// It returns the statement's last line and the node's last line: a positive
// spans the node, a negative (ok:) only the statement.
func regionEnd(lines []string, start int, yamlFile bool) (stmt, node int) {
	depth := 0
	end := start
	for j := start; j < len(lines) && j < start+8; j++ {
		for _, c := range lines[j] {
			switch c {
			case '(', '[', '{':
				depth++
			case ')', ']', '}':
				depth--
			}
		}
		end = j
		if depth <= 0 {
			break
		}
	}
	t := strings.TrimSpace(lines[start])
	if !yamlFile && !strings.HasSuffix(t, ":") && !strings.HasSuffix(t, "|") && !strings.HasSuffix(t, ">") &&
		!strings.HasSuffix(t, "|-") && !strings.HasSuffix(t, ">-") {
		return end, end
	}
	stmt = end
	ind := indent(lines[start])
	if strings.HasPrefix(t, "- ") {
		ind++ // a sequence item's other keys are indented past its dash
	}
	for j := end + 1; j < len(lines) && j <= start+20; j++ {
		if strings.TrimSpace(lines[j]) == "" {
			continue
		}
		if indent(lines[j]) <= ind {
			break
		}
		end = j
	}
	return stmt, end
}

func indent(l string) int {
	n := 0
	for _, c := range l {
		if c == ' ' {
			n++
		} else if c == '\t' {
			n += 4
		} else {
			break
		}
	}
	return n
}
