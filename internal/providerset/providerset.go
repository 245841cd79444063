// Package providerset builds the providers a review runs with from the
// config and the user's choice: the default provider by name (builtin, a
// key of the config's providers, or a bare type set up from the vendor's
// environment variables), the profile routes and the deep-review and
// synthesis verifiers of the config's stages, and the model-answer cache.
// It is the wiring between internal/config and the providers under
// internal/provider; commands call Build and map its errors to exit codes.
package providerset

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
	"github.com/diffpalhq/diffpal/internal/provider/acp"
	"github.com/diffpalhq/diffpal/internal/provider/aistudio"
	"github.com/diffpalhq/diffpal/internal/provider/anthropic"
	"github.com/diffpalhq/diffpal/internal/provider/builtin"
	"github.com/diffpalhq/diffpal/internal/provider/command"
	"github.com/diffpalhq/diffpal/internal/provider/llm"
	"github.com/diffpalhq/diffpal/internal/provider/openai"
	"github.com/diffpalhq/diffpal/internal/provider/pool"
	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/diffpalhq/diffpal/internal/scope"
	"github.com/diffpalhq/diffpal/internal/secrets"
)

// Error is a provider that cannot be set up. Auth errors mean the key was
// refused or is missing (exit 3 in the CLI); the rest are configuration
// or usage mistakes (exit 2).
type Error struct {
	Auth bool
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

func usageErrf(format string, args ...any) error {
	return &Error{Err: fmt.Errorf(format, args...)}
}

func authErr(err error) error { return &Error{Auth: true, Err: err} }

// Choice is what the user asks for: flags over the config.
type Choice struct {
	Name    string // --provider (or DIFFPAL_PROVIDER / config provider)
	Model   string // --model, for the default provider
	Command string // --command, an agent CLI for --provider command
	NoCache bool
	Root    string
	Packs   [][]byte
	// PackNames label packs in errors (the path each was read from).
	PackNames []string
	// Instructions are the config's review guidance for model providers.
	Instructions string
	// Language is the language model providers write their text in.
	Language string
	// Getenv reads provider key variables (the command's IOStreams; the
	// process environment when nil).
	Getenv func(string) string
	// Record, when set, replaces every model transport (diffpal debug
	// prompt): the llm machinery builds the same prompts, the client Record
	// returns answers without calling anything, and no answer is cached.
	Record func(provider string, pc config.Provider) llm.Client
}

func (ch Choice) env(key string) string {
	if ch.Getenv == nil {
		return os.Getenv(key)
	}
	return ch.Getenv(key)
}

// Set is the resolved set: the engine's provider (a router when
// stages route profiles elsewhere) and the verifiers of the deep pass and
// synthesis (model providers only).
type Set struct {
	Provider  provider.Provider
	Deep      provider.Verifier
	Synthesis provider.Verifier
	KeyEnvs   map[string]string // provider name -> its key variable, for error messages
}

// Build resolves names to providers: builtin, a key of the
// config's providers, or a bare type (openai, anthropic, command) set up
// from the environment variables the official SDKs read and the flags.
func Build(ch Choice, cfg *config.Config) (*Set, error) {
	set := &Set{KeyEnvs: map[string]string{}}
	built := map[string]provider.Provider{}
	var rulePacks *builtin.Builtin
	building := map[string]bool{}
	var resolve func(name string, isDefault bool) (provider.Provider, error)
	resolve = func(name string, isDefault bool) (provider.Provider, error) {
		if p, ok := built[name]; ok {
			return p, nil
		}
		var p provider.Provider
		switch pc, inConfig := cfg.Providers[name]; {
		case name == "builtin":
			if rulePacks == nil {
				b, err := builtin.NewNamed(ch.PackNames, ch.Packs)
				if err != nil {
					return nil, usageErrf("rule packs: %v", err)
				}
				if err := b.Rules.Configure(cfg.Rules.Enable, cfg.Rules.Disable); err != nil {
					return nil, usageErrf("config: %v", err)
				}
				rulePacks = b
			}
			p = rulePacks
		case inConfig && pc.Type == "pool":
			if building[name] {
				return nil, usageErrf("providers.%s: a pool cannot contain itself", name)
			}
			building[name] = true
			var members []pool.Member
			for _, m := range pc.Members {
				mp, err := resolve(m, false)
				if err != nil {
					return nil, fmt.Errorf("providers.%s.members: %w", name, err)
				}
				members = append(members, pool.Member{Name: m, Provider: mp})
			}
			pp, err := pool.New(name, members)
			if err != nil {
				return nil, usageErrf("%v", err)
			}
			p = pp
		case inConfig:
			if isDefault && ch.Model != "" && pc.Type != "command" {
				pc.Model = ch.Model
			}
			lp, err := modelProvider(name, pc, ch, set)
			if err != nil {
				return nil, err
			}
			p = lp
		case config.IsACP(name):
			// A bare ACP type: its default command line (generic_acp
			// takes --command).
			pc := config.Provider{Type: name, Model: ch.Model}
			if name == "generic_acp" {
				if pc.Command = strings.Fields(ch.Command); len(pc.Command) == 0 {
					return nil, usageErrf("--provider generic_acp needs --command \"AGENT ARGS\" (an ACP agent on stdio) or a providers entry of type generic_acp in the config")
				}
			}
			lp, err := modelProvider(name, pc, ch, set)
			if err != nil {
				return nil, err
			}
			p = lp
		case name == "openai" || name == "anthropic" || name == "command" || name == "aistudio":
			pc := config.Provider{Type: name, Model: ch.Model}
			if name == "command" {
				pc.Command = strings.Fields(ch.Command)
				if len(pc.Command) == 0 {
					return nil, usageErrf("--provider command needs --command \"AGENT ARGS\" (e.g. --command \"claude -p\") or a providers entry of type command in the config")
				}
			} else if pc.Model == "" {
				return nil, usageErrf("--provider %s needs --model NAME (or a providers.%s entry with a model in the config)", name, name)
			}
			lp, err := modelProvider(name, pc, ch, set)
			if err != nil {
				return nil, err
			}
			p = lp
		default:
			names := append([]string{"builtin", "openai", "anthropic", "command", "aistudio"}, config.ACPTypes...)
			fixed := len(names)
			for n := range cfg.Providers {
				names = append(names, n)
			}
			sort.Strings(names[fixed:])
			return nil, usageErrf("unknown provider %q: want one of %s", name, strings.Join(names, ", "))
		}
		built[name] = p
		return p, nil
	}
	name := ch.Name
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
				return nil, usageErrf("stages.%s: provider %q cannot verify candidates; route it to a model provider", stage, cfg.Stages[stage])
			}
			if stage == "deep_review" {
				set.Deep = v
			} else {
				set.Synthesis = v
			}
		default:
			router.Profiles[qa.Profile(stage)] = p
		}
	}
	// A model-backed review verifies with its model unless routed elsewhere.
	if v, ok := def.(provider.Verifier); ok {
		if set.Deep == nil {
			set.Deep = v
		}
		if set.Synthesis == nil {
			set.Synthesis = v
		}
	}
	set.Provider = def
	if len(router.Profiles) > 0 {
		set.Provider = router
	}
	return set, nil
}

