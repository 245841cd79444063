package findings

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// Streaming decode: Gate and validation of a bundle read from a file or a
// pipe through a fixed window instead of the whole file in memory. The
// decoder (decode.go) works on d.data as always; with a stream, d.data is
// a window of the input, and at its safe points, before each member of
// the bundle object and each element of its findings array, fill makes
// sure the window holds that whole member or element and the byte after
// it (or the input has ended). Everything before is discarded there: a
// finding's strings are only valid during OnFinding, and strings kept
// past it (the bundle's header) are copied. A member or element larger
// than the window grows it; a bundle whose "version" is not its first
// member is read in whole before anything is discarded (Decode needs the
// version first); problems and errors are exactly Decode's.

// streamWindow is the window's starting size: 1 MiB, about 900 findings
// of the usual size (4 MiB took 6 MB more of peak RSS on a 1.2 GB bundle
// for no gain in speed: reads of 1 MiB are as fast).
var streamWindow = 1 << 20

// firstRead is the size of the first read, before the input is known to
// start like a bundle.
const firstRead = 4 << 10

// streamDone, when set (by tests), sees every stream when its decode ends.
var streamDone func(*stream)

type stream struct {
	r     io.Reader
	buf   []byte
	eof   bool
	limit int64
	read  int64
	// base is the input offset of d.data[0]; line and col are the line
	// and column there, as fail counts them.
	base      int64
	line, col int
	pin       int // > 0: nothing may be discarded (the version prescan)
	inFinding int // > 0: strings are only needed during OnFinding
	// shortcut is set once the first "findings" member was let through
	// at its '[' (its elements are filled one by one); a second one is
	// skipped whole, so it must be in the window whole.
	shortcut bool
	// filesShortcut is the same for the first "files" member.
	filesShortcut bool
}

// readFailure carries an error of the reader (or the size limit) out of
// the decoder, as a panic, like SyntaxError.
type readFailure struct{ err error }

// DecodeReader is Decode over a reader, for streaming use: opts.OnFinding
// must be set (the findings are handed to it and not kept, and their
// strings are valid only during the call). At most limit bytes are read
// (<= 0: DefaultMaxBytes); more is a *TooLargeError. Memory stays within
// a few MiB whatever the size of the bundle, as long as its version comes
// first (diffpal and DiffPal write it first). The error is a *SyntaxError,
// as Decode's, or the reader's error.
func DecodeReader(r io.Reader, limit int64, opts DecodeOptions) (b *Bundle, info ReadInfo, problems Problems, err error) {
	if opts.OnFinding == nil && opts.OnFindingAt == nil {
		return nil, ReadInfo{}, nil, errors.New("findings.DecodeReader: OnFinding or OnFindingAt is required")
	}
	if limit <= 0 {
		limit = DefaultMaxBytes
	}
	st := &stream{r: r, buf: make([]byte, 0, max(streamWindow, 1)), limit: limit, line: 1, col: 1}
	d := &decoder{opts: opts, st: st}
	d.data = st.buf
	if streamDone != nil {
		defer streamDone(st)
	}
	defer func() {
		if rec := recover(); rec != nil {
			switch e := rec.(type) {
			case *SyntaxError:
				b, problems, err = nil, nil, e
			case readFailure:
				b, problems, err = nil, nil, e.err
			default:
				panic(rec)
			}
		}
	}()
	b = d.document()
	return b, d.info, d.v.problems, nil
}

// GateReader is Gate over a reader, streaming (see DecodeReader).
func GateReader(r io.Reader, limit int64, policy *Policy) (GateResult, ReadInfo, Problems, error) {
	var t tally
	_, info, problems, err := DecodeReader(r, limit, DecodeOptions{OnFinding: func(f *Finding, valid bool) {
		if policy != nil {
			t.add(f, policy.Blocks(f))
		} else {
			t.add(f, f.Blocking)
		}
	}})
	res := t.result()
	res.Recomputed = policy != nil
	return res, info, problems, err
}

// OpenBundle opens a bundle file for DecodeReader with ReadBytesLimit's
// checks and messages (a missing file, a directory, a device, a regular
// file over limit are refused before anything is read).
func OpenBundle(path string, limit int64) (*os.File, error) {
	if limit <= 0 {
		limit = DefaultMaxBytes
	}
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s: no such file (write one with `diffpal review`, or pass the bundle's path)", path)
		}
		return nil, err
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("%s: is a directory, not a findings bundle", path)
	}
	if !fi.Mode().IsRegular() && fi.Mode()&os.ModeNamedPipe == 0 {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	if fi.Mode().IsRegular() && fi.Size() > limit {
		return nil, fmt.Errorf("%s: %w (it has %d bytes)", path, &TooLargeError{Limit: limit}, fi.Size())
	}
	return os.Open(path)
}

func (d *decoder) takeStreamed() bool {
	s := d.streamNext
	d.streamNext = false
	return s && d.st != nil
}

// fill makes the window hold the member or element at d.pos whole, and
// the next non-space byte after it, unless the input ends first. member
// is set for the bundle object's members: its first "findings" array is
// complete enough at its '['.
func (d *decoder) fill(member bool) {
	st := d.st
	if st == nil {
		return
	}
	findings := member && st.pin == 0 && !st.shortcut
	files := member && st.pin == 0 && !st.filesShortcut && d.filesStreamable()
	for !st.eof {
		switch complete(d.data, d.pos, findings, files) {
		case wholeValue:
			return
		case atFindings:
			st.shortcut = true
			return
		case atFiles:
			st.filesShortcut = true
			return
		}
		d.more()
	}
}

