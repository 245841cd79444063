package sqlite

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/diffpalhq/diffpal/internal/qa/store"
)

func mode(t *testing.T, path string) fs.FileMode {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func TestNewFileIsPrivate(t *testing.T) {
	old := syscall.Umask(0) // the most permissive umask must not matter
	defer syscall.Umask(old)
	dir := filepath.Join(t.TempDir(), "state", "qa")
	path := filepath.Join(dir, "sessions.db")
	s := mustOpen(t, path)
	put(t, s, record("qar-a", 0, "active", false, t0.Add(time.Hour)), store.Absent)
	if m := mode(t, path); m != 0o600 {
		t.Fatalf("database mode %v, want 0600", m)
	}
	if m := mode(t, dir); m != 0o700 {
		t.Fatalf("created parent directory mode %v, want 0700", m)
	}
	// No journal or WAL file is left beside the database at rest.
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("directory holds %d entries, want only the database", len(entries))
	}
}

func TestLoosePermissionsAreTightened(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, path string)
	}{
		{"empty file", func(t *testing.T, path string) {
			if err := os.WriteFile(path, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"existing store", func(t *testing.T, path string) { seedAt(t, path) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := dbPath(t)
			tc.setup(t, path)
			if err := os.Chmod(path, 0o666); err != nil {
				t.Fatal(err)
			}
			mustOpen(t, path)
			if m := mode(t, path); m != 0o600 {
				t.Fatalf("mode after Open %v, want 0600", m)
			}
		})
	}
}

func notRegular(t *testing.T, path, kind string) {
	t.Helper()
	_, err := Open(bg, path)
	if !errors.Is(err, ErrNotRegularFile) {
		t.Fatalf("Open(%s) = %v, want ErrNotRegularFile", path, err)
	}
	msg := err.Error()
	if !strings.Contains(msg, path) || !strings.Contains(msg, "must be a regular file") || !strings.Contains(msg, kind) {
		t.Fatalf("error does not name the path, the rule and what was found: %v", err)
	}
}

func TestSymlinkRefused(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "real.db")
	seedAt(t, target)
	before := readFile(t, target)
	if err := os.Chmod(target, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.db")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	notRegular(t, link, "symlink")
	if m := mode(t, target); m != 0o644 {
		t.Fatalf("refusing the symlink still changed its target's mode to %v", m)
	}
	if string(before) != string(readFile(t, target)) {
		t.Fatal("refusing the symlink changed its target")
	}

	dangling := filepath.Join(dir, "dangling.db")
	if err := os.Symlink(filepath.Join(dir, "nowhere.db"), dangling); err != nil {
		t.Fatal(err)
	}
	notRegular(t, dangling, "symlink")
	if _, err := os.Lstat(filepath.Join(dir, "nowhere.db")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a dangling symlink's target was created: %v", err)
	}
}

func TestDirectoryRefused(t *testing.T) {
	notRegular(t, t.TempDir(), "directory")
}

func TestFIFORefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pipe.db")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan struct{})
	go func() { // Open must refuse without ever opening (and blocking on) the FIFO
		defer close(done)
		if s, err := Open(bg, path); err == nil {
			s.Close()
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Open blocked on a FIFO")
	}
	notRegular(t, path, "FIFO")
}

func TestEmptyPathRefused(t *testing.T) {
	if _, err := Open(bg, ""); err == nil {
		t.Fatal("Open(\"\") succeeded")
	}
}

func TestPathWithURICharacters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "odd dir", "a b?c#d%e&mode=ro.db")
	s := mustOpen(t, path)
	put(t, s, record("qar-a", 0, "active", false, t0.Add(time.Hour)), store.Absent)
	s.Close()
	if got := list(t, mustOpen(t, path)); len(got) != 1 {
		t.Fatalf("reopened %v", ids(got))
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 || entries[0].Name() != filepath.Base(path) {
		t.Fatalf("SQLite used another file name: %v", entries)
	}
}
