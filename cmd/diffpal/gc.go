package main

import (
	"cmp"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"sync"

	"github.com/diffpalhq/diffpal/internal/review"
)

// Garbage collection while the process starts. Before a review starts,
// diffpal builds its rule set (the rules, the literal index) and, on
// another core, the secret detector's gitleaks configuration: ~35 MB
// allocated in ~40 ms, most of it live to the end. With the default
// GOGC=100 the heap goal starts at 4 MB, so that start-up ran eight
// collections whose mark assists alone took ~9 ms of CPU (go tool pprof
// on 20 runs of a small review; docs/benchmarks.md). So collection is
// off until the command's own work begins (a review's, at review.Run;
// any other command's, in the root command's PersistentPreRun), with a memory limit as the backstop: past
// startupHeapLimit of heap the runtime collects anyway. Then GOGC=100
// and no limit resume, as for any Go program. A GOGC or GOMEMLIMIT in the
// environment is the user's choice and is left alone.
const startupHeapLimit = 256 << 20

// The heap of a large review. Its live heap peaks at about six times the
// patch (the patch, the new files, their lines, masks and rule views:
// 150 MB for a 400,000-line, 26 MB patch), and with GOGC=100 the heap
// grows to twice that before a collection, which put the process at
// 380 MB. A soft memory limit of reviewHeapLimit (or patchHeapFactor
// times the patch, whichever is larger, so the limit stays well above
// the live heap and the collector never runs back to back) makes the
// runtime collect earlier only when a review comes near it: small
// reviews never do, and a 400,000-line one collects a few more times.
const (
	reviewHeapLimit = 240 << 20
	patchHeapFactor = 8
)

// The first collection after the start-up waits until the heap reaches a
// threshold: resuming GOGC=100 at review.Run, with ~10 MB of rules and
// detectors live, ran a collection at once that cost ~8 ms of a small
// review's ~50 ms of CPU (GODEBUG=gctrace=1) and that a small review
// never needed. Collection stays off, with the threshold as the memory
// limit; the collection that limit triggers (only a process that grows
// past it gets one) finds a sentinel unreachable, and its cleanup
// restores GOGC=100 and the review's limit, so a process that grows
// past it collects from then on exactly as before.
//
// For a review the threshold is reviewFirstGCAt. A review allocates
// about 1.7 times its peak live heap (120 MB for the bench's
// 244,000-line change, 69 MB live after its second collection), and
// GOGC=100 lets a heap grow to twice what the last collection left: the
// two collections the 64 MB threshold gave that change bought 5 MB of
// peak RSS (137 against 142 MB) for ~40 ms of marking on two cores, a
// twentieth of the review's CPU (docs/benchmarks.md, twelfth round). A
// review that allocates less than reviewFirstGCAt never collects; a
// larger one collects from there on as before (the 400,000-line change
// peaks at 231 MB, 6 MB more). Every other command (the MCP server is a
// long-lived one) keeps firstGCAt.
const (
	firstGCAt       = 64 << 20
	reviewFirstGCAt = 200 << 20
)

var startupGC struct {
	once sync.Once
	on   bool

	mu       sync.Mutex
	restored bool  // GOGC=100 is back
	limit    int64 // the review's soft limit (boundReviewHeap), 0 for none
}

// pauseGC turns collection off for the start-up and arranges for
// review.ReviewStarted (a review) or review.StartupDone (any other
// command) to turn it back on.
func pauseGC() {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetMemoryLimit(startupHeapLimit)
	debug.SetGCPercent(-1)
	startupGC.on = true
	review.StartupDone = func() { resumeGC(firstGCAt) }
	review.ReviewStarted = func() { resumeGC(reviewFirstGCAt) }
	review.ChangeLoaded = boundReviewHeap
}

// boundReviewHeap sets the review's soft memory limit from its patch size
// (once the first collection has restored GOGC=100; until then the first
// collection's threshold stays the limit).
func boundReviewHeap(patchBytes int) {
	limit := max(reviewHeapLimit, int64(patchBytes)*patchHeapFactor)
	startupGC.mu.Lock()
	defer startupGC.mu.Unlock()
	startupGC.limit = limit
	if startupGC.restored {
		debug.SetMemoryLimit(limit)
	}
}

// resumeGC ends the start-up's pause: collection stays off up to at
// bytes of heap, and the first collection restores the default collector
// (restoreGC). Safe to call more than once and from any goroutine: the
// first call decides.
func resumeGC(at int64) {
	startupGC.once.Do(func() {
		if !startupGC.on {
			return
		}
		debug.SetMemoryLimit(at)
		sentinel := &struct{ _ *int }{}
		runtime.AddCleanup(sentinel, func(int) { restoreGC() }, 0)
	})
}

// restoreGC restores GOGC=100 and the review's limit (none, unless
// boundReviewHeap set one).
func restoreGC() {
	startupGC.mu.Lock()
	defer startupGC.mu.Unlock()
	startupGC.restored = true
	debug.SetGCPercent(100)
	debug.SetMemoryLimit(cmp.Or(startupGC.limit, math.MaxInt64))
}
