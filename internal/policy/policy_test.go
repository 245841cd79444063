package policy

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/diffpalhq/diffpal/internal/git"
	"github.com/diffpalhq/diffpal/internal/git/gittest"
	"github.com/diffpalhq/diffpal/internal/review"
)

func TestChoose(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	for _, tc := range []struct {
		flag string
		env  func(string) string
		want Source
	}{
		{"", env(), Worktree},
		{"auto", env("CI", "true"), Base},
		{"", env("CI", "false"), Worktree},
		{"", env("CI", "0"), Worktree},
		{"", env("GITHUB_ACTIONS", "true"), Base},
		{"", env("CI_MERGE_REQUEST_IID", "7"), Base},
		{"", env("SYSTEM_PULLREQUEST_PULLREQUESTID", "12"), Base},
		{"head", env("CI", "true"), Head},
		{"worktree", env("CI", "true"), Worktree},
		{"base", env(), Base},
	} {
		got, why, err := Choose(tc.flag, tc.env)
		if err != nil || got != tc.want || why == "" {
			t.Errorf("Choose(%q) = %q, %q, %v; want %q", tc.flag, got, why, err, tc.want)
		}
	}
	if _, _, err := Choose("HEAD", env()); err == nil || !strings.Contains(err.Error(), "--config-source") {
		t.Errorf("bad value accepted: %v", err)
	}
}

// repo: base with a strict config; head relaxes it, adds a catch-all
// ignore file and a pack; the work tree edits the config once more.
func policyRepo(t *testing.T) (*gittest.Repo, string, string) {
	repo := gittest.New(t)
	repo.Write(".config/diffpal/config.yaml", "version: v1\nreview: {block_on: high}\n")
	repo.Write("main.go", "package main\n")
	base := repo.Commit("base")
	repo.Write(".config/diffpal/config.yaml", "version: v1\nreview: {block_on: critical, exclude: [\"**/*.go\"]}\nignores: [{category: security, reason: x}]\nrules: {packs: [p.yaml]}\n")
	repo.Write(".diffpalignore", "*\n")
	repo.Write("p.yaml", "rules: []\n")
	head := repo.Commit("head")
	repo.Write(".config/diffpal/config.yaml", "version: v1\nreview: {block_on: low}\n")
	return repo, base, head
}

func load(t *testing.T, repo *gittest.Repo, src Source, base, head string) *Loaded {
	t.Helper()
	l, err := Load(context.Background(), Request{Root: repo.Dir, Git: &git.Runner{Dir: repo.Dir}, Source: src, Why: "test", Base: base, Head: head})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestLoadFromEachSide(t *testing.T) {
	repo, base, head := policyRepo(t)
	b := load(t, repo, Base, base, head)
	if b.Config.Review.BlockOn != "high" || b.Ignore != nil || len(b.Packs) != 0 {
		t.Errorf("base policy = %+v ignore=%v packs=%d", b.Config.Review, b.Ignore, len(b.Packs))
	}
	h := load(t, repo, Head, base, head)
	if h.Config.Review.BlockOn != "critical" || h.Ignore == nil || len(h.Packs) != 1 || h.Packs[0].Name != "p.yaml" {
		t.Errorf("head policy = %+v ignore=%v packs=%d", h.Config.Review, h.Ignore, len(h.Packs))
	}
	w := load(t, repo, Worktree, base, "")
	if w.Config.Review.BlockOn != "low" {
		t.Errorf("work-tree policy = %+v", w.Config.Review)
	}
	// The edits are reported whatever the side used.
	for _, l := range []*Loaded{b, h} {
		got := map[string]string{}
		for _, c := range l.Record.Changes {
			got[c.Kind+" "+c.Path] = c.Detail
		}
		cfg := got["config .config/diffpal/config.yaml"]
		for _, want := range []string{"modified", "review.block_on", "review.exclude", "ignores (+1)", "rules.packs"} {
			if !strings.Contains(cfg, want) {
				t.Errorf("config change detail %q lacks %q", cfg, want)
			}
		}
		if got["ignore_file .diffpalignore"] != "added" || got["rule_pack p.yaml"] != "added" {
			t.Errorf("changes = %v", got)
		}
	}
	// Work tree against base: the config differs in block_on only.
	var wc []review.PolicyChange
	for _, c := range w.Record.Changes {
		if c.Kind == "config" {
			wc = append(wc, c)
		}
	}
	if len(wc) != 1 || wc[0].Detail != "modified: review.block_on" {
		t.Errorf("work-tree config change = %+v", wc)
	}
}

// A revision's policy file that is a symlink, or a pack path that leaves
// the repository, is refused — never followed.
func TestLoadRefusesEscapes(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "secret.yaml")
	os.WriteFile(outside, []byte("version: v1\n"), 0o644)
	repo := gittest.New(t)
	repo.Write("main.go", "package main\n")
	base := repo.Commit("base")
	os.MkdirAll(filepath.Join(repo.Dir, ".config/diffpal"), 0o755)
	os.Symlink(outside, filepath.Join(repo.Dir, ".config/diffpal/config.yaml"))
	head := repo.Commit("link")
	r := Request{Root: repo.Dir, Git: &git.Runner{Dir: repo.Dir}, Why: "test", Base: base, Head: head}
	for _, src := range []Source{Head, Worktree} {
		r.Source = src
		if _, err := Load(context.Background(), r); err == nil || !strings.Contains(err.Error(), "symlink") && !strings.Contains(err.Error(), "outside the repository") {
			t.Errorf("%s: symlinked config accepted: %v", src, err)
		}
	}
	// The base side is unaffected, and the link is reported as an edit.
	r.Source = Base
	l, err := Load(context.Background(), r)
	if err != nil || len(l.Record.Changes) != 1 || !strings.Contains(l.Record.Changes[0].Detail, "unreadable") {
		t.Errorf("base load = %+v, %v", l, err)
	}

	for _, pack := range []string{"/proc/self/environ", "../x.yaml", "a/../../x.yaml"} {
		repo := gittest.New(t)
		repo.Write(".config/diffpal/config.yaml", "version: v1\nrules: {packs: ['"+pack+"']}\n")
		c := repo.Commit("c")
		_, err := Load(context.Background(), Request{Root: repo.Dir, Git: &git.Runner{Dir: repo.Dir}, Source: Head, Base: c, Head: c})
		if err == nil || !strings.Contains(err.Error(), "outside the repository") {
			t.Errorf("pack %q: %v", pack, err)
		}
	}
}

