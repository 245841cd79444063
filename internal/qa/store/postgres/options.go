package postgres

import (
	"log/slog"
	"time"

	"github.com/diffpalhq/diffpal/internal/qa/store"
)

// Defaults of the connection options.
const (
	// DefaultStatementTimeout is the statement_timeout every connection
	// sets: a statement running longer (a lock held by a stuck client, an
	// overloaded server) fails with ErrStatementTimeout instead of holding
	// a call and a pooled connection indefinitely.
	DefaultStatementTimeout = 10 * time.Second
	// DefaultAcquireTimeout bounds the wait for a pooled connection (or for
	// a new one to be established) before a call fails with ErrPoolTimeout.
	DefaultAcquireTimeout = 5 * time.Second
	// DefaultPingTimeout bounds Ping.
	DefaultPingTimeout = 2 * time.Second
	// sweepBatch is how many expired rows one sweep statement deletes.
	sweepBatch = 500
)

// DefaultActiveStatuses are the record statuses that hold an active slot:
// store.ActiveStatuses, as in the SQLite store.
var DefaultActiveStatuses = store.ActiveStatuses

// Option configures Open.
type Option func(*options)

type options struct {
	validate         func(store.Record) error
	removeFinalized  bool
	keepExpired      bool
	maxSessions      int
	active           map[string]bool
	now              func() time.Time
	logger           *slog.Logger
	statementTimeout time.Duration
	acquireTimeout   time.Duration
	maxConns         int32
	sweepEvery       time.Duration
}

func defaultOptions() options {
	o := options{now: time.Now, statementTimeout: DefaultStatementTimeout, acquireTimeout: DefaultAcquireTimeout}
	WithActiveStatuses(DefaultActiveStatuses...)(&o)
	return o
}

// WithValidate installs the payload check run on every row at start-up and
// on every record before Put writes it (qa.ValidateRecord), as in the
// SQLite store. Its error text ends up in Open and Put errors, so it should
// not quote payload content.
func WithValidate(fn func(store.Record) error) Option {
	return func(o *options) { o.validate = fn }
}

// WithRemoveFinalized makes start-up delete finalized rows (the anchor's
// behaviour; off by default, as in the SQLite store).
func WithRemoveFinalized(remove bool) Option {
	return func(o *options) { o.removeFinalized = remove }
}

// WithKeepExpired disables the start-up purge of expired rows.
func WithKeepExpired(keep bool) Option {
	return func(o *options) { o.keepExpired = keep }
}

// WithMaxSessions enforces capacity in the database, across every replica
// (see the package documentation): at start-up more active rows than n
// fails Open with ErrCapacity, otherwise terminal rows are evicted oldest
// first until at most n remain; on every create, terminal or expired rows
// are evicted oldest first until the new row fits, or the create fails with
// ErrCapacity. n <= 0 (the default) skips both checks.
func WithMaxSessions(n int) Option {
	return func(o *options) { o.maxSessions = n }
}

// WithActiveStatuses replaces DefaultActiveStatuses.
func WithActiveStatuses(statuses ...string) Option {
	return func(o *options) {
		o.active = make(map[string]bool, len(statuses))
		for _, s := range statuses {
			o.active[s] = true
		}
	}
}

// WithClock sets the clock that decides expiry (start-up, creates, Sweep);
// default time.Now. Pass the orchestrator's clock.
func WithClock(now func() time.Time) Option {
	return func(o *options) {
		if now != nil {
			o.now = now
		}
	}
}

// WithLogger sets where failed writes and failed background sweeps are
// logged, at Warn (default slog.Default()). Payloads are never logged.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.logger = l }
}

// WithStatementTimeout sets the statement_timeout of every connection
// (default DefaultStatementTimeout; it overrides a statement_timeout in the
// connection string). d <= 0 leaves the server's setting alone. A statement
// that exceeds it fails with ErrStatementTimeout.
func WithStatementTimeout(d time.Duration) Option {
	return func(o *options) { o.statementTimeout = d }
}

// WithAcquireTimeout bounds how long a call waits for a pooled connection
// (default DefaultAcquireTimeout; values below one millisecond are raised to
// it). When every connection is busy for that long the call fails with
// ErrPoolTimeout.
func WithAcquireTimeout(d time.Duration) Option {
	return func(o *options) { o.acquireTimeout = max(d, time.Millisecond) }
}

// WithMaxConns sets the pool size (default: pool_max_conns from the
// connection string, else pgxpool's max(4, GOMAXPROCS)).
func WithMaxConns(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.maxConns = int32(min(n, 1<<20))
		}
	}
}

// WithSweepInterval runs Sweep every d in the background until Close
// (default 0: no background sweeper; the orchestrator purges on its own
// calls). Every replica may run one: see the package documentation.
func WithSweepInterval(d time.Duration) Option {
	return func(o *options) { o.sweepEvery = d }
}
