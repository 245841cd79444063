package rules

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func signatureHits(t *testing.T, files ...*File) []Hit {
	t.Helper()
	s := mustBuiltin(t)
	var out []Hit
	for _, h := range s.MatchChange(files, nil) {
		if h.RuleID == "explorer.changed-signature-used" {
			out = append(out, h)
		}
	}
	return out
}

type sigFile struct{ path, old, new string }

func sigFiles(fs ...sigFile) []*File {
	var out []*File
	for _, f := range fs {
		var o, n []byte
		if f.old != "\x00" {
			o = []byte(f.old)
		}
		if f.new != "\x00" {
			n = []byte(f.new)
		}
		out = append(out, DiffFile(f.path, o, n))
	}
	return out
}

// comment adds a comment line after the first line, so the file is in the
// change without its calls changing.
func touched(s string) string {
	i := strings.IndexByte(s, '\n')
	c := "// touched"
	if strings.HasPrefix(s, "def ") || strings.HasPrefix(s, "from ") || strings.HasPrefix(s, "import ") || strings.HasPrefix(s, "class ") {
		c = "# touched"
	}
	return s[:i+1] + c + "\n" + s[i+1:]
}

func TestChangedSignatureShapes(t *testing.T) {
	goDef := func(sig string) string {
		return "package pricing\n\nfunc Discount" + sig + " {\n\treturn 0\n}\n"
	}
	checkout := "package checkout\n\nimport \"example.com/shop/internal/pricing\"\n\nfunc Total(items []int) int {\n\treturn pricing.Discount(sum(items))\n}\n"
	cases := []struct {
		name     string
		files    []sigFile
		severity string // "" for no finding
		anchor   string
	}{
		// true shapes
		{"go added required parameter, caller in another package", []sigFile{
			{"internal/pricing/discount.go", goDef("(total int) int"), goDef("(total int, code string) int")},
			{"internal/checkout/checkout.go", checkout, touched(checkout)},
		}, "high", "internal/checkout/checkout.go:7 (1 argument(s))"},
		{"go result added, same package", []sigFile{
			{"internal/store/load.go", "package store\n\nfunc Load(k string) []byte { return nil }\n", "package store\n\nfunc Load(k string) ([]byte, error) { return nil, nil }\n"},
			{"internal/store/cache.go", "package store\n\nfunc get(k string) []byte {\n\tv := Load(k)\n\treturn v\n}\n", touched("package store\n\nfunc get(k string) []byte {\n\tv := Load(k)\n\treturn v\n}\n")},
		}, "high", "1 result(s) assigned"},
		{"go call in the definition's own file", []sigFile{
			{"internal/store/load.go", "package store\n\nfunc Load(k string) []byte { return nil }\n\nfunc all() { _ = Load(\"a\") }\n", "package store\n\nfunc Load(k string, n int) []byte { return nil }\n\nfunc all() { _ = Load(\"a\") }\n"},
		}, "high", "internal/store/load.go:5"},
		{"python removed parameter, imported caller in another changed file", []sigFile{
			{"app/names.py", "def display_name(user, fallback):\n    return user.name or fallback\n", "def display_name(user):\n    return user.name\n"},
			{"app/views.py", "from app.names import display_name\n\ndef show(user):\n    return display_name(user, 'x')\n", touched("from app.names import display_name\n\ndef show(user):\n    return display_name(user, 'x')\n")},
		}, "high", "app/views.py:5 (2 argument(s))"},
		{"python renamed keyword-only parameter", []sigFile{
			{"app/net.py", "def fetch(url, *, timeout=10):\n    pass\n", "def fetch(url, *, deadline=10):\n    pass\n"},
			{"app/jobs.py", "from app.net import fetch\n\ndef run():\n    fetch('u', timeout=3)\n", touched("from app.net import fetch\n\ndef run():\n    fetch('u', timeout=3)\n")},
		}, "high", "timeout="},
		{"python multi-line signature gains a required parameter", []sigFile{
			{"app/net.py", "def fetch(\n    url,\n):\n    pass\n", "def fetch(\n    url,\n    method,\n):\n    pass\n"},
			{"app/jobs.py", "import app.net as net\n\ndef run():\n    net.fetch('u')\n", touched("import app.net as net\n\ndef run():\n    net.fetch('u')\n")},
		}, "high", "app/jobs.py:5"},
		{"java method gains a parameter", []sigFile{
			{"src/Billing.java", "class Billing {\n  public void charge(int cents) {}\n}\n", "class Billing {\n  public void charge(int cents, String currency) {}\n}\n"},
			{"src/Shop.java", "class Shop {\n  void buy(Billing b) { b.charge(100); }\n}\n", touched("class Shop {\n  void buy(Billing b) { b.charge(100); }\n}\n")},
		}, "medium", "src/Shop.java:3"},
		{"ruby required keyword added", []sigFile{
			{"lib/deploy.rb", "class Deploy\n  def run(env)\n  end\nend\n", "class Deploy\n  def run(env, mode:)\n  end\nend\n"},
			{"lib/cli.rb", "class Cli\n  def go\n    @deploy.run('prod')\n  end\nend\n", touched("class Cli\n  def go\n    @deploy.run('prod')\n  end\nend\n")},
		}, "medium", "lib/cli.rb:4"},
		{"typescript added required parameter, imported caller", []sigFile{
			{"src/fmt.ts", "export function money(n: number): string { return '' }\n", "export function money(n: number, cur: string): string { return '' }\n"},
			{"src/cart.ts", "import { money } from './fmt'\nexport const total = money(3)\n", touched("import { money } from './fmt'\nexport const total = money(3)\n")},
		}, "high", "src/cart.ts:3"},

		// false shapes
		{"advisory: optional parameter added, every call fits", []sigFile{
			{"app/names.py", "def greet(user):\n    pass\n", "def greet(user, greeting='hi'):\n    pass\n"},
			{"app/views.py", "from app.names import greet\n\ndef show(u):\n    return greet(u)\n", touched("from app.names import greet\n\ndef show(u):\n    return greet(u)\n")},
		}, "", ""},
		{"ruby optional keyword added (callers unaffected)", []sigFile{
			{"spec/helpers.rb", "module Helpers\n  def mock_app(app)\n  end\nend\n", "module Helpers\n  def mock_app(app, lint: true)\n  end\nend\n"},
			{"spec/app_spec.rb", "describe 'x' do\n  it { mock_app(App) }\nend\n", touched("describe 'x' do\n  it { mock_app(App) }\nend\n")},
		}, "", ""},
		{"whitespace-only edit", []sigFile{
			{"internal/pricing/discount.go", goDef("(total int,code string) int"), goDef("( total int, code string ) int")},
			{"internal/checkout/checkout.go", strings.Replace(checkout, "sum(items))", "sum(items), \"\")", 1), touched(strings.Replace(checkout, "sum(items))", "sum(items), \"\")", 1))},
		}, "", ""},
		{"python annotations only", []sigFile{
			{"app/names.py", "def display_name(user, fallback: t.Optional[str] = None) -> t.Optional[str]:\n    pass\n", "def display_name(user, fallback: str | None = None) -> str | None:\n    pass\n"},
			{"app/views.py", "from app.names import display_name\n\ndef show(u):\n    return display_name(u, None, 3)\n", touched("from app.names import display_name\n\ndef show(u):\n    return display_name(u, None, 3)\n")},
		}, "", ""},
		{"go named result dropped", []sigFile{
			{"render/json.go", "package render\n\nfunc Write(w W) (err error) { return }\n", "package render\n\nfunc Write(w W) error { return nil }\n"},
			{"render/html.go", "package render\n\nfunc x() { err := Write(w); _ = err }\n", touched("package render\n\nfunc x() { err := Write(w); _ = err }\n")},
		}, "", ""},
		{"go type widened: callers still fit", []sigFile{
			{"context.go", "package gin\n\nfunc (c *Context) Get(key string) (any, bool) { return nil, false }\n", "package gin\n\nfunc (c *Context) Get(key any) (any, bool) { return nil, false }\n"},
			{"auth.go", "package gin\n\nfunc f(c *Context) { v, ok := c.Get(\"user\"); _, _ = v, ok }\n", touched("package gin\n\nfunc f(c *Context) { v, ok := c.Get(\"user\"); _, _ = v, ok }\n")},
		}, "", ""},
		{"javascript test callbacks are not definitions", []sigFile{
			{"test/handle.js", "describe('.handle', function () {\n  it('works', function () {\n    handle(req);\n  });\n});\n", "describe('.handle', function (done) {\n  it('works', function (done) {\n    handle(req, done);\n  });\n});\n"},
			{"lib/router.js", "function handle(req) {}\nhandle(1)\n", touched("function handle(req) {}\nhandle(1)\n")},
		}, "", ""},
		{"javascript ignores missing arguments", []sigFile{
			{"lib/build.js", "function buildFullPath(base, url) {}\n", "function buildFullPath(base, url, allowAbsolute) {}\n"},
			{"lib/adapter.js", "const p = buildFullPath(a, b)\n", touched("const p = buildFullPath(a, b)\n")},
		}, "", ""},
		{"uses in docs, changelogs, YAML, package clauses and locals", []sigFile{
			{"internal/pricing/discount.go", goDef("(total int) int"), goDef("(total int, code string) int")},
			{"docs/pricing.md", "# Pricing\nCall Discount(total).\n", "# Pricing\nCall Discount(total) to apply it.\n"},
			{"CHANGES.rst", "Changes\n=======\n* Discount(total)\n", "Changes\n=======\n* Discount(total)\n* more\n"},
			{".github/workflows/ci.yml", "steps:\n  - name: Discount\n", "steps:\n  - name: Discount\n    run: make\n"},
			{"internal/discount/discount.go", "package discount\n\nfunc x() {\n\tDiscount := func(int) int { return 0 }\n\t_ = Discount(1)\n}\n", touched("package discount\n\nfunc x() {\n\tDiscount := func(int) int { return 0 }\n\t_ = Discount(1)\n}\n")},
			{"internal/other/other.go", "package other\n\nfunc Discount(n int) int { return n }\n\nfunc y() { Discount(1) }\n", touched("package other\n\nfunc Discount(n int) int { return n }\n\nfunc y() { Discount(1) }\n")},
		}, "", ""},
		{"method of another receiver", []sigFile{
			{"lib/cart.rb", "class Cart\n  def add(item)\n  end\nend\n", "class Cart\n  def add(item, qty)\n  end\nend\n"},
			{"lib/tags.rb", "class Tags\n  def add(tag)\n  end\n  def seed\n    add('x')\n  end\nend\n", touched("class Tags\n  def add(tag)\n  end\n  def seed\n    add('x')\n  end\nend\n")},
		}, "", ""},
		{"go method call on a package is not the method", []sigFile{
			{"store.go", "package store\n\nfunc (s *S) Open(p string) {}\n", "package store\n\nfunc (s *S) Open(p string, mode int) {}\n"},
			{"main.go", "package store\n\nimport \"os\"\n\nfunc m() { os.Open(\"x\") }\n", touched("package store\n\nimport \"os\"\n\nfunc m() { os.Open(\"x\") }\n")},
		}, "", ""},
		{"generated bundle", []sigFile{
			{"src/fmt.ts", "export function money(n: number): string { return '' }\n", "export function money(n: number, cur: string): string { return '' }\n"},
			{"dist/cart.ts", "import { money } from '../src/fmt'\nexport const total = money(3)\n", touched("import { money } from '../src/fmt'\nexport const total = money(3)\n")},
		}, "", ""},
		{"python method of an unrelated class with the same name", []sigFile{
			{"app/a.py", "class A:\n    def save(self, x):\n        pass\n", "class A:\n    def save(self, x, y):\n        pass\n"},
			{"app/b.py", "class B:\n    def save(self, x):\n        pass\n\n    def run(self):\n        self.save(1)\n", touched("class B:\n    def save(self, x):\n        pass\n\n    def run(self):\n        self.save(1)\n")},
		}, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hits := signatureHits(t, sigFiles(c.files...)...)
			if c.severity == "" {
				if len(hits) != 0 {
					t.Fatalf("want no finding, got %+v", hits)
				}
				return
			}
			if len(hits) != 1 || hits[0].Severity != c.severity || !strings.Contains(hits[0].Anchor, c.anchor) {
				t.Fatalf("want one %s finding with %q, got %+v", c.severity, c.anchor, hits)
			}
		})
	}
}

