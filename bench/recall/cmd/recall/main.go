// Command recall prepares public vulnerable-code suites for bench/recall.sh
// and scores diffpal's findings on them (docs/quality-recall.md).
//
// It reads the suites from local clones given on the command line and writes
// their test files into a scratch directory (never into the project); it is a
// bench tool, not part of the diffpal binary.
//
//	recall prepare -suite NAME -src CLONE -out SCRATCH -subjects subjects.tsv -ours ours.tsv >items.tsv
//	recall score -items items.tsv -findings findings.tsv -ours ours.tsv -rules ids.txt -scratch DIR -out OUTDIR [-v]
//
// items.tsv (one expectation a row): suite, kind (pos|neg), subject, path,
// start, end, suite rule, language, text. start = 0 means the whole path:
// a file, or a directory when path ends in "/".
package main

import (
	"bufio"
	"fmt"
	"os"
	"path"
	"regexp"
	"strings"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "prepare":
		err = prepareMain(os.Args[2:])
	case "score":
		err = scoreMain(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "recall:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: recall prepare|score [flags] (see bench/recall.sh)")
	os.Exit(2)
}

// Item is one expectation: a region that must (pos) or must not (neg) carry
// a finding of Subject.
type Item struct {
	Suite, Kind, Subject, Path string
	Start, End                 int
	Rule, Lang, Text           string
}

func (it Item) row() string {
	return strings.Join([]string{it.Suite, it.Kind, it.Subject, it.Path,
		fmt.Sprint(it.Start), fmt.Sprint(it.End), clean(it.Rule), it.Lang, clean(it.Text)}, "\t")
}

func clean(s string) string {
	s = strings.TrimSpace(strings.NewReplacer("\t", " ", "\r", " ", "\n", " ").Replace(s))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// mapping is a TSV of (suite, RE2 pattern, subject) or (pattern, subject):
// the first row whose pattern matches wins (subjects.tsv), or every row that
// matches applies (ours.tsv).
type mapRow struct {
	suite   string
	re      *regexp.Regexp
	subject string
}

func readMapping(file string, withSuite bool) ([]mapRow, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rows []mapRow
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		c := strings.Split(line, "\t")
		var r mapRow
		var pat string
		switch {
		case withSuite && len(c) >= 3:
			r.suite, pat, r.subject = c[0], c[1], c[2]
		case !withSuite && len(c) >= 2:
			pat, r.subject = c[0], c[1]
		default:
			return nil, fmt.Errorf("%s:%d: want %d tab-separated columns", file, n, map[bool]int{true: 3, false: 2}[withSuite])
		}
		if r.re, err = regexp.Compile(pat); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", file, n, err)
		}
		r.subject = strings.TrimSpace(r.subject)
		rows = append(rows, r)
	}
	return rows, sc.Err()
}

// subjectOf returns the first subject of suite whose pattern matches key.
func subjectOf(rows []mapRow, suite, key string) string {
	for _, r := range rows {
		if r.suite == suite && r.re.MatchString(key) {
			return r.subject
		}
	}
	return ""
}

// subjectsOf returns every subject whose pattern matches id (ours.tsv).
func subjectsOf(rows []mapRow, id string) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range rows {
		if r.re.MatchString(id) && !seen[r.subject] && r.subject != "-" {
			seen[r.subject] = true
			out = append(out, r.subject)
		}
	}
	return out
}

func claimedSubjects(ours []mapRow) map[string]bool {
	m := map[string]bool{}
	for _, r := range ours {
		if r.subject != "-" {
			m[r.subject] = true
		}
	}
	return m
}

var langByExt = map[string]string{
	".go": "go", ".py": "python", ".js": "javascript", ".jsx": "javascript", ".mjs": "javascript",
	".ts": "typescript", ".tsx": "typescript", ".rb": "ruby", ".erb": "ruby", ".java": "java",
	".kt": "kotlin", ".kts": "kotlin", ".swift": "swift", ".m": "objc", ".sh": "shell", ".bash": "shell",
	".yaml": "yaml", ".yml": "yaml", ".json": "json", ".xml": "xml", ".php": "php", ".cs": "csharp",
	".scala": "scala", ".c": "c", ".h": "c", ".cpp": "cpp", ".rs": "rust", ".html": "html", ".htm": "html",
	".dockerfile": "dockerfile", ".tf": "hcl", ".hcl": "hcl", ".ini": "ini", ".toml": "toml",
	".properties": "properties", ".env": "dotenv", ".txt": "text", ".conf": "conf", ".gradle": "gradle",
	".jsp": "jsp", ".vue": "vue", ".ejs": "ejs", ".mustache": "mustache", ".pug": "pug", ".cshtml": "razor",
	".generic": "generic", ".tpl": "template", ".j2": "template", ".jinja": "template", ".jinja2": "template",
}

func langOf(p string) string {
	base := strings.ToLower(path.Base(p))
	if base == "dockerfile" || strings.HasSuffix(base, ".dockerfile") {
		return "dockerfile"
	}
	if base == "makefile" {
		return "makefile"
	}
	if strings.HasPrefix(p, ".github/workflows/") {
		return "gh-actions"
	}
	if l, ok := langByExt[path.Ext(base)]; ok {
		return l
	}
	if e := path.Ext(base); e != "" {
		return e[1:]
	}
	return "other"
}
