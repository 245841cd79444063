package review

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"unsafe"

	"github.com/diffpalhq/diffpal/internal/diff"
	"github.com/diffpalhq/diffpal/internal/evidence"
	"github.com/diffpalhq/diffpal/internal/git"
	"github.com/diffpalhq/diffpal/internal/provider"
	"github.com/diffpalhq/diffpal/internal/repofs"
	"github.com/diffpalhq/diffpal/internal/scope"
)

// ChangeOptions select and scope the change to review.
type ChangeOptions struct {
	Dir   string // any directory in the repository
	Range git.RangeOptions
	Scope scope.Options
	// Paths limit the diff to these pathspecs.
	Paths []string
	// Repository overrides the repository id (default: origin URL, else the
	// directory name).
	Repository string
	// MaxItems caps the evidence packet (default evidence.MaxRefs).
	MaxItems int
	// NoPacket leaves Packet nil; the caller builds it (BuildPacket), for
	// example concurrently with other work.
	NoPacket bool
	// OnFile, when set, is given each file in scope as soon as it is read
	// (for a committed range, while git still diffs the files after it),
	// in diff order, from one goroutine.
	OnFile func(*ChangedFile)
	// Resolved, when set, is the range already resolved from Range (the
	// CLI resolves it first to read the review policy from its base).
	Resolved *git.Range
	// Git, when set, is a runner at the repository's top level that the
	// caller already used (it holds the repository's driver environment,
	// and its Dir is the root): loadChange asks git for neither again.
	Git *git.Runner
	// Diff, when set, is the committed range's diff started ahead
	// (git.StartDiffFiles at Dir, of the resolved range and Paths), so
	// that git diffs while the caller reads its policy and loads its
	// rules: the change streams it, or closes it when it needs another.
	Diff *git.DiffStream
}

// ChangedFile is one file in scope: the seam's type, which providers
// receive as they are.
type ChangedFile = provider.ChangedFile

// Change is everything a review reads, gathered once.
type Change struct {
	Root       string
	Repository string
	Range      git.Range
	// RawDiff is the diff of a work-tree review; a committed range's is
	// streamed and not kept (DiffSHA256 and DiffSize describe it either
	// way).
	RawDiff    []byte
	DiffSHA256 string
	DiffSize   int
	Files      []*ChangedFile // in scope, sorted by path
	All        []*diff.File   // every changed file, in diff order
	Skips      []scope.Skip
	Packet     *evidence.Packet

	// The commit subjects of the range (none for a work tree), read by a
	// git log of their own while the review runs: Subjects waits for it.
	subjects     []string
	subjectsDone chan struct{}
}

// Subjects returns the commit subjects of the range, waiting for the git
// log that reads them. Nobody needs them before the providers' review
// (the LLM providers may send them) and the bundle, and waiting for them
// as the change was read put that process on a small review's critical
// path.
func (c *Change) Subjects() []string {
	if c.subjectsDone != nil {
		<-c.subjectsDone
	}
	return c.subjects
}

// LoadChange resolves the range, reads and parses the diff, reads new file
// contents through one cat-file process, applies scope and builds the
// evidence packet.
func LoadChange(ctx context.Context, o ChangeOptions) (*Change, error) {
	return loadChange(ctx, o, nil)
}

