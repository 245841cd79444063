package rules

import (
	"regexp"
	"strings"
	"sync"
	"testing"
)

const validRule = `
pack: custom
rules:
  - id: custom.no-sleep
    profile: code_reviewer
    languages: [go]
    category: reliability
    severity: low
    confidence: 0.6
    title: Sleep in code
    message: time.Sleep was added.
    impact: Slows things down.
    suggestion: Use a ticker or context deadline.
    pattern: '\btime\.Sleep\('
    positive:
      - path: a.go
        code: |
          time.Sleep(time.Second)
    negative:
      - path: a.go
        code: |
          // time.Sleep(time.Second)
`

func TestLoadUserPack(t *testing.T) {
	s, err := Load([]byte(validRule))
	if err != nil {
		t.Fatal(err)
	}
	r, ok := s.Rule("custom.no-sleep")
	if !ok || !strings.Contains(r.Pack, "custom") {
		t.Fatalf("rule not loaded: %+v", r)
	}
	f := DiffFile("x.go", nil, []byte("package x\n\nfunc f() {\n\ttime.Sleep(1)\n}\n"))
	hits := s.MatchFile(f, []string{"code_reviewer"})
	found := false
	for _, h := range hits {
		if h.RuleID == "custom.no-sleep" && h.StartLine == 4 {
			found = true
		}
	}
	if !found {
		t.Fatalf("hits = %v", hits)
	}
}

func TestLoadErrors(t *testing.T) {
	cases := []struct {
		name, from, to string
		want           []string
	}{
		{"bad regex", `pattern: '\btime\.Sleep\('`, `pattern: '(unclosed'`, []string{"custom.no-sleep", "field pattern", "invalid regular expression"}},
		{"unknown profile", `profile: code_reviewer`, `profile: style_police`, []string{"custom.no-sleep", "field profile", "style_police"}},
		{"bad severity", `severity: low`, `severity: urgent`, []string{"field severity", "urgent"}},
		{"bad category", `category: reliability`, `category: vibes`, []string{"field category", "vibes"}},
		{"bad confidence", `confidence: 0.6`, `confidence: 1.5`, []string{"field confidence"}},
		{"missing examples", "    negative:\n      - path: a.go\n        code: |\n          // time.Sleep(time.Second)\n", "", []string{"field negative", "at least one negative example"}},
		{"missing title", `title: Sleep in code`, `title: ""`, []string{"field title", "required"}},
		{"unknown language", `languages: [go]`, `languages: [cobol]`, []string{"field languages", "cobol"}},
		{"unknown field", `title: Sleep in code`, "title: Sleep in code\n    colour: red", []string{"colour"}},
		{"bad id", `id: custom.no-sleep`, `id: Custom Rule`, []string{"field id"}},
		{"bad scope", `languages: [go]`, "languages: [go]\n    scope: nowhere", []string{"field scope", "nowhere"}},
		{"unknown check", `languages: [go]`, "languages: [go]\n    check: magic", []string{"field check", "magic"}},
		{"bad glob", `languages: [go]`, "languages: [go]\n    paths: ['{a,b']", []string{"field paths[0]"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := validRule
			if !strings.Contains(src, c.from) {
				t.Fatalf("test setup: %q not in pack", c.from)
			}
			src = strings.Replace(src, c.from, c.to, 1)
			_, err := Load([]byte(src))
			if err == nil {
				t.Fatal("Load succeeded")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if !strings.Contains(err.Error(), "user pack #1") {
				t.Errorf("error %q does not name the pack", err)
			}
		})
	}
}

func TestLoadDuplicateID(t *testing.T) {
	dup := strings.Replace(validRule, "custom.no-sleep", "correctness.conflict-marker", 1)
	_, err := Load([]byte(dup))
	if err == nil || !strings.Contains(err.Error(), "duplicate rule id") || !strings.Contains(err.Error(), "correctness.conflict-marker") {
		t.Fatalf("err = %v", err)
	}
	_, err = Load([]byte(validRule), []byte(validRule))
	if err == nil || !strings.Contains(err.Error(), "user pack #2") {
		t.Fatalf("err = %v", err)
	}
}

func TestLoadInvalidYAML(t *testing.T) {
	_, err := Load([]byte("rules: [\n"))
	if err == nil || !strings.Contains(err.Error(), "user pack #1:1:") || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("err = %v", err)
	}
	_, err = LoadPacks([]string{"mine.yaml"}, [][]byte{[]byte("pack: x\n")})
	if err == nil || !strings.Contains(err.Error(), "mine.yaml") || !strings.Contains(err.Error(), "no rules") {
		t.Fatalf("err = %v", err)
	}
}

