// Package cli is diffpal's command line: one file per command, each an
// Options struct, a NewCmdX constructor and a run function, in the style of
// gh. Commands are thin adapters over the core packages; this package and
// cmd/diffpal are the only places that print or choose exit codes.
package cli

import (
	"strings"

	"github.com/diffpalhq/diffpal/internal/review"
	"github.com/diffpalhq/diffpal/internal/secrets"
	"github.com/diffpalhq/diffpal/internal/textsafe"

	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
)

// NewRootCmd builds the command tree.
func NewRootCmd(ios *IOStreams) *cobra.Command {
	root := &cobra.Command{
		Use:   "diffpal <command>",
		Short: "Code review for CI and AI agents",
		Long: `diffpal reviews git changes and writes a canonical findings bundle
(.artifacts/diffpal/findings.json) that CI gates on, plus SARIF for code
scanning. The bundle commands below validate, gate, upgrade and convert
bundles written by diffpal or DiffPal.

Exit codes: 0 ok, 1 unexpected failure, 2 usage or invalid input,
3 provider failed, 4 publishing failed, 5 internal or I/O error,
10 gate blocked, 130 interrupted.`,
		Example: `  # Fail a CI step when the bundle has blocking findings
  diffpal gate

  # Check bundles against their schema, every problem with its JSON pointer
  diffpal validate .artifacts/diffpal/findings.json

  # Convert the bundle for GitHub code scanning
  diffpal sarif --out diffpal.sarif`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       versionString(),
	}
	root.SetIn(ios.In)
	root.SetOut(ios.Out)
	root.SetErr(ios.ErrOut)
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &ExitError{Code: ExitUsage, Err: fmt.Errorf("%w\nRun '%s --help' for usage.", err, c.CommandPath())}
	})
	root.AddCommand(
		NewCmdReview(ios, nil),
		NewCmdContext(ios, nil),
		NewCmdValidate(ios, nil),
		NewCmdGate(ios, nil),
		NewCmdUpgrade(ios, nil),
		NewCmdSarif(ios, nil),
		NewCmdSchema(ios, nil),
		NewCmdVersion(ios, nil),
		NewCmdMcp(ios, nil),
		NewCmdInit(ios, nil),
		NewCmdDoctor(ios, nil),
		NewCmdPublish(ios, nil),
		NewCmdRender(ios, nil),
		NewCmdDebug(ios),
	)
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		c.Example = `  # bash, this shell only
  source <(diffpal completion bash)

  # zsh, every new shell
  diffpal completion zsh > "${fpath[1]}/_diffpal"

  # fish
  diffpal completion fish > ~/.config/fish/completions/diffpal.fish`
		for _, sub := range c.Commands() {
			sub.Example = "  diffpal completion " + sub.Name() + " > diffpal-completion." + sub.Name()
		}
	}
	return root
}

// Run executes the CLI with args and returns the process exit code.
func Run(ctx context.Context, args []string, ios *IOStreams) int {
	root := NewRootCmd(ios)
	root.SetArgs(args)
	ran := false
	root.PersistentPreRun = func(cmd *cobra.Command, _ []string) {
		ran = true
		if cmd.Name() != "review" || cmd.Parent() != root {
			// A review's start-up lasts until review.Run, after its rules
			// and providers are built; every other command's ends here.
			review.StartupDone()
		}
	}
	err := root.ExecuteContext(ctx)
	if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
		fmt.Fprintln(ios.ErrOut, "diffpal: interrupted")
		return ExitInterrupted
	}
	code := exitCode(err, ran)
	var ee *ExitError
	if err != nil && !(errors.As(err, &ee) && ee.Silent) {
		fmt.Fprintf(ios.ErrOut, "diffpal: %s\n", safeMessage(err.Error()))
	}
	return code
}

// safeMessage is the last stop for an error message on its way to a CI
// log: secrets redacted (an error may quote a line of the change) and
// control and bidi characters made visible on every line, so a hostile
// file name cannot rewrite the log.
func safeMessage(msg string) string {
	lines := strings.Split(secrets.Redact(msg), "\n")
	for i, l := range lines {
		lines[i] = textsafe.Terminal(l)
	}
	return strings.Join(lines, "\n")
}
