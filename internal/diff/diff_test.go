package diff

import (
	"strconv"
	"strings"
	"testing"
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
