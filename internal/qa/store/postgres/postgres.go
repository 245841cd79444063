package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/diffpalhq/diffpal/internal/qa/store"
)

// Store is a store.Store kept in a PostgreSQL database. It is safe for
// concurrent use, and any number of Stores, in this or other processes on
// any machine, may share one database.
type Store struct {
	pool     *pgxpool.Pool
	name     string // host/database, for errors and logs (never the password)
	opts     options
	recovery Recovery

	stopSweep context.CancelFunc
	swept     sync.WaitGroup
	closeOnce sync.Once
}

var _ store.Store = (*Store)(nil)

// Recovery says what start-up did to the rows it found, as in the SQLite
// store.
type Recovery struct {
	Loaded           int      // rows present when the store was opened
	RemovedFinalized []string // run ids removed because they were finalized (WithRemoveFinalized)
	RemovedExpired   []string // run ids removed because they had expired
	Evicted          []string // terminal run ids evicted to fit WithMaxSessions
}

// Open connects to the database the connection string names (a
// postgres:// or postgresql:// URL, or key=value settings; PG* environment
// variables and ~/.pgpass fill what it leaves out, as in libpq), applies the
// embedded migrations under an advisory lock and runs start-up recovery; see
// the package documentation. ctx bounds Open only. A database that cannot be
// reached fails with an error wrapping ErrUnavailable.
func Open(ctx context.Context, connString string, opts ...Option) (*Store, error) {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	if strings.TrimSpace(connString) == "" {
		return nil, errors.New("qa postgres store: empty connection string")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(connString)
	if err != nil {
		// pgconn's parse errors mask the password.
		return nil, fmt.Errorf("qa postgres store: %w", err)
	}
	if o.statementTimeout > 0 {
		cfg.ConnConfig.RuntimeParams["statement_timeout"] = strconv.FormatInt(max(o.statementTimeout.Milliseconds(), 1), 10)
	}
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = "diffpal-mcp"
	}
	if o.maxConns > 0 {
		cfg.MaxConns = o.maxConns
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = o.acquireTimeout
	}
	cfg.MinConns = 0
	pool, err := pgxpool.NewWithConfig(context.WithoutCancel(ctx), cfg)
	if err != nil {
		return nil, fmt.Errorf("qa postgres store: %w", err)
	}
	s := &Store{pool: pool, opts: o, name: describe(cfg.ConnConfig)}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	if err := s.recover(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	if o.sweepEvery > 0 {
		sctx, cancel := context.WithCancel(context.Background())
		s.stopSweep = cancel
		s.swept.Add(1)
		go s.sweepLoop(sctx, o.sweepEvery)
	}
	return s, nil
}

// describe names the database for errors and logs: host (or socket
// directory), port and database, never the user's password.
func describe(c *pgx.ConnConfig) string {
	return fmt.Sprintf("%s:%d/%s", c.Host, c.Port, c.Database)
}

// Name returns host:port/database (no credentials).
func (s *Store) Name() string { return s.name }

// Recovery returns what start-up did.
func (s *Store) Recovery() Recovery { return s.recovery }

// Close stops the background sweeper and closes the pool, waiting for
// calls in progress to return their connections. Acknowledged writes are
// already committed.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		if s.stopSweep != nil {
			s.stopSweep()
			s.swept.Wait()
		}
		s.pool.Close()
	})
	return nil
}

// Ping checks that the database answers, within DefaultPingTimeout (or
// ctx's earlier deadline): the readiness probe of `diffpal mcp --http`.
func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, DefaultPingTimeout)
	defer cancel()
	err, closed := s.withConn(ctx, func(c *pgxpool.Conn) error { return c.Ping(ctx) })
	if err != nil {
		return s.wrap("ping", "", classify(ctx, err, closed))
	}
	return nil
}

