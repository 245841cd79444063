package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/diffpalhq/diffpal/internal/git"
	"github.com/diffpalhq/diffpal/internal/output"
	"github.com/diffpalhq/diffpal/internal/review"
	"github.com/diffpalhq/diffpal/internal/reviewctx"
	"github.com/diffpalhq/diffpal/internal/safefile"
	"github.com/diffpalhq/diffpal/internal/textsafe"
	"github.com/spf13/cobra"
)

// RangeFlags are the range-selection flags shared by review and context.
type RangeFlags struct {
	Base        string
	Head        string
	NoMergeBase bool
	Since       string
	Uncommitted bool
	Repo        string
	Dir         string
}

func (f *RangeFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.Base, "base", "", "base revision (default: the default branch, or HEAD~1 on the default branch)")
	fl.StringVar(&f.Head, "head", "", "head revision (default HEAD)")
	fl.BoolVar(&f.NoMergeBase, "no-merge-base", false, "diff against --base itself, not merge-base(base, head)")
	fl.StringVar(&f.Since, "since", "", "review only what changed after this earlier reviewed commit")
	fl.BoolVar(&f.Uncommitted, "uncommitted", false, "review the work tree (staged, unstaged and untracked files) against HEAD")
	fl.StringVar(&f.Repo, "repo", "", "repository id (default: the origin remote, else the directory name)")
	fl.StringVarP(&f.Dir, "dir", "C", ".", "run as if started in this directory")
}

func (f *RangeFlags) options(paths []string) review.ChangeOptions {
	return review.ChangeOptions{
		Dir: f.Dir, Paths: paths, Repository: f.Repo,
		Range: git.RangeOptions{Base: f.Base, Head: f.Head, NoMergeBase: f.NoMergeBase, Since: f.Since, Uncommitted: f.Uncommitted},
	}
}

// ContextOptions are the inputs of `diffpal context`.
type ContextOptions struct {
	IO     *IOStreams
	Range  RangeFlags
	Paths  []string
	Out    string
	Packet string
	// ConfigSource chooses where .diffpalignore is read from, as review's.
	ConfigSource string
}

// NewCmdContext builds `diffpal context`.
func NewCmdContext(ios *IOStreams, runF func(*ContextOptions) error) *cobra.Command {
	opts := &ContextOptions{IO: ios}
	cmd := &cobra.Command{
		Use:   "context [flags] [-- PATH...]",
		Short: "Print the review_context of a change for start_qa_orchestration",
		Long: `Print the review_context object that binds an MCP QA session
(start_qa_orchestration) to exactly this change: repository, base and head,
changed files, evidence refs, the evidence registry, diff_sha256 and the
RFC 8785 evidence_packet_sha256 — so a host never computes hashes by hand.

The range is chosen like diffpal review's. --packet also writes the
evidence items with their content, which is what reviewers should see.
Secrets in that content (provider keys and tokens, passwords, URL
credentials, private keys) are replaced by [REDACTED] before the items
are hashed, so each sha256 addresses exactly the text shown.`,
		Example: `  diffpal context > review_context.json
  diffpal context --base origin/main --out .artifacts/diffpal/review_context.json
  diffpal context --packet packet.json -- internal/`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Paths = args
			if runF != nil {
				return runF(opts)
			}
			return contextRun(cmd.Context(), opts)
		},
	}
	opts.Range.register(cmd)
	cmd.Flags().StringVarP(&opts.Out, "out", "o", "-", "write the review_context JSON here (\"-\" for stdout)")
	cmd.Flags().StringVar(&opts.ConfigSource, "config-source", "auto", "where .diffpalignore is read from: auto (base in CI, else worktree), base, head, worktree")
	cmd.Flags().StringVar(&opts.Packet, "packet", "", "also write the evidence packet with item contents to this file")
	return cmd
}

// PacketFile is the --packet output.
type PacketFile = reviewctx.PacketFile

// PacketItem is an evidence item with its content.
type PacketItem = reviewctx.PacketItem

func contextRun(ctx context.Context, opts *ContextOptions) error {
	root, err := (&git.Runner{Dir: opts.Range.Dir}).TopLevel(ctx)
	if err != nil {
		return changeErrOf(err)
	}
	opts.Out, opts.Packet = inDir(opts.Range.Dir, opts.Out), inDir(opts.Range.Dir, opts.Packet)
	// The scope is review's: .diffpalignore from the same trusted side.
	co := opts.Range.options(opts.Paths)
	res, err := reviewctx.Build(ctx, reviewctx.Request{Dir: co.Dir, Range: co.Range, Paths: co.Paths,
		Repository: co.Repository, ConfigSource: opts.ConfigSource, Getenv: opts.IO.Getenv})
	if err != nil {
		var ue *reviewctx.UsageError
		if errors.As(err, &ue) {
			return usageErr("%v", ue.Err)
		}
		return changeErrOf(err)
	}
	ch, rc := res.Change, res.Context
	write := func(w io.Writer, v any) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(v)
	}
	if opts.Out == "-" || opts.Out == "" {
		if err := write(opts.IO.Out, rc); err != nil {
			return ioErr(err)
		}
	} else if err := writeOutput(ctx, root, opts.Out, safefile.Options{}, func(w io.Writer) error { return write(w, rc) }); err != nil {
		return err
	}
	if opts.Packet != "" {
		pf := res.Packet()
		if err := writeOutput(ctx, root, opts.Packet, safefile.Options{}, func(w io.Writer) error { return write(w, pf) }); err != nil {
			return err
		}
	}
	fmt.Fprintf(opts.IO.ErrOut, "context: %s %s..%s files=%d refs=%d skipped=%d (%s)\n",
		textsafe.Terminal(ch.Repository), output.ShortSHA(ch.Range.DiffBase), output.ShortSHA(ch.Range.Head), len(rc.ChangedFiles), len(rc.EvidenceRefs), len(ch.Skips), textsafe.Terminal(ch.Range.Why))
	return nil
}
