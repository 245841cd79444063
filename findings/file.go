package findings

import (
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"strings"
)

// BundleFile is a bundle read from a seekable file through DecodeReader's
// window: ScanFile decodes and validates it once, keeping its header and
// where each finding lies (16 bytes per finding), and the findings can
// then be read again in order (Each) or one by one (Finding), as often as
// a writer needs, without the bundle ever being in memory. It is what
// `diffpal sarif`, `upgrade` and `render` read large bundles with.
type BundleFile struct {
	r     io.ReaderAt
	size  int64
	limit int64
	n     int
	// at is where each finding lies, recorded by the first Each (only
	// random access needs it: 16 bytes per finding).
	at []span
	// Header is the bundle without its findings (Findings is empty).
	Header *Bundle
	// Info is what the decode found, as Decode's.
	Info ReadInfo
}

type span struct {
	off int64
	n   int64
}

// ScanFile decodes the bundle in r (size bytes, read from offset 0)
// through DecodeReader, validating it; each, when set, sees every finding
// in order (its strings are valid only during the call). problems and err
// are DecodeReader's: with a non-nil err the BundleFile is nil; with problems
// it is returned but should not be written out.
func ScanFile(r io.ReaderAt, size, limit int64, each func(f *Finding)) (*BundleFile, Problems, error) {
	if limit <= 0 {
		limit = DefaultMaxBytes
	}
	bf := &BundleFile{r: r, size: size, limit: limit}
	hdr, info, problems, err := DecodeReader(io.NewSectionReader(r, 0, size), limit, DecodeOptions{OnFinding: func(f *Finding, _ bool) {
		bf.n++
		if each != nil {
			each(f)
		}
	}})
	if err != nil {
		return nil, nil, err
	}
	bf.Header, bf.Info = hdr, info
	return bf, problems, nil
}

// Len is the number of findings (elements of the findings array that are
// objects).
func (bf *BundleFile) Len() int { return bf.n }

// Each decodes the findings again, in order, handing each to fn with its
// index; the finding's strings are valid only during the call. The first
// error fn returns stops the decode and is returned. The first complete
// Each also records where each finding lies, for Finding.
func (bf *BundleFile) Each(fn func(i int, f *Finding) error) error {
	i := 0
	var at []span
	record := bf.at == nil && bf.n > 0
	if record {
		at = make([]span, 0, bf.n)
	}
	_, _, _, err := DecodeReader(io.NewSectionReader(bf.r, 0, bf.size), bf.limit, DecodeOptions{OnFindingAt: func(f *Finding, _ bool, start, end int64) {
		if record && i < bf.n {
			at = append(at, span{start, end - start})
		}
		if err := fn(i, f); err != nil {
			panic(readFailure{err})
		}
		i++
	}})
	if err == nil && i != bf.n {
		err = fmt.Errorf("findings: the bundle changed while it was read (%d findings, then %d)", bf.n, i)
	}
	if record && err == nil {
		bf.at = at
	}
	return err
}

// Finding decodes finding i again, alone: the value the scan and Each
// hand over. Its strings are valid until the next call of Finding.
func (bf *BundleFile) Finding(i int) (*Finding, error) {
	if i < 0 || i >= bf.n {
		return nil, fmt.Errorf("findings: no finding %d (the bundle has %d)", i, bf.n)
	}
	if bf.at == nil {
		if err := bf.Each(func(int, *Finding) error { return nil }); err != nil {
			return nil, err
		}
	}
	s := bf.at[i]
	var head string
	if bf.Info.Version != "" {
		head = `{"version":` + string(appendGoJSONString(nil, bf.Info.Version)) + `,"findings":[`
	} else {
		head = `{"findings":[`
	}
	buf := make([]byte, len(head), len(head)+int(s.n)+2)
	copy(buf, head)
	buf = buf[:len(head)+int(s.n)]
	if _, err := bf.r.ReadAt(buf[len(head):], s.off); err != nil {
		return nil, err
	}
	buf = append(buf, "]}"...)
	var out *Finding
	_, _, _, err := Decode(buf, DecodeOptions{OnFinding: func(f *Finding, _ bool) {
		c := *f
		out = &c
	}})
	if err == nil && out == nil {
		err = errors.New("no finding")
	}
	if err != nil {
		return nil, fmt.Errorf("findings: finding %d changed while the bundle was read: %w", i, err)
	}
	return out, nil
}

// Reader hands out the findings of a BundleFile in any order (Get),
// decoding them in one sequential pass as long as they are asked for in
// order, or nearly (the common case: a bundle already in the order
// wanted), and one by one (Finding) otherwise. A finding's strings are
// valid until the next Get.
type Reader struct {
	bf      *BundleFile
	next    func() (int, *Finding, bool)
	stop    func()
	pos     int  // the index the pass gives next
	started bool // the pass was started (it is not restarted)
	err     error
}

// readAhead is how far ahead of the sequential pass a Get may be and
// still be reached by decoding (and skipping) the findings between.
const readAhead = 64

// Reader returns a Reader; Close it.
func (bf *BundleFile) Reader() *Reader { return &Reader{bf: bf} }

