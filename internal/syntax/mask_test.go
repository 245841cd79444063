//go:build cgo

package syntax

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// maskSamples are the code of every example of the built-in rule packs
// (hundreds of files in every bundled grammar, comments and strings of
// every kind), by grammar.
func maskSamples(t *testing.T) map[string][]string {
	t.Helper()
	byExt := map[string]string{".go": "go", ".py": "python", ".js": "javascript", ".jsx": "javascript", ".mjs": "javascript",
		".ts": "typescript", ".tsx": "tsx", ".java": "java", ".kt": "kotlin", ".rb": "ruby", ".php": "php", ".cs": "csharp",
		".sh": "shell", ".bash": "shell", ".yaml": "yaml", ".yml": "yaml", ".tf": "hcl", ".hcl": "hcl"}
	type example struct {
		Path, Code, Before string
		Extra              []struct{ Path, Code, Before string }
	}
	var pack struct {
		Rules []struct{ Positive, Negative []example }
	}
	out := map[string][]string{}
	add := func(path, code string) {
		g := byExt[strings.ToLower(filepath.Ext(path))]
		if strings.HasPrefix(filepath.Base(path), "Dockerfile") {
			g = "dockerfile"
		}
		if g != "" && code != "" {
			out[g] = append(out[g], code)
		}
	}
	files, _ := filepath.Glob("../rules/packs/*.yaml")
	if len(files) < 5 {
		t.Fatalf("found %d rule packs", len(files))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(data, &pack); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, r := range pack.Rules {
			for _, ex := range append(r.Positive, r.Negative...) {
				add(ex.Path, ex.Code)
				add(ex.Path, ex.Before)
				for _, e := range ex.Extra {
					add(e.Path, e.Code)
				}
			}
		}
	}
	return out
}

// TestMaskWalkSameAsQuery: the walk a small review masks with finds the
// same comment and string nodes as the mask query, in every grammar, so
// the masked text is the same whichever a file gets.
func TestMaskWalkSameAsQuery(t *testing.T) {
	samples := maskSamples(t)
	for g := range grammars {
		if len(samples[g]) < 3 && g != "tsx" && g != "hcl" {
			t.Errorf("%s: only %d samples", g, len(samples[g]))
		}
	}
	key := func(ns []Node) []string {
		var out []string
		for _, n := range ns {
			out = append(out, fmt.Sprintf("%d-%d %s", n.StartByte(), n.EndByte(), n.Type()))
		}
		slices.Sort(out)
		return out
	}
	nodes := 0
	for g, srcs := range samples {
		for _, src := range srcs {
			tr, err := Parse(context.Background(), g, []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			walk, query := key(tr.maskNodesByWalk()), key(tr.maskNodesByQuery())
			if !slices.Equal(walk, query) {
				t.Errorf("%s: walk found %q, the query %q in\n%s", g, walk, query, src)
			}
			nodes += len(walk)
			tr.Close()
		}
	}
	if nodes < 500 {
		t.Errorf("only %d comment and string nodes in the samples", nodes)
	}
}
