package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/diffpalhq/diffpal/internal/buildinfo"
	"github.com/diffpalhq/diffpal/internal/git"
	"github.com/diffpalhq/diffpal/internal/mcpserver"
	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/diffpalhq/diffpal/internal/qa/store"
	"github.com/diffpalhq/diffpal/internal/qa/store/postgres"
	"github.com/diffpalhq/diffpal/internal/qa/store/sqlite"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Environment variables of `diffpal mcp`; a flag wins over its variable.
const (
	envMcpTTL         = "DIFFPAL_MCP_TTL"
	envMcpMaxSessions = "DIFFPAL_MCP_MAX_SESSIONS"
	envMcpModelPolicy = "DIFFPAL_MCP_MODEL_POLICY"
	envMcpModelMode   = "DIFFPAL_MCP_MODEL_MODE"
	envMcpStore       = "DIFFPAL_MCP_STORE"
	envMcpHTTP        = "DIFFPAL_MCP_HTTP"
	envMcpTokenEnv    = "DIFFPAL_MCP_TOKEN_ENV"
	envMcpMaxBody     = "DIFFPAL_MCP_MAX_BODY"
	envMcpLogFormat   = "DIFFPAL_MCP_LOG_FORMAT"
	// envMcpRemoveFinished is a boolean (1, true, 0, false, ...).
	envMcpRemoveFinished = "DIFFPAL_MCP_REMOVE_FINISHED"
	// envMcpRepo is the git repository get_review_context reads.
	envMcpRepo = "DIFFPAL_MCP_REPO"
	// envMcpNoLocalRepo is a boolean: leave get_review_context out.
	envMcpNoLocalRepo = "DIFFPAL_MCP_NO_LOCAL_REPO"
)

// maxPolicyFileBytes bounds the model-policy file; real ones are < 1 KiB.
const maxPolicyFileBytes = 1 << 20

// McpOptions are the inputs of `diffpal mcp`. Settings are kept as the raw
// text of the flag or environment variable so that every problem names
// where the value came from.
type McpOptions struct {
	IO *IOStreams
	// Getenv reads the environment (IO's unless a test injects one).
	Getenv func(string) string
	// Clock is the sessions' clock (time.Now when nil).
	Clock func() time.Time

	TTL         string
	MaxSessions string
	ModelPolicy string
	ModelMode   string
	Store       string
	HTTP        string
	TokenEnv    string
	MaxBody     string
	LogFormat   string
	// RemoveFinished is --remove-finished; it only counts when the flag
	// was given (changed), otherwise the variable decides.
	RemoveFinished bool
	// Repo is --repo: the git repository get_review_context reads.
	Repo string
	// NoLocalRepo is --no-local-repo (like RemoveFinished, only when given).
	NoLocalRepo bool

	// changed records which flags were given on the command line.
	changed map[string]bool
	// ready, when set, is told the HTTP listen address once it is bound.
	ready func(addr net.Addr)
}

