package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/diffpalhq/diffpal/internal/config"
	"github.com/diffpalhq/diffpal/internal/git"
	"github.com/diffpalhq/diffpal/internal/provider"
	"github.com/diffpalhq/diffpal/internal/provider/anthropic"
	"github.com/diffpalhq/diffpal/internal/provider/builtin"
	"github.com/diffpalhq/diffpal/internal/provider/command"
	"github.com/diffpalhq/diffpal/internal/provider/llm"
	"github.com/diffpalhq/diffpal/internal/provider/openai"
	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/diffpalhq/diffpal/internal/scope"
)

// providerChoice is what the flags ask for.
type providerChoice struct {
	name    string // --provider (or DIFFPAL_PROVIDER / config provider)
	model   string // --model, for the default provider
	command string // --command, an agent CLI for --provider command
	noCache bool
	root    string
	packs   [][]byte
	// packNames label packs in errors (the path each was read from).
	packNames []string
	// instructions are the config's review guidance for model providers.
	instructions string
	// getenv reads provider key variables (the command's IOStreams; the
	// process environment when nil).
	getenv func(string) string
}

func (ch providerChoice) env(key string) string {
	if ch.getenv == nil {
		return os.Getenv(key)
	}
	return ch.getenv(key)
}

// providerSet is the resolved set: the engine's provider (a router when
// stages route profiles elsewhere) and the verifiers of the deep pass and
// synthesis (model providers only).
type providerSet struct {
	provider  provider.Provider
	deep      provider.Verifier
	synthesis provider.Verifier
	keyEnvs   map[string]string // provider name -> its key variable, for error messages
}

// buildProviders resolves names to providers: builtin, a key of the
// config's providers, or a bare type (openai, anthropic, command) set up
// from the environment variables the official SDKs read and the flags.
func buildProviders(ch providerChoice, cfg *config.Config) (*providerSet, error) {
	set := &providerSet{keyEnvs: map[string]string{}}
	built := map[string]provider.Provider{}
	var rulePacks *builtin.Builtin
	resolve := func(name string, isDefault bool) (provider.Provider, error) {
		if p, ok := built[name]; ok {
			return p, nil
		}
		var p provider.Provider
		switch pc, inConfig := cfg.Providers[name]; {
		case name == "builtin":
			if rulePacks == nil {
				b, err := builtin.NewNamed(ch.packNames, ch.packs)
				if err != nil {
					return nil, usageErr("rule packs: %v", err)
				}
				rulePacks = b
			}
			p = rulePacks
		case inConfig:
			if isDefault && ch.model != "" && pc.Type != "command" {
				pc.Model = ch.model
			}
			lp, err := modelProvider(name, pc, ch, set)
			if err != nil {
				return nil, err
			}
			p = lp
		case name == "openai" || name == "anthropic" || name == "command":
			pc := config.Provider{Type: name, Model: ch.model}
			if name == "command" {
				pc.Command = strings.Fields(ch.command)
				if len(pc.Command) == 0 {
					return nil, usageErr("--provider command needs --command \"AGENT ARGS\" (e.g. --command \"claude -p\") or a providers entry of type command in the config")
				}
			} else if pc.Model == "" {
				return nil, usageErr("--provider %s needs --model NAME (or a providers.%s entry with a model in the config)", name, name)
			}
			lp, err := modelProvider(name, pc, ch, set)
			if err != nil {
				return nil, err
			}
			p = lp
		default:
			names := []string{"builtin", "openai", "anthropic", "command"}
			for n := range cfg.Providers {
				names = append(names, n)
			}
			sort.Strings(names[4:])
			return nil, usageErr("unknown provider %q: want one of %s", name, strings.Join(names, ", "))
		}
		built[name] = p
		return p, nil
	}
	name := ch.name
	if name == "" {
		name = "builtin"
	}
	def, err := resolve(name, true)
	if err != nil {
		return nil, err
	}
	router := &provider.Router{Default: def, Profiles: map[qa.Profile]provider.Provider{}}
	stages := make([]string, 0, len(cfg.Stages))
	for s := range cfg.Stages {
		stages = append(stages, s)
	}
	sort.Strings(stages)
	for _, stage := range stages {
		p, err := resolve(cfg.Stages[stage], false)
		if err != nil {
			return nil, fmt.Errorf("stages.%s: %w", stage, err)
		}
		switch stage {
		case "deep_review", "synthesis":
			v, ok := p.(provider.Verifier)
			if !ok {
				return nil, usageErr("stages.%s: provider %q cannot verify candidates; route it to a model provider", stage, cfg.Stages[stage])
			}
			if stage == "deep_review" {
				set.deep = v
			} else {
				set.synthesis = v
			}
		default:
			router.Profiles[qa.Profile(stage)] = p
		}
	}
	// A model-backed review verifies with its model unless routed elsewhere.
	if v, ok := def.(provider.Verifier); ok {
		if set.deep == nil {
			set.deep = v
		}
		if set.synthesis == nil {
			set.synthesis = v
		}
	}
	set.provider = def
	if len(router.Profiles) > 0 {
		set.provider = router
	}
	return set, nil
}

