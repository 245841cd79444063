package git

import (
	"os"
	"strings"
	"syscall"
	"testing"
)

const fGetPipeSz = 1032 // F_GETPIPE_SZ

func pipeSize(t *testing.T, f *os.File) int {
	t.Helper()
	sc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var n uintptr
	var errno syscall.Errno
	sc.Control(func(fd uintptr) { n, _, errno = syscall.Syscall(syscall.SYS_FCNTL, fd, fGetPipeSz, 0) })
	if errno != 0 {
		t.Fatal(errno)
	}
	return int(n)
}

func TestWidenPipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	before := pipeSize(t, r)
	widenPipe(r, 1<<20)
	after := pipeSize(t, r)
	// The limit for unprivileged processes is a setting; the default
	// (1 MiB) allows the request.
	limit, err := os.ReadFile("/proc/sys/fs/pipe-max-size")
	if err == nil && strings.TrimSpace(string(limit)) == "1048576" && after != 1<<20 {
		t.Fatalf("pipe size %d after widenPipe, want %d (was %d)", after, 1<<20, before)
	}
	if after < before {
		t.Fatalf("pipe shrank from %d to %d", before, after)
	}
	widenPipe(strings.NewReader("not a pipe"), 1<<20) // no file: nothing to do
}
