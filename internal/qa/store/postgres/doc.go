// Package postgres is the PostgreSQL-backed store.Store: the shared system
// of record for several `diffpal mcp --http` replicas behind a load
// balancer (`--store postgres://…`, QA-CONTRACT §8). It mirrors the
// semantics of internal/qa/store/sqlite — same columns, same conditional
// writes, same capacity and eviction rules, same start-up recovery — with
// the guarantees holding across processes on different machines.
//
// # Schema and migrations
//
// The schema is a list of versioned migrations embedded in the binary
// (NNNN_name.sql). Open takes a session-level pg_advisory_lock on a
// dedicated connection, reads qa_schema_migrations, applies each missing
// migration in its own transaction together with its row in
// qa_schema_migrations, and unlocks. Two replicas starting at once
// therefore migrate once: the second waits on the lock and then finds
// every version applied. (The table is not called schema_migrations so
// that it cannot collide with a migration tool's table in a shared
// database.) A database holding a version this build does not know is
// refused with ErrUnsupportedSchema and left unchanged.
//
// Rows are content-free: qa_sessions has the columns of store.Record
// (run_id TEXT COLLATE "C" so that List orders by byte value as SQLite
// does, revision, status, finalized, expires_at_unix_ns, payload BYTEA).
// The payload is the orchestrator's serialized session: ids, hashes,
// statuses and replay receipts, never raw diffs, prompts or model output.
//
// # Conditional writes
//
// Every write runs in a READ COMMITTED transaction (set explicitly, so a
// database default of SERIALIZABLE does not change the design). A create
// is INSERT … ON CONFLICT (run_id) DO NOTHING; an update or delete is
// UPDATE/DELETE … WHERE run_id = $1 AND revision = $2. Two replicas racing
// on one session serialise on the row lock; the loser's WHERE is
// re-evaluated against the winner's committed row, matches nothing, and
// gets store.ErrConflict. Exactly one winner, with no retry loop. Replay
// receipts live in the payload, so a client that retries a call with the
// same request_id after a lost answer (or after ErrUnavailable on COMMIT,
// whose outcome is unknown) is answered from the receipt the first attempt
// stored, and nothing is applied twice.
//
// # Capacity across replicas
//
// WithMaxSessions is enforced in the database. A create takes the single
// row of qa_capacity_lock with SELECT … FOR UPDATE inside its
// transaction, then counts the rows, evicts as many retained terminal (or
// expired) rows as the new one needs, oldest (expires_at, run_id) first,
// and inserts — all before COMMIT releases the lock. Creates from every
// replica therefore run one at a time; because the transaction is READ
// COMMITTED, each statement after the lock sees every create committed
// before it, so the count is never stale: of 1,000 creates racing against
// a limit of 100, exactly 100 commit and the rest fail with ErrCapacity
// (wrapping store.ErrCapacity) having changed nothing. Only creates take
// the lock: updates never make a terminal session active again and
// deletes only free room, so neither can break the limit. A lock row was
// chosen over pg_advisory_xact_lock because it is scoped to this schema's
// tables (no global key to collide with) and shows up in pg_locks by table
// name. The count is O(rows) per create, which is nothing at the default
// limit of 100 and still small at 10^4; every replica must be started with
// the same --max-sessions (each enforces its own value).
//
// # Expiry
//
// Sweep deletes expired rows (expires_at ≤ now, or the zero time) in
// batches of DELETE … WHERE run_id IN (SELECT … FOR UPDATE SKIP LOCKED
// LIMIT n). Every replica may run it at once (WithSweepInterval): rows
// another sweeper or a writer holds are skipped, not waited for, so
// sweepers never block each other or a live call, and a row is deleted at
// most once. The orchestrator's own purge keeps working beside it.
//
// # Failures
//
// A connection that cannot be made or is lost (the server restarting, a
// network failure, "too many connections", a standby that refuses writes)
// and a serialization failure or deadlock are reported as ErrUnavailable,
// which wraps store.ErrUnavailable: the call may be retried, with the same
// request_id. Waiting for a pooled connection is bounded by
// WithAcquireTimeout and then fails with ErrPoolTimeout (also retryable).
// Every connection sets statement_timeout (WithStatementTimeout); a
// statement that exceeds it fails with ErrStatementTimeout. The caller's
// own cancelled context is returned as such. Failed writes are logged
// with their cause at Warn (WithLogger); payloads never are, and no error
// or log line carries the connection string's password.
package postgres
