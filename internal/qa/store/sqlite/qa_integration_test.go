package sqlite_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/diffpalhq/diffpal/internal/qa/store"
	"github.com/diffpalhq/diffpal/internal/qa/store/sqlite"
)

// validatePersisted mirrors what qa stores as a payload ({format,
// finalized, session}); qa does not export its own decoder yet.
func validatePersisted(r store.Record) error {
	var p struct {
		Format    int  `json:"format"`
		Finalized bool `json:"finalized"`
		Session   struct {
			RunID    string `json:"run_id"`
			Revision int64  `json:"revision"`
		} `json:"session"`
	}
	if err := json.Unmarshal(r.Payload, &p); err != nil {
		return errors.New("payload is not a persisted session")
	}
	if p.Format != 1 || p.Session.RunID != r.RunID || p.Session.Revision != r.Revision || p.Finalized != r.Finalized {
		return errors.New("payload disagrees with the row")
	}
	return nil
}

// The orchestrator on a SQLite store: a finished session survives a
// restart and can still be read (and so exported), which is why finalized
// rows are kept by default.
func TestOrchestratorSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "qa.db")
	open := func() (*sqlite.Store, *qa.Orchestrator) {
		st, err := sqlite.Open(ctx, path, sqlite.WithValidate(validatePersisted),
			sqlite.WithMaxSessions(qa.DefaultMaxSessions))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		o, err := qa.New(qa.Config{Store: st})
		if err != nil {
			t.Fatal(err)
		}
		return st, o
	}
	st, o := open()
	s, err := o.Start(ctx, qa.StartInput{TaskType: qa.TaskOrdinaryReview})
	if err != nil {
		t.Fatal(err)
	}
	p := qa.ProfileCodeReviewer
	steps := []qa.AdvanceInput{
		{RunID: s.RunID, CompletedStep: qa.StepTriage, Status: qa.OutcomeCompleted, SelectedProfile: &p},
		{RunID: s.RunID, CompletedStep: qa.StepPrimaryReview, Status: qa.OutcomeCompleted, CompletedProfile: &p, RiskSignals: &qa.RiskSignals{}},
		{RunID: s.RunID, CompletedStep: qa.StepSynthesis, Status: qa.OutcomeCompleted},
	}
	for _, in := range steps {
		if s, err = o.Advance(ctx, in); err != nil {
			t.Fatalf("advance %s: %v", in.CompletedStep, err)
		}
	}
	if s, err = o.Finish(ctx, qa.FinishInput{RunID: s.RunID, Outcome: qa.OutcomeCompleted}); err != nil {
		t.Fatal(err)
	}
	open2, _ := o.Start(ctx, qa.StartInput{TaskType: qa.TaskOrdinaryReview})
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st2, o2 := open()
	if rep := st2.Recovery(); rep.Loaded != 2 || len(rep.RemovedFinalized) != 0 {
		t.Fatalf("Recovery = %+v", rep)
	}
	got, err := o2.Get(ctx, qa.GetInput{RunID: s.RunID})
	if err != nil || got.Status != qa.StatusCompleted || got.Revision != s.Revision {
		t.Fatalf("finished session after restart: %+v, %v", got, err)
	}
	// Export finds the session (this unbound one is refused for being
	// unbound, not for being gone; binding needs a review context).
	var qerr *qa.Error
	if _, err := o2.Export(ctx, qa.ExportInput{RunID: s.RunID}); !errors.As(err, &qerr) || qerr.Code != qa.CodeExportNotBound {
		t.Fatalf("export after restart: %v, want %q", err, qa.CodeExportNotBound)
	}
	// The unfinished one carries on where it was.
	if _, err := o2.Advance(ctx, qa.AdvanceInput{RunID: open2.RunID, CompletedStep: qa.StepTriage,
		Status: qa.OutcomeCompleted, SelectedProfile: &p}); err != nil {
		t.Fatalf("advance after restart: %v", err)
	}
}
