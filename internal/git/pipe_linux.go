package git

import (
	"io"
	"os"
	"syscall"
)

// fSetPipeSz is Linux's F_SETPIPE_SZ (fcntl.h), absent from syscall.
const fSetPipeSz = 1031

// widenPipe asks the kernel for a pipe buffer of n bytes on r's pipe (a
// pipe holds 64 KiB by default; unprivileged processes may ask for up to
// /proc/sys/fs/pipe-max-size, 1 MiB by default). A wider pipe lets git
// write on while the reader is descheduled: with two cores shared by git
// and the review's goroutines, a full 64 KiB pipe stopped git's diff for
// the rest of a scheduler slice. Failure leaves the default: it is only
// a hint.
func widenPipe(r io.Reader, n int) {
	f, ok := r.(*os.File)
	if !ok {
		return
	}
	sc, err := f.SyscallConn()
	if err != nil {
		return
	}
	sc.Control(func(fd uintptr) {
		syscall.Syscall(syscall.SYS_FCNTL, fd, fSetPipeSz, uintptr(n))
	})
}
