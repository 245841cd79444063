package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/diffpalhq/diffpal/internal/qa/store"
)

// SchemaVersion is the schema this build writes and reads. A file at a
// different version is refused until a migration for it exists.
const SchemaVersion = 1

// schemaV1 is the layout, written to port unchanged to a shared SQL store:
// PostgreSQL takes the same tables with BIGINT for INTEGER, BOOLEAN for
// finalized, BYTEA for payload and run_id TEXT COLLATE "C" (List orders by
// byte value, as SQLite's BINARY collation does). The columns beside the
// payload are the ones store.Record names, so purge, eviction and
// conditional writes never decode a payload. Expiry is Unix nanoseconds so
// it round-trips exactly; NULL is the zero time.
//
// qa_store_meta has exactly one row (the anchor's session_store_metadata);
// PRAGMA user_version mirrors it for tools that only read the header. A
// migration to version N+1 runs inside the start-up transaction and updates
// both.
var schemaV1 = []string{
	`CREATE TABLE qa_store_meta (
		schema_version INTEGER NOT NULL
	) STRICT`,
	`CREATE TABLE qa_sessions (
		run_id             TEXT    NOT NULL PRIMARY KEY,
		revision           INTEGER NOT NULL CHECK (revision >= 0),
		status             TEXT    NOT NULL,
		finalized          INTEGER NOT NULL CHECK (finalized IN (0, 1)),
		expires_at_unix_ns INTEGER,
		payload            BLOB    NOT NULL
	) STRICT, WITHOUT ROWID`,
	`CREATE INDEX qa_sessions_expiry ON qa_sessions (expires_at_unix_ns, run_id)`,
	fmt.Sprintf(`INSERT INTO qa_store_meta (schema_version) VALUES (%d)`, SchemaVersion),
	fmt.Sprintf(`PRAGMA user_version = %d`, SchemaVersion),
}

// schemaObjects is every schema object a version-1 file holds.
var schemaObjects = map[string]string{
	"qa_store_meta":      "table",
	"qa_sessions":        "table",
	"qa_sessions_expiry": "index",
}

// start checks the connection, then creates or verifies the schema and runs
// recovery in one write transaction: other processes opening the same file
// wait, and any refusal rolls back, leaving the file as it was.
func (s *Store) start(ctx context.Context, checked os.FileInfo) error {
	var mode string
	if err := s.db.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
		return s.openErr(err)
	}
	// The identity check comes after SQLite opened the file (the query
	// above), so a swap between prepareFile and that open is caught.
	if err := fileChanged(s.path, checked); err != nil {
		return err
	}
	if !strings.EqualFold(mode, "delete") {
		return fmt.Errorf("qa sqlite store %s: journal mode is %q and could not be set to DELETE (another program has the file open in that mode)", s.path, mode)
	}
	var sync int
	if err := s.db.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&sync); err != nil {
		return s.openErr(err)
	}
	if sync != 2 {
		return fmt.Errorf("qa sqlite store %s: synchronous is %d, want 2 (FULL)", s.path, sync)
	}

	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.openErr(err)
	}
	defer func() { _ = tx.Rollback() }()
	if err := s.schema(ctx, tx); err != nil {
		return err
	}
	if err := s.recover(ctx, tx); err != nil {
		return err
	}
	// Prove now that the store can be written, rather than starting a
	// server that fails every write: change a row and change it back, so
	// that SQLite must create its journal beside the file and write the
	// file itself (an update to an identical value writes nothing).
	for _, stmt := range []string{
		`UPDATE qa_store_meta SET schema_version = schema_version + 1`,
		`UPDATE qa_store_meta SET schema_version = schema_version - 1`,
	} {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return s.notWritable(err)
		}
	}
	if err := tx.Commit(); err != nil {
		return s.notWritable(err)
	}
	return nil
}

// notWritable explains a failed start-up write.
func (s *Store) notWritable(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	hint := ""
	switch sqliteCode(err) {
	case 8: // SQLITE_READONLY
		hint = fmt.Sprintf("; the file and its directory %s must be writable by this user (SQLite creates its journal there)", filepath.Dir(s.path))
	case 14: // SQLITE_CANTOPEN
		hint = fmt.Sprintf("; SQLite could not create its journal in %s", filepath.Dir(s.path))
	}
	return fmt.Errorf("qa sqlite store %s: %w: %v%s", s.path, ErrNotWritable, err, hint)
}

func (s *Store) openErr(err error) error {
	if code := sqliteCode(err); code == 26 { // SQLITE_NOTADB
		return fmt.Errorf("qa sqlite store %s: %w: the file is not an SQLite database", s.path, ErrUnsupportedSchema)
	}
	return fmt.Errorf("qa sqlite store %s: open: %w", s.path, err)
}

func (s *Store) unsupported(format string, args ...any) error {
	return fmt.Errorf("qa sqlite store %s: %w: %s", s.path, ErrUnsupportedSchema, fmt.Sprintf(format, args...))
}

