// Package config loads and validates diffpal's repository configuration,
// .config/diffpal/config.yaml (version: v1), and resolves a review's
// settings from it (Resolve: flag > DIFFPAL_* variable > file > default).
// Unknown keys are errors and every error names the key path (or the flag
// or variable) and the rule. Nothing here parses flags, reads the process
// environment or prints: the CLI hands Resolve the flags it parsed and an
// environment to read.
package config

import (
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/diff"
	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/diffpalhq/diffpal/internal/repofs"
	"github.com/diffpalhq/diffpal/internal/scope"
	"github.com/diffpalhq/diffpal/internal/yamlsafe"
)

// DefaultPath is the config file's location relative to the repository root.
const DefaultPath = ".config/diffpal/config.yaml"

// Config is the file's model.
type Config struct {
	Version string `yaml:"version" json:"version"`
	// Provider names the default provider: builtin, or a key of Providers.
	Provider  string              `yaml:"provider" json:"provider,omitempty"`
	Providers map[string]Provider `yaml:"providers" json:"providers,omitempty"`
	// Stages route a profile (e.g. security_reviewer) or a pass
	// (deep_review, synthesis) to a provider by name.
	Stages  map[string]string `yaml:"stages" json:"stages,omitempty"`
	Review  Review            `yaml:"review" json:"review"`
	Rules   Rules             `yaml:"rules" json:"rules"`
	Ignores []Ignore          `yaml:"ignores" json:"ignores"`
	// Inspection sets what a review demands of the agent's inspection.
	Inspection Inspection `yaml:"inspection" json:"inspection,omitzero"`

	// Path is where the config was read from ("" for defaults).
	Path string `yaml:"-" json:"-"`
}

// Review tunes the review.
type Review struct {
	FilterMode    string   `yaml:"filter_mode" json:"filter_mode,omitempty"`
	BlockOn       string   `yaml:"block_on" json:"block_on,omitempty"`
	MinConfidence *float64 `yaml:"min_confidence" json:"min_confidence,omitempty"`
	Include       []string `yaml:"include" json:"include,omitempty"`
	Exclude       []string `yaml:"exclude" json:"exclude,omitempty"`
	MaxFileBytes  int      `yaml:"max_file_bytes" json:"max_file_bytes,omitempty"`
	DefaultSkips  *bool    `yaml:"default_skips" json:"default_skips,omitempty"`
	Bundle        string   `yaml:"bundle" json:"bundle,omitempty"`
	Profile       string   `yaml:"profile" json:"profile,omitempty"`
	// Instructions are the team's review guidance, given to model
	// providers (as instructions, never mixed with the fenced evidence).
	Instructions string `yaml:"instructions" json:"instructions,omitempty"`
	// Language is the language model providers write their text in and
	// the bundle's language (--language wins).
	Language string `yaml:"language" json:"language,omitempty"`
	// Formats are the outputs review writes, as --format spells them:
	// NAME, or NAME=PATH with PATH relative to the repository root, inside
	// it and not in .git. Names are checked when the review runs, against the
	// output registry (internal/output), which alone knows the formats.
	Formats []string `yaml:"formats" json:"formats,omitempty"`
}

// Provider configures one model provider. API keys are never stored here:
// APIKeyEnv names the environment variable that holds the key.
type Provider struct {
	Type      string `yaml:"type" json:"type"`
	Model     string `yaml:"model" json:"model,omitempty"`
	BaseURL   string `yaml:"base_url" json:"base_url,omitempty"`
	APIKeyEnv string `yaml:"api_key_env" json:"api_key_env,omitempty"`
	// APIKeyHeader sends the key in this header instead of
	// "Authorization: Bearer" (Azure OpenAI key auth: api-key).
	APIKeyHeader   string   `yaml:"api_key_header" json:"api_key_header,omitempty"`
	Reasoning      string   `yaml:"reasoning" json:"reasoning,omitempty"`
	Command        []string `yaml:"command" json:"command,omitempty"`
	Timeout        string   `yaml:"timeout" json:"timeout,omitempty"`
	MaxConcurrency int      `yaml:"max_concurrency" json:"max_concurrency,omitempty"`
	MaxBytes       int      `yaml:"max_bytes" json:"max_bytes,omitempty"`
	MaxTokens      int      `yaml:"max_tokens" json:"max_tokens,omitempty"`
	// Members are a pool's providers, by name, in failover order.
	Members []string `yaml:"members" json:"members,omitempty"`
}

