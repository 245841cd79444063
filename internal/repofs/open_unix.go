//go:build unix

package repofs

import (
	"errors"
	"syscall"
)

// openFlags: never follow a final symlink, never block on a FIFO.
const openFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK

func isLoop(err error) bool { return errors.Is(err, syscall.ELOOP) }
