// Package policy loads a review's own policy — the repository config,
// .diffpalignore and the rule packs the config names — from the trusted
// side of the reviewed range, and lists every edit the change makes to
// that policy.
//
// The change under review is written by whoever opened the pull request.
// If its config, ignore file or rule packs decided how it is judged, it
// could pass the gate it is judged by. So in CI (CI set, or a host's
// pull-request context) the policy is read from the base revision of the
// reviewed range; on a developer's machine from the work tree; and
// --config-source base|head|worktree chooses explicitly. Whatever the
// source, the edits the change makes to its own policy are reported. See
// docs/security.md for the whole trust model.
package policy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/diffpalhq/diffpal/internal/config"
	"github.com/diffpalhq/diffpal/internal/git"
	"github.com/diffpalhq/diffpal/internal/repofs"
	"github.com/diffpalhq/diffpal/internal/review"
	"github.com/diffpalhq/diffpal/internal/scope"
	"github.com/diffpalhq/diffpal/internal/yamlsafe"
)

// Source is where the policy is read from.
type Source string

const (
	Base     Source = "base"
	Head     Source = "head"
	Worktree Source = "worktree"
)

// Sources are the valid --config-source values besides "auto".
var Sources = []string{string(Base), string(Head), string(Worktree)}

// IgnoreFile is the repository's ignore file.
const IgnoreFile = ".diffpalignore"

// Size limits for policy files read from the repository.
const (
	MaxIgnoreBytes = 256 << 10
)

// CIVars mark a CI run or a code host's pull-request context.
var CIVars = []string{"CI", "GITHUB_ACTIONS", "GITLAB_CI", "TF_BUILD", "BUILDKITE", "JENKINS_URL",
	"GITHUB_EVENT_NAME", "CI_MERGE_REQUEST_IID", "SYSTEM_PULLREQUEST_PULLREQUESTID"}

// Choose decides the source: an explicit flag value wins; "" or "auto"
// means base in CI, else worktree. It returns the reason, for the summary.
func Choose(flag string, getenv func(string) string) (Source, string, error) {
	switch flag {
	case "", "auto":
	case string(Base), string(Head), string(Worktree):
		return Source(flag), "--config-source " + flag, nil
	default:
		return "", "", fmt.Errorf("invalid --config-source %q: want auto, base, head or worktree", flag)
	}
	for _, k := range CIVars {
		if v := strings.TrimSpace(getenv(k)); v != "" && !strings.EqualFold(v, "false") && v != "0" {
			return Base, k + " is set (CI): the change under review does not choose its own policy", nil
		}
	}
	return Worktree, "local run (no CI variable set)", nil
}

// Request says what to load.
type Request struct {
	Root string
	Git  *git.Runner
	// Source chooses the side; Why is recorded with it.
	Source Source
	Why    string
	// Base is the commit the reviewed range starts from ("" when the
	// repository has no commits). Head is the reviewed commit; "" means
	// the work tree is reviewed.
	Base, Head string
	// ConfigPath is an explicit --config: trusted, read as given, and the
	// repository's own config is then neither read nor compared.
	ConfigPath string
	// Redact is applied to any line of a repository file an error quotes.
	Redact func(string) string
	// NoCompare skips listing the change's policy edits.
	NoCompare bool
	// Batch, when set, is a `git cat-file --batch` the caller lends for
	// reading the committed sides' config and ignore file (the review's
	// diff started ahead, git.DiffStream.Lend), instead of a git process
	// of Load's own; Load is done with it when it returns.
	Batch *git.BlobReader

	// reads memoizes read: Load reads the side it uses, then compare reads
	// both sides, so each file would otherwise be read (and its git
	// processes run) twice.
	reads map[string]readResult
}

type readResult struct {
	data []byte
	ok   bool
	err  error
}

// Pack is a rule pack to load.
type Pack struct {
	Name string // how it is named in errors
	Data []byte
}

// Loaded is the policy a review runs with.
type Loaded struct {
	Config  *config.Config
	Ignore  *scope.Ignore
	Packs   []Pack
	Record  review.Policy
	Trusted bool // the config came from an explicit --config
}

// side reads policy files from one side of the range.
type side struct {
	name string // "base", "head" or "worktree", for messages
	rev  string // commit, "" for the work tree
	none bool   // no such side (no commits yet): every file is absent
}

