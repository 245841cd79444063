package repofs

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/iotest"
)

func TestCheckRel(t *testing.T) {
	for _, tc := range []struct {
		rel string
		ok  bool
	}{
		{"a/b.yaml", true}, {".config/diffpal/config.yaml", true}, {"a/./b", true},
		{"", false}, {".", false}, {"/etc/passwd", false}, {"../x", false}, {"a/../../x", false},
		{`a\..\..\x`, false}, {"C:/x", false}, {"a\x00b", false}, {"/proc/self/environ", false},
	} {
		if err := CheckRel(tc.rel); (err == nil) != tc.ok {
			t.Errorf("CheckRel(%q) = %v, want ok=%v", tc.rel, err, tc.ok)
		}
	}
}

// insideOutside makes a repository directory holding name (content
// a: 1) and sub/inside-link.<ext of name> linking to it, out-link to a
// secret file outside it and out-dir to the directory outside.
func insideOutside(t *testing.T, name string) (root, outside string) {
	root, outside = t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret"), []byte("s3cr3t"), 0o600)
	os.WriteFile(filepath.Join(root, name), []byte("a: 1\n"), 0o644)
	os.MkdirAll(filepath.Join(root, "sub"), 0o755)
	os.Symlink("../"+name, filepath.Join(root, "sub", "inside-link"+filepath.Ext(name)))
	os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "out-link"))
	os.Symlink(outside, filepath.Join(root, "out-dir"))
	return root, outside
}

func TestReadFileStaysInside(t *testing.T) {
	root, outside := insideOutside(t, "ok.yaml")

	if data, err := ReadFile(root, "ok.yaml", 1<<10); err != nil || string(data) != "a: 1\n" {
		t.Errorf("plain file: %q %v", data, err)
	}
	if _, err := ReadFile(root, "sub/inside-link.yaml", 1<<10); err != nil {
		t.Errorf("a link that stays inside must be readable: %v", err)
	}
	for _, rel := range []string{"out-link", "out-dir/secret", "../" + filepath.Base(outside) + "/secret"} {
		data, err := ReadFile(root, rel, 1<<10)
		if err == nil || !errors.Is(err, ErrOutside) || strings.Contains(string(data), "s3cr3t") {
			t.Errorf("%s: read %q, %v; want ErrOutside", rel, data, err)
		}
	}
	if _, err := ReadFile(root, "missing.yaml", 1<<10); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := ReadFile(root, "ok.yaml", 2); err == nil || !strings.Contains(err.Error(), "over the limit of 2 bytes") {
		t.Errorf("size limit: %v", err)
	}
}

func TestReadRegularRefusesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	// Opened without blocking, refused as not regular.
	if _, err := ReadRegular(fifo, 1<<10); err == nil || !strings.Contains(err.Error(), "a FIFO") {
		t.Errorf("FIFO: %v", err)
	}
	if _, err := ReadRegular("/dev/zero", 1<<10); err == nil || !strings.Contains(err.Error(), "character device") {
		t.Errorf("device: %v", err)
	}
	if _, err := ReadRegular(dir, 1<<10); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Errorf("directory: %v", err)
	}
	os.Symlink(fifo, filepath.Join(dir, "link"))
	if _, err := ReadRegular(filepath.Join(dir, "link"), 1<<10); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("final symlink: %v", err)
	}
}

// TestReadSized: whatever size a file was said to have (its size changes
// between the stat and the read), it is read whole, at most limit bytes,
// and refused past them, as ReadAtMost does; from a reader that returns
// a byte at a time too.
func TestReadSized(t *testing.T) {
	for _, n := range []int{0, 1, 511, 512, 513, 7000, 100} {
		data := bytes.Repeat([]byte("x"), n)
		for _, hint := range []int64{-1, 0, int64(n) - 1, int64(n), int64(n) + 1, 1 << 20} {
			for _, limit := range []int64{int64(n) - 1, int64(n), int64(n) + 5} {
				if limit < 0 {
					continue
				}
				for _, r := range []io.Reader{bytes.NewReader(data), iotest.OneByteReader(bytes.NewReader(data))} {
					got, err := readSized(r, hint, limit)
					want, wantErr := ReadAtMost(bytes.NewReader(data), limit)
					if (err != nil) != (wantErr != nil) || !bytes.Equal(got, want) {
						t.Fatalf("%d bytes, hint %d, limit %d: %d bytes, %v; ReadAtMost %d bytes, %v", n, hint, limit, len(got), err, len(want), wantErr)
					}
				}
			}
		}
	}
}

// TestReadRegularInStaysInside: through an opened root, a file is read
// as ReadFile reads it, and nothing outside the root is: not by "..",
// nor by a symlink to a file or a directory outside (one that stays
// inside is followed, as ReadFile follows it); a FIFO is refused without
// blocking, and so is a directory.
func TestReadRegularInStaysInside(t *testing.T) {
	dir, outside := insideOutside(t, "ok.go")
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if data, err := ReadRegularIn(root, "ok.go", 1<<10); err != nil || string(data) != "a: 1\n" {
		t.Errorf("plain file: %q %v", data, err)
	}
	if _, err := ReadRegularIn(root, "ok.go", 2); err == nil || !strings.Contains(err.Error(), "over the limit of 2 bytes") {
		t.Errorf("size limit: %v", err)
	}
	if data, err := ReadRegularIn(root, "sub/inside-link.go", 1<<10); err != nil || string(data) != "a: 1\n" {
		t.Errorf("a link that stays inside: %q %v", data, err)
	}
	for _, rel := range []string{"out-link", "out-dir/secret", "../" + filepath.Base(outside) + "/secret", "fifo", "sub", "missing.go", "/etc/passwd"} {
		if data, err := ReadRegularIn(root, rel, 1<<10); err == nil || strings.Contains(string(data), "s3cr3t") {
			t.Errorf("%s: read %q, %v; want it refused", rel, data, err)
		}
	}
}
