package diff

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/diffpalhq/diffpal/internal/git"
	"github.com/diffpalhq/diffpal/internal/git/gittest"
)

var (
	update   = flag.Bool("update", false, "rewrite testdata/golden/*.json from the .diff beside each")
	fixtures = flag.Bool("fixtures", false, "regenerate testdata/golden/*.diff with real git (TestGenerateFixtures)")
)

const goldenDir = "testdata/golden"

// emptyBlob is the object id of the empty blob.
const emptyBlob = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"

// goldenCase is one fixture: two commits built in a fresh repository and
// the diff between them as diffpal reads it (git.Runner.Diff: baseArgs and
// git.DiffArgs), except for the extra config and flags a case names.
type goldenCase struct {
	name string
	// config are -c key=value settings that override baseArgs (later -c
	// wins), e.g. core.quotePath=true, which diffpal itself never sets.
	config []string
	// flags go after git.DiffArgs (e.g. --find-copies-harder).
	flags []string
	// base and head change the work tree before the base and the head
	// commit (nil: nothing; the commit is then empty).
	base, head func(r *gittest.Repo)
	// check states what the parse must say, independently of the golden
	// file, so that -update cannot bless a wrong parse unnoticed.
	check func(t *testing.T, files []*File)
}

// lines returns n distinct newline-terminated lines about tag.
func lines(tag string, n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%s line %d\n", tag, i)
	}
	return b.String()
}

func symlink(r *gittest.Repo, target, name string) {
	r.T.Helper()
	full := filepath.Join(r.Dir, filepath.FromSlash(name))
	os.Remove(full)
	if err := os.Symlink(target, full); err != nil {
		r.T.Fatal(err)
	}
}

// subRepo makes (or reuses) a repository nested at dir and commits a file
// there, so that the superproject's `git add -A` records a gitlink.
func subRepo(r *gittest.Repo, dir, content string) string {
	r.T.Helper()
	full := filepath.Join(r.Dir, dir)
	s := &gittest.Repo{T: r.T, Dir: full}
	if _, err := os.Stat(filepath.Join(full, ".git")); err != nil {
		if err := os.MkdirAll(full, 0o755); err != nil {
			r.T.Fatal(err)
		}
		s.Git("init", "-q", "-b", "main")
	}
	s.Write("README", content)
	return s.Commit("sub: " + content)
}

// Paths that git must quote (tab, newline, quote, backslash, control
// characters, and with core.quotePath=true every byte >= 0x80), paths it
// leaves alone but that are awkward to split (spaces, " b/", a trailing
// space), and invalid UTF-8 (a Latin-1 name).
var awkwardPaths = []string{
	"with space.txt",
	"tab\there.txt",
	"new\nline.txt",
	`quo"te.txt`,
	`back\slash.txt`,
	"bell\a.txt",
	"trailing space ",
	"x b/y.txt",
	"caf\xe9.txt",
	"caf\xe9\ttab.txt",
	"caf\u00e9\ttab.txt",
}

var unicodePaths = []string{
	"日本語/ファイル.txt",
	"emoji-🙂.txt",
	"cafe\u0301-nfd.txt",
	"caf\u00e9-nfc.txt",
	"עברית.txt",
}

func addAll(paths []string) func(r *gittest.Repo) {
	return func(r *gittest.Repo) {
		for _, p := range paths {
			r.Write(p, lines(strconv.Quote(p), 3))
		}
	}
}

func editAll(paths []string) func(r *gittest.Repo) {
	return func(r *gittest.Repo) {
		for _, p := range paths {
			r.Write(p, lines(strconv.Quote(p), 3)+"added to "+strconv.Quote(p)+"\n")
		}
	}
}

