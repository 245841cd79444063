package git

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/diffpalhq/diffpal/internal/repofs"
)

// FileDiff is one file of a streamed patch: its part of the patch (from
// its "diff --git" line to the next file's) and, when the patch names a
// new-side blob of a regular, non-binary file, that blob's content — whole,
// or only its first BlobHead bytes when it is larger than DiffFiles'
// maxBlob (a file that large is skipped anyway; the head is what a skip's
// reason reads).
type FileDiff struct {
	Patch     []byte
	BlobID    string // "" when no content was read
	Blob      []byte
	BlobSize  int  // the blob's size, all of it
	Truncated bool // Blob is only its head
	HasBlob   bool
}

// BlobHead is how much of a blob over the limit DiffFiles keeps.
const BlobHead = 64 << 10

// PatchInfo describes a streamed patch once git has finished it.
type PatchInfo struct {
	SHA256 string // hex SHA-256 of the whole patch, as Diff returns it
	Size   int
	// BlobsTook is how long the contents took to arrive, from the start.
	BlobsTook time.Duration
}

// DiffFiles streams Diff(base, head, paths...) for committed ranges file by
// file: the patch is read as git writes it, each file's new blob id (the
// patch's full index line) goes to one `cat-file --batch` as soon as the
// file's header is complete, and each returns a file — its patch and its
// new content — as soon as both are there, in patch order, from one
// goroutine, while git is still diffing the files after it. There is no
// separate `diff --raw` pass; binary files, submodules and deleted files
// are not read, and of a blob over maxBlob bytes (< 0: no limit) only its
// head is kept (the rest is read past, unkept: the change under review
// chooses its files' sizes). A file's Patch and Blob are never reused: the
// caller may keep them (and strings into them). An error from each stops
// the stream.
//
// The patch is held in chunks that never move, each file's part whole in
// one chunk, so nothing is copied as the patch grows and nothing is held
// twice.
func (r *Runner) DiffFiles(ctx context.Context, base, head string, maxBlob int, each func(FileDiff) error, paths ...string) (PatchInfo, error) {
	return r.StartDiffFiles(ctx, base, head, paths...).Files(maxBlob, each)
}

// DiffStream is a DiffFiles started ahead of its caller: StartDiffFiles
// starts git diff and cat-file and reads the patch (as far as the pipes
// let it) while the caller still works out what to do with the files (a
// review reads its policy and loads its rules meanwhile); Files then
// streams them. A DiffStream not streamed must be closed.
type DiffStream struct {
	dir, base, head string
	paths           []string
	root            string // the work tree head's blobs may be read from, or ""

	r      *Runner
	ctx    context.Context
	cancel context.CancelFunc
	err    error // from starting; Files returns it
	start  time.Time
	args   []string
	cmd    *exec.Cmd
	stderr *capped
	blobs  *BlobReader

	started chan struct{} // closed once the processes started (or failed to: err)
	werr    chan error    // the blob-id writer's end
	files   chan section  // complete files' parts of the patch, in order
	read    chan struct{} // closed when the patch is read
	used    bool

	// Set by the patch reader before read closes.
	sum  []byte
	size int
	rerr error

	// Lending (Lend): cat-file is the caller's until release, and the
	// stream asks it for no blob before.
	blobsUp  chan struct{} // closed once cat-file started (or failed: blobsErr)
	blobsErr error
	lent     chan struct{} // closed by release
	release  func()
}

// StartDiffFiles starts DiffFiles(ctx, base, head, _, _, paths...): its
// processes and the reading of the patch, on other goroutines (starting
// them waits for the driver environment's git config; the caller goes on
// meanwhile).
func (r *Runner) StartDiffFiles(ctx context.Context, base, head string, paths ...string) *DiffStream {
	return r.StartDiffFilesFrom(ctx, base, head, "", paths...)
}

