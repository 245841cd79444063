// Package par runs independent pieces of work on every core: the one
// "for i on all CPUs" of the review's hot paths (rule compilation, the
// explorer's per-file pass, the secret scans and items of the evidence
// packet), so that each keeps its results by index and stays
// deterministic whatever the scheduling; and Ahead, a stream's items
// worked on one goroutine as they come (ahead.go).
package par

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// For calls fn(i) for every i in [0, n) on up to GOMAXPROCS goroutines,
// handing out indexes in order, and returns when all calls have returned.
// Below minPer indexes per goroutine it uses fewer (one: a plain loop), so
// small inputs pay no goroutines. fn must only write to what belongs to
// its own index.
func For(n, minPer int, fn func(i int)) {
	workers := runtime.GOMAXPROCS(0)
	if minPer > 1 {
		workers = min(workers, n/minPer)
	}
	workers = min(workers, n)
	if workers <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				fn(i)
				// Let a waiting goroutine in: with every P running one of
				// these, a goroutine that became runnable (a review's main
				// one, back from a git process) would otherwise wait for
				// the 10 ms preemption. An index's work is tens of µs or
				// more; a yield costs a fraction of one.
				runtime.Gosched()
			}
		})
	}
	wg.Wait()
}
