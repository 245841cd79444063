package git

import (
	"context"
	"errors"
	"fmt"
)

// EmptyTree is git's empty tree object: the base of a repository's first
// commit and of reviews in a repository with no commits yet.
const EmptyTree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

// RangeOptions choose what to review.
type RangeOptions struct {
	// Base is any revision; default: the default branch, or HEAD~1 when
	// HEAD is the default branch itself.
	Base string
	// Head is any revision; default HEAD.
	Head string
	// NoMergeBase diffs against Base itself instead of merge-base(Base, Head).
	NoMergeBase bool
	// Since reviews only what changed after an earlier reviewed commit,
	// while Base still names the review's base.
	Since string
	// Uncommitted reviews the work tree (staged and unstaged changes and
	// untracked files) against HEAD.
	Uncommitted bool
}

// Range is a resolved review range.
type Range struct {
	// BaseRef is the base as requested or chosen ("main", "HEAD~1").
	BaseRef string `json:"base_ref"`
	// Base is the resolved base commit (or EmptyTree).
	Base string `json:"base_sha"`
	// MergeBase is merge-base(Base, Head) when used, else "".
	MergeBase string `json:"merge_base_sha,omitempty"`
	// Head is the head commit; with Worktree it is HEAD (or "").
	Head string `json:"head_sha"`
	// DiffBase is what the diff starts from: Since, else MergeBase, else Base.
	DiffBase string `json:"diff_base_sha"`
	// Since is the resolved --since commit.
	Since string `json:"since_sha,omitempty"`
	// Worktree is true for uncommitted reviews.
	Worktree bool `json:"worktree,omitempty"`
	// CheckedOut is true when Head is the commit the work tree has
	// checked out (HEAD), as in CI: the work tree's files may be read
	// for Head's blobs, each checked against the blob's id first
	// (StartDiffFilesFrom), since they may have been changed since.
	CheckedOut bool `json:"-"`
	// Why says how the range was chosen, for humans.
	Why string `json:"why"`
}

// ShallowError explains a range that a shallow clone cannot answer.
type ShallowError struct{ Err error }

func (e *ShallowError) Error() string {
	return e.Err.Error() + "; this is a shallow clone, so the base is probably not fetched: " +
		"fetch full history (actions/checkout with fetch-depth: 0, or git fetch --unshallow) " +
		"or fetch the base ref (git fetch origin <base>)"
}

func (e *ShallowError) Unwrap() error { return e.Err }

