package safefile

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

var bg = context.Background()

func text(s string) func(io.Writer) error {
	return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
}

func mustWrite(t *testing.T, path, content string, perm os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), perm); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// leftovers lists the temporary files and staging directories under dir.
func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(e.Name(), ".") && strings.HasSuffix(e.Name(), ".tmp") {
			out = append(out, p)
		}
		return nil
	})
	return out
}

func refused(t *testing.T, err error, want ...string) {
	t.Helper()
	if !errors.Is(err, ErrRefused) {
		t.Fatalf("err = %v, want a refusal", err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("refusal %q does not mention %q", err, w)
		}
	}
}

func TestWriteCreatesDirectoriesAndFile(t *testing.T) {
	base := t.TempDir()
	path := filepath.Join(base, ".artifacts", "diffpal", "x.json")
	if err := Write(bg, base, path, Options{}, text("new")); err != nil {
		t.Fatal(err)
	}
	if read(t, path) != "new" {
		t.Fatal("content")
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v, want 0644", fi.Mode().Perm())
	}
	if l := leftovers(t, base); len(l) != 0 {
		t.Fatalf("left behind: %v", l)
	}
}

// A symlink at any depth between the base and the file is refused and
// nothing is written where it points.
func TestWriteRefusesSymlinkComponent(t *testing.T) {
	for _, link := range []string{".artifacts", ".artifacts/diffpal"} {
		t.Run(link, func(t *testing.T) {
			base, elsewhere := t.TempDir(), t.TempDir()
			mustWrite(t, filepath.Join(elsewhere, "x.json"), "precious", 0o644)
			l := filepath.Join(base, link)
			os.MkdirAll(filepath.Dir(l), 0o755)
			if err := os.Symlink(elsewhere, l); err != nil {
				t.Fatal(err)
			}
			err := Write(bg, base, filepath.Join(base, ".artifacts", "diffpal", "x.json"), Options{}, text("evil"))
			refused(t, err, l, "symlink", elsewhere)
			if read(t, filepath.Join(elsewhere, "x.json")) != "precious" {
				t.Fatal("wrote through the symlink")
			}
			if l := leftovers(t, elsewhere); len(l) != 0 {
				t.Fatalf("left behind: %v", l)
			}
		})
	}
}

// A symlink inside the base that points back inside the base is refused
// too: committed content must not be overwritten through a link.
func TestWriteRefusesSymlinkInsideBase(t *testing.T) {
	base := t.TempDir()
	mustWrite(t, filepath.Join(base, "docs", "x.json"), "committed", 0o644)
	os.Symlink("docs", filepath.Join(base, "out"))
	refused(t, Write(bg, base, filepath.Join(base, "out", "x.json"), Options{}, text("evil")), "symlink")
	if read(t, filepath.Join(base, "docs", "x.json")) != "committed" {
		t.Fatal("wrote through the symlink")
	}
}

func TestWriteRefusesFileComponent(t *testing.T) {
	base := t.TempDir()
	mustWrite(t, filepath.Join(base, ".artifacts"), "a file", 0o644)
	refused(t, Write(bg, base, filepath.Join(base, ".artifacts", "x.json"), Options{}, text("x")), "not a directory")
}

// The base reached through a symlink outside the repository (a linked
// working directory) still confines: the link inside is found.
func TestWriteBaseThroughLinkStillConfines(t *testing.T) {
	real, elsewhere := t.TempDir(), t.TempDir()
	linkToBase := filepath.Join(t.TempDir(), "repo")
	if err := os.Symlink(real, linkToBase); err != nil {
		t.Fatal(err)
	}
	os.Symlink(elsewhere, filepath.Join(real, ".artifacts"))
	// base spelled as the real path, the output through the link, and the
	// other way round.
	refused(t, Write(bg, real, filepath.Join(linkToBase, ".artifacts", "x"), Options{}, text("x")), "symlink")
	refused(t, Write(bg, linkToBase, filepath.Join(real, ".artifacts", "x"), Options{}, text("x")), "symlink")
	// A link inside the base to the base itself does not pass for it.
	os.Symlink(real, filepath.Join(real, "self"))
	refused(t, Write(bg, real, filepath.Join(linkToBase, "self", "x"), Options{}, text("x")), "symlink")
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Fatalf("wrote %v through the link", entries)
	}
	if _, err := os.Lstat(filepath.Join(real, "x")); err == nil {
		t.Fatal("wrote through the self link")
	}
}

