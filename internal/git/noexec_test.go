package git_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/diffpalhq/diffpal/internal/git"
	"github.com/diffpalhq/diffpal/internal/git/gittest"
)

// The repository under review may be hostile, and so may its .git/config
// (a CI step that ran the pull request's code can write it) and even the
// global config. These tests configure every key that makes git execute a
// command, each one set to a command that would leave a marker file, and
// run every git operation a review performs in every mode: no marker may
// appear.

// hostileKey is a config key that names a command. value turns the marker
// path into the configured value.
type hostileKey struct {
	key   string
	value func(marker string) string
}

// sh is a shell command that leaves the marker; the trailing ":" absorbs
// the arguments git appends ("$@") when it runs a command with arguments.
func sh(marker string) string { return "touch '" + marker + "'; :" }

// hostileKeys are the keys, with driver names matching the attributes in
// hostileAttributes: "evil" (filter and diff), "proc" (a long-running filter
// process), "Odd=na.me" (a name with '=', '.' and upper case, which must
// not break the overrides).
func hostileKeys(askpass string) []hostileKey {
	keys := []hostileKey{
		{"core.fsmonitor", sh},
		{"filter.evil.clean", sh},
		{"filter.evil.smudge", sh},
		{"filter.evil.required", func(string) string { return "true" }},
		// Not required: a failing required filter would stop git before
		// it reached the files of the other drivers.
		{"filter.proc.process", sh},
		{"filter.Odd=na.me.clean", sh},
		{"filter.Odd=na.me.required", func(string) string { return "true" }},
		{"diff.evil.textconv", sh},
		{"diff.evil.command", sh},
		{"diff.Odd=na.me.textconv", sh},
		{"diff.external", sh},
		{"core.pager", sh},
		{"pager.diff", sh},
		{"pager.log", sh},
		{"core.editor", sh},
		{"sequence.editor", sh},
		{"credential.helper", func(m string) string { return "!" + sh(m) }},
		{"core.sshCommand", sh},
		{"core.askPass", func(string) string { return askpass }},
		{"core.gitProxy", sh},
		{"gpg.program", sh},
		{"log.showSignature", func(string) string { return "true" }},
		// A lazy fetch from a "promisor" remote over the ext:: transport,
		// which runs its URL as a command; reading a missing object starts it.
		{"remote.evil.url", func(m string) string { return "ext::sh -c touch% " + m }},
		{"remote.evil.promisor", func(string) string { return "true" }},
		{"protocol.ext.allow", func(string) string { return "always" }},
		{"protocol.allow", func(string) string { return "always" }},
	}
	return keys
}

const hostileAttributes = "*.txt filter=evil diff=evil\n*.proc filter=proc diff=evil\n*.odd filter=Odd=na.me diff=Odd=na.me\n"

// hookNames are hooks a careless runner might trigger (index writes,
// ref updates, checkout, gc).
var hookNames = []string{"post-index-change", "reference-transaction", "post-checkout", "pre-auto-gc", "post-merge", "pre-commit", "fsmonitor-watchman"}

// hostileEnv is a hostile setup for one scenario: markers go to Marks.
type hostileEnv struct {
	Marks string
}

// markerName names a marker by scope and key, so a failure says which one ran.
func markerName(scope, key string) string {
	return scope + "--" + strings.NewReplacer("/", "_", "=", "_").Replace(key)
}

