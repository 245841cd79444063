package config

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/diff"
	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/diffpalhq/diffpal/internal/scope"
)

// The defaults of the review settings: what a review uses when no flag,
// environment variable or config key sets them. The CLI registers its
// flags with them, so --help shows the same values.
const (
	DefaultFilterMode   = diff.FilterAdded
	DefaultBlockOn      = string(findings.DefaultBlockOn)
	DefaultMaxFileBytes = 1 << 20
)

// The environment variables of `diffpal review`. Each sits between its
// flag (which wins) and its config key; an empty variable counts as
// unset.
const (
	EnvFilterMode    = "DIFFPAL_FILTER_MODE"
	EnvBlockOn       = "DIFFPAL_BLOCK_ON"
	EnvMinConfidence = "DIFFPAL_MIN_CONFIDENCE"
	EnvBundle        = "DIFFPAL_BUNDLE"
	EnvProfile       = "DIFFPAL_PROFILE"
	EnvProvider      = "DIFFPAL_PROVIDER"
	EnvModel         = "DIFFPAL_MODEL"
)

// ReviewEnv lists the review variables, in the README's order.
func ReviewEnv() []string {
	return []string{EnvFilterMode, EnvBlockOn, EnvMinConfidence, EnvBundle, EnvProfile, EnvProvider, EnvModel}
}

// Overrides are the review settings given on the command line. A nil
// pointer (or nil Formats) is a flag that was not given, so a flag given
// with its default value still wins over the environment and the file.
type Overrides struct {
	FilterMode     *string
	BlockOn        *string
	MinConfidence  *float64
	Bundle         *string
	Profile        *string
	Provider       *string
	Model          *string
	Language       *string
	MaxFileBytes   *int
	NoDefaultSkips *bool
	// Include and Exclude are added to the config's lists.
	Include []string
	Exclude []string
	// Formats are --format's specs (NAME or NAME=PATH), replacing
	// review.formats when given.
	Formats []string
}

// Settings are a review's effective settings: each taken from the flag
// when given, else its DIFFPAL_* variable when set, else the config file,
// else the default (Resolve).
type Settings struct {
	FilterMode    string
	BlockOn       findings.Severity
	MinConfidence *float64
	Bundle        string
	Profile       string
	Provider      string
	Model         string
	// Language is the language of the text model providers write and the
	// bundle's language ("" when unset).
	Language       string
	MaxFileBytes   int
	NoDefaultSkips bool
	// Include and Exclude are the config's globs followed by the flags'.
	Include []string
	Exclude []string
	// Ignores are the config's suppressions.
	Ignores []Ignore
	// Formats are the output specs, from --format or review.formats; nil
	// means the default outputs. Names and paths are checked by the
	// output registry, which alone knows the formats; From["formats"]
	// says where they came from, which decides what a relative path is
	// relative to.
	Formats []string

	// From names where each setting came from, by its review.* key
	// (filter_mode, block_on, min_confidence, bundle, profile, provider,
	// model, max_file_bytes, default_skips, formats): "--block-on",
	// "DIFFPAL_BLOCK_ON", "review.block_on in FILE", or "default". Error
	// messages name the same source.
	From map[string]string
}

// Policy is the gate policy the settings make.
func (s Settings) Policy() findings.Policy {
	return findings.Policy{BlockOn: s.BlockOn, MinConfidence: s.MinConfidence}
}

// SourceDefault is From's value for a setting nothing set.
const SourceDefault = "default"

