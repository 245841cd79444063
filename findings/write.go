package findings

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Encode writes a bundle as indented JSON (two spaces, keys in the order of
// the Bundle type). It streams findings one at a time, so memory stays flat
// however many there are. It does not normalize or validate. It is an
// Encoder over b's findings.
func Encode(w io.Writer, b *Bundle) error {
	e, err := NewEncoder(w, b)
	if err != nil {
		return err
	}
	for i := range b.Findings {
		if err := e.Finding(&b.Findings[i]); err != nil {
			return err
		}
	}
	return e.Close()
}

// Encoder writes a bundle whose findings come one at a time: the header
// (hdr without its findings) at NewEncoder, each finding at Finding, the
// end at Close; the bytes are Encode's for the same bundle.
type Encoder struct {
	bw  *bufio.Writer
	buf bytes.Buffer
	enc *json.Encoder
	n   int
}

// NewEncoder writes hdr's fields (its Findings are ignored) to w, through
// a buffer that Close flushes.
func NewEncoder(w io.Writer, hdr *Bundle) (*Encoder, error) {
	e := &Encoder{bw: bufio.NewWriterSize(w, 256<<10)}
	h := *hdr
	h.Findings = nil
	head, err := json.MarshalIndent(&h, "", "  ")
	if err != nil {
		return nil, err
	}
	// Findings is the last field, so the header ends with it as null.
	const tail = "\"findings\": null\n}"
	if !bytes.HasSuffix(head, []byte(tail)) {
		return nil, errors.New("internal: findings is not the last bundle field")
	}
	e.bw.Write(head[:len(head)-len("null\n}")])
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false)
	e.enc.SetIndent("    ", "  ")
	return e, nil
}

// Finding writes the next finding.
func (e *Encoder) Finding(f *Finding) error {
	e.buf.Reset()
	if err := e.enc.Encode(f); err != nil {
		return fmt.Errorf("finding %d: %w", e.n, err)
	}
	if e.n == 0 {
		e.bw.WriteString("[")
	} else {
		e.bw.WriteByte(',')
	}
	e.n++
	e.bw.WriteString("\n    ")
	_, err := e.bw.Write(bytes.TrimSuffix(e.buf.Bytes(), []byte("\n")))
	return err
}

// Close ends the findings array and the bundle and flushes.
func (e *Encoder) Close() error {
	if e.n == 0 {
		e.bw.WriteString("[]\n}\n")
	} else {
		e.bw.WriteString("\n  ]\n}\n")
	}
	return e.bw.Flush()
}

// WriteFile normalizes and validates b, then writes it to path atomically:
// a temporary file in the same directory is written, synced and renamed
// over path, so readers see the old bundle or the new one, never a
// truncated mix. Parent directories are created. Nothing is written when
// the bundle is invalid.
func WriteFile(path string, b *Bundle, opts Options) error {
	if err := Normalize(b, opts); err != nil {
		return err
	}
	return AtomicWrite(path, 0o644, func(w io.Writer) error { return Encode(w, b) })
}

// ErrNotRegularFile is wrapped by AtomicWrite's refusal to replace
// anything but a regular file.
var ErrNotRegularFile = errors.New("not a regular file")

// AtomicWrite creates or replaces path with what write produces, through a
// synced temporary file in the same directory and a rename. It refuses,
// before writing anything, to replace what is not a regular file: a
// symlink (renaming over it would replace the link, and following it would
// write wherever it points), a directory, a device such as /dev/null, a
// FIFO or a socket. The temporary file is created with O_EXCL, so it never
// follows a link, and is removed on every error.
//
// It does not check the directories on the way; diffpal's own commands
// write through internal/safefile, which also refuses symlinks in any
// component inside the repository and removes temporary files on signals.
func AtomicWrite(path string, perm os.FileMode, write func(io.Writer) error) (err error) {
	if err := checkTarget(path); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err = write(tmp); err != nil {
		return err
	}
	if err = tmp.Chmod(perm); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	// Checked again: the write may have taken long.
	if err = checkTarget(path); err != nil {
		return err
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	// Make the rename itself durable; best effort where directories
	// cannot be synced.
	if d, derr := os.Open(dir); derr == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// checkTarget refuses a path that exists and is not a regular file.
func checkTarget(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	m := fi.Mode()
	if m.IsRegular() {
		return nil
	}
	what := "a " + m.Type().String() + " file"
	switch {
	case m&os.ModeSymlink != 0:
		what = "a symlink"
		if to, err := os.Readlink(path); err == nil {
			what += " (to " + to + ")"
		}
	case m.IsDir():
		what = "a directory"
	case m&os.ModeNamedPipe != 0:
		what = "a named pipe (FIFO)"
	case m&os.ModeSocket != 0:
		what = "a socket"
	case m&os.ModeCharDevice != 0:
		what = "a character device"
	case m&os.ModeDevice != 0:
		what = "a device"
	}
	return fmt.Errorf("refusing to replace %s: it is %s: %w", path, what, ErrNotRegularFile)
}