func TestDetectLanguage(t *testing.T) {
	cases := map[string]string{
		"main.go": "go", "a/b.py": "python", "x.tsx": "typescript", "x.jsx": "javascript", "Gemfile": "ruby",
		"app/build.gradle": "gradle", "build.gradle.kts": "gradle", "A.kt": "kotlin", "Dockerfile": "dockerfile",
		"docker/api.Dockerfile": "dockerfile", ".github/workflows/ci.yml": "yaml", "AndroidManifest.xml": "xml",
		"Info.plist": "plist", ".env.production": "dotenv", "README.md": "markdown", "x.unknown": "",
	}
	for p, want := range cases {
		if got := DetectLanguage(p, ""); got != want {
			t.Errorf("DetectLanguage(%q) = %q, want %q", p, got, want)
		}
	}
	if got := DetectLanguage("bin/deploy", "#!/usr/bin/env bash"); got != "shell" {
		t.Errorf("shebang: %q", got)
	}
	if got := DetectLanguage("bin/tool", "#!/usr/bin/env python3"); got != "python" {
		t.Errorf("shebang: %q", got)
	}
}

func TestIsTestPath(t *testing.T) {
	yes := []string{"a/b_test.go", "tests/test_x.py", "app/test_views.py", "src/a.test.ts", "src/__tests__/a.js", "spec/models/user_spec.rb", "src/test/java/AppTest.java", "FooTests.swift", "conftest.py"}
	no := []string{"a/b.go", "src/contest.py", "app/testimonials.rb", "src/latest.ts", "attestation/x.go"}
	for _, p := range yes {
		if !IsTestPath(p) {
			t.Errorf("IsTestPath(%q) = false", p)
		}
	}
	for _, p := range no {
		if IsTestPath(p) {
			t.Errorf("IsTestPath(%q) = true", p)
		}
	}
}

func TestMaskLines(t *testing.T) {
	cases := []struct {
		lang string
		in   []string
		want []string
	}{
		{"go", []string{`x := "a // b" // c`, "y := `raw", "still raw` + z"}, []string{`x := "      "     `, "y := `   ", "         ` + z"}},
		{"python", []string{`s = 'it''s'  # note`, `t = """doc`, `more"""`}, []string{`s = '  '' '        `, `t = """   `, `    """`}},
		{"javascript", []string{"a = `x ${b + 'c'} y` /* z */"}, []string{"a = `  ${b + ' '}  `        "}},
		{"ruby", []string{`x = "#{a}" # c`, "q = <<~SQL", "  select 1", "SQL"}, []string{`x = "    "    `, "q = <<~SQL", "          ", "SQL"}},
		{"shell", []string{`echo "$x" # hi`, `echo ${#arr[@]}`}, []string{`echo "  "     `, `echo ${#arr[@]}`}},
		{"xml", []string{"<a/><!-- x", "y --><b/>"}, []string{"<a/>      ", "     <b/>"}},
	}
	for _, c := range cases {
		got := MaskLines(c.lang, c.in)
		for i := range c.want {
			if got[i] != c.want[i] {
				t.Errorf("%s line %d: got %q, want %q", c.lang, i, got[i], c.want[i])
			}
			if len(got[i]) != len(c.in[i]) {
				t.Errorf("%s line %d: length changed", c.lang, i)
			}
		}
	}
}

