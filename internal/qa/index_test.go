package qa

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/diffpalhq/diffpal/internal/qa/store"
	"github.com/diffpalhq/diffpal/internal/qa/store/sqlite"
)

// listingOnly hides every method but store.Store's, so the orchestrator
// takes the path that lists every record (the behaviour before stores were
// indexed): the reference the indexed paths are compared with.
type listingOnly struct{ store.Store }

// countingMemory counts the calls that read every record.
type countingMemory struct {
	*store.Memory
	lists int
}

func (c *countingMemory) List(ctx2 context.Context) ([]store.Record, error) {
	c.lists++
	return c.Memory.List(ctx2)
}

func (c *countingMemory) ListMeta(ctx2 context.Context) ([]store.Record, error) {
	c.lists++
	return c.Memory.ListMeta(ctx2)
}

// TestIndexedMatchesListing runs the same random sequence of starts, early
// stops, finishes, deletes, reads, pages and clock steps against an
// orchestrator over a listing-only memory store and one over each indexed
// store (memory; SQLite with and without its own capacity limit), with the
// same clock and run-id entropy, and requires identical answers: the same
// sessions, the same errors (session limit included), the same evictions
// and purges, the same pages and cursors.
func TestIndexedMatchesListing(t *testing.T) {
	const maxSessions = 6
	variants := map[string]func(t *testing.T, clk *fakeClock) Store{
		"memory": func(*testing.T, *fakeClock) Store { return store.NewMemory() },
		"sqlite": func(t *testing.T, clk *fakeClock) Store {
			st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "qa.db"), sqlite.WithValidate(ValidateRecord), sqlite.WithClock(clk.Now))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			return st
		},
		"sqlite-limited": func(t *testing.T, clk *fakeClock) Store {
			st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "qa.db"), sqlite.WithValidate(ValidateRecord),
				sqlite.WithClock(clk.Now), sqlite.WithMaxSessions(maxSessions))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			return st
		},
	}
	for name, mk := range variants {
		t.Run(name, func(t *testing.T) {
			clk := newFakeClock()
			newOrch := func(st Store, ids *idSource) *Orchestrator {
				o, err := New(Config{Store: st, Clock: clk.Now, TTL: time.Minute, MaxSessions: maxSessions, Random: ids})
				if err != nil {
					t.Fatal(err)
				}
				return o
			}
			refIDs, gotIDs := &idSource{}, &idSource{}
			ref := newOrch(listingOnly{store.NewMemory()}, refIDs)
			st := mk(t, clk)
			got := newOrch(st, gotIDs)
			if got.indexed == nil {
				t.Fatal("store is not indexed")
			}
			if _, limited := st.(store.Limited); limited && name == "sqlite-limited" && !got.storeLimits {
				t.Fatal("the store's own limit is not used")
			}
			runDifferential(t, clk, ref, got, func() { refIDs.n++; gotIDs.n++ }, 600)
		})
	}
}

// idSource is run-id entropy that repeats until a start succeeds
// (started): a store that enforces capacity itself refuses a start after
// the run id was drawn, the listing path before, and both must go on to
// draw the same ids.
type idSource struct{ n int }

func (s *idSource) Read(p []byte) (int, error) {
	r := rand.New(rand.NewPCG(uint64(s.n), 99))
	for i := range p {
		p[i] = byte(r.Uint32())
	}
	return len(p), nil
}