// No commits yet: base means built-in defaults, and that is said.
func TestLoadWithoutBase(t *testing.T) {
	repo := gittest.New(t)
	repo.Write(".config/diffpal/config.yaml", "version: v1\nreview: {block_on: critical}\n")
	l := load(t, repo, Base, git.EmptyTree, "")
	if l.Config.Review.BlockOn != "" || !strings.Contains(l.Record.Why, "no base commit") {
		t.Errorf("policy = %+v, why %q", l.Config.Review, l.Record.Why)
	}
	if len(l.Record.Changes) != 1 || !strings.HasPrefix(l.Record.Changes[0].Detail, "added") {
		t.Errorf("changes = %+v", l.Record.Changes)
	}
}

// TestPrefetchSameAsLsTree: the one cat-file --batch prefetch reads of
// each side (trees parsed for modes and ids, then blobs) is, for every
// shape a policy file can take in a commit, what ls-tree and cat-file
// blob answer (readUncached) — data, presence and refusal alike.
func TestPrefetchSameAsLsTree(t *testing.T) {
	ctx := context.Background()
	repo := gittest.New(t)
	repo.Write("main.go", "package main\n")
	var revs []string
	commit := func(msg string) { revs = append(revs, repo.Commit(msg)) }
	commit("no policy files")
	repo.Write(".config/diffpal/config.yaml", "version: v1\nreview: {block_on: high}\n")
	repo.Write(".diffpalignore", "vendor/\n")
	commit("both files")
	repo.Chmod(".diffpalignore", 0o755)
	commit("executable ignore file")
	repo.Remove(".diffpalignore")
	os.Symlink("main.go", filepath.Join(repo.Dir, ".diffpalignore"))
	commit("ignore file is a symlink")
	os.Remove(filepath.Join(repo.Dir, ".diffpalignore"))
	os.MkdirAll(filepath.Join(repo.Dir, ".diffpalignore"), 0o755)
	repo.Write(".diffpalignore/x", "x\n")
	commit("ignore file is a directory")
	repo.Git("rm", "-rq", ".config", ".diffpalignore")
	repo.Write(".config", "not a directory\n")
	commit(".config is a file")
	repo.Remove(".config")
	os.MkdirAll(filepath.Join(repo.Dir, ".config"), 0o755)
	os.Symlink("../x", filepath.Join(repo.Dir, ".config/diffpal"))
	commit(".config/diffpal is a symlink")
	os.Remove(filepath.Join(repo.Dir, ".config/diffpal"))
	repo.Write(".config/diffpal/config.yaml", "version: v1\n")
	repo.Write(".diffpalignore", strings.Repeat("a/\n", MaxIgnoreBytes/3+1))
	commit("ignore file over its limit")

	r := Request{Root: repo.Dir, Git: &git.Runner{Dir: repo.Dir}}
	b, err := r.Git.Blobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	refusals := 0
	// All sides in one batch (as a review asks for its two), and each alone.
	all, ok := batchSides(b, revs)
	if !ok {
		t.Fatal("the batch gave up")
	}
	for i, rev := range revs {
		one, ok := batchSides(b, []string{rev})
		if !ok || !reflect.DeepEqual(one[0], all[i]) {
			t.Errorf("commit %d alone: %v %+v, in the batch %+v", i, ok, one, all[i])
		}
		got := all[i]
		for k, f := range prefetched {
			data, found, err := r.readUncached(ctx, side{name: "head", rev: rev}, f.rel, f.max)
			want := readResult{data, found, err}
			if (got[k].err == nil) != (want.err == nil) || got[k].err != nil && got[k].err.Error() != want.err.Error() ||
				got[k].ok != want.ok || !bytes.Equal(got[k].data, want.data) {
				t.Errorf("commit %d, %s: batch %q %v %v; ls-tree %q %v %v", i, f.rel, got[k].data, got[k].ok, got[k].err, want.data, want.ok, want.err)
			}
			if want.err != nil {
				refusals++
			}
		}
	}
	if refusals != 3 { // the symlink, the directory, the size
		t.Errorf("%d refusals, want 3", refusals)
	}
	// A side that is not a full commit id is left to read.
	if _, ok := batchSides(b, []string{"HEAD"}); ok {
		t.Error("a symbolic revision was read by the batch")
	}
}
