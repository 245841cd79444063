package diff

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/quick"
)

const sample = `diff --git a/x.go b/x.go
index 1111111111111111111111111111111111111111..2222222222222222222222222222222222222222 100644
--- a/x.go
+++ b/x.go
@@ -1,4 +1,5 @@ func main() {
 a
-b
+B
+C
 c
 d
@@ -10,0 +12,2 @@
+late1
+late2
diff --git "a/sp ace\t.go" "b/sp ace\t.go"
new file mode 100644
index 0000000000000000000000000000000000000000..3333333333333333333333333333333333333333
--- /dev/null
+++ "b/sp ace\t.go"
@@ -0,0 +1 @@
+new
\ No newline at end of file
diff --git a/with space.txt b/with space.txt
deleted file mode 100644
index 4444444444444444444444444444444444444444..0000000000000000000000000000000000000000
--- a/with space.txt	
+++ /dev/null
@@ -1 +0,0 @@
-old
`

func TestParseSample(t *testing.T) {
	files, err := Parse([]byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 3 {
		t.Fatalf("files = %d", len(files))
	}
	x := files[0]
	if x.Path() != "x.go" || len(x.Hunks) != 2 || x.Hunks[0].Section != "func main() {" {
		t.Errorf("x.go: %+v", x)
	}
	var nos []int
	for _, l := range x.Added() {
		nos = append(nos, l.NewNo)
	}
	if got := fmtInts(nos); got != "2,3,12,13" {
		t.Errorf("added line numbers = %s", got)
	}
	if r := x.Removed(); len(r) != 1 || r[0].OldNo != 2 || r[0].Text != "b" {
		t.Errorf("removed: %+v", r)
	}
	if got := x.Spans(FilterAdded); len(got) != 2 || got[0] != (Span{2, 3}) || got[1] != (Span{12, 13}) {
		t.Errorf("added spans = %v", got)
	}
	if got := x.Spans(FilterDiffContext); len(got) != 2 || got[0] != (Span{1, 5}) {
		t.Errorf("context spans = %v", got)
	}
	if x.Spans(FilterFile) != nil {
		t.Error("file mode allows every line")
	}
	n := files[1]
	if n.Path() != "sp ace\t.go" || n.Status != Added || !n.Added()[0].NoEOL {
		t.Errorf("quoted new file: %+v", n)
	}
	d := files[2]
	if d.Path() != "with space.txt" || d.Status != Deleted || d.NewBlob != "" {
		t.Errorf("deleted with trailing tab: %+v", d)
	}
}

func fmtInts(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.Itoa(x)
	}
	return strings.Join(parts, ",")
}

func TestClip(t *testing.T) {
	spans := []Span{{2, 3}, {12, 13}}
	cases := []struct {
		s, e, ws, we int
		ok           bool
	}{
		{1, 1, 0, 0, false}, {1, 2, 2, 2, true}, {3, 11, 3, 3, true}, {5, 20, 12, 13, true}, {14, 20, 0, 0, false},
	}
	for _, c := range cases {
		s, e, ok := Clip(spans, c.s, c.e)
		if ok != c.ok || (ok && (s != c.ws || e != c.we)) {
			t.Errorf("Clip(%d,%d) = %d,%d,%v", c.s, c.e, s, e, ok)
		}
	}
	if s, e, ok := Clip(nil, 7, 9); !ok || s != 7 || e != 9 {
		t.Error("nil spans allow everything")
	}
	if ValidFilter("added") != nil || ValidFilter("bogus") == nil {
		t.Error("ValidFilter")
	}
}

func TestParseErrors(t *testing.T) {
	for _, in := range []string{
		"diff --git a/x b/x\n@@ -1,2 +1,2 @@\n a\n",     // truncated hunk
		"diff --git a/x b/x\n@@ nonsense\n",             // bad header
		"diff --git a/x b/x\n@@ -1 +1 @@\n?odd\n",       // bad line
		"diff --git x y\n",                              // no prefixes
		"diff --git a/x b/x\n@@ -1 +1 @@\n+a\n+b\n-c\n", // too many lines
	} {
		if _, err := Parse([]byte(in)); err == nil {
			t.Errorf("Parse(%q) succeeded", in)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(sample))
	f.Add([]byte("diff --git \"a/\\303\\274\" \"b/\\303\\274\"\nBinary files a/x and b/x differ\n"))
	golden, _ := filepath.Glob("testdata/golden/*.diff")
	for _, g := range golden {
		if data, err := os.ReadFile(g); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		files, err := Parse(data)
		if err != nil {
			return
		}
		for _, fl := range files {
			for _, sp := range fl.Spans(FilterDiffContext) {
				if sp.End < sp.Start {
					t.Fatalf("bad span %v", sp)
				}
			}
		}
	})
}