// Outside the base only the target itself is checked.
func TestWriteOutsideBase(t *testing.T) {
	base, out := t.TempDir(), t.TempDir()
	linked := filepath.Join(t.TempDir(), "linked")
	os.Symlink(out, linked)
	if err := Write(bg, base, filepath.Join(linked, "x"), Options{}, text("ok")); err != nil {
		t.Fatal(err)
	}
	if read(t, filepath.Join(out, "x")) != "ok" {
		t.Fatal("content")
	}
}

func TestWriteRefusesNonRegularTargets(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	mustWrite(t, target, "precious", 0o644)
	link := filepath.Join(dir, "link")
	os.Symlink(target, link)
	dangling := filepath.Join(dir, "dangling")
	os.Symlink(filepath.Join(dir, "nowhere"), dangling)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	cases := map[string]string{link: "symlink", dangling: "symlink", fifo: "FIFO", sub: "directory", "/dev/null": "character device"}
	for path, what := range cases {
		refused(t, Write(bg, dir, path, Options{}, text("evil")), path, what)
		refused(t, CheckTarget(path), what)
	}
	if read(t, target) != "precious" {
		t.Fatal("wrote through the link")
	}
	if _, err := os.Lstat(filepath.Join(dir, "nowhere")); err == nil {
		t.Fatal("created the dangling link's target")
	}
	if fi, _ := os.Lstat(fifo); fi.Mode()&fs.ModeNamedPipe == 0 {
		t.Fatal("the FIFO was replaced")
	}
	if fi, _ := os.Lstat("/dev/null"); fi.Mode()&fs.ModeCharDevice == 0 {
		t.Fatal("/dev/null was replaced")
	}
	if l := leftovers(t, dir); len(l) != 0 {
		t.Fatalf("left behind: %v", l)
	}
}

func TestKeepModeAndOwner(t *testing.T) {
	dir := t.TempDir()
	for _, perm := range []os.FileMode{0o600, 0o640, 0o444, 0o755} {
		path := filepath.Join(dir, perm.String())
		mustWrite(t, path, "old", 0o600)
		os.Chmod(path, perm)
		if err := Write(bg, dir, path, Options{Perm: 0o644, Keep: true}, text("new")); err != nil {
			t.Fatal(err)
		}
		fi, _ := os.Stat(path)
		if fi.Mode().Perm() != perm || read(t, path) != "new" {
			t.Errorf("mode %v after in-place write of a %v file", fi.Mode().Perm(), perm)
		}
	}
	// Without Keep the given mode applies.
	path := filepath.Join(dir, "plain")
	mustWrite(t, path, "old", 0o600)
	Write(bg, dir, path, Options{Perm: 0o644}, text("new"))
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", fi.Mode().Perm())
	}

	if os.Geteuid() != 0 {
		t.Log("not root: the owner case needs a file owned by someone else")
		return
	}
	owned := filepath.Join(dir, "owned")
	mustWrite(t, owned, "old", 0o640)
	if err := os.Chown(owned, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := Write(bg, dir, owned, Options{Keep: true}, text("new")); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(owned)
	st := fi.Sys().(*syscall.Stat_t)
	if st.Uid != 65534 || st.Gid != 65534 || fi.Mode().Perm() != 0o640 {
		t.Fatalf("owner %d:%d mode %v, want 65534:65534 0640", st.Uid, st.Gid, fi.Mode().Perm())
	}
}

func TestFailedWriteLeavesOldFileAndNoTemp(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x")
	mustWrite(t, path, "old", 0o644)
	boom := errors.New("boom")
	err := Write(bg, dir, path, Options{}, func(w io.Writer) error { io.WriteString(w, "half"); return boom })
	if !errors.Is(err, boom) || read(t, path) != "old" {
		t.Fatalf("err %v, content %q", err, read(t, path))
	}
	ctx, cancel := context.WithCancel(bg)
	cancel()
	if err := Write(ctx, dir, path, Options{}, text("new")); !errors.Is(err, context.Canceled) || read(t, path) != "old" {
		t.Fatalf("cancelled write: %v, content %q", err, read(t, path))
	}
	if l := leftovers(t, dir); len(l) != 0 {
		t.Fatalf("left behind: %v", l)
	}
}