// checkPaths wants one modified file per path, in git's (byte) order.
func checkPaths(paths []string) func(t *testing.T, files []*File) {
	return func(t *testing.T, files []*File) {
		want := slices.Clone(paths)
		slices.Sort(want)
		var got []string
		for _, f := range files {
			got = append(got, f.Path())
			if f.OldPath != f.NewPath || f.Status != Modified {
				t.Errorf("%q: old %q new %q status %s", f.Path(), f.OldPath, f.NewPath, f.Status)
			}
			if a := f.Added(); len(a) != 1 || a[0].Text != "added to "+strconv.Quote(f.Path()) {
				t.Errorf("%q: added %+v", f.Path(), a)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("paths\n got %q\nwant %q", got, want)
		}
	}
}

// checkAdded wants one added file per path.
func checkAdded(paths []string) func(t *testing.T, files []*File) {
	return func(t *testing.T, files []*File) {
		want := slices.Clone(paths)
		slices.Sort(want)
		var got []string
		for _, f := range files {
			got = append(got, f.Path())
			if f.Status != Added || f.OldPath != f.NewPath || len(f.Added()) != 3 {
				t.Errorf("%q: %+v", f.Path(), f)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("paths\n got %q\nwant %q", got, want)
		}
	}
}

func byPath(t *testing.T, files []*File, want int) map[string]*File {
	t.Helper()
	if len(files) != want {
		t.Fatalf("%d files, want %d", len(files), want)
	}
	m := map[string]*File{}
	for _, f := range files {
		m[f.Path()] = f
	}
	return m
}

func texts(ls []Line) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.Text)
	}
	return out
}