// NewCmdMcp builds `diffpal mcp`.
func NewCmdMcp(ios *IOStreams, runF func(*McpOptions) error) *cobra.Command {
	opts := &McpOptions{IO: ios, Getenv: ios.Getenv}
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the QA orchestration tools over MCP (stdio or HTTP)",
		Long: `Serve diffpal's QA orchestration tools to an agent host over the Model
Context Protocol: prepare, catalog, model policy, start, advance, get, list,
finish, delete and export_qa_findings (a findings bundle from a finished
review-bound session), plus the prompts review_change (the whole flow for
base..head) and resume_review.

get_review_context computes a change's review_context and its redacted
evidence packet from the git repository the server runs in (--repo DIR,
default the working directory), exactly as diffpal context does; it reads
git and stores nothing. --no-local-repo leaves it out. It is off by default
when --http binds a non-loopback address; an explicit --repo turns it on
there. When the working directory is not a git repository the tool is left
out (an explicit --repo that is not one is an error).

The server speaks stdio by default. --http ADDR serves streamable HTTP at
http://ADDR/mcp instead, stateless, so any replica sharing the store can
answer any call. Browser requests from another origin, and requests that
reached a loopback address under a foreign Host name (DNS rebinding), are
refused. --token-env NAME makes every HTTP request carry
"Authorization: Bearer $NAME"; it is required before a non-loopback address
is bound. The server makes no network call of its own.

Sessions live in the store: memory (default; gone when the process exits),
sqlite:PATH (a 0600 file, recovered on restart, shareable between processes
on one host) or postgres://USER@HOST/DB (PostgreSQL, shared by any number of
replicas behind a load balancer; the schema is migrated at start; put the
password in PGPASSWORD or ~/.pgpass rather than the URL — it is never
printed). They expire --ttl after their last change; at most --max-sessions
are active, enforced in the store across every process sharing it. Finished
sessions are retained until they expire or are evicted (export and a
repeated finish need them); --remove-finished removes them at finish instead.

Over HTTP, GET /healthz (liveness: always 200 while serving) and GET /readyz
(200 when the store answers, else 503) need no token and reveal nothing.
SIGTERM or SIGINT stops accepting connections, answers the calls in flight,
then closes the store. Logs go to stderr through log/slog: text, or JSON
with --log-format json (the default when CI=true).

The model-policy file is the JSON object
  {"provider": "openai", "triage_model": "...", "primary_model": "...",
   "deep_model": "...", "synthesis_model": "...", "triage_reasoning": "...",
   "primary_reasoning": "...", "deep_reasoning": "...", "synthesis_reasoning": "..."}
optionally with "mode": "host_default" (sessions then tell hosts to use their
own model; the model keys may be omitted) or "mode": "configured". The
reasoning keys may be omitted: the defaults are max, medium, high, medium.
--model-mode overrides the file's mode.

Every flag has an environment variable (the flag wins): DIFFPAL_MCP_TTL,
DIFFPAL_MCP_MAX_SESSIONS, DIFFPAL_MCP_MODEL_POLICY, DIFFPAL_MCP_MODEL_MODE,
DIFFPAL_MCP_STORE, DIFFPAL_MCP_HTTP, DIFFPAL_MCP_TOKEN_ENV,
DIFFPAL_MCP_MAX_BODY, DIFFPAL_MCP_REMOVE_FINISHED, DIFFPAL_MCP_LOG_FORMAT,
DIFFPAL_MCP_REPO, DIFFPAL_MCP_NO_LOCAL_REPO.
Invalid settings exit 2
before anything is served.

Over stdio a line that is not a JSON-RPC request or response (bad JSON, a
batch, a wrong "jsonrpc" version, an id that is not a string or integer, a
line over the frame limit) is answered with a JSON-RPC error where it can be
addressed and logged on stderr; the server keeps serving. At end of input
every call already read is answered before the server exits.`,
		Example: `  # stdio, for a host that launches the server (Claude Code, Codex, ...)
  diffpal mcp

  # keep sessions across restarts, hosts choose their own models
  diffpal mcp --store sqlite:.artifacts/diffpal/qa.db --model-mode host_default

  # streamable HTTP on loopback
  diffpal mcp --http 127.0.0.1:8765

  # one of several replicas sharing PostgreSQL (docs/deploy.md)
  export PGPASSWORD=... DIFFPAL_MCP_TOKEN=$(openssl rand -hex 32)
  diffpal mcp --http 0.0.0.0:8765 --token-env DIFFPAL_MCP_TOKEN \
    --store postgres://diffpal@db.internal:5432/diffpal --log-format json

  # on all interfaces: a bearer token is required
  export DIFFPAL_MCP_TOKEN=$(openssl rand -hex 32)
  diffpal mcp --http 0.0.0.0:8765 --token-env DIFFPAL_MCP_TOKEN

  # longer sessions, more of them, a larger request limit
  diffpal mcp --ttl 2h --max-sessions 500 --max-body 8MiB`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.changed = map[string]bool{}
			cmd.Flags().Visit(func(f *pflag.Flag) { opts.changed[f.Name] = true })
			if runF != nil {
				return runF(opts)
			}
			return mcpRun(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.TTL, "ttl", "", "session lifetime after its last change: a duration (30m, 2h) or seconds (default 1800)")
	f.StringVar(&opts.MaxSessions, "max-sessions", "", "most sessions held at once (default 100)")
	f.StringVar(&opts.ModelPolicy, "model-policy", "", "model-policy JSON file (default: the built-in policy)")
	f.StringVar(&opts.ModelMode, "model-mode", "", "model policy handed to hosts: configured or host_default (default: the file's mode, else configured)")
	f.StringVar(&opts.Store, "store", "", "session store: memory, sqlite:PATH or postgres://USER@HOST/DB (default memory)")
	f.StringVar(&opts.HTTP, "http", "", "serve streamable HTTP on HOST:PORT instead of stdio")
	f.StringVar(&opts.TokenEnv, "token-env", "", "name of the environment variable holding the HTTP bearer token")
	f.StringVar(&opts.MaxBody, "max-body", "", "largest request (HTTP body, tool arguments): bytes or with KiB/MiB (default 4MiB)")
	f.StringVar(&opts.LogFormat, "log-format", "", "log format on stderr: text or json (default text; json when CI=true)")
	f.BoolVar(&opts.RemoveFinished, "remove-finished", false, "delete a session when finish records its outcome (default: keep it until it expires or is evicted)")
	f.StringVar(&opts.Repo, "repo", "", "git repository get_review_context reads (default: the working directory)")
	f.BoolVar(&opts.NoLocalRepo, "no-local-repo", false, "leave out get_review_context (off by default with a non-loopback --http)")
	_ = cmd.RegisterFlagCompletionFunc("log-format", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"text", "json"}, cobra.ShellCompDirectiveNoFileComp
	})
	_ = cmd.RegisterFlagCompletionFunc("model-mode", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{qa.PolicyModeConfigured, qa.PolicyModeHostDefault}, cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

// mcpConfig is the validated form of McpOptions.
type mcpConfig struct {
	ttl         time.Duration
	maxSessions int
	policy      mcpserver.ModelPolicy
	storeSpec   string
	httpAddr    string
	token       string
	maxBody     int64
	logJSON     bool
	// removeFinished: qa.Config.RemoveFinished (and, for sqlite, drop
	// finalized rows at start-up).
	removeFinished bool
	// localRepo is the directory get_review_context reads ("" when off);
	// localRepoSrc names where it came from ("" for the working-directory
	// default, which is dropped quietly when it is not a repository).
	localRepo, localRepoSrc string
	// localRepoOff says why the tool is off ("" when on).
	localRepoOff string
}

// setting is one option's raw value and where it came from ("--ttl" or
// "DIFFPAL_MCP_TTL"); src is empty when neither was set.
type setting struct{ val, src string }

func (o *McpOptions) pick(flag, flagVal, env string) setting {
	if o.changed[flag] {
		return setting{flagVal, "--" + flag}
	}
	getenv := o.Getenv
	if getenv == nil {
		getenv = o.IO.Getenv
	}
	if v := getenv(env); v != "" {
		return setting{v, env}
	}
	return setting{}
}

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// resolve validates every setting; errors are usage errors naming the flag
// or variable.
func (o *McpOptions) resolve() (mcpConfig, error) {
	cfg := mcpConfig{ttl: qa.DefaultTTL, maxSessions: qa.DefaultMaxSessions, storeSpec: "memory",
		maxBody: mcpserver.DefaultMaxRequestBytes, policy: mcpserver.ModelPolicy{Selection: qa.DefaultModelSelection()}}

	if s := o.pick("ttl", o.TTL, envMcpTTL); s.src != "" {
		d, err := parseTTL(s.val)
		if err != nil {
			return cfg, usageErr("invalid %s %q: %v", s.src, s.val, err)
		}
		cfg.ttl = d
	}
	if s := o.pick("max-sessions", o.MaxSessions, envMcpMaxSessions); s.src != "" {
		n, err := strconv.Atoi(strings.TrimSpace(s.val))
		if err != nil || n < 1 || n > 1_000_000 {
			return cfg, usageErr("invalid %s %q: want a whole number from 1 to 1000000", s.src, s.val)
		}
		cfg.maxSessions = n
	}
	if s := o.pick("max-body", o.MaxBody, envMcpMaxBody); s.src != "" {
		n, err := parseSize(s.val)
		if err != nil {
			return cfg, usageErr("invalid %s %q: %v", s.src, s.val, err)
		}
		cfg.maxBody = n
	}
	if s := o.pick("model-policy", o.ModelPolicy, envMcpModelPolicy); s.src != "" {
		p, err := loadModelPolicy(s.val)
		if err != nil {
			return cfg, usageErr("invalid %s %s: %v", s.src, s.val, err)
		}
		cfg.policy = p
	}
	if s := o.pick("model-mode", o.ModelMode, envMcpModelMode); s.src != "" {
		switch s.val {
		case qa.PolicyModeConfigured:
			cfg.policy.HostDefault = false
		case qa.PolicyModeHostDefault:
			cfg.policy.HostDefault = true
		default:
			return cfg, usageErr("invalid %s %q: want %s or %s", s.src, s.val, qa.PolicyModeConfigured, qa.PolicyModeHostDefault)
		}
	}
	if o.changed["remove-finished"] {
		cfg.removeFinished = o.RemoveFinished
	} else if s := o.pick("", "", envMcpRemoveFinished); s.src != "" {
		b, err := strconv.ParseBool(strings.TrimSpace(s.val))
		if err != nil {
			return cfg, usageErr("invalid %s %q: want true or false (1 or 0)", s.src, s.val)
		}
		cfg.removeFinished = b
	}
	if s := o.pick("store", o.Store, envMcpStore); s.src != "" {
		if err := checkStoreSpec(s.val); err != nil {
			return cfg, usageErr("invalid %s %q: %v", s.src, redactStore(s.val), err)
		}
		cfg.storeSpec = s.val
	}
	getenv := o.Getenv
	if getenv == nil {
		getenv = o.IO.Getenv
	}
	cfg.logJSON = getenv("CI") == "true"
	if s := o.pick("log-format", o.LogFormat, envMcpLogFormat); s.src != "" {
		switch strings.TrimSpace(s.val) {
		case "text":
			cfg.logJSON = false
		case "json":
			cfg.logJSON = true
		default:
			return cfg, usageErr("invalid %s %q: want text or json", s.src, s.val)
		}
	}
	httpSet := o.pick("http", o.HTTP, envMcpHTTP)
	tokenEnv := o.pick("token-env", o.TokenEnv, envMcpTokenEnv)
	if tokenEnv.src != "" {
		if httpSet.src == "" {
			return cfg, usageErr("%s applies to HTTP only: add --http ADDR, or drop it for stdio", tokenEnv.src)
		}
		name := tokenEnv.val
		if !envNameRE.MatchString(name) {
			return cfg, usageErr("invalid %s %q: want an environment variable name such as DIFFPAL_MCP_TOKEN", tokenEnv.src, name)
		}
		getenv := o.Getenv
		if getenv == nil {
			getenv = o.IO.Getenv
		}
		cfg.token = strings.TrimSpace(getenv(name))
		if cfg.token == "" {
			return cfg, usageErr("%s names %s, but %s is unset or empty: export the bearer token in it", tokenEnv.src, name, name)
		}
		if len(cfg.token) < 16 {
			return cfg, usageErr("the bearer token in %s (from %s) is %d characters: use at least 16", name, tokenEnv.src, len(cfg.token))
		}
	}
	if httpSet.src != "" {
		loopback, err := mcpserver.IsLoopbackAddr(httpSet.val)
		if err != nil {
			return cfg, usageErr("invalid %s %q: %v", httpSet.src, httpSet.val, err)
		}
		if !loopback && cfg.token == "" {
			return cfg, usageErr("%s %s would accept connections from other machines without authentication: "+
				"set --token-env NAME (the environment variable holding a bearer token), or bind 127.0.0.1", httpSet.src, httpSet.val)
		}
		cfg.httpAddr = httpSet.val
	}
	if err := o.resolveLocalRepo(&cfg, httpSet); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// resolveLocalRepo decides whether get_review_context is offered and on
// which directory: --no-local-repo turns it off, a non-loopback --http
// turns it off unless --repo is explicit, else --repo or the working
// directory.
func (o *McpOptions) resolveLocalRepo(cfg *mcpConfig, httpSet setting) error {
	var off setting
	if o.changed["no-local-repo"] {
		off = setting{strconv.FormatBool(o.NoLocalRepo), "--no-local-repo"}
	} else if off = o.pick("", "", envMcpNoLocalRepo); off.src != "" {
		if _, err := strconv.ParseBool(strings.TrimSpace(off.val)); err != nil {
			return usageErr("invalid %s %q: want true or false (1 or 0)", off.src, off.val)
		}
	}
	noLocal := off.src != "" && must(strconv.ParseBool(strings.TrimSpace(off.val)))
	repo := o.pick("repo", o.Repo, envMcpRepo)
	if repo.src != "" && strings.TrimSpace(repo.val) == "" {
		return usageErr("invalid %s: want a directory", repo.src)
	}
	switch {
	case noLocal && repo.src != "":
		return usageErr("%s and %s contradict each other: drop one", repo.src, off.src)
	case noLocal:
		cfg.localRepoOff = off.src
	case repo.src != "":
		cfg.localRepo, cfg.localRepoSrc = repo.val, repo.src
	case cfg.httpAddr != "":
		if loopback, _ := mcpserver.IsLoopbackAddr(cfg.httpAddr); !loopback {
			cfg.localRepoOff = httpSet.src + " binds a non-loopback address (set --repo DIR to offer it)"
			return nil
		}
		cfg.localRepo = "."
	default:
		cfg.localRepo = "."
	}
	return nil
}

func must(b bool, err error) bool { return err == nil && b }

// parseTTL accepts a Go duration or a whole number of seconds.
func parseTTL(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	var d time.Duration
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 1 || n > math.MaxInt64/int64(time.Second) {
			return 0, errors.New("want a positive duration (30m, 2h) or number of seconds")
		}
		d = time.Duration(n) * time.Second
	} else if d, err = time.ParseDuration(s); err != nil {
		return 0, errors.New("want a duration (30m, 2h) or a number of seconds")
	}
	if d < time.Second {
		return 0, errors.New("want at least 1s")
	}
	// Expiry instants must stay storable (SQLite keeps Unix nanoseconds,
	// good until 2262); a century is more than any session needs.
	if d > 100*365*24*time.Hour {
		return 0, errors.New("want at most 100 years")
	}
	return d, nil
}

// parseSize accepts bytes or a number with a B, KiB, MiB or GiB suffix.
func parseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	const minSize, maxSize = 1 << 10, 1 << 30
	if err != nil || n < 1 || n > maxSize/mult || n*mult < minSize {
		return 0, errors.New("want a size from 1KiB to 1GiB, in bytes or with a KiB, MiB or GiB suffix")
	}
	return n * mult, nil
}

