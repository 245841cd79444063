package secrets

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	st "github.com/diffpalhq/diffpal/internal/secrets/secretstest"
)

type corpusCase struct {
	name    string
	text    string
	secrets []string
}

var tmpl = regexp.MustCompile(`\{\{(?:([AUHBWLD]):(\d+)|=([^}]*))\}\}`)

var alphabets = map[string]string{
	"A": st.Alnum, "U": st.UpperNum, "H": st.Hex, "B": st.Base64, "W": st.URLSafe, "L": st.Letters, "D": st.Digits,
}

// loadCorpus reads a testdata file of "==== name" cases and expands their
// templates; each expansion is one of the case's secrets.
func loadCorpus(t *testing.T, path string) []corpusCase {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []corpusCase
	var cur *corpusCase
	var body []string
	flush := func() {
		if cur == nil {
			return
		}
		text := strings.Join(body, "\n")
		n := 0
		cur.text = tmpl.ReplaceAllStringFunc(text, func(m string) string {
			sm := tmpl.FindStringSubmatch(m)
			n++
			v := sm[3]
			if sm[1] != "" {
				k, _ := strconv.Atoi(sm[2])
				v = st.Gen(fmt.Sprintf("%s#%d", cur.name, n), alphabets[sm[1]], k)
			}
			cur.secrets = append(cur.secrets, v)
			return v
		})
		out = append(out, *cur)
	}
	for _, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		switch {
		case strings.HasPrefix(l, "==== "):
			flush()
			cur, body = &corpusCase{name: strings.TrimPrefix(l, "==== ")}, nil
		case cur == nil && strings.HasPrefix(l, "#"):
		default:
			body = append(body, l)
		}
	}
	flush()
	return out
}

// survives reports a secret, or a 10-byte window of it, in s.
func survives(s, secret string) string {
	if len(secret) <= 10 {
		if strings.Contains(s, secret) {
			return secret
		}
		return ""
	}
	for i := 0; i+10 <= len(secret); i++ {
		if strings.Contains(s, secret[i:i+10]) {
			return secret[i : i+10]
		}
	}
	return ""
}

func TestPositives(t *testing.T) {
	cases := loadCorpus(t, "testdata/positives.txt")
	if len(cases) < 50 {
		t.Fatalf("only %d positive cases", len(cases))
	}
	n := 0
	for _, c := range cases {
		if len(c.secrets) == 0 {
			// A case of literal text only: it must change.
			if Redact(c.text) == c.text {
				t.Errorf("%s: nothing redacted in %q", c.name, c.text)
			}
			continue
		}
		got := Redact(c.text)
		for _, s := range c.secrets {
			n++
			if w := survives(got, s); w != "" {
				t.Errorf("%s: %q survives in\n%s", c.name, w, got)
			}
		}
		if strings.Count(got, "\n") != strings.Count(c.text, "\n") {
			t.Errorf("%s: line count %d -> %d:\n%s", c.name, strings.Count(c.text, "\n"), strings.Count(got, "\n"), got)
		}
		if again := Redact(got); again != got {
			t.Errorf("%s: not idempotent:\n%s\n%s", c.name, got, again)
		}
	}
	t.Logf("%d positive cases, %d planted secrets", len(cases), n)
}

func TestNegatives(t *testing.T) {
	cases := loadCorpus(t, "testdata/negatives.txt")
	lines := 0
	for _, c := range cases {
		lines += strings.Count(c.text, "\n") + 1
		if got := Redact(c.text); got != c.text {
			t.Errorf("%s: ordinary text redacted:\n%s\n->\n%s", c.name, c.text, got)
		}
		// Line by line too: a snippet or a note is one line.
		if strings.Contains(c.name, "as a block only") {
			continue
		}
		for _, l := range strings.Split(c.text, "\n") {
			if got := Redact(l); got != l {
				t.Errorf("%s: line %q -> %q", c.name, l, got)
			}
		}
	}
	t.Logf("%d negative cases, %d lines", len(cases), lines)
}

