package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/config"
	"github.com/diffpalhq/diffpal/internal/git"
	"github.com/spf13/cobra"
)

// InitOptions are the inputs of `diffpal init`.
type InitOptions struct {
	IO    *IOStreams
	Dir   string
	Force bool
}

// NewCmdInit builds `diffpal init`.
func NewCmdInit(ios *IOStreams, runF func(*InitOptions) error) *cobra.Command {
	opts := &InitOptions{IO: ios}
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Write a commented starter config and .diffpalignore",
		Long: `Write .config/diffpal/config.yaml (every setting at its default or
commented out) and a .diffpalignore at the repository root. Existing files
are kept unless --force.`,
		Example: `  diffpal init
  diffpal init --force`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(opts)
			}
			root, err := (&git.Runner{Dir: opts.Dir}).TopLevel(cmd.Context())
			if err != nil {
				return changeErr(err)
			}
			return initRun(opts, root)
		},
	}
	cmd.Flags().BoolVar(&opts.Force, "force", false, "overwrite existing files")
	cmd.Flags().StringVarP(&opts.Dir, "dir", "C", ".", "repository directory")
	return cmd
}

const starterIgnore = `# Paths diffpal review skips (gitignore syntax). Skips are listed in the
# summary with this file as the reason.
.artifacts/
dist/
build/
`

func initRun(opts *InitOptions, root string) error {
	files := []struct{ path, content string }{
		{filepath.Join(root, config.DefaultPath), config.Starter},
		{filepath.Join(root, ".diffpalignore"), starterIgnore},
	}
	for _, f := range files {
		if _, err := os.Stat(f.path); err == nil && !opts.Force {
			fmt.Fprintf(opts.IO.Out, "kept %s (exists; --force overwrites)\n", f.path)
			continue
		} else if err != nil && !errors.Is(err, os.ErrNotExist) {
			return ioErr(err)
		}
		content := f.content
		if err := findings.AtomicWrite(f.path, 0o644, func(w io.Writer) error {
			_, err := io.WriteString(w, content)
			return err
		}); err != nil {
			return ioErr(fmt.Errorf("write %s: %w", f.path, err))
		}
		fmt.Fprintf(opts.IO.Out, "wrote %s\n", f.path)
	}
	return nil
}
