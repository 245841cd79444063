//go:build !unix

package repofs

// openFlags: elsewhere the Lstat and regular-file checks do the work.
const openFlags = 0

func isLoop(error) bool { return false }