const columns = `run_id, revision, status, finalized, expires_at_unix_ns, payload`

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, runID string) (store.Record, error) {
	if err := ctx.Err(); err != nil {
		return store.Record{}, err
	}
	if !storable(runID) {
		return store.Record{}, store.ErrNotFound // nothing with this id can exist
	}
	var rec store.Record
	err := s.do(ctx, func(c *pgxpool.Conn) error {
		var err error
		rec, err = scanRecord(c.QueryRow(ctx, `SELECT `+columns+` FROM qa_sessions WHERE run_id = $1`, runID))
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Record{}, store.ErrNotFound
	}
	if err != nil {
		return store.Record{}, s.wrap("get", runID, err)
	}
	return rec, nil
}

// List implements store.Store.
func (s *Store) List(ctx context.Context) ([]store.Record, error) {
	return s.list(ctx, `SELECT `+columns+` FROM qa_sessions ORDER BY run_id`)
}

// ListMeta implements store.Store: the metadata columns only.
func (s *Store) ListMeta(ctx context.Context) ([]store.Record, error) {
	recs, err := s.list(ctx, `SELECT run_id, revision, status, finalized, expires_at_unix_ns, NULL::bytea FROM qa_sessions ORDER BY run_id`)
	for i := range recs {
		recs[i].Payload = nil
	}
	return recs, err
}

func (s *Store) list(ctx context.Context, q string) ([]store.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []store.Record
	err := s.do(ctx, func(c *pgxpool.Conn) error {
		rows, err := c.Query(ctx, q)
		if err != nil {
			return err
		}
		out, err = scanAll(rows)
		return err
	})
	if err != nil {
		return nil, s.wrap("list", "", err)
	}
	return out, nil
}

// Put implements store.Store. The record is checked (and passed to the
// Validate hook) before anything is written. An update is one statement,
// UPDATE … WHERE run_id = $1 AND revision = $2, which also tells a missing
// record from a stale revision; a create is INSERT … ON CONFLICT DO
// NOTHING, inside a capacity-locked transaction when WithMaxSessions is set
// (see makeRoom).
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
	args := []any{rec.RunID, rec.Revision, rec.Status, rec.Finalized, exp, payload}
	const insert = `INSERT INTO qa_sessions (` + columns + `) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (run_id) DO NOTHING`
	if expected == store.Absent && s.opts.maxSessions > 0 {
		return s.inTx(ctx, "put", rec.RunID, func(tx pgx.Tx) error {
			if err := s.makeRoom(ctx, tx, rec.RunID); err != nil {
				return err
			}
			tag, err := tx.Exec(ctx, insert, args...)
			if err != nil {
				return err
			}
			if tag.RowsAffected() != 1 {
				return store.ErrConflict
			}
			return nil
		})
	}
	if expected == store.Absent {
		return s.write(ctx, "put", rec.RunID, func(c *pgxpool.Conn) error {
			tag, err := c.Exec(ctx, insert, args...)
			if err != nil {
				return err
			}
			if tag.RowsAffected() != 1 {
				return store.ErrConflict
			}
			return nil
		})
	}
	return s.write(ctx, "put", rec.RunID, func(c *pgxpool.Conn) error {
		// The CTE's EXISTS reads the statement's snapshot: when the UPDATE
		// matched nothing, it tells a missing record from another revision.
		var n int64
		var exists bool
		err := c.QueryRow(ctx, `WITH u AS (
				UPDATE qa_sessions SET revision = $2, status = $3, finalized = $4, expires_at_unix_ns = $5, payload = $6
				WHERE run_id = $1 AND revision = $7 RETURNING 1)
			SELECT (SELECT count(*) FROM u), EXISTS (SELECT 1 FROM qa_sessions WHERE run_id = $1)`,
			append(args, expected)...).Scan(&n, &exists)
		if err != nil {
			return err
		}
		return outcome(n, exists)
	})
}