func TestOldContentRebuildsTheOldFile(t *testing.T) {
	old := "a\nb\nc\nd\ne\n"
	for _, nw := range []string{"a\nB\nc\nd\ne\n", "x\na\nc\nd\ne\ny\n", "a\nb\nc\nd\ne\n", "e\nd\nc\nb\na\n", "\n"} {
		f := DiffFile("x.go", []byte(old), []byte(nw))
		got, ok := oldContent(f)
		if !ok || strings.Join(got, "\n")+"\n" != old {
			t.Errorf("new %q: old = %q, %v", nw, got, ok)
		}
	}
}

func TestChangedSymbolsContext(t *testing.T) {
	files := sigFiles(
		sigFile{"app/names.py", "def greet(user):\n    pass\n", "def greet(user, greeting='hi'):\n    pass\n"},
		sigFile{"app/views.py", "from app.names import greet\n\ndef show(u):\n    return greet(u)\n", touched("from app.names import greet\n\ndef show(u):\n    return greet(u)\n")},
		sigFile{"CHANGES.rst", "Changes\n=======\n* greet\n", "Changes\n=======\n* greet users\n"},
		sigFile{"test/greet.js", "describe('greet', function () {\n});\n", "describe('greet', function (done) {\n});\n"},
	)
	syms := ChangedSymbols(files)
	if len(syms) != 1 || syms[0].Name != "greet" || syms[0].Signature != "greet(user) → greet(user, greeting=…)" {
		t.Fatalf("symbols = %+v", syms)
	}
	if u := syms[0].UsedIn; len(u) != 2 || u[0].Path != "app/views.py" || u[1].Path != "app/views.py" {
		t.Fatalf("uses = %+v (want only the Python file's import and call)", u)
	}
	// a type-hint-only edit is not a signature change
	files = sigFiles(sigFile{"app/names.py", "def greet(user: t.Optional[str]):\n    pass\n", "def greet(user: str | None):\n    pass\n"})
	if syms := ChangedSymbols(files); len(syms) != 1 || syms[0].Signature != "" {
		t.Fatalf("symbols = %+v", syms)
	}
}