// schema creates the tables in an empty database, or verifies that the
// file holds exactly a version-SchemaVersion session store.
func (s *Store) schema(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, `SELECT type, name FROM sqlite_master ORDER BY name`)
	if err != nil {
		return s.openErr(err)
	}
	found := map[string]string{}
	var names []string
	for rows.Next() {
		var typ, name string
		if err := rows.Scan(&typ, &name); err != nil {
			rows.Close()
			return s.openErr(err)
		}
		found[name] = typ
		names = append(names, name)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return s.openErr(err)
	}
	var userVersion int64
	if err := tx.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&userVersion); err != nil {
		return s.openErr(err)
	}

	if len(found) == 0 {
		if userVersion != 0 {
			return s.unsupported("empty database with user_version %d", userVersion)
		}
		for _, stmt := range schemaV1 {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("qa sqlite store %s: create schema: %w", s.path, err)
			}
		}
		return nil
	}

	if found["qa_store_meta"] != "table" {
		return s.unsupported("no qa_store_meta table; the file is not a diffpal session store")
	}
	versions, err := s.metaVersions(ctx, tx)
	if err != nil {
		return err
	}
	if len(versions) != 1 {
		return s.unsupported("qa_store_meta has %d rows, want exactly 1", len(versions))
	}
	if v := versions[0]; v != SchemaVersion {
		return s.unsupported("schema version %d, this build reads version %d", v, SchemaVersion)
	}
	if userVersion != SchemaVersion {
		return s.unsupported("PRAGMA user_version is %d but qa_store_meta says %d", userVersion, SchemaVersion)
	}
	for _, name := range names {
		if strings.HasPrefix(name, "sqlite_") {
			continue // SQLite's own (autoindex, stat tables)
		}
		if want, ok := schemaObjects[name]; !ok || found[name] != want {
			return s.unsupported("unexpected %s %q", found[name], name)
		}
	}
	for name, typ := range schemaObjects {
		if found[name] != typ {
			return s.unsupported("missing %s %q", typ, name)
		}
	}
	return nil
}

func (s *Store) metaVersions(ctx context.Context, tx *sql.Tx) ([]int64, error) {
	rows, err := tx.QueryContext(ctx, `SELECT schema_version FROM qa_store_meta`)
	if err != nil {
		return nil, s.openErr(err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var v sql.NullInt64
		if err := rows.Scan(&v); err != nil || !v.Valid {
			return nil, s.unsupported("qa_store_meta.schema_version is not an integer")
		}
		out = append(out, v.Int64)
	}
	if err := rows.Err(); err != nil {
		return nil, s.openErr(err)
	}
	return out, nil
}

// recover is the anchor's start-up recovery (§8.4): validate every row
// before accepting any, then drop finalized rows (when asked), purge
// expired ones and fit the rest into the capacity.
func (s *Store) recover(ctx context.Context, tx *sql.Tx) error {
	var check string
	if err := tx.QueryRowContext(ctx, `PRAGMA quick_check(1)`).Scan(&check); err != nil {
		return s.openErr(err)
	}
	if check != "ok" {
		return fmt.Errorf("qa sqlite store %s: %w: integrity check failed", s.path, ErrInvalidData)
	}

	recs, err := s.loadAll(ctx, tx)
	if err != nil {
		return err
	}
	rep := Recovery{Loaded: len(recs), RemovedFinalized: []string{}, RemovedExpired: []string{}, Evicted: []string{}}
	now := s.opts.now()
	var keep []store.Record
	for _, r := range recs {
		switch {
		case s.opts.removeFinalized && r.Finalized:
			rep.RemovedFinalized = append(rep.RemovedFinalized, r.RunID)
		case !s.opts.keepExpired && !r.ExpiresAt.After(now):
			rep.RemovedExpired = append(rep.RemovedExpired, r.RunID)
		default:
			keep = append(keep, r)
		}
	}

	if limit := s.opts.maxSessions; limit > 0 && len(keep) > limit {
		var terminal []store.Record
		active := 0
		for _, r := range keep {
			if s.opts.active[r.Status] {
				active++
			} else {
				terminal = append(terminal, r)
			}
		}
		if active > limit {
			return fmt.Errorf("qa sqlite store %s: %w: %d active sessions, limit %d", s.path, ErrCapacity, active, limit)
		}
		// Retained terminal sessions are a cache: the oldest go first
		// (§8.2, the same order as the orchestrator's Start).
		slices.SortFunc(terminal, func(a, b store.Record) int {
			if c := a.ExpiresAt.Compare(b.ExpiresAt); c != 0 {
				return c
			}
			return strings.Compare(a.RunID, b.RunID)
		})
		for n := len(keep); n > limit; n-- {
			rep.Evicted = append(rep.Evicted, terminal[0].RunID)
			terminal = terminal[1:]
		}
	}

	for _, group := range [][]string{rep.RemovedFinalized, rep.RemovedExpired, rep.Evicted} {
		for _, id := range group {
			if _, err := tx.ExecContext(ctx, `DELETE FROM qa_sessions WHERE run_id = ?`, id); err != nil {
				return fmt.Errorf("qa sqlite store %s: recovery: delete %q: %w", s.path, id, err)
			}
		}
	}
	s.recovery = rep
	return nil
}

// loadAll reads and validates every row. One invalid row fails the open:
// the anchor refuses to start on a store it cannot fully trust, and
// deleting rows it does not understand would lose data an operator may
// want to inspect.
func (s *Store) loadAll(ctx context.Context, tx *sql.Tx) ([]store.Record, error) {
	rows, err := tx.QueryContext(ctx, `SELECT `+columns+` FROM qa_sessions ORDER BY run_id`)
	if err != nil {
		return nil, s.openErr(err)
	}
	defer rows.Close()
	var (
		out     []store.Record
		invalid int
		first   error
	)
	for i := 0; rows.Next(); i++ {
		r, err := scanRecord(rows)
		if err == nil {
			err = checkRecord(r)
		}
		if err == nil && s.opts.validate != nil {
			err = s.opts.validate(r)
		}
		if err != nil {
			invalid++
			if first == nil {
				// Name the row by position and a bounded, quoted run id;
				// never echo the payload.
				first = fmt.Errorf("row %d (run_id %.80q): %w", i+1, r.RunID, err)
			}
			continue
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, s.openErr(err)
	}
	if invalid > 0 {
		return nil, fmt.Errorf("qa sqlite store %s: %w: %d of %d rows invalid; first: %w",
			s.path, ErrInvalidData, invalid, invalid+len(out), first)
	}
	return out, nil
}
