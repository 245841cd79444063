package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/output"
	"github.com/diffpalhq/diffpal/internal/output/sarif"
	"github.com/spf13/cobra"
)

// DefaultSarifPath is where `diffpal sarif` writes by default.
const DefaultSarifPath = ".artifacts/diffpal/diffpal.sarif"

// SarifOptions are the inputs of `diffpal sarif`.
type SarifOptions struct {
	IO *IOStreams
	// Dir is -C; Input and Out are resolved from it.
	Dir   string
	Input string
	Out   string
	// outBase is the trusted directory of the write: Dir, or the
	// repository top level that holds the default bundle.
	outBase string
}

// NewCmdSarif builds `diffpal sarif`.
func NewCmdSarif(ios *IOStreams, runF func(*SarifOptions) error) *cobra.Command {
	opts := &SarifOptions{IO: ios}
	cmd := &cobra.Command{
		Use:   "sarif",
		Short: "Convert a findings bundle to SARIF 2.1.0",
		Long: `Convert a findings bundle to SARIF 2.1.0 for GitHub code scanning and
other SARIF consumers: one run, one rule per category with a default
level and security-severity, one result per finding with a repository-
relative URI, its line range, its level, and the stable id under
partialFingerprints["` + sarif.FingerprintKey + `"] so alerts survive line shifts.
A bundle whose findings carry no id or stable_id (as other producers
write it) gets the ones ` + "`diffpal upgrade`" + ` would compute, so every result
has its fingerprint. A severity that is not lower-case is read as its
lower-case value, with a warning on stderr.

The file is replaced atomically. It must be absent or a regular file: a
symlink, device (such as /dev/null), FIFO or socket is refused, as is a
symlink in any directory on the way to an --out inside the working
directory; --out - writes to standard output.

` + dirHelp + `
The default --out is diffpal.sarif beside the default bundle.`,
		Example: `  diffpal sarif
  diffpal sarif --input findings.json --out results.sarif
  diffpal review -C repo && diffpal sarif -C repo
  diffpal sarif --out - | jq '.runs[0].results | length'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkDir(opts.Dir); err != nil {
				return err
			}
			opts.outBase = opts.Dir
			root := ""
			if !cmd.Flags().Changed("input") || !cmd.Flags().Changed("out") {
				root = artifactsRoot(cmd.Context(), opts.Dir)
			}
			if cmd.Flags().Changed("input") {
				opts.Input = inDir(opts.Dir, opts.Input)
			} else {
				opts.Input = filepath.Join(root, findings.DefaultPath)
			}
			if cmd.Flags().Changed("out") {
				opts.Out = inDir(opts.Dir, opts.Out)
			} else {
				opts.Out = filepath.Join(root, DefaultSarifPath)
				opts.outBase = root
			}
			if runF != nil {
				return runF(opts)
			}
			return sarifRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Input, "input", findings.DefaultPath, "findings bundle to convert (\"-\" for stdin)")
	cmd.Flags().StringVar(&opts.Out, "out", DefaultSarifPath, "SARIF file to write (\"-\" for stdout)")
	addDirFlag(cmd, &opts.Dir)
	return cmd
}

func sarifRun(ctx context.Context, opts *SarifOptions) error {
	name := displayName(opts.Input)
	data, err := readBundleBytes(opts.IO, opts.Input)
	if err != nil {
		return usageErr("%s: %s", name, errorText(err, opts.Input))
	}
	b, info, err := findings.Parse(data)
	if err != nil {
		return usageErr("%s: %v (run `diffpal validate %s` for every problem)", name, err, opts.Input)
	}
	printWarnings(opts.IO.ErrOut, name, info.Warnings)
	log := sarif.Convert(b, output.SARIFTool())
	write := func(w io.Writer) error { return sarif.Encode(w, log) }
	// The working directory (-C, or the top level holding the default
	// bundle) is the trusted base: in CI it is the checkout, whose
	// directories a pull request controls.
	if written, err := writeOutOrStdout(ctx, opts.IO, opts.outBase, opts.Out, write); err != nil || !written {
		return err
	}
	fmt.Fprintf(opts.IO.Out, "sarif=%s findings=%d version=%s\n", opts.Out, len(b.Findings), info.Effective)
	return nil
}
