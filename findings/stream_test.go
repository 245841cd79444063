package findings

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

// decodeBoth decodes data with Decode (streaming callback, whole input in
// memory) and with DecodeReader through a window of the given size, read
// chunk bytes at a time, and reports any difference.
func decodeBoth(t *testing.T, data []byte, window, chunk int) {
	t.Helper()
	record := func(out *[]string) func(*Finding, bool) {
		return func(f *Finding, valid bool) {
			j, err := json.Marshal(f)
			*out = append(*out, fmt.Sprintf("%v %s %v %#v", valid, j, err, f.Severity))
		}
	}
	var want, got []string
	b1, i1, p1, e1 := Decode(data, DecodeOptions{OnFinding: record(&want)})
	saved := streamWindow
	streamWindow = window
	defer func() { streamWindow = saved }()
	var r io.Reader = &chunkReader{data: data, n: chunk}
	b2, i2, p2, e2 := DecodeReader(r, 0, DecodeOptions{OnFinding: record(&got)})
	name := fmt.Sprintf("window %d, chunks of %d, input %.80q", window, chunk, data)
	if (e1 == nil) != (e2 == nil) || (e1 != nil && e1.Error() != e2.Error()) {
		t.Fatalf("%s: error %v, streamed %v", name, e1, e2)
	}
	var s1, s2 *SyntaxError
	if errors.As(e1, &s1) && errors.As(e2, &s2) && *s1 != *s2 {
		t.Fatalf("%s: syntax error %+v, streamed %+v", name, *s1, *s2)
	}
	if !reflect.DeepEqual(b1, b2) || !reflect.DeepEqual(i1, i2) || !reflect.DeepEqual(p1, p2) || !reflect.DeepEqual(want, got) {
		t.Fatalf("%s: decode differs:\n%+v\n%+v\n%v\n%v\n%q\n%q", name, i1, i2, p1, p2, want, got)
	}
}

type chunkReader struct {
	data []byte
	n    int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), c.n, len(c.data))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