// keyEnvOf names the variable holding a model provider's key: api_key_env,
// else the vendor's own. Review and doctor both resolve it here so that
// doctor checks the key review will send.
func keyEnvOf(pc config.Provider) string {
	if pc.APIKeyEnv != "" {
		return pc.APIKeyEnv
	}
	switch pc.Type {
	case "openai":
		return openai.APIKeyEnv
	case "anthropic":
		return anthropic.APIKeyEnv
	}
	return ""
}

// baseURLOf is the API root a model provider talks to: base_url, else the
// vendor's *_BASE_URL variable, else the vendor's default.
func baseURLOf(pc config.Provider) string {
	if pc.BaseURL != "" {
		return pc.BaseURL
	}
	switch pc.Type {
	case "openai":
		return cmp.Or(openai.FromEnv().BaseURL, openai.DefaultBaseURL)
	case "anthropic":
		return cmp.Or(anthropic.FromEnv().BaseURL, anthropic.DefaultBaseURL)
	}
	return ""
}

// modelProvider builds a transport and wraps it in the llm machinery.
func modelProvider(name string, pc config.Provider, ch providerChoice, set *providerSet) (*llm.Provider, error) {
	timeout, err := pc.TimeoutOf(0)
	if err != nil {
		return nil, usageErr("providers.%s.timeout: %v", name, err)
	}
	var client llm.Client
	switch pc.Type {
	// Timeout -1: the llm layer times calls.
	case "openai":
		set.keyEnvs[name] = keyEnvOf(pc)
		client, err = openai.New(openai.Config{
			BaseURL: baseURLOf(pc), APIKey: ch.env(keyEnvOf(pc)), APIKeyHeader: pc.APIKeyHeader,
			Model: pc.Model, Timeout: -1,
		})
	case "anthropic":
		set.keyEnvs[name] = keyEnvOf(pc)
		client, err = anthropic.New(anthropic.Config{
			BaseURL: baseURLOf(pc), APIKey: ch.env(keyEnvOf(pc)),
			Model: pc.Model, MaxTokens: pc.MaxTokens, Timeout: -1,
		})
	case "command":
		client, err = command.New(command.Config{Argv: pc.Command, Dir: ch.root, Timeout: -1})
	default:
		return nil, usageErr("providers.%s.type: unknown type %q", name, pc.Type)
	}
	if err != nil {
		var le *llm.Error
		if errors.As(err, &le) && le.Kind == llm.Auth {
			return nil, &ExitError{Code: ExitProvider, Err: fmt.Errorf("provider %s: %v (set %s)", name, err, set.keyEnvs[name])}
		}
		return nil, usageErr("provider %s: %v", name, err)
	}
	cacheDir := ""
	if !ch.noCache && cacheUsable(ch.root) {
		cacheDir = filepath.Join(ch.root, llm.DefaultCacheDir)
	}
	callTimeout := timeout
	if callTimeout == 0 {
		callTimeout = 5 * time.Minute
		if pc.Type == "command" {
			callTimeout = 10 * time.Minute
		}
	}
	p, err := llm.New(llm.Config{
		Client: client, Model: pc.Model, Reasoning: pc.Reasoning, MaxTokens: pc.MaxTokens,
		MaxBytes: pc.MaxBytes, CallTimeout: callTimeout, Concurrency: pc.MaxConcurrency, CacheDir: cacheDir, CacheBase: ch.root,
		Instructions: ch.instructions,
	})
	if err != nil {
		return nil, usageErr("provider %s: %v", name, err)
	}
	return p, nil
}

// providerErr maps a failed review to exit 3 when a provider gave up.
func providerErr(err error, set *providerSet) error {
	if !errors.Is(err, llm.ErrProviderFailed) {
		return nil
	}
	if errors.Is(err, llm.ErrProviderAuth) {
		var envs []string
		for _, e := range set.keyEnvs {
			envs = append(envs, e)
		}
		sort.Strings(envs)
		hint := ""
		if len(envs) > 0 {
			hint = " (check " + strings.Join(envs, ", ") + ")"
		}
		return &ExitError{Code: ExitProvider, Err: fmt.Errorf("provider authentication failed%s: %w", hint, err)}
	}
	return &ExitError{Code: ExitProvider, Err: fmt.Errorf("provider failed after retries: %w", err)}
}

// cacheUsable reports whether the answer cache under the repository may
// be used: not when the repository itself tracks files there, because a
// change under review could then commit answers ("no findings") keyed to
// its own diff. Such a cache is ignored, never read or written.
func cacheUsable(root string) bool {
	if root == "" {
		return false
	}
	out, err := (&git.Runner{Dir: root}).Run(context.Background(), "ls-files", "-z", "--", scope.OutputDir)
	return err == nil && len(out) == 0
}
