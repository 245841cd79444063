package safefile

import (
	"errors"
	"os"
	"sync"
)

// ErrInterrupted is returned by writes started or committed after Cleanup:
// the process is exiting.
var ErrInterrupted = errors.New("interrupted: diffpal is exiting")

// TestHookAfterWrite, when set, runs once a temporary file's content is
// written and before it is synced and committed, with the temporary
// file's path. Tests use it to interrupt a write at its most exposed
// point; it must be set before any write starts.
var TestHookAfterWrite func(tmpPath string)

// The registry of live temporary files and staging directories. commit is
// held while renames publish files, so that Cleanup waits for a commit in
// progress (renames only: it is short) instead of cutting a set in half.
var (
	regMu  sync.Mutex
	live   = map[string]bool{} // path -> is a staging directory
	closed bool
	commit sync.Mutex
)

// track runs create (which makes path) and registers path, atomically
// with respect to Cleanup: a path is never created after Cleanup ran nor
// left unregistered between its creation and its registration.
func track(path string, dir bool, create func() error) error {
	regMu.Lock()
	defer regMu.Unlock()
	if closed {
		return ErrInterrupted
	}
	if err := create(); err != nil {
		return err
	}
	live[path] = dir
	return nil
}

func untrack(path string) {
	regMu.Lock()
	delete(live, path)
	regMu.Unlock()
}

func beginCommit() error {
	commit.Lock()
	regMu.Lock()
	c := closed
	regMu.Unlock()
	if c {
		commit.Unlock()
		return ErrInterrupted
	}
	return nil
}

func endCommit() { commit.Unlock() }

// Cleanup removes every temporary file and staging directory still live
// and makes later writes fail with ErrInterrupted. It waits for a commit
// in progress to finish. cmd/diffpal calls it before every exit, including
// the forced one after SIGINT/SIGTERM; it is safe to call more than once
// and from any goroutine. It returns how many entries it removed.
func Cleanup() int {
	commit.Lock()
	defer commit.Unlock()
	regMu.Lock()
	closed = true
	todo := live
	live = map[string]bool{}
	regMu.Unlock()
	n := 0
	for path, dir := range todo {
		var err error
		if dir {
			err = os.RemoveAll(path)
		} else {
			err = os.Remove(path)
		}
		if err == nil {
			n++
		}
	}
	return n
}

// reset reopens the registry after Cleanup; tests only.
func reset() {
	regMu.Lock()
	closed = false
	live = map[string]bool{}
	regMu.Unlock()
}
