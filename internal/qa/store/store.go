// Package store defines where QA orchestration sessions live and ships the
// in-memory implementation. Records are opaque to the store: the payload is
// the serialized session, and the few columns beside it (revision, status,
// finalized flag, expiry) exist so that SQL stores can index, purge and
// enforce conditional writes without decoding payloads.
//
// A store must make every acknowledged write durable for its medium before
// returning, must never hand out memory it keeps (callers mutate what they
// get), and must apply revision-checked writes atomically, so that two
// replicas racing on one session produce exactly one winner.
package store

import (
	"context"
	"time"
)

// Error is a store error with a fixed text; the constants below are the
// only values stores return for the conditions they name, so callers test
// them with errors.Is.
type Error string

func (e Error) Error() string { return string(e) }

const (
	// ErrNotFound: no record for the run id.
	ErrNotFound Error = "store: record not found"
	// ErrConflict: the stored revision did not match the expected one (or a
	// create found an existing record).
	ErrConflict Error = "store: revision conflict"
	// ErrCapacity: a create found the store full of active sessions (a
	// store that enforces a limit across processes, such as SQLite's
	// WithMaxSessions); nothing was changed.
	ErrCapacity Error = "store: active session limit reached"
	// ErrUnavailable: the store could not be reached or lost its
	// connection mid-call (a database restarting, a network failure, an
	// exhausted connection pool). It is retryable: the write either did not
	// happen or, if the failure hit its commit, the caller's retry with the
	// same request_id is answered from the stored receipt. Shared stores
	// (PostgreSQL) wrap it with the cause.
	ErrUnavailable Error = "store: unavailable (retryable)"
)

const (
	// Absent as the expected revision of Put means "create; the record must
	// not exist yet".
	Absent int64 = -1
	// AnyRevision as the expected revision of Delete means "unconditional".
	AnyRevision int64 = -2
)

// ActiveStatuses are the record statuses that hold an active slot (qa's
// StatusActive and StatusAwaitingHostOutcome; qa's tests check they
// match); every other status is a terminal session a store may evict. The
// SQL stores' capacity and eviction read this one list.
var ActiveStatuses = []string{"active", "awaiting_host_outcome"}

// Record is one stored session.
type Record struct {
	RunID     string
	Revision  int64
	Status    string
	Finalized bool
	ExpiresAt time.Time
	Payload   []byte
}

// Clone returns a copy that shares no memory with r.
func (r Record) Clone() Record {
	r.Payload = append([]byte(nil), r.Payload...)
	return r
}

// Store persists session records.
type Store interface {
	// Get returns the record for runID or ErrNotFound.
	Get(ctx context.Context, runID string) (Record, error)
	// Put writes rec when the stored revision equals expected; expected ==
	// Absent creates the record and fails with ErrConflict if it exists.
	// A missing record with expected != Absent is ErrNotFound.
	Put(ctx context.Context, rec Record, expected int64) error
	// Delete removes runID when its revision equals expected. With
	// AnyRevision a missing record is not an error; with a concrete revision
	// a missing record is ErrNotFound and a different one ErrConflict.
	Delete(ctx context.Context, runID string, expected int64) error
	// List returns every record, ordered by RunID ascending.
	List(ctx context.Context) ([]Record, error)
	// ListMeta is List without payloads (Payload nil): what purge,
	// capacity and eviction need, without copying every session on every
	// call.
	ListMeta(ctx context.Context) ([]Record, error)
}
