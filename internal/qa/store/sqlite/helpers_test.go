package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/diffpalhq/diffpal/internal/qa/store"
)

var (
	bg    = context.Background()
	t0    = time.Date(2026, 10, 14, 12, 0, 0, 0, time.UTC)
	clock = func() time.Time { return t0 }
)

func dbPath(t *testing.T) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "qa.db")
}

func mustOpen(t *testing.T, path string, opts ...Option) *Store {
	t.Helper()
	s, err := Open(bg, path, append([]Option{WithClock(clock)}, opts...)...)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// record builds a record whose payload is JSON naming its run id, which is
// what jsonValidate checks.
func record(id string, rev int64, status string, finalized bool, exp time.Time) store.Record {
	p, _ := json.Marshal(map[string]any{"run_id": id, "revision": rev})
	return store.Record{RunID: id, Revision: rev, Status: status, Finalized: finalized, ExpiresAt: exp, Payload: p}
}

// jsonValidate stands in for the qa package's hook: the payload must be a
// JSON object whose run_id matches the row.
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

func put(t *testing.T, s store.Store, r store.Record, expected int64) {
	t.Helper()
	if err := s.Put(bg, r, expected); err != nil {
		t.Fatalf("Put %s@%d: %v", r.RunID, expected, err)
	}
}

func ids(recs []store.Record) []string {
	out := []string{}
	for _, r := range recs {
		out = append(out, r.RunID)
	}
	return out
}

func list(t *testing.T, s store.Store) []store.Record {
	t.Helper()
	recs, err := s.List(bg)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func sameRecord(a, b store.Record) bool {
	return a.RunID == b.RunID && a.Revision == b.Revision && a.Status == b.Status &&
		a.Finalized == b.Finalized && a.ExpiresAt.Equal(b.ExpiresAt) && bytes.Equal(a.Payload, b.Payload)
}

// rawExec runs statements on the file through a plain connection, to plant
// rows and schemas the Store itself would never write.
func rawExec(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// openFails asserts that Open refuses path with want and leaves the file
// byte-identical.
func openFails(t *testing.T, path string, want error, opts ...Option) error {
	t.Helper()
	before := readFile(t, path)
	s, err := Open(bg, path, append([]Option{WithClock(clock)}, opts...)...)
	if err == nil {
		s.Close()
		t.Fatalf("Open succeeded, want %v", want)
	}
	if !errors.Is(err, want) {
		t.Fatalf("Open error = %v, want %v", err, want)
	}
	if !bytes.Equal(before, readFile(t, path)) {
		t.Fatal("a refused Open changed the file")
	}
	return err
}