// Resolve layers a review's settings: a flag the user gave (o) wins, then
// its DIFFPAL_* variable (read with getenv; nil reads no environment),
// then the config file (cfg; nil is no file), then the default. It then
// checks the values that are policy rather than flag syntax — known
// filter mode, severity, confidence in [0, 1], a known bundle or profile
// but not both, a positive size limit, well-formed globs — and every
// error names where the offending value came from, as the flag
// ("invalid --block-on ..."), the variable or the config key.
func Resolve(cfg *Config, o Overrides, getenv func(string) string) (Settings, error) {
	if cfg == nil {
		cfg = &Config{Version: "v1"}
	}
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	r := resolver{cfg: cfg, getenv: getenv, s: Settings{From: map[string]string{}}}
	rv := cfg.Review
	s := &r.s

	s.FilterMode = r.str("filter_mode", "filter-mode", o.FilterMode, EnvFilterMode, "review.filter_mode", rv.FilterMode, DefaultFilterMode)
	if err := diff.ValidFilter(s.FilterMode); err != nil {
		return *s, fmt.Errorf("%s: %v", s.From["filter_mode"], err)
	}
	blockOn := r.str("block_on", "block-on", o.BlockOn, EnvBlockOn, "review.block_on", rv.BlockOn, DefaultBlockOn)
	sev, err := findings.ParseSeverity(blockOn)
	if err != nil {
		return *s, fmt.Errorf("invalid %s %q: want one of low, medium, high, critical", s.From["block_on"], blockOn)
	}
	s.BlockOn = sev
	if err := r.minConfidence(o.MinConfidence, rv.MinConfidence); err != nil {
		return *s, err
	}
	r.bundleProfile(o.Bundle, o.Profile)
	if s.Bundle != "" && s.Profile != "" {
		return *s, fmt.Errorf("%s and %s are mutually exclusive", s.From["bundle"], s.From["profile"])
	}
	s.Provider = r.str("provider", "provider", o.Provider, EnvProvider, "provider", cfg.Provider, "")
	s.Model = r.str("model", "model", o.Model, EnvModel, "", "", "")
	s.Language = strings.TrimSpace(r.str("language", "language", o.Language, "", "review.language", rv.Language, ""))
	if strings.ContainsAny(s.Language, "\r\n") || len(s.Language) > 64 {
		return *s, fmt.Errorf("invalid %s: want one line of at most 64 characters", s.From["language"])
	}

	switch {
	case o.MaxFileBytes != nil:
		s.MaxFileBytes, s.From["max_file_bytes"] = *o.MaxFileBytes, "--max-file-bytes"
	case rv.MaxFileBytes > 0:
		s.MaxFileBytes, s.From["max_file_bytes"] = rv.MaxFileBytes, r.key("review.max_file_bytes")
	default:
		s.MaxFileBytes, s.From["max_file_bytes"] = DefaultMaxFileBytes, SourceDefault
	}
	if s.MaxFileBytes <= 0 {
		return *s, fmt.Errorf("invalid %s %d: want a positive number of bytes", s.From["max_file_bytes"], s.MaxFileBytes)
	}
	switch {
	case o.NoDefaultSkips != nil:
		s.NoDefaultSkips, s.From["default_skips"] = *o.NoDefaultSkips, "--no-default-skips"
	case rv.DefaultSkips != nil:
		s.NoDefaultSkips, s.From["default_skips"] = !*rv.DefaultSkips, r.key("review.default_skips")
	default:
		s.From["default_skips"] = SourceDefault
	}

	// A malformed glob is an error, never an empty review: one that can
	// never match would review nothing and let the gate pass.
	for i, g := range rv.Include {
		if err := scope.ValidGlob(g); err != nil {
			return *s, fmt.Errorf("%s %q: %v", r.key(fmt.Sprintf("review.include[%d]", i)), g, err)
		}
	}
	for i, g := range rv.Exclude {
		if err := scope.ValidGlob(g); err != nil {
			return *s, fmt.Errorf("%s %q: %v", r.key(fmt.Sprintf("review.exclude[%d]", i)), g, err)
		}
	}
	for _, g := range o.Include {
		if err := scope.ValidGlob(g); err != nil {
			return *s, fmt.Errorf("--include %q: %v", g, err)
		}
	}
	for _, g := range o.Exclude {
		if err := scope.ValidGlob(g); err != nil {
			return *s, fmt.Errorf("--exclude %q: %v", g, err)
		}
	}
	s.Include = append(slices.Clone(rv.Include), o.Include...)
	s.Exclude = append(slices.Clone(rv.Exclude), o.Exclude...)

	if err := choice(s.From["bundle"], s.Bundle, names(qa.Bundles())); err != nil {
		return *s, err
	}
	if err := choice(s.From["profile"], s.Profile, names(qa.Profiles())); err != nil {
		return *s, err
	}

	switch {
	case o.Formats != nil:
		s.Formats, s.From["formats"] = slices.Clone(o.Formats), "--format"
	case len(rv.Formats) > 0:
		s.Formats, s.From["formats"] = slices.Clone(rv.Formats), r.key("review.formats")
	default:
		s.From["formats"] = SourceDefault
	}
	s.Ignores = slices.Clone(cfg.Ignores)
	return *s, nil
}