func streamInputs(t *testing.T) [][]byte {
	inputs := fuzzSeeds(t)
	full := `{"version":"v3","review_id":"r","base_sha":"` + strings.Repeat("a", 40) + `","head_sha":"` + strings.Repeat("b", 40) + `","repo":"x/y","gate":{"block_on":"HIGH"},"findings":[` +
		`{"id":"F-1","category":"security","severity":"Medium","confidence":1,"path":"a\"b\\\\","start_line":1,"end_line":1,"changed_span":{"path":"a","start_line":1,"end_line":1},"title":"t \u00e9","message":"m","evidence":{"anchor":"a","reasoning_basis":"r","source":"s"},"impact":{"summary":"s","scope":"s"},"blocking":true},` +
		`{"id":"F-2","category":"bug","severity":"low","confidence":0.5,"path":"b","start_line":2,"end_line":1,"title":"[{,}]","message":"\\\"","unknown":{"a":[1,2,{"b":"]"}]}},` +
		`7, "x", null, [1,{}]` +
		`],"files":[{"path":"a","status":"modified"}],"change_summary":["s1","s2"]}`
	inputs = append(inputs, []byte(full), []byte("  \n"+strings.ReplaceAll(full, ",", " ,\n\t "))) // whitespace everywhere
	// The version not first, findings first, duplicate findings, no findings.
	inputs = append(inputs,
		[]byte(`{"findings":[{"id":"a"},{"id":"b"}],"version":"v2","review_id":"r"}`),
		[]byte(`{"review_id":"r","findings":[{"id":"a"}],"findings":[{"id":"b"},"x"],"version":"v3"}`),
		[]byte(`{"version":"v3","findings":[{"id":"a"}],"findings":[{"id":"b"},"x"]}`),
		[]byte(`{"version":"v3","findings" : [ ] , "repo" : "r" }`),
		[]byte(`{"version":"v3","findings":{"a":1}}`),
		[]byte(`{"version":"v3","findings":[{"id":"a"}]}   `),
		[]byte(`{"version":"v3","findings":[{"id":"a"}]} x`),
		[]byte(`{"version":"v3","findings":[{"id":"a"}]}}`),
		[]byte(`{"version":"v3","findings":[{"id":"a"} {"id":"b"}]}`),
		[]byte(`{"version":"v3","findings":[{"id":"a\`),
		[]byte(`{"version":"v3","findings":[{"id":"a\u00"}]}`),
		[]byte("{\"version\":\"v3\",\"findings\":[{\"id\":\"a\nb\"}]}"),
		[]byte("{\"version\":\"v3\",\"findings\":[{\"id\":\"a\n"),
		[]byte(`{"version":"v3","findings":[`+strings.Repeat("[", 1500)+`]}`),
		[]byte(`{"version":"v3","x":`+strings.Repeat("[", 1500)),
		[]byte(`{"version":"v3","findings":[1e999, -0, 01, "\ud800"]}`),
		// The files list, streamed element by element like the findings:
		// duplicated, of the wrong type, before the version, in v1, with
		// bad elements, escapes and unknown members.
		[]byte(`{"version":"v3","files":[{"path":"a\\u00e9","status":"modified","x":[1]},{"path":"/abs"},7,{"status":3}],"findings":[{"id":"a"}],"files":[{"path":"b"}]}`),
		[]byte(`{"version":"v3","files":{"path":"a"},"findings":[]}`),
		[]byte(`{"version":"v3","files" : [ ] , "findings":[{"id":"a"}]}`),
		[]byte(`{"files":[{"path":"a"},{"path":"b"}],"version":"v3","findings":[{"id":"a"}]}`),
		[]byte(`{"version":"v1","files":[{"path":"a"},{"path":"b"}],"findings":[{"id":"a"}]}`),
		[]byte(`{"version":"v9","files":[{"path":"a"},{"path":"b"}],"findings":[{"id":"a"}]}`),
		[]byte(`{"version":"v3","files":[{"path":"a"},{"path":"b"}`),
		[]byte(`{"version":`), []byte(`{`), []byte(``), []byte(`   `), []byte(`[1]`), []byte("\x00"), []byte(`{"version":"v9"}`),
	)
	// Every seed cut short, and with a byte flipped, at many places.
	n := len(inputs)
	for _, in := range inputs[:n] {
		step := max(1, len(in)/40)
		for i := 0; i < len(in); i += step {
			inputs = append(inputs, in[:i])
			flipped := bytes.Clone(in)
			flipped[i] = "\"{}[],:\\ x"[i%10]
			inputs = append(inputs, flipped)
		}
	}
	return inputs
}

// TestDecodeReaderAgrees: the streaming decoder finds exactly what Decode
// finds (bundle header, findings, problems, warnings, syntax errors with
// their positions) whatever the window and the reader's chunks.
func TestDecodeReaderAgrees(t *testing.T) {
	for _, data := range streamInputs(t) {
		for _, wc := range [][2]int{{1, 1}, {2, 3}, {7, 5}, {64, 1}, {64, 1000}, {4 << 20, 1 << 20}} {
			decodeBoth(t, data, wc[0], wc[1])
		}
	}
}

// TestDecodeReaderBoundedWindow: a large bundle is read through a window
// that does not grow past a few findings.
func TestDecodeReaderBoundedWindow(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"version":"v3","review_id":"r","base_sha":"","head_sha":"","findings":[`)
	one := `{"id":"F-1","category":"security","severity":"high","confidence":1,"path":"a","start_line":1,"end_line":1,"title":"t","message":"m","blocking":true}`
	for i := 0; i < 20000; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(one)
	}
	b.WriteString(`]}`)
	saved := streamWindow
	streamWindow = 4096
	defer func() { streamWindow = saved }()
	peak := 0
	streamDone = func(st *stream) { peak = max(peak, cap(st.buf)) }
	defer func() { streamDone = nil }()
	n := 0
	_, info, _, err := DecodeReader(strings.NewReader(b.String()), 0, DecodeOptions{OnFinding: func(*Finding, bool) { n++ }})
	if err != nil || n != 20000 || info.Findings != 20000 {
		t.Fatalf("err %v, %d findings", err, n)
	}
	res, _, problems, err := GateReader(strings.NewReader(b.String()), 0, nil)
	want, _, wantProblems, _ := Gate([]byte(b.String()), nil)
	if err != nil || !reflect.DeepEqual(res, want) || !reflect.DeepEqual(problems, wantProblems) {
		t.Fatalf("GateReader %+v %v, Gate %+v", res, err, want)
	}
	if peak == 0 || peak > 4096 {
		t.Errorf("window grew to %d bytes for findings of %d", peak, len(one))
	}

	// A long files list does not grow the window either.
	b.Reset()
	b.WriteString(`{"version":"v3","review_id":"r","base_sha":"","head_sha":"","files":[`)
	for i := 0; i < 20000; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"path":"dir/file_%d.go","status":"modified"}`, i)
	}
	b.WriteString(`],"findings":[` + one + `]}`)
	peak = 0
	wantB, _, wantP, _ := Decode([]byte(b.String()), DecodeOptions{OnFinding: func(*Finding, bool) {}})
	gotB, _, gotP, err := DecodeReader(strings.NewReader(b.String()), 0, DecodeOptions{OnFinding: func(*Finding, bool) {}})
	if err != nil || len(gotB.Files) != 20000 || !reflect.DeepEqual(gotB, wantB) || !reflect.DeepEqual(gotP, wantP) {
		t.Fatalf("files: err %v, %d files, problems %v (want %v)", err, len(gotB.Files), gotP, wantP)
	}
	if peak == 0 || peak > 4096 {
		t.Errorf("window grew to %d bytes for a list of 20000 files", peak)
	}
}

// TestDecodeReaderErrors: the size limit and the reader's errors.
func TestDecodeReaderErrors(t *testing.T) {
	data := []byte(`{"version":"v3","findings":[{"id":"a"},{"id":"b"}]}`)
	_, _, _, err := DecodeReader(bytes.NewReader(data), 20, DecodeOptions{OnFinding: func(*Finding, bool) {}})
	if !errors.Is(err, ErrTooLarge) {
		t.Errorf("over the limit: %v", err)
	}
	if _, _, _, err := DecodeReader(bytes.NewReader(data), int64(len(data)), DecodeOptions{OnFinding: func(*Finding, bool) {}}); err != nil {
		t.Errorf("at the limit: %v", err)
	}
	boom := errors.New("boom")
	_, _, _, err = DecodeReader(iotest.DataErrReader(io.MultiReader(bytes.NewReader(data[:30]), iotest.ErrReader(boom))), 0, DecodeOptions{OnFinding: func(*Finding, bool) {}})
	if !errors.Is(err, boom) {
		t.Errorf("read error: %v", err)
	}
	if _, _, _, err := DecodeReader(bytes.NewReader(data), 0, DecodeOptions{}); err == nil {
		t.Error("no OnFinding: no error")
	}
}
