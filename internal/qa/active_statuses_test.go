package qa

import (
	"slices"
	"testing"

	"github.com/diffpalhq/diffpal/internal/qa/store"
)

// The SQL stores count and evict by store.ActiveStatuses; it must be
// exactly the statuses that hold an active slot here.
func TestStoreActiveStatusesMatch(t *testing.T) {
	var want []string
	for _, s := range Statuses() {
		if s.countsAsActive() {
			want = append(want, string(s))
		}
	}
	got := slices.Clone(store.ActiveStatuses)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("store.ActiveStatuses = %v, qa's active statuses = %v", got, want)
	}
}