// filesStreamable reports whether the bundle's "files" member, when it is
// an array, is decoded element by element (d.files): its version's rules
// know it as an array. Otherwise it is skipped or refused whole, so it
// must be in the window whole.
func (d *decoder) filesStreamable() bool {
	if d.v.rules == nil {
		return false
	}
	r := d.v.rules.objs[kBundle]
	if r == nil {
		return false
	}
	id := r.lookup("files")
	return id == bFiles && r.props[id] != nil && r.props[id].types&tArray != 0
}

// fillByte makes the window hold a non-space byte at or after d.pos,
// unless the input ends first.
func (d *decoder) fillByte() {
	st := d.st
	if st == nil {
		return
	}
	for !st.eof {
		for i := d.pos; i < len(d.data); i++ {
			switch d.data[i] {
			case ' ', '\t', '\n', '\r':
				continue
			}
			return
		}
		d.more()
	}
}

// more discards what was consumed (unless pinned) and reads once more,
// growing the window when it is full.
func (d *decoder) more() {
	st := d.st
	if st.pin == 0 && d.pos > 0 {
		gone := d.data[:d.pos]
		if nl := bytes.Count(gone, []byte{'\n'}); nl > 0 {
			st.line += nl
			st.col = len(gone) - bytes.LastIndexByte(gone, '\n')
		} else {
			st.col += len(gone)
		}
		st.base += int64(d.pos)
		n := copy(st.buf[:cap(st.buf)], d.data[d.pos:])
		d.data = st.buf[:n]
		d.pos = 0
	}
	if len(d.data) == cap(d.data) {
		grown := make([]byte, len(d.data), 2*cap(d.data))
		copy(grown, d.data)
		st.buf = grown
		d.data = grown

	}
	room := d.data[len(d.data):cap(d.data)]
	if st.read == 0 && len(room) > firstRead {
		// Input that is not a bundle at all (a pipe of NUL bytes) is
		// rejected after its first bytes, as ReadAll does.
		room = room[:firstRead]
	}
	if over := st.limit + 1 - st.read; int64(len(room)) > over {
		room = room[:over]
	}
	n, err := st.r.Read(room)
	st.read += int64(n)
	d.data = d.data[:len(d.data)+n]
	if st.read > st.limit {
		panic(readFailure{&TooLargeError{Limit: st.limit}})
	}
	switch {
	case err == io.EOF:
		st.eof = true
	case err != nil:
		panic(readFailure{err})
	}
}

const (
	incomplete = iota
	wholeValue
	atFindings
	atFiles
)

// complete scans data from p over one member ("key": value) or element
// and the delimiter after it (',', '}' or ']' at its own level; a closing
// bracket right away is complete too). It reports incomplete when data
// ends first. Only strings and brackets are tracked: whether the bytes are
// valid JSON is the decoder's business, which finds out within what was
// scanned. Nesting deeper than the decoder accepts is complete at once
// (the decoder stops there). With findings set, a member `"findings": [`
// is atFindings at its '['; with files set, `"files": [` is atFiles.
func complete(data []byte, p int, findings, files bool) int {
	if findings {
		switch arrayMember(data, p, `"findings"`) {
		case 0:
			return incomplete
		case 1:
			return atFindings
		}
	}
	if files {
		switch arrayMember(data, p, `"files"`) {
		case 0:
			return incomplete
		case 1:
			return atFiles
		}
	}
	depth := 0
	for i := p; i < len(data); i++ {
		switch data[i] {
		case '"':
			end := stringEnd(data, i+1)
			if end < 0 {
				return incomplete
			}
			i = end - 1
		case '{', '[':
			depth++
			if depth > maxDepth {
				return wholeValue
			}
		case '}', ']':
			if depth == 0 {
				return wholeValue
			}
			depth--
		case ',':
			if depth == 0 {
				return wholeValue
			}
		}
	}
	return incomplete
}

// arrayMember reports whether the member at p is key followed by ':' and
// '[': 1 when it is, 0 when data ends before that is known, -1 otherwise.
func arrayMember(data []byte, p int, key string) int {
	q := skipWS(data, p)
	if len(data)-q < len(key) {
		if strings.HasPrefix(key, string(data[q:])) {
			return 0
		}
		return -1
	}
	if string(data[q:q+len(key)]) != key {
		return -1
	}
	q = skipWS(data, q+len(key))
	if q < len(data) && data[q] == ':' {
		q = skipWS(data, q+1)
	}
	switch {
	case q >= len(data):
		return 0
	case data[q] == '[':
		return 1
	}
	return -1
}

func skipWS(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index after the quote closing the string whose
// content starts at start, or -1 when data ends first.
func stringEnd(data []byte, start int) int {
	for i := start; ; {
		k := bytes.IndexByte(data[i:], '"')
		if k < 0 {
			return -1
		}
		q := i + k
		n := 0
		for b := q - 1; b >= start && data[b] == '\\'; b-- {
			n++
		}
		if n%2 == 0 {
			return q + 1
		}
		i = q + 1
	}
}