func TestSignatureComparisonNormalises(t *testing.T) {
	cases := []struct {
		lang, name, a, b string
		same             bool
	}{
		{"go", "F", "func F(a int,b int) error {", "func F( a int, b int ) error {", true},
		{"go", "F", "func F(a int) error {", "func F(a int, b int) error {", false},
		{"go", "F", "func F(a int) error {", "func F(a int) (int, error) {", false},
		{"python", "f", "def f(x: t.Optional[str] = None) -> t.Optional[str]:", "def f(x: str | None = None) -> str | None:", true},
		{"python", "f", "def f(self, x: t.Dict[str, int]):", "def f(self, x: dict[str, int]):", true},
		{"python", "f", "def f(x):", "def f(x, y):", false},
		{"python", "f", "def f(x=1):", "def f(x=2):", false},
	}
	for _, c := range cases {
		sa, oka := signatureOf(c.lang, c.name, c.a)
		sb, okb := signatureOf(c.lang, c.name, c.b)
		if !oka || !okb || (sa == sb) != c.same {
			t.Errorf("%s: %q=%q vs %q=%q, same=%v", c.lang, c.a, sa, c.b, sb, c.same)
		}
	}
	if _, ok := signatureOf("python", "f", "def f("); ok {
		t.Error("multi-line signature treated as known")
	}
}

