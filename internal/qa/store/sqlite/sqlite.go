package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	msqlite "modernc.org/sqlite"

	"github.com/diffpalhq/diffpal/internal/qa/store"
)

// Open errors, wrapped with the path and the detail; test with errors.Is.
var (
	// ErrUnsupportedSchema: the file is not a session store this build can
	// read (unknown or newer schema version, duplicate metadata rows,
	// foreign tables, or not an SQLite database at all). The file is left
	// untouched.
	ErrUnsupportedSchema = errors.New("unsupported session store schema")
	// ErrInvalidData: a row failed validation at start-up, or the database
	// failed its integrity check. Nothing was changed.
	ErrInvalidData = errors.New("session store contains invalid session data")
	// ErrCapacity: the WithMaxSessions limit. From Open: more active rows
	// than the limit allows. From Put creating a record: the store is full
	// of active sessions, so no retained finished (or expired) row could be
	// evicted to make room. Nothing was changed in either case.
	// It wraps store.ErrCapacity, so the orchestrator answers "session
	// limit" whichever process lost the race.
	ErrCapacity = fmt.Errorf("session store exceeds the configured active session limit: %w", store.ErrCapacity)
	// ErrNotWritable: start-up could not write the store (a read-only
	// file, a directory where SQLite cannot create its journal, a full
	// disk). Refusing at start beats a server that starts and then fails
	// every write. Nothing was changed.
	ErrNotWritable = errors.New("session store is not writable")
)

// Store is a store.Store kept in an SQLite database file. It is safe for
// concurrent use, and several Stores (in this or other processes) may share
// one file.
type Store struct {
	db       *sql.DB
	path     string
	opts     options
	recovery Recovery
}

var _ store.Store = (*Store)(nil)

// Recovery says what start-up did to the rows it found.
type Recovery struct {
	Loaded           int      // rows present when the store was opened
	RemovedFinalized []string // run ids removed because they were finalized (WithRemoveFinalized)
	RemovedExpired   []string // run ids removed because they had expired
	Evicted          []string // terminal run ids evicted to fit WithMaxSessions
}

// Open opens (creating if needed) the session store at path, enforces the
// file rules, migrates or creates the schema, and runs start-up recovery;
// see the package documentation. ctx bounds Open only.
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	if path == "" {
		return nil, errors.New("qa sqlite store: empty path")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	checked, err := prepareFile(path)
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("qa sqlite store %s: %w", path, err)
	}
	db, err := sql.Open("sqlite", dsn(abs, o.busyTimeout))
	if err != nil {
		return nil, fmt.Errorf("qa sqlite store %s: %w", path, err)
	}
	// One connection per Store: writers in this process queue in
	// database/sql instead of spinning in SQLite's busy handler, and the
	// connection (with its pragmas) lives as long as the Store. Other
	// processes are serialised by SQLite's file locks and the busy timeout.
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	s := &Store{db: db, path: path, opts: o}
	if err := s.start(ctx, checked); err != nil {
		_ = db.Close()
		return nil, err
	}
	return s, nil
}

// dsn builds the connection URI. mode=rw stops SQLite from creating the file
// itself (with its default 0644) should it vanish after prepareFile.
//
// Journal: the rollback journal (DELETE) with synchronous=FULL. Both it and
// WAL are durable at COMMIT with FULL; the rollback journal was chosen
// because at rest the store is the single 0600 file the recovery rules talk
// about (WAL keeps -wal and a memory-mapped -shm beside it for as long as
// any connection is open), because it needs no shared memory (so it does not
// silently misbehave on network file systems), and because a read-only
// inspection (the doctor) can open it without write access to the
// directory. The cost, readers blocking the writer briefly, is irrelevant
// at the store's size (≤ max_sessions rows).
//
// _txlock=immediate makes every write transaction take the write lock at
// BEGIN, under the busy timeout, so two writers never deadlock upgrading
// read locks (which SQLite reports as an immediate SQLITE_BUSY).
func dsn(abs string, busy time.Duration) string {
	q := url.Values{}
	q.Set("mode", "rw")
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy.Milliseconds()))
	q.Add("_pragma", "journal_mode(DELETE)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", "trusted_schema(OFF)")
	q.Set("_txlock", "immediate")
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: q.Encode()}
	return u.String()
}