// StartDiffFilesFrom is StartDiffFiles that may read head's blobs from
// the work tree at root (the repository's top level), when head is the
// commit checked out there (Range.CheckedOut; "" reads none): a file
// there that hashes to the blob the patch names is that blob, byte for
// byte, and is not asked of cat-file, which inflates it from the object
// store again after git diff did. A file that differs (edited, converted
// by a filter or line endings, not checked out), is not a regular file,
// or is larger than maxWorktreeBlob is asked of cat-file as before.
func (r *Runner) StartDiffFilesFrom(ctx context.Context, base, head, root string, paths ...string) *DiffStream {
	d := &DiffStream{dir: r.Dir, base: base, head: head, paths: append([]string(nil), paths...), r: r, start: time.Now(), root: root}
	d.args = append([]string{"diff"}, DiffArgs...)
	d.args = append(d.args, "--end-of-options", base, head, "--")
	d.args = append(d.args, paths...)
	d.ctx, d.cancel = context.WithCancel(ctx)
	d.started = make(chan struct{})
	d.blobsUp, d.lent = make(chan struct{}), make(chan struct{})
	d.release = sync.OnceFunc(func() { close(d.lent) })
	go func() {
		defer close(d.started)
		d.err = d.startProcesses()
	}()
	return d
}

// startProcesses starts cat-file and git diff and the goroutines that
// feed the one and read the other.
func (d *DiffStream) startProcesses() error {
	r := d.r
	// cat-file first: it needs no driver environment (Blobs), and a
	// caller may be waiting to borrow it (Lend).
	d.blobs, d.blobsErr = r.Blobs(d.ctx)
	close(d.blobsUp)
	if d.blobsErr != nil {
		return d.blobsErr
	}
	// On a failure below, the borrower (if any) is done before cat-file
	// is stopped.
	stop := func() {
		<-d.lent
		d.blobs.kill()
	}
	env, err := r.env(d.ctx)
	if err != nil {
		stop()
		return err
	}
	d.cmd = r.command(d.ctx, env, d.args...)
	d.stderr = &capped{max: maxStderr}
	d.cmd.Stderr = d.stderr
	out, err := d.cmd.StdoutPipe()
	if err != nil {
		stop()
		return err
	}
	widenPipe(out, 1<<20)
	if err := d.cmd.Start(); err != nil {
		stop()
		return r.failure(d.ctx, d.args, "", err)
	}

	// Blob ids go to cat-file through ids, once cat-file is the stream's.
	ids := make(chan string, 256)
	d.werr = make(chan error, 1)
	go func() {
		<-d.lent
		w := bufio.NewWriterSize(d.blobs.in, 16<<10)
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
		d.blobs.in.Close()
		d.werr <- err
	}()

	// Files whose part of the patch is complete go to Files through files.
	d.files = make(chan section, 4096)
	d.read = make(chan struct{})
	go func() {
		defer close(d.read)
		h := sha256.New()
		sc := patchScanner{send: func(id string) { ids <- id }, emit: func(s section) { d.files <- s }}
		if d.root != "" {
			// Opened once, for every file's read; a work tree that cannot
			// be opened leaves every blob to cat-file.
			if root, err := os.OpenRoot(d.root); err == nil {
				sc.root = root
				defer root.Close()
			}
		}
		for {
			sc.grow()
			n, err := out.Read(sc.chunk[len(sc.chunk):cap(sc.chunk)])
			if n > 0 {
				h.Write(sc.chunk[len(sc.chunk) : len(sc.chunk)+n])
				sc.chunk = sc.chunk[:len(sc.chunk)+n]
				d.size += n
				sc.feed()
			}
			if err != nil {
				if err != io.EOF {
					d.rerr = err
				}
				break
			}
		}
		sc.end()
		close(ids)
		close(d.files)
		d.sum = h.Sum(nil)
	}()
	return nil
}

// For reports whether d diffs base and head with these paths from dir,
// as DiffFiles would be asked to.
func (d *DiffStream) For(dir, base, head string, paths []string) bool {
	return d != nil && !d.used && d.dir == dir && d.base == base && d.head == head && slices.Equal(d.paths, paths)
}

