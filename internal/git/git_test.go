package git_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/diffpalhq/diffpal/internal/diff"
	"github.com/diffpalhq/diffpal/internal/git"
	"github.com/diffpalhq/diffpal/internal/git/gittest"
)

func TestRangeDefaults(t *testing.T) {
	ctx := context.Background()
	repo := gittest.New(t)
	repo.Write("a.txt", "one\n")
	root := repo.Commit("root")
	repo.Write("a.txt", "one\ntwo\n")
	second := repo.Commit("second")
	r := &git.Runner{Dir: repo.Dir}

	// On the default branch: the last commit.
	rg, err := r.ResolveRange(ctx, git.RangeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rg.DiffBase != root || rg.Head != second || !strings.Contains(rg.Why, "last commit") || !rg.CheckedOut {
		t.Errorf("on main: %+v", rg)
	}
	// A head that is not checked out is not read from the work tree.
	if rg, err := r.ResolveRange(ctx, git.RangeOptions{Base: root, Head: root}); err != nil || rg.CheckedOut {
		t.Errorf("head %s while %s is checked out: %+v %v", root, second, rg, err)
	}

	// On a feature branch: merge-base with main, even after main moved.
	repo.Git("checkout", "-q", "-b", "feature")
	repo.Write("b.txt", "feature\n")
	feat := repo.Commit("feature")
	repo.Git("checkout", "-q", "main")
	repo.Write("c.txt", "main moved\n")
	repo.Commit("main moves")
	repo.Git("checkout", "-q", "feature")
	rg, err = r.ResolveRange(ctx, git.RangeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rg.MergeBase != second || rg.DiffBase != second || rg.Head != feat || rg.BaseRef != "main" {
		t.Errorf("feature: %+v", rg)
	}
	// --no-merge-base diffs against main itself.
	rg, err = r.ResolveRange(ctx, git.RangeOptions{NoMergeBase: true})
	if err != nil || rg.MergeBase != "" || rg.DiffBase == second {
		t.Errorf("no-merge-base: %+v %v", rg, err)
	}
	// --since narrows to later changes.
	repo.Write("b.txt", "feature\nmore\n")
	later := repo.Commit("more")
	rg, err = r.ResolveRange(ctx, git.RangeOptions{Since: feat})
	if err != nil || rg.DiffBase != feat || rg.Head != later || rg.MergeBase != second {
		t.Errorf("since: %+v %v", rg, err)
	}
	if _, err := r.ResolveRange(ctx, git.RangeOptions{Since: "main"}); err == nil || !strings.Contains(err.Error(), "not an ancestor") {
		t.Errorf("since a non-ancestor: %v", err)
	}
	// Bad revisions are named.
	if _, err := r.ResolveRange(ctx, git.RangeOptions{Base: "nope"}); err == nil || !strings.Contains(err.Error(), `unknown revision "nope"`) {
		t.Errorf("bad base: %v", err)
	}
	if _, err := r.ResolveRange(ctx, git.RangeOptions{Base: "--output=x"}); err == nil || !strings.Contains(err.Error(), "must not start with '-'") {
		t.Errorf("option-like base: %v", err)
	}
	// Uncommitted.
	rg, err = r.ResolveRange(ctx, git.RangeOptions{Uncommitted: true})
	if err != nil || !rg.Worktree || rg.DiffBase != later {
		t.Errorf("uncommitted: %+v %v", rg, err)
	}
}

func TestRangeNoCommitsAndRoot(t *testing.T) {
	ctx := context.Background()
	repo := gittest.New(t)
	r := &git.Runner{Dir: repo.Dir}
	rg, err := r.ResolveRange(ctx, git.RangeOptions{})
	if err != nil || !rg.Worktree || rg.DiffBase != git.EmptyTree {
		t.Errorf("no commits: %+v %v", rg, err)
	}
	repo.Write("a.txt", "x\n")
	repo.Commit("root")
	rg, err = r.ResolveRange(ctx, git.RangeOptions{})
	if err != nil || rg.DiffBase != git.EmptyTree || !strings.Contains(rg.Why, "root commit") {
		t.Errorf("root commit: %+v %v", rg, err)
	}
}

func TestShallowCloneExplained(t *testing.T) {
	ctx := context.Background()
	up := gittest.New(t)
	up.Write("a.txt", "1\n")
	up.Commit("1")
	up.Write("a.txt", "2\n")
	up.Commit("2")
	up.Git("checkout", "-q", "-b", "feature")
	up.Write("a.txt", "3\n")
	up.Commit("3")
	up.Git("checkout", "-q", "main")

	clone := gittest.New(t)
	clone.Git("fetch", "-q", "--depth=1", "file://"+up.Dir, "feature:feature")
	clone.Git("checkout", "-q", "feature")
	r := &git.Runner{Dir: clone.Dir}
	_, err := r.ResolveRange(ctx, git.RangeOptions{Base: "main"})
	var se *git.ShallowError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "fetch-depth: 0") {
		t.Errorf("want a shallow-clone explanation, got %v", err)
	}
}

// TestDiffAwkwardChanges runs real git and parses its output: paths with
// spaces, quotes and unicode, a rename, a binary file, a deletion, a mode
// change, a missing final newline, a submodule, and user config that
// would change the diff if it were honoured.
func TestDiffAwkwardChanges(t *testing.T) {
	ctx := context.Background()
	sub := gittest.New(t)
	sub.Write("s.txt", "s\n")
	sub.Commit("sub")

	repo := gittest.New(t)
	repo.Write("keep.go", "package x\n\nfunc A() {}\n")
	repo.Write("old name.txt", strings.Repeat("same line\n", 20))
	repo.Write("gone.txt", "bye\n")
	repo.Write("script.sh", "echo hi\n")
	repo.Write("img.bin", "\x00\x01\x02")
	base := repo.Commit("base")

	// Config that a careless runner would obey.
	repo.Git("config", "diff.noprefix", "true")
	repo.Git("config", "diff.external", "false")
	repo.Git("config", "core.quotePath", "true")
	repo.Git("config", "diff.context", "0")

	repo.Write("keep.go", "package x\n\nfunc A() {}\n\nfunc B() { panic(1) }")
	repo.Git("mv", "old name.txt", "new \"name\" ü.txt")
	repo.Write("new \"name\" ü.txt", strings.Repeat("same line\n", 20)+"added\n")
	repo.Remove("gone.txt")
	repo.Chmod("script.sh", 0o755)
	repo.Write("img.bin", "\x00\x01\x03\x04")
	repo.Write("tab\tname.go", "package y\n")
	repo.Git("-c", "protocol.file.allow=always", "submodule", "add", "-q", sub.Dir, "vendor/sub")
	head := repo.Commit("change")

	r := &git.Runner{Dir: repo.Dir}
	raw, err := r.Diff(ctx, base, head)
	if err != nil {
		t.Fatal(err)
	}
	files, err := diff.Parse(raw)
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, raw)
	}
	byPath := map[string]*diff.File{}
	for _, f := range files {
		byPath[f.Path()] = f
	}
	check := func(path, status string) *diff.File {
		t.Helper()
		f := byPath[path]
		if f == nil {
			t.Fatalf("no file %q in %v", path, keys(byPath))
		}
		if f.Status != status {
			t.Errorf("%s: status %s, want %s", path, f.Status, status)
		}
		return f
	}
	k := check("keep.go", diff.Modified)
	added := k.Added()
	if len(added) != 2 || added[1].Text != "func B() { panic(1) }" || added[1].NewNo != 5 || !added[1].NoEOL {
		t.Errorf("keep.go added lines: %+v", added)
	}
	rn := check("new \"name\" ü.txt", diff.Renamed)
	if rn.OldPath != "old name.txt" || len(rn.Added()) != 1 || rn.Added()[0].NewNo != 21 {
		t.Errorf("rename: %+v", rn)
	}
	check("gone.txt", diff.Deleted)
	m := check("script.sh", diff.Modified)
	if !m.ModeOnly() || m.NewMode != "100755" {
		t.Errorf("mode change: %+v", m)
	}
	if b := check("img.bin", diff.Modified); !b.Binary || len(b.Hunks) != 0 {
		t.Errorf("binary: %+v", b)
	}
	if tn := check("tab\tname.go", diff.Added); len(tn.Added()) != 1 {
		t.Errorf("tab name: %+v", tn)
	}
	if s := check("vendor/sub", diff.Added); !s.Submodule || len(s.Hunks) != 0 {
		t.Errorf("submodule: %+v", s)
	}
	// Blobs read back through one cat-file process.
	br, err := r.Blobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer br.Close()
	data, ok, err := br.Read(k.NewBlob)
	if err != nil || !ok || !strings.HasSuffix(string(data), "panic(1) }") {
		t.Errorf("blob: %q %v %v", data, ok, err)
	}
	if _, ok, err := br.Read(strings.Repeat("e", 40)); ok || err != nil {
		t.Errorf("missing blob: ok=%v err=%v", ok, err)
	}
	// Over the limit: skipped unread, and the batch stays in step.
	if _, ok, err := br.ReadLimit(k.NewBlob, 3); ok || !errors.Is(err, git.ErrBlobTooLarge) {
		t.Errorf("blob over the limit: ok=%v err=%v", ok, err)
	}
	if again, ok, err := br.ReadLimit(k.NewBlob, len(data)); err != nil || !ok || string(again) != string(data) {
		t.Errorf("blob after a skipped one: %q %v %v", again, ok, err)
	}
}

