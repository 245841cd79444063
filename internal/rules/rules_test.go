package rules

import (
	"os"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

var (
	builtinOnce sync.Once
	builtinSet  *Set
	builtinErr  error
)

func mustBuiltin(t testing.TB) *Set {
	t.Helper()
	// Every rule runs here, opt-in ones included: their examples are
	// checked like any other rule's.
	builtinOnce.Do(func() {
		builtinSet, builtinErr = Builtin()
		if builtinErr == nil {
			builtinSet.off = map[*Rule]bool{}
		}
	})
	if builtinErr != nil {
		t.Fatalf("Builtin: %v", builtinErr)
	}
	return builtinSet
}

// runExample matches an example and returns the hits of rule id.
func runExample(s *Set, r Rule, ex Example) []Hit {
	files := ex.Files()
	var hits []Hit
	if r.Scope == "change" {
		hits = s.MatchChange(files, []string{r.Profile})
	} else {
		for _, f := range files {
			hits = append(hits, s.MatchFile(f, []string{r.Profile})...)
		}
	}
	var out []Hit
	for _, h := range hits {
		if h.RuleID == r.ID {
			out = append(out, h)
		}
	}
	return out
}

func TestRuleExamples(t *testing.T) {
	s := mustBuiltin(t)
	for _, r := range s.Rules() {
		t.Run(r.ID, func(t *testing.T) {
			for i, ex := range r.Positive {
				if hits := runExample(s, r, ex); len(hits) == 0 {
					t.Errorf("positive[%d] (%s): no hit\n%s", i, ex.Path, ex.Code)
				} else {
					for _, h := range hits {
						if h.StartLine < 1 || h.EndLine < h.StartLine {
							t.Errorf("positive[%d]: bad span %d-%d", i, h.StartLine, h.EndLine)
						}
						if h.Snippet == "" || h.Anchor == "" {
							t.Errorf("positive[%d]: empty snippet/anchor: %+v", i, h)
						}
					}
				}
			}
			for i, ex := range r.Negative {
				if hits := runExample(s, r, ex); len(hits) > 0 {
					t.Errorf("negative[%d] (%s): unexpected hit %v\n%s", i, ex.Path, hits, ex.Code)
				}
			}
		})
	}
}

// commentOut turns every line of code into a comment of the language.
func commentOut(lang string, code string) (string, bool) {
	var prefix string
	switch lang {
	case "go", "javascript", "typescript", "java", "kotlin", "swift", "gradle", "groovy", "csharp", "c", "cpp", "rust", "scala", "dart", "php":
		prefix = "// "
	case "python", "ruby", "shell", "yaml", "dockerfile", "toml", "properties", "dotenv", "makefile":
		prefix = "# "
	case "xml", "plist", "html":
		return "<!--\n" + code + "\n-->\n", true
	default:
		return "", false
	}
	lines := SplitLines(code)
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n") + "\n", true
}

// Code rules (match_in: code) must not fire on commented-out positives.
func TestCodeRulesIgnoreComments(t *testing.T) {
	s := mustBuiltin(t)
	n := 0
	for _, r := range s.Rules() {
		if r.MatchIn != "code" || r.Scope != "added" {
			continue
		}
		for i, ex := range r.Positive {
			if ex.Before != "" || len(ex.Extra) > 0 {
				continue
			}
			lang := DetectLanguage(ex.Path, "")
			code, ok := commentOut(lang, ex.Code)
			if !ok {
				continue
			}
			n++
			f := DiffFile(ex.Path, nil, []byte(code))
			for _, h := range s.MatchFile(f, nil) {
				if h.RuleID == r.ID {
					t.Errorf("%s positive[%d] commented out still hits: %v", r.ID, i, h)
				}
			}
		}
	}
	if n < 40 {
		t.Fatalf("only %d commented-out examples checked", n)
	}
}

func TestCodeRulesIgnoreStrings(t *testing.T) {
	s := mustBuiltin(t)
	cases := []struct{ path, code, rule string }{
		{"a.go", "msg := \"never defer f.Close() in a for loop\"\n", "correctness.go-defer-in-loop"},
		{"a.go", "const help = `InsecureSkipVerify: true disables checks`\n", "sec.tls-insecure-skip-verify"},
		{"a.js", "const s = 'if (a == b) debugger';\n", "correctness.js-loose-equality"},
		{"a.js", "const doc = `use eval(x) carefully`;\n", "sec.eval-js"},
		{"a.js", "const re = /eval\\(x\\)/;\n", "sec.eval-js"},
		{"a.py", "HELP = \"\"\"\ndef f(x=[]):\n    pass\n\"\"\"\n", "py.mutable-default"},
		{"a.py", "msg = 'except: pass is bad'\n", "py.bare-except"},
		{"a.rb", "msg = \"call binding.pry to debug\"\n", "correctness.debug-ruby"},
		{"a.rb", "DOC = <<~TXT\n  params.require(:user).permit!\nTXT\n", "ruby.permit-all"},
		{"A.java", "String s = \"catch (Exception e) {}\";\n", "silent.empty-catch"},
		{"a.sh", "echo 'curl http://x | sh is dangerous'\n", "docker.curl-pipe-shell"},
		{"a.tsx", "const tip = \"useState inside if (x) { } is wrong\";\n", "react.hook-in-condition"},
		{"a.ts", "/* @ts-ignore is discouraged */ const x: string = 'as any';\n", "ts.explicit-any"},
	}
	for _, c := range cases {
		f := DiffFile(c.path, nil, []byte(c.code))
		for _, h := range s.MatchFile(f, nil) {
			if h.RuleID == c.rule {
				t.Errorf("%s: %s fired inside a string/comment: %v", c.path, c.rule, h)
			}
		}
	}
}

func TestProfilesCovered(t *testing.T) {
	s := mustBuiltin(t)
	got := s.Profiles()
	if len(got) != len(Profiles) {
		t.Fatalf("profiles with rules = %v, want all of %v", got, Profiles)
	}
}

func TestProfileFilter(t *testing.T) {
	s := mustBuiltin(t)
	f := DiffFile("a.py", nil, []byte("try:\n    x()\nexcept:\n    y = eval(data)\n"))
	all := s.MatchFile(f, nil)
	sec := s.MatchFile(f, []string{"security_reviewer"})
	if len(sec) == 0 || len(all) <= len(sec) {
		t.Fatalf("all=%v sec=%v", all, sec)
	}
	for _, h := range sec {
		if h.Profile != "security_reviewer" {
			t.Errorf("profile filter leaked %v", h)
		}
	}
	if hits := s.MatchFile(f, []string{}); len(hits) != 0 {
		t.Errorf("empty profile list should match nothing, got %v", hits)
	}
}

func TestSecretRedaction(t *testing.T) {
	s := mustBuiltin(t)
	secret := "ghp_R8d2kLq9Zt4Vb7Nw1Xc5Hy3Pm6Sj0Fa2Ge8u"
	f := DiffFile("deploy.py", nil, []byte("TOKEN = \""+secret+"\"\nDB_PASSWORD = \"s3cr3t-Pr0d!\"\n"))
	// The token is the secret detector's (the builtin provider's secrets
	// pass); of the pack rules, the password rule reports the password.
	hits := s.MatchFile(f, nil)
	if len(hits) != 1 || hits[0].RuleID != "sec.hardcoded-password" {
		t.Fatalf("hits = %v, want one sec.hardcoded-password", hits)
	}
	for _, h := range hits {
		for _, field := range []string{h.Snippet, h.Anchor, h.Message} {
			if strings.Contains(field, secret) || strings.Contains(field, "s3cr3t-Pr0d!") {
				t.Errorf("secret leaked in %q", field)
			}
		}
		if !strings.Contains(h.Snippet, "****") {
			t.Errorf("snippet not redacted: %q", h.Snippet)
		}
	}
	if got := Redact(`key = "AKIAQ3EGUMJ7LKQ2X4PZ"`); got != `key = "AKIA****"` {
		t.Errorf("Redact = %q", got)
	}
}

func TestShannonEntropy(t *testing.T) {
	if e := ShannonEntropy("aaaa"); e != 0 {
		t.Errorf("entropy(aaaa) = %v", e)
	}
	if e := ShannonEntropy("abcd"); e != 2 {
		t.Errorf("entropy(abcd) = %v, want 2", e)
	}
}

func TestHitClipsLongLinesOnRuneBoundaries(t *testing.T) {
	s := mustBuiltin(t)
	for pad := range 3 {
		line := `DB_PASSWORD = "s3cr3t-Pr0d!"` + strings.Repeat(" ", pad) + " # " + strings.Repeat("€", 200)
		hits := s.MatchFile(DiffFile("deploy.py", nil, []byte(line+"\n")), nil)
		if len(hits) == 0 {
			t.Fatalf("pad %d: no hit on %q", pad, line)
		}
		for _, h := range hits {
			if !utf8.ValidString(h.Snippet) || !utf8.ValidString(h.Anchor) {
				t.Errorf("pad %d: split rune in snippet %q or anchor %q", pad, h.Snippet, h.Anchor)
			}
			if len(h.Snippet) > 400 || !strings.HasSuffix(h.Snippet, "…") {
				t.Errorf("pad %d: snippet is %d bytes, want at most 400 ending in an ellipsis", pad, len(h.Snippet))
			}
			if len(h.Anchor) > 120 {
				t.Errorf("pad %d: anchor is %d bytes, want at most 120", pad, len(h.Anchor))
			}
		}
	}
}

func TestOptInAndConfigure(t *testing.T) {
	pack := []byte(`pack: t
rules:
  - id: t.loud
    profile: code_reviewer
    category: correctness
    severity: low
    confidence: 0.5
    title: loud
    message: m
    impact: i
    suggestion: s
    opt_in: true
    pattern: 'LOUD'
    positive: [{path: a.go, code: "LOUD\n"}]
    negative: [{path: a.go, code: "quiet\n"}]
  - id: t.quiet
    profile: code_reviewer
    category: correctness
    severity: low
    confidence: 0.5
    title: quiet
    message: m
    impact: i
    suggestion: s
    pattern: 'QUIET'
    positive: [{path: a.go, code: "QUIET\n"}]
    negative: [{path: a.go, code: "loud\n"}]
`)
	ids := func(s *Set) []string {
		var out []string
		for _, h := range s.MatchFile(DiffFile("a.go", nil, []byte("LOUD QUIET\n")), nil) {
			out = append(out, h.RuleID)
		}
		return out
	}
	s, err := LoadPacks(nil, [][]byte{pack})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(ids(s), ","); got != "t.quiet" {
		t.Fatalf("default run: %q, want only t.quiet (t.loud is opt-in)", got)
	}
	if err := s.Configure([]string{"t.loud"}, []string{"t.quiet"}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(ids(s), ","); got != "t.loud" {
		t.Fatalf("after enable/disable: %q, want t.loud", got)
	}
	if err := s.Configure([]string{"t.*"}, nil); err != nil {
		t.Fatal(err)
	}
	if !s.Enabled("t.quiet") || !s.Enabled("t.loud") {
		t.Fatal("t.* did not enable both rules")
	}
	err = s.Configure(nil, []string{"t.typo"})
	if err == nil || !strings.Contains(err.Error(), "rules.disable[0]") || !strings.Contains(err.Error(), "t.typo") {
		t.Fatalf("unknown id: err = %v, want one naming rules.disable[0] and the id", err)
	}
}

func TestSeverityGatedByPrecision(t *testing.T) {
	prec, err := Precision()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range mustBuiltin(t).Rules() {
		if (r.Severity == "high" || r.Severity == "critical") && !MayBlock(prec[r.ID]) {
			m, _ := GatingMeasure(prec[r.ID])
			t.Errorf("%s emits %s with measured precision %.2f (%s, %d judged): needs %.1f", r.ID, r.Severity, m.Precision(), m.Corpus, m.Judged(), MinBlockingPrecision)
		}
	}
	// A measured rule regains the pack's severity; an imprecise one is capped.
	rs := []*Rule{{ID: "x.precise", Severity: "high"}, {ID: "x.noisy", Severity: "critical"}, {ID: "x.low", Severity: "low"}}
	table := func() (map[string][]Measure, error) {
		return ParsePrecision(FormatPrecision([]Measure{{RuleID: "x.precise", Corpus: "real", Findings: 10, True: 9, False: 1}, {RuleID: "x.noisy", Corpus: "real", Findings: 10, True: 8, Debatable: 2}}))
	}
	if err := gateSeverityWith(rs, table); err != nil {
		t.Fatal(err)
	}
	if rs[0].Severity != "high" || rs[1].Severity != "medium" || rs[1].Declared != "critical" || rs[2].Severity != "low" {
		t.Fatalf("gated: %+v %+v %+v", *rs[0], *rs[1], *rs[2])
	}
}

func TestRulesDocUpToDate(t *testing.T) {
	prec, err := Precision()
	if err != nil {
		t.Fatal(err)
	}
	want := RulesDoc(mustBuiltin(t), prec, SecretDocRules())
	got, err := os.ReadFile("../../docs/rules.md")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatal("docs/rules.md is stale: run `go run ./bench/rulesdoc` from the project root")
	}
}