// Inspection configures the inspection check.
type Inspection struct {
	// Required fails a review (exit 3) whose provider showed no
	// inspection of the diff: only agents over ACP report what they
	// inspected.
	Required bool `yaml:"required" json:"required,omitempty"`
}

// ACPTypes are the provider types of agent CLIs spoken to over the Agent
// Client Protocol (their default command lines live in provider/acp).
var ACPTypes = []string{"codex_acp", "copilot_acp", "opencode_acp", "gemini_acp", "claude_code_acp", "generic_acp"}

// ProviderTypes are the supported provider types.
var ProviderTypes = append([]string{"openai", "anthropic", "command", "aistudio", "pool"}, ACPTypes...)

// IsACP reports whether a provider type is an ACP agent.
func IsACP(typ string) bool { return oneOf(typ, ACPTypes) }

// StageNames are the non-profile stages a provider can be routed to.
var StageNames = []string{"deep_review", "synthesis"}

// ProfileNames are the review profiles (QA-CONTRACT.md), from package qa.
var ProfileNames = func() []string {
	var out []string
	for _, p := range qa.Profiles() {
		out = append(out, string(p))
	}
	return out
}()

// TimeoutOf parses a provider timeout (default d when empty).
func (p Provider) TimeoutOf(d time.Duration) (time.Duration, error) {
	if p.Timeout == "" {
		return d, nil
	}
	return time.ParseDuration(p.Timeout)
}

// Rules adds user rule packs (paths relative to the repository root).
type Rules struct {
	Packs []string `yaml:"packs" json:"packs,omitempty"`
	// Enable turns on opt-in rules and Disable turns off any rule, by id
	// or by "prefix.*" (docs/rules.md lists them).
	Enable  []string `yaml:"enable" json:"enable,omitempty"`
	Disable []string `yaml:"disable" json:"disable,omitempty"`
}

// Ignore is one configured suppression; reason is required.
type Ignore struct {
	Rule     string `yaml:"rule" json:"rule,omitempty"`
	Category string `yaml:"category" json:"category,omitempty"`
	Path     string `yaml:"path" json:"path,omitempty"`
	Reason   string `yaml:"reason" json:"reason"`
}

// FieldError is one validation problem.
type FieldError struct {
	Field  string
	Reason string
}

func (e FieldError) Error() string { return e.Field + ": " + e.Reason }

// Errors is every problem in a config.
type Errors struct {
	Path string
	List []FieldError
}

func (e *Errors) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "invalid config %s:", e.Path)
	for _, fe := range e.List {
		b.WriteString("\n  " + fe.Error())
	}
	return b.String()
}

var (
	filterModes = diff.FilterModes
	severities  = findings.SeverityNames()
)

