package findings

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

func sampleBundle(n int) *Bundle {
	b := &Bundle{ReviewID: "r", BaseSHA: "a", HeadSHA: "b"}
	sevs := []Severity{Low, Medium, High, Critical}
	for i := 0; i < n; i++ {
		b.Findings = append(b.Findings, Finding{
			Category: "cat" + fmt.Sprint(i%7), Severity: sevs[i%4], Confidence: float64(i%10) / 10,
			Path: fmt.Sprintf("pkg%d/file%d.go", i%13, i%101), StartLine: 1 + i%500, EndLine: 1 + i%500 + i%3,
			Title: "title", Message: fmt.Sprintf("message %d with <html> & \"quotes\"", i),
			Evidence: &Evidence{Anchor: fmt.Sprintf("anchor %d", i%50), ReasoningBasis: "because", Source: "changed_line"},
			Impact:   &Impact{Summary: "impact", Scope: "scope"},
		})
	}
	return b
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "nested", "deeper", "findings.json")
	if err := WriteFile(path, sampleBundle(3), Options{}); err != nil {
		t.Fatal(err)
	}
	first, _ := os.ReadFile(path)
	if _, _, err := ReadFile(path); err != nil {
		t.Fatalf("written bundle does not read back: %v", err)
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("mode = %v", fi.Mode())
	}

	// An invalid bundle is refused and the old file stays.
	bad := sampleBundle(1)
	bad.Findings[0].Confidence = 2
	if err := WriteFile(path, bad, Options{}); err == nil {
		t.Fatal("invalid bundle written")
	}
	// A write interrupted halfway (the writer fails after some bytes)
	// leaves the old file intact and no temporary file behind.
	boom := errors.New("disk full")
	err := AtomicWrite(path, 0o644, func(w io.Writer) error {
		w.Write([]byte(`{"version":"v3","findi`))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	now, _ := os.ReadFile(path)
	if !bytes.Equal(first, now) {
		t.Error("failed writes changed the bundle on disk")
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("temporary files left behind: %v", names)
	}
}

func TestWriteFileUnwritableDir(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	os.WriteFile(blocker, []byte("x"), 0o644)
	if err := WriteFile(filepath.Join(blocker, "findings.json"), sampleBundle(1), Options{}); err == nil {
		t.Error("writing under a regular file succeeded")
	}
}

func TestReadFileErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.json")
	os.WriteFile(empty, nil, 0o644)
	cases := map[string]string{
		filepath.Join(dir, "missing.json"): "no such file",
		dir:                                "is a directory",
		empty:                              "empty input",
	}
	for path, want := range cases {
		_, _, err := ReadFile(path)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
			t.Errorf("ReadFile(%s) = %v, want %q naming the file", path, err, want)
		}
	}
}

func TestEncodeEmptyAndStable(t *testing.T) {
	b := &Bundle{ReviewID: "r"}
	if err := Normalize(b, Options{}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	Encode(&out, b)
	if !strings.Contains(out.String(), `"findings": []`) {
		t.Errorf("empty findings must be [] for jq consumers:\n%s", out.String())
	}
}

// TestLargeBundle decodes, gates and round-trips 100k findings; the 1M
// case runs in bench/findings.sh, not here, to keep -race runs short.
func TestLargeBundle(t *testing.T) {
	const n = 100_000
	b := sampleBundle(n)
	if err := Normalize(b, Options{}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Encode(&buf, b); err != nil {
		t.Fatal(err)
	}
	res, info, problems, err := Gate(buf.Bytes(), nil)
	if err != nil || len(problems) > 0 {
		t.Fatalf("gate: %v %v", err, problems)
	}
	wantBlocking := 0
	for i := range b.Findings {
		if b.Findings[i].Blocking {
			wantBlocking++
		}
	}
	if info.Findings != n || res.Findings != n || res.Blocking != wantBlocking || wantBlocking == 0 {
		t.Errorf("gate counted %d/%d findings, %d blocking; want %d, %d", info.Findings, res.Findings, res.Blocking, n, wantBlocking)
	}
	streamed := res
	low := &Policy{BlockOn: Low}
	res, _, _, _ = Gate(buf.Bytes(), low)
	if res.Blocking != n || !res.Recomputed {
		t.Errorf("recomputed blocking = %d, want %d", res.Blocking, n)
	}
	b2, _, err := Parse(buf.Bytes())
	if err != nil || len(b2.Findings) != n {
		t.Fatalf("parse: %v", err)
	}
	// A decoded bundle is counted exactly as the streaming gate counts it.
	if got := b2.Tally(); !reflect.DeepEqual(got, streamed) || len(got.BySeverity) != len(Severities) {
		t.Errorf("Tally = %+v, Gate = %+v", got, streamed)
	}
	// Break every 1000th finding: all of them are reported.
	broken := bytes.ReplaceAll(buf.Bytes(), []byte(`"confidence": 0.9`), []byte(`"confidence": 9`))
	_, _, problems, err = Decode(broken, DecodeOptions{OnFinding: func(*Finding, bool) {}})
	if err != nil || len(problems) != n/10 {
		t.Errorf("got %d problems (%v), want %d", len(problems), err, n/10)
	}
	// Truncation anywhere is a syntax error, never a panic or a partial read.
	for _, cut := range []int{1, buf.Len() / 3, buf.Len() - 2} {
		if _, _, _, err := Decode(buf.Bytes()[:cut], DecodeOptions{}); err == nil {
			t.Errorf("truncated at %d: no error", cut)
		}
	}
}

// AtomicWrite never replaces (or writes through) what is not a regular
// file: a symlink, a FIFO, a directory, a device.
func TestAtomicWriteRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target.json")
	os.WriteFile(target, []byte("precious"), 0o644)
	link := filepath.Join(dir, "link.json")
	os.Symlink(target, link)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	write := func(w io.Writer) error { _, err := io.WriteString(w, "evil"); return err }
	for path, what := range map[string]string{link: "symlink", fifo: "FIFO", sub: "directory", "/dev/null": "character device"} {
		err := AtomicWrite(path, 0o644, write)
		if !errors.Is(err, ErrNotRegularFile) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), what) {
			t.Errorf("AtomicWrite(%s) = %v, want a refusal naming it as a %s", path, err, what)
		}
	}
	if fi, _ := os.Lstat(link); fi.Mode()&os.ModeSymlink == 0 {
		t.Error("the symlink was replaced")
	}
	if b, _ := os.ReadFile(target); string(b) != "precious" {
		t.Error("wrote through the symlink")
	}
	if fi, _ := os.Lstat(fifo); fi.Mode()&os.ModeNamedPipe == 0 {
		t.Error("the FIFO was replaced")
	}
	if fi, _ := os.Lstat("/dev/null"); fi.Mode()&os.ModeCharDevice == 0 {
		t.Error("/dev/null was replaced")
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}