func TestTestCallbacksAreNotDefinitions(t *testing.T) {
	lines := []string{
		"describe('.handle', function () {",
		"  describe('.handle', function () {",
		"  it('x', () => {",
		"  context('when empty', function () {",
		"  beforeEach(function () {",
		"  test('works', async function () {",
	}
	for _, lang := range []string{"javascript", "typescript"} {
		var ls []Line
		for i, s := range lines {
			ls = append(ls, Line{No: i + 1, Text: s})
		}
		masked := MaskLines(lang, lines)
		if d := definitions(lang, ls, func(i int) string { return masked[i] }); len(d) != 0 {
			t.Errorf("%s: definitions = %+v", lang, d)
		}
	}
	// a real method is still a definition
	ls := []Line{{No: 1, Text: "  handle(req, res) {"}}
	if d := definitions("javascript", ls, func(int) string { return ls[0].Text }); len(d) != 1 || d[0].name != "handle" {
		t.Errorf("method definitions = %+v", d)
	}
}

func TestArityAndCallCounting(t *testing.T) {
	cases := []struct {
		lang, kind, name, line string
		n                      int
		ok                     bool
	}{
		{"go", "func", "F", "func F(a, b int) error {", 2, true},
		{"go", "func", "F", "func F(a, b int) error {", 1, false},
		{"go", "func", "F", "func F(a int, rest ...string) {", 5, true},
		{"python", "method", "f", "def f(self, a, b=1):", 1, true},
		{"python", "method", "f", "def f(self, a, b=1):", 3, false},
		{"python", "func", "f", "def f(*args):", 7, true},
		{"typescript", "func", "f", "function f(a: number, b?: string) {", 1, true},
	}
	for _, c := range cases {
		if got := arityOf(c.lang, c.kind, c.name, c.line).accepts(c.n); got != c.ok {
			t.Errorf("%s accepts(%d) = %v", c.line, c.n, got)
		}
	}
	for s, want := range map[string]int{"()": 0, "(a)": 1, "(a, f(b, c))": 2, "(a, [1, 2], {x: 1})": 3, "(*args)": -1, "(...xs)": -1, "(a,": -1} {
		if got := countArgs(s); got != want {
			t.Errorf("countArgs(%q) = %d, want %d", s, got, want)
		}
	}
}

