package cli

import (
	"context"
	"errors"
	"fmt"
	"github.com/diffpalhq/diffpal/hosts"
	"net/http"
	neturl "net/url"
	"os"
	"os/exec"
	"sort"
	"strings"
	"time"

	"github.com/diffpalhq/diffpal/internal/config"
	"github.com/diffpalhq/diffpal/internal/git"
	"github.com/diffpalhq/diffpal/internal/provider/acp"
	"github.com/diffpalhq/diffpal/internal/provider/anthropic"
	"github.com/diffpalhq/diffpal/internal/provider/builtin"
	"github.com/diffpalhq/diffpal/internal/provider/llm"
	"github.com/diffpalhq/diffpal/internal/providerset"
	"github.com/diffpalhq/diffpal/internal/review"
	"github.com/diffpalhq/diffpal/internal/secrets"
	"github.com/spf13/cobra"
)

// DoctorOptions are the inputs of `diffpal doctor`.
type DoctorOptions struct {
	IO         *IOStreams
	Dir        string
	ConfigPath string
	// ConfigSource is review's --config-source: doctor checks the policy
	// review would use.
	ConfigSource string
	Online       bool
	HTTPClient   *http.Client
}

// NewCmdDoctor builds `diffpal doctor`.
func NewCmdDoctor(ios *IOStreams, runF func(*DoctorOptions) error) *cobra.Command {
	opts := &DoctorOptions{IO: ios}
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check git, the config and the providers (read-only)",
		Long: `Check that git works and this is a repository with a default branch,
that the config file is valid, and that every configured provider has what
it needs: its API key variable set (values are never printed) or its agent
command on PATH (ACP agents: the command and the agent CLI it runs).
--online also checks that each API endpoint answers and that each ACP
agent completes an ACP initialize.
Nothing is written. Exit 2 when a check fails.`,
		Example: `  diffpal doctor
  diffpal doctor --online`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(opts)
			}
			return doctorRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Dir, "dir", "C", ".", "repository directory")
	cmd.Flags().StringVar(&opts.ConfigPath, "config", "", "config file (default: .config/diffpal/config.yaml in the repository)")
	cmd.Flags().StringVar(&opts.ConfigSource, "config-source", "auto", "check the policy review would read: auto (base in CI, else worktree), base, head, worktree")
	cmd.Flags().BoolVar(&opts.Online, "online", false, "also contact each configured API endpoint and initialize each ACP agent")
	return cmd
}

func doctorRun(ctx context.Context, opts *DoctorOptions) error {
	failed := 0
	say := func(level, format string, args ...any) {
		if level == "error" {
			failed++
		}
		fmt.Fprintf(opts.IO.Out, "%-5s %s\n", level+":", fmt.Sprintf(format, args...))
	}
	if out, err := exec.CommandContext(ctx, "git", "--version").Output(); err != nil {
		say("error", "git not found on PATH")
	} else {
		say("ok", "%s", strings.TrimSpace(string(out)))
	}
	r := &git.Runner{Dir: opts.Dir}
	root, err := r.TopLevel(ctx)
	if err != nil {
		say("error", "%v", err)
	} else {
		say("ok", "repository %s", root)
		r = r.At(root)
		if b, err := r.DefaultBranch(ctx); err != nil {
			say("warn", "%v", err)
		} else {
			say("ok", "default branch %s", b)
		}
		if shallow, _ := r.IsShallow(ctx); shallow {
			say("warn", "shallow clone: reviews against an unfetched base fail; fetch with depth 0 or fetch the base ref")
		}
	}
	cfg := &config.Config{Version: "v1"}
	switch {
	case root != "":
		// The policy review would run with: config, .diffpalignore and
		// rule packs from the same side, with the same bounds and checks.
		pol, _, err := loadPolicyFor(ctx, opts.IO, r, review.ChangeOptions{}, opts.ConfigSource, opts.ConfigPath, true)
		if err != nil {
			say("error", "%v", errors.Unwrap(err))
			break
		}
		cfg = pol.Config
		say("ok", "policy from %s (%s)", pol.Record.Source, pol.Record.Why)
		if cfg.Path != "" {
			say("ok", "config %s", cfg.Path)
		} else {
			say("ok", "no config file (defaults; diffpal init writes one)")
		}
		if len(pol.Packs) > 0 {
			say("ok", "%d rule packs load", len(pol.Packs))
			if _, err := builtin.NewNamed(packsOf(pol)); err != nil {
				say("error", "%v", err)
			}
		}
		for _, c := range pol.Record.Changes {
			say("warn", "the current change edits its own review policy: %s %s", c.Path, c.Detail)
		}
		// Agent hosts diffpal init --host installed (or half-installed).
		for _, h := range hosts.All() {
			if msg, ok := hostStatus(root, h); ok {
				say("ok", "%s", msg)
			} else if msg != "" {
				say("warn", "%s", msg)
			}
		}
	case opts.ConfigPath != "":
		if cfg, err = config.Load(root, opts.ConfigPath); err != nil {
			say("error", "%v", err)
			cfg = &config.Config{Version: "v1"}
		} else {
			say("ok", "config %s", cfg.Path)
		}
	}
	names := make([]string, 0, len(cfg.Providers))
	for n := range cfg.Providers {
		names = append(names, n)
	}
	sort.Strings(names)
	say("ok", "provider builtin: %s", "offline rule packs")
	client := opts.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	for _, n := range names {
		p := cfg.Providers[n]
		switch p.Type {
		case "command":
			if path, err := exec.LookPath(p.Command[0]); err != nil {
				say("error", "provider %s: command %q not found on PATH", n, p.Command[0])
			} else {
				say("ok", "provider %s: command %s", n, path)
			}
		case "codex_acp", "copilot_acp", "opencode_acp", "gemini_acp", "claude_code_acp", "generic_acp":
			checkACP(ctx, opts, root, n, p, say)
		case "pool":
			say("ok", "provider %s: pool of %d members (%s), tried in order", n, len(p.Members), strings.Join(p.Members, ", "))
		case "openai", "anthropic", "aistudio":
			env := providerset.KeyEnvOf(p)
			key := opts.IO.Getenv(env)
			if key == "" {
				say("error", "provider %s: %s is not set", n, env)
			} else {
				say("ok", "provider %s: %s is set (%d characters; value not shown)", n, env, len(key))
			}
			if opts.Online && p.Type != "aistudio" {
				checkEndpoint(ctx, client, n, p, key, say)
			}
		}
	}
	if failed > 0 {
		return &ExitError{Code: ExitUsage, Err: fmt.Errorf("doctor: %s failed", plural(failed, "check"))}
	}
	return nil
}