// TestCUnquote pins git's C quoting, decoded byte for byte: raw bytes that
// are not valid UTF-8 (core.quotePath=false leaves them unescaped) stay as
// they are instead of becoming U+FFFD, as they did with strconv.Unquote.
func TestCUnquote(t *testing.T) {
	for in, want := range map[string]string{
		`"a/plain"`:                 "a/plain",
		`"a/tab\there"`:             "a/tab\there",
		`"a/\a\b\t\n\v\f\r\"\\"`:    "a/\a\b\t\n\v\f\r\"\\",
		`"a/caf\303\251"`:           "a/caf\u00e9",
		`"a/caf\351"`:               "a/caf\xe9",
		"\"a/caf\xe9\\ttab\"":       "a/caf\xe9\ttab",
		"\"a/caf\u00e9\\ttab\"":     "a/caf\u00e9\ttab",
		"\"a/\xef\xbf\xbd\\ttab\"":  "a/\uFFFD\ttab",
		`"a/\000\377"`:              "a/\x00\xff",
		`"a/sp ace"`:                "a/sp ace",
		`"a/x\"y" "b/x\"y"`:         "a/x\"y",
		`"a/trailing\\" "b/z"`:      "a/trailing\\",
		`"a/no \"b/\" here" b/rest`: "a/no \"b/\" here",
	} {
		got, _, err := cUnquote(in)
		if err != nil || got != want {
			t.Errorf("cUnquote(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{`"a/open`, `"a/\`, `"a/\x41"`, `"a/\u00e9"`, `"a/\4xx"`, `"a/\12"`, `"a/\'"`, `a/bare`} {
		if got, _, err := cUnquote(in); err == nil {
			t.Errorf("cUnquote(%q) = %q, want an error", in, got)
		}
	}
}

// TestQuotedInvalidUTF8PathsStayDistinct: a Latin-1 name that git must
// quote (it has a tab) and the name with U+FFFD in its place are two files,
// and parse as two paths.
func TestQuotedInvalidUTF8PathsStayDistinct(t *testing.T) {
	in := "diff --git \"a/caf\xe9\\tx\" \"b/caf\xe9\\tx\"\n" +
		"deleted file mode 100644\n" +
		"index 1111111111111111111111111111111111111111..0000000000000000000000000000000000000000\n" +
		"--- \"a/caf\xe9\\tx\"\n" +
		"+++ /dev/null\n" +
		"@@ -1 +0,0 @@\n" +
		"-old\n" +
		"diff --git a/plain \"b/caf\uFFFD\\tx\"\n" +
		"similarity index 100%\n" +
		"rename from plain\n" +
		"rename to \"caf\uFFFD\\tx\"\n"
	files, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || files[0].Path() != "caf\xe9\tx" || files[1].Path() != "caf\uFFFD\tx" || files[1].OldPath != "plain" {
		for _, f := range files {
			t.Logf("%q (old %q)", f.Path(), f.OldPath)
		}
		t.Fatal("quoted paths with invalid UTF-8 were not kept byte for byte")
	}
}

// quoteC is git's quote_c_style: the name in double quotes when any byte
// needs quoting (with quotePath, every byte >= 0x80 does), else as is.
func quoteC(name string, quotePath bool) string {
	must := false
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '"' || c == '\\':
			must = true
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c == 0x7f || (quotePath && c >= 0x80):
			must = true
			if e := strings.IndexByte("\a\b\t\n\v\f\r", c); e >= 0 {
				b.WriteByte('\\')
				b.WriteByte("abtnvfr"[e])
			} else {
				b.WriteString("\\" + strconv.FormatInt(int64(c)>>6, 8) + strconv.FormatInt(int64(c)>>3&7, 8) + strconv.FormatInt(int64(c)&7, 8))
			}
		default:
			b.WriteByte(c)
		}
	}
	if !must {
		return name
	}
	b.WriteByte('"')
	return b.String()
}

// TestUnquoteInvertsGitQuoting: any byte string, quoted as git quotes it
// with either core.quotePath, decodes to itself.
func TestUnquoteInvertsGitQuoting(t *testing.T) {
	check := func(raw []byte, quotePath bool) bool {
		name := string(raw)
		got, err := unquote(quoteC(name, quotePath))
		if got != name || err != nil {
			t.Logf("%q (quotePath %v) -> %q -> %q, %v", name, quotePath, quoteC(name, quotePath), got, err)
			return false
		}
		return true
	}
	for _, name := range []string{"caf\xe9\tx", "\x00\x7f\xff", `"\`, "\a\b\t\n\v\f\r", "日本"} {
		for _, qp := range []bool{false, true} {
			check([]byte(name), qp)
		}
	}
	if err := quick.Check(check, &quick.Config{MaxCount: 2000}); err != nil {
		t.Error(err)
	}
}
