package sqlite

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrNotRegularFile is wrapped by Open when the store path is a symlink,
// directory, FIFO, socket or device (the anchor's "session store path must
// be a regular file").
var ErrNotRegularFile = errors.New("session store path must be a regular file")

// fileMode is the mode of a database file the store creates; SQLite gives
// its journal the same mode as the database.
const fileMode fs.FileMode = 0o600

// privateMask are the bits an existing database file may not keep: group
// and other. Open clears them and never adds a bit, so a 0400 file stays
// 0400 (and is then refused as not writable) rather than becoming 0600.
const privateMask fs.FileMode = 0o077

// prepareFile enforces the file rules before SQLite touches the path and
// returns the identity of the file that was checked, so that Open can
// confirm SQLite opened that same file. It creates the file (and a missing
// parent directory with 0700) when absent, refuses anything that is not a
// regular file, and clears group and other permission bits: modes are only
// ever tightened, never widened (0644 becomes 0600, 0400 stays 0400).
//
// It opens the file itself only when creating it: SQLite's POSIX locks are
// per process, and closing any descriptor of a database file that another
// Store in this process has open would silently drop that Store's locks.
func prepareFile(path string) (fs.FileInfo, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		if err := create(path); err != nil {
			return nil, err
		}
		fi, err = os.Lstat(path)
	}
	if err != nil {
		return nil, fmt.Errorf("qa sqlite store %s: %w", path, err)
	}
	if err := checkRegular(path, fi); err != nil {
		return nil, err
	}
	perm := fi.Mode().Perm()
	want := perm &^ privateMask
	if perm == want {
		return fi, nil
	}
	// A path-based chmod follows a symlink swapped in after the Lstat; the
	// re-check below (and Open's identity check after SQLite has the file)
	// refuses the store in that case. The mode set is the checked file's
	// with its group and other bits cleared, never one with more bits.
	if err := os.Chmod(path, want); err != nil {
		return nil, fmt.Errorf("qa sqlite store %s: set mode %04o (clear group and other bits): %w", path, want, err)
	}
	again, err := os.Lstat(path)
	if err != nil {
		return nil, fmt.Errorf("qa sqlite store %s: %w", path, err)
	}
	if err := checkRegular(path, again); err != nil {
		return nil, err
	}
	if !os.SameFile(fi, again) || again.Mode().Perm() != want {
		return nil, fmt.Errorf("qa sqlite store %s: the file changed while its mode was set to %04o; refusing it", path, want)
	}
	return again, nil
}

// create makes the database file with O_EXCL and mode 0600 (O_EXCL also
// refuses to follow a symlink, dangling or not). Losing the race to another
// process creating it is fine: the caller checks what is there.
func create(path string) error {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("qa sqlite store %s: create parent directory: %w", path, err)
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fileMode)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("qa sqlite store %s: create: %w", path, err)
	}
	// The umask may only have removed bits, but set the mode explicitly so
	// the file never depends on it.
	err = f.Chmod(fileMode)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("qa sqlite store %s: create: %w", path, err)
	}
	return nil
}

func checkRegular(path string, fi fs.FileInfo) error {
	if fi.Mode().IsRegular() {
		return nil
	}
	return fmt.Errorf("qa sqlite store %s: %w; found %s", path, ErrNotRegularFile, describe(fi.Mode()))
}

func describe(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symlink (symlinks are refused: point the store at the real file)"
	case m.IsDir():
		return "a directory (give a file path inside it)"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0, m&fs.ModeCharDevice != 0:
		return "a device"
	default:
		return "a non-regular file (" + m.Type().String() + ")"
	}
}
