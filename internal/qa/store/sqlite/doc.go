// Package sqlite is the SQLite-backed store.Store: QA sessions kept in one
// database file so that they survive a restart of `diffpal mcp` (the
// `--store sqlite:PATH` option), and so that several processes or replicas
// on one host can share the file.
//
// It owns the file's safety rules, its schema and start-up recovery
// (reference qa-orchestrator.md §8.4):
//
//   - The file is created with O_EXCL and mode 0600 (its missing parent
//     directory with 0700); an existing file loses its group and other
//     permission bits, as the anchor chmods on every connect, but modes
//     are only ever tightened: no bit is added (0644 becomes 0600, 0400
//     stays 0400). A symlink, directory, FIFO, socket or device at the
//     path is refused with ErrNotRegularFile, and nothing is created or
//     changed.
//   - Open proves the store writable before returning (a write inside the
//     start-up transaction): a read-only file, or a directory where SQLite
//     cannot create its journal, fails the open with ErrNotWritable naming
//     the path, instead of a server that starts and then fails every
//     write.
//   - The schema is versioned in a one-row metadata table
//     (qa_store_meta.schema_version, mirrored in PRAGMA user_version);
//     a file whose schema is unknown, newer, or not a session store at all
//     is refused with ErrUnsupportedSchema and left byte-identical.
//   - At start-up, inside one write transaction: every row is validated
//     (structure, then the WithValidate hook) and any invalid row fails the
//     open with ErrInvalidData, changing nothing; finalized rows are removed
//     only with WithRemoveFinalized(true); expired rows are purged; the
//     active count is checked against WithMaxSessions (ErrCapacity) and
//     terminal rows are evicted oldest first by (expires_at, run_id).
//
// Writes are revision-checked in SQL (INSERT … ON CONFLICT DO NOTHING and
// UPDATE/DELETE … WHERE revision = expected) inside BEGIN IMMEDIATE
// transactions, with the rollback journal and synchronous=FULL, so a write
// is on disk before Put or Delete returns and two writers racing on one
// record produce exactly one winner. A busy timeout (default 5 s) makes
// writers from other processes queue instead of failing.
//
// WithMaxSessions is enforced by the store itself, so that it holds across
// processes: a create counts the rows, evicts retained finished (or
// expired) rows oldest first if it needs room, and inserts, all in one
// BEGIN IMMEDIATE transaction; when active rows alone fill the limit it
// fails with ErrCapacity and changes nothing. Of two processes creating at
// once with one slot left, one commits and the other, queued on the lock
// by the busy timeout, gets ErrCapacity (not SQLITE_BUSY).
//
// A write that fails (other than a revision conflict, a missing record or
// the caller's cancelled context) is logged with its cause to WithLogger's
// logger (default slog.Default()): the orchestrator's answer to the client
// is the bare "unable to write session store". Nothing else is logged.
//
// The package must not interpret payloads itself (that is the qa package's
// job, through the Validate hook), must not log payloads, and must not open the
// database file with os.Open while a connection is live: SQLite's POSIX
// locks belong to the process and any close(2) of that file drops them.
package sqlite
