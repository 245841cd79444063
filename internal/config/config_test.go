package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "ignores[0].reason") {
		t.Errorf("error must name the file and the field: %v", err)
	}
}
