// Package repofs reads files that the repository under review names —
// its config, rule packs, ignore file and changed files — without leaving
// the repository: the path must be relative and clean, every symlink on
// the way must resolve inside the repository, the file must be a regular
// file (no device, FIFO, socket or /proc entry) and it is read with a size
// limit. Paths the invoking user passes on the command line do not go
// through here; they are the user's to choose.
package repofs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// ErrOutside is returned for a path that leaves the repository.
var ErrOutside = errors.New("outside the repository")

// CheckRel validates a repository-relative, slash-separated path: not
// absolute, no drive letter, no "..", no NUL, not empty.
func CheckRel(rel string) error {
	switch {
	case rel == "" || rel == ".":
		return errors.New("empty path")
	case strings.ContainsRune(rel, 0):
		return errors.New("path contains a NUL byte")
	case strings.HasPrefix(rel, "/") || strings.HasPrefix(rel, `\`) || filepath.IsAbs(rel) || len(rel) >= 2 && rel[1] == ':':
		return fmt.Errorf("absolute path: %w", ErrOutside)
	}
	for _, seg := range strings.Split(strings.ReplaceAll(rel, `\`, "/"), "/") {
		if seg == ".." {
			return fmt.Errorf("path contains \"..\": %w", ErrOutside)
		}
	}
	return nil
}

// Clean returns rel cleaned, after CheckRel.
func Clean(rel string) (string, error) {
	if err := CheckRel(rel); err != nil {
		return "", err
	}
	return path.Clean(rel), nil
}

// Resolve returns the real location of root/rel, refusing a path whose
// symlinks lead outside root. The file itself need not exist (a missing
// file returns os.ErrNotExist wrapped).
func Resolve(root, rel string) (string, error) {
	rel, err := Clean(rel)
	if err != nil {
		return "", err
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", err
	}
	full := filepath.Join(realRoot, filepath.FromSlash(rel))
	real, err := filepath.EvalSymlinks(full)
	if err != nil {
		return "", err
	}
	if !Within(realRoot, real) {
		return "", fmt.Errorf("a symlink resolves to %s: %w", real, ErrOutside)
	}
	return real, nil
}

// Within reports whether p is root or below it (both cleaned, absolute).
func Within(root, p string) bool {
	r, err := filepath.Rel(root, p)
	return err == nil && r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator)) && !filepath.IsAbs(r)
}

// ReadFile reads root/rel within the rules above, at most max bytes.
func ReadFile(root, rel string, max int64) ([]byte, error) {
	real, err := Resolve(root, rel)
	if err != nil {
		return nil, err
	}
	return ReadRegular(real, max)
}

// ReadRegular opens path without following a final symlink and without
// blocking on a FIFO, refuses anything but a regular file, and reads at
// most max bytes (a larger file is an error naming the limit).
func ReadRegular(p string, max int64) ([]byte, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|openFlags, 0)
	return readOpened(f, err, max)
}

// ReadRegularIn is ReadFile through root, opened once, for paths the
// repository names read by the thousand, as a review reads its changed
// files: rel must pass CheckRel, and a symlink on the way, the last one
// too, is followed only while it stays inside root (os.Root), without
// resolving every symlink of the path anew for each file as Resolve
// does. The file must be a regular one, read at most max bytes, without
// blocking on a FIFO.
func ReadRegularIn(root *os.Root, rel string, max int64) ([]byte, error) {
	rel, err := Clean(rel)
	if err != nil {
		return nil, err
	}
	f, err := root.OpenFile(filepath.FromSlash(rel), os.O_RDONLY|openFlags, 0)
	return readOpened(f, err, max)
}

// readOpened is the rest of ReadRegular once its file is opened (f, or
// the error opening it): it closes f.
func readOpened(f *os.File, err error, max int64) ([]byte, error) {
	if err != nil {
		if isLoop(err) {
			return nil, errors.New("is a symlink")
		}
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%s)", Kind(fi.Mode()))
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("is %d bytes, over the limit of %d bytes", fi.Size(), max)
	}
	// A file that grows while it is read is still cut at the limit.
	return readSized(f, fi.Size(), max)
}

// readSized is ReadAtMost for a file whose size was just read: its
// buffer is sized for it, so that a file is read in one call and its
// end seen in another (io.ReadAll starts at 512 bytes and reads into a
// growing buffer, a system call each time: ~9 for a 7 KB source file,
// and a review reads a thousand of them). A file that changed size
// meanwhile is still read whole, or refused past max.
func readSized(r io.Reader, size, limit int64) ([]byte, error) {
	buf := make([]byte, 0, min(max(size, 0), limit)+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return nil, fmt.Errorf("is over the limit of %d bytes", limit)
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// ReadAtMost reads r to its end, failing once it passes max bytes (it
// never holds more than max+1).
func ReadAtMost(r io.Reader, max int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("is over the limit of %d bytes", max)
	}
	return data, nil
}

// Kind names a file mode's type for messages ("a FIFO", "a symlink").
func Kind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeSymlink != 0:
		return "a symlink"
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return m.Type().String()
}