// Delete implements store.Store.
func (s *Store) Delete(ctx context.Context, runID string, expected int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !storable(runID) {
		if expected == store.AnyRevision {
			return nil
		}
		return store.ErrNotFound
	}
	return s.write(ctx, "delete", runID, func(c *pgxpool.Conn) error {
		if expected == store.AnyRevision {
			_, err := c.Exec(ctx, `DELETE FROM qa_sessions WHERE run_id = $1`, runID)
			return err
		}
		var n int64
		var exists bool
		err := c.QueryRow(ctx, `WITH d AS (DELETE FROM qa_sessions WHERE run_id = $1 AND revision = $2 RETURNING 1)
			SELECT (SELECT count(*) FROM d), EXISTS (SELECT 1 FROM qa_sessions WHERE run_id = $1)`,
			runID, expected).Scan(&n, &exists)
		if err != nil {
			return err
		}
		return outcome(n, exists)
	})
}

// outcome turns "rows changed, row existed" into the contract's answer.
func outcome(n int64, exists bool) error {
	switch {
	case n == 1:
		return nil
	case exists:
		return store.ErrConflict
	default:
		return store.ErrNotFound
	}
}

// makeRoom enforces WithMaxSessions for a create, inside the create's own
// READ COMMITTED transaction; see the package documentation for why the
// lock row makes the count exact across replicas.
//
// Room is made as the SQLite store (and the orchestrator's Start) makes it:
// rows that hold no active slot (a terminal status, or already expired by
// WithClock's clock) are evicted oldest first by (expires_at, run_id), only
// as many as the new row needs; if active rows alone fill the limit,
// nothing is evicted and the create fails with ErrCapacity. A rollback (a
// run id collision, a failed INSERT or COMMIT) undoes the evictions.
func (s *Store) makeRoom(ctx context.Context, tx pgx.Tx, runID string) error {
	limit := s.opts.maxSessions
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM qa_sessions WHERE run_id = $1)`, runID).Scan(&exists); err != nil {
		return err
	}
	if exists {
		return store.ErrConflict // a collision evicts nothing and takes no lock
	}
	if _, err := tx.Exec(ctx, `SELECT id FROM qa_capacity_lock WHERE id = 1 FOR UPDATE`); err != nil {
		return err
	}
	var total int64
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM qa_sessions`).Scan(&total); err != nil {
		return err
	}
	need := total + 1 - int64(limit)
	if need <= 0 {
		return nil
	}
	where, args := s.evictable()
	args = append(args, need)
	rows, err := tx.Query(ctx, `DELETE FROM qa_sessions WHERE run_id IN (
			SELECT run_id FROM qa_sessions WHERE `+where+`
			ORDER BY expires_at_unix_ns NULLS FIRST, run_id LIMIT $`+strconv.Itoa(len(args))+` FOR UPDATE)
		RETURNING run_id`, args...)
	if err != nil {
		return err
	}
	victims, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	if int64(len(victims)) < need {
		return fmt.Errorf("qa postgres store %s: put %q: %w: %d active sessions, limit %d",
			s.name, runID, ErrCapacity, total-int64(len(victims)), limit)
	}
	return nil
}

// evictable is the WHERE clause (and its arguments, $1…) of rows that hold
// no active slot: expired (NULL is the zero time) or not in an active
// status.
func (s *Store) evictable() (string, []any) {
	if len(s.opts.active) == 0 {
		return `TRUE`, nil
	}
	return `expires_at_unix_ns IS NULL OR expires_at_unix_ns <= $1 OR status <> ALL ($2::text[])`,
		[]any{cutoff(s.opts.now()), slices.Sorted(maps.Keys(s.opts.active))}
}

// cutoff encodes now for comparison with expires_at_unix_ns.
func cutoff(now time.Time) int64 {
	switch {
	case now.Before(minExpiry):
		return math.MinInt64
	case now.After(maxExpiry):
		return math.MaxInt64
	}
	return now.UnixNano()
}

