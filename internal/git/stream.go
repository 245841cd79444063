package git

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Patch is a committed range's patch with the new side's file contents.
type Patch struct {
	// Diff is the patch as git printed it (Diff's arguments).
	Diff []byte
	// Blobs are the new-side contents by blob id: every regular, non-binary
	// file the patch names on its head side with an "index" line.
	Blobs map[string][]byte
	// BlobsTook is how long the contents took to arrive, from the start.
	BlobsTook time.Duration
}

// DiffBlobs is Diff(base, head, paths...) for committed ranges that also
// reads the new side of every file in the patch, streaming: the patch is
// read as git writes it, and each file's new blob id (the patch's full
// index line) goes to one `cat-file --batch` as soon as the file's header
// is complete, so the contents arrive while git is still diffing the
// files after it. There is no separate `diff --raw` pass; binary files,
// submodules and deleted files are not read.
func (r *Runner) DiffBlobs(ctx context.Context, base, head string, paths ...string) (*Patch, error) {
	start := time.Now()
	args := append([]string{"diff"}, DiffArgs...)
	args = append(args, "--end-of-options", base, head, "--")
	args = append(args, paths...)
	env, err := r.env(ctx)
	if err != nil {
		return nil, err
	}
	blobs, err := r.Blobs(ctx)
	if err != nil {
		return nil, err
	}
	cmd := r.command(ctx, env, args...)
	stderr := &capped{max: maxStderr}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		blobs.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		blobs.Close()
		return nil, r.failure(ctx, args, "", err)
	}

	// Blob ids go to cat-file through ids; the responses are read, in
	// order, by the reader below until cat-file ends (after ids closes).
	ids := make(chan string, 256)
	werr := make(chan error, 1)
	go func() {
		w := bufio.NewWriterSize(blobs.in, 16<<10)
		var err error
		for id := range ids {
			if err == nil {
				_, err = w.WriteString(id + "\n")
			}
			if err == nil && len(ids) == 0 {
				err = w.Flush() // keep cat-file busy while git diffs on
			}
		}
		if err == nil {
			err = w.Flush()
		}
		blobs.in.Close()
		werr <- err
	}()
	type blobsRead struct {
		m    map[string][]byte
		took time.Duration
		err  error
	}
	rres := make(chan blobsRead, 1)
	go func() {
		m, err := blobs.readUntilEOF()
		rres <- blobsRead{m, time.Since(start), err}
	}()

	var buf bytes.Buffer
	buf.Grow(64 << 10)
	sc := patchScanner{send: func(id string) { ids <- id }}
	var rerr error
	for {
		if buf.Available() < 32<<10 {
			buf.Grow(max(64<<10, buf.Len()/2))
		}
		n, err := out.Read(buf.AvailableBuffer()[:buf.Available()])
		if n > 0 {
			chunk := buf.AvailableBuffer()[:n]
			buf.Write(chunk) // no copy: Write of its own available buffer
			sc.feed(buf.Bytes())
		}
		if err != nil {
			if err != io.EOF {
				rerr = err
			}
			break
		}
	}
	sc.end(buf.Bytes())
	close(ids)
	diffErr := cmd.Wait()
	wErr := <-werr
	br := <-rres
	blobErr := blobs.wait()
	if diffErr != nil {
		return nil, r.failure(ctx, args, stderr.String(), diffErr)
	}
	if rerr != nil {
		return nil, rerr
	}
	if err := errors.Join(br.err, wErr, blobErr); err != nil {
		return nil, fmt.Errorf("git cat-file: %w", err)
	}
	data := buf.Bytes()
	if cap(data) > len(data)+len(data)/8 {
		// The buffer grew in steps: keep the patch at its size, since it
		// lives as long as the review.
		data = bytes.Clone(data)
	}
	return &Patch{Diff: data, Blobs: br.m, BlobsTook: br.took}, nil
}

// patchScanner follows a patch's file headers as the patch arrives and
// sends each file's new blob id once its header is complete (at its first
// hunk, the next file or the end): regular files only, not binary ones
// (whose "Binary files" line follows the index line), not submodules.
type patchScanner struct {
	send func(id string)
	off  int    // bytes of the patch already scanned (whole lines)
	id   string // new blob id of the file being read, "" when none
	skip bool   // the file is binary or a submodule
}

func (s *patchScanner) feed(data []byte) {
	for {
		nl := bytes.IndexByte(data[s.off:], '\n')
		if nl < 0 {
			return
		}
		s.line(data[s.off : s.off+nl])
		s.off += nl + 1
	}
}

func (s *patchScanner) end(data []byte) {
	if s.off < len(data) {
		s.line(data[s.off:])
		s.off = len(data)
	}
	s.flush()
}

func (s *patchScanner) flush() {
	if s.id != "" && !s.skip {
		s.send(s.id)
	}
	s.id, s.skip = "", false
}

func (s *patchScanner) line(l []byte) {
	if len(l) == 0 {
		return
	}
	switch l[0] {
	case ' ', '+', '-', '\\':
		return // hunk lines (and the ---/+++ header lines)
	}
	switch {
	case bytes.HasPrefix(l, []byte("diff --git ")):
		s.flush()
	case bytes.HasPrefix(l, []byte("@@ ")):
		s.flush()
	case bytes.HasPrefix(l, []byte("index ")):
		ids, mode, _ := strings.Cut(string(l[len("index "):]), " ")
		_, nw, _ := strings.Cut(ids, "..")
		if strings.Trim(nw, "0") != "" {
			s.id = nw
		}
		if mode == "160000" {
			s.skip = true
		}
	case bytes.HasPrefix(l, []byte("new file mode 160000")), bytes.HasPrefix(l, []byte("new mode 160000")):
		s.skip = true
	case bytes.HasPrefix(l, []byte("Binary files ")), bytes.Equal(l, []byte("GIT binary patch")):
		s.skip = true
	}
}

// readUntilEOF reads cat-file --batch responses until its output ends:
// contents by object name (missing objects are left out).
func (b *BlobReader) readUntilEOF() (map[string][]byte, error) {
	m := map[string][]byte{}
	for {
		header, err := b.out.ReadString('\n')
		if err == io.EOF && header == "" {
			return m, nil
		}
		if err != nil {
			return m, err
		}
		header = strings.TrimSuffix(header, "\n")
		if strings.HasSuffix(header, " missing") || strings.HasSuffix(header, " ambiguous") {
			continue
		}
		fields := strings.Fields(header)
		if len(fields) != 3 {
			return m, fmt.Errorf("unexpected header %q", header)
		}
		size, err := strconv.Atoi(fields[2])
		if err != nil || size < 0 {
			return m, fmt.Errorf("bad size in %q", header)
		}
		data := make([]byte, size+1)
		if _, err := io.ReadFull(b.out, data); err != nil {
			return m, err
		}
		m[fields[0]] = data[:size]
	}
}

// wait waits for the batch process after its input was closed.
func (b *BlobReader) wait() error {
	if err := b.cmd.Wait(); err != nil {
		return b.r.failure(b.ctx, []string{"cat-file", "--batch"}, b.stderr.String(), err)
	}
	return nil
}
