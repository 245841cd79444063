package config

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/diffpalhq/diffpal/findings"
)

func ptr[T any](v T) *T { return &v }

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// TestResolvePrecedence checks flag > environment > file > default for
// every DIFFPAL_* variable the README lists, one layer removed at a time.
func TestResolvePrecedence(t *testing.T) {
	cases := []struct {
		name string
		env  string // the variable
		key  string // Settings.From key
		def  string
		set  func(o *Overrides, v string)
		cfg  func(c *Config, v string)
		get  func(Settings) string
	}{
		{name: "filter mode", env: EnvFilterMode, key: "filter_mode", def: "added",
			set: func(o *Overrides, v string) { o.FilterMode = &v },
			cfg: func(c *Config, v string) { c.Review.FilterMode = v },
			get: func(s Settings) string { return s.FilterMode }},
		{name: "block on", env: EnvBlockOn, key: "block_on", def: "high",
			set: func(o *Overrides, v string) { o.BlockOn = &v },
			cfg: func(c *Config, v string) { c.Review.BlockOn = v },
			get: func(s Settings) string { return string(s.BlockOn) }},
		{name: "bundle", env: EnvBundle, key: "bundle", def: "",
			set: func(o *Overrides, v string) { o.Bundle = &v },
			cfg: func(c *Config, v string) { c.Review.Bundle = v },
			get: func(s Settings) string { return s.Bundle }},
		{name: "profile", env: EnvProfile, key: "profile", def: "",
			set: func(o *Overrides, v string) { o.Profile = &v },
			cfg: func(c *Config, v string) { c.Review.Profile = v },
			get: func(s Settings) string { return s.Profile }},
		{name: "provider", env: EnvProvider, key: "provider", def: "",
			set: func(o *Overrides, v string) { o.Provider = &v },
			cfg: func(c *Config, v string) { c.Provider = v },
			get: func(s Settings) string { return s.Provider }},
		{name: "model (no config key)", env: EnvModel, key: "model", def: "",
			set: func(o *Overrides, v string) { o.Model = &v },
			get: func(s Settings) string { return s.Model }},
		{name: "min confidence", env: EnvMinConfidence, key: "min_confidence", def: "<nil>",
			set: func(o *Overrides, v string) { o.MinConfidence = ptr(mustFloat(t, v)) },
			cfg: func(c *Config, v string) { c.Review.MinConfidence = ptr(mustFloat(t, v)) },
			get: func(s Settings) string {
				if s.MinConfidence == nil {
					return "<nil>"
				}
				return strconv.FormatFloat(*s.MinConfidence, 'g', -1, 64)
			}},
	}
	values := map[string][3]string{ // flag, env, file
		"filter mode":           {"nofilter", "file", "diff_context"},
		"block on":              {"critical", "low", "medium"},
		"bundle":                {"security", "mobile", "widget"},
		"profile":               {"code_reviewer", "security_reviewer", "python_reviewer"},
		"provider":              {"command", "anthropic", "openai"},
		"model (no config key)": {"m-flag", "m-env", ""},
		"min confidence":        {"0.9", "0.5", "0.25"},
	}
	if len(cases) != len(ReviewEnv()) {
		t.Fatalf("%d cases for %d variables", len(cases), len(ReviewEnv()))
	}
	for _, tc := range cases {
		v := values[tc.name]
		if !slices.Contains(ReviewEnv(), tc.env) {
			t.Fatalf("%s: %s is not a review variable", tc.name, tc.env)
		}
		for _, step := range []struct {
			name             string
			flag, env, file  bool
			want, wantSource string
		}{
			{"all layers: the flag wins", true, true, true, v[0], "--"},
			{"no flag: the variable wins", false, true, true, v[1], tc.env},
			{"no flag or variable: the file", false, false, true, v[2], "review."},
			{"nothing: the default", false, false, false, tc.def, SourceDefault},
		} {
			if tc.cfg == nil && step.file && !step.env && !step.flag {
				step.want, step.wantSource = tc.def, SourceDefault
			}
			var o Overrides
			env := map[string]string{}
			cfg := &Config{Version: "v1", Path: ".config/diffpal/config.yaml"}
			if step.flag {
				tc.set(&o, v[0])
			}
			if step.env {
				env[tc.env] = v[1]
			}
			if step.file && tc.cfg != nil {
				tc.cfg(cfg, v[2])
			}
			s, err := Resolve(cfg, o, envOf(env))
			if err != nil {
				t.Fatalf("%s, %s: %v", tc.name, step.name, err)
			}
			if got := tc.get(s); got != step.want {
				t.Errorf("%s, %s: got %q, want %q", tc.name, step.name, got, step.want)
			}
			from := s.From[tc.key]
			switch {
			case step.wantSource == "--" && !strings.HasPrefix(from, "--"),
				step.wantSource == "review." && !strings.HasSuffix(from, " in .config/diffpal/config.yaml"),
				step.wantSource != "--" && step.wantSource != "review." && from != step.wantSource:
				t.Errorf("%s, %s: From[%s] = %q, want %s", tc.name, step.name, tc.key, from, step.wantSource)
			}
		}
	}
}

