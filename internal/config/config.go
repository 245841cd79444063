// Package config loads and validates diffpal's repository configuration,
// .config/diffpal/config.yaml (version: v1). Unknown keys are errors, every
// error names the key path and the rule, and nothing here reads flags or
// prints: the CLI layers flags over what Load returns.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/goccy/go-yaml"
)

// DefaultPath is the config file's location relative to the repository root.
const DefaultPath = ".config/diffpal/config.yaml"

// Config is the file's model.
type Config struct {
	Version string   `yaml:"version" json:"version"`
	Review  Review   `yaml:"review" json:"review"`
	Rules   Rules    `yaml:"rules" json:"rules"`
	Ignores []Ignore `yaml:"ignores" json:"ignores"`

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
}

// Rules adds user rule packs (paths relative to the repository root).
type Rules struct {
	Packs []string `yaml:"packs" json:"packs,omitempty"`
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
	filterModes = []string{"added", "diff_context", "file", "nofilter"}
	severities  = []string{"low", "medium", "high", "critical"}
)

// Load reads the config at path, or at root/DefaultPath when path is "".
// A missing default file yields the zero Config; a missing explicit file
// is an error.
func Load(root, path string) (*Config, error) {
	explicit := path != ""
	if !explicit {
		path = filepath.Join(root, DefaultPath)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) && !explicit {
			return &Config{Version: "v1"}, nil
		}
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	c, err := Parse(data)
	if err != nil {
		var fe *Errors
		if errors.As(err, &fe) {
			fe.Path = path
			return nil, fe
		}
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	c.Path = path
	return c, nil
}

// Parse decodes and validates config YAML.
func Parse(data []byte) (*Config, error) {
	var c Config
	if len(bytes.TrimSpace(data)) > 0 {
		if err := yaml.NewDecoder(bytes.NewReader(data), yaml.Strict()).Decode(&c); err != nil {
			return nil, errors.New(yaml.FormatError(err, false, true))
		}
	}
	if errs := c.Validate(); len(errs) > 0 {
		return nil, &Errors{List: errs}
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
		if strings.TrimSpace(g) == "" {
			add(fmt.Sprintf("review.include[%d]", i), "must not be empty")
		}
	}
	for i, g := range r.Exclude {
		if strings.TrimSpace(g) == "" {
			add(fmt.Sprintf("review.exclude[%d]", i), "must not be empty")
		}
	}
	for i, p := range c.Rules.Packs {
		if strings.TrimSpace(p) == "" {
			add(fmt.Sprintf("rules.packs[%d]", i), "must not be empty")
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
	}
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
