package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/diffpalhq/diffpal/internal/qa/store"
)

//go:embed *.sql
var migrationFiles embed.FS

// migrationLockKey is the pg_advisory_lock key Open holds while it
// migrates: "diffpal" and a 1, as a positive int64.
const migrationLockKey int64 = 0x64696666_70616c01

// migration is one embedded NNNN_name.sql file.
type migration struct {
	version int64
	name    string
	sql     string
}

// migrations returns the embedded migrations in version order; versions
// must be 1, 2, 3, … without gaps.
func migrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFiles, ".")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.ParseInt(num, 10, 64)
		if !ok || err != nil || !strings.HasSuffix(e.Name(), ".sql") {
			return nil, fmt.Errorf("migration file %q is not NNNN_name.sql", e.Name())
		}
		b, err := migrationFiles.ReadFile(e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: strings.TrimSuffix(e.Name(), ".sql"), sql: string(b)})
	}
	slices.SortFunc(out, func(a, b migration) int { return int(a.version - b.version) })
	for i, m := range out {
		if m.version != int64(i+1) {
			return nil, fmt.Errorf("migration %s: version %d, want %d", m.name, m.version, i+1)
		}
	}
	return out, nil
}

// SchemaVersion is the newest schema this build writes and reads: the
// number of embedded migrations.
var SchemaVersion = func() int64 {
	ms, err := migrations()
	if err != nil {
		panic(err)
	}
	return int64(len(ms))
}()

// migrate applies the missing migrations while holding the migration
// advisory lock on one connection, each in its own transaction with its
// qa_schema_migrations row. Waiting for the lock (another replica
// migrating) is bounded by statement_timeout and ctx.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return fmt.Errorf("qa postgres store: %w", err)
	}
	c, err := s.acquire(ctx)
	if err != nil {
		return s.wrap("open", "", classify(ctx, err, false))
	}
	defer c.Release()
	fail := func(step string, err error) error {
		return s.wrap("open: "+step, "", classify(ctx, err, c.Conn().IsClosed()))
	}
	if _, err := c.Exec(ctx, `SELECT pg_advisory_lock($1)`, migrationLockKey); err != nil {
		return fail("take the migration lock", err)
	}
	defer func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, err := c.Exec(uctx, `SELECT pg_advisory_unlock($1)`, migrationLockKey); err != nil {
			// A session lock must not go back to the pool: closing the
			// connection releases it.
			_ = c.Conn().Close(uctx)
		}
	}()
	if _, err := c.Exec(ctx, `CREATE TABLE IF NOT EXISTS qa_schema_migrations (
			version    BIGINT PRIMARY KEY,
			name       TEXT NOT NULL,
			applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`); err != nil {
		return fail("create qa_schema_migrations", err)
	}
	rows, err := c.Query(ctx, `SELECT version FROM qa_schema_migrations ORDER BY version`)
	if err != nil {
		return fail("read qa_schema_migrations", err)
	}
	applied, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return fail("read qa_schema_migrations", err)
	}
	for i, v := range applied {
		if v != int64(i+1) || v > SchemaVersion {
			return fmt.Errorf("qa postgres store %s: %w: qa_schema_migrations holds versions %v, this build knows 1..%d",
				s.name, ErrUnsupportedSchema, applied, SchemaVersion)
		}
	}
	for _, m := range ms[len(applied):] {
		if err := s.apply(ctx, c, m); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) apply(ctx context.Context, c *pgxpool.Conn, m migration) error {
	err := pgx.BeginTxFunc(ctx, c, pgx.TxOptions{}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, m.sql); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO qa_schema_migrations (version, name) VALUES ($1, $2)`, m.version, m.name)
		return err
	})
	if err != nil {
		return s.wrap("open: migration "+m.name, "", classify(ctx, err, c.Conn().IsClosed()))
	}
	return nil
}

// recover is the SQLite store's start-up recovery (anchor §8.4), in one
// transaction holding the capacity lock so that no replica creates while
// it runs: validate every row before accepting any, then drop finalized
// rows (when asked), purge expired ones and fit the rest into the
// capacity.
func (s *Store) recover(ctx context.Context) error {
	var rep Recovery
	err := s.do(ctx, func(c *pgxpool.Conn) error {
		return pgx.BeginTxFunc(ctx, c, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
			var err error
			rep, err = s.recoverTx(ctx, tx)
			return err
		})
	})
	if err != nil {
		if isAnswer(err) || errors.Is(err, ErrInvalidData) {
			return err
		}
		return s.wrap("open: recovery", "", err)
	}
	s.recovery = rep
	return nil
}

func (s *Store) recoverTx(ctx context.Context, tx pgx.Tx) (Recovery, error) {
	rep := Recovery{RemovedFinalized: []string{}, RemovedExpired: []string{}, Evicted: []string{}}
	if _, err := tx.Exec(ctx, `SELECT id FROM qa_capacity_lock WHERE id = 1 FOR UPDATE`); err != nil {
		return rep, err
	}
	rows, err := tx.Query(ctx, `SELECT `+columns+` FROM qa_sessions ORDER BY run_id`)
	if err != nil {
		return rep, err
	}
	recs, err := scanAll(rows)
	if err != nil {
		return rep, err
	}
	rep.Loaded = len(recs)
	invalid := 0
	var first error
	for i, r := range recs {
		err := checkRecord(r)
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
		}
	}
	if invalid > 0 {
		return rep, fmt.Errorf("qa postgres store %s: %w: %d of %d rows invalid; first: %w",
			s.name, ErrInvalidData, invalid, len(recs), first)
	}
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
			return rep, fmt.Errorf("qa postgres store %s: %w: %d active sessions, limit %d", s.name, ErrCapacity, active, limit)
		}
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
	var gone []string
	for _, group := range [][]string{rep.RemovedFinalized, rep.RemovedExpired, rep.Evicted} {
		gone = append(gone, group...)
	}
	if len(gone) > 0 {
		if _, err := tx.Exec(ctx, `DELETE FROM qa_sessions WHERE run_id = ANY ($1::text[])`, gone); err != nil {
			return rep, err
		}
	}
	return rep, nil
}