func runDifferential(t *testing.T, clk *fakeClock, ref, got *Orchestrator, started func(), steps int) {
	rng := rand.New(rand.NewPCG(3, 4))
	var ids []string
	answer := func(v any, err error) string {
		if err != nil {
			return "error: " + err.Error()
		}
		b, jerr := json.Marshal(v)
		if jerr != nil {
			t.Fatal(jerr)
		}
		return string(b)
	}
	both := func(step int, what string, call func(o *Orchestrator) (any, error)) (any, error) {
		t.Helper()
		rv, rerr := call(ref)
		gv, gerr := call(got)
		if a, b := answer(rv, rerr), answer(gv, gerr); a != b {
			t.Fatalf("step %d: %s:\nlisting: %s\nindexed: %s", step, what, a, b)
		}
		return rv, rerr
	}
	pick := func() string {
		if len(ids) == 0 || rng.IntN(8) == 0 {
			return fmt.Sprintf("qar-%032x", rng.IntN(4))
		}
		return ids[rng.IntN(len(ids))]
	}
	limited, evicted := 0, 0
	defer func() {
		t.Logf("%d starts refused with session limit, %d made room by evicting", limited, evicted)
		if limited == 0 || evicted == 0 {
			t.Errorf("the sequence never hit the limit (%d) or never evicted (%d)", limited, evicted)
		}
	}()
	for step := range steps {
		switch op := rng.IntN(20); {
		case op < 6:
			before, _ := ref.List(ctx, ListInput{Limit: ptr(MaxListLimit)})
			v, err := both(step, "start", func(o *Orchestrator) (any, error) { return o.Start(ctx, StartInput{TaskType: TaskOther}) })
			switch {
			case err != nil && strings.HasPrefix(err.Error(), string(CodeSessionLimit)):
				limited++
			case err == nil && len(before.Sessions) == ref.max:
				evicted++
			}
			if err == nil {
				ids = append(ids, v.(Session).RunID)
				started()
			}
		case op < 9:
			outcome := OutcomeBlocked
			if rng.IntN(2) == 0 {
				outcome = OutcomePartial
			}
			id := pick()
			both(step, "stop "+id, func(o *Orchestrator) (any, error) {
				return o.Advance(ctx, AdvanceInput{RunID: id, CompletedStep: StepTriage, Status: outcome})
			})
		case op < 11:
			outcome := OutcomeBlocked
			if rng.IntN(2) == 0 {
				outcome = OutcomePartial
			}
			id := pick()
			both(step, "finish "+id, func(o *Orchestrator) (any, error) {
				return o.Finish(ctx, FinishInput{RunID: id, Outcome: outcome})
			})
		case op < 12:
			id := pick()
			both(step, "delete "+id, func(o *Orchestrator) (any, error) { return o.Delete(ctx, DeleteInput{RunID: id}) })
		case op < 14:
			id := pick()
			both(step, "get "+id, func(o *Orchestrator) (any, error) { return o.Get(ctx, GetInput{RunID: id}) })
		case op < 17:
			limit := 1 + rng.IntN(4)
			in := ListInput{Limit: &limit}
			for page := 0; ; page++ {
				v, err := both(step, fmt.Sprintf("list page %d (limit %d)", page, limit), func(o *Orchestrator) (any, error) { return o.List(ctx, in) })
				if err != nil || v.(ListOutput).NextCursor == nil || page > 10 {
					break
				}
				in.Cursor = v.(ListOutput).NextCursor
			}
		default:
			clk.Add(time.Duration(rng.IntN(25)) * time.Second)
		}
	}
}

// TestIndexedNeverLists: on an indexed store, starting (with evictions),
// reading, advancing and listing a page never read every record.
func TestIndexedNeverLists(t *testing.T) {
	st := &countingMemory{Memory: store.NewMemory()}
	o, clk := newTestOrch(t, func(c *Config) { c.Store = st; c.MaxSessions = 3 })
	for range 10 {
		s := mustStart(t, o, StartInput{TaskType: TaskOther})
		mustAdvance(t, o, AdvanceInput{RunID: s.RunID, CompletedStep: StepTriage, Status: OutcomeBlocked})
		if _, err := o.Get(ctx, GetInput{RunID: s.RunID}); err != nil {
			t.Fatal(err)
		}
		if _, err := o.List(ctx, ListInput{}); err != nil {
			t.Fatal(err)
		}
		clk.Add(2 * time.Second)
	}
	if st.lists != 0 {
		t.Fatalf("%d calls listed every record", st.lists)
	}
	if l, _ := o.List(ctx, ListInput{}); len(l.Sessions) != 3 || l.NextCursor != nil {
		t.Fatalf("list = %d sessions, cursor %v; want the 3 newest and no cursor", len(l.Sessions), l.NextCursor)
	}
}