func TestChangedSymbols(t *testing.T) {
	def := DiffFile("internal/pricing/discount.go", []byte("package pricing\n"), []byte("package pricing\n\nfunc ApplyDiscount(total int) int {\n\treturn total\n}\n\ntype Tier struct{}\n"))
	use := DiffFile("internal/checkout/checkout.go", []byte("package checkout\n\nfunc Total() int {\n\treturn pricing.ApplyDiscount(10) // ApplyDiscount\n}\n"), []byte("package checkout\n\nfunc Total() int {\n\treturn pricing.ApplyDiscount(10) // ApplyDiscount\n}\n\n// ApplyDiscount in a comment does not count\n"))
	syms := ChangedSymbols([]*File{def, use})
	var got *Symbol
	for i := range syms {
		if syms[i].Name == "ApplyDiscount" {
			got = &syms[i]
		}
	}
	if got == nil || got.Kind != "func" || got.Line != 3 || got.Path != "internal/pricing/discount.go" {
		t.Fatalf("symbols = %+v", syms)
	}
	if len(got.UsedIn) != 1 || got.UsedIn[0].Path != "internal/checkout/checkout.go" || got.UsedIn[0].Line != 4 {
		t.Fatalf("uses = %+v", got.UsedIn)
	}
	foundType := false
	for _, s := range syms {
		if s.Name == "Tier" && s.Kind == "type" {
			foundType = true
		}
	}
	if !foundType {
		t.Errorf("type Tier missing: %+v", syms)
	}
}

func TestRemovedAssertionAnchorsOnNewSide(t *testing.T) {
	s := mustBuiltin(t)
	old := "def test_x():\n    y = f()\n    assert y == 1\n    g()\n"
	new := "def test_x():\n    y = f()\n    print(y)\n    g()\n"
	f := DiffFile("tests/test_x.py", []byte(old), []byte(new))
	var h *Hit
	for _, x := range s.MatchFile(f, nil) {
		if x.RuleID == "tests.removed-assertion-python" {
			x := x
			h = &x
		}
	}
	if h == nil || h.StartLine != 3 || h.OldLine != 3 {
		t.Fatalf("hit = %+v", h)
	}
}