func TestSignatureChangeIsStructural(t *testing.T) {
	cases := []struct {
		path, old, new string
		changed        bool
	}{
		{"a.go", "package a\n\nfunc Fn(a int) (s string) { return }\n", "package a\n\nfunc Fn(a int) string { return \"\" }\n", false},
		{"a.go", "package a\n\nfunc Fn(x interface{}) {}\n", "package a\n\nfunc Fn(x any) {}\n", false},
		{"a.go", "package a\n\nfunc Fn(a,b int) {}\n", "package a\n\nfunc Fn(a int, b int) {}\n", false},
		{"a.go", "package a\n\nfunc Fn(\n\ta int,\n) {}\n", "package a\n\nfunc Fn(a int) {}\n", false},
		{"a.go", "package a\n\nfunc Fn(a int) {}\n", "package a\n\nfunc Fn(a int64) {}\n", true},
		{"a.go", "package a\n\nfunc Fn(a int) error { return nil }\n", "package a\n\nfunc Fn(a int) (int, error) { return 0, nil }\n", true},
		{"a.go", "package a\n\nfunc Fn(a int) {}\n", "package a\n\nfunc Fn(b int) {}\n", false},
		{"a.py", "def fn(a: t.Dict[str, int], b: int = 1) -> None:\n    pass\n", "def fn(a: dict[str, int], b: int | None = 1):\n    pass\n", false},
		{"a.py", "def fn(a, b=1):\n    pass\n", "def fn(a, b=2):\n    pass\n", false},
		{"a.py", "def fn(a):\n    pass\n", "def fn(a, b=1):\n    pass\n", true},
		{"a.py", "def fn(a):\n    pass\n", "def fn(x):\n    pass\n", true},
		{"a.ts", "export function fn(a: number) {}\n", "export function fn(a: string) {}\n", true},
		{"a.js", "function fn(a) {}\n", "function fn(a /* the value */) {}\n", false},
		{"a.php", "<?php\nfunction fn(int $a) {}\n", "<?php\nfunction fn(string $a) {}\n", false},
		{"a.rb", "def mm(a, b=1)\nend\n", "def mm(a, b = 2)\nend\n", false},
		{"A.java", "class A {\n  void mm(int a) {}\n}\n", "class A {\n  void mm(final int a) {}\n}\n", false},
		{"A.java", "class A {\n  void mm(int a) {}\n}\n", "class A {\n  void mm(long a) {}\n}\n", true},
		{"a.kt", "fun fn(a: Int) {}\n", "fun fn(a: Int = 1) {}\n", true},
		{"a.cs", "class C {\n  public void Mm(int a) {}\n}\n", "class C {\n  public void Mm(int a, string b = \"x\") {}\n}\n", true},
		{"test_a.py", "def test_x(mocker):\n    pass\n", "def test_x():\n    pass\n", false},
	}
	for _, c := range cases {
		f := DiffFile(c.path, []byte(c.old), []byte(c.new))
		got := signatureChanges(newFileCtx(f))
		if (len(got) > 0) != c.changed {
			t.Errorf("%s: %q -> %q: changes = %+v", c.path, c.old, c.new, got)
		}
	}
}

