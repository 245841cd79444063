// Command genrepo builds a git repository with one large change for
// bench/review.sh: a base commit and a head commit that changes -files
// files with about -lines added lines in total, across Go, Python,
// TypeScript, Ruby, Java, shell and YAML, with a few planted issues (a
// token, disabled TLS verification, a swallowed error) so every tool has
// something to find. Output is deterministic for a given seed.
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

func main() {
	dir := flag.String("o", "bench/.out/repo", "repository directory (recreated)")
	files := flag.Int("files", 2000, "changed files")
	lines := flag.Int("lines", 200000, "added lines in total")
	seed := flag.Uint64("seed", 1, "random seed")
	flag.BoolVar(&syntaxIssues, "syntax-issues", false, "plant, in every file, code a syntax-aware rule of its language looks at (bench/review.sh's seven-language change)")
	flag.Parse()
	if err := run(*dir, *files, *lines, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "genrepo:", err)
		os.Exit(1)
	}
}

type lang struct {
	ext  string
	line func(r *rand.Rand, i int) string
}

var langs = []lang{
	{".go", func(r *rand.Rand, i int) string {
		return fmt.Sprintf("\tv%d := compute(%d, \"item-%d\") // step %d", i, r.IntN(1000), i, i)
	}},
	{".py", func(r *rand.Rand, i int) string {
		return fmt.Sprintf("    value_%d = compute(%d, 'item-%d')  # step %d", i, r.IntN(1000), i, i)
	}},
	{".ts", func(r *rand.Rand, i int) string {
		return fmt.Sprintf("  const v%d: number = compute(%d, `item-%d`); // step %d", i, r.IntN(1000), i, i)
	}},
	{".rb", func(r *rand.Rand, i int) string {
		return fmt.Sprintf("    value_%d = compute(%d, 'item-%d') # step %d", i, r.IntN(1000), i, i)
	}},
	{".java", func(r *rand.Rand, i int) string {
		return fmt.Sprintf("        int v%d = compute(%d, \"item-%d\"); // step %d", i, r.IntN(1000), i, i)
	}},
	{".sh", func(r *rand.Rand, i int) string {
		return fmt.Sprintf("echo \"step %d: $((%d + 1))\"", i, r.IntN(1000))
	}},
	{".yaml", func(r *rand.Rand, i int) string {
		return fmt.Sprintf("key_%d: value-%d", i, r.IntN(1000))
	}},
}

func header(ext string, n int) string {
	switch ext {
	case ".go":
		return fmt.Sprintf("package gen%d\n\nfunc compute(a int, b string) int { return a + len(b) }\n\nfunc Run%d() {\n", n%50, n)
	case ".py":
		return "def compute(a, b):\n    return a + len(b)\n\n\ndef run():\n"
	case ".ts":
		return "function compute(a: number, b: string): number { return a + b.length }\n\nexport function run(): void {\n"
	case ".rb":
		return "def compute(a, b)\n  a + b.length\nend\n\ndef run\n"
	case ".java":
		return fmt.Sprintf("class Gen%d {\n    static int compute(int a, String b) { return a + b.length(); }\n    void run() {\n", n)
	case ".sh":
		return "#!/bin/sh\nset -eu\n"
	}
	return "# generated\n"
}

func footer(ext string) string {
	switch ext {
	case ".go", ".ts":
		return "}\n"
	case ".rb":
		return "end\n"
	case ".java":
		return "    }\n}\n"
	}
	return ""
}

// planted issues, one per this many files
const plantEvery = 97

func planted(ext string, n int) string {
	switch ext {
	case ".go":
		return fmt.Sprintf("\ttr%d := &tls.Config{InsecureSkipVerify: true}\n", n)
	case ".py":
		return "    token = \"ghp_0123456789abcdefghijklmnopqrstuvwxyzAB\"\n"
	case ".ts":
		return "  const key = \"AKIAABCDEFGHIJKLMNOP\";\n"
	}
	return ""
}

// syntaxIssues: every file gets its language's planted line and
// syntaxPlanted's, so a small change makes the syntax-aware rules parse
// and run their queries in each grammar (the default repositories are
// unchanged by the flag).
var syntaxIssues bool

// syntaxPlanted is code a built-in query rule of the language looks at
// (all but Java's line are flagged), or "" for a language without one
// here.
func syntaxPlanted(ext string) string {
	switch ext {
	case ".go":
		return "\texec.Command(\"sh\", \"-c\", os.Args[1]).Run()\n"
	case ".py":
		return "    subprocess.call(sys.argv[1], shell=True)\n"
	case ".ts":
		return "  document.getElementById(\"out\").innerHTML = location.hash;\n  eval(location.search);\n"
	case ".rb":
		return "  system(\"ls #{params[:dir]}\")\n"
	case ".java":
		return "        Runtime.getRuntime().exec(System.getenv(\"CMD\"));\n"
	}
	return ""
}

func run(dir string, nFiles, nLines int, seed uint64) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	git := func(args ...string) error {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir,
			"GIT_AUTHOR_NAME=bench", "GIT_AUTHOR_EMAIL=bench@example.com",
			"GIT_COMMITTER_NAME=bench", "GIT_COMMITTER_EMAIL=bench@example.com",
			"GIT_AUTHOR_DATE=2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z")
		cmd.Stderr = os.Stderr
		return cmd.Run()
	}
	if err := git("init", "-q", "-b", "main"); err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	per := max(1, nLines/nFiles)
	path := func(i int) string {
		l := langs[i%len(langs)]
		return filepath.Join(fmt.Sprintf("svc%02d", i%40), fmt.Sprintf("mod%03d", i%211), fmt.Sprintf("file%05d%s", i, l.ext))
	}
	write := func(p, content string) error {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		return os.WriteFile(full, []byte(content), 0o644)
	}
	// Base: half the files exist with a small body; the rest are new.
	for i := 0; i < nFiles; i += 2 {
		l := langs[i%len(langs)]
		var b strings.Builder
		b.WriteString(header(l.ext, i))
		for k := 0; k < 20; k++ {
			b.WriteString(l.line(r, k) + "\n")
		}
		b.WriteString(footer(l.ext))
		if err := write(path(i), b.String()); err != nil {
			return err
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
	for i := 0; i < nFiles; i++ {
		l := langs[i%len(langs)]
		var b strings.Builder
		b.WriteString(header(l.ext, i))
		for k := 0; k < 20; k++ {
			b.WriteString(l.line(r, k) + "\n")
		}
		for k := 0; k < per; k++ {
			b.WriteString(l.line(r, 1000+k) + "\n")
		}
		if i%plantEvery == 0 || syntaxIssues {
			b.WriteString(planted(l.ext, i))
		}
		if syntaxIssues {
			b.WriteString(syntaxPlanted(l.ext))
		}
		b.WriteString(footer(l.ext))
		if err := write(path(i), b.String()); err != nil {
			return err
		}
	}
	if err := git("add", "-A"); err != nil {
		return err
	}
	if err := git("commit", "-q", "-m", "large change"); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "genrepo: %s: %d files, ~%d added lines on branch change\n", dir, nFiles, nFiles*per)
	return nil
}
