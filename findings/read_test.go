package findings

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// zeros yields n NUL bytes and counts what was taken.
type zeros struct{ n, taken int64 }

func (z *zeros) Read(p []byte) (int, error) {
	if z.taken >= z.n {
		return 0, io.EOF
	}
	k := int64(len(p))
	if rest := z.n - z.taken; k > rest {
		k = rest
	}
	clear(p[:k])
	z.taken += k
	return int(k), nil
}

// A stream that cannot be a bundle is rejected after its first bytes, not
// read to its end; the error is the one Decode gives for it.
func TestReadAllStopsAtFirstNonSpaceByte(t *testing.T) {
	z := &zeros{n: 256 << 20}
	_, err := ReadAll(z, 0)
	var se *SyntaxError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "invalid character byte 0x00") {
		t.Fatalf("err = %v, want a syntax error about the NUL byte", err)
	}
	if z.taken > 64<<10 {
		t.Fatalf("read %d bytes of a NUL stream before rejecting it", z.taken)
	}
	for in, want := range map[string]string{
		"  \n[]":        "must be a JSON object, got array",
		"\"text\"":      "must be a JSON object, got string",
		"\xef\xbb\xbf{": "invalid character",
	} {
		_, err := ReadAll(strings.NewReader(in+strings.Repeat("x", 1<<20)), 0)
		_, _, _, derr := Decode([]byte(in), DecodeOptions{})
		if err == nil || !strings.Contains(err.Error(), want) || err.Error() != derr.Error() {
			t.Errorf("ReadAll(%q) = %v, want Decode's %v", in, err, derr)
		}
	}
	// Leading white space, then a bundle: read in full.
	in := "\n\t  " + `{"findings":[]}`
	if data, err := ReadAll(strings.NewReader(in), 0); err != nil || string(data) != in {
		t.Fatalf("ReadAll = %q, %v", data, err)
	}
	// Empty input is left to Decode's "empty input" message.
	if data, err := ReadAll(strings.NewReader("  "), 0); err != nil || string(data) != "  " {
		t.Fatalf("ReadAll(spaces) = %q, %v", data, err)
	}
}

func TestReadAllLimit(t *testing.T) {
	b := sampleBundle(20)
	Normalize(b, Options{})
	var buf bytes.Buffer
	Encode(&buf, b)
	n := int64(buf.Len())
	if data, err := ReadAll(bytes.NewReader(buf.Bytes()), n); err != nil || int64(len(data)) != n {
		t.Fatalf("at the limit: %d bytes, %v", len(data), err)
	}
	r := &countingReader{r: bytes.NewReader(append(buf.Bytes(), bytes.Repeat([]byte(" "), 1<<20)...))}
	_, err := ReadAll(r, n)
	var tl *TooLargeError
	if !errors.As(err, &tl) || !errors.Is(err, ErrTooLarge) || tl.Limit != n || !strings.Contains(err.Error(), FormatBytes(n)) {
		t.Fatalf("over the limit: %v", err)
	}
	if r.n > n+1 {
		t.Fatalf("read %d bytes with a limit of %d", r.n, n)
	}
	if _, _, err := Read(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatalf("Read: %v", err)
	}
	for n, want := range map[int64]string{4 << 30: "4 GiB", 100: "100 bytes", 3 << 20: "3 MiB", 1536: "1536 bytes"} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// A regular file over the limit is refused by its size, without reading:
// a sparse file far larger than memory costs nothing.
func TestReadBytesLimit(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.json")
	f, _ := os.Create(big)
	f.WriteString("{")
	if err := f.Truncate(DefaultMaxBytes + 1); err != nil {
		t.Skipf("sparse file: %v", err)
	}
	f.Close()
	_, err := ReadBytes(big)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), big) || !strings.Contains(err.Error(), "4 GiB") {
		t.Fatalf("ReadBytes(big) = %v, want a size refusal naming the file and the limit", err)
	}
	small := filepath.Join(dir, "small.json")
	os.WriteFile(small, []byte(`{"findings":[]}`), 0o644)
	if _, err := ReadBytesLimit(small, 5); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "5 bytes") {
		t.Fatalf("ReadBytesLimit(small, 5) = %v", err)
	}
	if data, err := ReadBytesLimit(small, 0); err != nil || len(data) != 15 {
		t.Fatalf("ReadBytesLimit(small, default) = %q, %v", data, err)
	}
	nul := filepath.Join(dir, "nul.json")
	os.WriteFile(nul, make([]byte, 1<<20), 0o644)
	if _, err := ReadBytes(nul); err == nil || !strings.HasPrefix(err.Error(), nul+": not valid JSON: invalid character") {
		t.Fatalf("ReadBytes(nul) = %v", err)
	}
}

// A FIFO has no size: it is read up to the limit, and rejected early
// when its first byte says it is not a bundle.
func TestReadBytesFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "in.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan int64, 1)
	go func() {
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			done <- -1
			return
		}
		defer w.Close()
		chunk := make([]byte, 64<<10)
		var sent int64
		for sent < 64<<20 { // far more than is read; stops at EPIPE
			n, err := w.Write(chunk)
			sent += int64(n)
			if err != nil {
				break
			}
		}
		done <- sent
	}()
	_, err := ReadBytes(fifo)
	if err == nil || !strings.Contains(err.Error(), "invalid character") {
		t.Fatalf("ReadBytes(fifo) = %v", err)
	}
	if sent := <-done; sent >= 64<<20 {
		t.Fatalf("the reader drained %d bytes of the FIFO", sent)
	}
}
