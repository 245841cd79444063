package postgres

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/diffpalhq/diffpal/internal/qa/store"
	"github.com/diffpalhq/diffpal/internal/qa/store/postgres/pgtest"
	"github.com/diffpalhq/diffpal/internal/qa/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func() store.Store { return mustOpen(t, pgtest.Start(t)) })
}

// The conformance suite again, with a capacity limit: creates then take
// the capacity-locked path.
func TestConformanceWithMaxSessions(t *testing.T) {
	storetest.Run(t, func() store.Store { return mustOpen(t, pgtest.Start(t), WithMaxSessions(50)) })
}

// Records survive a reopen exactly (nanosecond expiry, the zero time,
// empty payloads), and the reopened store continues the revision chain.
func TestReopenReadsBackEverything(t *testing.T) {
	url := pgtest.Start(t)
	s := mustOpen(t, url, WithValidate(jsonValidate))
	exp := t0.Add(30*time.Minute + 123456789*time.Nanosecond)
	want := []store.Record{
		record("qar-a", 3, "active", false, exp),
		record("qar-b", 7, "completed", true, exp.Add(time.Second)),
		record("qar-c", 1, "partial", false, exp.Add(2*time.Second)),
	}
	for _, r := range want {
		put(t, s, r, store.Absent)
	}
	s.Close()
	again := mustOpen(t, url, WithValidate(jsonValidate))
	got := list(t, again)
	if len(got) != len(want) {
		t.Fatalf("after reopen: %v", ids(got))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.RunID != w.RunID || g.Revision != w.Revision || g.Status != w.Status || g.Finalized != w.Finalized ||
			!g.ExpiresAt.Equal(w.ExpiresAt) || !bytes.Equal(g.Payload, w.Payload) {
			t.Fatalf("after reopen:\n got %+v\nwant %+v", g, w)
		}
	}
	if rep := again.Recovery(); rep.Loaded != 3 || len(rep.RemovedExpired)+len(rep.RemovedFinalized)+len(rep.Evicted) != 0 {
		t.Fatalf("Recovery = %+v", rep)
	}
	put(t, again, record("qar-a", 4, "awaiting_host_outcome", false, exp), 3)

	raw := mustOpen(t, url)
	zero := store.Record{RunID: "qar-zero", Status: "active"}
	put(t, raw, zero, store.Absent)
	r, err := raw.Get(ctxT(t), "qar-zero")
	if err != nil || !r.ExpiresAt.IsZero() || r.Payload == nil || len(r.Payload) != 0 {
		t.Fatalf("zero record read back as %+v, %v", r, err)
	}
}

// Writes the store could not keep faithfully are refused before SQL, and
// ids that cannot exist are simply not found.
func TestRefusedRecords(t *testing.T) {
	s := mustOpen(t, pgtest.Start(t), WithValidate(jsonValidate), WithLogger(slog.New(slog.DiscardHandler)))
	for _, r := range []store.Record{
		{RunID: "", Status: "active", Payload: []byte(`{"run_id":""}`)},
		{RunID: "qar-\x00", Status: "active", Payload: []byte(`{"run_id":"qar-\u0000"}`)},
		{RunID: "qar-\xff", Status: "active"},
		record("qar-neg", -3, "active", false, t0),
		{RunID: "qar-bad", Status: "active", Payload: []byte(`not json`)},
	} {
		if err := s.Put(ctxT(t), r, store.Absent); err == nil || !strings.Contains(err.Error(), "refused") {
			t.Errorf("Put(%q) = %v, want a refusal", r.RunID, err)
		}
	}
	if _, err := s.Get(ctxT(t), "qar-\x00"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get with NUL = %v", err)
	}
	if err := s.Delete(ctxT(t), "qar-\xff", store.AnyRevision); err != nil {
		t.Errorf("Delete invalid id = %v", err)
	}
}

