// Package storetest is the conformance suite every store.Store must pass.
// A new backend (SQLite, PostgreSQL) calls Run from its own test with a
// constructor that returns an empty store.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/diffpalhq/diffpal/internal/qa/store"
)

// Run exercises newStore against the store.Store contract. newStore must
// return an empty, independent store on every call.
func Run(t *testing.T, newStore func() store.Store) {
	t.Helper()
	ctx := context.Background()
	exp := time.Date(2026, 10, 14, 12, 0, 0, 123456000, time.UTC)
	rec := func(id string, rev int64) store.Record {
		return store.Record{RunID: id, Revision: rev, Status: "active", ExpiresAt: exp,
			Payload: []byte(fmt.Sprintf(`{"run_id":%q,"revision":%d}`, id, rev))}
	}
	equal := func(t *testing.T, got, want store.Record) {
		t.Helper()
		if got.RunID != want.RunID || got.Revision != want.Revision || got.Status != want.Status ||
			got.Finalized != want.Finalized || !got.ExpiresAt.Equal(want.ExpiresAt) ||
			!bytes.Equal(got.Payload, want.Payload) {
			t.Fatalf("record mismatch:\n got %+v\nwant %+v", got, want)
		}
	}

	t.Run("GetMissing", func(t *testing.T) {
		s := newStore()
		if _, err := s.Get(ctx, "qar-none"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Get missing: %v, want ErrNotFound", err)
		}
	})

	t.Run("CreateAndGet", func(t *testing.T) {
		s := newStore()
		r := rec("qar-a", 0)
		r.Finalized = true
		r.Status = "completed"
		if err := s.Put(ctx, r, store.Absent); err != nil {
			t.Fatal(err)
		}
		got, err := s.Get(ctx, "qar-a")
		if err != nil {
			t.Fatal(err)
		}
		equal(t, got, r)
	})

	t.Run("CreateExistingConflicts", func(t *testing.T) {
		s := newStore()
		if err := s.Put(ctx, rec("qar-a", 0), store.Absent); err != nil {
			t.Fatal(err)
		}
		if err := s.Put(ctx, rec("qar-a", 5), store.Absent); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("second create: %v, want ErrConflict", err)
		}
		got, _ := s.Get(ctx, "qar-a")
		equal(t, got, rec("qar-a", 0))
	})

	t.Run("ConditionalUpdate", func(t *testing.T) {
		s := newStore()
		if err := s.Put(ctx, rec("qar-a", 0), store.Absent); err != nil {
			t.Fatal(err)
		}
		if err := s.Put(ctx, rec("qar-a", 1), 0); err != nil {
			t.Fatalf("update at matching revision: %v", err)
		}
		if err := s.Put(ctx, rec("qar-a", 2), 0); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("stale update: %v, want ErrConflict", err)
		}
		got, _ := s.Get(ctx, "qar-a")
		equal(t, got, rec("qar-a", 1))
		if err := s.Put(ctx, rec("qar-b", 1), 0); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("update of missing: %v, want ErrNotFound", err)
		}
	})

	t.Run("Delete", func(t *testing.T) {
		s := newStore()
		if err := s.Delete(ctx, "qar-x", store.AnyRevision); err != nil {
			t.Fatalf("unconditional delete of missing: %v", err)
		}
		if err := s.Delete(ctx, "qar-x", 3); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("conditional delete of missing: %v, want ErrNotFound", err)
		}
		_ = s.Put(ctx, rec("qar-a", 0), store.Absent)
		_ = s.Put(ctx, rec("qar-a", 4), 0)
		if err := s.Delete(ctx, "qar-a", 3); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("stale delete: %v, want ErrConflict", err)
		}
		if err := s.Delete(ctx, "qar-a", 4); err != nil {
			t.Fatalf("conditional delete: %v", err)
		}
		if _, err := s.Get(ctx, "qar-a"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Get after delete: %v", err)
		}
		_ = s.Put(ctx, rec("qar-b", 0), store.Absent)
		if err := s.Delete(ctx, "qar-b", store.AnyRevision); err != nil {
			t.Fatal(err)
		}
		if err := s.Put(ctx, rec("qar-b", 0), store.Absent); err != nil {
			t.Fatalf("re-create after delete: %v", err)
		}
	})

	t.Run("ListOrdered", func(t *testing.T) {
		s := newStore()
		if got, err := s.List(ctx); err != nil || len(got) != 0 {
			t.Fatalf("empty List = %v, %v", got, err)
		}
		for _, id := range []string{"qar-c", "qar-a", "qar-b"} {
			if err := s.Put(ctx, rec(id, 0), store.Absent); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 3 || got[0].RunID != "qar-a" || got[1].RunID != "qar-b" || got[2].RunID != "qar-c" {
			t.Fatalf("List order = %v", got)
		}
		equal(t, got[1], rec("qar-b", 0))
		meta, err := s.ListMeta(ctx)
		if err != nil || len(meta) != 3 {
			t.Fatalf("ListMeta = %v, %v", meta, err)
		}
		for i, m := range meta {
			if m.Payload != nil {
				t.Errorf("ListMeta[%d] carries a payload", i)
			}
			want := got[i]
			want.Payload = nil
			if m.RunID != want.RunID || m.Revision != want.Revision || m.Status != want.Status ||
				m.Finalized != want.Finalized || !m.ExpiresAt.Equal(want.ExpiresAt) {
				t.Errorf("ListMeta[%d] = %+v, want %+v", i, m, want)
			}
		}
	})

	t.Run("NoAliasing", func(t *testing.T) {
		s := newStore()
		r := rec("qar-a", 0)
		if err := s.Put(ctx, r, store.Absent); err != nil {
			t.Fatal(err)
		}
		r.Payload[0] = 'X'
		got, _ := s.Get(ctx, "qar-a")
		equal(t, got, rec("qar-a", 0))
		got.Payload[0] = 'Y'
		list, _ := s.List(ctx)
		list[0].Payload[0] = 'Z'
		again, _ := s.Get(ctx, "qar-a")
		equal(t, again, rec("qar-a", 0))
	})

	t.Run("CanceledContext", func(t *testing.T) {
		s := newStore()
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := s.Put(cctx, rec("qar-a", 0), store.Absent); err == nil {
			t.Fatal("Put with canceled context succeeded")
		}
		if _, err := s.Get(ctx, "qar-a"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("canceled Put left a record: %v", err)
		}
	})

	t.Run("RacingConditionalWritesOneWinner", func(t *testing.T) {
		s := newStore()
		if err := s.Put(ctx, rec("qar-a", 0), store.Absent); err != nil {
			t.Fatal(err)
		}
		const n = 8
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rec("qar-a", 1)
				r.Status = fmt.Sprintf("writer-%d", i)
				errs[i] = s.Put(ctx, r, 0)
			}()
		}
		wg.Wait()
		wins := 0
		for _, err := range errs {
			switch {
			case err == nil:
				wins++
			case !errors.Is(err, store.ErrConflict):
				t.Fatalf("unexpected error: %v", err)
			}
		}
		if wins != 1 {
			t.Fatalf("%d writers won, want exactly 1", wins)
		}
	})

	t.Run("ZeroExpiryAndEmptyPayload", func(t *testing.T) {
		s := newStore()
		r := store.Record{RunID: "qar-z", Revision: 3, Status: "blocked", Finalized: true, Payload: []byte{}}
		if err := s.Put(ctx, r, store.Absent); err != nil {
			t.Fatal(err)
		}
		got, err := s.Get(ctx, "qar-z")
		if err != nil {
			t.Fatal(err)
		}
		equal(t, got, r)
		if !got.ExpiresAt.IsZero() || len(got.Payload) != 0 {
			t.Fatalf("zero expiry / empty payload read back as %v / %q", got.ExpiresAt, got.Payload)
		}
	})

	t.Run("RacingDeletesOneWinner", func(t *testing.T) {
		s := newStore()
		if err := s.Put(ctx, rec("qar-a", 4), store.Absent); err != nil {
			t.Fatal(err)
		}
		const n = 8
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = s.Delete(ctx, "qar-a", 4)
			}()
		}
		wg.Wait()
		wins := 0
		for _, err := range errs {
			switch {
			case err == nil:
				wins++
			case !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrConflict):
				t.Fatalf("unexpected error: %v", err)
			}
		}
		if wins != 1 {
			t.Fatalf("%d deleters won, want exactly 1", wins)
		}
	})

	t.Run("RacingCreatesOneWinner", func(t *testing.T) {
		s := newStore()
		const n = 8
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = s.Put(ctx, rec("qar-a", 0), store.Absent)
			}()
		}
		wg.Wait()
		wins := 0
		for _, err := range errs {
			if err == nil {
				wins++
			}
		}
		if wins != 1 {
			t.Fatalf("%d creators won, want exactly 1", wins)
		}
	})

	t.Run("Indexed", func(t *testing.T) {
		s, ok := newStore().(store.Indexed)
		if !ok {
			t.Skip("not a store.Indexed")
		}
		runIndexed(t, s)
	})
}

