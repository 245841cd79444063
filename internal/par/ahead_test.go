package par

import (
	"context"
	"runtime"
	"testing"
)

// TestAheadStopsWhereItIs: items added are worked through in order until
// Stop, which waits for the one in progress; what Stop returns is a
// prefix of the items, each with its own result; items added after Stop
// are not worked on; an Ahead never given an item never starts; a done
// context ends the work as Stop does.
func TestAheadStopsWhereItIs(t *testing.T) {
	idle := NewAhead(context.Background(), func(int) int { return 0 })
	if got := idle.Stop(); got != nil {
		t.Errorf("an idle Ahead returned %v", got)
	}
	// Item 150 waits for a gate that opens only once Stop has begun: Stop
	// must wait for it, and nothing after it may be worked on.
	gate := make(chan struct{})
	a := NewAhead(context.Background(), func(x int) int {
		if x == 150 {
			<-gate
		}
		return x * x
	})
	for x := range 3000 {
		a.Add(x)
	}
	// until waits, with no clock bound, until cond holds of a (read
	// under its lock).
	until := func(cond func() bool) {
		for {
			a.mu.Lock()
			ok := cond()
			a.mu.Unlock()
			if ok {
				return
			}
			runtime.Gosched()
		}
	}
	until(func() bool { return len(a.out) == 150 })
	stopped := make(chan map[int]int)
	go func() { stopped <- a.Stop() }()
	until(func() bool { return a.stopped })
	close(gate)
	out := <-stopped
	for x := 3000; x < 3100; x++ {
		a.Add(x)
	}
	if len(out) != 151 {
		t.Errorf("%d items worked on, want the 150 before the gate and the one Stop waited for", len(out))
	}
	for x := range len(out) {
		if r, ok := out[x]; !ok || r != x*x {
			t.Fatalf("item %d: %d, %v: not a prefix of the items with their results (%d worked on)", x, r, ok, len(out))
		}
	}
	if again := a.Stop(); len(again) != len(out) {
		t.Errorf("a second Stop returned %d items, the first %d", len(again), len(out))
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := NewAhead(ctx, func(x int) int { return x })
	cancel()
	for x := range 100 {
		c.Add(x)
	}
	if got := c.Stop(); len(got) != 0 {
		t.Errorf("a cancelled Ahead worked on %d items", len(got))
	}
}