// Cleanup removes the temporary file of a write in progress (as main does
// on SIGINT/SIGTERM) and refuses later writes.
func TestCleanupRemovesLiveTemps(t *testing.T) {
	t.Cleanup(func() { TestHookAfterWrite = nil; reset() })
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "x"), "old", 0o644)
	var seen string
	TestHookAfterWrite = func(tmp string) {
		seen = tmp
		if _, err := os.Stat(tmp); err != nil {
			t.Errorf("temp file not there during the write: %v", err)
		}
		if n := Cleanup(); n != 1 {
			t.Errorf("Cleanup removed %d entries, want 1", n)
		}
	}
	err := Write(bg, dir, filepath.Join(dir, "x"), Options{}, text("new"))
	if err == nil || read(t, filepath.Join(dir, "x")) != "old" {
		t.Fatalf("write after Cleanup: %v", err)
	}
	if !strings.HasPrefix(filepath.Base(seen), ".x.") || !strings.HasSuffix(seen, ".tmp") {
		t.Fatalf("temp name %s", seen)
	}
	if l := leftovers(t, dir); len(l) != 0 {
		t.Fatalf("left behind: %v", l)
	}
	TestHookAfterWrite = nil
	if err := Write(bg, dir, filepath.Join(dir, "y"), Options{}, text("y")); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("write after Cleanup = %v, want ErrInterrupted", err)
	}
}

func setFiles(content string) []File {
	var fs []File
	for _, n := range []string{"a.json", "b.md"} {
		fs = append(fs, File{Name: n, Write: text(n + ":" + content)})
	}
	return fs
}

func manifestBody(ws []Written) func(io.Writer) error {
	var b strings.Builder
	for _, w := range ws {
		b.WriteString(w.Name + " " + w.SHA256 + "\n")
	}
	return text(b.String())
}

func TestWriteSet(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "out")
	d, err := OpenDir(base, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.WriteSet(bg, setFiles("one"), "manifest", manifestBody); err != nil {
		t.Fatal(err)
	}
	// Other entries (a cache) survive a new set.
	mustWrite(t, filepath.Join(dir, "cache", "ab", "entry.json"), "cached", 0o600)
	ws, err := d.WriteSet(bg, setFiles("two"), "manifest", manifestBody)
	if err != nil {
		t.Fatal(err)
	}
	if read(t, filepath.Join(dir, "cache", "ab", "entry.json")) != "cached" {
		t.Fatal("the cache did not survive")
	}
	for _, w := range ws {
		sum := sha256.Sum256([]byte(read(t, filepath.Join(dir, w.Name))))
		if hex.EncodeToString(sum[:]) != w.SHA256 || !strings.Contains(read(t, filepath.Join(dir, "manifest")), w.SHA256) {
			t.Errorf("%s does not match the manifest", w.Name)
		}
	}
	if l := leftovers(t, base); len(l) != 0 {
		t.Fatalf("left behind: %v", l)
	}

	// One refused target refuses the whole set before anything changes.
	os.Remove(filepath.Join(dir, "b.md"))
	os.Mkdir(filepath.Join(dir, "b.md"), 0o755)
	if _, err := d.WriteSet(bg, setFiles("three"), "manifest", manifestBody); !errors.Is(err, ErrRefused) {
		t.Fatalf("err = %v, want a refusal", err)
	}
	if read(t, filepath.Join(dir, "a.json")) != "a.json:two" {
		t.Fatal("a refused set changed a file")
	}
	os.Remove(filepath.Join(dir, "b.md"))

	// A failing writer, a cancelled context and Cleanup during staging all
	// leave the published set as it was.
	before := read(t, filepath.Join(dir, "a.json")) + read(t, filepath.Join(dir, "manifest"))
	boom := errors.New("boom")
	failing := setFiles("four")
	failing[1].Write = func(io.Writer) error { return boom }
	if _, err := d.WriteSet(bg, failing, "manifest", manifestBody); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	ctx, cancel := context.WithCancel(bg)
	cancel()
	if _, err := d.WriteSet(ctx, setFiles("five"), "manifest", manifestBody); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	t.Cleanup(func() { TestHookAfterWrite = nil; reset() })
	TestHookAfterWrite = func(string) { Cleanup() }
	if _, err := d.WriteSet(bg, setFiles("six"), "manifest", manifestBody); err == nil {
		t.Fatal("set written after Cleanup")
	}
	if after := read(t, filepath.Join(dir, "a.json")) + read(t, filepath.Join(dir, "manifest")); after != before {
		t.Fatal("an abandoned set changed the published one")
	}
	if l := leftovers(t, base); len(l) != 0 {
		t.Fatalf("left behind: %v", l)
	}
}