// script writes an executable shell script that leaves a marker.
func script(t *testing.T, path, marker string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\ntouch '"+marker+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// scopes are where the hostile configuration is put, one at a time (a
// single-valued key set in two scopes would shadow one of them).
var scopes = []string{"local", "global", "xdg", "system", "env"}

// arm makes the repository or the environment hostile in one scope. It must
// run after the repository is built (gittest's own git calls would trip the
// traps).
func arm(t *testing.T, repo *gittest.Repo, scope string) *hostileEnv {
	t.Helper()
	h := &hostileEnv{Marks: t.TempDir()}
	mark := func(key string) string { return filepath.Join(h.Marks, markerName(scope, key)) }

	home := t.TempDir()
	xdg := t.TempDir()
	sys := filepath.Join(t.TempDir(), "gitconfig")
	file := map[string]string{
		"local":  filepath.Join(repo.Dir, ".git", "config"),
		"global": filepath.Join(home, ".gitconfig"),
		"xdg":    filepath.Join(xdg, "git", "config"),
		"system": sys,
	}[scope]
	if file != "" {
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		askpass := filepath.Join(h.Marks, "bin", "askpass")
		script(t, askpass, mark("core.askPass"))
		hooks := filepath.Join(t.TempDir(), "hooks")
		for _, hk := range hookNames {
			script(t, filepath.Join(hooks, hk), mark("hook-"+hk))
		}
		for _, k := range hostileKeys(askpass) {
			repo.Git("config", "--file", file, k.key, k.value(mark(k.key)))
		}
		repo.Git("config", "--file", file, "core.hooksPath", hooks)
	}
	if scope == "local" {
		// The repository's own hooks directory, for runners that reset
		// core.hooksPath to the default, and its own attributes file.
		for _, hk := range hookNames {
			script(t, filepath.Join(repo.Dir, ".git", "hooks", hk), mark("repo-hook-"+hk))
		}
		info := filepath.Join(repo.Dir, ".git", "info")
		if err := os.MkdirAll(info, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(info, "attributes"), []byte(hostileAttributes), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", xdg)
	t.Setenv("GIT_CONFIG_SYSTEM", sys)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "")
	// A GIT_CONFIG file is all that `git config` reads: it would hide the
	// configured drivers from a runner that enumerates them.
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GIT_CONFIG", empty)
	if scope == "env" {
		// Configuration and commands in the environment.
		t.Setenv("GIT_CONFIG_PARAMETERS", "'core.fsmonitor'='"+sh(mark("GIT_CONFIG_PARAMETERS"))+"'")
		t.Setenv("GIT_CONFIG_COUNT", "1")
		t.Setenv("GIT_CONFIG_KEY_0", "filter.evil.clean")
		t.Setenv("GIT_CONFIG_VALUE_0", sh(mark("GIT_CONFIG_COUNT")))
		for _, v := range []string{"GIT_EXTERNAL_DIFF", "GIT_PAGER", "PAGER", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "GIT_SSH_COMMAND", "GIT_PROXY_COMMAND"} {
			t.Setenv(v, sh(mark(v)))
		}
		for _, v := range []string{"GIT_ASKPASS", "SSH_ASKPASS", "GIT_SSH"} {
			p := filepath.Join(h.Marks, "bin", "env-"+v)
			script(t, p, mark(v))
			t.Setenv(v, p)
		}
	}
	return h
}

// check fails the test for every marker left behind.
func (h *hostileEnv) check(t *testing.T) {
	t.Helper()
	entries, err := os.ReadDir(h.Marks)
	if err != nil {
		t.Fatal(err)
	}
	var ran []string
	for _, e := range entries {
		if e.Name() != "bin" {
			ran = append(ran, e.Name())
		}
	}
	sort.Strings(ran)
	if len(ran) > 0 {
		t.Errorf("git ran configured commands (scope--key): %s", strings.Join(ran, ", "))
	}
}

// dirty changes tracked files and makes others stat-dirty (same content,
// new mtime), so git has to read them through their clean filters, and adds
// untracked ones.
func dirty(t *testing.T, repo *gittest.Repo, changed, touched []string) {
	t.Helper()
	later := time.Now().Add(2 * time.Hour)
	for _, p := range changed {
		f, err := os.OpenFile(filepath.Join(repo.Dir, p), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(f, "changed in the work tree")
		f.Close()
	}
	for _, p := range append(append([]string(nil), changed...), touched...) {
		if err := os.Chtimes(filepath.Join(repo.Dir, p), later, later); err != nil {
			t.Fatal(err)
		}
	}
	repo.Write("untracked.txt", "new\n")
	repo.Write("untracked.proc", "new\n")
}

const missingObject = "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee"

// readAll reads objects and one missing object (which would start a lazy
// fetch from a promisor remote).
func readAll(t *testing.T, r *git.Runner, objects ...string) {
	t.Helper()
	br, err := r.Blobs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer br.Close()
	for _, o := range objects {
		if _, _, err := br.Read(o); err != nil {
			t.Errorf("Read %s: %v", o, err)
		}
	}
	if _, ok, err := br.Read(missingObject); ok || err != nil {
		t.Errorf("Read missing: ok=%v err=%v", ok, err)
	}
}

// committedRepo builds main and a feature branch with two commits touching
// files of every driver; it returns the first feature commit. The process
// filter's file sorts last: a process filter that fails stops git, which
// would hide whether the later drivers run.
func committedRepo(t *testing.T) (*gittest.Repo, string) {
	repo := gittest.New(t)
	repo.Write(".gitattributes", hostileAttributes)
	repo.Write("a.txt", "a\n")
	repo.Write("z.proc", "b\n")
	repo.Write("c.odd", "c\n")
	repo.Write("same.txt", "same\n")
	repo.Commit("base")
	repo.Git("checkout", "-q", "-b", "feature")
	repo.Write("a.txt", "a\nfeature\n")
	repo.Write("z.proc", "b\nfeature\n")
	first := repo.Commit("feature 1")
	repo.Write("c.odd", "c\nfeature\n")
	repo.Write("renamed.txt", "a\nfeature\n")
	repo.Commit("feature 2")
	return repo, first
}

func TestNoConfiguredCommandRuns(t *testing.T) {
	ctx := context.Background()
	committed := func(t *testing.T, scope string, o git.RangeOptions) {
		repo, first := committedRepo(t)
		if o.Since != "" {
			o.Since = first
		}
		dirty(t, repo, []string{"a.txt", "z.proc"}, []string{"c.odd", "same.txt"})
		h := arm(t, repo, scope)
		r := &git.Runner{Dir: repo.Dir}
		if _, err := r.TopLevel(ctx); err != nil {
			t.Fatal(err)
		}
		r.CurrentBranch(ctx)
		if _, err := r.DefaultBranch(ctx); err != nil {
			t.Error(err)
		}
		if _, err := r.IsShallow(ctx); err != nil {
			t.Error(err)
		}
		rg, err := r.ResolveRange(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		if rg.Worktree {
			t.Fatalf("want a committed range, got %+v", rg)
		}
		if _, err := r.Diff(ctx, rg.DiffBase, rg.Head); err != nil {
			t.Error(err)
		}
		if _, err := r.Diff(ctx, rg.DiffBase, rg.Head, "a.txt", "c.odd"); err != nil {
			t.Error(err)
		}
		p, err := diffBlobs(ctx, r, rg.DiffBase, rg.Head)
		if err != nil || len(p.blobs) == 0 {
			t.Fatalf("DiffFiles: %v", err)
		}
		var ids []string
		for id := range p.blobs {
			ids = append(ids, id)
		}
		readAll(t, r, append(ids, rg.Head+":a.txt")...)
		if _, err := r.Subjects(ctx, rg.DiffBase, rg.Head); err != nil {
			t.Error(err)
		}
		if _, err := r.Run(ctx, "config", "--get", "remote.origin.url"); err == nil {
			t.Error("remote.origin.url is not configured")
		}
		h.check(t)
	}
	worktree := func(t *testing.T, scope string, repo *gittest.Repo, o git.RangeOptions) {
		h := arm(t, repo, scope)
		r := &git.Runner{Dir: repo.Dir}
		if _, err := r.TopLevel(ctx); err != nil {
			t.Fatal(err)
		}
		rg, err := r.ResolveRange(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		if !rg.Worktree {
			t.Fatalf("want a work-tree range, got %+v", rg)
		}
		raw, err := r.Diff(ctx, rg.DiffBase, "")
		if err != nil {
			t.Error(err)
		}
		if !strings.Contains(string(raw), "changed in the work tree") {
			t.Errorf("the work-tree diff misses the change:\n%s", raw)
		}
		if _, err := r.Diff(ctx, rg.DiffBase, "", "a.txt"); err != nil {
			t.Error(err)
		}
		names, err := r.UntrackedFiles(ctx)
		if err != nil || len(names) != 2 {
			t.Errorf("UntrackedFiles: %v %v", names, err)
		}
		readAll(t, r, ":a.txt")
		h.check(t)
	}
	for _, scope := range scopes {
		t.Run(scope, func(t *testing.T) {
			t.Run("committed range", func(t *testing.T) { committed(t, scope, git.RangeOptions{}) })
			t.Run("base and no merge-base", func(t *testing.T) {
				committed(t, scope, git.RangeOptions{Base: "main", NoMergeBase: true})
			})
			t.Run("since", func(t *testing.T) { committed(t, scope, git.RangeOptions{Since: "first"}) })
			t.Run("uncommitted", func(t *testing.T) {
				repo, _ := committedRepo(t)
				dirty(t, repo, []string{"a.txt", "z.proc", "c.odd"}, []string{"same.txt"})
				worktree(t, scope, repo, git.RangeOptions{Uncommitted: true})
			})
			t.Run("no commits", func(t *testing.T) {
				repo := gittest.New(t)
				repo.Write(".gitattributes", hostileAttributes)
				repo.Write("a.txt", "a\n")
				repo.Write("z.proc", "b\n")
				repo.Write("c.odd", "c\n")
				repo.Write("same.txt", "same\n")
				repo.Git("add", "-A")
				dirty(t, repo, []string{"a.txt", "z.proc", "c.odd"}, []string{"same.txt"})
				worktree(t, scope, repo, git.RangeOptions{})
			})
		})
	}
}

// TestSubmoduleConfigNotRun: a dirty submodule whose own config defines a
// clean filter. Checking a submodule's work tree runs `git status` inside
// it, with the submodule's config and driver names the superproject's
// overrides do not know; the work-tree diff must not look inside.
func TestSubmoduleConfigNotRun(t *testing.T) {
	ctx := context.Background()
	sub := gittest.New(t)
	sub.Write(".gitattributes", "*.txt filter=subevil\n")
	sub.Write("s.txt", "s\n")
	sub.Write("t.txt", "t\n")
	sub.Commit("sub")
	repo := gittest.New(t)
	repo.Write("a.txt", "a\n")
	repo.Git("-c", "protocol.file.allow=always", "submodule", "add", "-q", sub.Dir, "sub")
	repo.Commit("with submodule")
	// Dirty the submodule's checkout, then arm its config.
	inner := &gittest.Repo{T: t, Dir: filepath.Join(repo.Dir, "sub")}
	inner.Write("s.txt", "s\nchanged\n")
	later := time.Now().Add(2 * time.Hour)
	if err := os.Chtimes(filepath.Join(inner.Dir, "t.txt"), later, later); err != nil {
		t.Fatal(err)
	}
	marks := t.TempDir()
	gitdir := inner.Git("rev-parse", "--absolute-git-dir")
	inner.Git("config", "--file", filepath.Join(gitdir, "config"), "filter.subevil.clean", sh(filepath.Join(marks, "submodule-clean")))
	inner.Git("config", "--file", filepath.Join(gitdir, "config"), "core.fsmonitor", sh(filepath.Join(marks, "submodule-fsmonitor")))
	repo.Write("a.txt", "a\nb\n")
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())

	r := &git.Runner{Dir: repo.Dir}
	rg, err := r.ResolveRange(ctx, git.RangeOptions{Uncommitted: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Diff(ctx, rg.DiffBase, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := r.UntrackedFiles(ctx); err != nil {
		t.Fatal(err)
	}
	h := &hostileEnv{Marks: marks}
	h.check(t)
}