// Path returns the path the store was opened with.
func (s *Store) Path() string { return s.path }

// Recovery returns what start-up did.
func (s *Store) Recovery() Recovery { return s.recovery }

// Close closes the database. Acknowledged writes are already on disk.
func (s *Store) Close() error { return s.db.Close() }

const columns = `run_id, revision, status, finalized, expires_at_unix_ns, payload`

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, runID string) (store.Record, error) {
	if err := ctx.Err(); err != nil {
		return store.Record{}, err
	}
	row := s.db.QueryRowContext(ctx, `SELECT `+columns+` FROM qa_sessions WHERE run_id = ?`, runID)
	rec, err := scanRecord(row)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Record{}, store.ErrNotFound
	}
	if err != nil {
		return store.Record{}, s.wrap("get", runID, err)
	}
	return rec, nil
}

// List implements store.Store.
func (s *Store) List(ctx context.Context) ([]store.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+columns+` FROM qa_sessions ORDER BY run_id`)
	if err != nil {
		return nil, s.wrap("list", "", err)
	}
	out, err := scanAll(rows)
	if err != nil {
		return nil, s.wrap("list", "", err)
	}
	return out, nil
}

// ListMeta implements store.Store: the metadata columns only.
func (s *Store) ListMeta(ctx context.Context) ([]store.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT run_id, revision, status, finalized, expires_at_unix_ns, NULL FROM qa_sessions ORDER BY run_id`)
	if err != nil {
		return nil, s.wrap("list", "", err)
	}
	out, err := scanAll(rows)
	if err != nil {
		return nil, s.wrap("list", "", err)
	}
	for i := range out {
		out[i].Payload = nil
	}
	return out, nil
}

// Put implements store.Store. The record is checked (and passed to the
// Validate hook) before anything is written, so a record that start-up
// would refuse never reaches the file. A create (expected == store.Absent)
// also enforces WithMaxSessions atomically, evicting retained finished
// rows if it must, or fails with ErrCapacity; see makeRoom.
func (s *Store) Put(ctx context.Context, rec store.Record, expected int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	exp, err := s.checkWrite(rec)
	if err != nil {
		return err
	}
	payload := rec.Payload
	if payload == nil {
		payload = []byte{} // NOT NULL; an empty payload reads back as empty
	}
	return s.inTx(ctx, "put", rec.RunID, func(tx *sql.Tx) error {
		if expected == store.Absent {
			if err := s.makeRoom(ctx, tx, rec.RunID); err != nil {
				return err
			}
			res, err := tx.ExecContext(ctx, `INSERT INTO qa_sessions (`+columns+`) VALUES (?, ?, ?, ?, ?, ?)
				ON CONFLICT (run_id) DO NOTHING`,
				rec.RunID, rec.Revision, rec.Status, rec.Finalized, exp, payload)
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil || n != 1 {
				return orElse(err, store.ErrConflict)
			}
			return nil
		}
		res, err := tx.ExecContext(ctx, `UPDATE qa_sessions
			SET revision = ?, status = ?, finalized = ?, expires_at_unix_ns = ?, payload = ?
			WHERE run_id = ? AND revision = ?`,
			rec.Revision, rec.Status, rec.Finalized, exp, payload, rec.RunID, expected)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return orElse(err, missingOrConflict(ctx, tx, rec.RunID))
		}
		return nil
	})
}

// Delete implements store.Store.
func (s *Store) Delete(ctx context.Context, runID string, expected int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.inTx(ctx, "delete", runID, func(tx *sql.Tx) error {
		if expected == store.AnyRevision {
			_, err := tx.ExecContext(ctx, `DELETE FROM qa_sessions WHERE run_id = ?`, runID)
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM qa_sessions WHERE run_id = ? AND revision = ?`, runID, expected)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return orElse(err, missingOrConflict(ctx, tx, runID))
		}
		return nil
	})
}