// Many goroutines on two Stores (two replicas) race one conditional write:
// exactly one wins, every other gets ErrConflict, and the stored record is
// the winner's.
func TestRacingConditionalWritesTwoReplicas(t *testing.T) {
	url := pgtest.Start(t)
	a, b := mustOpen(t, url), mustOpen(t, url)
	for round := range 5 {
		id := fmt.Sprintf("qar-race-%d", round)
		put(t, a, record(id, 0, "active", false, t0.Add(time.Hour)), store.Absent)
		const n = 32
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			s := []*Store{a, b}[i%2]
			wg.Go(func() {
				r := record(id, 1, fmt.Sprintf("writer-%d", i), false, t0.Add(time.Hour))
				errs[i] = s.Put(ctxT(t), r, 0)
			})
		}
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil:
				if winner >= 0 {
					t.Fatalf("round %d: writers %d and %d both won", round, winner, i)
				}
				winner = i
			case !errors.Is(err, store.ErrConflict):
				t.Fatalf("round %d: writer %d: %v, want ErrConflict", round, i, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no writer won", round)
		}
		got, err := b.Get(ctxT(t), id)
		if err != nil || got.Status != fmt.Sprintf("writer-%d", winner) || got.Revision != 1 {
			t.Fatalf("round %d: stored %+v, %v; want writer-%d's", round, got, err, winner)
		}
		// And deletes: one of many racing conditional deletes wins.
		var dwins int
		var mu sync.Mutex
		for i := range n {
			s := []*Store{a, b}[i%2]
			wg.Go(func() {
				err := s.Delete(ctxT(t), id, 1)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					dwins++
				case !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrConflict):
					t.Errorf("delete: %v", err)
				}
			})
		}
		wg.Wait()
		if dwins != 1 {
			t.Fatalf("round %d: %d deletes won", round, dwins)
		}
	}
}

// 1,000 creates race against a limit of 100 from two Stores, each with its
// own pool (two replicas): exactly 100 succeed, every other create fails
// with ErrCapacity, and the table holds 100 rows.
func TestCapacityAtomicAcrossReplicas(t *testing.T) {
	url := pgtest.Start(t)
	opts := []Option{WithMaxSessions(100), WithAcquireTimeout(2 * time.Minute), WithStatementTimeout(2 * time.Minute)}
	a, b := mustOpen(t, url, opts...), mustOpen(t, url, opts...)
	const n = 1000
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		s := []*Store{a, b}[i%2]
		wg.Go(func() {
			errs[i] = s.Put(ctxT(t), record(fmt.Sprintf("qar-%04d", i), 0, "active", false, t0.Add(time.Hour)), store.Absent)
		})
	}
	wg.Wait()
	wins, full := 0, 0
	for i, err := range errs {
		switch {
		case err == nil:
			wins++
		case errors.Is(err, ErrCapacity) && errors.Is(err, store.ErrCapacity):
			full++
		default:
			t.Fatalf("create %d: %v, want nil or ErrCapacity", i, err)
		}
	}
	rows := rawScalar[int64](t, url, `SELECT count(*) FROM qa_sessions`)
	t.Logf("1000 creates, limit 100, two replicas: %d succeeded, %d ErrCapacity, %d rows", wins, full, rows)
	if wins != 100 || full != n-100 || rows != 100 {
		t.Fatalf("%d succeeded, %d ErrCapacity, %d rows; want 100, 900, 100", wins, full, rows)
	}
}

// A refused create changes nothing and is not logged; updates of a full
// store still work.
func TestCreateRefusedAtCapacity(t *testing.T) {
	var logs bytes.Buffer
	url := pgtest.Start(t)
	s := mustOpen(t, url, WithMaxSessions(2), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	exp := t0.Add(time.Hour)
	put(t, s, record("qar-a", 0, "active", false, exp), store.Absent)
	put(t, s, record("qar-b", 0, "awaiting_host_outcome", false, exp), store.Absent)
	if err := s.Put(ctxT(t), record("qar-c", 0, "active", false, exp), store.Absent); !errors.Is(err, ErrCapacity) {
		t.Fatalf("Put over capacity = %v, want ErrCapacity", err)
	}
	if got := ids(list(t, s)); !slices.Equal(got, []string{"qar-a", "qar-b"}) {
		t.Fatalf("rows after refused create: %v", got)
	}
	if logs.Len() != 0 {
		t.Fatalf("a capacity refusal was logged: %s", logs.String())
	}
	put(t, s, record("qar-a", 1, "awaiting_host_outcome", false, exp), 0)
}

// Eviction mirrors the SQLite store: rows holding no active slot go oldest
// (expires_at, run_id) first, one per create; expired and zero-expiry rows
// count as evictable; a collision evicts nothing.
func TestCreateEvictsOldestRetained(t *testing.T) {
	s := mustOpen(t, pgtest.Start(t), WithMaxSessions(4))
	put(t, s, record("qar-active", 0, "active", false, t0.Add(time.Minute)), store.Absent)
	put(t, s, record("qar-done-late", 0, "completed", true, t0.Add(3*time.Hour)), store.Absent)
	put(t, s, record("qar-done-b", 0, "partial", true, t0.Add(2*time.Hour)), store.Absent)
	put(t, s, record("qar-done-a", 0, "blocked", true, t0.Add(2*time.Hour)), store.Absent)
	if err := s.Put(ctxT(t), record("qar-done-a", 0, "active", false, t0), store.Absent); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("colliding create = %v", err)
	}
	for _, st := range []struct{ create, evicted string }{
		{"qar-new-1", "qar-done-a"}, {"qar-new-2", "qar-done-b"}, {"qar-new-3", "qar-done-late"},
	} {
		before := ids(list(t, s))
		put(t, s, record(st.create, 0, "active", false, t0.Add(time.Hour)), store.Absent)
		want := slices.DeleteFunc(slices.Clone(before), func(id string) bool { return id == st.evicted })
		want = append(want, st.create)
		slices.Sort(want)
		if got := ids(list(t, s)); !slices.Equal(got, want) {
			t.Fatalf("create %s: rows %v, want %v", st.create, got, want)
		}
	}
	if err := s.Put(ctxT(t), record("qar-new-4", 0, "active", false, t0.Add(time.Hour)), store.Absent); !errors.Is(err, ErrCapacity) {
		t.Fatalf("create with only active rows = %v, want ErrCapacity", err)
	}

	e := mustOpen(t, pgtest.Start(t), WithMaxSessions(2))
	put(t, e, record("qar-expired", 0, "active", false, t0.Add(-time.Minute)), store.Absent)
	put(t, e, record("qar-zero", 0, "active", false, time.Time{}), store.Absent)
	put(t, e, record("qar-new-1", 0, "active", false, t0.Add(time.Hour)), store.Absent)
	if got := ids(list(t, e)); !slices.Equal(got, []string{"qar-expired", "qar-new-1"}) {
		t.Fatalf("after first create: %v, want the zero-expiry row evicted first", got)
	}
}