var goldenCases = []goldenCase{
	{
		name: "multiple-hunks",
		base: func(r *gittest.Repo) {
			var b strings.Builder
			b.WriteString("package p\n\nfunc first() {\n")
			for i := 1; i <= 20; i++ {
				fmt.Fprintf(&b, "\tstep(%d)\n", i)
			}
			b.WriteString("}\n\nfunc second() {\n")
			for i := 21; i <= 40; i++ {
				fmt.Fprintf(&b, "\tstep(%d)\n", i)
			}
			b.WriteString("}\n")
			r.Write("p.go", b.String())
		},
		head: func(r *gittest.Repo) {
			data, _ := os.ReadFile(filepath.Join(r.Dir, "p.go"))
			s := string(data)
			s = strings.Replace(s, "\tstep(2)\n", "\tstep(2)\n\tinserted()\n", 1)
			s = strings.Replace(s, "\tstep(15)\n", "", 1)
			s = strings.Replace(s, "\tstep(30)\n", "\tstep(-30)\n", 1)
			s += "\nfunc third() {}\n"
			r.Write("p.go", s)
		},
		check: func(t *testing.T, files []*File) {
			f := byPath(t, files, 1)["p.go"]
			if len(f.Hunks) != 4 {
				t.Fatalf("hunks = %d, want 4", len(f.Hunks))
			}
			if s := f.Hunks[2].Section; s != "func second() {" {
				t.Errorf("section = %q", s)
			}
			var nos []int
			for _, l := range f.Added() {
				nos = append(nos, l.NewNo)
			}
			if got := fmtInts(nos); got != "6,36,48,49" {
				t.Errorf("added line numbers = %s", got)
			}
			if r := f.Removed(); len(r) != 2 || r[0].OldNo != 18 || r[1].OldNo != 36 {
				t.Errorf("removed = %+v", r)
			}
		},
	},
	{
		name: "add-delete",
		base: func(r *gittest.Repo) {
			r.Write("gone.txt", lines("gone", 2))
			r.Write("empty-gone", "")
			r.Write("keep.txt", lines("keep", 1))
		},
		head: func(r *gittest.Repo) {
			r.Remove("gone.txt")
			r.Remove("empty-gone")
			r.Write("new.txt", lines("new", 2))
		},
		check: func(t *testing.T, files []*File) {
			m := byPath(t, files, 3)
			if f := m["gone.txt"]; f.Status != Deleted || f.NewBlob != "" || f.NewPath != "gone.txt" || len(f.Removed()) != 2 {
				t.Errorf("deleted: %+v", f)
			}
			if f := m["new.txt"]; f.Status != Added || f.OldBlob != "" || f.OldPath != "new.txt" || len(f.Added()) != 2 {
				t.Errorf("added: %+v", f)
			}
			if f := m["empty-gone"]; f == nil || f.Status != Deleted || len(f.Hunks) != 0 || f.OldMode != "100644" || f.OldBlob != emptyBlob {
				t.Errorf("empty deleted: %+v", f)
			}
		},
	},
	{
		// Apart from add-delete: git pairs a deleted and an added empty
		// file as an exact rename.
		name: "empty-add",
		head: func(r *gittest.Repo) {
			r.Write("empty-new", "")
			r.Write("dir/sub/empty with space", "")
		},
		check: func(t *testing.T, files []*File) {
			m := byPath(t, files, 2)
			for _, p := range []string{"empty-new", "dir/sub/empty with space"} {
				if f := m[p]; f == nil || f.Status != Added || len(f.Hunks) != 0 || f.OldBlob != "" || f.NewBlob != emptyBlob || f.NewMode != "100644" {
					t.Errorf("empty added %q: %+v", p, f)
				}
			}
		},
	},
	{
		name: "rename-pure",
		base: func(r *gittest.Repo) {
			r.Write("old.go", lines("old.go", 10))
			r.Write("old name.txt", lines("spaced", 10))
			r.Write("x b/y.txt", lines("x b/y", 10))
		},
		head: func(r *gittest.Repo) {
			r.Remove("old.go")
			r.Write("pkg/new.go", lines("old.go", 10))
			r.Remove("old name.txt")
			r.Write("new name.txt", lines("spaced", 10))
			r.Remove("x b/y.txt")
			r.Write("z b/w.txt", lines("x b/y", 10))
		},
		check: func(t *testing.T, files []*File) {
			m := byPath(t, files, 3)
			for newPath, oldPath := range map[string]string{"pkg/new.go": "old.go", "new name.txt": "old name.txt", "z b/w.txt": "x b/y.txt"} {
				f := m[newPath]
				if f == nil || f.Status != Renamed || f.OldPath != oldPath || f.Similarity != 100 || len(f.Hunks) != 0 || f.ModeOnly() {
					t.Errorf("%s: %+v", newPath, f)
				}
			}
		},
	},
	{
		name: "rename-edit",
		base: func(r *gittest.Repo) {
			r.Write("a.go", lines("a.go", 10))
			r.Write("old name.txt", lines("spaced", 10))
			r.Write("plain.txt", lines("plain", 10))
			r.Write("tab\tname.txt", lines("tabbed", 10))
		},
		head: func(r *gittest.Repo) {
			r.Remove("a.go")
			r.Write("b.go", strings.Replace(lines("a.go", 10), "a.go line 5\n", "a.go line five\n", 1))
			r.Remove("old name.txt")
			r.Write("new name.txt", lines("spaced", 10)+"one more\n")
			r.Remove("plain.txt")
			r.Write("now\ttabbed.txt", lines("plain", 10)+"one more\n")
			r.Remove("tab\tname.txt")
			r.Write("untabbed.txt", lines("tabbed", 10)+"one more\n")
		},
		check: func(t *testing.T, files []*File) {
			m := byPath(t, files, 4)
			for newPath, oldPath := range map[string]string{"b.go": "a.go", "new name.txt": "old name.txt", "now\ttabbed.txt": "plain.txt", "untabbed.txt": "tab\tname.txt"} {
				f := m[newPath]
				if f == nil || f.Status != Renamed || f.OldPath != oldPath || f.Similarity < 50 || f.Similarity == 100 || len(f.Hunks) != 1 || f.OldBlob == "" || f.NewBlob == "" {
					t.Errorf("%q: %+v", newPath, f)
				}
			}
			if got := texts(m["b.go"].Added()); !slices.Equal(got, []string{"a.go line five"}) {
				t.Errorf("b.go added %q", got)
			}
		},
	},
	{
		// A rename that only changes the mode: no hunks, and ModeOnly
		// holds although the path changed too.
		name: "rename-mode",
		base: func(r *gittest.Repo) { r.Write("run.sh", lines("run", 5)) },
		head: func(r *gittest.Repo) {
			r.Remove("run.sh")
			r.Write("bin/run", lines("run", 5))
			r.Chmod("bin/run", 0o755)
		},
		check: func(t *testing.T, files []*File) {
			f := byPath(t, files, 1)["bin/run"]
			if f.Status != Renamed || f.OldPath != "run.sh" || f.OldMode != "100644" || f.NewMode != "100755" || len(f.Hunks) != 0 || !f.ModeOnly() {
				t.Errorf("%+v", f)
			}
		},
	},
	{
		// diffpal does not ask for copies (no --find-copies in DiffArgs),
		// but the parser reads them.
		name:  "copy",
		flags: []string{"--find-copies-harder"},
		base:  func(r *gittest.Repo) { r.Write("src.go", lines("src", 10)) },
		head: func(r *gittest.Repo) {
			r.Write("copy-same.go", lines("src", 10))
			r.Write("copy-edited.go", lines("src", 10)+"extra\n")
		},
		check: func(t *testing.T, files []*File) {
			m := byPath(t, files, 2)
			if f := m["copy-same.go"]; f.Status != Copied || f.OldPath != "src.go" || f.Similarity != 100 || len(f.Hunks) != 0 {
				t.Errorf("pure copy: %+v", f)
			}
			if f := m["copy-edited.go"]; f.Status != Copied || f.OldPath != "src.go" || f.Similarity == 100 || !slices.Equal(texts(f.Added()), []string{"extra"}) {
				t.Errorf("edited copy: %+v", f)
			}
		},
	},
	{
		name: "binary",
		base: func(r *gittest.Repo) {
			r.Write("mod.bin", "\x00\x01\x02old")
			r.Write("gone.bin", "\x00gone")
		},
		head: func(r *gittest.Repo) {
			r.Write("mod.bin", "\x00\x01\x02new")
			r.Remove("gone.bin")
			r.Write("new.bin", "\x89PNG\r\n\x1a\n\x00")
			r.Write("with space.bin", "\x00spaced")
		},
		check: func(t *testing.T, files []*File) {
			m := byPath(t, files, 4)
			want := map[string]string{"mod.bin": Modified, "gone.bin": Deleted, "new.bin": Added, "with space.bin": Added}
			for p, status := range want {
				if f := m[p]; f == nil || !f.Binary || f.Status != status || len(f.Hunks) != 0 || f.ModeOnly() {
					t.Errorf("%s: %+v", p, f)
				}
			}
		},
	},
	{
		name: "mode",
		base: func(r *gittest.Repo) {
			r.Write("exec.sh", lines("exec", 3))
			r.Write("unexec.sh", lines("unexec", 3))
			r.Chmod("unexec.sh", 0o755)
			r.Write("both.sh", lines("both", 3))
		},
		head: func(r *gittest.Repo) {
			r.Chmod("exec.sh", 0o755)
			r.Chmod("unexec.sh", 0o644)
			r.Write("both.sh", lines("both", 3)+"more\n")
			r.Chmod("both.sh", 0o755)
		},
		check: func(t *testing.T, files []*File) {
			m := byPath(t, files, 3)
			if f := m["exec.sh"]; !f.ModeOnly() || f.OldMode != "100644" || f.NewMode != "100755" || f.OldBlob != "" {
				t.Errorf("exec.sh: %+v", f)
			}
			if f := m["unexec.sh"]; !f.ModeOnly() || f.OldMode != "100755" || f.NewMode != "100644" {
				t.Errorf("unexec.sh: %+v", f)
			}
			if f := m["both.sh"]; f.ModeOnly() || f.OldMode != "100644" || f.NewMode != "100755" || len(f.Added()) != 1 {
				t.Errorf("both.sh: %+v", f)
			}
		},
	},
	{
		name:  "quoted-paths",
		base:  addAll(awkwardPaths),
		head:  editAll(awkwardPaths),
		check: checkPaths(awkwardPaths),
	},
	{
		name:   "quoted-paths-quotepath",
		config: []string{"core.quotePath=true"},
		base:   addAll(awkwardPaths),
		head:   editAll(awkwardPaths),
		check:  checkPaths(awkwardPaths),
	},
	{
		name:  "quoted-paths-added",
		head:  addAll(awkwardPaths),
		check: checkAdded(awkwardPaths),
	},
	{
		name:  "unicode-paths",
		base:  addAll(unicodePaths),
		head:  editAll(unicodePaths),
		check: checkPaths(unicodePaths),
	},
	{
		name:   "unicode-paths-quotepath",
		config: []string{"core.quotePath=true"},
		base:   addAll(unicodePaths),
		head:   editAll(unicodePaths),
		check:  checkPaths(unicodePaths),
	},
	{
		name: "unicode-rename",
		base: func(r *gittest.Repo) { r.Write("über.txt", lines("uber", 10)) },
		head: func(r *gittest.Repo) {
			r.Remove("über.txt")
			r.Write("日本/über.txt", lines("uber", 10)+"mehr\n")
		},
		check: func(t *testing.T, files []*File) {
			f := byPath(t, files, 1)["日本/über.txt"]
			if f.Status != Renamed || f.OldPath != "über.txt" || !slices.Equal(texts(f.Added()), []string{"mehr"}) {
				t.Errorf("%+v", f)
			}
		},
	},
	{
		name: "submodule-add",
		head: func(r *gittest.Repo) {
			subRepo(r, "sub", "one")
			r.Write(".gitmodules", "[submodule \"sub\"]\n\tpath = sub\n\turl = ./sub\n")
		},
		check: func(t *testing.T, files []*File) {
			m := byPath(t, files, 2)
			if f := m["sub"]; !f.Submodule || f.Status != Added || f.NewMode != "160000" || len(f.Hunks) != 0 || f.NewBlob == "" {
				t.Errorf("sub: %+v", f)
			}
			if f := m[".gitmodules"]; f.Submodule || f.Status != Added || len(f.Added()) != 3 {
				t.Errorf(".gitmodules: %+v", f)
			}
		},
	},
	{
		name: "submodule-update",
		base: func(r *gittest.Repo) {
			subRepo(r, "sub", "one")
			subRepo(r, "gone", "gone")
			r.Write(".gitmodules", "[submodule \"sub\"]\n\tpath = sub\n\turl = ./sub\n[submodule \"gone\"]\n\tpath = gone\n\turl = ./gone\n")
		},
		head: func(r *gittest.Repo) {
			subRepo(r, "sub", "two")
			if err := os.RemoveAll(filepath.Join(r.Dir, "gone")); err != nil {
				r.T.Fatal(err)
			}
			r.Write(".gitmodules", "[submodule \"sub\"]\n\tpath = sub\n\turl = ./sub\n")
		},
		check: func(t *testing.T, files []*File) {
			m := byPath(t, files, 3)
			if f := m["sub"]; !f.Submodule || f.Status != Modified || f.OldBlob == "" || f.NewBlob == "" || f.OldBlob == f.NewBlob || len(f.Hunks) != 0 || f.ModeOnly() {
				t.Errorf("sub: %+v", f)
			}
			if f := m["gone"]; !f.Submodule || f.Status != Deleted || f.OldMode != "160000" || len(f.Hunks) != 0 {
				t.Errorf("gone: %+v", f)
			}
		},
	},
	{
		name: "no-newline",
		base: func(r *gittest.Repo) {
			r.Write("gains-eol.txt", "a\nb")
			r.Write("loses-eol.txt", "a\nb\n")
			r.Write("both.txt", "a\nb")
			r.Write("context.txt", "a\nb\nc\nd")
			r.Write("gone.txt", "gone")
		},
		head: func(r *gittest.Repo) {
			r.Write("gains-eol.txt", "a\nb\n")
			r.Write("loses-eol.txt", "a\nb")
			r.Write("both.txt", "a\nB")
			r.Write("context.txt", "a\nB\nc\nd")
			r.Remove("gone.txt")
			r.Write("new.txt", "new")
		},
		check: func(t *testing.T, files []*File) {
			m := byPath(t, files, 6)
			noEOL := func(p string) string {
				var out []string
				for _, h := range m[p].Hunks {
					for _, l := range h.Lines {
						if l.NoEOL {
							out = append(out, string(l.Kind)+l.Text)
						}
					}
				}
				return strings.Join(out, " ")
			}
			want := map[string]string{
				"gains-eol.txt": "-b", "loses-eol.txt": "+b", "both.txt": "-b +B",
				"context.txt": " d", "gone.txt": "-gone", "new.txt": "+new",
			}
			for p, w := range want {
				if got := noEOL(p); got != w {
					t.Errorf("%s: no-EOL lines %q, want %q", p, got, w)
				}
			}
		},
	},
	{
		name: "crlf",
		base: func(r *gittest.Repo) {
			r.Write("dos.txt", "one\r\ntwo\r\nthree\r\n")
			r.Write("to-dos.txt", "one\ntwo\n")
			r.Write("mixed.txt", "lf\ncrlf\r\n")
		},
		head: func(r *gittest.Repo) {
			r.Write("dos.txt", "one\r\nTWO\r\nthree\r\n\r\nfour")
			r.Write("to-dos.txt", "one\r\ntwo\r\n")
			r.Write("mixed.txt", "lf\r\ncrlf\n\rcr only\r")
		},
		check: func(t *testing.T, files []*File) {
			m := byPath(t, files, 3)
			if got := texts(m["dos.txt"].Added()); !slices.Equal(got, []string{"TWO\r", "\r", "four"}) {
				t.Errorf("dos.txt added %q", got)
			}
			if got := texts(m["to-dos.txt"].Removed()); !slices.Equal(got, []string{"one", "two"}) {
				t.Errorf("to-dos.txt removed %q", got)
			}
			if got := texts(m["to-dos.txt"].Added()); !slices.Equal(got, []string{"one\r", "two\r"}) {
				t.Errorf("to-dos.txt added %q", got)
			}
			if got := texts(m["mixed.txt"].Added()); !slices.Equal(got, []string{"lf\r", "crlf", "\rcr only\r"}) {
				t.Errorf("mixed.txt added %q", got)
			}
		},
	},
	{
		name: "symlink",
		base: func(r *gittest.Repo) {
			r.Write("target.txt", lines("target", 2))
			symlink(r, "target.txt", "retarget-link")
			symlink(r, "target.txt", "becomes-file")
		},
		head: func(r *gittest.Repo) {
			symlink(r, "target.txt", "new-link")
			symlink(r, "elsewhere/target.txt", "retarget-link")
			r.Remove("becomes-file")
			r.Write("becomes-file", lines("now a file", 1))
		},
		check: func(t *testing.T, files []*File) {
			if len(files) != 4 {
				t.Fatalf("%d files, want 4", len(files))
			}
			// A type change is a deletion and an addition of one path.
			if f := files[0]; f.Path() != "becomes-file" || f.Status != Deleted || f.OldMode != "120000" {
				t.Errorf("typechange, old side: %+v", f)
			}
			if f := files[1]; f.Path() != "becomes-file" || f.Status != Added || f.NewMode != "100644" {
				t.Errorf("typechange, new side: %+v", f)
			}
			if f := files[2]; f.Path() != "new-link" || f.Status != Added || f.NewMode != "120000" || !slices.Equal(texts(f.Added()), []string{"target.txt"}) {
				t.Errorf("new link: %+v", f)
			}
			if f := files[3]; f.Path() != "retarget-link" || f.Status != Modified || f.NewMode != "120000" || !slices.Equal(texts(f.Added()), []string{"elsewhere/target.txt"}) || !f.Added()[0].NoEOL {
				t.Errorf("retargeted link: %+v", f)
			}
		},
	},
}