// TestDecodeRecordMatchesStd: decodeRecord (segmentio) yields the session
// encoding/json decodes, for the stored payload of every state of a
// review-bound flow (reports, risk signals, deep review, final report,
// receipts) and of unbound early stops.
func TestDecodeRecordMatchesStd(t *testing.T) {
	o, _ := newTestOrch(t, nil)
	st := o.store
	compare := func(s Session) {
		t.Helper()
		rec, err := st.Get(ctx, s.RunID)
		if err != nil {
			t.Fatal(err)
		}
		var want persisted
		if err := json.Unmarshal(rec.Payload, &want); err != nil {
			t.Fatal(err)
		}
		got, err := decodeRecord(rec)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.sess, want.Session) || got.finalized != want.Finalized {
			t.Fatalf("revision %d: segmentio and encoding/json decode differently:\n%+v\n%+v", rec.Revision, got.sess, want.Session)
		}
		a, _ := json.Marshal(got.sess)
		b, _ := json.Marshal(want.Session)
		if string(a) != string(b) {
			t.Fatalf("revision %d: re-encoded sessions differ", rec.Revision)
		}
		std, err := json.Marshal(persisted{Format: 1, Finalized: want.Finalized, Session: want.Session})
		if err != nil || string(std) != string(rec.Payload) {
			t.Fatalf("revision %d: payload differs from json.Marshal's (%v):\n%s\n%s", rec.Revision, err, rec.Payload, std)
		}
	}
	s := mustStart(t, o, StartInput{TaskType: TaskOrdinaryReview, ReviewContext: boundContext()})
	compare(s)
	s = mustAdvance(t, o, AdvanceInput{RunID: s.RunID, CompletedStep: StepTriage, Status: OutcomeCompleted,
		SelectedBundle: ptr(BundleSecurity), RequestID: ptr("r-1")})
	compare(s)
	s = runPrimary(t, o, s, RiskSignals{HighRiskDomain: true, EvidenceRefs: []string{"E1"}, Rationale: ptr("auth \u00e9 \"quoted\"\nline <b>&amp;</b> \u2028")})
	compare(s)
	if s.CurrentStep == StepDeepReview {
		s = mustAdvance(t, o, AdvanceInput{RunID: s.RunID, CompletedStep: StepDeepReview, Status: OutcomeCompleted})
		compare(s)
	}
	s = mustAdvance(t, o, AdvanceInput{RunID: s.RunID, CompletedStep: StepSynthesis, Status: OutcomeCompleted,
		FinalReviewReport: finalReportFor(s), ExpectedRevision: ptr(s.Revision)})
	compare(s)
	f, err := o.Finish(ctx, FinishInput{RunID: s.RunID, Outcome: OutcomeCompleted, RequestID: ptr("fin")})
	if err != nil {
		t.Fatal(err)
	}
	compare(f)
	u := mustStart(t, o, StartInput{TaskType: TaskOther})
	u = mustAdvance(t, o, AdvanceInput{RunID: u.RunID, CompletedStep: StepTriage, Status: OutcomePartial})
	compare(u)
}

// TestSessionJSON: with WithSessionJSON, Start, Advance and Finish hand
// over json.Marshal of the session they return; Get answers a session this
// orchestrator wrote from its payload (zero Session, the same bytes a
// marshalled Get gives) and decodes one another orchestrator sharing the
// store wrote (no bytes handed over); Export is unaffected.
func TestSessionJSON(t *testing.T) {
	st := store.NewMemory()
	o, clk := newTestOrch(t, func(c *Config) { c.Store = st })
	other, err := New(Config{Store: st, Clock: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	var raw []byte
	sink := WithSessionJSON(ctx, &raw)
	same := func(what string, s Session) {
		t.Helper()
		want, _ := json.Marshal(s)
		if string(raw) != string(want) {
			t.Fatalf("%s: handed over\n%s\nwant\n%s", what, raw, want)
		}
		raw = nil
	}
	s, err := o.Start(sink, StartInput{TaskType: TaskOther, ReviewContext: boundContext()})
	if err != nil {
		t.Fatal(err)
	}
	same("start", s)
	s, err = o.Advance(sink, AdvanceInput{RunID: s.RunID, CompletedStep: StepTriage, Status: OutcomeBlocked, RequestID: ptr("x")})
	if err != nil {
		t.Fatal(err)
	}
	same("advance", s)
	again, err := o.Advance(sink, AdvanceInput{RunID: s.RunID, CompletedStep: StepTriage, Status: OutcomeBlocked, RequestID: ptr("x")})
	if err != nil || raw != nil || again.Revision != s.Revision {
		t.Fatalf("replay: %v, handed over %d bytes, revision %d", err, len(raw), again.Revision)
	}
	got, err := o.Get(sink, GetInput{RunID: s.RunID})
	if err != nil || got.RunID != "" {
		t.Fatalf("get of an own payload: %+v, %v; want a zero session", got.RunID, err)
	}
	same("get", s)
	f, err := other.Finish(ctx, FinishInput{RunID: s.RunID, Outcome: OutcomeBlocked})
	if err != nil {
		t.Fatal(err)
	}
	got, err = o.Get(sink, GetInput{RunID: s.RunID})
	if err != nil || raw != nil || got.Revision != f.Revision {
		t.Fatalf("get of another's payload: revision %d, %v, handed over %d bytes", got.Revision, err, len(raw))
	}
	e1, err1 := o.Export(sink, ExportInput{RunID: s.RunID})
	e2, err2 := o.Export(ctx, ExportInput{RunID: s.RunID})
	j1, _ := json.Marshal(e1)
	j2, _ := json.Marshal(e2)
	if fmt.Sprint(err1) != fmt.Sprint(err2) || string(j1) != string(j2) || raw != nil {
		t.Fatalf("export with a sink: %v %s; without: %v %s; handed over %d bytes", err1, j1, err2, j2, len(raw))
	}
	clk.Add(DefaultTTL)
	if _, err := o.Get(sink, GetInput{RunID: s.RunID}); err == nil {
		t.Fatal("expired session answered")
	}
}