// Lend gives the caller the stream's `cat-file --batch` until it calls
// give: the stream asks it for none of the patch's blobs before, so the
// caller's requests and answers are the only ones in it. A review reads
// its policy through it instead of starting a git process of its own.
// The caller must be done with it before Files or Close (which end the
// lending themselves). ok is false, and give does nothing, when the
// stream is nil or used, or cat-file did not start.
func (d *DiffStream) Lend() (b *BlobReader, give func(), ok bool) {
	if d == nil || d.used {
		return nil, func() {}, false
	}
	<-d.blobsUp
	if d.blobsErr != nil {
		return nil, func() {}, false
	}
	return d.blobs, d.release, true
}

// Close stops a stream that was not streamed (its processes are killed
// and waited for); after Files it does nothing.
func (d *DiffStream) Close() {
	if d == nil || d.used {
		return
	}
	d.used = true
	d.release()
	d.cancel()
	if <-d.started; d.err != nil {
		return
	}
	for range d.files {
	}
	<-d.read
	d.cmd.Wait()
	<-d.werr
	d.blobs.kill()
}

// Files streams the started diff to each (DiffFiles); maxBlob is the
// limit on a blob's kept bytes. A stream is streamed once.
func (d *DiffStream) Files(maxBlob int, each func(FileDiff) error) (PatchInfo, error) {
	if d.used {
		return PatchInfo{}, errors.New("git: a diff stream is streamed once")
	}
	d.used = true
	d.release()
	defer d.cancel()
	if <-d.started; d.err != nil {
		return PatchInfo{}, d.err
	}
	// cat-file's answers come back, in order, through got.
	type blob struct {
		id        string
		data      []byte
		size      int
		ok, whole bool
	}
	got := make(chan blob, 256)
	var readErr error
	var blobsTook time.Duration
	go func() {
		defer close(got)
		readErr = d.blobs.each(maxBlob, func(id string, data []byte, size int, ok bool) {
			got <- blob{id, data, size, ok, len(data) == size}
		})
		blobsTook = time.Since(d.start)
	}()
	// The caller's goroutine pairs each file with its blob.
	var eachErr error
	var aside *BlobReader // for an added file whose patch did not check out
	defer func() {
		if aside != nil {
			aside.kill()
		}
	}()
	joined := make(chan struct{})
	go func() {
		defer close(joined)
		for s := range d.files {
			fd := FileDiff{Patch: s.patch}
			if s.fromPatch != "" {
				data, size, ok := patchBlob(s.patch, s.fromPatch, maxBlob)
				if !ok {
					var err error
					if aside == nil {
						aside, err = d.r.Blobs(d.ctx)
					}
					if err == nil {
						data, size, ok, err = aside.readHead(s.fromPatch, maxBlob)
					}
					if err != nil && eachErr == nil {
						eachErr = fmt.Errorf("git cat-file: %w", err)
					}
				}
				fd.BlobID, fd.Blob, fd.BlobSize, fd.Truncated, fd.HasBlob = s.fromPatch, data, size, len(data) < size, ok
			}
			if s.worktree != nil {
				data, size := s.worktree, len(s.worktree)
				if maxBlob >= 0 && size > maxBlob {
					data = data[:min(size, BlobHead)] // as cat-file's answer would be kept
				}
				fd.BlobID, fd.Blob, fd.BlobSize, fd.Truncated, fd.HasBlob = s.blobID, data, size, len(data) < size, true
			} else if s.blobID != "" {
				b, open := <-got
				switch {
				case !open:
					if eachErr == nil {
						eachErr = errors.New("git cat-file: ended early")
					}
				case b.id != s.blobID && !strings.HasPrefix(b.id, s.blobID):
					if eachErr == nil {
						eachErr = fmt.Errorf("git cat-file: answered %s for %s", b.id, s.blobID)
					}
				default:
					fd.BlobID, fd.Blob, fd.BlobSize, fd.Truncated, fd.HasBlob = s.blobID, b.data, b.size, !b.whole, b.ok
				}
			}
			if eachErr == nil {
				if eachErr = each(fd); eachErr != nil {
					d.cancel() // stop git; the rest is drained unread
				}
			}
		}
		for range got {
		}
	}()
	<-d.read
	diffErr := d.cmd.Wait()
	wErr := <-d.werr
	<-joined
	blobErr := d.blobs.wait()
	switch {
	case eachErr != nil && d.ctx.Err() != nil && diffErr != nil:
		return PatchInfo{}, eachErr // git was stopped because of it
	case diffErr != nil:
		return PatchInfo{}, d.r.failure(d.ctx, d.args, d.stderr.String(), diffErr)
	case d.rerr != nil:
		return PatchInfo{}, d.rerr
	case eachErr != nil:
		return PatchInfo{}, eachErr
	}
	if err := errors.Join(readErr, wErr, blobErr); err != nil {
		return PatchInfo{}, fmt.Errorf("git cat-file: %w", err)
	}
	return PatchInfo{SHA256: hex.EncodeToString(d.sum), Size: d.size, BlobsTook: blobsTook}, nil
}