func mustFloat(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestResolveEmptyVariableIsUnset: an empty DIFFPAL_* variable falls
// through to the file, as an unset one does.
func TestResolveEmptyVariableIsUnset(t *testing.T) {
	cfg := &Config{Version: "v1", Review: Review{BlockOn: "low"}}
	s, err := Resolve(cfg, Overrides{}, envOf(map[string]string{EnvBlockOn: "", EnvMinConfidence: ""}))
	if err != nil || s.BlockOn != findings.Low || s.MinConfidence != nil {
		t.Fatalf("got %+v, %v", s, err)
	}
}

// TestResolveBundleProfileOneChoice: bundle and profile are one setting;
// the first layer that sets either decides both, so a profile on the
// command line is not combined with a bundle from the file.
func TestResolveBundleProfileOneChoice(t *testing.T) {
	cfg := &Config{Version: "v1", Review: Review{Bundle: "security"}}
	s, err := Resolve(cfg, Overrides{Profile: ptr("code_reviewer")}, envOf(map[string]string{EnvBundle: "mobile"}))
	if err != nil || s.Bundle != "" || s.Profile != "code_reviewer" {
		t.Fatalf("flag profile: %+v, %v", s, err)
	}
	s, err = Resolve(cfg, Overrides{}, envOf(map[string]string{EnvProfile: "security_reviewer"}))
	if err != nil || s.Bundle != "" || s.Profile != "security_reviewer" || s.From["profile"] != EnvProfile {
		t.Fatalf("env profile: %+v, %v", s, err)
	}
	s, err = Resolve(cfg, Overrides{}, nil)
	if err != nil || s.Bundle != "security" || s.Profile != "" {
		t.Fatalf("file bundle: %+v, %v", s, err)
	}
}

// TestResolveOtherSettings: the settings without a variable (flag > file
// > default) and the lists the flags add to.
func TestResolveOtherSettings(t *testing.T) {
	cfg := &Config{Version: "v1", Review: Review{MaxFileBytes: 2048, DefaultSkips: ptr(false),
		Include: []string{"src/**"}, Exclude: []string{"**/*.snap"}, Formats: []string{"json", "sarif"}},
		Ignores: []Ignore{{Rule: "r", Reason: "why"}}}
	s, err := Resolve(cfg, Overrides{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.MaxFileBytes != 2048 || !s.NoDefaultSkips || !slices.Equal(s.Formats, []string{"json", "sarif"}) ||
		s.From["formats"] != "review.formats" || len(s.Ignores) != 1 {
		t.Errorf("file: %+v", s)
	}
	s, err = Resolve(cfg, Overrides{MaxFileBytes: ptr(10), NoDefaultSkips: ptr(false), Include: []string{"cmd/**"},
		Exclude: []string{"*.md"}, Formats: []string{"markdown"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.MaxFileBytes != 10 || s.NoDefaultSkips || !slices.Equal(s.Include, []string{"src/**", "cmd/**"}) ||
		!slices.Equal(s.Exclude, []string{"**/*.snap", "*.md"}) || !slices.Equal(s.Formats, []string{"markdown"}) || s.From["formats"] != "--format" {
		t.Errorf("flags: %+v", s)
	}
	s, err = Resolve(nil, Overrides{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.FilterMode != DefaultFilterMode || s.BlockOn != findings.High || s.MaxFileBytes != DefaultMaxFileBytes ||
		s.NoDefaultSkips || s.Formats != nil || s.From["formats"] != SourceDefault || s.MinConfidence != nil {
		t.Errorf("defaults: %+v", s)
	}
	if p := s.Policy(); p.BlockOn != findings.High || p.MinConfidence != nil {
		t.Errorf("policy = %+v", p)
	}
	// The config's lists are not changed by appending the flags'.
	if len(cfg.Review.Include) != 1 {
		t.Errorf("config include changed: %v", cfg.Review.Include)
	}
}

// TestResolveErrorsNameTheSource: an invalid value is reported as the flag,
// variable or config key it came from.
func TestResolveErrorsNameTheSource(t *testing.T) {
	file := &Config{Version: "v1", Path: "cfg.yaml", Review: Review{Bundle: "fancy"}}
	cases := []struct {
		name string
		cfg  *Config
		o    Overrides
		env  map[string]string
		want string
	}{
		{"flag filter mode", nil, Overrides{FilterMode: ptr("lines")}, nil, "--filter-mode: "},
		{"env filter mode", nil, Overrides{}, map[string]string{EnvFilterMode: "lines"}, "DIFFPAL_FILTER_MODE: "},
		{"flag block on", nil, Overrides{BlockOn: ptr("severe")}, nil, `invalid --block-on "severe": want one of low, medium, high, critical`},
		{"env block on", nil, Overrides{}, map[string]string{EnvBlockOn: "severe"}, `invalid DIFFPAL_BLOCK_ON "severe": want one of low, medium, high, critical`},
		{"flag min confidence", nil, Overrides{MinConfidence: ptr(7.0)}, nil, "invalid --min-confidence 7: want a number from 0 to 1"},
		{"env min confidence range", nil, Overrides{}, map[string]string{EnvMinConfidence: "7"}, "invalid DIFFPAL_MIN_CONFIDENCE 7: want a number from 0 to 1"},
		{"env min confidence syntax", nil, Overrides{}, map[string]string{EnvMinConfidence: "high"}, `invalid DIFFPAL_MIN_CONFIDENCE "high": want a number from 0 to 1`},
		{"flag bundle and profile", nil, Overrides{Bundle: ptr("security"), Profile: ptr("code_reviewer")}, nil, "--bundle and --profile are mutually exclusive"},
		{"env bundle and profile", nil, Overrides{}, map[string]string{EnvBundle: "security", EnvProfile: "code_reviewer"}, "DIFFPAL_BUNDLE and DIFFPAL_PROFILE are mutually exclusive"},
		{"flag bundle", nil, Overrides{Bundle: ptr("fancy")}, nil, `invalid --bundle "fancy": want one of ordinary_mr, `},
		{"flag profile", nil, Overrides{Profile: ptr("fancy")}, nil, `invalid --profile "fancy": want one of `},
		{"env bundle", nil, Overrides{}, map[string]string{EnvBundle: "fancy"}, `invalid DIFFPAL_BUNDLE "fancy": want one of `},
		{"file bundle", file, Overrides{}, nil, `invalid review.bundle in cfg.yaml "fancy": want one of `},
		{"flag max file bytes", nil, Overrides{MaxFileBytes: ptr(0)}, nil, "invalid --max-file-bytes 0: want a positive number of bytes"},
		{"flag include", nil, Overrides{Include: []string{"src/["}}, nil, `--include "src/["`},
		{"flag exclude", nil, Overrides{Exclude: []string{"src/["}}, nil, `--exclude "src/["`},
	}
	for _, tc := range cases {
		_, err := Resolve(tc.cfg, tc.o, envOf(tc.env))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to start with %q", tc.name, err, tc.want)
		}
	}
}

// TestResolveNilEnvironment: a nil getenv reads no environment at all.
func TestResolveNilEnvironment(t *testing.T) {
	t.Setenv(EnvBlockOn, "low")
	s, err := Resolve(nil, Overrides{}, nil)
	if err != nil || s.BlockOn != findings.High {
		t.Fatalf("got %v, %v", s.BlockOn, err)
	}
}
