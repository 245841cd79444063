package sqlite

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/diffpalhq/diffpal/internal/qa/store"
)

// seed writes recs into a fresh store file and closes it.
func seed(t *testing.T, recs ...store.Record) string {
	t.Helper()
	path := dbPath(t)
	s, err := Open(bg, path, WithKeepExpired(true))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		put(t, s, r, store.Absent)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestFinalizedRowsKeptByDefault(t *testing.T) {
	live := t0.Add(time.Hour)
	path := seed(t,
		record("qar-a", 1, "active", false, live),
		record("qar-f", 4, "completed", true, live),
		record("qar-p", 2, "partial", false, live), // early stop, not yet finalized
	)
	s := mustOpen(t, path)
	if got := ids(list(t, s)); !slices.Equal(got, []string{"qar-a", "qar-f", "qar-p"}) {
		t.Fatalf("default recovery kept %v", got)
	}
	s.Close()

	s2 := mustOpen(t, path, WithRemoveFinalized(true))
	if got := ids(list(t, s2)); !slices.Equal(got, []string{"qar-a", "qar-p"}) {
		t.Fatalf("WithRemoveFinalized kept %v", got)
	}
	if rep := s2.Recovery(); !slices.Equal(rep.RemovedFinalized, []string{"qar-f"}) || rep.Loaded != 3 {
		t.Fatalf("Recovery = %+v", rep)
	}
	s2.Close()
	if got := ids(list(t, mustOpen(t, path))); !slices.Equal(got, []string{"qar-a", "qar-p"}) {
		t.Fatalf("the removal was not persisted: %v", got)
	}
}

func TestExpiredRowsPurgedAtStartup(t *testing.T) {
	path := seed(t,
		record("qar-a", 0, "active", false, t0.Add(time.Nanosecond)),
		record("qar-b", 0, "active", false, t0), // expires_at <= now is expired
		record("qar-c", 0, "completed", true, t0.Add(-time.Hour)),
	)
	kept := mustOpen(t, path, WithKeepExpired(true))
	if got := ids(list(t, kept)); len(got) != 3 {
		t.Fatalf("WithKeepExpired kept %v", got)
	}
	kept.Close()
	s := mustOpen(t, path)
	if got := ids(list(t, s)); !slices.Equal(got, []string{"qar-a"}) {
		t.Fatalf("kept %v", got)
	}
	if rep := s.Recovery(); !slices.Equal(rep.RemovedExpired, []string{"qar-b", "qar-c"}) {
		t.Fatalf("Recovery = %+v", rep)
	}
}

func TestInvalidRowsFailStartupAndChangeNothing(t *testing.T) {
	live := t0.Add(time.Hour)
	tests := []struct {
		name  string
		plant string
	}{
		{"payload not JSON", `INSERT INTO qa_sessions VALUES ('qar-x', 0, 'active', 0, 1, CAST('{oops' AS BLOB))`},
		{"run id mismatch", `INSERT INTO qa_sessions VALUES ('qar-x', 0, 'active', 0, 1, CAST('{"run_id":"qar-y"}' AS BLOB))`},
		{"empty run id", `INSERT INTO qa_sessions VALUES ('', 0, 'active', 0, 1, CAST('{"run_id":""}' AS BLOB))`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// A good row next to the bad one, plus expired and finalized
			// rows that recovery would otherwise delete: none may go.
			path := seed(t,
				record("qar-a", 0, "active", false, live),
				record("qar-e", 0, "active", false, t0.Add(-time.Hour)),
				record("qar-f", 1, "completed", true, live),
			)
			rawExec(t, path, tc.plant)
			err := openFails(t, path, ErrInvalidData, WithValidate(jsonValidate), WithRemoveFinalized(true))
			if !strings.Contains(err.Error(), "1 of 4 rows invalid") || !strings.Contains(err.Error(), path) {
				t.Fatalf("error does not say what and where: %v", err)
			}
			if strings.Contains(err.Error(), "oops") {
				t.Fatalf("error echoes the payload: %v", err)
			}
		})
	}
	t.Run("structural checks apply without a hook", func(t *testing.T) {
		path := seed(t, record("qar-a", 0, "active", false, live))
		rawExec(t, path, tests[2].plant)
		openFails(t, path, ErrInvalidData)
	})
}