// makeRoom enforces WithMaxSessions for a create, inside the create's own
// write transaction.
//
// Design: the capacity check, the eviction it may need and the INSERT are
// one BEGIN IMMEDIATE transaction (_txlock=immediate), so the write lock is
// taken before the rows are counted and held until COMMIT. Two processes
// creating at once therefore run one after the other: the second counts the
// first one's committed row and gets ErrCapacity, never a stale count. (An
// orchestrator whose MaxSessions equals this limit leaves capacity to this
// check entirely, see store.Limited; with another limit its own check is a
// read before the write.)
// The busy timeout makes the second BEGIN wait for the first COMMIT instead
// of failing with SQLITE_BUSY. No counter row is kept: counting at most
// max_sessions rows in a locked table is cheap, and a counter would be one
// more thing start-up recovery would have to reconcile.
//
// Room is made as the orchestrator's Start makes it: rows that hold no
// active slot (a terminal status, or already expired by WithClock's clock)
// are evicted oldest first by (expires_at, run_id), only as many as the new
// row needs; if active rows alone fill the limit, nothing is evicted and
// the create fails with ErrCapacity. A rollback (a run id collision, a
// failed INSERT or COMMIT) undoes the evictions with the insert. Updates
// are not checked: no transition makes a terminal session active again.
func (s *Store) makeRoom(ctx context.Context, tx *sql.Tx, runID string) error {
	limit := s.opts.maxSessions
	if limit <= 0 {
		return nil
	}
	var one int
	switch err := tx.QueryRowContext(ctx, `SELECT 1 FROM qa_sessions WHERE run_id = ?`, runID).Scan(&one); {
	case err == nil:
		return store.ErrConflict // a collision evicts nothing
	case !errors.Is(err, sql.ErrNoRows):
		return err
	}
	var total int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM qa_sessions`).Scan(&total); err != nil {
		return err
	}
	need := total + 1 - limit
	if need <= 0 {
		return nil
	}
	q, args := s.evictable(need)
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	var victims []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		victims = append(victims, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if len(victims) < need {
		return fmt.Errorf("qa sqlite store %s: put %q: %w: %d active sessions, limit %d",
			s.path, runID, ErrCapacity, total-len(victims), limit)
	}
	for _, id := range victims {
		if _, err := tx.ExecContext(ctx, `DELETE FROM qa_sessions WHERE run_id = ?`, id); err != nil {
			return err
		}
	}
	return nil
}

// evictable is the query for the n oldest rows that hold no active slot.
// NULL expiry (the zero time) sorts first, as the zero time is the oldest.
func (s *Store) evictable(n int) (string, []any) {
	now := s.opts.now()
	var cutoff int64
	switch {
	case now.Before(minExpiry):
		cutoff = math.MinInt64
	case now.After(maxExpiry):
		cutoff = math.MaxInt64
	default:
		cutoff = now.UnixNano()
	}
	where, args := `1`, []any{} // no active statuses: every row is evictable
	if len(s.opts.active) > 0 {
		statuses := slices.Sorted(maps.Keys(s.opts.active))
		where = `expires_at_unix_ns IS NULL OR expires_at_unix_ns <= ? OR status NOT IN (?` +
			strings.Repeat(`, ?`, len(statuses)-1) + `)`
		args = append(args, cutoff)
		for _, st := range statuses {
			args = append(args, st)
		}
	}
	args = append(args, n)
	return `SELECT run_id FROM qa_sessions WHERE ` + where +
		` ORDER BY expires_at_unix_ns, run_id LIMIT ?`, args
}

// orElse returns err when set, else fallback.
func orElse(err, fallback error) error {
	if err != nil {
		return err
	}
	return fallback
}

// missingOrConflict tells, inside the write transaction that just matched
// no row, whether the record is absent or at another revision.
func missingOrConflict(ctx context.Context, tx *sql.Tx, runID string) error {
	var one int
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM qa_sessions WHERE run_id = ?`, runID).Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return store.ErrNotFound
	case err != nil:
		return err
	default:
		return store.ErrConflict
	}
}

// inTx runs fn in a BEGIN IMMEDIATE transaction and commits. Any error
// rolls back, so a failed write changes nothing; with synchronous=FULL a
// nil return means the change is on disk.
func (s *Store) inTx(ctx context.Context, op, runID string, fn func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.failed(ctx, op, runID, s.wrap(op, runID, err))
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) ||
			errors.Is(err, ErrCapacity) {
			return err // an answer, not a failure: not logged
		}
		return s.failed(ctx, op, runID, s.wrap(op, runID, err))
	}
	if err := tx.Commit(); err != nil {
		return s.failed(ctx, op, runID, s.wrap(op, runID, err))
	}
	return nil
}