// Sweep deletes expired rows (expiry at or before WithClock's now, or the
// zero time) and returns how many it deleted. It is safe to run from every
// replica at once: each batch locks its victims with FOR UPDATE SKIP
// LOCKED, so rows another sweeper (or a live write) holds are skipped
// rather than waited for, and no row is deleted twice.
func (s *Store) Sweep(ctx context.Context) (int, error) {
	total := 0
	now := cutoff(s.opts.now())
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		var n int64
		err := s.do(ctx, func(c *pgxpool.Conn) error {
			tag, err := c.Exec(ctx, `DELETE FROM qa_sessions WHERE run_id IN (
					SELECT run_id FROM qa_sessions
					WHERE expires_at_unix_ns IS NULL OR expires_at_unix_ns <= $1
					ORDER BY expires_at_unix_ns NULLS FIRST, run_id
					LIMIT $2 FOR UPDATE SKIP LOCKED)`, now, sweepBatch)
			n = tag.RowsAffected()
			return err
		})
		if err != nil {
			return total, s.wrap("sweep", "", err)
		}
		total += int(n)
		if n < sweepBatch {
			return total, nil
		}
	}
}

func (s *Store) sweepLoop(ctx context.Context, every time.Duration) {
	defer s.swept.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		sctx, cancel := context.WithTimeout(ctx, max(every, time.Minute))
		if _, err := s.Sweep(sctx); err != nil && ctx.Err() == nil {
			s.logger().Warn("session store sweep failed", "store", s.name, "err", err)
		}
		cancel()
	}
}

// acquire takes a pooled connection, waiting at most WithAcquireTimeout.
func (s *Store) acquire(ctx context.Context) (*pgxpool.Conn, error) {
	actx, cancel := context.WithTimeout(ctx, s.opts.acquireTimeout)
	defer cancel()
	c, err := s.pool.Acquire(actx)
	if err == nil {
		return c, nil
	}
	if ctx.Err() == nil && actx.Err() != nil {
		st := s.pool.Stat()
		if st.AcquiredConns() >= st.MaxConns() {
			return nil, fmt.Errorf("%w: all %d connections busy for %v", ErrPoolTimeout, st.MaxConns(), s.opts.acquireTimeout)
		}
		return nil, fmt.Errorf("%w: no connection within %v: %w", ErrUnavailable, s.opts.acquireTimeout, err)
	}
	return nil, err
}

// withConn runs fn on a pooled connection and reports whether the
// connection was closed by the failure (a lost connection).
func (s *Store) withConn(ctx context.Context, fn func(*pgxpool.Conn) error) (err error, closed bool) {
	c, err := s.acquire(ctx)
	if err != nil {
		return err, false
	}
	defer c.Release()
	err = fn(c)
	return err, err != nil && c.Conn().IsClosed()
}

// do runs fn, retrying once when the driver says the failed attempt never
// reached the server (a pooled connection that died while idle), and
// classifies the error. Contract answers are returned as they are.
func (s *Store) do(ctx context.Context, fn func(*pgxpool.Conn) error) error {
	for attempt := 0; ; attempt++ {
		err, closed := s.withConn(ctx, fn)
		switch {
		case err == nil, isAnswer(err), errors.Is(err, pgx.ErrNoRows):
			return err
		case attempt == 0 && ctx.Err() == nil && pgconn.SafeToRetry(err):
			continue
		}
		return classify(ctx, err, closed)
	}
}

// write is do for a single-statement write: failures are logged.
func (s *Store) write(ctx context.Context, op, runID string, fn func(*pgxpool.Conn) error) error {
	err := s.do(ctx, fn)
	if err == nil || isAnswer(err) {
		return err
	}
	return s.failed(ctx, op, runID, s.wrap(op, runID, err))
}

// inTx runs fn in a READ COMMITTED transaction and commits; any error rolls
// back, so a failed write changes nothing. It is retried once like do.
func (s *Store) inTx(ctx context.Context, op, runID string, fn func(pgx.Tx) error) error {
	err := s.do(ctx, func(c *pgxpool.Conn) error {
		tx, err := c.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
		if err != nil {
			return err
		}
		if err := fn(tx); err != nil {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			_ = tx.Rollback(rctx) // a failed rollback closes the connection
			cancel()
			return err
		}
		return tx.Commit(ctx)
	})
	if err == nil || isAnswer(err) {
		return err
	}
	return s.failed(ctx, op, runID, s.wrap(op, runID, err))
}

