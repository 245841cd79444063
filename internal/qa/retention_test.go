package qa

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/diffpalhq/diffpal/internal/qa/store"
	"github.com/diffpalhq/diffpal/internal/qa/store/sqlite"
)

// retentionStores are the stores the retention rules must hold for alike.
func retentionStores(t *testing.T) map[string]func() Store {
	return map[string]func() Store{
		"memory": func() Store { return store.NewMemory() },
		"sqlite": func() Store {
			st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "qa.db"), sqlite.WithValidate(ValidateRecord))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			return st
		},
	}
}

// finishBound drives a review-bound session to a completed finish.
func finishBound(t *testing.T, o *Orchestrator) (Session, FinishInput) {
	t.Helper()
	s := boundAtPrimary(t, o, ProfileCodeReviewer)
	s = mustAdvance(t, o, AdvanceInput{RunID: s.RunID, CompletedStep: StepPrimaryReview, Status: OutcomeCompleted,
		CompletedProfile: ptr(ProfileCodeReviewer), ProfileReport: reportFor(ProfileCodeReviewer, nil), RiskSignals: &RiskSignals{}})
	fin := FinishInput{RunID: s.RunID, Outcome: OutcomeCompleted, FinalReviewReport: finalFor(t, s)}
	s = mustAdvance(t, o, AdvanceInput{RunID: s.RunID, CompletedStep: StepSynthesis, Status: OutcomeCompleted})
	f, err := o.Finish(ctx, fin)
	if err != nil {
		t.Fatalf("finish: %v", err)
	}
	if f.Status != StatusCompleted || f.Revision != s.Revision+1 {
		t.Fatalf("finish returned status %s revision %d", f.Status, f.Revision)
	}
	return f, fin
}

// finalFor is a final report that rejects every candidate of s.
func finalFor(t *testing.T, s Session) *FinalReviewReport {
	t.Helper()
	fr := &FinalReviewReport{Summary: "nothing confirmed", ProfilesReviewed: s.CompletedProfiles}
	for _, rep := range s.ProfileReports {
		for _, c := range rep.FindingCandidates {
			fr.CandidateDecisions = append(fr.CandidateDecisions, CandidateDecision{
				Source:  CandidateRef{Profile: rep.Profile, CandidateID: c.CandidateID},
				Verdict: VerdictRejected, Rationale: "not reproducible", EvidenceRefs: []string{"E1"}})
		}
	}
	return fr
}

// TestFinishedSessionsRetained (issue 9, item 8; QA-CONTRACT §8): on every
// store a finished session is kept until it expires or is evicted, so
// export and a repeated finish keep working; Config.RemoveFinished removes
// it at finish instead.
func TestFinishedSessionsRetained(t *testing.T) {
	for name, newStore := range retentionStores(t) {
		t.Run(name, func(t *testing.T) {
			o, _ := newTestOrch(t, func(c *Config) { c.Store = newStore(); c.MaxSessions = 2 })
			f, fin := finishBound(t, o)
			if g, err := o.Get(ctx, GetInput{RunID: f.RunID}); err != nil || g.Status != StatusCompleted || g.Revision != f.Revision {
				t.Fatalf("get after finish: %+v %v", g.Status, err)
			}
			if _, err := o.Export(ctx, ExportInput{RunID: f.RunID}); err != nil {
				t.Fatalf("export after finish: %v", err)
			}
			again, err := o.Finish(ctx, fin)
			if err != nil || again.Revision != f.Revision || !again.ExpiresAt.Equal(f.ExpiresAt) {
				t.Fatalf("repeated finish: revision %d expires %v, %v; want the session unchanged", again.Revision, again.ExpiresAt, err)
			}
			if l, _ := o.List(ctx, ListInput{}); len(l.Sessions) != 1 {
				t.Fatalf("list after finish: %d sessions", len(l.Sessions))
			}
			// Evicted when a start needs the room (capacity 2: one active
			// session plus the finished one is full).
			mustStart(t, o, StartInput{TaskType: TaskOther})
			mustStart(t, o, StartInput{TaskType: TaskOther})
			_, err = o.Get(ctx, GetInput{RunID: f.RunID})
			wantCode(t, err, CodeUnknownRunID)

			// Purged once expired.
			o2, clk2 := newTestOrch(t, func(c *Config) { c.Store = newStore() })
			f2, _ := finishBound(t, o2)
			clk2.Add(DefaultTTL + time.Second)
			_, err = o2.Get(ctx, GetInput{RunID: f2.RunID})
			wantCode(t, err, CodeExpiredSession)
			mustStart(t, o2, StartInput{TaskType: TaskOther})
			_, err = o2.Get(ctx, GetInput{RunID: f2.RunID})
			wantCode(t, err, CodeUnknownRunID)
		})
		t.Run(name+"/RemoveFinished", func(t *testing.T) {
			st := newStore()
			o, _ := newTestOrch(t, func(c *Config) { c.Store = st; c.RemoveFinished = true })
			f, fin := finishBound(t, o)
			if f.Status != StatusCompleted || f.NextAction != NextRecordedDone || f.FinalReviewReport == nil {
				t.Fatalf("finish must still return the finished session: %+v", f)
			}
			if _, err := st.Get(ctx, f.RunID); err != store.ErrNotFound {
				t.Fatalf("store still holds the finished session: %v", err)
			}
			_, err := o.Get(ctx, GetInput{RunID: f.RunID})
			wantCode(t, err, CodeUnknownRunID)
			_, err = o.Finish(ctx, fin)
			wantCode(t, err, CodeUnknownRunID)
			// An early stop is removed when it is finalized, not when it stops.
			s := mustStart(t, o, StartInput{TaskType: TaskOther})
			mustAdvance(t, o, AdvanceInput{RunID: s.RunID, CompletedStep: StepTriage, Status: OutcomeBlocked})
			if _, err := o.Get(ctx, GetInput{RunID: s.RunID}); err != nil {
				t.Fatalf("early stop removed before finish: %v", err)
			}
			if _, err := o.Finish(ctx, FinishInput{RunID: s.RunID, Outcome: OutcomeBlocked}); err != nil {
				t.Fatal(err)
			}
			_, err = o.Get(ctx, GetInput{RunID: s.RunID})
			wantCode(t, err, CodeUnknownRunID)
		})
	}
}
