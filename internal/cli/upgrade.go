package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/safefile"
	"github.com/spf13/cobra"
)

// UpgradeOptions are the inputs of `diffpal upgrade`.
type UpgradeOptions struct {
	IO *IOStreams
	// Dir is -C; File and Out are resolved from it.
	Dir     string
	File    string
	Out     string
	InPlace bool
	Repo    string
	BlockOn string
}

// NewCmdUpgrade builds `diffpal upgrade`.
func NewCmdUpgrade(ios *IOStreams, runF func(*UpgradeOptions) error) *cobra.Command {
	opts := &UpgradeOptions{IO: ios}
	cmd := &cobra.Command{
		Use:   "upgrade FILE",
		Short: "Rewrite a v1 or v2 findings bundle as v3",
		Long: `Rewrite a bundle as v3: legacy string evidence and impact become
structured objects, severities are lower-cased ("HIGH" becomes "high",
in findings and gate.block_on), changed_span is filled
from path/start_line/end_line, ids and stable ids are recomputed,
blocking is recomputed with --block-on (default high), and findings are
put in deterministic order.

The result goes to standard output, or atomically to -o OUT; the input
is only replaced with --in-place, which keeps the file's mode and owner.
Nothing is written when the upgraded bundle would still be invalid; the
problems are listed instead. The file written must be absent or a regular
file (a symlink, device, FIFO or socket is refused), and no directory on
the way to a path inside the working directory may be a symlink.

` + dirHelp,
		Example: `  diffpal upgrade old.json -o findings.json
  diffpal upgrade --in-place .artifacts/diffpal/findings.json
  diffpal upgrade -C repo --in-place .artifacts/diffpal/findings.json
  diffpal upgrade old.json | jq '.findings | length'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkDir(opts.Dir); err != nil {
				return err
			}
			opts.File = inDir(opts.Dir, args[0])
			opts.Out = inDir(opts.Dir, opts.Out)
			if runF != nil {
				return runF(opts)
			}
			return upgradeRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Out, "output", "o", "", "write the upgraded bundle to this file (atomically)")
	cmd.Flags().BoolVar(&opts.InPlace, "in-place", false, "replace FILE with the upgraded bundle (atomically)")
	cmd.Flags().StringVar(&opts.Repo, "repo", "", "repository id for the finding id recipe (default: the bundle's, else \"local\")")
	cmd.Flags().StringVar(&opts.BlockOn, "block-on", "high", "lowest blocking severity for the recomputed blocking flags")
	addDirFlag(cmd, &opts.Dir)
	return cmd
}

func upgradeRun(ctx context.Context, opts *UpgradeOptions) error {
	if opts.InPlace && opts.Out != "" {
		return usageErr("--in-place and --output are mutually exclusive")
	}
	if opts.InPlace && opts.File == "-" {
		return usageErr("--in-place needs a file, not standard input")
	}
	blockOn, err := findings.ParseSeverity(opts.BlockOn)
	if err != nil {
		return usageErr("invalid --block-on %q: want one of low, medium, high, critical", opts.BlockOn)
	}
	name := displayName(opts.File)
	// Streamed (findings.NormalizeFile): the bundle is read through a
	// window, once to validate it, once to put its findings in order and
	// once, in that order, to write them; memory is about 150 bytes per
	// finding (its place in the order) and one finding.
	bf, problems, done, err := scanBundleProblems(opts.IO, opts.File, nil, false)
	if err != nil {
		return err
	}
	defer done()
	// Every problem blocks: a value of the wrong type would otherwise be
	// rewritten as zero. What upgrading repairs (severity case) the
	// decoder already read as a warning, not a problem.
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintf(opts.IO.ErrOut, "%s: %s\n", name, p)
		}
		return &ExitError{Code: ExitUsage, Err: fmt.Errorf("%s: cannot upgrade an invalid bundle (%d problems); nothing was written", name, len(problems))}
	}
	from := bf.Info.Effective
	hdr := *bf.Header
	hdr.Version = findings.CurrentVersion
	nopts := findings.Options{Repo: opts.Repo, Policy: findings.Policy{BlockOn: blockOn}}
	// invalid is what would still be wrong after upgrading; then nothing
	// is written (the atomic write is abandoned; standard output is only
	// written after a pass that checks).
	invalid := func(err error) error {
		var ps findings.Problems
		if !errors.As(err, &ps) {
			return ioErr(err)
		}
		for _, p := range ps {
			fmt.Fprintf(opts.IO.ErrOut, "%s: %s\n", name, p)
		}
		return &ExitError{Code: ExitUsage, Err: fmt.Errorf("%s: cannot upgrade an invalid bundle (%d problems); nothing was written", name, len(ps))}
	}
	var upgradeErr error
	n := 0
	write := func(w io.Writer) error {
		n, upgradeErr = findings.NormalizeFile(bf, &hdr, nopts, w)
		return upgradeErr
	}
	dest := opts.Out
	if opts.InPlace {
		dest = opts.File
	}
	if dest == "" || dest == "-" {
		if _, err := findings.NormalizeFile(bf, &hdr, nopts, nil); err != nil {
			return invalid(err)
		}
		if err := write(opts.IO.Out); err != nil {
			return invalid(err)
		}
	} else if err := writeOutput(ctx, opts.Dir, dest, safefile.Options{Perm: 0o644, Keep: opts.InPlace}, write); err != nil {
		var ps findings.Problems
		if errors.As(upgradeErr, &ps) {
			return invalid(upgradeErr)
		}
		if opts.InPlace {
			return err
		}
		return stdoutHint(err, "-o")
	}
	if dest != "" && dest != "-" {
		fmt.Fprintf(opts.IO.ErrOut, "upgraded %s from %s to %s: %d findings, written to %s\n", name, from, hdr.Version, n, dest)
	}
	return nil
}
