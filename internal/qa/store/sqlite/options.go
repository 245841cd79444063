package sqlite

import (
	"log/slog"
	"time"

	"github.com/diffpalhq/diffpal/internal/qa/store"
)

// DefaultBusyTimeout is how long a statement waits for a lock another
// connection or process holds before failing (the anchor's 5 s).
const DefaultBusyTimeout = 5 * time.Second

// DefaultActiveStatuses are the record statuses that hold an active slot:
// store.ActiveStatuses.
var DefaultActiveStatuses = store.ActiveStatuses

// Option configures Open.
type Option func(*options)

type options struct {
	busyTimeout     time.Duration
	validate        func(store.Record) error
	removeFinalized bool
	keepExpired     bool
	maxSessions     int
	active          map[string]bool
	now             func() time.Time
	logger          *slog.Logger
}

func defaultOptions() options {
	o := options{busyTimeout: DefaultBusyTimeout, now: time.Now}
	WithActiveStatuses(DefaultActiveStatuses...)(&o)
	return o
}

// WithBusyTimeout sets how long a statement waits for another connection's
// lock (default DefaultBusyTimeout). Values below one millisecond are raised
// to one millisecond: a zero timeout would make concurrent writers fail
// instead of queueing.
func WithBusyTimeout(d time.Duration) Option {
	return func(o *options) { o.busyTimeout = max(d, time.Millisecond) }
}

// WithValidate installs the payload check run on every row at start-up and
// on every record before Put writes it, so that a record the next start-up
// would refuse is never written. qa supplies one that decodes the session.
// Its error text ends up in Open and Put errors, so it should name what is
// wrong without quoting payload content.
func WithValidate(fn func(store.Record) error) Option {
	return func(o *options) { o.validate = fn }
}

// WithRemoveFinalized makes start-up delete finalized rows, as the anchor
// does (§8.4 step 2). It is off by default because internal/qa keeps a
// finalized session in the store until it expires: export_qa_findings and a
// repeated finish_qa_orchestration read the final report from it, and
// removing it on restart would turn those into "unknown run_id".
func WithRemoveFinalized(remove bool) Option {
	return func(o *options) { o.removeFinalized = remove }
}

// WithKeepExpired disables the start-up purge of expired rows (§8.4 step 3).
// The orchestrator purges them on its next call anyway; keeping them only
// changes which error a caller addressing one sees.
func WithKeepExpired(keep bool) Option {
	return func(o *options) { o.keepExpired = keep }
}

// WithMaxSessions enforces capacity in the store, so that it holds across
// every process sharing the file (QA-CONTRACT §8). At start-up (§8.4 steps
// 4–5): more active rows than n fails the open with ErrCapacity; otherwise
// terminal rows are evicted, oldest (expires_at, run_id) first, until at
// most n rows remain. On every create (Put with store.Absent), in the
// create's own write transaction: terminal or expired rows are evicted,
// oldest first, until the new row fits, or the create fails with
// ErrCapacity when n active rows already exist. Pass the orchestrator's
// MaxSessions. n <= 0 (the default) skips both checks.
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

// WithClock sets the clock used to decide expiry at start-up and, on a
// create, which rows no longer hold an active slot (default time.Now).
// Pass the orchestrator's clock.
func WithClock(now func() time.Time) Option {
	return func(o *options) {
		if now != nil {
			o.now = now
		}
	}
}

// WithLogger sets where a failed write is logged, with its cause, at level
// Warn (default slog.Default()). The orchestrator answers a failed write
// with the bare "unable to write session store", so the cause is only ever
// in this log. Nothing else is logged; payloads never are.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.logger = l }
}
