package qa_test

import (
	"context"
	"fmt"

	"github.com/diffpalhq/diffpal/internal/qa"
)

// A single-profile, unbound session from start to finish.
func Example() {
	ctx := context.Background()
	o, err := qa.New(qa.Config{}) // in-memory store, real clock, default policy
	if err != nil {
		panic(err)
	}
	s, _ := o.Start(ctx, qa.StartInput{TaskType: qa.TaskOrdinaryReview})
	p := qa.ProfileCodeReviewer
	s, _ = o.Advance(ctx, qa.AdvanceInput{RunID: s.RunID, CompletedStep: qa.StepTriage,
		Status: qa.OutcomeCompleted, SelectedProfile: &p})
	route, _ := qa.Prepare(qa.PrepareInput{AgentProfile: *s.CurrentProfile})
	fmt.Println(route.DisplayName, route.RequiredSections)
	s, _ = o.Advance(ctx, qa.AdvanceInput{RunID: s.RunID, CompletedStep: qa.StepPrimaryReview,
		Status: qa.OutcomeCompleted, CompletedProfile: &p, RiskSignals: &qa.RiskSignals{}})
	s, _ = o.Advance(ctx, qa.AdvanceInput{RunID: s.RunID, CompletedStep: qa.StepSynthesis, Status: qa.OutcomeCompleted})
	s, _ = o.Finish(ctx, qa.FinishInput{RunID: s.RunID, Outcome: qa.OutcomeCompleted})
	fmt.Println(s.Status, s.Revision, s.NextAction)
	// Output:
	// Code Reviewer [Scope Finding Candidates Coverage Gaps Unverified]
	// completed 4 Host recorded the final QA outcome.
}
