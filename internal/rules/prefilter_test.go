package rules

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

func TestRequiredLiterals(t *testing.T) {
	cases := []struct {
		pattern string
		want    []string
		fold    bool
	}{
		{`InsecureSkipVerify\s*:\s*true`, []string{"InsecureSkipVerify"}, false},
		{`(?i)password\s*=`, []string{"password"}, true},
		{`\b(ghp|gho|ghs)_[A-Za-z0-9]{36}`, []string{"gho_", "ghp_", "ghs_"}, false}, // simplified to gh[ops] and expanded back
		{`^\s*(<<<<<<<|>>>>>>>)`, []string{"<<<<<<<", ">>>>>>>"}, false},
		{`\w+\(`, nil, false},
		{`a|bc`, nil, false},
	}
	for _, c := range cases {
		got, fold := requiredLiterals(c.pattern)
		if !slices.Equal(got, c.want) || fold != c.fold {
			t.Errorf("%s: got %q fold=%v, want %q fold=%v", c.pattern, got, fold, c.want, c.fold)
		}
	}
}

// TestPrefilterNeverHidesAMatch checks, for every builtin rule, that a line
// the pattern matches always passes the prefilter.
func TestPrefilterNeverHidesAMatch(t *testing.T) {
	set, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range set.rules {
		if r.c.pattern == nil {
			continue
		}
		for _, ex := range append(append([]Example(nil), r.Positive...), r.Negative...) {
			for _, line := range SplitLines(ex.Code) {
				for _, text := range []string{line, MaskLines(DetectLanguage(ex.Path, ""), []string{line})[0]} {
					if r.c.pattern.MatchString(text) && !r.c.mayMatch(text) {
						t.Errorf("rule %s: prefilter %q rejects matching line %q", r.ID, r.c.prefilter, text)
					}
				}
			}
		}
	}
	if !containsFold("x PassWord = 1", "password") || containsFold("pass word", "password") {
		t.Error("containsFold")
	}
}

func TestParamsOf(t *testing.T) {
	cases := []struct{ name, line, want string }{
		{"Endpoint", "func (c *Client) Endpoint() string { return x(c.endpoint) }", "() string"},
		{"Run", "func Run(ctx context.Context, n int) (int, error) {", "(ctx context.Context, n int) (int, error)"},
		{"load", "def load(path, mode='r'):", "(path, mode='r')"},
		{"Map", "func Map[T any](xs []T) []T {", "[T any](xs []T) []T"}, // type parameters are part of it
	}
	for _, c := range cases {
		if got := paramsOf(c.name, c.line); got != c.want {
			t.Errorf("paramsOf(%q) = %q, want %q", c.line, got, c.want)
		}
	}
}

func TestRequiredLiteralsOfFactoredAlternations(t *testing.T) {
	for _, c := range [][2]string{
		{`^(eval|exec)$`, "eval,exec"},
		{`^(query|queryRow|exec)$`, "exec,query,queryRow"},
		{`\b(os|subprocess)\.(system|run)\(`, "os.run(,os.system(,subprocess.run(,subprocess.system("},
	} {
		lits, _ := requiredLiterals(c[0])
		sort.Strings(lits)
		if strings.Join(lits, ",") != c[1] {
			t.Errorf("requiredLiterals(%q) = %v, want %s", c[0], lits, c[1])
		}
	}
}

// TestDefinitionSetsNeverRejectAMatch: the definition patterns' literal
// sets only skip lines their regexp cannot match, over every line of this
// repository's files and definitions written for each language.
func TestDefinitionSetsNeverRejectAMatch(t *testing.T) {
	lines := []string{
		"func (s *Server) Handle(w http.ResponseWriter) {", "func Map[T any](xs []T) []T {", "type Options struct {", "const Limit = 3", "var Default = x",
		"    async def fetch(self, url):", "def main():", "class Config(Base):", "MAX_ITEMS: int = 10", "MAX_ITEMS = 10",
		"export const handler = async (event) => {", "const f = (a: number): string => {", "let g = x => x", "export default async function* gen<T>(x) {",
		"  private async load(id: string): Promise<void> {", "  render() {", "export interface Props {", "declare enum Color {",
		"  def self.valid?", "module Billing", "public static <T> List<T> copy(List<T> in) {", "  public record Point(int x, int y) {}",
		"  override suspend fun load(id: String): Item {", "  public final class Box {", "  @MainActor func reload()", "function deploy {", "deploy() {",
	}
	out, err := exec.Command("git", "ls-files", "--full-name").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range strings.Fields(string(out)) {
		data, err := os.ReadFile(filepath.Join("..", "..", p))
		if err != nil || len(data) > 1<<20 {
			continue
		}
		lines = append(lines, strings.Split(string(data), "\n")...)
	}
	matched := 0
	for lang := range defPatterns {
		pats := defPatternsOf(lang)
		for _, p := range pats {
			for _, l := range lines {
				if !p.re.MatchString(l) {
					continue
				}
				matched++
				if !hasEverySet(l, p.sets) || !anyLiteral(l, p.lits, p.fold) {
					t.Errorf("%s %s %s: prefilter %q / %q rejects %q, which it matches", lang, p.kind, p.re, p.lits, p.sets, l)
				}
			}
		}
	}
	if matched < 200 {
		t.Errorf("only %d matching lines: the corpus is too small to test", matched)
	}
	// The sets a per-line check can use beyond the chosen literals.
	for _, c := range []struct {
		pattern string
		want    string
	}{
		{jsDefs[2].re, "=>"},
		{jsDefs[3].re, "{"},
	} {
		found := false
		for _, set := range literalSets(c.pattern) {
			found = found || slices.Equal(set, []string{c.want})
		}
		if !found {
			t.Errorf("%s: literalSets %q lack {%q}", c.pattern, literalSets(c.pattern), c.want)
		}
	}
}