func TestCorpusLoader(t *testing.T) {
	_, err := ParseCorpusCase("x", []byte("lang: go\nkind: positive\n-- b/a.go --\npackage a\n"))
	if err == nil || !strings.Contains(err.Error(), "without expect") {
		t.Fatalf("err = %v", err)
	}
	c, err := ParseCorpusCase("x", []byte("lang: go\nkind: positive\nexpect: r.x a.go:2\n-- a/a.go --\npackage a\n-- b/a.go --\npackage a\nvar x = 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	files := c.Changes()
	if len(files) != 1 || files[0].Status != "modified" || len(files[0].Added) != 1 || files[0].Added[0].No != 2 {
		t.Fatalf("files = %+v", files)
	}
	if _, err := ParseCorpusCase("x", []byte("lang: go\nkind: positive\nexpect: r.x a.go:9\n-- b/a.go --\npackage a\n")); err == nil {
		t.Fatal("out-of-range expect accepted")
	}
}

// BenchmarkLoad is the start-up cost of the built-in rule set (a review
// loads it once per process): go test -bench Load ./internal/rules.
func BenchmarkLoad(b *testing.B) {
	for b.Loop() {
		if _, err := Load(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestBuiltinRegexpsCompile: the built-in packs' expressions are compiled
// on first use (lazyRE), so every one of them must compile: loading the
// packs eagerly, as user packs are, compiles them all now.
func TestBuiltinRegexpsCompile(t *testing.T) {
	packs, err := builtinDecoded()
	if err != nil {
		t.Fatal(err)
	}
	s := &Set{byID: map[string]*Rule{}}
	n := 0
	for _, np := range packs {
		if err := s.addPack("builtin:"+np.Name, np.Pack, true); err != nil {
			t.Fatalf("%s: %v", np.Name, err)
		}
		n += len(np.Pack.Rules)
	}
	if n < 100 {
		t.Fatalf("only %d built-in rules", n)
	}
}

// TestLazyRE: compiled on first use, once, from any goroutine; eager
// compiles now and reports a bad expression.
func TestLazyRE(t *testing.T) {
	l, err := newLazyRE(`a(b+)c`, false)
	if err != nil || l.re != nil {
		t.Fatalf("lazy: compiled before use (%v)", err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if !l.MatchString("xabbc") || l.SubexpIndex("x") != -1 {
				t.Error("match")
			}
		})
	}
	wg.Wait()
	if got := l.FindStringSubmatchIndex("abbc"); len(got) != 4 || got[3] != 3 {
		t.Errorf("submatch %v", got)
	}
	for _, src := range []string{`x(?P<secret>y)`, `x(?<secret>y)(z)`, `(a)(?P<secret>b)`, `no group`, `(?P<secretive>x)`, `[<secret>]`} {
		n, err := newLazyRE(src, false)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := n.SubexpIndex("secret"), regexp.MustCompile(src).SubexpIndex("secret"); got != want {
			t.Errorf("%s: SubexpIndex %d, want %d", src, got, want)
		}
	}
	if _, err := newLazyRE(`a(`, true); err == nil {
		t.Error("eager: a bad expression compiled")
	}
	if e, err := newLazyRE(`x`, true); err != nil || e.re == nil {
		t.Errorf("eager: not compiled (%v)", err)
	}
}

// TestIsGeneratedPrefilter: the "generated" prefilter in isGenerated
// never hides a line generatedRe matches.
func TestIsGeneratedPrefilter(t *testing.T) {
	for _, l := range []string{
		"// Code generated by protoc-gen-go. DO NOT EDIT.", "# code GENERATED by x -- do not edit", "/* @generated */",
		"// AUTOGENERATED FILE", "// Auto-Generated by tool", "<!-- auto-generated -->", "// Code Generated ... Do Not Edit",
		"package main", "// generated by hand, edit freely", "", "ĝenerated", "GENERATED_AT = 1",
	} {
		f := &File{Content: []string{l}}
		if got, want := isGenerated(f), generatedRe().MatchString(l); got != want {
			t.Errorf("%q: isGenerated %v, regexp %v", l, got, want)
		}
	}
}

// TestVendoredHints: the literal prefilter of vendoredPath never hides a
// path the regexp matches.
func TestVendoredHints(t *testing.T) {
	for _, p := range []string{"vendor/x.go", "a/node_modules/b.js", "third_party/c.c", "dist/app.js", "x/build/y", "bundle/z",
		"out/o.txt", "app.min.js", "a.bundle.ts", "api.pb.go", "x.gen.go", "y.generated.cs", "m_pb2.py",
		"src/main.go", "vendors.go", "outside/x", "distance.go", "rebuild.sh", "README.md", "a/b/c.min.css"} {
		if got, want := isVendoredPath(p), vendoredPath().MatchString(p); got != want {
			t.Errorf("%s: isVendoredPath %v, regexp %v", p, got, want)
		}
	}
}

// TestGlobLiterals: a glob's literal prefilter never hides a path its
// regexp matches (every built-in glob, paths of every kind).
func TestGlobLiterals(t *testing.T) {
	s, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(s.globs) < 5 {
		t.Fatalf("only %d globs", len(s.globs))
	}
	paths := []string{"main.go", "a/b_test.go", "tests/x.py", "test/y.rb", "spec/z_spec.rb", "src/Test.java", "__tests__/a.js",
		"a.test.ts", "vendor/v.go", "docs/README.md", "Dockerfile", ".github/workflows/ci.yml", "x/conftest.py",
		"migrations/001.sql", "a/B.TEST.JS", "deploy/k8s.yaml", "scripts/run.sh", "pkg/api/handler.go", "web/app.min.js"}
	for i, re := range s.globs {
		for _, p := range paths {
			ff := &fileFacts{path: p, globs: make([]int8, len(s.globs)), set: s}
			if got, want := ff.glob(s.globs, i, re), re.MatchString(p); got != want {
				t.Errorf("glob %s on %s: %v, regexp %v", re.src, p, got, want)
			}
		}
	}
}

// TestPrewarm: the prewarmed set is handed to one LoadNamed without user
// packs, and a discarded one to nobody.
func TestPrewarm(t *testing.T) {
	Prewarm()
	s, err := Load()
	if err != nil || s == nil || len(s.rules) < 100 {
		t.Fatalf("Load after Prewarm: %v", err)
	}
	if takePrewarmed() != nil {
		t.Error("the prewarmed set was not taken by Load")
	}
	Prewarm()
	DiscardPrewarm()
	if takePrewarmed() != nil {
		t.Error("DiscardPrewarm left the set for a later Load")
	}
	s2, err := Load()
	if err != nil || s2 == s || len(s2.rules) != len(s.rules) {
		t.Errorf("Load after DiscardPrewarm: %v, same set %v", err, s2 == s)
	}
}
