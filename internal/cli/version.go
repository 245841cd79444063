package cli

import (
	"encoding/json"
	"fmt"

	"github.com/diffpalhq/diffpal/internal/buildinfo"
	"github.com/spf13/cobra"
)

// VersionOptions are the inputs of `diffpal version`.
type VersionOptions struct {
	IO   *IOStreams
	JSON bool
}

func versionString() string {
	i := buildinfo.Get()
	s := fmt.Sprintf("diffpal %s+%s (%s)", i.Version, i.Commit, i.Date)
	if i.Modified {
		s += " modified"
	}
	return s
}

// NewCmdVersion builds `diffpal version`.
func NewCmdVersion(ios *IOStreams, runF func(*VersionOptions) error) *cobra.Command {
	opts := &VersionOptions{IO: ios}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the diffpal version",
		Example: `  diffpal version
  diffpal version --json`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if runF != nil {
				return runF(opts)
			}
			if opts.JSON {
				return json.NewEncoder(opts.IO.Out).Encode(buildinfo.Get())
			}
			_, err := fmt.Fprintln(opts.IO.Out, versionString())
			return err
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print version, commit, date and Go version as JSON")
	return cmd
}
