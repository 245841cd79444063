package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/diffpalhq/diffpal/internal/yamlsafe"
)

// FuzzParse feeds arbitrary bytes to the config loader: it must return a
// config or an error, never panic or run away with memory (yamlsafe's
// bounds), and a YAML-level error always names the file.
func FuzzParse(f *testing.F) {
	seeds := []string{
		"version: v1\n",
		"version: v1\nreview: {include: [\"src/**\"], block_on: high}\nignores: [{rule: x, reason: y}]\n",
		"version: v1\nx0: &x0 [a, a]\nx1: &x1 [*x0, *x0]\nreview: {include: *x1}\n",
		"version: v1\nreview: {include: " + strings.Repeat("[", 200) + "}\n",
		"version: v1\nproviders: {o: {type: openai, model: m, base_url: 'http://x'}}\n",
		"version: v1\nreview:\n  include:\n    - \"src/[\"\n",
		"\x00",
		"- - - - - -",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseFile("fuzz.yaml", data, nil)
		if err == nil && c == nil {
			t.Fatal("nil config without an error")
		}
		var ye *yamlsafe.Error
		if errors.As(err, &ye) && ye.File != "fuzz.yaml" {
			t.Fatalf("error names %q", ye.File)
		}
	})
}
