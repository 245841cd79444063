package sqlite

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/diffpalhq/diffpal/internal/qa/store"
	"github.com/diffpalhq/diffpal/internal/qa/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func() store.Store {
		s, err := Open(bg, dbPath(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

func TestRestartReadsBackEverything(t *testing.T) {
	path := dbPath(t)
	s := mustOpen(t, path, WithValidate(jsonValidate))
	exp := t0.Add(30*time.Minute + 123456789*time.Nanosecond) // nanoseconds survive
	want := []store.Record{
		record("qar-a", 3, "active", false, exp),
		record("qar-b", 7, "completed", true, exp.Add(time.Second)),
		record("qar-c", 1, "partial", false, exp.Add(2*time.Second)),
	}
	for _, r := range want {
		put(t, s, r, store.Absent)
	}
	put(t, s, record("qar-d", 0, "active", false, exp), store.Absent)
	if err := s.Delete(bg, "qar-d", 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	again := mustOpen(t, path, WithValidate(jsonValidate))
	got := list(t, again)
	if len(got) != len(want) {
		t.Fatalf("after restart: %v, want %v", ids(got), ids(want))
	}
	for i := range want {
		if !sameRecord(got[i], want[i]) {
			t.Fatalf("after restart:\n got %+v\nwant %+v", got[i], want[i])
		}
	}
	if rep := again.Recovery(); rep.Loaded != 3 || len(rep.RemovedFinalized)+len(rep.RemovedExpired)+len(rep.Evicted) != 0 {
		t.Fatalf("Recovery = %+v", rep)
	}
	// The reopened store continues the revision chain.
	put(t, again, record("qar-a", 4, "awaiting_host_outcome", false, exp), 3)
	if err := again.Put(bg, record("qar-a", 5, "active", false, exp), 3); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("stale write after restart: %v", err)
	}
}

func TestZeroExpiryRoundTrips(t *testing.T) {
	path := dbPath(t)
	s := mustOpen(t, path, WithKeepExpired(true))
	r := record("qar-z", 0, "active", false, time.Time{})
	put(t, s, r, store.Absent)
	got, err := s.Get(bg, "qar-z")
	if err != nil || !got.ExpiresAt.IsZero() || !sameRecord(got, r) {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	s.Close()
	if got := list(t, mustOpen(t, path, WithKeepExpired(true))); len(got) != 1 || !got[0].ExpiresAt.IsZero() {
		t.Fatalf("after restart %+v", got)
	}
	// Without WithKeepExpired the zero time counts as long expired.
	s3 := mustOpen(t, path)
	if got := list(t, s3); len(got) != 0 {
		t.Fatalf("zero-expiry row survived the purge: %v", ids(got))
	}
}

// TestFailedWritesChangeNothing checks every refused write leaves the
// stored record (and, after a restart, the file) as it was.
func TestFailedWritesChangeNothing(t *testing.T) {
	path := dbPath(t)
	s := mustOpen(t, path, WithValidate(jsonValidate))
	exp := t0.Add(time.Hour)
	orig := record("qar-a", 2, "active", false, exp)
	put(t, s, orig, store.Absent)

	canceled, cancel := context.WithCancel(bg)
	cancel()
	bad := record("qar-a", 3, "completed", true, exp.Add(time.Hour))
	notJSON := bad
	notJSON.Payload = []byte("{not json")
	tooLate := bad
	tooLate.ExpiresAt = time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)
	negative := bad
	negative.Revision = -1
	cases := []struct {
		name string
		err  func() error
		want error
	}{
		{"stale revision", func() error { return s.Put(bg, bad, 1) }, store.ErrConflict},
		{"create over existing", func() error { return s.Put(bg, bad, store.Absent) }, store.ErrConflict},
		{"canceled context", func() error { return s.Put(canceled, bad, 2) }, context.Canceled},
		{"canceled delete", func() error { return s.Delete(canceled, "qar-a", store.AnyRevision) }, context.Canceled},
		{"stale delete", func() error { return s.Delete(bg, "qar-a", 1) }, store.ErrConflict},
		{"invalid payload", func() error { return s.Put(bg, notJSON, 2) }, nil},
		{"unstorable expiry", func() error { return s.Put(bg, tooLate, 2) }, nil},
		{"negative revision", func() error { return s.Put(bg, negative, 2) }, nil},
	}
	for _, tc := range cases {
		err := tc.err()
		if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Fatalf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
		got, gerr := s.Get(bg, "qar-a")
		if gerr != nil || !sameRecord(got, orig) {
			t.Fatalf("%s changed the record: %+v, %v", tc.name, got, gerr)
		}
	}
	// A deadline that runs out while another connection holds the write
	// lock fails the write and leaves nothing behind.
	holder := holdWriteLock(t, path)
	short, cancel2 := context.WithTimeout(bg, 100*time.Millisecond)
	defer cancel2()
	if err := s.Put(short, bad, 2); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Put under a held lock with a short deadline: %v", err)
	}
	holder()
	s.Close()
	got := list(t, mustOpen(t, path, WithValidate(jsonValidate)))
	if len(got) != 1 || !sameRecord(got[0], orig) {
		t.Fatalf("after restart %+v", got)
	}
}

func TestClosedStoreErrors(t *testing.T) {
	s := mustOpen(t, dbPath(t))
	s.Close()
	if _, err := s.Get(bg, "qar-a"); err == nil || errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get on closed store: %v", err)
	}
	if err := s.Put(bg, record("qar-a", 0, "active", false, t0), store.Absent); err == nil {
		t.Fatal("Put on closed store succeeded")
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestErrorsNameThePath(t *testing.T) {
	path := dbPath(t)
	s := mustOpen(t, path)
	err := s.Put(bg, record("", 0, "active", false, t0), store.Absent)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "empty run_id") {
		t.Fatalf("err = %v", err)
	}
	if _, statErr := os.Stat(path); statErr != nil {
		t.Fatal(statErr)
	}
}
