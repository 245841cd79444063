package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/diffpalhq/diffpal/internal/qa"
)

// The result's context selection and execution metrics, reported the way
// the engine reports them, are accepted by a review-bound session.
func TestProfileResultSatisfiesSessionContract(t *testing.T) {
	ch := mkChange(t,
		tfile{path: "svc/auth/login.go", content: lines(80, "login %d"), added: []int{10, 50}},
		tfile{path: "svc/util.go", content: lines(40, "util %d"), added: []int{5}},
	)
	// Budget leaves windows out; one chunk is retried, one repaired.
	sizes := 0
	p0, _ := newProvider(t, &fakeClient{}, nil)
	for _, b := range mustSelect(t, p0, ch).blocks {
		if b.item.Kind == "diff" {
			sizes += b.size
		}
	}
	fc := &fakeClient{script: []step{{err: &Error{Kind: Transient, Status: 503, Provider: "fake"}}, {json: "{}"}}}
	p, _ := newProvider(t, fc, func(c *Config) { c.MaxBytes = sizes + 10; c.ChunkBytes = 1 })
	res, err := p.ReviewProfile(context.Background(), profileReq(t, ch, qa.ProfileCodeReviewer))
	if err != nil {
		t.Fatal(err)
	}
	if res.Attempts < 2 || len(res.Selection.BudgetOmittedRefs) == 0 {
		t.Fatalf("want retries and budget omissions: attempts %d, selection %+v", res.Attempts, res.Selection)
	}

	rc, err := ch.Packet.ReviewContext()
	if err != nil {
		t.Fatal(err)
	}
	var in qa.ReviewContextInput
	raw, _ := json.Marshal(rc)
	if err := json.Unmarshal(raw, &in); err != nil {
		t.Fatal(err)
	}
	o, err := qa.New(qa.Config{Clock: func() time.Time { return time.Date(2026, 1, 2, 4, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := o.Start(ctx, qa.StartInput{TaskType: qa.TaskOrdinaryReview, ReviewContext: &in})
	if err != nil {
		t.Fatal(err)
	}
	prof := qa.ProfileCodeReviewer
	if s, err = o.Advance(ctx, qa.AdvanceInput{RunID: s.RunID, CompletedStep: qa.StepTriage, Status: qa.OutcomeCompleted, SelectedProfile: &prof}); err != nil {
		t.Fatal(err)
	}
	report := &qa.ProfileReport{Profile: prof, Scope: "model review", ContextSelection: res.Selection}
	for i, c := range res.Candidates {
		end := c.EndLine
		report.FindingCandidates = append(report.FindingCandidates, qa.ProfileCandidate{
			CandidateID: fmt.Sprintf("F-%02d", i+1), Title: c.Title, Description: c.Message, Confidence: qa.ConfidenceHigh,
			VerificationGap: "not run", EvidenceRefs: c.EvidenceRefs,
			SourceLocations: []qa.SourceLocation{{Path: c.Path, StartLine: c.StartLine, EndLine: &end}}})
	}
	attempts := res.Attempts
	const layout = "2006-01-02T15:04:05.000000000Z07:00"
	report.ExecutionMetrics = &qa.ExecutionMetrics{StartedAt: res.Started.UTC().Format(layout), CompletedAt: res.Completed.UTC().Format(layout),
		AttemptCount: &attempts, Attempts: res.AttemptLog, InputTokens: res.InputTokens, OutputTokens: res.OutputTokens}
	if _, err := o.Advance(ctx, qa.AdvanceInput{RunID: s.RunID, CompletedStep: qa.StepPrimaryReview, Status: qa.OutcomeCompleted,
		CompletedProfile: &prof, ProfileReport: report, RiskSignals: &qa.RiskSignals{}}); err != nil {
		t.Fatalf("session rejected the profile report: %v", err)
	}
}