func keys(m map[string]*diff.File) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestNotARepository(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	r := &git.Runner{Dir: dir}
	_, err := r.TopLevel(ctx)
	var nr *git.NotRepositoryError
	if !errors.Is(err, git.ErrNotRepository) || !errors.As(err, &nr) || nr.Dir != dir {
		t.Fatalf("want a *NotRepositoryError for %s, got %T %v", dir, err, err)
	}
	if msg := err.Error(); !strings.Contains(msg, "not inside a git repository") || !strings.Contains(msg, "-C/--dir") || strings.Contains(msg, "--repo-dir") {
		t.Errorf("message: %s", msg)
	}
	// Any command, not only TopLevel, says so.
	if _, err := r.UntrackedFiles(ctx); !errors.Is(err, git.ErrNotRepository) {
		t.Errorf("ls-files outside a repository: %v", err)
	}
	// A directory that does not exist is the same mistake.
	missing := filepath.Join(dir, "nope")
	_, err = (&git.Runner{Dir: missing}).TopLevel(ctx)
	if !errors.Is(err, git.ErrNotRepository) || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "-C/--dir") {
		t.Errorf("missing directory: %v", err)
	}
}

// TestErrorMessage: a failed git command names its subcommand and one
// clipped, printable line of stderr, never diffpal's -c flags.
func TestErrorMessage(t *testing.T) {
	ctx := context.Background()
	repo := gittest.New(t)
	repo.Write("a.txt", "a\n")
	repo.Commit("a")
	r := &git.Runner{Dir: repo.Dir}
	_, err := r.Diff(ctx, strings.Repeat("f", 40), "HEAD")
	var ge *git.Error
	if !errors.As(err, &ge) || ge.Subcommand() != "diff" {
		t.Fatalf("want a *git.Error from diff, got %T %v", err, err)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "git diff: fatal: ") || strings.Contains(msg, "-c") || strings.Contains(msg, "--no-ext-diff") || strings.Contains(msg, "\n") {
		t.Errorf("message: %q", msg)
	}

	long := &git.Error{Args: []string{"log", "--format=%s"}, Stderr: "warning: first\nfatal: " + strings.Repeat("\x1b[31mé", 200) + "\nhint: more\n"}
	msg = long.Error()
	if !strings.HasPrefix(msg, "git log: fatal: ") || len(msg) > len("git log: ")+300 || strings.ContainsAny(msg, "\x1b\n") || !utf8.ValidString(msg) {
		t.Errorf("long stderr: %d bytes: %q", len(msg), msg)
	}
	if msg := (&git.Error{Args: []string{"merge-base"}, Err: errors.New("exit status 1")}).Error(); msg != "git merge-base: exit status 1" {
		t.Errorf("no stderr: %q", msg)
	}
}

