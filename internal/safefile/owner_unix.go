//go:build unix

package safefile

import (
	"io/fs"
	"os"
	"syscall"
)

// owner is a file's uid and gid, to be given to its replacement.
type owner struct{ uid, gid int }

func ownerOf(fi fs.FileInfo) *owner {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	return &owner{uid: int(st.Uid), gid: int(st.Gid)}
}

// apply gives f the owner unless it already has it (the common case: the
// caller owns the file it replaces, and a non-root chown would fail).
func (o *owner) apply(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if now := ownerOf(fi); now != nil && *now == *o {
		return nil
	}
	return f.Chown(o.uid, o.gid)
}

// lockDir takes an exclusive advisory lock on the directory itself (no
// lock file is left behind), serialising the commits of concurrent
// processes writing one set. The returned function releases it.
func lockDir(d *Dir) func() {
	f, err := d.root.Open(".")
	if err != nil {
		return func() {}
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	return func() {
		if err == nil {
			syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		}
		f.Close()
	}
}