func (s *Store) logger() *slog.Logger {
	if s.opts.logger != nil {
		return s.opts.logger
	}
	return slog.Default()
}

// failed logs a write that failed for a reason other than the caller's
// context, with its cause, and returns err.
func (s *Store) failed(ctx context.Context, op, runID string, err error) error {
	if ctx.Err() != nil {
		return err
	}
	s.logger().Warn("session store write failed", "store", s.name, "op", op, "run_id", runID, "err", err)
	return err
}

func (s *Store) wrap(op, runID string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		if !errors.Is(err, store.ErrUnavailable) {
			return err
		}
	}
	if runID != "" {
		return fmt.Errorf("qa postgres store %s: %s %q: %w", s.name, op, runID, err)
	}
	return fmt.Errorf("qa postgres store %s: %s: %w", s.name, op, err)
}

// storable reports whether a run id could be stored at all (PostgreSQL
// text cannot hold NUL or invalid UTF-8).
func storable(s string) bool { return utf8.ValidString(s) && !strings.ContainsRune(s, 0) }

// checkWrite refuses records that could not be stored faithfully or that
// start-up would refuse, and returns the encoded expiry.
func (s *Store) checkWrite(rec store.Record) (*int64, error) {
	exp, err := encodeExpiry(rec.ExpiresAt)
	if err == nil {
		err = checkRecord(rec)
	}
	if err == nil && s.opts.validate != nil {
		err = s.opts.validate(rec)
	}
	if err != nil {
		return nil, s.failed(context.Background(), "put", rec.RunID,
			fmt.Errorf("qa postgres store %s: put %.80q: refused: %w", s.name, rec.RunID, err))
	}
	return exp, nil
}

// checkRecord is the structural check applied on write and at start-up.
func checkRecord(rec store.Record) error {
	switch {
	case rec.RunID == "":
		return errors.New("empty run_id")
	case !storable(rec.RunID) || !storable(rec.Status):
		return errors.New("run_id and status must be valid UTF-8 without NUL")
	case rec.Revision < 0:
		return fmt.Errorf("revision %d is negative", rec.Revision)
	}
	return nil
}

// Expiry is stored as Unix nanoseconds, as in the SQLite store, so that it
// round-trips exactly; NULL stands for the zero time.
var (
	minExpiry = time.Unix(0, math.MinInt64)
	maxExpiry = time.Unix(0, math.MaxInt64)
)

func encodeExpiry(t time.Time) (*int64, error) {
	if t.IsZero() {
		return nil, nil
	}
	if t.Before(minExpiry) || t.After(maxExpiry) {
		return nil, fmt.Errorf("expires_at %s is outside the storable range %s..%s",
			t.UTC().Format(time.RFC3339), minExpiry.UTC().Format(time.RFC3339), maxExpiry.UTC().Format(time.RFC3339))
	}
	n := t.UnixNano()
	return &n, nil
}

func decodeExpiry(v *int64) time.Time {
	if v == nil {
		return time.Time{}
	}
	return time.Unix(0, *v).UTC()
}

func scanRecord(row pgx.Row) (store.Record, error) {
	var (
		r   store.Record
		exp *int64
	)
	// Scanning bytea into *[]byte copies, so callers never share driver
	// memory.
	if err := row.Scan(&r.RunID, &r.Revision, &r.Status, &r.Finalized, &exp, &r.Payload); err != nil {
		return store.Record{}, err
	}
	r.ExpiresAt = decodeExpiry(exp)
	return r, nil
}

