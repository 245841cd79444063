package main

import (
	"math"
	"runtime"
	"runtime/debug"
	"sync"
	"testing"
	"time"

	"github.com/diffpalhq/diffpal/internal/review"
)

// TestFirstCollectionRestoresGC: after the start-up pause, collection
// stays off (memory limit: the review's first-collection threshold, or
// any other command's) until a collection happens; that collection
// restores GOGC=100 and the review's limit set meanwhile.
func TestFirstCollectionRestoresGC(t *testing.T) {
	for _, c := range []struct {
		name  string
		start func()
		at    int64
	}{
		{"review", func() { review.ReviewStarted() }, reviewFirstGCAt},
		{"other command", func() { review.StartupDone() }, firstGCAt},
	} {
		t.Run(c.name, func(t *testing.T) { testFirstCollection(t, c.start, c.at) })
	}
}

func testFirstCollection(t *testing.T, start func(), firstAt int64) {
	if g := debug.SetGCPercent(-1); g != 100 {
		debug.SetGCPercent(g)
		t.Skip("GOGC is set in the environment")
	}
	on, restored, limit := startupGC.on, startupGC.restored, startupGC.limit
	hooks := []func(){review.StartupDone, review.ReviewStarted}
	changed := review.ChangeLoaded
	t.Cleanup(func() {
		startupGC.on, startupGC.restored, startupGC.limit = on, restored, limit
		startupGC.once = sync.Once{}
		review.StartupDone, review.ReviewStarted, review.ChangeLoaded = hooks[0], hooks[1], changed
		debug.SetGCPercent(100)
		debug.SetMemoryLimit(math.MaxInt64)
	})
	startupGC.restored, startupGC.limit = false, 0
	startupGC.once = sync.Once{}
	pauseGC() // as main does
	if !startupGC.on {
		t.Skip("GOMEMLIMIT is set in the environment")
	}
	if got := debug.SetMemoryLimit(-1); got != startupHeapLimit {
		t.Fatalf("memory limit %d during the start-up, want %d", got, startupHeapLimit)
	}
	start()
	if got := debug.SetMemoryLimit(-1); got != firstAt {
		t.Fatalf("memory limit %d after resumeGC, want %d", got, firstAt)
	}
	// The first call decides: a review run by a command already started
	// (the MCP server's) keeps the command's threshold.
	resumeGC(firstAt + 1<<20)
	if got := debug.SetMemoryLimit(-1); got != firstAt {
		t.Fatalf("memory limit %d after a second resumeGC, want %d", got, firstAt)
	}
	if got := debug.SetGCPercent(-1); got != -1 {
		t.Fatalf("GOGC %d before the first collection, want off", got)
	}
	boundReviewHeap(1 << 20) // a review's limit, held until the collection
	if got := debug.SetMemoryLimit(-1); got != firstAt {
		t.Fatalf("memory limit %d before the first collection, want %d", got, firstAt)
	}
	runtime.GC()
	deadline := time.Now().Add(10 * time.Second)
	for {
		startupGC.mu.Lock()
		done := startupGC.restored
		startupGC.mu.Unlock()
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first collection did not restore the collector")
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC %d after the first collection, want 100", got)
	}
	if got := debug.SetMemoryLimit(-1); got != reviewHeapLimit {
		t.Errorf("memory limit %d after the first collection, want the review's %d", got, reviewHeapLimit)
	}
}