// TestGenerateFixtures rebuilds every testdata/golden/*.diff from real git:
//
//	go test ./internal/diff -run GenerateFixtures -fixtures
//
// then `go test ./internal/diff -run Golden -update` rewrites the .json.
// The .diff files are committed, so the other tests need no git; the
// output of another git version may differ in details (similarity
// percentages, hunk placement), which is why this only runs on request.
func TestGenerateFixtures(t *testing.T) {
	if !*fixtures {
		t.Skip("run with -fixtures to regenerate testdata/golden/*.diff")
	}
	// Neither the user's nor the system's config may shape the fixtures.
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", home)
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	if err := os.MkdirAll(goldenDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range goldenCases {
		t.Run(c.name, func(t *testing.T) {
			r := gittest.New(t)
			if c.base != nil {
				c.base(r)
			}
			base := r.Commit("base")
			if c.head != nil {
				c.head(r)
			}
			head := r.Commit("head")
			out := realDiff(t, r.Dir, c, base, head)
			if len(out) == 0 {
				t.Fatal("empty diff")
			}
			if err := os.WriteFile(filepath.Join(goldenDir, c.name+".diff"), out, 0o644); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// realDiff is git.Runner.Diff, with the case's config and flags added.
func realDiff(t *testing.T, dir string, c goldenCase, base, head string) []byte {
	t.Helper()
	r := &git.Runner{Dir: dir}
	ctx := context.Background()
	if len(c.config) == 0 && len(c.flags) == 0 {
		out, err := r.Diff(ctx, base, head)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	var args []string
	for _, kv := range c.config {
		args = append(args, "-c", kv)
	}
	args = append(append(args, "diff"), git.DiffArgs...)
	args = append(append(args, c.flags...), "--end-of-options", base, head, "--")
	out, err := r.Run(ctx, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestGolden parses each testdata/golden/*.diff (real git output, see
// TestGenerateFixtures), checks the case's expectations and invariants
// every parse must meet, and compares the parse with the .json beside it
// (go test ./internal/diff -run Golden -update to accept a change).
func TestGolden(t *testing.T) {
	diffs, _ := filepath.Glob(filepath.Join(goldenDir, "*.diff"))
	var names []string
	for _, d := range diffs {
		names = append(names, strings.TrimSuffix(filepath.Base(d), ".diff"))
	}
	var want []string
	for _, c := range goldenCases {
		want = append(want, c.name)
	}
	slices.Sort(names)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("fixtures %q, cases %q (regenerate with -run GenerateFixtures -fixtures)", names, want)
	}
	for _, c := range goldenCases {
		t.Run(c.name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(goldenDir, c.name+".diff"))
			if err != nil {
				t.Fatal(err)
			}
			files, err := Parse(data)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			invariants(t, files)
			c.check(t, files)
			out := goldenJSON(files)
			if !json.Valid(out) {
				t.Fatalf("golden JSON is not valid JSON:\n%s", out)
			}
			golden := filepath.Join(goldenDir, c.name+".json")
			if *update {
				if err := os.WriteFile(golden, out, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			wantJSON, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update)", err)
			}
			if !bytes.Equal(out, wantJSON) {
				t.Errorf("parse differs from %s (run with -update to accept):\n%s", golden, out)
			}
		})
	}
}

// invariants hold for every parse of git's output.
func invariants(t *testing.T, files []*File) {
	t.Helper()
	for _, f := range files {
		if f.OldPath == "" || f.NewPath == "" {
			t.Errorf("%q: empty path: %+v", f.Path(), f)
		}
		switch f.Status {
		case Added:
			if f.OldBlob != "" || f.OldPath != f.NewPath {
				t.Errorf("added %q: %+v", f.Path(), f)
			}
		case Deleted:
			if f.NewBlob != "" || f.OldPath != f.NewPath {
				t.Errorf("deleted %q: %+v", f.Path(), f)
			}
		case Renamed, Copied:
			if f.OldPath == f.NewPath || f.Similarity <= 0 || f.Similarity > 100 {
				t.Errorf("%s %q: %+v", f.Status, f.Path(), f)
			}
		case Modified:
			if f.OldPath != f.NewPath {
				t.Errorf("modified %q changes path: %+v", f.Path(), f)
			}
		default:
			t.Errorf("%q: status %q", f.Path(), f.Status)
		}
		if (f.Binary || f.Submodule) && len(f.Hunks) > 0 {
			t.Errorf("%q: binary or submodule with hunks", f.Path())
		}
		for _, h := range f.Hunks {
			oldNo, newNo := h.OldStart, h.NewStart
			for _, l := range h.Lines {
				switch l.Kind {
				case ' ':
					if l.OldNo != oldNo || l.NewNo != newNo {
						t.Errorf("%q: context line numbers %+v", f.Path(), l)
					}
					oldNo++
					newNo++
				case '-':
					if l.OldNo != oldNo || l.NewNo != 0 {
						t.Errorf("%q: removed line numbers %+v", f.Path(), l)
					}
					oldNo++
				case '+':
					if l.NewNo != newNo || l.OldNo != 0 {
						t.Errorf("%q: added line numbers %+v", f.Path(), l)
					}
					newNo++
				}
				if strings.Contains(l.Text, "\n") {
					t.Errorf("%q: line contains a newline: %q", f.Path(), l.Text)
				}
			}
		}
	}
}

// goldenJSON renders a parse as indented JSON with a fixed field order;
// each hunk line is one compact object on its own line.
func goldenJSON(files []*File) []byte {
	items := make([]string, len(files))
	for i, f := range files {
		added, removed := f.Stats()
		hunks := make([]string, len(f.Hunks))
		for j, h := range f.Hunks {
			ls := make([]string, len(h.Lines))
			for k, l := range h.Lines {
				s := fmt.Sprintf(`{"kind": %s, "old_no": %d, "new_no": %d, "text": %s`, jstr(string(l.Kind)), l.OldNo, l.NewNo, jstr(l.Text))
				if l.NoEOL {
					s += `, "no_eol": true`
				}
				ls[k] = s + "}"
			}
			hunks[j] = object(3,
				"old_start", strconv.Itoa(h.OldStart), "old_lines", strconv.Itoa(h.OldLines),
				"new_start", strconv.Itoa(h.NewStart), "new_lines", strconv.Itoa(h.NewLines),
				"section", jstr(h.Section),
				"lines", array(4, ls))
		}
		items[i] = object(1,
			"path", jstr(f.Path()),
			"status", jstr(f.Status),
			"old_path", jstr(f.OldPath),
			"new_path", jstr(f.NewPath),
			"old_mode", jstr(f.OldMode),
			"new_mode", jstr(f.NewMode),
			"old_blob", jstr(f.OldBlob),
			"new_blob", jstr(f.NewBlob),
			"similarity", strconv.Itoa(f.Similarity),
			"binary", strconv.FormatBool(f.Binary),
			"submodule", strconv.FormatBool(f.Submodule),
			"mode_only", strconv.FormatBool(f.ModeOnly()),
			"added", strconv.Itoa(added),
			"removed", strconv.Itoa(removed),
			"added_spans", spans(f.Spans(FilterAdded)),
			"context_spans", spans(f.Spans(FilterDiffContext)),
			"hunks", array(2, hunks))
	}
	return []byte(array(0, items) + "\n")
}

func indent(depth int) string { return strings.Repeat("  ", depth) }

// object renders key, value pairs (values already JSON) at depth.
func object(depth int, kv ...string) string {
	var b strings.Builder
	b.WriteString("{")
	for i := 0; i < len(kv); i += 2 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "\n%s%s: %s", indent(depth+1), jstr(kv[i]), kv[i+1])
	}
	b.WriteString("\n" + indent(depth) + "}")
	return b.String()
}

// array renders items (already JSON, rendered for depth+1) at depth.
func array(depth int, items []string) string {
	if len(items) == 0 {
		return "[]"
	}
	var b strings.Builder
	b.WriteString("[")
	for i, it := range items {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("\n" + indent(depth+1) + it)
	}
	b.WriteString("\n" + indent(depth) + "]")
	return b.String()
}

func spans(ss []Span) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = fmt.Sprintf("[%d, %d]", s.Start, s.End)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// jstr is a JSON string; a string that is not valid UTF-8 (JSON would
// replace its bad bytes) becomes {"invalid_utf8": "<Go-quoted bytes>"}.
func jstr(s string) string {
	if !utf8.ValidString(s) {
		return `{"invalid_utf8": ` + jstr(strconv.Quote(s)) + `}`
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return strings.TrimSuffix(buf.String(), "\n")
}