// oldContentMaps is oldContent as it was, with a map of the added and of
// the removed lines: the reference TestOldContentMerge holds the merge to.
func oldContentMaps(f *File) ([]string, bool) {
	if f.Content == nil {
		return nil, false
	}
	if len(f.Added) == 0 && len(f.Removed) == 0 {
		return f.Content, true
	}
	added := make(map[int]bool, len(f.Added))
	for _, l := range f.Added {
		if l.No < 1 || l.No > len(f.Content) || f.Content[l.No-1] != l.Text {
			return nil, false
		}
		added[l.No] = true
	}
	removed := make(map[int]string, len(f.Removed))
	for _, l := range f.Removed {
		removed[l.No] = l.Text
	}
	n := len(f.Content) - len(added) + len(removed)
	old := make([]string, 0, n)
	ni := 1
	for o := 1; o <= n; o++ {
		if t, ok := removed[o]; ok {
			old = append(old, t)
			continue
		}
		for ni <= len(f.Content) && added[ni] {
			ni++
		}
		if ni > len(f.Content) {
			return nil, false
		}
		old = append(old, f.Content[ni-1])
		ni++
	}
	for ; ni <= len(f.Content); ni++ {
		if !added[ni] {
			return nil, false
		}
	}
	return old, true
}

// TestOldContentMerge: on random edits of random files, oldContent gives
// the old file and agrees with the maps' version; on lists damaged (a
// line dropped, moved, renumbered or its text changed) it never answers
// what the maps' version does not.
func TestOldContentMerge(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	words := []string{"a", "b", "c", "", "func f() {", "}"}
	lines := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = words[rng.IntN(len(words))]
		}
		return out
	}
	answered := 0
	for range 2000 {
		old := lines(rng.IntN(12))
		var nw []string
		for _, l := range old {
			switch rng.IntN(4) {
			case 0: // removed
			case 1:
				nw = append(nw, lines(1+rng.IntN(2))...)
			default:
				nw = append(nw, l)
			}
		}
		if rng.IntN(3) == 0 {
			nw = append(nw, lines(rng.IntN(3))...)
		}
		f := DiffFile("x.go", []byte(strings.Join(old, "\n")+"\n"), []byte(strings.Join(nw, "\n")+"\n"))
		got, ok := oldContent(f)
		want, wok := oldContentMaps(f)
		if !ok || !wok || strings.Join(got, "\n")+"\n" != strings.Join(old, "\n")+"\n" || !slices.Equal(got, want) {
			t.Fatalf("old %q new %q: merge %q %v, maps %q %v", old, nw, got, ok, want, wok)
		}
		// damaged lists
		g := *f
		g.Added, g.Removed = slices.Clone(f.Added), slices.Clone(f.Removed)
		list := &g.Added
		if len(g.Removed) > 0 && (len(g.Added) == 0 || rng.IntN(2) == 0) {
			list = &g.Removed
		}
		if len(*list) == 0 {
			continue
		}
		k := rng.IntN(len(*list))
		switch rng.IntN(4) {
		case 0:
			*list = slices.Delete(*list, k, k+1)
		case 1:
			l := (*list)[k]
			*list = slices.Insert(slices.Delete(*list, k, k+1), rng.IntN(len(*list)), l)
		case 2:
			(*list)[k].No += rng.IntN(5) - 2
		case 3:
			(*list)[k].Text += "x"
		}
		got, ok = oldContent(&g)
		want, wok = oldContentMaps(&g)
		if ok {
			answered++
			if !wok || !slices.Equal(got, want) {
				t.Fatalf("damaged %+v / %+v: merge %q, maps %q %v", g.Added, g.Removed, got, want, wok)
			}
		}
	}
	if answered == 0 {
		t.Fatal("no damaged list was answered: the check compared nothing")
	}
}