// Load reads the config at path, or at root/DefaultPath when path is "".
// A missing default file yields the zero Config; a missing explicit file
// is an error. The default file is a repository file: it must be a
// regular file inside the repository (no symlink out of it, no device).
// Callers that review a change read the config through package policy,
// which chooses the trusted side; Load is the work tree's view (doctor).
func Load(root, path string) (*Config, error) {
	var data []byte
	var err error
	name := path
	if path != "" {
		data, err = os.ReadFile(path)
	} else {
		name = DefaultPath
		data, err = repofs.ReadFile(root, DefaultPath, int64(yamlsafe.Config.MaxBytes))
		if errors.Is(err, os.ErrNotExist) {
			return &Config{Version: "v1"}, nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", name, err)
	}
	c, err := ParseFile(name, data, nil)
	if err != nil {
		return nil, err
	}
	c.Path = name
	return c, nil
}

// Parse decodes and validates config YAML.
func Parse(data []byte) (*Config, error) { return ParseFile("config", data, nil) }

// ParseFile decodes and validates config YAML read from name, within
// yamlsafe.Config's bounds (size, nesting, alias expansion). Errors name
// the file and quote at most the offending line, passed through redact.
func ParseFile(name string, data []byte, redact func(string) string) (*Config, error) {
	var c Config
	if err := yamlsafe.Decode(name, data, &c, yamlsafe.Config, redact); err != nil {
		return nil, fmt.Errorf("invalid config %w", err)
	}
	if errs := c.Validate(); len(errs) > 0 {
		return nil, &Errors{Path: name, List: errs}
	}
	return &c, nil
}

// Validate returns every problem, each naming its key.
func (c *Config) Validate() []FieldError {
	var errs []FieldError
	add := func(field, format string, args ...any) {
		errs = append(errs, FieldError{Field: field, Reason: fmt.Sprintf(format, args...)})
	}
	switch c.Version {
	case "v1":
	case "":
		add("version", "is required (write version: v1)")
	default:
		add("version", "unsupported version %q: want v1", c.Version)
	}
	r := c.Review
	if r.FilterMode != "" && !oneOf(r.FilterMode, filterModes) {
		add("review.filter_mode", "must be one of %s, got %q", strings.Join(filterModes, ", "), r.FilterMode)
	}
	if r.BlockOn != "" && !oneOf(strings.ToLower(r.BlockOn), severities) {
		add("review.block_on", "must be one of %s, got %q", strings.Join(severities, ", "), r.BlockOn)
	}
	if m := r.MinConfidence; m != nil && (math.IsNaN(*m) || *m < 0 || *m > 1) {
		add("review.min_confidence", "must be a number from 0 to 1, got %v", *m)
	}
	if r.MaxFileBytes < 0 {
		add("review.max_file_bytes", "must be positive, got %d", r.MaxFileBytes)
	}
	if r.Bundle != "" && r.Profile != "" {
		add("review.bundle", "bundle and profile are mutually exclusive")
	}
	for i, g := range r.Include {
		if err := scope.ValidGlob(g); err != nil {
			add(fmt.Sprintf("review.include[%d]", i), "%v", err)
		}
	}
	for i, g := range r.Exclude {
		if err := scope.ValidGlob(g); err != nil {
			add(fmt.Sprintf("review.exclude[%d]", i), "%v", err)
		}
	}
	seenFormat := map[string]bool{}
	for i, spec := range r.Formats {
		name, _, _ := strings.Cut(spec, "=")
		if reason := checkFormatSpec(spec); reason != "" {
			add(fmt.Sprintf("review.formats[%d]", i), "%s", reason)
		} else if seenFormat[name] {
			add(fmt.Sprintf("review.formats[%d]", i), "format %s is listed twice", name)
		}
		seenFormat[name] = true
	}
	for i, p := range c.Rules.Packs {
		if strings.TrimSpace(p) == "" {
			add(fmt.Sprintf("rules.packs[%d]", i), "must not be empty")
		}
	}
	// Besides configured names, the bare types work as they do on the
	// command line (set up from OPENAI_*/ANTHROPIC_* and --model/--command).
	providerNames := map[string]bool{"builtin": true, "openai": true, "anthropic": true, "command": true}
	for name, p := range c.Providers {
		f := "providers." + name
		providerNames[name] = true
		if name == "builtin" {
			add(f, "the name builtin is reserved for the built-in rule provider")
		}
		if !oneOf(p.Type, ProviderTypes) {
			add(f+".type", "must be one of %s, got %q", strings.Join(ProviderTypes, ", "), p.Type)
			continue
		}
		switch {
		case p.Type == "command" || p.Type == "generic_acp":
			if len(p.Command) == 0 || strings.TrimSpace(p.Command[0]) == "" {
				add(f+".command", "is required for type %s (the agent CLI and its arguments)", p.Type)
			}
		case p.Type == "gemini_acp":
			if len(p.Command) > 0 {
				add(f+".command", "is not allowed for type gemini_acp (diffpal runs gemini --acp; set model instead)")
			}
		case IsACP(p.Type):
			if len(p.Command) > 0 && strings.TrimSpace(p.Command[0]) == "" {
				add(f+".command", "must name the agent CLI first")
			}
		case p.Type == "pool":
			if len(p.Members) == 0 {
				add(f+".members", "is required for type pool (provider names, in failover order)")
			}
		default:
			if p.Model == "" {
				add(f+".model", "is required for type %s", p.Type)
			}
			if p.BaseURL != "" && !strings.HasPrefix(p.BaseURL, "http://") && !strings.HasPrefix(p.BaseURL, "https://") {
				add(f+".base_url", "must be an http(s) URL, got %q", p.BaseURL)
			}
		}
		if p.Timeout != "" {
			if d, err := time.ParseDuration(p.Timeout); err != nil || d <= 0 {
				add(f+".timeout", "must be a positive duration such as 120s, got %q", p.Timeout)
			}
		}
		if p.Reasoning != "" && !oneOf(p.Reasoning, []string{"none", "minimal", "low", "medium", "high"}) {
			add(f+".reasoning", "must be one of none, minimal, low, medium, high, got %q", p.Reasoning)
		}
		for field, v := range map[string]int{"max_concurrency": p.MaxConcurrency, "max_bytes": p.MaxBytes, "max_tokens": p.MaxTokens} {
			if v < 0 {
				add(f+"."+field, "must not be negative, got %d", v)
			}
		}
	}
	for name, p := range c.Providers {
		if len(p.Members) > 0 && p.Type != "pool" {
			add("providers."+name+".members", "is only for type pool")
		}
		for i, m := range p.Members {
			f := fmt.Sprintf("providers.%s.members[%d]", name, i)
			switch mp, ok := c.Providers[m]; {
			case m == name:
				add(f, "a pool cannot be its own member")
			case !providerNames[m]:
				add(f, "names no configured provider: %q", m)
			case ok && mp.Type == "pool":
				add(f, "%q is a pool; pools do not nest", m)
			}
		}
	}
	if l := c.Review.Language; strings.ContainsAny(l, "\r\n") || len(l) > 64 {
		add("review.language", "must be one line of at most 64 characters")
	}
	if c.Provider != "" && !providerNames[c.Provider] {
		add("provider", "names no configured provider: %q (want builtin, openai, anthropic, command or a key of providers)", c.Provider)
	}
	for stage, name := range c.Stages {
		f := "stages." + stage
		if !oneOf(stage, ProfileNames) && !oneOf(stage, StageNames) {
			add(f, "unknown stage %q: want a profile id or one of %s", stage, strings.Join(StageNames, ", "))
		}
		if !providerNames[name] {
			add(f, "names no configured provider: %q", name)
		}
	}
	for i, ig := range c.Ignores {
		f := fmt.Sprintf("ignores[%d]", i)
		if strings.TrimSpace(ig.Reason) == "" {
			add(f+".reason", "is required: say why this is suppressed")
		}
		if ig.Rule == "" && ig.Category == "" && ig.Path == "" {
			add(f, "set at least one of rule, category or path")
		}
		if ig.Path != "" {
			if err := scope.ValidGlob(ig.Path); err != nil {
				add(f+".path", "%v", err)
			}
		}
	}
	// Map keys come in random order; report in a stable one.
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Field < errs[j].Field })
	return errs
}

func oneOf(s string, list []string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// checkFormatSpec checks the shape of one review.formats entry: a format
// name (lower-case letters, digits, "-" and "_"), optionally "=PATH" with
// a repository-relative PATH that stays inside the repository and out of
// .git — the config is the repository's file, so it cannot send output
// elsewhere.
func checkFormatSpec(spec string) string {
	name, path, hasPath := strings.Cut(spec, "=")
	if !formatNameRE.MatchString(name) {
		return fmt.Sprintf("want a format name such as sarif, or NAME=PATH, got %q", spec)
	}
	if hasPath {
		if err := repofs.CheckRel(path); err != nil {
			return fmt.Sprintf("%s: the path must be relative to the repository root and inside it: %v", spec, err)
		}
		// A config travels with the repository: one must not be able to
		// point an output at git's own files (.git/config, hooks).
		for _, seg := range strings.Split(strings.ReplaceAll(path, `\`, "/"), "/") {
			if strings.EqualFold(seg, ".git") {
				return fmt.Sprintf("%s: the path must not be inside .git", spec)
			}
		}
	}
	return ""
}

var formatNameRE = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)
