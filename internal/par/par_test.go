package par

import (
	"sync/atomic"
	"testing"
)

// TestFor: every index exactly once, for inputs below and above the
// per-goroutine minimum.
func TestFor(t *testing.T) {
	for _, n := range []int{0, 1, 7, 8, 100, 10000} {
		for _, minPer := range []int{0, 1, 8} {
			seen := make([]atomic.Int32, n)
			For(n, minPer, func(i int) { seen[i].Add(1) })
			for i := range seen {
				if c := seen[i].Load(); c != 1 {
					t.Fatalf("n=%d minPer=%d: index %d called %d times", n, minPer, i, c)
				}
			}
		}
	}
}
