package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/diffpalhq/diffpal/internal/qa/store"
	"github.com/diffpalhq/diffpal/internal/qa/store/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var (
	bg    = context.Background()
	t0    = time.Date(2026, 10, 14, 12, 0, 0, 0, time.UTC)
	clock = func() time.Time { return t0 }
)

// ctxT is a generous bound so a bug hangs no test; never asserted on.
func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(bg, 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func mustOpen(t *testing.T, url string, opts ...Option) *Store {
	t.Helper()
	s, err := Open(ctxT(t), url, append([]Option{WithClock(clock)}, opts...)...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func record(id string, rev int64, status string, finalized bool, exp time.Time) store.Record {
	p, _ := json.Marshal(map[string]any{"run_id": id, "revision": rev})
	return store.Record{RunID: id, Revision: rev, Status: status, Finalized: finalized, ExpiresAt: exp, Payload: p}
}

func jsonValidate(r store.Record) error {
	var p struct {
		RunID string `json:"run_id"`
	}
	if err := json.Unmarshal(r.Payload, &p); err != nil {
		return fmt.Errorf("payload is not JSON")
	}
	if p.RunID != r.RunID {
		return errors.New("payload run_id differs from the row's")
	}
	return nil
}

func put(t *testing.T, s *Store, r store.Record, expected int64) {
	t.Helper()
	if err := s.Put(ctxT(t), r, expected); err != nil {
		t.Fatalf("Put(%s, %d): %v", r.RunID, expected, err)
	}
}

func list(t *testing.T, s *Store) []store.Record {
	t.Helper()
	recs, err := s.List(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func ids(recs []store.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.RunID
	}
	return out
}

// rawExec runs SQL on url behind the Store's back.
func rawExec(t *testing.T, url, sql string, args ...any) {
	t.Helper()
	conn, err := pgx.Connect(ctxT(t), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(bg)
	if _, err := conn.Exec(ctxT(t), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func rawScalar[T any](t *testing.T, url, sql string, args ...any) T {
	t.Helper()
	conn, err := pgx.Connect(ctxT(t), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(bg)
	var v T
	if err := conn.QueryRow(ctxT(t), sql, args...).Scan(&v); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return v
}

// holdRowLock locks one qa_sessions row from a connection of its own until
// the returned function is called.
func holdRowLock(t *testing.T, url, runID string) (release func()) {
	t.Helper()
	conn, err := pgx.Connect(ctxT(t), url)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctxT(t), `SELECT 1 FROM qa_sessions WHERE run_id = $1 FOR UPDATE`, runID); err != nil {
		t.Fatal(err)
	}
	done := false
	release = func() {
		if done {
			return
		}
		done = true
		_ = tx.Rollback(bg)
		_ = conn.Close(bg)
	}
	t.Cleanup(release)
	return release
}

// waitForLockWaiters polls until n statements of the store's connections
// are waiting on a lock (proof that they are in flight).
func waitForLockWaiters(t *testing.T, url string, n int) {
	t.Helper()
	ctx := ctxT(t)
	for {
		got := rawScalar[int64](t, url, `SELECT count(*) FROM pg_stat_activity
			WHERE application_name = 'diffpal-mcp' AND wait_event_type = 'Lock' AND datname = current_database()`)
		if got >= int64(n) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d statements waiting on a lock, want %d", got, n)
		case <-time.After(10 * time.Millisecond):
		}
	}
}