type resolver struct {
	cfg    *Config
	getenv func(string) string
	s      Settings
}

// key names a config key as messages show it: with its file.
func (r *resolver) key(k string) string {
	if r.cfg.Path == "" {
		return k
	}
	return k + " in " + r.cfg.Path
}

// str picks one string setting; env and ckey may be empty (no variable,
// no config key).
func (r *resolver) str(key, flag string, fv *string, env, ckey, cv, def string) string {
	switch {
	case fv != nil:
		r.s.From[key] = "--" + flag
		return *fv
	case env != "" && r.getenv(env) != "":
		r.s.From[key] = env
		return r.getenv(env)
	case ckey != "" && cv != "":
		r.s.From[key] = r.key(ckey)
		return cv
	}
	r.s.From[key] = SourceDefault
	return def
}

func (r *resolver) minConfidence(fv *float64, cv *float64) error {
	s := &r.s
	var v float64
	switch raw := r.getenv(EnvMinConfidence); {
	case fv != nil:
		v, s.From["min_confidence"] = *fv, "--min-confidence"
	case raw != "":
		f, err := strconv.ParseFloat(raw, 64)
		if err != nil {
			return fmt.Errorf("invalid %s %q: want a number from 0 to 1", EnvMinConfidence, raw)
		}
		v, s.From["min_confidence"] = f, EnvMinConfidence
	case cv != nil:
		v, s.From["min_confidence"] = *cv, r.key("review.min_confidence")
	default:
		s.From["min_confidence"] = SourceDefault
		return nil
	}
	if math.IsNaN(v) || v < 0 || v > 1 {
		return fmt.Errorf("invalid %s %v: want a number from 0 to 1", s.From["min_confidence"], v)
	}
	s.MinConfidence = &v
	return nil
}

// bundleProfile: bundle and profile are one choice (triage's), so the
// first layer that sets either decides both.
func (r *resolver) bundleProfile(fb, fp *string) {
	s, rv := &r.s, r.cfg.Review
	eb, ep := r.getenv(EnvBundle), r.getenv(EnvProfile)
	switch {
	case fb != nil || fp != nil:
		s.Bundle, s.Profile = deref(fb), deref(fp)
		s.From["bundle"], s.From["profile"] = "--bundle", "--profile"
	case eb != "" || ep != "":
		s.Bundle, s.Profile = eb, ep
		s.From["bundle"], s.From["profile"] = EnvBundle, EnvProfile
	case rv.Bundle != "" || rv.Profile != "":
		s.Bundle, s.Profile = rv.Bundle, rv.Profile
		s.From["bundle"], s.From["profile"] = r.key("review.bundle"), r.key("review.profile")
	default:
		s.From["bundle"], s.From["profile"] = SourceDefault, SourceDefault
	}
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func choice(from, v string, allowed []string) error {
	if v == "" || slices.Contains(allowed, v) {
		return nil
	}
	return fmt.Errorf("invalid %s %q: want one of %s", from, v, strings.Join(allowed, ", "))
}

func names[T ~string](xs []T) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = string(x)
	}
	return out
}