// checkACP checks an ACP agent: its command (and the agent CLI it runs)
// on PATH and, with --online, that it completes an ACP initialize.
func checkACP(ctx context.Context, opts *DoctorOptions, root, name string, p config.Provider, say func(string, string, ...any)) {
	argv, err := acp.CommandLine(p.Type, p.Command, p.Model)
	if err != nil {
		say("error", "provider %s: %v", name, err)
		return
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		say("error", "provider %s: command %q not found on PATH", name, argv[0])
		return
	}
	say("ok", "provider %s: %s agent command %s", name, p.Type, path)
	if a, _ := acp.Lookup(p.Type); a.Binary != "" && a.Binary != argv[0] {
		if _, err := exec.LookPath(a.Binary); err != nil {
			hint := ""
			if a.Install != "" {
				hint = " (CI: " + a.Install + ")"
			}
			say("warn", "provider %s: the %s CLI the agent runs is not on PATH%s", name, a.Binary, hint)
		}
	}
	if !opts.Online || root == "" {
		return
	}
	c, err := acp.New(acp.Config{Type: p.Type, Argv: argv, Dir: root, Timeout: 60 * time.Second, KillGrace: 2 * time.Second,
		Env: secrets.WithoutCodeHostTokens(os.Environ())})
	if err != nil {
		say("error", "provider %s: %v", name, err)
		return
	}
	if agent, err := c.Probe(ctx); err != nil {
		say("error", "provider %s: ACP initialize failed: %v", name, err)
	} else {
		say("ok", "provider %s: ACP initialize completed (%s)", name, agent)
	}
}

// checkEndpoint lists models, which every compatible API offers and which
// costs nothing; only the status is reported.
func checkEndpoint(ctx context.Context, client *http.Client, name string, p config.Provider, key string, say func(string, string, ...any)) {
	path := "/models"
	if p.Type == "anthropic" {
		path = "/v1/models"
	}
	// The same URL building as review's transports, so a query such as
	// Azure's ?api-version= is kept rather than swallowing the path.
	ep, err := llm.NewHTTPEndpoint(p.Type, providerset.BaseURLOf(p), path, client, 0, "", key)
	if err != nil {
		say("error", "provider %s: %v", name, err)
		return
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ep.URL.String(), nil)
	if err != nil {
		say("error", "provider %s: %v", name, llm.RedactKey(err.Error(), key))
		return
	}
	req.Header.Set("User-Agent", ep.UserAgent)
	url := llm.RedactURL(ep.URL.String())
	switch {
	case p.Type == "anthropic":
		req.Header.Set("x-api-key", key)
		req.Header.Set("anthropic-version", anthropic.APIVersion)
	case p.APIKeyHeader != "":
		req.Header.Set(p.APIKeyHeader, key) // Azure-style key auth, as review sends it
	default:
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := client.Do(req)
	if ue := (*neturl.Error)(nil); errors.As(err, &ue) {
		err = ue.Err // its URL may carry a secret in the query; url is printed redacted
	}
	if err != nil {
		say("error", "provider %s: %s unreachable: %v", name, url, llm.RedactKey(err.Error(), key))
		return
	}
	resp.Body.Close()
	switch {
	case resp.StatusCode == 401 || resp.StatusCode == 403:
		say("error", "provider %s: %s rejected the key (HTTP %d)", name, url, resp.StatusCode)
	case resp.StatusCode >= 400:
		say("warn", "provider %s: %s answered HTTP %d", name, url, resp.StatusCode)
	default:
		say("ok", "provider %s: %s reachable (HTTP %d)", name, url, resp.StatusCode)
	}
}
