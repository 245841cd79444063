package main

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// TestFirstCollectionRestoresGC: after the start-up pause, collection
// stays off (memory limit firstGCAt) until a collection happens; that
// collection restores GOGC=100 and the review's limit set meanwhile.
func TestFirstCollectionRestoresGC(t *testing.T) {
	if g := debug.SetGCPercent(-1); g != 100 {
		debug.SetGCPercent(g)
		t.Skip("GOGC is set in the environment")
	}
	on, restored, limit := startupGC.on, startupGC.restored, startupGC.limit
	t.Cleanup(func() {
		startupGC.on, startupGC.restored, startupGC.limit = on, restored, limit
		debug.SetGCPercent(100)
		debug.SetMemoryLimit(math.MaxInt64)
	})
	debug.SetMemoryLimit(startupHeapLimit)
	startupGC.on = true
	resumeGC()
	if got := debug.SetMemoryLimit(-1); got != firstGCAt {
		t.Fatalf("memory limit %d after resumeGC, want %d", got, firstGCAt)
	}
	if got := debug.SetGCPercent(-1); got != -1 {
		t.Fatalf("GOGC %d before the first collection, want off", got)
	}
	boundReviewHeap(1 << 20) // a review's limit, held until the collection
	if got := debug.SetMemoryLimit(-1); got != firstGCAt {
		t.Fatalf("memory limit %d before the first collection, want %d", got, firstGCAt)
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