func (r Request) sideOf(s Source) side {
	switch s {
	case Base:
		return side{name: "base " + short(r.Base), rev: r.Base, none: r.Base == "" || r.Base == git.EmptyTree}
	case Head:
		if r.Head != "" {
			return side{name: "head " + short(r.Head), rev: r.Head}
		}
	}
	return side{name: "work tree"}
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// read returns a file's content from a side; ok is false when it is
// absent. Files must be regular files inside the repository.
func (r Request) read(ctx context.Context, s side, rel string, max int64) ([]byte, bool, error) {
	if s.none {
		return nil, false, nil
	}
	key := s.rev + "\x00" + rel
	if c, hit := r.reads[key]; hit {
		return c.data, c.ok, c.err
	}
	data, ok, err := r.readUncached(ctx, s, rel, max)
	if r.reads != nil {
		r.reads[key] = readResult{data, ok, err}
	}
	return data, ok, err
}

func (r Request) readUncached(ctx context.Context, s side, rel string, max int64) (data []byte, ok bool, err error) {
	rel, err = repofs.Clean(rel)
	if err != nil {
		return nil, false, err
	}
	if s.rev == "" {
		data, err := repofs.ReadFile(r.Root, rel, max)
		if errors.Is(err, os.ErrNotExist) {
			return nil, false, nil
		}
		return data, err == nil, err
	}
	entries, err := r.lsTree(ctx, s.rev, rel)
	if err != nil {
		return nil, false, err
	}
	return r.readEntry(ctx, entries[rel], max)
}

// lsTree lists the tree entries of rels (clean repository paths) at rev
// with one `git ls-tree`: "mode type id size" by path, absent paths
// missing.
func (r Request) lsTree(ctx context.Context, rev string, rels ...string) (map[string]string, error) {
	args := append([]string{"ls-tree", "-z", "-l", "--full-tree", "--end-of-options", rev, "--"}, rels...)
	out, err := r.Git.Run(ctx, args...)
	if err != nil {
		return nil, err
	}
	entries := map[string]string{}
	for _, e := range strings.Split(string(out), "\x00") {
		if meta, name, ok := strings.Cut(e, "\t"); ok && slices.Contains(rels, name) {
			entries[name] = meta
		}
	}
	return entries, nil
}

// readEntry reads the file a tree entry ("mode type id size", "" when
// absent) names: regular files of at most max bytes only.
func (r Request) readEntry(ctx context.Context, meta string, max int64) (data []byte, ok bool, err error) {
	f := strings.Fields(meta)
	if len(f) != 4 {
		return nil, false, nil
	}
	mode, typ, id, size := f[0], f[1], f[2], f[3]
	var n int64
	fmt.Sscan(size, &n)
	if err := checkEntry(mode, typ, n, max); err != nil {
		return nil, false, err
	}
	data, err = r.Git.Run(ctx, "cat-file", "blob", id)
	return data, err == nil, err
}

// checkEntry refuses a policy file that is not a regular file of at most
// max bytes (mode and type as ls-tree prints them).
func checkEntry(mode, typ string, size, max int64) error {
	switch {
	case mode == "120000":
		return errors.New("is a symlink (refused in policy files)")
	case typ != "blob":
		return fmt.Errorf("is a %s, not a file", typ)
	case size > max:
		return fmt.Errorf("is %d bytes, over the limit of %d bytes", size, max)
	}
	return nil
}

// prefetch reads the config and the ignore file of each committed side
// into r.reads, all through one `git cat-file --batch` (r.Batch, or one
// of its own) in two round trips (batchSides): two ls-tree and a
// cat-file per file found were three to six git processes on every
// review's critical path. Errors are
// not kept: read asks again (one ls-tree per file and side).
func (r Request) prefetch(ctx context.Context, sides ...side) {
	var revs []string
	for _, s := range sides {
		if s.rev != "" && !s.none && !slices.Contains(revs, s.rev) {
			revs = append(revs, s.rev)
		}
	}
	if len(revs) == 0 {
		return
	}
	b := r.Batch
	if b == nil {
		var err error
		if b, err = r.Git.Blobs(ctx); err != nil {
			return
		}
		defer b.Close()
	}
	got, ok := batchSides(b, revs)
	if !ok {
		return // the batch is out of step or a side unreadable: read asks git again
	}
	for i, rev := range revs {
		for k, f := range prefetched {
			r.reads[rev+"\x00"+f.rel] = got[i][k]
		}
	}
}

// prefetched are the files prefetch reads of each side.
var prefetched = []struct {
	rel string
	max int64
}{{config.DefaultPath, int64(yamlsafe.Config.MaxBytes)}, {IgnoreFile, MaxIgnoreBytes}}

// maxTreeBytes bounds a tree object batchSides reads and parses (a root
// tree of 30,000 entries is about 1 MB; the commit is a stranger's);
// past it, read asks ls-tree.
const maxTreeBytes = 1 << 20

// dirOf is a repository path's directory, "" at the root.
func dirOf(rel string) string {
	if d := path.Dir(rel); d != "." {
		return d
	}
	return ""
}

// batchSides reads the prefetched files of each commit of revs (full hex
// ids) through b: first the tree of each file's directory (the root tree,
// rev:.config/diffpal), parsed for the file's mode and id, then the
// blobs — what ls-tree and cat-file blob answer, with the same refusals
// (checkEntry). Each round's requests go to git at once. ok is false when
// anything is not as expected.
func batchSides(b *git.BlobReader, revs []string) ([][]readResult, bool) {
	// Round 1: the directories' trees, by rev and directory.
	var dirs []string // of the prefetched files, "" the root
	for _, f := range prefetched {
		if d := dirOf(f.rel); !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	var objects []string
	for _, rev := range revs {
		if len(rev) != 40 && len(rev) != 64 || strings.Trim(rev, "0123456789abcdef") != "" {
			return nil, false
		}
		for _, d := range dirs {
			if d == "" {
				objects = append(objects, rev+"^{tree}")
			} else {
				objects = append(objects, rev+":"+d)
			}
		}
	}
	trees, err := b.ReadObjects(objects, maxTreeBytes)
	if err != nil {
		return nil, false
	}
	// The files' entries; round 2: their blobs.
	type want struct{ rev, file int }
	var wants []want
	var ids []string
	out := make([][]readResult, len(revs))
	for i, rev := range revs {
		out[i] = make([]readResult, len(prefetched))
		for k, f := range prefetched {
			d := dirOf(f.rel)
			t := trees[i*len(dirs)+slices.Index(dirs, d)]
			switch {
			case t.Err != nil:
				return nil, false // a tree over maxTreeBytes
			case !t.Found || t.Type != "tree":
				if d == "" {
					return nil, false // rev has no root tree: not a commit as expected
				}
				continue // no such directory (or a file or link there): absent, as ls-tree says
			}
			entries, err := git.ParseTree(t.Data, len(rev)/2)
			if err != nil {
				return nil, false
			}
			at := slices.IndexFunc(entries, func(e git.TreeEntry) bool { return e.Name == path.Base(f.rel) })
			if at < 0 {
				continue // absent
			}
			e := entries[at]
			mode, typ := e.Mode, "blob"
			switch mode {
			case "40000":
				mode, typ = "040000", "tree"
			case "160000":
				typ = "commit"
			}
			if err := checkEntry(mode, typ, 0, f.max); err != nil {
				out[i][k] = readResult{err: err}
				continue
			}
			wants = append(wants, want{i, k})
			ids = append(ids, e.ID)
		}
	}
	if len(ids) == 0 {
		return out, true
	}
	maxBlob := int64(0)
	for _, f := range prefetched {
		maxBlob = max(maxBlob, f.max)
	}
	blobs, err := b.ReadObjects(ids, int(maxBlob))
	if err != nil {
		return nil, false
	}
	for j, w := range wants {
		o, f := blobs[j], prefetched[w.file]
		size := int64(o.Size)
		switch {
		case errors.Is(o.Err, git.ErrBlobTooLarge) || o.Found && size > f.max:
			out[w.rev][w.file] = readResult{err: checkEntry("100644", "blob", size, f.max)}
		case !o.Found || o.Type != "blob":
			return nil, false
		default:
			out[w.rev][w.file] = readResult{o.Data, true, nil}
		}
	}
	return out, true
}

// Load reads the policy from r.Source and compares it with the other side.
func Load(ctx context.Context, r Request) (*Loaded, error) {
	r.reads = map[string]readResult{}
	used := r.sideOf(r.Source)
	// The side the change brings: its head commit, or the work tree.
	reviewed := side{name: "work tree"}
	if r.Head != "" {
		reviewed = side{name: "head " + short(r.Head), rev: r.Head}
	}
	baseSide := r.sideOf(Base)
	r.prefetch(ctx, used, baseSide, reviewed)
	l := &Loaded{Record: review.Policy{Source: string(r.Source), Why: r.Why}}
	if used.none {
		l.Record.Why += "; the repository has no base commit, so built-in defaults apply"
	}

	// The config.
	var err error
	if r.ConfigPath != "" {
		l.Trusted = true
		data, rerr := os.ReadFile(r.ConfigPath)
		if rerr != nil {
			return nil, fmt.Errorf("config %s: %w", r.ConfigPath, rerr)
		}
		if l.Config, err = config.ParseFile(r.ConfigPath, data, r.Redact); err != nil {
			return nil, err
		}
		l.Config.Path = r.ConfigPath
		l.Record.Source = "--config"
		l.Record.Why = "--config " + r.ConfigPath + " (ignore file and rule packs: " + string(r.Source) + ", " + r.Why + ")"
	} else {
		l.Config, err = r.loadConfig(ctx, used)
		if err != nil {
			return nil, err
		}
	}

	// The ignore file.
	if data, ok, err := r.read(ctx, used, IgnoreFile, MaxIgnoreBytes); err != nil {
		return nil, fmt.Errorf("%s (%s): %w", IgnoreFile, used.name, err)
	} else if ok {
		ig, problems := scope.ParseIgnoreChecked(data)
		if len(problems) > 0 {
			return nil, fmt.Errorf("%s (%s): %w", IgnoreFile, used.name, errors.Join(problems...))
		}
		l.Ignore = ig
	}

	// Rule packs: a trusted config's may live anywhere; a repository
	// config's are repository files read from the same side.
	for _, p := range l.Config.Rules.Packs {
		if l.Trusted && path.IsAbs(p) {
			data, err := repofs.ReadRegular(p, int64(yamlsafe.RulePack.MaxBytes))
			if err != nil {
				return nil, fmt.Errorf("rules.packs %s: %w", p, err)
			}
			l.Packs = append(l.Packs, Pack{Name: p, Data: data})
			continue
		}
		s := used
		if l.Trusted {
			s = side{name: "work tree"} // relative to the repository root, as the user sees it
		}
		data, ok, err := r.read(ctx, s, p, int64(yamlsafe.RulePack.MaxBytes))
		if err == nil && !ok {
			err = os.ErrNotExist
		}
		if err != nil {
			return nil, fmt.Errorf("rules.packs %s (%s, from %s): %w", p, s.name, configName(l.Config), err)
		}
		l.Packs = append(l.Packs, Pack{Name: p, Data: data})
	}

	// What the change does to its own policy: the reviewed side against
	// the base, whatever side was used.
	if !r.NoCompare {
		l.Record.Changes = r.compare(ctx, baseSide, reviewed, l.Trusted)
	}
	return l, nil
}

func configName(c *config.Config) string {
	if c.Path != "" {
		return c.Path
	}
	return config.DefaultPath
}

func (r Request) loadConfig(ctx context.Context, s side) (*config.Config, error) {
	data, ok, err := r.read(ctx, s, config.DefaultPath, int64(yamlsafe.Config.MaxBytes))
	if err != nil {
		return nil, fmt.Errorf("config %s (%s): %w", config.DefaultPath, s.name, err)
	}
	if !ok {
		return &config.Config{Version: "v1"}, nil
	}
	name := config.DefaultPath
	if s.rev != "" {
		name += " (" + s.name + ")"
	}
	c, err := config.ParseFile(name, data, r.Redact)
	if err != nil {
		return nil, err
	}
	c.Path = config.DefaultPath
	return c, nil
}

// compare lists the policy files the reviewed side changes.
func (r Request) compare(ctx context.Context, base, head side, trusted bool) []review.PolicyChange {
	var out []review.PolicyChange
	type file struct {
		kind string
		data []byte
		ok   bool
		err  error
	}
	get := func(s side, rel string, max int64) file {
		d, ok, err := r.read(ctx, s, rel, max)
		return file{data: d, ok: ok, err: err}
	}
	diffOf := func(kind, rel string, a, b file, detail func() string) {
		switch {
		case a.err != nil || b.err != nil:
			if a.err != nil && b.err != nil {
				return
			}
			if b.err != nil {
				out = append(out, review.PolicyChange{Kind: kind, Path: rel, Detail: "made unreadable: " + b.err.Error()})
			}
			return
		case !a.ok && !b.ok:
			return
		case !a.ok:
			out = append(out, review.PolicyChange{Kind: kind, Path: rel, Detail: "added" + detail()})
		case !b.ok:
			out = append(out, review.PolicyChange{Kind: kind, Path: rel, Detail: "deleted"})
		case !bytes.Equal(a.data, b.data):
			out = append(out, review.PolicyChange{Kind: kind, Path: rel, Detail: "modified" + detail()})
		}
	}
	cfgA := get(base, config.DefaultPath, int64(yamlsafe.Config.MaxBytes))
	cfgB := get(head, config.DefaultPath, int64(yamlsafe.Config.MaxBytes))
	var ca, cb *config.Config
	if cfgA.ok {
		ca, _ = config.ParseFile(config.DefaultPath, cfgA.data, nil)
	}
	if cfgB.ok {
		var perr error
		cb, perr = config.ParseFile(config.DefaultPath, cfgB.data, nil)
		if perr != nil {
			cb = nil
		}
	}
	if !trusted {
		diffOf("config", config.DefaultPath, cfgA, cfgB, func() string {
			if cfgB.ok && cb == nil {
				return " (and does not parse)"
			}
			if keys := changedKeys(ca, cb); len(keys) > 0 {
				return ": " + strings.Join(keys, ", ")
			}
			return ""
		})
	}
	diffOf("ignore_file", IgnoreFile, get(base, IgnoreFile, MaxIgnoreBytes), get(head, IgnoreFile, MaxIgnoreBytes), func() string { return "" })
	var packs []string
	for _, c := range []*config.Config{ca, cb} {
		if c == nil {
			continue
		}
		for _, p := range c.Rules.Packs {
			if repofs.CheckRel(p) == nil && !slices.Contains(packs, path.Clean(p)) {
				packs = append(packs, path.Clean(p))
			}
		}
	}
	slices.Sort(packs)
	max := int64(yamlsafe.RulePack.MaxBytes)
	for _, p := range packs {
		diffOf("rule_pack", p, get(base, p, max), get(head, p, max), func() string { return "" })
	}
	return out
}

// changedKeys names the policy settings that differ between two configs.
func changedKeys(a, b *config.Config) []string {
	if a == nil {
		a = &config.Config{}
	}
	if b == nil {
		return nil
	}
	var keys []string
	ne := func(key string, x, y any) {
		if fmt.Sprint(x) != fmt.Sprint(y) {
			keys = append(keys, key)
		}
	}
	ra, rb := a.Review, b.Review
	ne("review.filter_mode", ra.FilterMode, rb.FilterMode)
	ne("review.block_on", ra.BlockOn, rb.BlockOn)
	ne("review.min_confidence", deref(ra.MinConfidence), deref(rb.MinConfidence))
	ne("review.include", ra.Include, rb.Include)
	ne("review.exclude", ra.Exclude, rb.Exclude)
	ne("review.max_file_bytes", ra.MaxFileBytes, rb.MaxFileBytes)
	ne("review.default_skips", derefB(ra.DefaultSkips), derefB(rb.DefaultSkips))
	ne("review.bundle", ra.Bundle, rb.Bundle)
	ne("review.profile", ra.Profile, rb.Profile)
	ne("review.instructions", ra.Instructions, rb.Instructions)
	ne("review.formats", ra.Formats, rb.Formats)
	ne("rules.packs", a.Rules.Packs, b.Rules.Packs)
	if len(b.Ignores) > len(a.Ignores) {
		keys = append(keys, fmt.Sprintf("ignores (+%d)", len(b.Ignores)-len(a.Ignores)))
	} else {
		ne("ignores", a.Ignores, b.Ignores)
	}
	ne("provider", a.Provider, b.Provider)
	ne("providers", a.Providers, b.Providers)
	ne("stages", a.Stages, b.Stages)
	return keys
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

func derefB(p *bool) any {
	if p == nil {
		return nil
	}
	return *p
}
