package sqlite

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/diffpalhq/diffpal/internal/qa/store"
)

// A create into a store whose active rows fill WithMaxSessions fails with
// ErrCapacity, changes nothing (not even the file's bytes) and is not
// logged as a failed write: it is an answer.
func TestCreateRefusedAtCapacity(t *testing.T) {
	path := dbPath(t)
	var logs bytes.Buffer
	s := mustOpen(t, path, WithMaxSessions(2), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	exp := t0.Add(time.Hour)
	put(t, s, record("qar-a", 0, "active", false, exp), store.Absent)
	put(t, s, record("qar-b", 0, "awaiting_host_outcome", false, exp), store.Absent)
	before := readFile(t, path)
	err := s.Put(bg, record("qar-c", 0, "active", false, exp), store.Absent)
	if !errors.Is(err, ErrCapacity) {
		t.Fatalf("Put over capacity = %v, want ErrCapacity", err)
	}
	if got := ids(list(t, s)); !slices.Equal(got, []string{"qar-a", "qar-b"}) {
		t.Fatalf("rows after refused create: %v", got)
	}
	if !bytes.Equal(before, readFile(t, path)) {
		t.Fatal("a refused create changed the file")
	}
	if logs.Len() != 0 {
		t.Fatalf("a capacity refusal was logged: %s", logs.String())
	}
	// Updates are not capacity-checked: a full store still advances.
	put(t, s, record("qar-a", 1, "awaiting_host_outcome", false, exp), 0)
	// Without a limit there is no check.
	u := mustOpen(t, dbPath(t))
	for i := range 5 {
		put(t, u, record(fmt.Sprintf("qar-%d", i), 0, "active", false, exp), store.Absent)
	}
}

// Room is made as the orchestrator's Start makes it: rows holding no
// active slot (terminal, or expired by the store's clock) go oldest
// (expires_at, run_id) first, only as many as needed, in the create's own
// transaction.
func TestCreateEvictsOldestRetained(t *testing.T) {
	s := mustOpen(t, dbPath(t), WithMaxSessions(4))
	put(t, s, record("qar-active", 0, "active", false, t0.Add(time.Minute)), store.Absent)
	put(t, s, record("qar-done-late", 0, "completed", true, t0.Add(3*time.Hour)), store.Absent)
	put(t, s, record("qar-done-b", 0, "partial", true, t0.Add(2*time.Hour)), store.Absent)
	put(t, s, record("qar-done-a", 0, "blocked", true, t0.Add(2*time.Hour)), store.Absent)

	steps := []struct {
		create  string
		evicted string
	}{
		{"qar-new-1", "qar-done-a"}, // same expiry as done-b: run_id breaks the tie
		{"qar-new-2", "qar-done-b"},
		{"qar-new-3", "qar-done-late"},
	}
	for _, st := range steps {
		before := ids(list(t, s))
		put(t, s, record(st.create, 0, "active", false, t0.Add(time.Hour)), store.Absent)
		after := ids(list(t, s))
		want := slices.DeleteFunc(slices.Clone(before), func(id string) bool { return id == st.evicted })
		want = append(want, st.create)
		slices.Sort(want)
		if !slices.Equal(after, want) {
			t.Fatalf("create %s: rows %v, want %v (evicting %s)", st.create, after, want, st.evicted)
		}
	}
	// Four active rows now: nothing is evictable.
	if err := s.Put(bg, record("qar-new-4", 0, "active", false, t0.Add(time.Hour)), store.Absent); !errors.Is(err, ErrCapacity) {
		t.Fatalf("create with only active rows = %v, want ErrCapacity", err)
	}
}

// An active-status row that has expired holds no slot (the orchestrator
// purges it before counting), so a create may evict it; a row with no
// expiry (the zero time) is the oldest of all.
func TestCreateEvictsExpired(t *testing.T) {
	s := mustOpen(t, dbPath(t), WithMaxSessions(2))
	put(t, s, record("qar-expired", 0, "active", false, t0.Add(-time.Minute)), store.Absent)
	put(t, s, record("qar-zero", 0, "active", false, time.Time{}), store.Absent)
	put(t, s, record("qar-new-1", 0, "active", false, t0.Add(time.Hour)), store.Absent)
	if got := ids(list(t, s)); !slices.Equal(got, []string{"qar-expired", "qar-new-1"}) {
		t.Fatalf("after first create: %v, want the zero-expiry row evicted first", got)
	}
	put(t, s, record("qar-new-2", 0, "active", false, t0.Add(time.Hour)), store.Absent)
	if got := ids(list(t, s)); !slices.Equal(got, []string{"qar-new-1", "qar-new-2"}) {
		t.Fatalf("after second create: %v", got)
	}
}

// A create that collides with an existing run id is a conflict and evicts
// nothing, even in a full store.
func TestCreateCollisionEvictsNothing(t *testing.T) {
	s := mustOpen(t, dbPath(t), WithMaxSessions(2))
	exp := t0.Add(time.Hour)
	put(t, s, record("qar-a", 0, "active", false, exp), store.Absent)
	put(t, s, record("qar-done", 0, "completed", true, exp), store.Absent)
	if err := s.Put(bg, record("qar-a", 0, "active", false, exp), store.Absent); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("colliding create = %v, want ErrConflict", err)
	}
	if got := ids(list(t, s)); !slices.Equal(got, []string{"qar-a", "qar-done"}) {
		t.Fatalf("rows after collision: %v", got)
	}
}