// loadChange is LoadChange timing its phases on clock (nil: untimed).
func loadChange(ctx context.Context, o ChangeOptions, clock *phaseClock) (*Change, error) {
	r := o.Git
	if r == nil {
		at := &git.Runner{Dir: o.Dir}
		root, err := at.TopLevel(ctx)
		if err != nil {
			return nil, inputErr(err)
		}
		r = at.At(root)
	}
	root := r.Dir
	// Pathspecs mean what they mean to git where the user stands, so the
	// commands that take them run there; everything else runs at the root.
	here := r.At(o.Dir)
	var rg git.Range
	var err error
	if o.Resolved != nil {
		rg = *o.Resolved
	} else if rg, err = r.ResolveRange(ctx, o.Range); err != nil {
		return nil, inputErr(err)
	}
	c := &Change{Root: root, Range: rg}
	// The repository id and the commit subjects are small git calls of
	// their own: they run while git computes the patch, and the subjects
	// on after it (Change.Subjects).
	if !rg.Worktree && rg.Head != "" {
		c.subjectsDone = make(chan struct{})
		go func() {
			defer close(c.subjectsDone)
			c.subjects, _ = r.Subjects(ctx, rg.DiffBase, rg.Head)
		}()
	}
	side := make(chan struct{})
	go func() {
		defer close(side)
		c.Repository = o.Repository
		if c.Repository == "" {
			c.Repository = repositoryID(ctx, r, root)
		}
	}()
	defer func() { <-side }()
	clock.mark("resolve range")
	// A committed range is streamed (git.DiffFiles): each file is parsed,
	// read and scoped as soon as git has written it and cat-file has its
	// new content, and a file in scope goes to o.OnFile at once, while git
	// still diffs the files after it. A work-tree diff is read whole.
	var files []*diff.File
	if rg.Worktree {
		o.Diff.Close()
		c.RawDiff, err = here.Diff(ctx, rg.DiffBase, "", o.Paths...)
	} else {
		line := 1
		var info git.PatchInfo
		each := func(fd git.FileDiff) error {
			fs, err := diff.ParseFrom(fd.Patch, line)
			if err != nil {
				return fileError{fmt.Errorf("parse git diff: %w", err)}
			}
			line += bytes.Count(fd.Patch, []byte{'\n'})
			for _, f := range fs {
				files = append(files, f)
				var data []byte
				size := 0
				if f.Status != diff.Deleted && !f.Binary && !f.Submodule && f.NewBlob != "" {
					if !fd.HasBlob || fd.BlobID != f.NewBlob {
						return fileError{fmt.Errorf("read %s: blob %s missing", f.NewPath, f.NewBlob)}
					}
					data, size = fd.Blob, fd.BlobSize
				}
				cf := c.scopeFile(f, data, size, o.Scope)
				if cf != nil && fd.Truncated {
					// Over the limit is always skipped; a file read in part
					// must never be reviewed as if whole.
					return fileError{fmt.Errorf("read %s: %d bytes, over the limit of %d", f.NewPath, fd.BlobSize, o.Scope.Limit())}
				}
				if cf != nil && o.OnFile != nil {
					o.OnFile(cf)
				}
			}
			return nil
		}
		if o.Diff.For(here.Dir, rg.DiffBase, rg.Head, o.Paths) {
			info, err = o.Diff.Files(o.Scope.Limit(), each)
		} else {
			o.Diff.Close()
			info, err = here.DiffFiles(ctx, rg.DiffBase, rg.Head, o.Scope.Limit(), each, o.Paths...)
		}
		c.DiffSHA256, c.DiffSize = info.SHA256, info.Size
		clock.record("read new contents", info.BlobsTook)
	}
	if err != nil {
		// A pathspec outside the repository is the caller's mistake.
		var ge *git.Error
		if errors.As(err, &ge) && strings.Contains(ge.Stderr, "outside repository") {
			return nil, inputErr(err)
		}
		var fe fileError
		switch {
		case errors.As(err, &fe):
			return nil, fe.error
		case !rg.Worktree && !errors.As(err, &ge):
			return nil, fmt.Errorf("read changed files at %s: %w", short(rg.Head), err)
		}
		return nil, err
	}
	clock.mark("git diff")
	if rg.Worktree {
		if files, err = diff.Parse(c.RawDiff); err != nil {
			return nil, fmt.Errorf("parse git diff: %w", err)
		}
		clock.mark("parse diff")
		extra, raw, err := untracked(ctx, here, root, o.Paths)
		if err != nil {
			return nil, err
		}
		files = append(files, extra...)
		c.RawDiff = append(c.RawDiff, raw...)
		sum := sha256.Sum256(c.RawDiff)
		c.DiffSHA256, c.DiffSize = hex.EncodeToString(sum[:]), len(c.RawDiff)
		// The ignore file is part of the review policy: the caller reads it
		// from the trusted side (package policy) and sets o.Scope.Ignore.
		for _, f := range files {
			var data []byte
			if f.Status != diff.Deleted && !f.Binary && !f.Submodule {
				if data, _, err = readWorktree(root, f.NewPath); err != nil {
					return nil, fmt.Errorf("read %s: %w", f.NewPath, err)
				}
			}
			if cf := c.scopeFile(f, data, len(data), o.Scope); cf != nil && o.OnFile != nil {
				o.OnFile(cf)
			}
		}
	}
	c.All = files
	<-side
	// Git's order can be anything (diff.orderFile, untracked files
	// appended): the engine looks files up by path.
	slices.SortFunc(c.Files, func(a, b *ChangedFile) int { return strings.Compare(a.Path(), b.Path()) })
	clock.mark("scope")
	if !o.NoPacket {
		if c.Packet, err = c.BuildPacket(o.MaxItems); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// fileError is an error about the patch's files themselves (they do not
// parse, a blob is missing), as opposed to reading them.
type fileError struct{ error }

// scopeFile applies scope to a changed file with its new content (nil
// when it has none; possibly only the head of size bytes) and adds it to
// c.Files or c.Skips; it returns the file when it is in scope.
func (c *Change) scopeFile(f *diff.File, data []byte, size int, sc scope.Options) *ChangedFile {
	cand := scope.Candidate{Path: f.Path(), Deleted: f.Status == diff.Deleted, Binary: f.Binary,
		Submodule: f.Submodule, ModeOnly: f.ModeOnly(), Size: -1}
	if f.Status != diff.Deleted && !f.Binary && !f.Submodule {
		cand.Size = size
		// Over data's own memory, as splitText: it never changes.
		cand.Head = scope.HeadLines(unsafe.String(unsafe.SliceData(data), len(data)), 10)
		if bytes.IndexByte(data, 0) >= 0 {
			cand.Binary = true
		}
	}
	if skip, ok := sc.Decide(cand); !ok {
		c.Skips = append(c.Skips, skip)
		return nil
	}
	cf := &ChangedFile{Diff: f}
	if data != nil {
		cf.Content, cf.Text = splitText(data)
	}
	c.Files = append(c.Files, cf)
	return cf
}

// ForProviders is what providers are given of the change (package
// provider): the files in scope, the evidence packet and the raw diff,
// shared, not copied. The commit subjects are not waited for here: the
// engine adds them before the providers' review (Subjects).
func (c *Change) ForProviders() *provider.Change {
	return &provider.Change{Files: c.Files, Packet: c.Packet, RawDiff: c.RawDiff, DiffSize: c.DiffSize}
}

// BuildPacket builds the change's evidence packet.
func (c *Change) BuildPacket(maxItems int) (*evidence.Packet, error) {
	return c.buildPacket(maxItems, false, nil)
}

// buildPacket is BuildPacket; hashOnly leaves the items' contents out
// (evidence.Options.HashOnly), and found holds the files' secret
// detection run ahead (prefinder; nil for none).
func (c *Change) buildPacket(maxItems int, hashOnly bool, found map[*ChangedFile]prefound) (*evidence.Packet, error) {
	ef := make([]evidence.File, len(c.Files))
	for i, f := range c.Files {
		ef[i] = evidence.File{Diff: f.Diff, Content: f.Content, Text: f.Text}
		if pf, ok := found[f]; ok {
			ef[i].Found, ef[i].Prefound = pf.text, true
			ef[i].HunksFound, ef[i].HunksPrefound = pf.hunks, true
		}
	}
	head := c.Range.Head
	if c.Range.Worktree {
		head = ""
	}
	return evidence.Build(c.RawDiff, ef, evidence.Options{
		Repository: c.Repository, BaseSHA: c.Range.DiffBase, HeadSHA: head, MaxItems: maxItems, HashOnly: hashOnly,
		DiffSHA256: c.DiffSHA256})
}

// untracked turns untracked files into "added" diff files, so a work-tree
// review sees new files that are not staged yet.
func untracked(ctx context.Context, r *git.Runner, root string, paths []string) ([]*diff.File, []byte, error) {
	names, err := r.UntrackedFiles(ctx, paths...)
	if err != nil {
		return nil, nil, err
	}
	var files []*diff.File
	var raw bytes.Buffer
	for _, n := range names {
		data, mode, err := readWorktree(root, n)
		if err != nil {
			continue // vanished or unreadable: git will not see it either
		}
		f := &diff.File{NewPath: n, OldPath: n, Status: diff.Added, NewMode: mode}
		if bytes.IndexByte(data, 0) >= 0 {
			f.Binary = true
		} else if len(data) > 0 {
			lines := splitLines(data)
			h := diff.Hunk{NewStart: 1, NewLines: len(lines)}
			for i, l := range lines {
				h.Lines = append(h.Lines, diff.Line{Kind: '+', Text: l, NewNo: i + 1})
			}
			f.Hunks = []diff.Hunk{h}
		}
		fmt.Fprintf(&raw, "untracked %s %d\n", n, len(data))
		raw.Write(data)
		files = append(files, f)
	}
	return files, raw.Bytes(), nil
}

// readWorktree reads a work-tree file as git would store it: a symlink's
// content is its target path, never the file it points at (which may lie
// outside the repository, or not exist).
func readWorktree(root, path string) ([]byte, string, error) {
	full := filepath.Join(root, filepath.FromSlash(path))
	fi, err := os.Lstat(full)
	if err != nil {
		return nil, "", err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		// The link itself, as git stores it; never its target.
		target, err := os.Readlink(full)
		return []byte(target), "120000", err
	}
	// Regular files only, opened without following a swapped-in link or
	// blocking on a FIFO (the work tree belongs to the change's author).
	data, err := repofs.ReadRegular(full, maxWorktreeRead)
	return data, "100644", err
}

// maxWorktreeRead bounds one work-tree file read; scope skips anything
// over --max-file-bytes anyway.
const maxWorktreeRead = 1 << 30

// splitLines splits content into lines without their terminators.
func splitLines(data []byte) []string {
	lines, _ := splitText(bytes.Clone(data))
	return lines
}

// splitText is splitLines over data's own memory, which must not change
// afterwards (a file read for the review: nothing writes to it), and the
// lines joined by "\n" when that is the text itself (no line ended in
// "\r"), else "". The lines are substrings of that one string: a large
// change's files are held once, not three times (bytes, lines, the
// rule engine's joined text).
func splitText(data []byte) ([]string, string) {
	s := unsafe.String(unsafe.SliceData(data), len(data))
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return []string{}, ""
	}
	lines := strings.Split(s, "\n")
	joined := s
	for i, l := range lines {
		if strings.HasSuffix(l, "\r") {
			lines[i], joined = l[:len(l)-1], ""
		}
	}
	return lines, joined
}

// repositoryID names the repository: the origin URL without scheme,
// credentials and ".git" (github.com/owner/repo), else the directory name.
func repositoryID(ctx context.Context, r *git.Runner, root string) string {
	u, err := r.OriginURL(ctx)
	if u = strings.TrimSpace(u); err == nil && u != "" {
		if id := normalizeRemote(u); id != "" {
			return id
		}
	}
	return path.Base(filepath.ToSlash(root))
}

func normalizeRemote(u string) string {
	u = strings.TrimSuffix(strings.TrimSuffix(u, "/"), ".git")
	if strings.Contains(u, "://") {
		pu, err := url.Parse(u)
		if err != nil {
			return ""
		}
		return strings.TrimSuffix(pu.Host+pu.Path, "/")
	}
	// scp-like: git@github.com:owner/repo
	if at := strings.Index(u, "@"); at >= 0 {
		u = u[at+1:]
	}
	return strings.Replace(u, ":", "/", 1)
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// ErrInput marks errors caused by what the user asked for (a range that
// does not resolve, a directory that is not a repository, bad options):
// the CLI reports them as usage errors, everything else as internal.
var ErrInput = errors.New("invalid input")

type inputError struct{ err error }

func (e inputError) Error() string        { return e.err.Error() }
func (e inputError) Unwrap() error        { return e.err }
func (e inputError) Is(target error) bool { return target == ErrInput }

func inputErr(err error) error {
	if err == nil {
		return nil
	}
	return inputError{err}
}
