package rules

import (
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

func TestChangedSignatureOldArityCallIsMediumNotBlocking(t *testing.T) {
	def := DiffFile("internal/pricing/discount.go",
		[]byte("package pricing\n\nfunc Discount(total int) int {\n\treturn total\n}\n"),
		[]byte("package pricing\n\nfunc Discount(total int, code string) int {\n\treturn total\n}\n"))
	use := DiffFile("internal/checkout/checkout.go",
		[]byte("package checkout\n\nfunc Total(items []int) int {\n\treturn pricing.Discount(sum(items))\n}\n"),
		[]byte("package checkout\n\n// Total sums.\nfunc Total(items []int) int {\n\treturn pricing.Discount(sum(items))\n}\n"))
	hits := signatureHits(t, def, use)
	if len(hits) != 1 || hits[0].Severity != "medium" || !strings.Contains(hits[0].Anchor, "internal/checkout/checkout.go:5") || !strings.Contains(hits[0].Anchor, "1 argument") {
		t.Fatalf("hits = %+v", hits)
	}
}

func TestChangedSignatureWithoutOldArityCallIsLow(t *testing.T) {
	def := DiffFile("app/names.py",
		[]byte("def greet(user):\n    return user.name\n"),
		[]byte("def greet(user, greeting='hi'):\n    return greeting + user.name\n"))
	// greet(user) is still valid against the new signature: advisory only
	use := DiffFile("app/views.py",
		[]byte("def show(user):\n    return greet(user)\n"),
		[]byte("def show(user):\n    # greet the user\n    return greet(user)\n"))
	hits := signatureHits(t, def, use)
	if len(hits) != 1 || hits[0].Severity != "low" {
		t.Fatalf("hits = %+v", hits)
	}
	for _, r := range mustBuiltin(t).Rules() {
		if r.ID == "explorer.changed-signature-used" && r.Severity != "low" {
			t.Fatalf("rule severity %q, want low (advisory)", r.Severity)
		}
	}
}

func TestChangedSignatureIgnoresPackageClausesLocalsAndOtherLanguages(t *testing.T) {
	def := DiffFile("internal/store/store.go",
		[]byte("package store\n\nfunc store(key string) error {\n\treturn nil\n}\n"),
		[]byte("package store\n\nfunc store(key string, v []byte) error {\n\treturn nil\n}\n"))
	other := DiffFile("internal/store/cache.go",
		[]byte("package store\n\nfunc get() {\n\tstore := newMap()\n\t_ = store\n}\n"),
		[]byte("package store\n\n// get reads.\nfunc get() {\n\tstore := newMap()\n\t_ = store\n}\n"))
	doc := DiffFile("CHANGES.rst", []byte("Changes\n=======\n* store(key) now stores\n"), []byte("Changes\n=======\n* store(key) now stores\n* more\n"))
	py := DiffFile("tools/store.py", []byte("def run():\n    store(1)\n"), []byte("def run():\n    # x\n    store(1)\n"))
	if hits := signatureHits(t, def, other, doc, py); len(hits) != 0 {
		t.Fatalf("hits = %+v", hits)
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
