package scope

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// gitIgnoreCases are pattern files with the file paths to ask about. The
// paths of one case become real files in one repository, so a path must
// not be both a file and the directory of another path.
var gitIgnoreCases = []struct {
	name     string
	patterns string
	paths    []string
}{
	{"parent excluded, no re-include", "build/\n!build/keep.txt\n",
		[]string{"build/keep.txt", "build/x.o", "src/build/keep.txt", "buildx/keep.txt", "keep.txt"}},
	{"parent excluded without slash", "build\n!build/keep.txt\n",
		[]string{"build/keep.txt", "build/sub/keep.txt", "a/build/keep.txt", "builds/keep.txt"}},
	{"contents excluded, re-include works", "build/*\n!build/keep.txt\n",
		[]string{"build/keep.txt", "build/x.o", "build/sub/keep.txt", "a/build/keep.txt"}},
	{"anchored contents, re-include", "/build/*\n!/build/keep.txt\n",
		[]string{"build/keep.txt", "build/y", "a/build/y", "a/build/keep.txt"}},
	{"whitelist with directories re-included", "*\n!*/\n!*.go\n",
		[]string{"a.go", "a.txt", "d/b.go", "d/b.txt", "d/e/c.go"}},
	{"whitelist without directories", "*\n!*.go\n",
		[]string{"a.go", "a.txt", "d/b.go", "d/b.txt"}},
	{"blank lines and comments", "\n# a comment\n\n*.log\n#*.go\n   # not a comment\n",
		[]string{"x.log", "x.go", "#x.go", "   # not a comment", "d/x.log"}},
	{"trailing spaces", "foo   \nbar\\ \nbaz\\  \nqux \\ \\ \n",
		[]string{"foo", "foo   ", "bar", "bar ", "baz", "baz ", "baz  ", "qux", "qux  ", "qux   "}},
	{"escaped hash and bang", "\\#hash\n\\!bang\n",
		[]string{"#hash", "!bang", "hash", "bang", "d/#hash"}},
	{"negation", "*.log\n!important.log\n",
		[]string{"important.log", "a/important.log", "x.log", "a/x.log", "log"}},
	{"negation overridden later", "*.log\n!a.log\na.log\n",
		[]string{"a.log", "b.log", "d/a.log"}},
	{"negation before exclusion is moot", "!a.log\n*.log\n",
		[]string{"a.log", "b.log"}},
	{"leading slash anchors", "/top.txt\n/dir\n",
		[]string{"top.txt", "a/top.txt", "dir/x", "a/dir/x", "dirx/y"}},
	{"middle slash anchors", "doc/frotz\n",
		[]string{"doc/frotz", "a/doc/frotz", "doc/x/frotz", "frotz"}},
	{"middle slash, directory only", "doc/frotz/\n",
		[]string{"doc/frotz/f", "a/doc/frotz/f", "doc/frotz2", "frotz/f"}},
	{"trailing slash is directories only", "out/\n",
		[]string{"out/a", "x/out/b", "outfile", "y/out", "z/out/c/d"}},
	{"star stays in one component", "foo/*\n",
		[]string{"foo/a", "foo/b/c", "bar/foo/a", "foo.c"}},
	{"star suffix", "*.txt\n",
		[]string{"a.txt", "d/e.txt", "txt", ".txt", "a.txt.bak"}},
	{"star in the middle", "a*b\n",
		[]string{"ab", "axxb", "x/ab", "a/b", "ba"}},
	{"anchored star does not cross slash", "x/a*b\n",
		[]string{"x/ab", "x/aZZb", "x/a/b", "y/x/ab"}},
	{"question mark", "a?c\nx/a?c\n",
		[]string{"abc", "ac", "abbc", "d/abc", "x/abc", "x/a/c"}},
	{"class", "[abc].txt\n",
		[]string{"a.txt", "d.txt", "[abc].txt", "ab.txt", "s/c.txt"}},
	{"negated classes", "[!abc].md\n[^xyz].rst\n",
		[]string{"a.md", "d.md", "x.rst", "w.rst", "dd.md"}},
	{"range", "file[0-9].c\n",
		[]string{"file1.c", "filea.c", "file10.c", "file.c", "d/file9.c"}},
	{"close bracket first in class", "[]x].md\n[!]]z\n",
		[]string{"].md", "x.md", "y.md", "]z", "az"}},
	{"dash first or last", "[a-].c\n[-z].h\n",
		[]string{"-.c", "a.c", "b.c", "-.h", "z.h", "m.h"}},
	{"escaped dash", "[a\\-z]\n",
		[]string{"a", "-", "m", "z"}},
	{"posix classes", "[[:digit:]]*\n[[:upper:]][[:lower:]]\n",
		[]string{"1abc", "abc", "Ab", "ab", "AB", "d/9"}},
	{"not a posix class", "x[[:alpha]\n",
		[]string{"x:", "xa", "xh", "xz", "x["}},
	{"class never matches slash", "a[/]b\nd/x[!y]z\n",
		[]string{"a/b", "d/x/z", "d/xaz", "d/xyz"}},
	{"leading double star", "**/foo\n",
		[]string{"foo", "a/foo", "a/b/foo", "afoo", "a/bfoo", "c/foo/x"}},
	{"leading double star with path", "**/foo/bar\n",
		[]string{"foo/bar", "x/foo/bar", "x/y/foo/bar", "foo/x/bar", "xfoo/bar"}},
	{"trailing double star", "abc/**\n",
		[]string{"abc/x", "abc/d/e", "abcd/x", "x/abc/y"}},
	{"middle double star", "a/**/b\n",
		[]string{"a/b", "a/x/b", "a/x/y/b", "a/xb", "xa/b", "a/c/b/d"}},
	{"other double stars are single stars", "a**b\nx/a**b\n",
		[]string{"ab", "aXb", "d/aXYb", "x/a/b", "x/aZb"}},
	{"leading double star without slash", "**foo\n",
		[]string{"foo", "xfoo", "d/xfoo", "d/foox"}},
	{"double star glued to a name", "foo**/bar\nd/x**/y\n",
		[]string{"foo/bar", "fooX/bar", "foo/x/bar", "foobar", "foo/x/barn", "d/x**/y/z", "d/xa/y", "d/xy"}},
	{"anchored leading double star", "/**/x\n",
		[]string{"x", "a/x", "a/b/x", "ax"}},
	{"double star alone", "**\n!keep\n",
		[]string{"keep", "d/keep", "f"}},
	{"double star directories", "**/\n",
		[]string{"f", "d/f", "d/e/f"}},
	{"star directories", "*/\n",
		[]string{"f", "d/f", "d/e/f"}},
	{"anchored top-level directories", "/*/\n",
		[]string{"f", "d/f", "d/e/f"}},
	{"escaped specials", "\\*.txt\n\\?x\n\\[ab\\]\n",
		[]string{"*.txt", "a.txt", "?x", "ax", "[ab]", "a", "b"}},
	{"escaped backslash", "back\\\\slash\n",
		[]string{"back\\slash", "backslash"}},
	{"unclosed bracket never matches", "bad[\n[abc\n*.tmp\n",
		[]string{"bad[", "[abc", "a", "x.tmp"}},
	{"trailing backslash never matches", "foo\\\n",
		[]string{"foo\\", "foo"}},
	{"unknown posix class never matches", "[[:foo:]]\n",
		[]string{"a", ":", "f"}},
	{"negated directory under excluded parent", "a/\n!a/b/\n",
		[]string{"a/b/c", "a/d", "x/a/b/c"}},
	{"nested whitelist", "a/*\n!a/b/\na/b/*\n!a/b/keep\n",
		[]string{"a/b/keep", "a/b/x", "a/c", "a/b/d/keep"}},
	{"re-included directory keeps file rules", "*.o\n!keep/\n",
		[]string{"keep/x.o", "keep/x.c", "x.o"}},
	{"CRLF line endings", "*.log\r\n!a.log\r\n",
		[]string{"a.log", "b.log", "a.log\r"}},
	{"space inside a pattern", "my file.txt\n",
		[]string{"my file.txt", "my", "file.txt"}},
	{"bytes, not runes", "?.txt\n??.md\n",
		[]string{"é.txt", "a.txt", "é.md", "ab.md"}},
	{"class of suffixes", "*.[oa]\n",
		[]string{"x.o", "x.a", "x.c", "d/y.a"}},
	{"case sensitive", "*.TXT\n",
		[]string{"a.txt", "A.TXT", "b.TxT"}},
	{"dotfiles", "/.*\n!/.keep\n",
		[]string{".env", "a/.env", ".keep", "d/.keep", "e"}},
	{"anchored star suffix", "doc/*.txt\n",
		[]string{"doc/a.txt", "doc/x/a.txt", "x/doc/a.txt"}},
	{"double star with negation", "doc/**/*.txt\n!doc/**/keep.txt\n",
		[]string{"doc/a.txt", "doc/x/keep.txt", "doc/x/y.txt", "doc/keep.txt", "d/doc/a.txt"}},
	{"re-include below an excluded directory fails", "node_modules/\n!node_modules/keep/x.js\n",
		[]string{"node_modules/keep/x.js", "node_modules/y.js", "web/node_modules/keep/x.js"}},
	{"tab is not trimmed", "foo\t\n",
		[]string{"foo\t", "foo"}},
	{"spaces only", "   \n",
		[]string{"   ", "a"}},
	{"lone bang and slash", "!\n/\n!/\n",
		[]string{"a", "!", "d/e"}},
	{"the package's own example", "# comment\n*.log\n!keep.log\nbuild/\n/root-only.txt\ndocs/**/*.md\n**/fixtures\na/*/c.go\n\\#hash\ntrailing.txt   \n",
		[]string{"x.log", "deep/dir/x.log", "keep.log", "deep/keep.log", "build/out.bin", "src/build/out.bin",
			"root-only.txt", "sub/root-only.txt", "docs/a/b/readme.md", "docs/readme.md", "other/docs/x.md",
			"x/y/fixtures/data", "fixtures/data", "a/b/c.go", "a/b/d/c.go", "#hash", "trailing.txt", "main.go",
			"logs/not-a-log.txt", "build.gradle", "src/builder/main.go"}},
}