// Get returns finding i.
func (r *Reader) Get(i int) (*Finding, error) {
	if !r.started && i <= readAhead {
		r.started = true
		r.next, r.stop = iter.Pull2(func(yield func(int, *Finding) bool) {
			err := r.bf.Each(func(i int, f *Finding) error {
				if !yield(i, f) {
					return errStop
				}
				return nil
			})
			if err != nil && err != errStop {
				r.err = err
			}
		})
	}
	if r.next != nil && i >= r.pos && i-r.pos <= readAhead {
		for {
			j, f, ok := r.next()
			if !ok {
				r.Close()
				if r.err != nil {
					return nil, r.err
				}
				return nil, fmt.Errorf("findings: no finding %d (the bundle has %d)", i, r.pos)
			}
			r.pos = j + 1
			if j == i {
				return f, nil
			}
		}
	}
	return r.bf.Finding(i)
}

// Close ends the sequential pass, if one is under way.
func (r *Reader) Close() {
	if r.stop != nil {
		r.stop()
		r.next, r.stop = nil, nil
	}
}

var errStop = errors.New("stop")

// OpenFile opens a bundle file for ScanFile with ReadBytesLimit's checks
// and messages: a missing file, a directory, a device or a regular file
// over limit is refused before anything is read, and so is a file whose
// first byte that is not white space is not '{'. A named pipe is copied to
// a temporary file first (spool), as standard input is. close closes the
// file and removes any temporary copy.
func OpenFile(path string, limit int64) (r io.ReaderAt, size int64, close func(), err error) {
	f, err := OpenBundle(path, limit)
	if err != nil {
		return nil, 0, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, nil, err
	}
	if !fi.Mode().IsRegular() {
		defer f.Close()
		r, size, close, err := Spool(f, limit)
		if err != nil {
			return nil, 0, nil, fmt.Errorf("%s: %w", path, err)
		}
		return r, size, close, nil
	}
	if err := sniff(io.NewSectionReader(f, 0, fi.Size()), nil, limit); err != nil {
		f.Close()
		return nil, 0, nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, fi.Size(), func() { f.Close() }, nil
}

// Spool copies a stream (standard input, a pipe) to a temporary file, for
// ScanFile, with ReadAll's limit and early refusal of what cannot be a
// bundle: reading stops at the first byte that is not white space when it
// is not '{'. close removes the file.
func Spool(r io.Reader, limit int64) (io.ReaderAt, int64, func(), error) {
	tmp, err := os.CreateTemp("", "diffpal-bundle-*.json")
	if err != nil {
		return nil, 0, nil, err
	}
	os.Remove(tmp.Name()) // unlinked: gone with the last descriptor
	if err := sniff(r, tmp, limit); err != nil {
		tmp.Close()
		return nil, 0, nil, err
	}
	fi, err := tmp.Stat()
	if err != nil {
		tmp.Close()
		return nil, 0, nil, err
	}
	return tmp, fi.Size(), func() { tmp.Close() }, nil
}

// sniff reads r as readLimited does — at most limit bytes, refusing input
// whose first byte that is not white space is not '{' with Decode's error
// for it — copying what it reads to dst; with dst nil it stops at that
// first byte.
func sniff(r io.Reader, dst io.Writer, limit int64) error {
	if limit <= 0 {
		limit = DefaultMaxBytes
	}
	buf := make([]byte, 64<<10)
	var total int64
	sniffed := false
	for {
		room := buf
		if !sniffed && total == 0 {
			room = buf[:firstRead]
		}
		if over := limit + 1 - total; int64(len(room)) > over {
			room = room[:over]
		}
		n, err := r.Read(room)
		chunk := room[:n]
		total += int64(n)
		if !sniffed {
			i := 0
			for i < len(chunk) && strings.IndexByte(" \t\n\r", chunk[i]) >= 0 {
				i++
			}
			if i < len(chunk) {
				if chunk[i] != '{' {
					_, _, _, derr := Decode(chunk[:i+1], DecodeOptions{})
					if derr == nil {
						derr = errors.New("not a findings bundle")
					}
					return derr
				}
				sniffed = true
			}
		}
		if total > limit {
			return &TooLargeError{Limit: limit}
		}
		if dst == nil && sniffed {
			return nil
		}
		if dst != nil && n > 0 {
			if _, werr := dst.Write(chunk); werr != nil {
				return werr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// Counter counts findings one at a time as Tally does.
type Counter struct{ t tally }

// Add counts f with its stored blocking flag.
func (c *Counter) Add(f *Finding) { c.t.add(f, f.Blocking) }

// Result is the counts so far.
func (c *Counter) Result() GateResult { return c.t.result() }

// Clone is a deep copy of f: its strings and nested objects are its own,
// so it outlives a streamed finding.
func (f *Finding) Clone() Finding {
	c := *f
	for _, s := range []*string{&c.ID, &c.ReviewID, &c.StableID, &c.RuleID, &c.Category, (*string)(&c.Severity), &c.Path, &c.Title, &c.Message, &c.Suggestion, &c.Provider} {
		*s = strings.Clone(*s)
	}
	cloneSpan := func(s *Span) *Span {
		if s == nil {
			return nil
		}
		v := *s
		v.Path, v.Side = strings.Clone(v.Path), strings.Clone(v.Side)
		return &v
	}
	c.ChangedSpan, c.SupportingSpan = cloneSpan(c.ChangedSpan), cloneSpan(c.SupportingSpan)
	if e := c.Evidence; e != nil {
		v := *e
		v.Anchor, v.ReasoningBasis, v.Source = strings.Clone(v.Anchor), strings.Clone(v.ReasoningBasis), strings.Clone(v.Source)
		c.Evidence = &v
	}
	if m := c.Impact; m != nil {
		v := *m
		v.Summary, v.Scope = strings.Clone(v.Summary), strings.Clone(v.Scope)
		c.Impact = &v
	}
	return c
}
