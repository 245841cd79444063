package postgres

import (
	"context"
	"errors"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/diffpalhq/diffpal/internal/qa/store"
	"github.com/diffpalhq/diffpal/internal/qa/store/postgres/pgtest"
)

// PostgreSQL restarted mid-flow: during the outage every call fails with
// the retryable error (store.ErrUnavailable, naming the cause); after it the
// same Store works again without being reopened; every write acknowledged
// before the outage is there, and a write that failed during it was not
// applied.
func TestServerRestartMidFlow(t *testing.T) {
	for _, mode := range []string{"fast shutdown", "crash (immediate shutdown)"} {
		t.Run(mode, func(t *testing.T) {
			c := pgtest.NewCluster(t)
			url := c.URL(t)
			s := mustOpen(t, url, WithLogger(slog.New(slog.DiscardHandler)), WithAcquireTimeout(5*time.Second))
			exp := t0.Add(time.Hour)
			put(t, s, record("qar-a", 0, "active", false, exp), store.Absent)
			put(t, s, record("qar-a", 1, "awaiting_host_outcome", false, exp), 0)
			put(t, s, record("qar-b", 0, "active", false, exp), store.Absent)

			// A call in flight when the server goes: blocked on a row lock
			// another connection holds, it loses its connection.
			holdRowLock(t, url, "qar-b")
			inflight := make(chan error, 1)
			go func() { inflight <- s.Delete(ctxT(t), "qar-b", 0) }()
			waitForLockWaiters(t, url, 1)

			if mode == "fast shutdown" {
				c.Stop(t)
			} else {
				c.Kill(t)
			}
			// It either committed before its backend was stopped (the
			// lock holder's backend may be stopped first, releasing the
			// lock) and was acknowledged, or it failed with the retryable
			// error.
			inflightErr := <-inflight
			if inflightErr != nil && !errors.Is(inflightErr, store.ErrUnavailable) {
				t.Fatalf("call in flight when the server stopped = %v, want nil or ErrUnavailable", inflightErr)
			}
			t.Logf("in flight: %v", inflightErr)
			calls := map[string]func() error{
				"get":    func() error { _, err := s.Get(ctxT(t), "qar-a"); return err },
				"list":   func() error { _, err := s.List(ctxT(t)); return err },
				"update": func() error { return s.Put(ctxT(t), record("qar-a", 2, "completed", true, exp), 1) },
				"create": func() error { return s.Put(ctxT(t), record("qar-c", 0, "active", false, exp), store.Absent) },
				"delete": func() error { return s.Delete(ctxT(t), "qar-b", 0) },
				"ping":   func() error { return s.Ping(ctxT(t)) },
			}
			for name, call := range calls {
				err := call()
				if !errors.Is(err, store.ErrUnavailable) || !errors.Is(err, ErrUnavailable) {
					t.Fatalf("%s during the outage = %v, want ErrUnavailable", name, err)
				}
				t.Logf("%s during the outage: %v", name, err)
				if !strings.Contains(err.Error(), "retry") {
					t.Errorf("%s: error does not say it is retryable: %v", name, err)
				}
			}

			c.Start(t)
			// The first call after the outage may still meet a connection
			// the pool had not yet found dead; retrying is what clients do.
			ctx := ctxT(t)
			var got store.Record
			for {
				var err error
				if got, err = s.Get(ctx, "qar-a"); err == nil {
					break
				}
				if !errors.Is(err, store.ErrUnavailable) {
					t.Fatalf("get after the outage: %v", err)
				}
				select {
				case <-ctx.Done():
					t.Fatalf("the store never recovered: %v", err)
				case <-time.After(20 * time.Millisecond):
				}
			}
			if got.Revision != 1 || got.Status != "awaiting_host_outcome" {
				t.Fatalf("acknowledged update lost: %+v", got)
			}
			if _, err := s.Get(ctxT(t), "qar-c"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("a create that failed during the outage was applied: %v", err)
			}
			_, err := s.Get(ctxT(t), "qar-b")
			switch {
			case inflightErr == nil && !errors.Is(err, store.ErrNotFound):
				t.Fatalf("the acknowledged in-flight delete was lost: %v", err)
			case inflightErr != nil && err != nil && !errors.Is(err, store.ErrNotFound):
				t.Fatal(err)
			case inflightErr != nil:
				// Outcome unknown to the caller: its retry settles it once.
				if err := s.Delete(ctxT(t), "qar-b", 0); err != nil && !errors.Is(err, store.ErrNotFound) {
					t.Fatalf("retried delete: %v", err)
				}
			}
			if ids := ids(list(t, s)); len(ids) != 1 || ids[0] != "qar-a" {
				t.Fatalf("rows after the outage: %v", ids)
			}
			// The retried calls now succeed, once.
			put(t, s, record("qar-a", 2, "completed", true, exp), 1)
			if err := s.Put(ctxT(t), record("qar-a", 2, "completed", true, exp), 1); !errors.Is(err, store.ErrConflict) {
				t.Fatalf("second application of the same write = %v, want ErrConflict", err)
			}
			if err := s.Ping(ctxT(t)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Every pooled connection busy: the next call waits at most the acquire
// timeout, then fails with ErrPoolTimeout (retryable); the busy call
// finishes normally once its lock is released.
func TestPoolExhaustion(t *testing.T) {
	url := pgtest.Start(t)
	s := mustOpen(t, url, WithMaxConns(1), WithAcquireTimeout(200*time.Millisecond), WithStatementTimeout(time.Minute))
	put(t, s, record("qar-a", 0, "active", false, t0.Add(time.Hour)), store.Absent)
	release := holdRowLock(t, url, "qar-a")
	blocked := make(chan error, 1)
	go func() { blocked <- s.Put(ctxT(t), record("qar-a", 1, "completed", true, t0.Add(time.Hour)), 0) }()
	waitForLockWaiters(t, url, 1)

	_, err := s.Get(ctxT(t), "qar-a")
	if !errors.Is(err, ErrPoolTimeout) || !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Get with the pool exhausted = %v, want ErrPoolTimeout", err)
	}
	t.Logf("pool exhausted: %v", err)
	if !strings.Contains(err.Error(), "pool exhausted") || !strings.Contains(err.Error(), "1 connections busy") {
		t.Errorf("unclear error: %v", err)
	}
	release()
	if err := <-blocked; err != nil {
		t.Fatalf("the busy write after release: %v", err)
	}
	if got, err := s.Get(ctxT(t), "qar-a"); err != nil || got.Revision != 1 {
		t.Fatalf("after release: %+v %v", got, err)
	}
}

// A statement that runs past statement_timeout is cancelled by the server:
// a clear ErrStatementTimeout (not "unavailable", not the caller's
// context), and the write changed nothing.
func TestStatementTimeout(t *testing.T) {
	url := pgtest.Start(t)
	var logs strings.Builder
	s := mustOpen(t, url, WithStatementTimeout(100*time.Millisecond), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	put(t, s, record("qar-a", 0, "active", false, t0.Add(time.Hour)), store.Absent)
	release := holdRowLock(t, url, "qar-a")
	err := s.Put(ctxT(t), record("qar-a", 1, "completed", true, t0.Add(time.Hour)), 0)
	if !errors.Is(err, ErrStatementTimeout) || errors.Is(err, store.ErrUnavailable) ||
		errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Put past statement_timeout = %v, want ErrStatementTimeout", err)
	}
	t.Logf("statement timeout: %v", err)
	if !strings.Contains(err.Error(), "statement_timeout") || !strings.Contains(logs.String(), "statement_timeout") {
		t.Errorf("unclear error or not logged: %v / %s", err, logs.String())
	}
	release()
	if got, err := s.Get(ctxT(t), "qar-a"); err != nil || got.Revision != 0 {
		t.Fatalf("after a timed-out write: %+v %v", got, err)
	}
	// The caller's own deadline is reported as such, not as a timeout of
	// the server's.
	release = holdRowLock(t, url, "qar-a")
	defer release()
	s2 := mustOpen(t, url, WithStatementTimeout(time.Minute))
	ctx, cancel := context.WithTimeout(bg, 100*time.Millisecond)
	defer cancel()
	if err := s2.Put(ctx, record("qar-a", 1, "completed", true, t0.Add(time.Hour)), 0); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Put past the caller's deadline = %v, want context.DeadlineExceeded", err)
	}
}

// A server that is not there fails Open with the retryable error, and no
// error text carries the password.
func TestOpenUnreachable(t *testing.T) {
	dir := t.TempDir()
	u := (&url.URL{Scheme: "postgres", User: url.UserPassword("diffpal", "hunter2-secret"), Path: "/qa",
		RawQuery: url.Values{"host": {dir}}.Encode()}).String()
	_, err := Open(ctxT(t), u)
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Open without a server = %v, want ErrUnavailable", err)
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("error leaks the password: %v", err)
	}
	_, err = Open(ctxT(t), "postgres://diffpal:hunter2-secret@[::1/qa")
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("bad URL: %v", err)
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:s3cret@db:5432/qa?sslmode=require": "postgres://u:xxxxx@db:5432/qa?sslmode=require",
		"postgresql://u@db/qa?password=s3cret":           "postgresql://u@db/qa?password=xxxxx",
		"postgres://db/qa":                               "postgres://db/qa",
		"host=db password='s3 cret' dbname=qa":           "host=db password=xxxxx dbname=qa",
		"postgres://u:s3cret@[::1/qa":                    "postgres://(unparsable; not shown)",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
	if err := CheckConnString("postgres://u:s3cret@db:notaport/qa"); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("CheckConnString = %v", err)
	}
}