func loadModelPolicy(path string) (mcpserver.ModelPolicy, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return mcpserver.ModelPolicy{}, errors.New("no such file")
		}
		return mcpserver.ModelPolicy{}, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return mcpserver.ModelPolicy{}, err
	} else if !fi.Mode().IsRegular() {
		return mcpserver.ModelPolicy{}, errors.New("not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, maxPolicyFileBytes+1))
	if err != nil {
		return mcpserver.ModelPolicy{}, err
	}
	if len(data) > maxPolicyFileBytes {
		return mcpserver.ModelPolicy{}, fmt.Errorf("larger than %d bytes", maxPolicyFileBytes)
	}
	return mcpserver.ParseModelPolicy(data)
}

// checkStoreSpec validates a --store value without opening anything.
func checkStoreSpec(spec string) error {
	switch {
	case spec == "memory":
		return nil
	case strings.HasPrefix(spec, "sqlite:"):
		if strings.TrimPrefix(spec, "sqlite:") == "" {
			return errors.New("sqlite: needs a file path, as in sqlite:.artifacts/diffpal/qa.db")
		}
		return nil
	case postgres.IsConnString(spec):
		return postgres.CheckConnString(spec)
	}
	return errors.New("want memory, sqlite:PATH or postgres://USER@HOST/DB")
}

// redactStore is a --store value fit for messages and logs: a PostgreSQL
// URL loses its password.
func redactStore(spec string) string {
	if postgres.IsConnString(spec) {
		return postgres.Redact(spec)
	}
	return spec
}

// storeSweepEvery is how often a PostgreSQL-backed server sweeps expired
// sessions (every replica does; the sweep skips rows others hold).
const storeSweepEvery = 30 * time.Second

// readiness is the /readyz check for st: a PostgreSQL ping, else a read
// of a run id that cannot exist (answered with "not found" by a store that
// works).
func readiness(st store.Store) func(context.Context) error {
	if p, ok := st.(interface{ Ping(context.Context) error }); ok {
		return p.Ping
	}
	return func(ctx context.Context) error {
		if _, err := st.Get(ctx, "qar-readiness-probe"); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		return nil
	}
}

// minLevel passes records at or above min to the shared handler, so that
// loggers of different levels write through one handler (one lock).
type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(_ context.Context, l slog.Level) bool { return l >= h.min }
func (h minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{h.Handler.WithAttrs(as), h.min}
}
func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{h.Handler.WithGroup(name), h.min}
}

