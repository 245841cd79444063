package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/diffpalhq/diffpal/hosts"
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
	// Setup, when set, writes the provider block of one agent setup (see
	// initSetups) and makes it the default provider.
	Setup string
	// Host, when set, installs diffpal into an agent host instead: its
	// MCP registration and QA rules (init_host.go).
	Host string
}

// initSetup is one --setup: the provider it writes and how the agent
// authenticates (a comment in the config).
type initSetup struct {
	name, id, block, auth string
}

var initSetups = []initSetup{
	{"codex-api-key", "codex-acp", "    type: codex_acp\n    reasoning: low\n",
		"Codex with an API key: npm i -g @openai/codex @normahq/codex-acp-bridge, then\n#   printenv OPENAI_API_KEY | codex login --with-api-key"},
	{"codex-subscription", "codex-acp", "    type: codex_acp\n    reasoning: low\n",
		"Codex with a ChatGPT subscription: restore ~/.codex/auth.json (chmod 600),\n#   in CI from a secret such as CODEX_AUTH_JSON_B64"},
	{"copilot-github-token", "copilot-acp", "    type: copilot_acp\n    model: auto\n",
		"GitHub Copilot CLI: npm i -g @github/copilot; set COPILOT_GITHUB_TOKEN to a fine-grained\n#   token with the Copilot Requests permission (diffpal never passes GITHUB_TOKEN/GH_TOKEN to agents)"},
	{"opencode-acp", "opencode-acp", "    type: opencode_acp\n    model: opencode/big-pickle\n",
		"OpenCode: install opencode and authenticate it with its own login"},
	{"generic-acp", "generic-acp", "    type: generic_acp\n    command: [\"your-acp-cli\", \"acp\", \"--stdio\"]\n",
		"Any agent speaking the Agent Client Protocol on stdio: replace the command"},
}

func setupNames() []string {
	out := make([]string, len(initSetups))
	for i, s := range initSetups {
		out[i] = s.name
	}
	return out
}

// setupConfig is the starter config with setup's provider block, made the
// default provider.
func setupConfig(name string) (string, error) {
	for _, s := range initSetups {
		if s.name != name {
			continue
		}
		block := "provider: " + s.id + "\n\n# " + s.auth + "\nproviders:\n  " + s.id + ":\n" + s.block +
			"    timeout: 10m\n\n# Fail the review (exit 3) when the agent shows no inspection of the diff.\n# inspection:\n#   required: true\n"
		out := strings.Replace(config.Starter, "provider: builtin\n", block, 1)
		return strings.Replace(out, "\n# providers:\n", "\n# More providers:\n# providers:\n", 1), nil
	}
	return "", usageErr("--setup %q: want one of %s", name, strings.Join(setupNames(), ", "))
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
  diffpal init --force
  diffpal init --setup copilot-github-token

  # Register diffpal mcp with an agent host and add its QA rules
  diffpal init --host claude-code   # .mcp.json and a block in CLAUDE.md
  diffpal init --host codex         # .codex/config.toml and a block in AGENTS.md
  diffpal init --host cursor        # .cursor/mcp.json and .cursor/rules/diffpal-qa.mdc`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(opts)
			}
			root, err := (&git.Runner{Dir: opts.Dir}).TopLevel(cmd.Context())
			if err != nil {
				return changeErrOf(err)
			}
			if opts.Host != "" {
				if opts.Setup != "" {
					return usageErr("--host and --setup write different files: run init once for each")
				}
				return initHostRun(cmd.Context(), opts, root)
			}
			return initRun(cmd.Context(), opts, root)
		},
	}
	cmd.Flags().BoolVar(&opts.Force, "force", false, "overwrite existing files")
	cmd.Flags().StringVar(&opts.Setup, "setup", "", "write the provider block of an agent setup and make it the default: "+strings.Join(setupNames(), ", "))
	_ = cmd.RegisterFlagCompletionFunc("setup", fixedCompletion(setupNames()...))
	cmd.Flags().StringVar(&opts.Host, "host", "", "install into an agent host instead: its MCP registration and QA rules ("+strings.Join(hosts.Names(), ", ")+"); other servers and your own text in those files are kept")
	_ = cmd.RegisterFlagCompletionFunc("host", fixedCompletion(hosts.Names()...))
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
	starter := config.Starter
	if opts.Setup != "" {
		var err error
		if starter, err = setupConfig(opts.Setup); err != nil {
			return err
		}
	}
	files := []struct{ path, content string }{
		{filepath.Join(root, config.DefaultPath), starter},
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