func scanAll(rows pgx.Rows) ([]store.Record, error) {
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

var (
	_ store.Indexed = (*Store)(nil)
	_ store.Limited = (*Store)(nil)
)

// MaxSessions implements store.Limited: the WithMaxSessions limit, which
// every create enforces under the capacity lock (makeRoom), across every
// replica sharing the database.
func (s *Store) MaxSessions() int { return max(s.opts.maxSessions, 0) }

// activeStatuses is the active statuses as a text[] argument.
func (s *Store) activeStatuses() []string { return slices.Sorted(maps.Keys(s.opts.active)) }

// PurgeExpired implements store.Indexed: one DELETE over the expiry index.
// Rows another transaction holds are skipped (FOR UPDATE SKIP LOCKED, as
// in Sweep) rather than waited for: a later purge or sweep removes them.
func (s *Store) PurgeExpired(ctx context.Context, now time.Time, keep string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !storable(keep) {
		keep = ""
	}
	var ids []string
	err := s.write(ctx, "purge", "", func(c *pgxpool.Conn) error {
		rows, err := c.Query(ctx, `DELETE FROM qa_sessions WHERE run_id IN (
				SELECT run_id FROM qa_sessions
				WHERE (expires_at_unix_ns IS NULL OR expires_at_unix_ns <= $1) AND run_id <> $2
				FOR UPDATE SKIP LOCKED)
			RETURNING run_id`, cutoff(now), keep)
		if err != nil {
			return err
		}
		ids, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
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
	var t, a int64
	err = s.do(ctx, func(c *pgxpool.Conn) error {
		return c.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE status = ANY ($1::text[])) FROM qa_sessions`,
			s.activeStatuses()).Scan(&t, &a)
	})
	if err != nil {
		return 0, 0, s.wrap("count", "", err)
	}
	return int(t), int(a), nil
}

// Evictable implements store.Indexed: the expiry index read oldest first,
// skipping active rows.
func (s *Store) Evictable(ctx context.Context, n int) ([]store.Record, error) {
	if n <= 0 {
		return []store.Record{}, ctx.Err()
	}
	return s.meta(ctx, "evictable", `SELECT run_id, revision, status, finalized, expires_at_unix_ns, NULL::bytea FROM qa_sessions
		WHERE status <> ALL ($1::text[]) ORDER BY expires_at_unix_ns NULLS FIRST, run_id LIMIT $2`, s.activeStatuses(), n)
}

// Page implements store.Indexed: the expiry index read newest first.
func (s *Store) Page(ctx context.Context, now time.Time, after *store.Position, limit int) ([]store.Record, error) {
	if limit <= 0 {
		return []store.Record{}, ctx.Err()
	}
	if after == nil {
		return s.meta(ctx, "page", `SELECT run_id, revision, status, finalized, expires_at_unix_ns, NULL::bytea FROM qa_sessions
			WHERE expires_at_unix_ns > $1 ORDER BY expires_at_unix_ns DESC NULLS LAST, run_id DESC LIMIT $2`, cutoff(now), limit)
	}
	if after.ExpiresAt.IsZero() || !storable(after.RunID) {
		return []store.Record{}, ctx.Err() // nothing sorts before the zero time
	}
	return s.meta(ctx, "page", `SELECT run_id, revision, status, finalized, expires_at_unix_ns, NULL::bytea FROM qa_sessions
		WHERE expires_at_unix_ns > $1 AND (expires_at_unix_ns, run_id) < ($2, $3)
		ORDER BY expires_at_unix_ns DESC NULLS LAST, run_id DESC LIMIT $4`, cutoff(now), cutoff(after.ExpiresAt), after.RunID, limit)
}

// meta runs a query of metadata columns (payload NULL).
func (s *Store) meta(ctx context.Context, op, q string, args ...any) ([]store.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []store.Record
	err := s.do(ctx, func(c *pgxpool.Conn) error {
		rows, err := c.Query(ctx, q, args...)
		if err != nil {
			return err
		}
		out, err = scanAll(rows)
		return err
	})
	if err != nil {
		return nil, s.wrap(op, "", err)
	}
	for i := range out {
		out[i].Payload = nil
	}
	return out, nil
}