// TestAnchoredFirst: each definition pattern's first-byte filter passes
// over only lines the pattern cannot match, masked or not: on lines of
// every language's definitions and of this package's sources, with
// random parts blanked as masking blanks them, a line whose raw first
// byte the filter rules out is never matched. Go's and Python's
// top-level patterns have a filter; the \s-led ones have none.
func TestAnchoredFirst(t *testing.T) {
	corpus := strings.Split(packageSources(t, "explorer.go", "match.go"), "\n")
	corpus = append(corpus,
		"func (r *T) Name(a int) {", "func Name[T any](a T) {", "type Name struct {", "const Name = 1", "var Name = 2",
		"def name(self):", "async def name(x):", "    def name(self):", "class Name:", "NAME_X = 3", "NAME: int = 3",
		"export function name(a) {", "  name(a) {", "module Name", "  def self.name?", "public class Name {",
		"fun name() {", "  func name() {", "function name {", "name() {", "/* c */ func Name() {", "#def x():",
		"é def name():", "Kunc x", "/* c */ function name {", "# x def name():", "x */ class Name:", "", " ", "\tdef name():", "ďef", "fUNC Name(")
	rng := rand.New(rand.NewPCG(1, 2))
	filtered, ruledOut := 0, 0
	for lang := range defPatterns {
		for _, p := range defPatternsOf(lang) {
			if p.first == nil {
				continue
			}
			filtered++
			for _, raw := range corpus {
				if raw != "" && p.first[raw[0]] {
					continue
				}
				ruledOut++
				for range 8 {
					b := []byte(raw)
					i := rng.IntN(len(b) + 1)
					for k := i; k < min(len(b), i+rng.IntN(12)); k++ {
						b[k] = ' '
					}
					if m := string(b); p.re.MatchString(m) {
						t.Fatalf("%s %s: %q starts with a byte the filter rules out, but %q matches", lang, p.re, raw, m)
					}
				}
				if p.re.MatchString(raw) {
					t.Fatalf("%s %s: %q ruled out, but it matches", lang, p.re, raw)
				}
			}
		}
	}
	for _, lang := range []string{"go", "python"} {
		n := 0
		for _, p := range defPatternsOf(lang) {
			if p.first != nil {
				n++
			}
		}
		if min := map[string]int{"go": 5, "python": 2}[lang]; n < min {
			t.Errorf("%s: %d patterns with a first-byte filter, want at least %d", lang, n, min)
		}
	}
	if filtered == 0 || ruledOut < 100 {
		t.Fatalf("%d filtered patterns, %d lines ruled out: the check compared too little", filtered, ruledOut)
	}
	for _, re := range []string{`^\s*def`, `^(?:x)?$`, `def`, `^(?i)k`} {
		if f := anchoredFirst(re); f != nil && re != `^(?i)k` {
			t.Errorf("%s: a filter, want none", re)
		} else if re == `^(?i)k` && (f == nil || !f['k'] || !f['K'] || !f[0xE2]) {
			t.Errorf("%s: filter misses k, K or the Kelvin sign's lead byte", re)
		}
	}
}
