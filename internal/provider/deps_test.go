package provider_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/diffpalhq/diffpal/"

// imports returns the module-internal imports of the package in dir
// (test files included when tests is set).
func imports(t *testing.T, root, dir string, tests bool) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(root, dir))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || (!tests && strings.HasSuffix(n, "_test.go")) {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, dir, n), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if rel, ok := strings.CutPrefix(p, module); ok && !slices.Contains(out, rel) {
				out = append(out, rel)
			}
		}
	}
	return out
}

// deps is every module-internal package dir imports, transitively (its
// own tests' direct imports included).
func deps(t *testing.T, root, dir string) []string {
	seen := map[string]bool{}
	var walk func(string, bool)
	walk = func(d string, tests bool) {
		for _, p := range imports(t, root, d, tests) {
			if !seen[p] {
				seen[p] = true
				walk(p, false)
			}
		}
	}
	walk(dir, true)
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// TestProvidersImportNeitherTheEngineNorEachOther holds the seam's rule:
// no provider imports internal/review, and no provider imports another;
// the model transports share package llm, which imports no provider.
func TestProvidersImportNeitherTheEngineNorEachOther(t *testing.T) {
	root, err := filepath.Abs("../..") // the module root
	if err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	pkgs := []string{"internal/provider"}
	for _, e := range ents {
		if e.IsDir() && e.Name() != "testdata" {
			pkgs = append(pkgs, "internal/provider/"+e.Name())
		}
	}
	if len(pkgs) < 9 {
		t.Fatalf("found only %v", pkgs)
	}
	shared := map[string]bool{"internal/provider/llm": true}
	for _, pkg := range pkgs {
		for _, d := range deps(t, root, pkg) {
			switch {
			case d == "internal/review" || strings.HasPrefix(d, "internal/review/"):
				t.Errorf("%s imports the engine (%s)", pkg, d)
			case d == pkg || d == "internal/provider" || strings.HasPrefix(d, pkg+"/"):
				// Its own test helpers (provider/acp/acptest).
			case strings.HasPrefix(d, "internal/provider/"):
				// Only the model transports may use the shared machinery.
				transport := slices.Contains([]string{"openai", "anthropic", "command", "acp", "aistudio"}, filepath.Base(pkg))
				if !shared[d] || !transport {
					t.Errorf("%s imports another provider (%s)", pkg, d)
				}
			}
		}
	}
}
