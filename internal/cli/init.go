package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/diffpalhq/diffpal/internal/config"
	"github.com/diffpalhq/diffpal/internal/git"
	"github.com/diffpalhq/diffpal/internal/safefile"
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
are kept unless --force. Nothing is written through a symlink: a linked
.config or .config/diffpal directory, or a file that is a symlink or not
a regular file, is refused with an error naming it.`,
		Example: `  diffpal init
  diffpal init --force`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(opts)
			}
			root, err := (&git.Runner{Dir: opts.Dir}).TopLevel(cmd.Context())
			if err != nil {
				return changeErrOf(err)
			}
			return initRun(cmd.Context(), opts, root)
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

func initRun(ctx context.Context, opts *InitOptions, root string) error {
	files := []struct{ path, content string }{
		{filepath.Join(root, config.DefaultPath), config.Starter},
		{filepath.Join(root, ".diffpalignore"), starterIgnore},
	}
	for _, f := range files {
		// Lstat: a symlink counts as existing (and is refused by --force)
		// rather than being followed to decide.
		if _, err := os.Lstat(f.path); err == nil && !opts.Force {
			fmt.Fprintf(opts.IO.Out, "kept %s (exists; --force overwrites)\n", f.path)
			continue
		} else if err != nil && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return ioErr(err)
		}
		content := f.content
		if err := writeOutput(ctx, root, f.path, safefile.Options{Perm: 0o644}, func(w io.Writer) error {
			_, err := io.WriteString(w, content)
			return err
		}); err != nil {
			return err
		}
		fmt.Fprintf(opts.IO.Out, "wrote %s\n", f.path)
	}
	return nil
}
