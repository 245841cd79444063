package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/diffpalhq/diffpal/internal/qa/store"
)

// Errors, wrapped with the operation and the cause; test with errors.Is.
var (
	// ErrUnavailable: the database could not be reached, or the connection
	// was lost mid-call (the server restarting or shutting down, a network
	// failure, too many connections, a read-only standby), or the
	// transaction hit a serialization failure or deadlock. It wraps
	// store.ErrUnavailable: the call may be retried (with the same
	// request_id: if the failure hit a COMMIT whose outcome is unknown, the
	// stored receipt answers the retry).
	ErrUnavailable = fmt.Errorf("session database unavailable, retry: %w", store.ErrUnavailable)
	// ErrPoolTimeout: no pooled connection became free (or could be
	// established) within WithAcquireTimeout. It wraps ErrUnavailable.
	ErrPoolTimeout = fmt.Errorf("no database connection free within the acquire timeout (pool exhausted or database unreachable): %w", ErrUnavailable)
	// ErrStatementTimeout: a statement ran longer than statement_timeout
	// (WithStatementTimeout) and was cancelled by the server; its
	// transaction was rolled back and changed nothing.
	ErrStatementTimeout = errors.New("session database statement exceeded statement_timeout")
	// ErrCapacity: the WithMaxSessions limit (from Open: more active rows
	// than the limit; from a create: the store is full of active sessions).
	// It wraps store.ErrCapacity. Nothing was changed.
	ErrCapacity = fmt.Errorf("session store exceeds the configured active session limit: %w", store.ErrCapacity)
	// ErrUnsupportedSchema: the database holds a schema version this build
	// does not know (a newer diffpal migrated it). Nothing was changed.
	ErrUnsupportedSchema = errors.New("unsupported session store schema")
	// ErrInvalidData: a row failed validation at start-up. Nothing was
	// changed.
	ErrInvalidData = errors.New("session store contains invalid session data")
)

// classify turns a driver error into one of the errors above where one
// applies, keeping the cause. closed reports whether the connection the
// error came from is closed now (a lost connection), when known.
func classify(ctx context.Context, err error, closed bool) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		// The caller's own deadline or cancellation, whatever the driver
		// made of it.
		return fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	if errors.Is(err, ErrPoolTimeout) || errors.Is(err, ErrUnavailable) || errors.Is(err, ErrStatementTimeout) {
		return err
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "57014": // query_canceled, with the caller's context live: statement_timeout
			return fmt.Errorf("%w: %w", ErrStatementTimeout, err)
		case pe.Code == "55P03": // lock_not_available: lock_timeout
			return fmt.Errorf("%w (lock_timeout): %w", ErrStatementTimeout, err)
		case strings.HasPrefix(pe.Code, "08"), // connection exception
			pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03", // admin/crash shutdown, cannot connect now
			pe.Code == "53300",                     // too_many_connections
			pe.Code == "25006",                     // read_only_sql_transaction: a standby after failover
			pe.Code == "40001", pe.Code == "40P01": // serialization failure, deadlock
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		return err
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	if closed || errors.As(err, &ce) || errors.As(err, &ne) || pgconn.SafeToRetry(err) || pgconn.Timeout(err) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, syscall.ENOENT) { // a unix socket that is gone while the server is down
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}

// isAnswer reports whether err is an answer of the store contract rather
// than a failure (not logged).
func isAnswer(err error) bool {
	return errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrCapacity)
}