// mcpLoggers returns the server's lifecycle logger (Info and up) and the
// logger handed to the store, the SDK and the transports (Warn and up: the
// SDK logs every session at Info), both writing text or JSON to w.
func mcpLoggers(w io.Writer, json bool) (info, warn *slog.Logger) {
	var h slog.Handler
	if json {
		h = slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo})
	} else {
		h = slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo})
	}
	return slog.New(h), slog.New(minLevel{h, slog.LevelWarn})
}

// openStore opens the session store a --store value names. The returned
// close function is never nil. removeFinished also makes an SQLite store
// drop finalized rows at start-up (left by a run without the option).
func openStore(ctx context.Context, spec string, maxSessions int, clock func() time.Time, removeFinished bool, logger *slog.Logger) (store.Store, func() error, error) {
	if err := checkStoreSpec(spec); err != nil {
		return nil, nil, err
	}
	if spec == "memory" {
		return store.NewMemory(), func() error { return nil }, nil
	}
	if postgres.IsConnString(spec) {
		st, err := postgres.Open(ctx, spec,
			postgres.WithMaxSessions(maxSessions), postgres.WithClock(clock), postgres.WithValidate(qa.ValidateRecord),
			postgres.WithRemoveFinalized(removeFinished), postgres.WithLogger(logger),
			postgres.WithSweepInterval(storeSweepEvery))
		if err != nil {
			return nil, nil, err
		}
		return st, st.Close, nil
	}
	st, err := sqlite.Open(ctx, strings.TrimPrefix(spec, "sqlite:"),
		sqlite.WithMaxSessions(maxSessions), sqlite.WithClock(clock), sqlite.WithValidate(qa.ValidateRecord),
		sqlite.WithRemoveFinalized(removeFinished), sqlite.WithLogger(logger))
	if err != nil {
		return nil, nil, err
	}
	return st, st.Close, nil
}