// KeyEnvOf names the variable holding a model provider's key: api_key_env,
// else the vendor's own. Review and doctor both resolve it here so that
// doctor checks the key review will send.
func KeyEnvOf(pc config.Provider) string {
	if pc.APIKeyEnv != "" {
		return pc.APIKeyEnv
	}
	switch pc.Type {
	case "openai":
		return openai.APIKeyEnv
	case "anthropic":
		return anthropic.APIKeyEnv
	case "aistudio":
		return aistudio.APIKeyEnv
	}
	return ""
}

// BaseURLOf is the API root a model provider talks to: base_url, else the
// vendor's *_BASE_URL variable, else the vendor's default.
func BaseURLOf(pc config.Provider) string {
	if pc.BaseURL != "" {
		return pc.BaseURL
	}
	switch pc.Type {
	case "openai":
		return cmp.Or(openai.FromEnv().BaseURL, openai.DefaultBaseURL)
	case "anthropic":
		return cmp.Or(anthropic.FromEnv().BaseURL, anthropic.DefaultBaseURL)
	case "aistudio":
		return cmp.Or(os.Getenv(aistudio.BaseURLEnv), aistudio.DefaultBaseURL)
	}
	return ""
}

// modelProvider builds a transport and wraps it in the llm machinery.
func modelProvider(name string, pc config.Provider, ch Choice, set *Set) (*llm.Provider, error) {
	timeout, err := pc.TimeoutOf(0)
	if err != nil {
		return nil, usageErrf("providers.%s.timeout: %v", name, err)
	}
	var client llm.Client
	switch {
	case ch.Record != nil:
		client = ch.Record(name, pc)
		ch.NoCache = true
	// Timeout -1: the llm layer times calls.
	case pc.Type == "openai":
		set.KeyEnvs[name] = KeyEnvOf(pc)
		client, err = openai.New(openai.Config{
			BaseURL: BaseURLOf(pc), APIKey: ch.env(KeyEnvOf(pc)), APIKeyHeader: pc.APIKeyHeader,
			Model: pc.Model, Timeout: -1,
		})
	case pc.Type == "anthropic":
		set.KeyEnvs[name] = KeyEnvOf(pc)
		client, err = anthropic.New(anthropic.Config{
			BaseURL: BaseURLOf(pc), APIKey: ch.env(KeyEnvOf(pc)),
			Model: pc.Model, MaxTokens: pc.MaxTokens, Timeout: -1,
		})
	case pc.Type == "command":
		// The agent reads the untrusted change: it gets diffpal's
		// environment without the code hosts' write tokens, which only
		// publishing needs (review --publish holds them in CI).
		client, err = command.New(command.Config{Argv: pc.Command, Dir: ch.Root, Timeout: -1, Env: secrets.WithoutCodeHostTokens(os.Environ())})
	case pc.Type == "aistudio":
		set.KeyEnvs[name] = KeyEnvOf(pc)
		client, err = aistudio.New(aistudio.Config{BaseURL: BaseURLOf(pc), APIKey: ch.env(KeyEnvOf(pc)), Model: pc.Model, Timeout: -1})
	case config.IsACP(pc.Type):
		// The same environment as command: no code-host write tokens
		// reach an agent that reads the untrusted change.
		var argv []string
		if argv, err = acp.CommandLine(pc.Type, pc.Command, pc.Model); err == nil {
			client, err = acp.New(acp.Config{Type: pc.Type, Argv: argv, Dir: ch.Root, Timeout: -1, Env: secrets.WithoutCodeHostTokens(os.Environ())})
		}
	default:
		return nil, usageErrf("providers.%s.type: unknown type %q", name, pc.Type)
	}
	if err != nil {
		var le *llm.Error
		if errors.As(err, &le) && le.Kind == llm.Auth {
			return nil, authErr(fmt.Errorf("provider %s: %v (set %s)", name, err, set.KeyEnvs[name]))
		}
		return nil, usageErrf("provider %s: %v", name, err)
	}
	cacheDir := ""
	if !ch.NoCache && CacheUsable(ch.Root) {
		cacheDir = filepath.Join(ch.Root, llm.DefaultCacheDir)
	}
	callTimeout := timeout
	if callTimeout == 0 {
		callTimeout = 5 * time.Minute
		if pc.Type == "command" || config.IsACP(pc.Type) {
			callTimeout = 10 * time.Minute
		}
	}
	p, err := llm.New(llm.Config{
		Client: client, Model: pc.Model, Reasoning: pc.Reasoning, MaxTokens: pc.MaxTokens,
		MaxBytes: pc.MaxBytes, CallTimeout: callTimeout, Concurrency: pc.MaxConcurrency, CacheDir: cacheDir, CacheBase: ch.Root,
		Instructions: ch.Instructions, Language: ch.Language,
	})
	if err != nil {
		return nil, usageErrf("provider %s: %v", name, err)
	}
	return p, nil
}

// CacheUsable reports whether the answer cache under the repository may
// be used: not when the repository itself tracks files there, because a
// change under review could then commit answers ("no findings") keyed to
// its own diff. Such a cache is ignored, never read or written.
func CacheUsable(root string) bool {
	if root == "" {
		return false
	}
	out, err := (&git.Runner{Dir: root}).Run(context.Background(), "ls-files", "-z", "--", scope.OutputDir)
	return err == nil && len(out) == 0
}
