package config

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

func TestParseValid(t *testing.T) {
	c, err := Parse([]byte(`version: v1
review:
  filter_mode: diff_context
  block_on: medium
  min_confidence: 0.7
  include: ["src/**"]
  exclude: ["**/*.snap"]
rules:
  packs: [.config/diffpal/team.yaml]
ignores:
  - rule: go-defer-in-loop
    path: "cmd/**"
    reason: loops are bounded to three iterations
`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Review.FilterMode != "diff_context" || *c.Review.MinConfidence != 0.7 || len(c.Ignores) != 1 || c.Rules.Packs[0] != ".config/diffpal/team.yaml" {
		t.Errorf("parsed %+v", c)
	}
}

func TestParseErrorsNameTheField(t *testing.T) {
	_, err := Parse([]byte(`version: v2
review:
  filter_mode: everything
  block_on: severe
  min_confidence: 3
ignores:
  - rule: x
  - reason: because
`))
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{
		`version: unsupported version "v2": want v1`,
		`review.filter_mode: must be one of added, diff_context, file, nofilter, got "everything"`,
		`review.block_on: must be one of low, medium, high, critical, got "severe"`,
		`review.min_confidence: must be a number from 0 to 1, got 3`,
		`ignores[0].reason: is required`,
		`ignores[1]: set at least one of rule, category or path`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
	if _, err := Parse([]byte("version: v1\nreveiw: {}\n")); err == nil || !strings.Contains(err.Error(), "reveiw") {
		t.Errorf("unknown key not reported: %v", err)
	}
	if _, err := Parse([]byte("version: v1\nreview: [1, 2\n")); err == nil {
		t.Error("broken YAML accepted")
	}
}

func TestLoad(t *testing.T) {
	root := t.TempDir()
	c, err := Load(root, "")
	if err != nil || c.Version != "v1" || c.Path != "" {
		t.Errorf("missing default file: %+v %v", c, err)
	}
	if _, err := Load(root, filepath.Join(root, "nope.yaml")); err == nil {
		t.Error("missing explicit file accepted")
	}
	p := filepath.Join(root, DefaultPath)
	os.MkdirAll(filepath.Dir(p), 0o755)
	os.WriteFile(p, []byte("version: v1\nignores:\n  - category: style\n"), 0o644)
	_, err = Load(root, "")
	if err == nil || !strings.Contains(err.Error(), DefaultPath) || !strings.Contains(err.Error(), "ignores[0].reason") {
		t.Errorf("error must name the file and the field: %v", err)
	}
}

func TestProviders(t *testing.T) {
	c, err := Parse([]byte(`version: v1
provider: openai
providers:
  openai: {type: openai, model: gpt-x, base_url: "http://127.0.0.1:8080/v1", timeout: 30s, reasoning: low}
  agent: {type: command, command: [claude, -p]}
stages:
  security_reviewer: agent
  synthesis: openai
`))
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := c.Providers["openai"].TimeoutOf(0); d.Seconds() != 30 {
		t.Errorf("timeout = %v", d)
	}
	_, err = Parse([]byte(`version: v1
provider: nope
providers:
  builtin: {type: openai, model: x}
  a: {type: gemini}
  b: {type: openai, base_url: ftp://x, timeout: soon, reasoning: max, max_bytes: -1}
  c: {type: command}
stages:
  reviewer: b
  code_reviewer: zzz
`))
	for _, want := range []string{
		`provider: names no configured provider: "nope"`,
		"providers.builtin: the name builtin is reserved",
		`providers.a.type: must be one of openai, anthropic, command, aistudio, pool, codex_acp, copilot_acp, opencode_acp, gemini_acp, claude_code_acp, generic_acp, got "gemini"`,
		"providers.b.model: is required for type openai",
		`providers.b.base_url: must be an http(s) URL, got "ftp://x"`,
		`providers.b.timeout: must be a positive duration`,
		`providers.b.reasoning: must be one of none, minimal, low, medium, high, got "max"`,
		"providers.b.max_bytes: must not be negative, got -1",
		"providers.c.command: is required for type command",
		`stages.reviewer: unknown stage "reviewer"`,
		`stages.code_reviewer: names no configured provider: "zzz"`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
}

// TestStarterAndSchema checks that the starter config is valid for both
// the Go validator and the published JSON Schema, and that the schema
// rejects what the validator rejects on a few representative mistakes.
func TestBareProviderTypes(t *testing.T) {
	// As on the command line: set up from the environment and flags.
	for _, p := range []string{"builtin", "openai", "anthropic", "command"} {
		if _, err := Parse([]byte("version: v1\nprovider: " + p + "\nstages:\n  synthesis: " + p + "\n")); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

func TestStarterAndSchema(t *testing.T) {
	if _, err := Parse([]byte(Starter)); err != nil {
		t.Fatalf("starter config invalid: %v", err)
	}
	c := jsonschema.NewCompiler()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(Schema()))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddResource("mem://config.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("mem://config.json")
	if err != nil {
		t.Fatal(err)
	}
	toJSON := func(y string) any {
		var v any
		if err := yaml.Unmarshal([]byte(y), &v); err != nil {
			t.Fatal(err)
		}
		data, _ := json.Marshal(v)
		inst, _ := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		return inst
	}
	cases := []struct {
		yaml  string
		valid bool
	}{
		{Starter, true},
		{"version: v1\nproviders:\n  o: {type: openai, model: m}\n", true},
		{"version: v1\nproviders:\n  o: {type: openai}\n", false},
		{"version: v1\nproviders:\n  c: {type: command}\n", false},
		{"version: v1\nreview: {block_on: severe}\n", false},
		{"version: v1\nignores:\n  - {rule: x}\n", false},
		{"version: v1\nreveiw: {}\n", false},
		{"version: v2\n", false},
		{"version: v1\nproviders:\n  a: {type: generic_acp, command: [agent, acp]}\n", true},
		{"version: v1\nproviders:\n  a: {type: generic_acp}\n", false},
		{"version: v1\nproviders:\n  a: {type: codex_acp}\n  g: {type: gemini_acp, model: gemini-2.5-pro}\n", true},
		{"version: v1\nproviders:\n  g: {type: gemini_acp, command: [gemini]}\n", false},
		{"version: v1\nproviders:\n  s: {type: aistudio, model: gemini-2.5-flash}\n  c: {type: copilot_acp}\n  p: {type: pool, members: [c, s]}\n", true},
		{"version: v1\nproviders:\n  p: {type: pool}\n", false},
		{"version: v1\ninspection: {required: true}\nreview: {language: Spanish}\n", true},
		{"version: v1\ninspection: {require: true}\n", false},
	}
	for _, tc := range cases {
		_, goErr := Parse([]byte(tc.yaml))
		schemaErr := sch.Validate(toJSON(tc.yaml))
		if (goErr == nil) != tc.valid || (schemaErr == nil) != tc.valid {
			t.Errorf("%q: go=%v schema=%v, want valid=%v", tc.yaml, goErr, schemaErr, tc.valid)
		}
	}
}