// mcpInstance is a configured server and its store, before a transport.
type mcpInstance struct {
	cfg          mcpConfig
	srv          *mcp.Server
	st           store.Store
	closeStore   func() error
	info, logger *slog.Logger
}

// newMcpInstance validates opts, opens the store and builds the server.
// On success the caller must call closeStore.
func newMcpInstance(ctx context.Context, opts *McpOptions) (*mcpInstance, error) {
	cfg, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	clock := opts.Clock
	if clock == nil {
		clock = time.Now
	}
	info, logger := mcpLoggers(opts.IO.ErrOut, cfg.logJSON)
	local, err := localRepo(ctx, opts, cfg, info)
	if err != nil {
		return nil, err
	}
	st, closeStore, err := openStore(ctx, cfg.storeSpec, cfg.maxSessions, clock, cfg.removeFinished, logger)
	if err != nil {
		return nil, usageErr("--store %s: %v", redactStore(cfg.storeSpec), err)
	}
	closeStore = sync.OnceValue(closeStore)
	orch, err := qa.New(qa.Config{Store: st, Clock: clock, TTL: cfg.ttl, MaxSessions: cfg.maxSessions,
		ModelSelection: &cfg.policy.Selection, HostDefaultModel: cfg.policy.HostDefault,
		RemoveFinished: cfg.removeFinished})
	if err != nil {
		closeStore()
		return nil, usageErr("%v", err)
	}
	srv, err := mcpserver.New(orch, mcpserver.Options{Version: buildinfo.Get().Version,
		MaxRequestBytes: cfg.maxBody, Logger: logger, LocalRepo: local})
	if err != nil {
		closeStore()
		return nil, ioErr(err)
	}
	return &mcpInstance{cfg: cfg, srv: srv, st: st, closeStore: closeStore, info: info, logger: logger}, nil
}