// patchBlob is the content of an added file from its part of the patch
// (every line of its one hunk is added), ok only when it hashes to id,
// the blob the patch names: what git's diff machinery printed is then
// the blob, byte for byte, whatever configuration or attributes are in
// play. Anything else (a patch shape it does not expect, a hash that
// differs) is not ok, and the caller reads the blob from git. Of a blob
// over maxBlob bytes (< 0: no limit) only the first BlobHead bytes are
// kept, as from cat-file; size is the whole blob's.
var patchBlob = func(patch []byte, id string, maxBlob int) (data []byte, size int, ok bool) {
	// The added lines: after the hunk header, each "+…" line; a final
	// "\ No newline at end of file" takes the last newline away.
	var body []byte
	if at := bytes.Index(patch, []byte("\n@@ ")); at >= 0 {
		nl := bytes.IndexByte(patch[at+1:], '\n')
		if nl < 0 {
			return nil, 0, false
		}
		body = patch[at+1+nl+1:]
	}
	noEOL := false
	lines := 0
	for rest := body; len(rest) > 0; lines++ {
		nl := bytes.IndexByte(rest, '\n')
		if nl < 0 {
			return nil, 0, false // git ends every line of a patch
		}
		switch line := rest[:nl]; {
		case len(line) > 0 && line[0] == '+' && !noEOL:
			size += len(line) // the line without its '+', with its newline
		case len(line) > 0 && line[0] == '\\' && lines > 0 && !noEOL:
			noEOL = true
			size--
		default:
			return nil, 0, false
		}
		rest = rest[nl+1:]
	}
	h := objectHash(id)
	if h == nil {
		return nil, 0, false
	}
	keep := size
	if maxBlob >= 0 && size > maxBlob {
		keep = min(size, BlobHead)
	}
	data = make([]byte, 0, keep)
	fmt.Fprintf(h, "blob %d\x00", size)
	written := 0
	if keep == size {
		// The whole blob is kept: it is hashed once, whole, not a line
		// at a time (a hash write per line cost more than the hashing).
		for rest := body; len(rest) > 0; {
			nl := bytes.IndexByte(rest, '\n')
			data = append(data, rest[1:nl]...)
			if len(data) < size {
				data = append(data, '\n')
			}
			rest = rest[nl+1:]
			if len(data) == size {
				break // what is left is the "\ No newline" line
			}
		}
		h.Write(data)
		written = len(data)
	} else {
		put := func(b []byte) {
			h.Write(b)
			if room := keep - len(data); room > 0 {
				data = append(data, b[:min(len(b), room)]...)
			}
			written += len(b)
		}
		for rest := body; len(rest) > 0; {
			nl := bytes.IndexByte(rest, '\n')
			if line := rest[:nl]; line[0] == '+' {
				put(line[1:])
				if written < size {
					put(newline)
				}
			}
			rest = rest[nl+1:]
		}
	}
	if written != size || hex.EncodeToString(h.Sum(nil)) != strings.ToLower(id) {
		return nil, 0, false
	}
	return data, size, true
}

var newline = []byte{'\n'}

// objectHash is the hash git names an object id of id's length with
// (SHA-1 or SHA-256), nil for any other length.
func objectHash(id string) hash.Hash {
	switch len(id) {
	case 40:
		return sha1.New()
	case 64:
		return sha256.New()
	}
	return nil
}