// failed logs a write that failed for a reason other than the caller's
// context, with its cause, and returns err.
func (s *Store) failed(ctx context.Context, op, runID string, err error) error {
	if ctx.Err() != nil {
		return err
	}
	l := s.opts.logger
	if l == nil {
		l = slog.Default()
	}
	l.Warn("session store write failed", "store", s.path, "op", op, "run_id", runID, "err", err)
	return err
}

func (s *Store) wrap(op, runID string, err error) error {
	if runID != "" {
		return fmt.Errorf("qa sqlite store %s: %s %q: %w", s.path, op, runID, err)
	}
	return fmt.Errorf("qa sqlite store %s: %s: %w", s.path, op, err)
}

// checkWrite refuses records that could not be stored faithfully or that
// start-up would refuse, and returns the encoded expiry.
func (s *Store) checkWrite(rec store.Record) (sql.NullInt64, error) {
	exp, err := encodeExpiry(rec.ExpiresAt)
	if err == nil {
		err = checkRecord(rec)
	}
	if err == nil && s.opts.validate != nil {
		err = s.opts.validate(rec)
	}
	if err != nil {
		return sql.NullInt64{}, s.failed(context.Background(), "put", rec.RunID,
			fmt.Errorf("qa sqlite store %s: put %q: refused: %w", s.path, rec.RunID, err))
	}
	return exp, nil
}

// checkRecord is the structural check applied on write and at start-up.
func checkRecord(rec store.Record) error {
	switch {
	case rec.RunID == "":
		return errors.New("empty run_id")
	case !utf8.ValidString(rec.RunID) || !utf8.ValidString(rec.Status):
		return errors.New("run_id and status must be valid UTF-8")
	case rec.Revision < 0:
		return fmt.Errorf("revision %d is negative", rec.Revision)
	}
	return nil
}

// Expiry is stored as Unix nanoseconds so that it round-trips exactly and
// compares as an integer; NULL stands for the zero time.
var (
	minExpiry = time.Unix(0, math.MinInt64)
	maxExpiry = time.Unix(0, math.MaxInt64)
)

func encodeExpiry(t time.Time) (sql.NullInt64, error) {
	if t.IsZero() {
		return sql.NullInt64{}, nil
	}
	if t.Before(minExpiry) || t.After(maxExpiry) {
		return sql.NullInt64{}, fmt.Errorf("expires_at %s is outside the storable range %s..%s",
			t.UTC().Format(time.RFC3339), minExpiry.UTC().Format(time.RFC3339), maxExpiry.UTC().Format(time.RFC3339))
	}
	return sql.NullInt64{Int64: t.UnixNano(), Valid: true}, nil
}

func decodeExpiry(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return time.Unix(0, v.Int64).UTC()
}

type scanner interface{ Scan(...any) error }

func scanRecord(row scanner) (store.Record, error) {
	var (
		r         store.Record
		finalized int64
		exp       sql.NullInt64
	)
	// Scanning into *[]byte copies, so callers never share driver memory.
	if err := row.Scan(&r.RunID, &r.Revision, &r.Status, &finalized, &exp, &r.Payload); err != nil {
		return store.Record{}, err
	}
	if finalized != 0 && finalized != 1 {
		return store.Record{}, fmt.Errorf("finalized is %d, want 0 or 1", finalized)
	}
	r.Finalized = finalized == 1
	r.ExpiresAt = decodeExpiry(exp)
	return r, nil
}

