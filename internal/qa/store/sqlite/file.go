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

// fileMode is the only permission the database file may have; SQLite gives
// its journal the same mode.
const fileMode fs.FileMode = 0o600

// prepareFile enforces the file rules before SQLite touches the path and
// returns the identity of the file that was checked, so that Open can
// confirm SQLite opened that same file. It creates the file (and a missing
// parent directory with 0700) when absent, refuses anything that is not a
// regular file, and tightens looser permissions to 0600.
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
	if fi.Mode().Perm() == fileMode {
		return fi, nil
	}
	// A path-based chmod follows a symlink swapped in after the Lstat; the
	// re-check below (and Open's identity check after SQLite has the file)
	// refuses the store in that case, and the chmod can only have tightened
	// whatever it reached.
	if err := os.Chmod(path, fileMode); err != nil {
		return nil, fmt.Errorf("qa sqlite store %s: set mode 0600: %w", path, err)
	}
	again, err := os.Lstat(path)
	if err != nil {
		return nil, fmt.Errorf("qa sqlite store %s: %w", path, err)
	}
	if err := checkRegular(path, again); err != nil {
		return nil, err
	}
	if !os.SameFile(fi, again) || again.Mode().Perm() != fileMode {
		return nil, fmt.Errorf("qa sqlite store %s: the file changed while its mode was set to 0600; refusing it", path)
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
