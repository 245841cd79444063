package sqlite

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/diffpalhq/diffpal/internal/qa/store"
)

// Modes are only ever tightened: group and other bits are cleared, owner
// bits are never added (a 0400 file used to become 0600).
func TestModesOnlyTightened(t *testing.T) {
	for perm, want := range map[os.FileMode]os.FileMode{
		0o400: 0o400, 0o440: 0o400, 0o640: 0o600, 0o644: 0o600, 0o666: 0o600, 0o700: 0o700, 0o600: 0o600,
	} {
		path := dbPath(t)
		seedAt(t, path)
		if err := os.Chmod(path, perm); err != nil {
			t.Fatal(err)
		}
		s, err := Open(bg, path, WithClock(clock))
		if err == nil {
			s.Close()
		} else if want&0o200 != 0 || !errors.Is(err, ErrNotWritable) {
			// Only a file without owner write may fail, and then as not
			// writable (never as root, who may write it anyway).
			t.Errorf("Open of a %04o file: %v", perm, err)
		}
		if got := mode(t, path); got != want {
			t.Errorf("a %04o file is %04o after Open, want %04o", perm, got, want)
		}
	}
}

const envUnprivileged = "DIFFPAL_SQLITE_TEST_UNPRIVILEGED"

// unprivileged runs the calling test as uid/gid 65534 in a child process
// when the tests run as root (root ignores permission bits, so a read-only
// directory is not read-only to it). It reports whether the caller should
// go on in-process.
func unprivileged(t *testing.T) bool {
	t.Helper()
	if os.Geteuid() != 0 {
		return true
	}
	if os.Getenv(envUnprivileged) != "" {
		t.Fatal("still root in the unprivileged child")
	}
	// Not t.TempDir: its parent is private to root.
	top, err := os.MkdirTemp("", "sqlite-unprivileged-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(top) })
	bin, tmp := filepath.Join(top, "sqlite.test"), filepath.Join(top, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{top, tmp} {
		if err := os.Chmod(d, 0o1777); err != nil {
			t.Fatal(err)
		}
	}
	src, err := os.Open(os.Args[0])
	if err != nil {
		t.Skipf("cannot copy the test binary: %v", err)
	}
	defer src.Close()
	dst, err := os.OpenFile(bin, os.O_WRONLY|os.O_CREATE, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	dst.Close()
	cmd := exec.Command(bin, "-test.run", "^"+t.Name()+"$", "-test.v")
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), envUnprivileged+"=1", "TMPDIR="+tmp, "HOME="+tmp)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	var pe *fs.PathError
	if errors.As(err, &pe) {
		t.Skipf("cannot run the test binary as uid 65534 (%v); run the tests as an unprivileged user", err)
	}
	t.Logf("as uid 65534:\n%s", out)
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("as uid 65534: %v\n%s", err, out)
	}
	return false
}

// A store in a read-only directory (or a read-only file) fails Open with
// a clear error naming the path, instead of starting a server that then
// answers every write "unable to write session store".
func TestReadOnlyStoreFailsAtOpen(t *testing.T) {
	if !unprivileged(t) {
		return
	}
	dir := filepath.Join(t.TempDir(), "state")
	path := filepath.Join(dir, "qa.db")
	seedAt(t, path)
	before := readFile(t, path)
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o700) })
	_, err := Open(bg, path, WithClock(clock))
	if !errors.Is(err, ErrNotWritable) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("Open in a read-only directory = %v, want ErrNotWritable naming the file and its directory", err)
	}
	t.Logf("read-only directory: %v", err)
	if !bytes.Equal(before, readFile(t, path)) {
		t.Fatal("the refused store changed")
	}
	os.Chmod(dir, 0o700)

	if err := os.Chmod(path, 0o400); err != nil {
		t.Fatal(err)
	}
	_, err = Open(bg, path, WithClock(clock))
	if !errors.Is(err, ErrNotWritable) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Open of a 0400 file = %v, want ErrNotWritable naming it", err)
	}
	t.Logf("read-only file: %v", err)
	if m := mode(t, path); m != 0o400 {
		t.Fatalf("a refused 0400 store is now %04o", m)
	}
}

// A failed write is logged with its cause; conflicts and missing records,
// which callers handle, are not.
func TestFailedWriteIsLogged(t *testing.T) {
	var logs bytes.Buffer
	path := dbPath(t)
	s := mustOpen(t, path, WithLogger(slog.New(slog.NewTextHandler(&logs, nil))), WithValidate(jsonValidate))
	put(t, s, record("qar-a", 0, "active", false, t0.Add(time.Hour)), store.Absent)
	if err := s.Put(bg, record("qar-a", 1, "active", false, t0.Add(time.Hour)), 7); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("stale Put = %v", err)
	}
	if err := s.Delete(bg, "qar-none", 0); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Delete of a missing record = %v", err)
	}
	if logs.Len() != 0 {
		t.Fatalf("logged a conflict or a missing record:\n%s", logs.String())
	}

	// A record the validate hook refuses.
	bad := record("qar-b", 0, "active", false, t0.Add(time.Hour))
	bad.Payload = []byte("not json")
	if err := s.Put(bg, bad, store.Absent); err == nil {
		t.Fatal("invalid record written")
	}
	if l := logs.String(); !strings.Contains(l, "session store write failed") || !strings.Contains(l, "qar-b") || !strings.Contains(l, "payload is not JSON") {
		t.Fatalf("refused record not logged with its cause:\n%s", l)
	}
	logs.Reset()

	// A write SQLite cannot do: its journal cannot be created.
	if err := os.Mkdir(path+"-journal", 0o700); err != nil {
		t.Fatal(err)
	}
	err := s.Put(bg, record("qar-c", 0, "active", false, t0.Add(time.Hour)), store.Absent)
	if err == nil {
		t.Fatal("Put succeeded without a journal")
	}
	l := logs.String()
	for _, want := range []string{"level=WARN", "session store write failed", path, "op=put", "qar-c", err.Error()[strings.LastIndex(err.Error(), ": ")+2:]} {
		if !strings.Contains(l, want) {
			t.Fatalf("log lacks %q:\n%s", want, l)
		}
	}
}
