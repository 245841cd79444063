package qa

import (
	"context"
	"fmt"
	"testing"
)

// retained returns an orchestrator (memory store) holding n retained
// review-bound sessions.
func retained(b *testing.B, n int) *Orchestrator {
	o, err := New(Config{MaxSessions: max(n, 1)})
	if err != nil {
		b.Fatal(err)
	}
	in := StartInput{TaskType: TaskOrdinaryReview, ReviewContext: boundContext()}
	for range n {
		if _, err := o.Start(context.Background(), in); err != nil {
			b.Fatal(err)
		}
	}
	return o
}

// BenchmarkList10k measures List (server side, no transport) with 10,000
// retained review-bound sessions in the memory store: the default page,
// and every session in pages of 1000.
func BenchmarkList10k(b *testing.B) {
	o := retained(b, 10000)
	ctx := context.Background()
	b.Run("default-page", func(b *testing.B) {
		for b.Loop() {
			out, err := o.List(ctx, ListInput{})
			if err != nil || len(out.Sessions) != DefaultListLimit || out.NextCursor == nil {
				b.Fatal(len(out.Sessions), err)
			}
		}
	})
	b.Run("all-pages-of-1000", func(b *testing.B) {
		limit := MaxListLimit
		for b.Loop() {
			n := 0
			in := ListInput{Limit: &limit}
			for {
				out, err := o.List(ctx, in)
				if err != nil {
					b.Fatal(err)
				}
				n += len(out.Sessions)
				if out.NextCursor == nil {
					break
				}
				in.Cursor = out.NextCursor
			}
			if n != 10000 {
				b.Fatal(n)
			}
		}
	})
}

// BenchmarkStartRetained measures a review-bound Start (and the Delete
// that keeps the store's size) with 0 and 10,000 other sessions retained:
// the cost must not depend on the number.
func BenchmarkStartRetained(b *testing.B) {
	for _, n := range []int{0, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			o := retained(b, n)
			o.max = n + 1
			ctx := context.Background()
			in := StartInput{TaskType: TaskOrdinaryReview, ReviewContext: boundContext()}
			for b.Loop() {
				s, err := o.Start(ctx, in)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := o.Delete(ctx, DeleteInput{RunID: s.RunID}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
