package par

import (
	"context"
	"sync"
)

// Ahead works through items handed to it one at a time (Add), in the
// order given, on one goroutine of its own, started by the first Add:
// work that can begin on each item of a stream before the stream ends
// (a change's files while git still diffs the rest). Stop ends it where
// it is; the caller does what it did not reach itself, typically on
// every core (For). The zero value is not usable: use NewAhead.
type Ahead[T comparable, R any] struct {
	ctx context.Context
	fn  func(T) R

	mu      sync.Mutex
	wake    *sync.Cond
	queue   []T
	stopped bool
	out     map[T]R
	done    chan struct{} // nil until the goroutine starts
}

// NewAhead returns an Ahead that computes fn(item) for each item added,
// until Stop or until ctx is done.
func NewAhead[T comparable, R any](ctx context.Context, fn func(T) R) *Ahead[T, R] {
	a := &Ahead[T, R]{ctx: ctx, fn: fn}
	a.wake = sync.NewCond(&a.mu)
	return a
}

// Add queues x; after Stop it does nothing.
func (a *Ahead[T, R]) Add(x T) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopped {
		return
	}
	if a.done == nil {
		a.out = map[T]R{}
		a.done = make(chan struct{})
		go a.run()
	}
	a.queue = append(a.queue, x)
	a.wake.Signal()
}

func (a *Ahead[T, R]) run() {
	defer close(a.done)
	a.mu.Lock()
	defer a.mu.Unlock()
	var zero T
	for {
		for len(a.queue) == 0 && !a.stopped {
			a.wake.Wait()
		}
		if a.stopped || a.ctx.Err() != nil {
			return
		}
		x := a.queue[0]
		a.queue[0] = zero
		a.queue = a.queue[1:]
		a.mu.Unlock()
		r := a.fn(x)
		a.mu.Lock()
		a.out[x] = r
	}
}

// Stop ends the work after the item in progress, waits for it and
// returns what was computed, by item: a prefix of the items added, in
// order (nil when nothing was added). Safe to call more than once.
func (a *Ahead[T, R]) Stop() map[T]R {
	a.mu.Lock()
	a.stopped = true
	started := a.done != nil
	if started {
		a.wake.Broadcast()
	}
	a.mu.Unlock()
	if !started {
		return nil
	}
	<-a.done
	return a.out
}
