package qa

import (
	"context"
	"testing"
)

// BenchmarkList10k measures List (server side, no transport) with 10,000
// retained review-bound sessions in the memory store.
func BenchmarkList10k(b *testing.B) {
	o, err := New(Config{MaxSessions: 10000})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	in := StartInput{TaskType: TaskOrdinaryReview, ReviewContext: boundContext()}
	for range 10000 {
		if _, err := o.Start(ctx, in); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		out, err := o.List(ctx)
		if err != nil || len(out.Sessions) != 10000 {
			b.Fatal(len(out.Sessions), err)
		}
	}
}
