package cli

import (
	"context"
	"errors"
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
	// The bundle is read through a window, twice (the rules need every
	// finding's category before the first result): memory is the rules
	// and one finding, whatever the size of the bundle.
	var rules sarif.Rules
	bf, done, err := scanBundle(opts.IO, opts.Input, rules.Add)
	if err != nil {
		return err
	}
	defer done()
	printWarnings(opts.IO.ErrOut, name, bf.Info.Warnings)
	write := func(w io.Writer) error { return sarif.WriteFile(w, bf, &rules, output.SARIFTool()) }
	// The working directory (-C, or the top level holding the default
	// bundle) is the trusted base: in CI it is the checkout, whose
	// directories a pull request controls.
	if written, err := writeOutOrStdout(ctx, opts.IO, opts.outBase, opts.Out, write); err != nil || !written {
		return err
	}
	fmt.Fprintf(opts.IO.Out, "sarif=%s findings=%d version=%s\n", opts.Out, bf.Len(), bf.Info.Effective)
	return nil
}

// scanBundle opens the bundle at path ("-": standard input, copied to a
// temporary file first, as a named pipe is) and scans it
// (findings.ScanFile: decoded and validated through a window, each seeing
// every finding), for the commands that then read it again to write
// (sarif, render, upgrade). Its errors are the usage errors those
// commands gave when they read the whole bundle: the file (or the size
// limit) named as readBundleBytes names it, a bundle that is not JSON or
// breaks its version's rules with the advice to run validate; a bundle
// with problems is refused only when each is set (upgrade lists them
// itself). done closes the file.
func scanBundle(ios *IOStreams, path string, each func(*findings.Finding)) (bf *findings.BundleFile, done func(), err error) {
	bf, problems, done, err := scanBundleProblems(ios, path, each, true)
	if err != nil {
		return nil, nil, err
	}
	if len(problems) > 0 {
		done()
		return nil, nil, usageErr("%s: %v (run `diffpal validate %s` for every problem)", displayName(path), problems, path)
	}
	return bf, done, nil
}

// scanBundleProblems is scanBundle that returns the bundle's problems
// instead of refusing it; advise adds the advice to run validate to a
// syntax error (upgrade names it alone).
func scanBundleProblems(ios *IOStreams, path string, each func(*findings.Finding), advise bool) (*findings.BundleFile, findings.Problems, func(), error) {
	name := displayName(path)
	readErr := func(err error) error { return usageErr("%s: %s", name, errorText(limitHint(err), path)) }
	limit, err := maxBundleBytes(ios)
	if err != nil {
		return nil, nil, nil, readErr(err)
	}
	var r io.ReaderAt
	var size int64
	var done func()
	if path == "-" {
		r, size, done, err = findings.Spool(ios.In, limit)
	} else {
		r, size, done, err = findings.OpenFile(path, limit)
	}
	if err != nil {
		return nil, nil, nil, readErr(err)
	}
	bf, problems, err := findings.ScanFile(r, size, limit, each)
	if err != nil {
		done()
		var se *findings.SyntaxError
		if errors.As(err, &se) {
			if !advise {
				return nil, nil, nil, usageErr("%s: %v", name, err)
			}
			return nil, nil, nil, usageErr("%s: %v (run `diffpal validate %s` for every problem)", name, err, path)
		}
		if path != "-" {
			err = fmt.Errorf("%s: %w", path, err)
		}
		return nil, nil, nil, readErr(err)
	}
	return bf, problems, done, nil
}
