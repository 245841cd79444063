package findings

import (
	"errors"
	"fmt"
	"io"
)

// Read decodes and validates a bundle of any supported version. A missing
// version reads as v1; v1 string evidence and impact become structured
// values; severities are read case-insensitively and lower-cased (each
// such value is listed in info.Warnings, and is not an error); unknown
// fields are ignored. The returned bundle's Version is the effective
// version and info.Version the one found in the input.
//
// The error is a *SyntaxError for input that is not a JSON object, and
// Problems when the bundle breaks its version's rules; with Problems the
// partially checked bundle is still returned.
//
// At most DefaultMaxBytes are read (ReadAll takes another limit), and
// reading stops at the first non-space byte when it is not '{'.
func Read(r io.Reader) (*Bundle, ReadInfo, error) {
	data, err := ReadAll(r, DefaultMaxBytes)
	if err != nil {
		return nil, ReadInfo{}, err
	}
	return Parse(data)
}

// Parse is Read over bytes already in memory. The bundle's strings may share
// memory with data, so data must not be modified afterwards.
func Parse(data []byte) (*Bundle, ReadInfo, error) {
	b, info, problems, err := Decode(data, DecodeOptions{})
	if err != nil {
		return nil, info, err
	}
	if len(problems) > 0 {
		return b, info, problems
	}
	return b, info, nil
}

// ReadFile reads a bundle from a file; errors name the file.
func ReadFile(path string) (*Bundle, ReadInfo, error) {
	data, err := ReadBytes(path)
	if err != nil {
		return nil, ReadInfo{}, err
	}
	b, info, err := Parse(data)
	if err != nil {
		return b, info, fmt.Errorf("%s: %w", path, err)
	}
	return b, info, nil
}

// DefaultMaxBytes is the size limit of Read, ReadFile and ReadBytes:
// 4 GiB, over three times the 1M-finding bundle of bench/findings.sh
// (about 1.2 GB). ReadAll and ReadBytesLimit take another.
const DefaultMaxBytes int64 = 4 << 30

// ErrTooLarge is wrapped by the error for input over the size limit.
var ErrTooLarge = errors.New("findings bundle size limit exceeded")

// TooLargeError reports input larger than Limit bytes. Reading stopped at
// the limit (or before reading, for a file whose size says so).
type TooLargeError struct {
	Limit int64
}

func (e *TooLargeError) Error() string {
	return "larger than the " + FormatBytes(e.Limit) + " size limit of a findings bundle"
}

// Is makes errors.Is(err, ErrTooLarge) true.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// FormatBytes spells a byte count as the limits are documented: "4 GiB",
// "512 MiB", "100 bytes".
func FormatBytes(n int64) string {
	for _, u := range []struct {
		size int64
		name string
	}{{1 << 40, "TiB"}, {1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d %s", n/u.size, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

// ReadAll reads a bundle's bytes from r, at most limit of them (limit <= 0
// means DefaultMaxBytes): more is a *TooLargeError. It looks at the input
// as it arrives and stops at once when the first byte that is not JSON
// white space is not '{', returning the *SyntaxError Decode would give
// for it, so a stream that cannot be a bundle (a pipe of NUL bytes, an
// array, a binary file) is never read to its end.
func ReadAll(r io.Reader, limit int64) ([]byte, error) {
	return readLimited(r, 0, limit)
}

// readLimited is ReadAll with a size hint (a regular file's size) for the
// first allocation.
func readLimited(r io.Reader, hint, limit int64) ([]byte, error) {
	if limit <= 0 {
		limit = DefaultMaxBytes
	}
	size := int64(4 << 10)
	if hint > 0 {
		size = min(hint, limit) + 1 // +1: a read at EOF needs room
	}
	buf := make([]byte, 0, size)
	sniffed := false
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		room := buf[len(buf):cap(buf)]
		if over := limit + 1 - int64(len(buf)); int64(len(room)) > over {
			room = room[:over]
		}
		n, err := r.Read(room)
		start := len(buf)
		buf = buf[:start+n]
		if !sniffed {
			for i := start; i < len(buf); i++ {
				switch buf[i] {
				case ' ', '\t', '\n', '\r':
					continue
				case '{':
					sniffed = true
				default:
					_, _, _, derr := Decode(buf[:i+1], DecodeOptions{})
					if derr == nil {
						derr = errors.New("not a findings bundle")
					}
					return nil, derr
				}
				break
			}
		}
		if int64(len(buf)) > limit {
			return nil, &TooLargeError{Limit: limit}
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// ReadBytes reads a bundle file's bytes, refusing what cannot be a bundle
// (directories, devices, empty files, files over DefaultMaxBytes, input
// whose first non-space byte is not '{') with a message that names the
// file and says so.
func ReadBytes(path string) ([]byte, error) {
	return ReadBytesLimit(path, DefaultMaxBytes)
}

// ReadBytesLimit is ReadBytes with another size limit (<= 0 means
// DefaultMaxBytes). A regular file over the limit is refused by its size,
// before anything is read; a FIFO is read up to the limit.
func ReadBytesLimit(path string, limit int64) ([]byte, error) {
	if limit <= 0 {
		limit = DefaultMaxBytes
	}
	f, err := OpenBundle(path, limit)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	defer f.Close()
	var hint int64
	if fi.Mode().IsRegular() {
		hint = fi.Size()
	}
	data, err := readLimited(f, hint, limit)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return data, nil
}