func TestCapacityAtStartup(t *testing.T) {
	live := t0.Add(time.Hour)
	t.Run("evicts oldest terminal first", func(t *testing.T) {
		path := seed(t,
			record("qar-a1", 0, "active", false, live),
			record("qar-a2", 0, "awaiting_host_outcome", false, live),
			record("qar-t3", 0, "blocked", true, live.Add(3*time.Second)),
			record("qar-t2b", 0, "partial", false, live.Add(2*time.Second)),
			record("qar-t2a", 0, "completed", true, live.Add(2*time.Second)),
			record("qar-t1", 0, "completed", false, live.Add(time.Second)),
		)
		s := mustOpen(t, path, WithMaxSessions(3))
		if got := ids(list(t, s)); !slices.Equal(got, []string{"qar-a1", "qar-a2", "qar-t3"}) {
			t.Fatalf("kept %v", got)
		}
		// Oldest expiry first, run_id breaking the tie.
		if rep := s.Recovery(); !slices.Equal(rep.Evicted, []string{"qar-t1", "qar-t2a", "qar-t2b"}) {
			t.Fatalf("Evicted = %v", rep.Evicted)
		}
	})
	t.Run("exactly max active is fine", func(t *testing.T) {
		path := seed(t,
			record("qar-a1", 0, "active", false, live),
			record("qar-a2", 0, "active", false, live),
			record("qar-t1", 0, "completed", true, live),
		)
		s := mustOpen(t, path, WithMaxSessions(2))
		if got := ids(list(t, s)); !slices.Equal(got, []string{"qar-a1", "qar-a2"}) {
			t.Fatalf("kept %v", got)
		}
	})
	t.Run("expired rows do not count", func(t *testing.T) {
		path := seed(t,
			record("qar-a1", 0, "active", false, live),
			record("qar-a2", 0, "active", false, t0),
		)
		if got := ids(list(t, mustOpen(t, path, WithMaxSessions(1)))); !slices.Equal(got, []string{"qar-a1"}) {
			t.Fatalf("kept %v", got)
		}
	})
	t.Run("more active than max fails", func(t *testing.T) {
		path := seed(t,
			record("qar-a1", 0, "active", false, live),
			record("qar-a2", 0, "awaiting_host_outcome", false, live),
			record("qar-e", 0, "active", false, t0.Add(-time.Hour)),
			record("qar-t1", 0, "completed", true, live),
		)
		err := openFails(t, path, ErrCapacity, WithMaxSessions(1))
		if !strings.Contains(err.Error(), "2 active sessions, limit 1") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestSchemaRefusals(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, path string)
	}{
		{"duplicate metadata rows", func(t *testing.T, path string) {
			seedAt(t, path)
			rawExec(t, path, `INSERT INTO qa_store_meta VALUES (1)`)
		}},
		{"newer schema version", func(t *testing.T, path string) {
			seedAt(t, path)
			rawExec(t, path, `UPDATE qa_store_meta SET schema_version = 2`, `PRAGMA user_version = 2`)
		}},
		{"user_version disagrees", func(t *testing.T, path string) {
			seedAt(t, path)
			rawExec(t, path, `PRAGMA user_version = 7`)
		}},
		{"foreign object", func(t *testing.T, path string) {
			seedAt(t, path)
			rawExec(t, path, `CREATE TRIGGER qa_spy AFTER INSERT ON qa_sessions BEGIN SELECT 1; END`)
		}},
		{"missing sessions table", func(t *testing.T, path string) {
			seedAt(t, path)
			rawExec(t, path, `DROP TABLE qa_sessions`)
		}},
		{"anchor session store", func(t *testing.T, path string) {
			rawExec(t, path,
				`CREATE TABLE session_store_metadata (schema_version INTEGER NOT NULL)`,
				`INSERT INTO session_store_metadata VALUES (1)`,
				`CREATE TABLE sessions (run_id TEXT PRIMARY KEY, payload TEXT NOT NULL)`)
		}},
		{"unrelated database", func(t *testing.T, path string) {
			rawExec(t, path, `CREATE TABLE notes (body TEXT)`, `INSERT INTO notes VALUES ('keep me')`)
		}},
		{"not a database", func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte(strings.Repeat("this is not sqlite\n", 64)), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := dbPath(t)
			tc.setup(t, path)
			openFails(t, path, ErrUnsupportedSchema)
		})
	}
}

func seedAt(t *testing.T, path string) {
	t.Helper()
	s, err := Open(bg, path)
	if err != nil {
		t.Fatal(err)
	}
	put(t, s, record("qar-a", 0, "active", false, t0.Add(time.Hour)), store.Absent)
	s.Close()
}

func TestValidateHookGuardsWrites(t *testing.T) {
	path := dbPath(t)
	s := mustOpen(t, path, WithValidate(jsonValidate))
	bad := record("qar-a", 0, "active", false, t0.Add(time.Hour))
	bad.Payload = []byte(`{"run_id":"qar-other"}`)
	if err := s.Put(bg, bad, store.Absent); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("Put of a record start-up would refuse: %v", err)
	}
	if _, err := s.Get(bg, "qar-a"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("refused Put wrote something: %v", err)
	}
}