// TestDriverOverridesCached: the driver names are read with one `git
// config` call per Runner, not one per command, and read again when the
// Runner moves to another directory.
func TestDriverOverridesCached(t *testing.T) {
	ctx := context.Background()
	repo := gittest.New(t)
	repo.Write("a.txt", "a\n")
	repo.Commit("a")
	log := filepath.Join(t.TempDir(), "calls")
	wrapper := filepath.Join(t.TempDir(), "git")
	real, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\nfor a; do case $a in -*) ;; *=*) ;; *) echo \"$a\" >> '" + log + "'; break;; esac; done\nexec '" + real + "' \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	r := &git.Runner{Dir: repo.Dir, Git: wrapper}
	for i := 0; i < 3; i++ {
		if _, err := r.TopLevel(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Diff(ctx, git.EmptyTree, "HEAD"); err != nil {
		t.Fatal(err)
	}
	br, err := r.Blobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	br.Close()
	// A Runner made by At shares the environment whatever its Dir.
	if _, err := r.At(repo.Dir+"/.").Diff(ctx, git.EmptyTree, "HEAD"); err != nil {
		t.Fatal(err)
	}
	// Another Dir set by hand is another repository, as far as the
	// Runner knows: the drivers are looked up again.
	r.Dir = filepath.Join(repo.Dir, ".") + "/"
	if _, err := r.TopLevel(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Diff(ctx, git.EmptyTree, "HEAD"); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	calls := strings.Fields(string(data))
	// rev-parse converts no content: it never waits for the drivers.
	want := []string{"rev-parse", "rev-parse", "rev-parse", "config", "diff", "cat-file", "diff", "rev-parse", "config", "diff"}
	if strings.Join(calls, " ") != strings.Join(want, " ") {
		t.Errorf("git calls %v, want %v", calls, want)
	}
}

// TestOriginURL: the origin URL comes with the driver overrides, from the
// one git config call (the last value when there are several, as git
// config --get answers), and is "" when unset.
func TestOriginURL(t *testing.T) {
	ctx := context.Background()
	repo := gittest.New(t)
	repo.Write("a.txt", "a\n")
	repo.Commit("a")
	r := &git.Runner{Dir: repo.Dir}
	if u, err := r.OriginURL(ctx); err != nil || u != "" {
		t.Fatalf("no origin: %q, %v", u, err)
	}
	repo.Git("config", "remote.origin.url", "https://example.com/first.git")
	repo.Git("config", "--add", "remote.origin.url", "git@github.com:o/r.git")
	repo.Git("config", "filter.lfs.clean", "git-lfs clean -- %f")
	repo.Git("config", "remote.upstream.url", "https://example.com/up.git")
	r = &git.Runner{Dir: repo.Dir}
	want := strings.TrimSpace(repo.Git("config", "--get", "remote.origin.url"))
	if u, err := r.OriginURL(ctx); err != nil || u != want || u != "git@github.com:o/r.git" {
		t.Fatalf("origin %q, %v; want %q", u, err, want)
	}
	// (noexec_test.go checks that the drivers found by the same call are
	// still neutralised.)
}

// TestLocate: the root and the named commits from one rev-parse, the
// commits then answered by ResolveCommit (on Runners made by At too)
// without git; anything that is not one commit each falls back.
func TestLocate(t *testing.T) {
	ctx := context.Background()
	repo := gittest.New(t)
	repo.Write("a.txt", "a\n")
	first := repo.Commit("a")
	repo.Write("a.txt", "b\n")
	second := repo.Commit("b")
	repo.Git("tag", "-a", "-m", "annotated", "v1", first)
	sub := filepath.Join(repo.Dir, "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	want, err := (&git.Runner{Dir: sub}).TopLevel(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r := &git.Runner{Dir: sub}
	root, err := r.Locate(ctx, "HEAD", "v1", "", "-x", "HEAD")
	if err != nil || root != want {
		t.Fatalf("Locate: %q %v, want %q", root, err, want)
	}
	// The peeled tag, as ResolveCommit peels it; from a Runner made by At
	// and with git made unrunnable, so the answers must be remembered.
	at := r.At(root)
	at.Git = filepath.Join(t.TempDir(), "no-git")
	for rev, sha := range map[string]string{"HEAD": second, "v1": first} {
		if got, err := at.ResolveCommit(ctx, rev); err != nil || got != sha {
			t.Errorf("ResolveCommit(%s) after Locate: %q %v, want %s", rev, got, err, sha)
		}
	}
	// A range, an unknown revision: the root all the same, and the revs
	// are left to ResolveCommit, which reports them.
	for _, revs := range [][]string{{"HEAD~1..HEAD"}, {"HEAD", "no-such-rev"}} {
		r := &git.Runner{Dir: sub}
		if root, err := r.Locate(ctx, revs...); err != nil || root != want {
			t.Errorf("Locate(%q): %q %v", revs, root, err)
		}
		if _, err := r.ResolveCommit(ctx, revs[len(revs)-1]); err == nil {
			t.Errorf("ResolveCommit(%q) after Locate: no error", revs[len(revs)-1])
		}
	}
	// The merge base, from the same process: remembered when there is one.
	repo.Git("checkout", "-q", "-b", "side", first)
	repo.Write("s.txt", "s\n")
	side := repo.Commit("side")
	lr := &git.Runner{Dir: sub}
	if _, err := lr.LocateRange(ctx, "side", "main", "side", "main"); err != nil {
		t.Fatal(err)
	}
	lr.Git = filepath.Join(t.TempDir(), "no-git")
	if mb, err := lr.MergeBase(ctx, side, second); err != nil || mb != first {
		t.Errorf("MergeBase after LocateRange: %q %v, want %s", mb, err, first)
	}
	// Unrelated histories have none: nothing is remembered, git is asked.
	repo.Git("checkout", "-q", "--orphan", "lonely")
	repo.Write("l.txt", "l\n")
	lonely := repo.Commit("lonely")
	lr = &git.Runner{Dir: sub}
	if _, err := lr.LocateRange(ctx, "lonely", "main", "lonely", "main"); err != nil {
		t.Fatal(err)
	}
	var nm *git.NoMergeBaseError
	if _, err := lr.MergeBase(ctx, lonely, second); !errors.As(err, &nm) {
		t.Errorf("MergeBase of unrelated histories after LocateRange: %v", err)
	}
	if _, err := (&git.Runner{Dir: t.TempDir()}).Locate(ctx, "HEAD"); !errors.Is(err, git.ErrNotRepository) {
		t.Errorf("outside a repository: %v", err)
	}
}