// TestIgnoreMatchesGit compares Match with `git check-ignore` for every
// case: both the decision and the pattern line that made it.
func TestIgnoreMatchesGit(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not installed")
	}
	if len(gitIgnoreCases) < 40 {
		t.Fatalf("only %d cases", len(gitIgnoreCases))
	}
	pairs := 0
	for _, tc := range gitIgnoreCases {
		t.Run(tc.name, func(t *testing.T) {
			want := gitCheckIgnore(t, git, tc.patterns, tc.paths)
			ig := ParseIgnore([]byte(tc.patterns))
			for _, p := range tc.paths {
				pairs++
				ignored, line := ig.Match(p)
				if w := want[p]; ignored != w.ignored || line != w.line {
					t.Errorf("patterns %q, path %q: diffpal ignored=%v line=%d, git ignored=%v line=%d",
						tc.patterns, p, ignored, line, w.ignored, w.line)
				}
			}
		})
	}
	t.Logf("compared %d (pattern file, path) pairs in %d cases with git check-ignore", pairs, len(gitIgnoreCases))
}

// TestIgnoreRandomAgainstGit compares Match with git on random pattern
// files built from the syntax's sharp edges. The seed is fixed (so the
// test is deterministic); DIFFPAL_IGNORE_SEED and DIFFPAL_IGNORE_ROUNDS
// explore further.
func TestIgnoreRandomAgainstGit(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not installed")
	}
	seed, rounds := int64(1), 20
	if s, err := strconv.ParseInt(os.Getenv("DIFFPAL_IGNORE_SEED"), 10, 64); err == nil {
		seed = s
	}
	if n, err := strconv.Atoi(os.Getenv("DIFFPAL_IGNORE_ROUNDS")); err == nil {
		rounds = n
	}
	r := rand.New(rand.NewSource(seed))
	atoms := []string{"a", "b", "ab", "c", "/", "/", "*", "*", "**", "?", "[", "]", "[a-b]", "[!a]", "[]a]",
		"[[:alpha:]]", "[^b]", "!", `\`, `\*`, " ", "-", "#", ":", "**/", "/**", "/**/", `\ `, "[a-]",
		`\/`, `**\/`, "[[:x", `[\]]`, `\[`, "ab*", "/a", "a/"}
	comps := []string{"a", "b", "ab", "ba", "c", "a b", "*", "-", "!a", "#", "aa", "abc", "b a", "]", "[a]", "bb"}
	pairs := 0
	for round := 0; round < rounds; round++ {
		var lines []string
		for n := r.Intn(4) + 1; n > 0; n-- {
			var b strings.Builder
			for k := r.Intn(9) + 1; k > 0; k-- {
				b.WriteString(atoms[r.Intn(len(atoms))])
			}
			lines = append(lines, b.String())
		}
		patterns := strings.Join(lines, "\n") + "\n"
		// Random paths, leaving out those that would need a file to be
		// a directory too.
		files, dirs := map[string]bool{}, map[string]bool{}
		var paths []string
	next:
		for k := 0; k < 40; k++ {
			var cs []string
			for d := r.Intn(4) + 1; d > 0; d-- {
				cs = append(cs, comps[r.Intn(len(comps))])
			}
			p := strings.Join(cs, "/")
			if files[p] || dirs[p] {
				continue
			}
			for d := filepath.Dir(p); d != "."; d = filepath.Dir(d) {
				if files[d] {
					continue next
				}
			}
			files[p] = true
			for d := filepath.Dir(p); d != "."; d = filepath.Dir(d) {
				dirs[d] = true
			}
			paths = append(paths, p)
		}
		want := gitCheckIgnore(t, git, patterns, paths)
		ig := ParseIgnore([]byte(patterns))
		for _, p := range paths {
			pairs++
			if ignored, line := ig.Match(p); ignored != want[p].ignored || line != want[p].line {
				t.Errorf("patterns %q, path %q: diffpal ignored=%v line=%d, git ignored=%v line=%d",
					patterns, p, ignored, line, want[p].ignored, want[p].line)
			}
		}
	}
	t.Logf("compared %d random (pattern file, path) pairs (seed %d, %d rounds) with git check-ignore", pairs, seed, rounds)
}

type gitDecision struct {
	ignored bool
	line    int // the deciding pattern's line, 0 when none matched
}

// gitCheckIgnore creates a repository with patterns as its .gitignore
// and every path as a file, and asks git about the paths. The config
// is isolated from the user's and the system's (no global excludes file,
// case-sensitive).
func gitCheckIgnore(t *testing.T, git, patterns string, paths []string) map[string]gitDecision {
	t.Helper()
	dir := t.TempDir()
	env := append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull, "HOME="+dir, "LC_ALL=C")
	run := func(stdin []byte, args ...string) []byte {
		t.Helper()
		cmd := exec.Command(git, append([]string{"-c", "core.excludesFile=" + filepath.Join(dir, "no-such-excludes"),
			"-c", "core.ignoreCase=false"}, args...)...)
		cmd.Dir, cmd.Env, cmd.Stdin = dir, env, bytes.NewReader(stdin)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		// check-ignore exits 1 when no path is ignored.
		if ee, ok := err.(*exec.ExitError); err != nil && !(ok && ee.ExitCode() == 1 && args[0] == "check-ignore") {
			t.Fatalf("git %v: %v\n%s", args, err, stderr.String())
		}
		return out
	}
	run(nil, "init", "-q", "--template=")
	if err := os.WriteFile(filepath.Join(dir, ".gitignore"), []byte(patterns), 0o644); err != nil {
		t.Fatal(err)
	}
	files := map[string]bool{}
	for _, p := range paths {
		files[p] = true
	}
	var stdin []byte
	for _, p := range paths {
		for d := filepath.Dir(p); d != "."; d = filepath.Dir(d) {
			if files[d] {
				t.Fatalf("bad case: %q is a file and the directory of %q", d, p)
			}
		}
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		stdin = append(append(stdin, p...), 0)
	}
	out := run(stdin, "check-ignore", "--no-index", "-v", "-n", "-z", "--stdin")
	// -z -v -n: source, line, pattern, path, each NUL-terminated.
	fields := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if len(fields) != 4*len(paths) {
		t.Fatalf("git check-ignore printed %d fields for %d paths: %q", len(fields), len(paths), out)
	}
	got := map[string]gitDecision{}
	for i := 0; i < len(fields); i += 4 {
		source, line, pat, path := fields[i], fields[i+1], fields[i+2], fields[i+3]
		var d gitDecision
		if source != "" {
			n, err := strconv.Atoi(line)
			if err != nil {
				t.Fatalf("git line %q: %v", line, err)
			}
			d = gitDecision{ignored: !strings.HasPrefix(pat, "!"), line: n}
		}
		got[path] = d
	}
	if len(got) != len(paths) {
		t.Fatalf("git answered for %d of %d paths: %v", len(got), len(paths), got)
	}
	return got
}

func TestGitCheckIgnoreHarness(t *testing.T) {
	// The oracle itself: git must see the example as we read the
	// manual, or the comparison above proves nothing.
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not installed")
	}
	got := gitCheckIgnore(t, git, "build/\n!build/keep.txt\n", []string{"build/keep.txt", "src/main.go"})
	want := map[string]gitDecision{"build/keep.txt": {true, 1}, "src/main.go": {}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("git check-ignore: %v, want %v", got, want)
	}
}