func TestKeepsPublicPrefixAndMask(t *testing.T) {
	id := "AKIA" + st.Gen("prefix", st.UpperNum, 16)
	tok := "ghp_" + st.Gen("prefix", st.Alnum, 36)
	for _, c := range []struct {
		r        *Redactor
		in, want string
	}{
		{&Redactor{}, `key = "` + id + `"`, `key = "AKIA[REDACTED]"`},
		{&Redactor{Mask: "****"}, `key = "` + id + `"`, `key = "AKIA****"`},
		{&Redactor{Mask: "****"}, "TOKEN = \"" + tok + "\"", `TOKEN = "ghp_****"`},
		{&Redactor{Mask: "****"}, `DB_PASSWORD = "s3cr3t-Pr0d!"`, `DB_PASSWORD = "****"`},
		{&Redactor{}, "redis://:" + st.Gen("r", st.Alnum, 20) + "@h:6379", "redis://:[REDACTED]@h:6379"},
	} {
		if got := c.r.Redact(c.in); got != c.want {
			t.Errorf("Redact(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if p := PublicPrefix(tok); p != "ghp_" {
		t.Errorf("PublicPrefix = %q", p)
	}
	if p := PublicPrefix("s3cr3t-Pr0d!"); p != "" {
		t.Errorf("PublicPrefix of a password = %q", p)
	}
}

// The password of a URL runs to the last "@" before the host.
func TestURLPasswords(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"mysql://shop:p@ss@w0rd@db:3306/shop", "mysql://shop:[REDACTED]@db:3306/shop"},
		{"redis://:s3cretPass99@cache:6379/0", "redis://:[REDACTED]@cache:6379/0"},
		{"mongodb+srv://u:ab@cd/ef@cluster0.x.net/db", "mongodb+srv://u:[REDACTED]@cluster0.x.net/db"},
		{"https://user:pw12345@host/path/@scope/pkg", "https://user:[REDACTED]@host/path/@scope/pkg"},
		{`"amqp://guest:gu3st!pw@rabbit:5672/"`, `"amqp://guest:[REDACTED]@rabbit:5672/"`},
		{"see http://localhost:8080/a?u=bob@example.com", "see http://localhost:8080/a?u=bob@example.com"},
		{"postgres://app:${PW}@db/app", "postgres://app:${PW}@db/app"},
	} {
		if got := Redact(c.in); got != c.want {
			t.Errorf("Redact(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// Git's hunk header carries a line from above the hunk: a key line, a
// BEGIN line, a CSV row, an assignment.
func TestHunkHeaderContext(t *testing.T) {
	body := st.PEMBody("hdr", "", 4, 64, true)
	pw := "Zq4#Wm8!Rt2Y"
	in := strings.Join([]string{
		"@@ -10,4 +10,4 @@ " + body[0],
		" " + body[1],
		"-" + body[2],
		"+" + body[3],
		"@@ -40,2 +40,2 @@ DB_PASSWORD=" + pw,
		" x = 1",
		`@@ -60,2 +60,3 @@ KEY = """-----BEGIN RSA PRIVATE KEY-----`,
		"     " + body[1],
	}, "\n")
	got := Redact(in)
	for _, s := range append(body, pw, "BEGIN RSA") {
		if strings.Contains(got, s) {
			t.Errorf("%q survives:\n%s", s, got)
		}
	}
	for _, h := range []string{"@@ -10,4 +10,4 @@ ", "@@ -40,2 +40,2 @@ DB_PASSWORD=", "@@ -60,2 +60,3 @@ KEY = \"\"\""} {
		if !strings.Contains(got, h) {
			t.Errorf("hunk header %q damaged:\n%s", h, got)
		}
	}
	// Diff markers stay, so line numbering still works.
	if !strings.Contains(got, "\n-"+Mask+"\n+"+Mask+"\n") {
		t.Errorf("diff markers lost:\n%s", got)
	}
}

func TestLearnRedactsWithoutContext(t *testing.T) {
	pw := "dbIRb#407!fvA4Sd"
	secret := st.Gen("learn", st.Base64, 40)
	file := "User name,Password,Access key ID,Secret access key\ndeploy," + pw + ",AKIA" + st.Gen("learnid", st.UpperNum, 16) + "," + secret + "\n"
	row := "deploy," + pw + ",x"
	if got := Redact(row); !strings.Contains(got, pw) {
		t.Fatalf("a headerless row has no context, yet %q -> %q", row, got)
	}
	r := Learn(file)
	if r.Known() < 2 {
		t.Fatalf("learned %d secrets", r.Known())
	}
	for _, s := range []string{row, "the model says " + secret + " is live", secret, secret + secret, "x" + pw + pw, "tail " + pw} {
		got := r.Redact(s)
		if strings.Contains(got, pw) || strings.Contains(got, secret) {
			t.Errorf("learned redactor kept a secret: %q", got)
		}
	}
	if got := r.Redact("nothing to see"); got != "nothing to see" {
		t.Errorf("%q", got)
	}
}

func TestRedactAll(t *testing.T) {
	tok := "ghp_" + st.Gen("walk", st.Alnum, 36)
	type inner struct {
		Note  string
		notes string
	}
	type outer struct {
		Title string
		List  []string
		Map   map[string]string
		Ptr   *inner
		Any   any
		Items []inner
		Bytes []byte
		Kind  myString
	}
	v := &outer{
		Title: "leaks " + tok, List: []string{"a", "token=" + tok}, Map: map[string]string{"k": tok},
		Ptr: &inner{Note: tok, notes: tok}, Any: inner{Note: tok}, Items: []inner{{Note: tok}}, Bytes: []byte(tok), Kind: myString(tok),
	}
	RedactAll(v)
	for name, s := range map[string]string{"Title": v.Title, "List": v.List[1], "Map": v.Map["k"], "Ptr": v.Ptr.Note,
		"Any": v.Any.(inner).Note, "Items": v.Items[0].Note, "Kind": string(v.Kind)} {
		if strings.Contains(s, tok) {
			t.Errorf("%s kept the token: %q", name, s)
		}
	}
	if v.Ptr.notes != tok || string(v.Bytes) != tok || v.List[0] != "a" {
		t.Error("unexported fields, byte slices and clean strings must stay")
	}
}

type myString string

// The redactor must not slow a large review down: it runs over every
// evidence item. This is a benchmark, not a timed test.
func BenchmarkRedactCode(b *testing.B) {
	var sb strings.Builder
	for i := range 20000 {
		fmt.Fprintf(&sb, "+\tresult, err := client.Fetch(ctx, key%d, token.Value) // see https://example.com/api/v%d\n", i, i%3)
		fmt.Fprintf(&sb, "+\tcfg := map[string]any{\"name\": \"svc-%d\", \"retries\": %d, \"password\": os.Getenv(\"PW\")}\n", i, i%7)
	}
	text := sb.String()
	r := Learn(text)
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for range b.N {
		r.Redact(text)
	}
}

// BenchmarkRedactSource runs over this repository's own Go source.
func BenchmarkRedactSource(b *testing.B) {
	var sb strings.Builder
	for _, dir := range []string{"..", "../rules", "../review", "../provider/llm", "../qa", "../cli"} {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".go") {
				data, _ := os.ReadFile(dir + "/" + e.Name())
				sb.Write(data)
			}
		}
	}
	text := sb.String()
	b.SetBytes(int64(len(text)))
	for range b.N {
		Redact(text)
	}
}

func TestHasLongRun(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want bool
	}{
		{"", 3, false}, {"abc", 3, true}, {"ab c", 3, false}, {"x abcd", 4, true}, {"abcd x", 4, true},
		{"a b c d e f", 2, false}, {"..abcdefgh..", 8, true}, {"..abcdefg..", 8, false}, {"ab+/cd", 6, true},
	} {
		if got := hasLongRun(c.s, c.n); got != c.want {
			t.Errorf("hasLongRun(%q, %d) = %v", c.s, c.n, got)
		}
	}
}

// TestFormatsCompile: the formats' regexps, compiled on first use, all
// compile (they used to be compiled, and so checked, at init).
func TestFormatsCompile(t *testing.T) {
	for _, f := range formats {
		if _, err := regexp.Compile(f.expr); err != nil {
			t.Errorf("format %s: %v", f.id, err)
		}
		if f.regexp() == nil || f.regexp() != f.regexp() {
			t.Errorf("format %s: no compiled regexp", f.id)
		}
	}
}

// TestKeywordFiltersExact: the keyword scans' shortcuts skip a position
// only where none of the keywords can start: every format keyword's
// group knows its third byte (or that it has two), and every
// secret-like name keyword is in the group its first two bytes select,
// in either case.
func TestKeywordFiltersExact(t *testing.T) {
	n := 0
	for _, f := range formats {
		for _, kw := range f.keywords {
			g := kwIndex[uint16(kw[0])<<8|uint16(kw[1])]
			if g == 0 {
				t.Fatalf("format %s: keyword %q has no group", f.id, kw)
			}
			if len(kw) == 2 && !kwThird[g].pair {
				t.Errorf("format %s: two-byte keyword %q, group not marked", f.id, kw)
			}
			if len(kw) > 2 && kwThird[g].set[kw[2]>>6]&(1<<(kw[2]&63)) == 0 {
				t.Errorf("format %s: keyword %q: third byte not in its group", f.id, kw)
			}
			n++
		}
	}
	for _, kw := range nameKeywords {
		for _, a := range []byte{kw[0], kw[0] - 32} {
			for _, b := range []byte{kw[1], kw[1] - 32} {
				g := nameKwAt[uint16(a)<<8|uint16(b)]
				if g == 0 || !slices.Contains(nameKwGroups[g], kw) {
					t.Errorf("name keyword %q not in the group of %q", kw, string([]byte{a, b}))
				}
			}
		}
		n++
	}
	if n < 20 {
		t.Fatalf("only %d keywords checked", n)
	}
}