// Eviction and insert are one transaction: when the insert fails after the
// eviction ran, the evicted row is back.
func TestFailedCreateKeepsEvicted(t *testing.T) {
	path := dbPath(t)
	s := mustOpen(t, path, WithMaxSessions(1), WithLogger(slog.New(slog.DiscardHandler)))
	put(t, s, record("qar-done", 0, "completed", true, t0.Add(time.Hour)), store.Absent)
	// A trigger the Store would refuse at Open, planted behind its back,
	// fails the INSERT after makeRoom deleted qar-done.
	rawExec(t, path, `CREATE TRIGGER refuse_insert BEFORE INSERT ON qa_sessions
		BEGIN SELECT RAISE(ABORT, 'refused by test'); END`)
	if err := s.Put(bg, record("qar-new", 0, "active", false, t0.Add(time.Hour)), store.Absent); err == nil {
		t.Fatal("Put succeeded despite the trigger")
	}
	if got := ids(list(t, s)); !slices.Equal(got, []string{"qar-done"}) {
		t.Fatalf("rows after failed create: %v, want the eviction rolled back", got)
	}
}

// Two Stores on one file (two replicas) race creates for the last slot,
// the one a retained finished row must make room for: one winner, every
// other create ErrCapacity (never SQLITE_BUSY), and the finished row
// evicted exactly once.
func TestTwoStoresRaceForLastSlot(t *testing.T) {
	for round := range 10 {
		path := dbPath(t)
		a := mustOpen(t, path, WithMaxSessions(2))
		b := mustOpen(t, path, WithMaxSessions(2))
		exp := t0.Add(time.Hour)
		put(t, a, record("qar-held", 0, "active", false, exp), store.Absent)
		put(t, a, record("qar-done", 0, "completed", true, exp), store.Absent)
		const creators = 6
		errs := make([]error, creators)
		var wg sync.WaitGroup
		for i := range creators {
			s := []*Store{a, b}[i%2]
			wg.Go(func() {
				errs[i] = s.Put(bg, record(fmt.Sprintf("qar-new-%d", i), 0, "active", false, exp), store.Absent)
			})
		}
		wg.Wait()
		wins := 0
		for _, err := range errs {
			switch {
			case err == nil:
				wins++
			case !errors.Is(err, ErrCapacity):
				t.Fatalf("round %d: %v, want nil or ErrCapacity", round, err)
			}
		}
		rows := list(t, b)
		if wins != 1 || len(rows) != 2 || rows[0].RunID != "qar-held" {
			t.Fatalf("round %d: %d winners, rows %v; want 1 winner beside qar-held", round, wins, ids(rows))
		}
	}
}