// localRepo resolves the get_review_context repository to its top level:
// nil when it is off or (for the working-directory default) not a git
// repository; an explicit --repo that is not one is a usage error.
func localRepo(ctx context.Context, opts *McpOptions, cfg mcpConfig, info *slog.Logger) (*mcpserver.LocalRepo, error) {
	if cfg.localRepo == "" {
		if cfg.localRepoOff != "" {
			info.Info("get_review_context is off: " + cfg.localRepoOff)
		}
		return nil, nil
	}
	root, err := (&git.Runner{Dir: cfg.localRepo}).TopLevel(ctx)
	if err != nil {
		if cfg.localRepoSrc != "" {
			return nil, usageErr("invalid %s %s: %v", cfg.localRepoSrc, cfg.localRepo, err)
		}
		info.Info("get_review_context is off: the working directory is not in a git repository (set --repo DIR)")
		return nil, nil
	}
	getenv := opts.Getenv
	if getenv == nil {
		getenv = opts.IO.Getenv
	}
	return &mcpserver.LocalRepo{Dir: root, Getenv: getenv}, nil
}

func mcpRun(ctx context.Context, opts *McpOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	inst, err := newMcpInstance(ctx, opts)
	if err != nil {
		return err
	}
	cfg, srv, st, closeStore, info, logger := inst.cfg, inst.srv, inst.st, inst.closeStore, inst.info, inst.logger
	defer closeStore()
	if cfg.httpAddr == "" {
		// Our line reader in front of the SDK: a bad line is answered and
		// logged instead of ending the process (and every memory-store
		// session), and calls read before end of input are all answered.
		// The line cap stops a runaway line; the per-call argument limit
		// (a tool error) is enforced by the server below it.
		t := mcpserver.NewStdioTransport(opts.IO.In, opts.IO.Out, mcpserver.StdioOptions{
			MaxLineBytes: int(max(2*cfg.maxBody, mcp.DefaultMaxLineLength)), Logger: logger})
		err := srv.Run(ctx, t)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return ioErr(fmt.Errorf("mcp stdio: %w", err))
		}
		return nil
	}
	h, err := mcpserver.NewHTTPHandler(srv, mcpserver.HTTPOptions{Token: cfg.token, MaxBodyBytes: cfg.maxBody, Logger: logger,
		Ready: readiness(st), ReadyLogger: info})
	if err != nil {
		return ioErr(err)
	}
	ln, err := net.Listen("tcp", cfg.httpAddr)
	if err != nil {
		return usageErr("--http %s: %v", cfg.httpAddr, err)
	}
	auth := "no token (loopback only)"
	if cfg.token != "" {
		auth = "bearer token required"
	}
	// The message keeps "serving URL " for scripts that read the address.
	info.Info(fmt.Sprintf("serving http://%s%s (stateless; %s)", ln.Addr(), mcpserver.HTTPPath, auth),
		"store", redactStore(cfg.storeSpec), "health", mcpserver.HealthPath, "ready", mcpserver.ReadyPath)
	if opts.ready != nil {
		opts.ready(ln.Addr())
	}
	err = mcpserver.Serve(ctx, ln, h, mcpserver.ServeOptions{Logger: info})
	if ctx.Err() != nil {
		if cerr := closeStore(); cerr != nil {
			logger.Warn("closing the session store", "err", cerr)
		}
		info.Info("stopped")
		return ctx.Err()
	}
	return ioErr(fmt.Errorf("mcp http: %w", err))
}
