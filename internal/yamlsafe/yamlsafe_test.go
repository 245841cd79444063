package yamlsafe

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

type doc struct {
	Name  string   `yaml:"name"`
	List  []string `yaml:"list"`
	Inner struct {
		Deep any `yaml:"deep"`
	} `yaml:"inner"`
}

// aliasBomb is the classic "billion laughs": nine levels of ten aliases to
// the level below, about 500 bytes that expand to 10^9 nodes.
func aliasBomb() string {
	var b strings.Builder
	b.WriteString("x0: &x0 [a, a, a, a, a, a, a, a, a, a]\n")
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&b, "x%d: &x%d [", i, i)
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*x%d", i-1)
		}
		b.WriteString("]\n")
	}
	b.WriteString("list: *x9\n")
	return b.String()
}

func TestDecodeRejects(t *testing.T) {
	deepBlock := ""
	for i := 0; i < 80; i++ {
		deepBlock += strings.Repeat("  ", i) + fmt.Sprintf("k%d:\n", i)
	}
	cases := []struct {
		name, src, want string
		line            int
	}{
		{"alias bomb", aliasBomb(), "expands to more than 100000 nodes", 0},
		{"flow nesting", "name: x\nlist: " + strings.Repeat("[", 100_000), "nesting deeper than the limit of 64 levels", 2},
		{"map nesting", "inner: {deep: " + strings.Repeat("{a: ", 5000), "nesting deeper than the limit of 64 levels", 1},
		{"block nesting", deepBlock, "nesting deeper than the limit of 64 levels", 65},
		{"dash nesting", "list:\n" + strings.Repeat("- ", 200) + "x\n", "nesting deeper", 2},
		{"too big", "name: " + strings.Repeat("a", 2<<20), "over the limit of 1048576 bytes", 0},
		{"NUL", "name: a\x00b\n", "NUL byte", 1},
		{"unknown key", "name: a\nbogus: 1\n", "unknown field", 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var d doc
			err := Decode("cfg.yaml", []byte(tc.src), &d, Config, nil)
			var ye *Error
			if !errors.As(err, &ye) {
				t.Fatalf("err = %v, want *Error", err)
			}
			if !strings.Contains(ye.Msg, tc.want) {
				t.Errorf("msg = %q, want %q", ye.Msg, tc.want)
			}
			if tc.line != 0 && ye.Line != tc.line {
				t.Errorf("line = %d, want %d (%v)", ye.Line, tc.line, err)
			}
			if !strings.HasPrefix(err.Error(), "cfg.yaml") {
				t.Errorf("error does not name the file: %v", err)
			}
			if len(err.Error()) > 600 {
				t.Errorf("error is %d bytes; it must quote at most one clipped line", len(err.Error()))
			}
		})
	}
}

func TestDecodeAccepts(t *testing.T) {
	src := `# a comment with [ and {
name: "a [ b"  # trailing { comment
list: ['it''s', "q\"[", "x]y"]
inner:
  deep:
    - - a
      - b
    - {k: [1, 2, {z: 3}]}
`
	var d doc
	if err := Decode("ok.yaml", []byte(src), &d, Config, nil); err != nil {
		t.Fatal(err)
	}
	if d.Name != "a [ b" || len(d.List) != 3 || d.List[2] != "x]y" || d.List[0] != "it's" {
		t.Errorf("decoded %+v", d)
	}
	// Modest aliases are fine.
	var d2 doc
	if err := Decode("ok.yaml", []byte("x: &a [p, q]\nlist: *a\n"), &d2, Limits{MaxNodes: 100, MaxDepth: 8}, nil); err == nil {
		t.Log("x is unknown, so strict decoding fails as it should")
	}
	if err := Decode("empty.yaml", []byte("  \n# nothing\n"), &d2, Config, nil); err != nil {
		t.Errorf("empty document: %v", err)
	}
}

// The quoted line is the offending one only, clipped and redacted: a
// config that points the parser at a file of secrets cannot print them.
func TestErrorQuotesOneRedactedLine(t *testing.T) {
	src := "name: a\nlist: [unterminated\nSECRET_ONE=hunter2hunter2\nSECRET_TWO=" + strings.Repeat("z", 500) + "\n"
	var d doc
	err := Decode("cfg.yaml", []byte(src), &d, Config, func(s string) string {
		return strings.ReplaceAll(s, "hunter2", "[REDACTED]")
	})
	if err == nil {
		t.Fatal("want an error")
	}
	msg := err.Error()
	if strings.Contains(msg, "hunter2") || strings.Contains(msg, strings.Repeat("z", 200)) {
		t.Errorf("error quotes too much: %s", msg)
	}
	if strings.Count(msg, "\n") > 1 {
		t.Errorf("error quotes more than one line: %s", msg)
	}
	// Control characters in the quoted line are neutralized.
	err = Decode("cfg.yaml", []byte("name: a\nbogus: \"\x1b[31mred\u202e\"\n"), &d, Config, nil)
	if err == nil || strings.ContainsAny(err.Error(), "\x1b\u202e") {
		t.Errorf("control characters reach the message: %q", err)
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{aliasBomb(), "a: [[[[", "name: x\nlist: [a, b]\n", "- - - -", "x: &a {b: *a}", "'unterminated", "k: |\n  text\n   more\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		err := Decode("fuzz.yaml", data, &v, Limits{MaxBytes: 1 << 16, MaxDepth: 32, MaxNodes: 10_000}, nil)
		if err != nil {
			var ye *Error
			if !errors.As(err, &ye) {
				t.Fatalf("error is %T, not *Error: %v", err, err)
			}
		}
	})
}