// Eviction and insert are one transaction: an insert failing after the
// eviction leaves the evicted row in place.
func TestFailedCreateKeepsEvicted(t *testing.T) {
	url := pgtest.Start(t)
	s := mustOpen(t, url, WithMaxSessions(1), WithLogger(slog.New(slog.DiscardHandler)))
	put(t, s, record("qar-done", 0, "completed", true, t0.Add(time.Hour)), store.Absent)
	rawExec(t, url, `CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'refused by test'; END $$`)
	rawExec(t, url, `CREATE TRIGGER refuse_insert BEFORE INSERT ON qa_sessions FOR EACH ROW EXECUTE FUNCTION refuse()`)
	if err := s.Put(ctxT(t), record("qar-new", 0, "active", false, t0.Add(time.Hour)), store.Absent); err == nil {
		t.Fatal("Put succeeded despite the trigger")
	}
	if got := ids(list(t, s)); !slices.Equal(got, []string{"qar-done"}) {
		t.Fatalf("rows after failed create: %v, want the eviction rolled back", got)
	}
}

// Several Opens racing on an empty database migrate it once: one schema,
// one qa_schema_migrations row per version, every Open succeeds.
func TestConcurrentMigrationsApplyOnce(t *testing.T) {
	url := pgtest.Start(t)
	const n = 6
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			s, err := Open(ctxT(t), url)
			if err == nil {
				s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Open %d: %v", i, err)
		}
	}
	if got := rawScalar[int64](t, url, `SELECT count(*) FROM qa_schema_migrations`); got != SchemaVersion {
		t.Fatalf("%d migration rows, want %d", got, SchemaVersion)
	}
	if got := rawScalar[int64](t, url, `SELECT count(*) FROM pg_tables WHERE tablename IN ('qa_sessions', 'qa_capacity_lock')`); got != 2 {
		t.Fatalf("%d tables", got)
	}
	if got := rawScalar[int64](t, url, `SELECT count(*) FROM qa_capacity_lock`); got != 1 {
		t.Fatalf("%d capacity lock rows, want 1", got)
	}
}

// A database migrated by a newer build is refused and left alone.
func TestNewerSchemaRefused(t *testing.T) {
	url := pgtest.Start(t)
	mustOpen(t, url).Close()
	rawExec(t, url, `INSERT INTO qa_schema_migrations (version, name) VALUES (99, '0099_future')`)
	if _, err := Open(ctxT(t), url); !errors.Is(err, ErrUnsupportedSchema) {
		t.Fatalf("Open = %v, want ErrUnsupportedSchema", err)
	}
	if got := rawScalar[int64](t, url, `SELECT count(*) FROM qa_schema_migrations`); got != SchemaVersion+1 {
		t.Fatalf("the refused database changed: %d migration rows", got)
	}
}