func scanAll(rows *sql.Rows) ([]store.Record, error) {
	defer rows.Close()
	out := []store.Record{}
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// sqliteCode returns the primary SQLite result code of err, or 0.
func sqliteCode(err error) int {
	var e *msqlite.Error
	if errors.As(err, &e) {
		return e.Code() & 0xff
	}
	return 0
}

// fileChanged reports whether path no longer names the file prepareFile
// checked, or is no longer a regular 0600 file.
func fileChanged(path string, checked os.FileInfo) error {
	now, err := os.Lstat(path)
	if err != nil {
		return fmt.Errorf("qa sqlite store %s: %w", path, err)
	}
	if err := checkRegular(path, now); err != nil {
		return err
	}
	if !os.SameFile(checked, now) {
		return fmt.Errorf("qa sqlite store %s: the file was replaced while the store was opening; refusing it", path)
	}
	return nil
}

var (
	_ store.Indexed = (*Store)(nil)
	_ store.Limited = (*Store)(nil)
)

// MaxSessions implements store.Limited: the WithMaxSessions limit, which
// every create enforces in its own write transaction (makeRoom).
func (s *Store) MaxSessions() int { return max(s.opts.maxSessions, 0) }

// nanos encodes now for comparison with expires_at_unix_ns.
func nanos(now time.Time) int64 {
	switch {
	case now.Before(minExpiry):
		return math.MinInt64
	case now.After(maxExpiry):
		return math.MaxInt64
	}
	return now.UnixNano()
}

// activeIn is "status IN (?, …)" over the active statuses (FALSE when
// there are none) and its arguments.
func (s *Store) activeIn() (string, []any) {
	if len(s.opts.active) == 0 {
		return `0`, nil
	}
	statuses := slices.Sorted(maps.Keys(s.opts.active))
	args := make([]any, len(statuses))
	for i, st := range statuses {
		args[i] = st
	}
	return `status IN (?` + strings.Repeat(`, ?`, len(statuses)-1) + `)`, args
}

// PurgeExpired implements store.Indexed: one DELETE over the expiry index.
func (s *Store) PurgeExpired(ctx context.Context, now time.Time, keep string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var ids []string
	err := s.inTx(ctx, "purge", "", func(tx *sql.Tx) error {
		ids = ids[:0]
		rows, err := tx.QueryContext(ctx, `DELETE FROM qa_sessions
			WHERE (expires_at_unix_ns IS NULL OR expires_at_unix_ns <= ?) AND run_id <> ? RETURNING run_id`, nanos(now), keep)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return err
			}
			ids = append(ids, id)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// Occupancy implements store.Indexed.
func (s *Store) Occupancy(ctx context.Context) (total, active int, err error) {
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	in, args := s.activeIn()
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(CASE WHEN `+in+` THEN 1 ELSE 0 END), 0) FROM qa_sessions`,
		args...).Scan(&total, &active); err != nil {
		return 0, 0, s.wrap("count", "", err)
	}
	return total, active, nil
}

// Evictable implements store.Indexed: the expiry index read oldest first,
// skipping active rows.
func (s *Store) Evictable(ctx context.Context, n int) ([]store.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if n <= 0 {
		return []store.Record{}, nil
	}
	in, args := s.activeIn()
	return s.meta(ctx, "evictable", `SELECT run_id, revision, status, finalized, expires_at_unix_ns, NULL FROM qa_sessions
		WHERE NOT (`+in+`) ORDER BY expires_at_unix_ns, run_id LIMIT ?`, append(args, n)...)
}

// Page implements store.Indexed: the expiry index read newest first.
func (s *Store) Page(ctx context.Context, now time.Time, after *store.Position, limit int) ([]store.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return []store.Record{}, nil
	}
	where, args := `expires_at_unix_ns > ?`, []any{nanos(now)}
	if after != nil {
		if after.ExpiresAt.IsZero() {
			return []store.Record{}, nil // nothing sorts before the zero time
		}
		where += ` AND (expires_at_unix_ns < ? OR (expires_at_unix_ns = ? AND run_id < ?))`
		e := nanos(after.ExpiresAt)
		args = append(args, e, e, after.RunID)
	}
	return s.meta(ctx, "page", `SELECT run_id, revision, status, finalized, expires_at_unix_ns, NULL FROM qa_sessions
		WHERE `+where+` ORDER BY expires_at_unix_ns DESC, run_id DESC LIMIT ?`, append(args, limit)...)
}

// meta runs a query of metadata columns (payload NULL).
func (s *Store) meta(ctx context.Context, op, q string, args ...any) ([]store.Record, error) {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, s.wrap(op, "", err)
	}
	out, err := scanAll(rows)
	if err != nil {
		return nil, s.wrap(op, "", err)
	}
	for i := range out {
		out[i].Payload = nil
	}
	return out, nil
}
