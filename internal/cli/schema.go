package cli

import (
	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/config"
	"github.com/spf13/cobra"
)

// SchemaOptions are the inputs of `diffpal schema`.
type SchemaOptions struct {
	IO      *IOStreams
	Version string
}

// NewCmdSchema builds `diffpal schema`.
func NewCmdSchema(ios *IOStreams, runF func(*SchemaOptions) error) *cobra.Command {
	opts := &SchemaOptions{IO: ios}
	cmd := &cobra.Command{
		Use:   "schema [v1|v2|v3|config]",
		Short: "Print the embedded JSON Schema of a findings bundle version or of the config",
		Long: `Print the JSON Schema (draft 2020-12) that diffpal validates bundles
against. Without an argument it prints the schema of the version new
bundles are written in (v3).`,
		Example: `  diffpal schema > findings-v3.schema.json
  diffpal schema v1
  diffpal schema config > .config/diffpal/config.schema.json`,
		Args:      cobra.MaximumNArgs(1),
		ValidArgs: append(findings.SchemaVersions(), "config"),
		RunE: func(_ *cobra.Command, args []string) error {
			opts.Version = findings.CurrentVersion
			if len(args) == 1 {
				opts.Version = args[0]
			}
			if runF != nil {
				return runF(opts)
			}
			return schemaRun(opts)
		},
	}
	return cmd
}

func schemaRun(opts *SchemaOptions) error {
	if opts.Version == "config" {
		_, err := opts.IO.Out.Write(config.Schema())
		return err
	}
	data, err := findings.Schema(opts.Version)
	if err != nil {
		return usageErr("%v", err)
	}
	_, err = opts.IO.Out.Write(data)
	return err
}