// ResolveRange works out the range to review.
func (r *Runner) ResolveRange(ctx context.Context, o RangeOptions) (Range, error) {
	if o.Uncommitted {
		if o.Head != "" || o.Since != "" {
			return Range{}, errors.New("--uncommitted reviews the work tree: it cannot be combined with --head or --since")
		}
		rg := Range{Worktree: true, Base: EmptyTree, DiffBase: EmptyTree, BaseRef: "(empty tree)", Why: "uncommitted changes in a repository without commits"}
		if r.HasCommits(ctx) {
			base := o.Base
			if base == "" {
				base = "HEAD"
			}
			sha, err := r.resolve(ctx, base)
			if err != nil {
				return Range{}, err
			}
			head, _ := r.ResolveCommit(ctx, "HEAD")
			rg = Range{Worktree: true, BaseRef: base, Base: sha, DiffBase: sha, Head: head, Why: "uncommitted changes against " + base}
		}
		return rg, nil
	}
	// HEAD and the named revisions are resolved at once, each by its own
	// rev-parse, instead of one after the other.
	look := r.lookupCommits(ctx, "HEAD", o.Head, o.Base, o.Since)
	checkedOut, err := look.commit(ctx, r, "HEAD")
	if err != nil {
		rg, err := r.ResolveRange(ctx, RangeOptions{Uncommitted: true})
		if err == nil {
			rg.Why = "no commits yet: reviewing the work tree"
		}
		return rg, err
	}
	rg := Range{}
	headRef := o.Head
	if headRef == "" {
		headRef = "HEAD"
	}
	head, err := r.resolveWith(ctx, look, headRef)
	if err != nil {
		return Range{}, err
	}
	rg.Head = head
	rg.CheckedOut = head == checkedOut

	rg.BaseRef = o.Base
	switch {
	case o.Base != "":
		rg.Why = "base " + o.Base
	default:
		def, derr := r.DefaultBranch(ctx)
		if derr != nil {
			return Range{}, derr
		}
		defSHA, derr := r.resolve(ctx, def)
		if derr != nil {
			return Range{}, derr
		}
		if defSHA == head {
			// On the default branch itself: review the last commit.
			rg.BaseRef = headRef + "~1"
			rg.Why = "on the default branch " + def + ": reviewing the last commit"
			if _, perr := r.ResolveCommit(ctx, head+"~1"); perr != nil {
				if shallow, _ := r.IsShallow(ctx); shallow {
					return Range{}, &ShallowError{Err: fmt.Errorf("the parent of %s is not available", short(head))}
				}
				rg.BaseRef, rg.Base, rg.DiffBase = "(empty tree)", EmptyTree, EmptyTree
				rg.Why = "root commit: reviewing everything in it"
				return rg, nil
			}
			o.NoMergeBase = true
		} else {
			rg.BaseRef = def
			rg.Why = "branch against the default branch " + def
		}
	}
	base, err := r.resolveWith(ctx, look, rg.BaseRef)
	if err != nil {
		return Range{}, err
	}
	rg.Base, rg.DiffBase = base, base
	if !o.NoMergeBase {
		mb, err := r.MergeBase(ctx, base, head)
		if err != nil {
			if shallow, _ := r.IsShallow(ctx); shallow {
				return Range{}, &ShallowError{Err: err}
			}
			var nm *NoMergeBaseError
			if errors.As(err, &nm) {
				return Range{}, fmt.Errorf("%w; pass --no-merge-base to diff against %s directly", err, rg.BaseRef)
			}
			return Range{}, err
		}
		rg.MergeBase, rg.DiffBase = mb, mb
	}
	if o.Since != "" {
		since, err := r.resolveWith(ctx, look, o.Since)
		if err != nil {
			return Range{}, err
		}
		if _, err := r.Run(ctx, "merge-base", "--is-ancestor", since, head); err != nil {
			return Range{}, fmt.Errorf("--since %s is not an ancestor of %s (force-pushed?); run a full review without --since", o.Since, headRef)
		}
		rg.Since, rg.DiffBase = since, since
		rg.Why += ", changes since " + o.Since
	}
	return rg, nil
}

// resolve is ResolveCommit with the shallow-clone explanation attached.
func (r *Runner) resolve(ctx context.Context, rev string) (string, error) {
	return r.resolveWith(ctx, nil, rev)
}

// resolveWith is resolve, answered from look when it resolved rev.
func (r *Runner) resolveWith(ctx context.Context, look commitLookup, rev string) (string, error) {
	sha, err := look.commit(ctx, r, rev)
	if err != nil {
		if shallow, _ := r.IsShallow(ctx); shallow {
			return "", &ShallowError{Err: err}
		}
		return "", err
	}
	return sha, nil
}

// commitLookup holds ResolveCommit answers being worked out concurrently.
type commitLookup map[string]*pendingCommit

type pendingCommit struct {
	done chan struct{}
	sha  string
	err  error
}

// lookupCommits starts resolving each distinct non-empty rev. A rev the
// runner already knows (LocateRange) is answered here, without a
// goroutine: a review resolves its range three times, and on two cores
// busy with the rules loading a goroutine can wait milliseconds to be run
// while its caller, on the critical path, waits for it.
func (r *Runner) lookupCommits(ctx context.Context, revs ...string) commitLookup {
	look := commitLookup{}
	for _, rev := range revs {
		if rev == "" || look[rev] != nil {
			continue
		}
		p := &pendingCommit{done: make(chan struct{})}
		look[rev] = p
		if sha, ok := r.knownCommit(rev); ok {
			p.sha = sha
			close(p.done)
			continue
		}
		go func() {
			defer close(p.done)
			p.sha, p.err = r.ResolveCommit(ctx, rev)
		}()
	}
	return look
}

// commit is ResolveCommit(rev), from look when it has rev.
func (look commitLookup) commit(ctx context.Context, r *Runner, rev string) (string, error) {
	if p := look[rev]; p != nil {
		<-p.done
		return p.sha, p.err
	}
	return r.ResolveCommit(ctx, rev)
}
