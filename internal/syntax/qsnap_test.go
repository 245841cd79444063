package syntax

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// Queries of every feature the compiled form holds: fields, captures,
// predicates (strings and regexps), alternations, quantifiers, negated
// fields, anchors and wildcards.
var roundTripQueries = map[string][]string{
	"go": {
		`(call_expression function: (selector_expression operand: (identifier) @p field: (field_identifier) @f) (#eq? @p "exec") (#match? @f "^Command")) @m`,
		`(keyed_element (literal_element (identifier) @k) (literal_element (true)) (#eq? @k "InsecureSkipVerify")) @match`,
		`[(interpreted_string_literal) (raw_string_literal)] @s`,
		`(function_declaration name: (identifier) @n !type_parameters body: (block . (_) @first))`,
	},
	"typescript": {
		`(call_expression function: (identifier) @f arguments: (arguments (_)* @a) (#match? @f "^(eval|Function)$")) @m`,
		`(assignment_expression left: (member_expression property: (property_identifier) @p) right: (_) @r (#eq? @p "innerHTML")) @m`,
	},
	"python": {
		`(call function: (attribute object: (identifier) @o attribute: (identifier) @a) arguments: (argument_list (keyword_argument name: (identifier) @k value: (true))+)) @m`,
		`(string) @s (comment) @c`,
	},
}

var roundTripSources = map[string]string{
	"go": `package p

import ("crypto/tls"; "os/exec")

func f[T any](x T) { a := 1; _ = a }

func g() {
	_ = &tls.Config{InsecureSkipVerify: true}
	exec.CommandContext(ctx, "sh", "-c", s)
	_ = ` + "`raw`" + ` + "interp"
}
`,
	"typescript": `const x = eval(input, 2);
el.innerHTML = location.hash;
new Function("a", body);
`,
	"python": `# comment
requests.get(url, verify=True, stream=True)
s = "text"
`,
}

func matchesText(t *testing.T, tr *Tree, q *Query) string {
	t.Helper()
	var b strings.Builder
	for _, m := range tr.Matches(q, 0, 0) {
		fmt.Fprintf(&b, "pattern %d:", m.Pattern)
		for _, c := range m.Captures {
			fmt.Fprintf(&b, " %s=[%d,%d)%q", c.Name, c.Node.StartByte(), c.Node.EndByte(), c.Node.Text())
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// TestQueryRoundTrip: a query written to a snapshot and read back is the
// compiled query: its serialization is the same bytes, and it matches the
// same nodes with the same captures.
func TestQueryRoundTrip(t *testing.T) {
	data, err := QuerySnapshot(roundTripQueries)
	if err != nil {
		t.Fatal(err)
	}
	for g, srcs := range roundTripQueries {
		tr, err := Parse(context.Background(), g, []byte(roundTripSources[g]))
		if err != nil {
			t.Fatal(err)
		}
		for _, src := range srcs {
			compiled, err := CompileQuery(g, src)
			if err != nil {
				t.Fatalf("%s %s: %v", g, src, err)
			}
			loaded, err := QueryFromSnapshot(data, g, src)
			if err != nil {
				t.Fatalf("%s %s: %v", g, src, err)
			}
			if !bytes.Equal(serializeQuery(loaded), serializeQuery(compiled)) {
				t.Errorf("%s %s: read back, the query serializes differently", g, src)
			}
			want, got := matchesText(t, tr, compiled), matchesText(t, tr, loaded)
			if want == "" {
				t.Errorf("%s %s: matches nothing in the sample; the comparison would prove nothing", g, src)
			}
			if got != want {
				t.Errorf("%s %s: matches differ\ncompiled:\n%sloaded:\n%s", g, src, want, got)
			}
			if len(loaded.names) != len(compiled.names) || len(loaded.preds) != len(compiled.preds) {
				t.Errorf("%s %s: captures or predicates differ", g, src)
			}
		}
		tr.Close()
	}
}

// TestQueryLoadRejects: a serialized query cut short, grown, made for
// another grammar or with a damaged magic is an error, never a query.
func TestQueryLoadRejects(t *testing.T) {
	src := roundTripQueries["go"][0]
	q, err := CompileQuery("go", src)
	if err != nil {
		t.Fatal(err)
	}
	data := serializeQuery(q)
	for n := 0; n < len(data); n++ {
		if _, err := loadQuery("go", data[:n]); err == nil {
			t.Fatalf("a query cut to %d of %d bytes loaded", n, len(data))
		}
	}
	if _, err := loadQuery("go", append(bytes.Clone(data), 0)); err == nil {
		t.Error("a query with a byte more loaded")
	}
	if _, err := loadQuery("python", data); !errors.Is(err, errStaleQuery) {
		t.Errorf("a Go query loaded for Python: %v", err)
	}
	bad := bytes.Clone(data)
	bad[48] ^= 0xff // the body's magic
	if _, err := loadQuery("go", bad); err == nil {
		t.Error("a query with a damaged magic loaded")
	}
	if _, err := loadQuery("go", data); err != nil {
		t.Errorf("the intact query: %v", err)
	}
}

// TestQuerySnapshotInstalled: CachedQuery takes an installed snapshot's
// query (the same matches), and a damaged snapshot makes it compile.
func TestQuerySnapshotInstalled(t *testing.T) {
	const src = `(comment) @c (interpreted_string_literal) @s`
	data, err := QuerySnapshot(map[string][]string{"go": {src}})
	if err != nil {
		t.Fatal(err)
	}
	defer UseQuerySnapshot(nil)
	if got := snapshotQuery("go", src); got != nil {
		t.Fatal("a query found with no snapshot installed")
	}
	UseQuerySnapshot(data)
	if got := snapshotQuery("go", src); got == nil {
		t.Fatal("the installed snapshot's query not found")
	}
	if got := snapshotQuery("go", src+" "); got != nil {
		t.Error("a query found for another source")
	}
	UseQuerySnapshot(data[:len(data)-1])
	if got := snapshotQuery("go", src); got != nil {
		t.Error("a truncated snapshot was used")
	}
	if _, err := indexQuerySnapshot(append([]byte("x"), data...)); err == nil {
		t.Error("a snapshot with a bad magic indexed")
	}
}