// A section is one file's part of the patch, and its new blob: requested
// from cat-file, or read from the work tree already (worktree), or
// (fromPatch) the blob its added lines should be.
type section struct {
	patch     []byte
	blobID    string
	worktree  []byte
	fromPatch string
}

// patchScanner follows a patch's file headers as the patch arrives. It
// sends each file's new blob id once its header is complete (at its first
// hunk, the next file or the end) — regular files only, not binary ones
// (whose "Binary files" line follows the index line), not submodules —
// and emits each file's part of the patch once the next file starts.
type patchScanner struct {
	send func(id string)
	emit func(section)

	chunk    []byte // the patch since the current file's start, and room
	off      int    // bytes of chunk already scanned (whole lines)
	start    int    // where the current file's part starts in chunk
	id       string // new blob id of the current file's header, "" when none
	skip     bool   // the current file is binary or a submodule
	added    bool   // the current file is new ("new file mode")
	sent     string // the current file's blob: requested, or read into wt
	own      string // the blob the current file's patch holds whole
	inHeader bool

	root *os.Root // the work tree to read blobs from, or nil
	path string   // the current file's new path ("+++ b/…"), "" unknown
	wt   []byte   // the current file's blob, read from the work tree
}

// chunkSize is the size of the chunks the patch is held in (a file whose
// part is larger gets a chunk of its own).
const chunkSize = 1 << 20

// grow makes room to read into: a new chunk, with the current file's
// part so far moved to its start, when the chunk is nearly full. Chunks
// are never reallocated: what was emitted stays where it is.
func (s *patchScanner) grow() {
	if cap(s.chunk)-len(s.chunk) >= 32<<10 {
		return
	}
	open := s.chunk[s.start:]
	c := make([]byte, len(open), max(chunkSize, 2*len(open)+64<<10))
	copy(c, open)
	s.off -= s.start
	s.start = 0
	s.chunk = c
}

func (s *patchScanner) feed() {
	for {
		nl := bytes.IndexByte(s.chunk[s.off:], '\n')
		if nl < 0 {
			return
		}
		s.line(s.off, s.chunk[s.off:s.off+nl])
		s.off += nl + 1
	}
}

func (s *patchScanner) end() {
	if s.off < len(s.chunk) {
		s.line(s.off, s.chunk[s.off:])
		s.off = len(s.chunk)
	}
	s.flush()
	if s.start < len(s.chunk) {
		s.emit(section{patch: s.chunk[s.start:len(s.chunk):len(s.chunk)], blobID: s.sent, worktree: s.wt, fromPatch: s.own})
	}
}

// flush ends the current file's header: its blob is requested, unless it
// has none or is binary or a submodule, or the file is new (its patch has
// all of it).
func (s *patchScanner) flush() {
	switch {
	case !s.inHeader || s.id == "" || s.skip:
	case s.added:
		s.own = s.id
	default:
		if s.root != nil && s.path != "" {
			if data, ok := worktreeBlob(s.root, s.path, s.id); ok {
				s.wt, s.sent = data, s.id
				break
			}
		}
		s.send(s.id)
		s.sent = s.id
	}
	s.inHeader, s.id, s.skip, s.added = false, "", false, false
}

// maxWorktreeBlob bounds a work-tree file read for a blob; a larger one
// is asked of cat-file.
const maxWorktreeBlob = 8 << 20

// worktreeBlob is the blob id as the work-tree file root/path holds it:
// ok only when repofs.ReadRegularIn reads it (inside the work tree, a
// regular file of at most maxWorktreeBlob bytes, no FIFO blocked on) and
// it hashes to id. The work tree belongs to the change's author, and
// only bytes that are the blob itself are ever used.
var worktreeBlob = func(root *os.Root, path, id string) ([]byte, bool) {
	h := objectHash(id)
	if h == nil {
		return nil, false
	}
	data, err := repofs.ReadRegularIn(root, path, maxWorktreeBlob)
	if err != nil {
		return nil, false
	}
	fmt.Fprintf(h, "blob %d\x00", len(data))
	h.Write(data)
	if hex.EncodeToString(h.Sum(nil)) != strings.ToLower(id) {
		return nil, false
	}
	return data, true
}