// runIndexed drives s with random creates, updates and deletes (random
// statuses, expiries with ties and the zero time) and checks every
// store.Indexed answer against the same question asked of List.
func runIndexed(t *testing.T, s store.Indexed) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(16, 4))
	base := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	expiry := func() time.Time {
		if rng.IntN(20) == 0 {
			return time.Time{}
		}
		return base.Add(time.Duration(rng.IntN(40)) * time.Second).Add(time.Duration(rng.IntN(3)))
	}
	statuses := []string{"active", "awaiting_host_outcome", "completed", "partial", "blocked"}
	ids := make([]string, 60)
	for i := range ids {
		ids[i] = fmt.Sprintf("qar-%032x", rng.Uint64()%1000)
	}
	listed := func() []store.Record {
		t.Helper()
		recs, err := s.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return recs
	}
	same := func(what string, got, want []store.Record) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d records, want %d\n got %v\nwant %v", what, len(got), len(want), got, want)
		}
		for i := range got {
			g, w := got[i], want[i]
			if g.RunID != w.RunID || g.Revision != w.Revision || g.Status != w.Status || g.Finalized != w.Finalized ||
				!g.ExpiresAt.Equal(w.ExpiresAt) || g.Payload != nil {
				t.Fatalf("%s[%d] = %+v, want %+v (payload nil)", what, i, g, w)
			}
		}
	}
	meta := func(recs []store.Record) []store.Record {
		out := make([]store.Record, len(recs))
		for i, r := range recs {
			r.Payload = nil
			out[i] = r
		}
		return out
	}
	active := func(st string) bool { return st == "active" || st == "awaiting_host_outcome" }
	check := func(step int) {
		t.Helper()
		all := listed()
		total, act, err := s.Occupancy(ctx)
		wantAct := 0
		for _, r := range all {
			if active(r.Status) {
				wantAct++
			}
		}
		if err != nil || total != len(all) || act != wantAct {
			t.Fatalf("step %d: Occupancy = %d, %d, %v; want %d, %d", step, total, act, err, len(all), wantAct)
		}
		asc := slices.Clone(all)
		slices.SortFunc(asc, func(a, b store.Record) int { return store.PositionOf(a).Compare(store.PositionOf(b)) })
		var terminal []store.Record
		for _, r := range asc {
			if !active(r.Status) {
				terminal = append(terminal, r)
			}
		}
		n := rng.IntN(len(terminal) + 3)
		got, err := s.Evictable(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		same(fmt.Sprintf("step %d: Evictable(%d)", step, n), got, meta(terminal[:min(n, len(terminal))]))
		now := base.Add(time.Duration(rng.IntN(45)) * time.Second)
		var live []store.Record
		for i := len(asc) - 1; i >= 0; i-- {
			if asc[i].ExpiresAt.After(now) {
				live = append(live, asc[i])
			}
		}
		var after *store.Position
		skip := 0
		switch rng.IntN(3) {
		case 1:
			if len(live) > 0 {
				skip = rng.IntN(len(live))
				p := store.PositionOf(live[skip])
				after, skip = &p, skip+1
			}
		case 2: // a position no record has
			p := store.Position{ExpiresAt: now.Add(time.Duration(rng.IntN(30)) * time.Second), RunID: "qar-5"}
			after = &p
			for skip < len(live) && store.PositionOf(live[skip]).Compare(p) >= 0 {
				skip++
			}
		}
		limit := rng.IntN(12)
		want := live[skip:]
		want = want[:min(limit, len(want))]
		page, err := s.Page(ctx, now, after, limit)
		if err != nil {
			t.Fatal(err)
		}
		same(fmt.Sprintf("step %d: Page(%v, %v, %d)", step, now, after, limit), page, meta(want))
	}
	for step := range 400 {
		id := ids[rng.IntN(len(ids))]
		cur, err := s.Get(ctx, id)
		exists := err == nil
		switch op := rng.IntN(10); {
		case !exists:
			r := store.Record{RunID: id, Status: statuses[rng.IntN(len(statuses))], ExpiresAt: expiry(), Payload: []byte("{}")}
			if err := s.Put(ctx, r, store.Absent); err != nil {
				t.Fatal(err)
			}
		case op < 7:
			r := cur
			r.Revision++
			r.Status = statuses[rng.IntN(len(statuses))]
			r.Finalized = !active(r.Status) && rng.IntN(2) == 0
			r.ExpiresAt = expiry()
			if err := s.Put(ctx, r, cur.Revision); err != nil {
				t.Fatal(err)
			}
		case op < 9:
			if err := s.Delete(ctx, id, cur.Revision); err != nil {
				t.Fatal(err)
			}
		default:
			now := base.Add(time.Duration(rng.IntN(20)) * time.Second)
			keep := ""
			if rng.IntN(2) == 0 {
				keep = id
			}
			before := listed()
			gone, err := s.PurgeExpired(ctx, now, keep)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, r := range before {
				if !r.ExpiresAt.After(now) && r.RunID != keep {
					want = append(want, r.RunID)
				}
			}
			slices.Sort(gone)
			if !slices.Equal(gone, want) {
				t.Fatalf("step %d: PurgeExpired(%v, %q) = %v, want %v", step, now, keep, gone, want)
			}
			for _, r := range listed() {
				if !r.ExpiresAt.After(now) && r.RunID != keep {
					t.Fatalf("step %d: %s survived the purge", step, r.RunID)
				}
			}
		}
		if step%4 == 0 {
			check(step)
		}
	}
	check(400)
}