// Start-up recovery mirrors the SQLite store: an invalid row refuses the
// open and changes nothing; expired rows are purged; finalized rows go
// only when asked; more active rows than the limit refuse the open;
// terminal rows are evicted oldest first to fit.
func TestStartupRecovery(t *testing.T) {
	url := pgtest.Start(t)
	s := mustOpen(t, url)
	put(t, s, record("qar-active", 0, "active", false, t0.Add(time.Hour)), store.Absent)
	put(t, s, record("qar-expired", 0, "active", false, t0.Add(-time.Hour)), store.Absent)
	put(t, s, record("qar-final", 0, "completed", true, t0.Add(2*time.Hour)), store.Absent)
	put(t, s, record("qar-old-done", 0, "partial", false, t0.Add(30*time.Minute)), store.Absent)
	put(t, s, store.Record{RunID: "qar-bad", Status: "active", ExpiresAt: t0.Add(time.Hour), Payload: []byte("garbage")}, store.Absent)
	s.Close()

	if _, err := Open(ctxT(t), url, WithClock(clock), WithValidate(jsonValidate)); !errors.Is(err, ErrInvalidData) ||
		strings.Contains(err.Error(), "garbage") || !strings.Contains(err.Error(), "qar-bad") {
		t.Fatalf("Open with an invalid row = %v, want ErrInvalidData naming the row, not its payload", err)
	}
	if got := rawScalar[int64](t, url, `SELECT count(*) FROM qa_sessions`); got != 5 {
		t.Fatalf("refused open changed rows: %d", got)
	}
	rawExec(t, url, `DELETE FROM qa_sessions WHERE run_id = 'qar-bad'`)

	if _, err := Open(ctxT(t), url, WithClock(clock), WithKeepExpired(true), WithMaxSessions(1)); !errors.Is(err, ErrCapacity) {
		t.Fatalf("Open with 2 active rows over limit 1 = %v, want ErrCapacity", err)
	}
	r := mustOpen(t, url, WithValidate(jsonValidate), WithRemoveFinalized(true), WithMaxSessions(1))
	rep := r.Recovery()
	if rep.Loaded != 4 || !slices.Equal(rep.RemovedExpired, []string{"qar-expired"}) ||
		!slices.Equal(rep.RemovedFinalized, []string{"qar-final"}) || !slices.Equal(rep.Evicted, []string{"qar-old-done"}) {
		t.Fatalf("Recovery = %+v", rep)
	}
	if got := ids(list(t, r)); !slices.Equal(got, []string{"qar-active"}) {
		t.Fatalf("rows after recovery: %v", got)
	}
}

// Sweep removes expired rows only; sweepers on every replica at once
// delete each row exactly once; a row another transaction holds is
// skipped, not waited for.
func TestSweep(t *testing.T) {
	url := pgtest.Start(t)
	a, b := mustOpen(t, url), mustOpen(t, url)
	const expired = 1200
	rawExec(t, url, `INSERT INTO qa_sessions (run_id, revision, status, finalized, expires_at_unix_ns, payload)
		SELECT 'qar-x' || lpad(i::text, 5, '0'), 0, 'active', false, $1, ''::bytea FROM generate_series(1, $2) i`,
		t0.Add(-time.Minute).UnixNano(), expired)
	put(t, a, record("qar-live", 0, "active", false, t0.Add(time.Hour)), store.Absent)
	put(t, a, record("qar-zero", 0, "completed", true, time.Time{}), store.Absent)

	release := holdRowLock(t, url, "qar-x00001")
	counts := make([]int, 4)
	var wg sync.WaitGroup
	for i := range counts {
		s := []*Store{a, b}[i%2]
		wg.Go(func() {
			n, err := s.Sweep(ctxT(t))
			if err != nil {
				t.Errorf("Sweep: %v", err)
			}
			counts[i] = n
		})
	}
	wg.Wait()
	sum := 0
	for _, n := range counts {
		sum += n
	}
	t.Logf("4 concurrent sweeps deleted %v rows (sum %d of %d expired, one locked)", counts, sum, expired+1)
	if sum != expired { // every expired row but the locked one, plus the zero-expiry row
		t.Fatalf("sweeps deleted %d rows in all, want %d", sum, expired)
	}
	release()
	n, err := a.Sweep(ctxT(t))
	if err != nil || n != 1 {
		t.Fatalf("sweep after release: %d, %v; want the formerly locked row", n, err)
	}
	if got := ids(list(t, a)); !slices.Equal(got, []string{"qar-live"}) {
		t.Fatalf("rows after sweeps: %v", got)
	}
}

// WithSweepInterval runs Sweep in the background until Close.
func TestBackgroundSweeper(t *testing.T) {
	url := pgtest.Start(t)
	s := mustOpen(t, url, WithKeepExpired(true), WithSweepInterval(20*time.Millisecond))
	put(t, s, record("qar-old", 0, "active", false, t0.Add(-time.Minute)), store.Absent)
	ctx := ctxT(t)
	for {
		if _, err := s.Get(ctx, "qar-old"); errors.Is(err, store.ErrNotFound) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the background sweeper never removed the expired row")
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