func (s *patchScanner) line(at int, l []byte) {
	if len(l) == 0 {
		return
	}
	switch l[0] {
	case '+':
		if s.inHeader && s.root != nil && bytes.HasPrefix(l, []byte("+++ b/")) {
			// The new path, when git did not quote it; a name with a
			// space ends in a tab. A quoted one is left to cat-file.
			p := string(l[len("+++ b/"):])
			if strings.Contains(p, " ") {
				p = strings.TrimSuffix(p, "\t")
			}
			s.path = p
		}
		return
	case ' ', '-', '\\':
		return // hunk lines (and the --- header line)
	}
	switch {
	case bytes.HasPrefix(l, []byte("diff --git ")):
		s.flush()
		if at > s.start {
			s.emit(section{patch: s.chunk[s.start:at:at], blobID: s.sent, worktree: s.wt, fromPatch: s.own})
		}
		s.start, s.sent, s.own, s.inHeader = at, "", "", true
		s.path, s.wt = "", nil
	case bytes.HasPrefix(l, []byte("@@ ")):
		s.flush()
	case !s.inHeader:
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
	case bytes.HasPrefix(l, []byte("new file mode ")):
		s.added = true
	case bytes.HasPrefix(l, []byte("Binary files ")), bytes.Equal(l, []byte("GIT binary patch")):
		s.skip = true
	}
}

// each reads cat-file --batch answers until its output ends, calling fn
// with each object's name, content and size (ok false for a missing
// object); of an object over max bytes (max < 0: no limit) only the first
// BlobHead bytes are kept and the rest is read past.
func (b *BlobReader) each(max int, fn func(id string, data []byte, size int, ok bool)) error {
	for {
		id, data, size, ok, err := b.next(max)
		if err == io.EOF && id == "" {
			return nil
		}
		if err != nil {
			return err
		}
		fn(id, data, size, ok)
	}
}

// next reads one cat-file --batch answer as each does (io.EOF with no
// id: the output ended).
func (b *BlobReader) next(max int) (id string, data []byte, size int, ok bool, err error) {
	header, err := b.out.ReadString('\n')
	if err == io.EOF && header == "" {
		return "", nil, 0, false, io.EOF
	}
	if err != nil {
		return "", nil, 0, false, err
	}
	header = strings.TrimSuffix(header, "\n")
	if name, found := strings.CutSuffix(header, " missing"); found {
		return name, nil, 0, false, nil
	}
	if name, found := strings.CutSuffix(header, " ambiguous"); found {
		return name, nil, 0, false, nil
	}
	fields := strings.Fields(header)
	if len(fields) != 3 {
		return "", nil, 0, false, fmt.Errorf("unexpected header %q", header)
	}
	size, err = strconv.Atoi(fields[2])
	if err != nil || size < 0 {
		return "", nil, 0, false, fmt.Errorf("bad size in %q", header)
	}
	keep := size
	if max >= 0 && size > max {
		keep = min(size, BlobHead)
	}
	data = make([]byte, keep)
	if _, err := io.ReadFull(b.out, data); err != nil {
		return "", nil, 0, false, err
	}
	// The rest of a large object, and the newline after every one.
	if _, err := io.CopyN(io.Discard, b.out, int64(size-keep)+1); err != nil {
		return "", nil, 0, false, err
	}
	return fields[0], data, size, true, nil
}

// readHead asks for one object and reads it as each does.
func (b *BlobReader) readHead(id string, max int) (data []byte, size int, ok bool, err error) {
	if strings.ContainsAny(id, "\n") {
		return nil, 0, false, fmt.Errorf("invalid object name %q", id)
	}
	if _, err := io.WriteString(b.in, id+"\n"); err != nil {
		return nil, 0, false, err
	}
	_, data, size, ok, err = b.next(max)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return data, size, ok, err
}

// wait waits for the batch process after its input was closed.
func (b *BlobReader) wait() error {
	if err := b.cmd.Wait(); err != nil {
		return b.r.failure(b.ctx, []string{"cat-file", "--batch"}, b.stderr.String(), err)
	}
	return nil
}
