package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/diffpalhq/diffpal/internal/qa/store"
)

// faultyStore wraps the memory store and fails the operations it is told
// to, or hands out a corrupt payload.
type faultyStore struct {
	*store.Memory
	failPut, failList, failDelete, corruptGet bool
}

var errDisk = errors.New("disk on fire")

func (f *faultyStore) Put(ctx context.Context, r store.Record, exp int64) error {
	if f.failPut {
		return errDisk
	}
	return f.Memory.Put(ctx, r, exp)
}

func (f *faultyStore) List(ctx context.Context) ([]store.Record, error) {
	if f.failList {
		return nil, errDisk
	}
	return f.Memory.List(ctx)
}

func (f *faultyStore) ListMeta(ctx context.Context) ([]store.Record, error) {
	if f.failList {
		return nil, errDisk
	}
	return f.Memory.ListMeta(ctx)
}

// The store.Indexed reads fail with failList, its purge with failDelete.

func (f *faultyStore) Occupancy(ctx context.Context) (int, int, error) {
	if f.failList {
		return 0, 0, errDisk
	}
	return f.Memory.Occupancy(ctx)
}

func (f *faultyStore) Evictable(ctx context.Context, n int) ([]store.Record, error) {
	if f.failList {
		return nil, errDisk
	}
	return f.Memory.Evictable(ctx, n)
}

func (f *faultyStore) Page(ctx context.Context, now time.Time, after *store.Position, limit int) ([]store.Record, error) {
	if f.failList {
		return nil, errDisk
	}
	return f.Memory.Page(ctx, now, after, limit)
}

func (f *faultyStore) PurgeExpired(ctx context.Context, now time.Time, keep string) ([]string, error) {
	if f.failDelete {
		return nil, errDisk
	}
	return f.Memory.PurgeExpired(ctx, now, keep)
}

func (f *faultyStore) Delete(ctx context.Context, id string, exp int64) error {
	if f.failDelete {
		return errDisk
	}
	return f.Memory.Delete(ctx, id, exp)
}

func (f *faultyStore) Get(ctx context.Context, id string) (store.Record, error) {
	r, err := f.Memory.Get(ctx, id)
	if err == nil && f.corruptGet {
		r.Payload = []byte(`{"format":1,"session":"not a session"}`)
	}
	return r, err
}

// tamper rewrites a stored session's JSON, to reach the library's
// internal-consistency errors that no sequence of valid calls produces.
func tamper(t *testing.T, st store.Store, runID string, edit func(sess map[string]any)) {
	t.Helper()
	ctx := context.Background()
	rec, err := st.Get(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	var p map[string]any
	if err := json.Unmarshal(rec.Payload, &p); err != nil {
		t.Fatal(err)
	}
	edit(p["session"].(map[string]any))
	if rec.Payload, err = json.Marshal(p); err != nil {
		t.Fatal(err)
	}
	if err := st.Put(ctx, rec, rec.Revision); err != nil {
		t.Fatal(err)
	}
}

// notOverMCP lists codes an MCP call cannot produce, and why.
var notOverMCP = map[qa.Code]string{
	qa.CodeLimitsNotPositive:  "configuration error of qa.New; `diffpal mcp` validates --ttl/--max-sessions first (exit 2)",
	qa.CodeInvalidModelPolicy: "model-policy file error at start-up; covered by TestParseModelPolicy and the CLI tests",
	qa.CodeChangedProfile:     "declared in internal/qa/errors.go but never returned by the library",
}

// schemaShadowed lists codes for values the published enums already
// reject: the SDK answers with a schema validation tool error first.
var schemaShadowed = map[qa.Code]struct {
	tool string
	args any
}{
	qa.CodeInvalidTaskType:     {qa.ToolStart, map[string]any{"task_type": "bogus"}},
	qa.CodeInvalidFinalOutcome: {qa.ToolFinish, map[string]any{"run_id": "qar-" + strings.Repeat("0", 32), "outcome": "done"}},
	qa.CodeUnknownProfile:      {qa.ToolPrepare, map[string]any{"agent_profile": "nobody"}},
}

type errCase struct {
	code  qa.Code
	setup func(t *testing.T, e *env) (tool string, args any)
}

func start(t *testing.T, e *env, bound bool) qa.Session {
	t.Helper()
	in := qa.StartInput{TaskType: qa.TaskOther}
	if bound {
		in.ReviewContext = reviewContext()
	}
	var s qa.Session
	e.ok(qa.ToolStart, in, &s)
	return s
}

func triaged(t *testing.T, e *env, bound bool, in qa.AdvanceInput) qa.Session {
	t.Helper()
	s := start(t, e, bound)
	in.RunID, in.CompletedStep, in.Status = s.RunID, qa.StepTriage, qa.OutcomeCompleted
	e.ok(qa.ToolAdvance, in, &s)
	return s
}

func adv(s qa.Session, step qa.Step, st qa.Outcome) qa.AdvanceInput {
	return qa.AdvanceInput{RunID: s.RunID, CompletedStep: step, Status: st}
}

// atSynthesis returns a single-profile session at synthesis.
func atSynthesis(t *testing.T, e *env, bound bool) qa.Session {
	t.Helper()
	s := triaged(t, e, bound, qa.AdvanceInput{SelectedProfile: ptr(qa.ProfileCodeReviewer)})
	in := adv(s, qa.StepPrimaryReview, qa.OutcomeCompleted)
	in.CompletedProfile, in.RiskSignals = ptr(qa.ProfileCodeReviewer), &qa.RiskSignals{}
	if bound {
		in.ProfileReport = profileReport(qa.ProfileCodeReviewer, s.ReviewContext.ReviewRulesSHA256)
	}
	e.ok(qa.ToolAdvance, in, &s)
	return s
}

func minimalFinal(s qa.Session) *qa.FinalReviewReport {
	return &qa.FinalReviewReport{Summary: "nothing found", ProfilesReviewed: s.CompletedProfiles,
		ReviewRulesSHA256: s.ReviewContext.ReviewRulesSHA256}
}

func errCases() []errCase {
	unknownID := "qar-" + strings.Repeat("0", 32)
	return []errCase{
		{qa.CodeUnknownRunID, func(t *testing.T, e *env) (string, any) {
			return qa.ToolGet, qa.GetInput{RunID: unknownID}
		}},
		{qa.CodeExpiredSession, func(t *testing.T, e *env) (string, any) {
			s := start(t, e, false)
			e.clock.Add(qa.DefaultTTL + time.Second)
			return qa.ToolGet, qa.GetInput{RunID: s.RunID}
		}},
		{qa.CodeTerminalSession, func(t *testing.T, e *env) (string, any) {
			s := start(t, e, false)
			e.ok(qa.ToolAdvance, adv(s, qa.StepTriage, qa.OutcomeBlocked), nil)
			return qa.ToolAdvance, adv(s, qa.StepTriage, qa.OutcomeBlocked)
		}},
		{qa.CodeIllegalTransition, func(t *testing.T, e *env) (string, any) {
			return qa.ToolAdvance, adv(start(t, e, false), qa.StepDeepReview, qa.OutcomeCompleted)
		}},
		{qa.CodeSessionLimit, func(t *testing.T, e *env) (string, any) {
			start(t, e, false) // the env for this case has MaxSessions 1
			return qa.ToolStart, qa.StartInput{TaskType: qa.TaskOther}
		}},
		{qa.CodeOutcomeNotReady, func(t *testing.T, e *env) (string, any) {
			return qa.ToolFinish, qa.FinishInput{RunID: start(t, e, false).RunID, Outcome: qa.OutcomeCompleted}
		}},
		{qa.CodeConflictingOutcome, func(t *testing.T, e *env) (string, any) {
			s := start(t, e, false)
			e.ok(qa.ToolAdvance, adv(s, qa.StepTriage, qa.OutcomeBlocked), nil)
			return qa.ToolFinish, qa.FinishInput{RunID: s.RunID, Outcome: qa.OutcomePartial}
		}},
		{qa.CodeStoreWrite, func(t *testing.T, e *env) (string, any) {
			e.store.(*faultyStore).failPut = true
			return qa.ToolStart, qa.StartInput{TaskType: qa.TaskOther}
		}},
		{qa.CodeStoreRead, func(t *testing.T, e *env) (string, any) {
			// Start always counts the store's sessions (capacity
			// depends on it); reads sweep at most once a second.
			e.store.(*faultyStore).failList = true
			return qa.ToolStart, qa.StartInput{TaskType: qa.TaskOther}
		}},
		{qa.CodeStoreUpdate, func(t *testing.T, e *env) (string, any) {
			s := start(t, e, false)
			e.store.(*faultyStore).failDelete = true
			return qa.ToolDelete, qa.DeleteInput{RunID: s.RunID}
		}},
		{qa.CodeInvalidSessionData, func(t *testing.T, e *env) (string, any) {
			s := start(t, e, false)
			e.store.(*faultyStore).corruptGet = true
			return qa.ToolGet, qa.GetInput{RunID: s.RunID}
		}},
		{qa.CodeSelectionRequired, func(t *testing.T, e *env) (string, any) {
			return qa.ToolAdvance, adv(start(t, e, false), qa.StepTriage, qa.OutcomeCompleted)
		}},
		{qa.CodeSelectionNotAllowed, func(t *testing.T, e *env) (string, any) {
			in := adv(start(t, e, false), qa.StepTriage, qa.OutcomePartial)
			in.SelectedBundle = ptr(qa.BundleMobile)
			return qa.ToolAdvance, in
		}},
		{qa.CodeCompletedProfileReq, func(t *testing.T, e *env) (string, any) {
			s := triaged(t, e, false, qa.AdvanceInput{SelectedProfile: ptr(qa.ProfileCodeReviewer)})
			return qa.ToolAdvance, adv(s, qa.StepPrimaryReview, qa.OutcomeCompleted)
		}},
		{qa.CodeCompletedProfileState, func(t *testing.T, e *env) (string, any) {
			s := triaged(t, e, false, qa.AdvanceInput{SelectedProfile: ptr(qa.ProfileCodeReviewer)})
			in := adv(s, qa.StepPrimaryReview, qa.OutcomePartial)
			in.CompletedProfile = ptr(qa.ProfileCodeReviewer)
			return qa.ToolAdvance, in
		}},
		{qa.CodeCompletedProfileStep, func(t *testing.T, e *env) (string, any) {
			in := adv(start(t, e, false), qa.StepTriage, qa.OutcomeCompleted)
			in.SelectedProfile, in.CompletedProfile = ptr(qa.ProfileCodeReviewer), ptr(qa.ProfileCodeReviewer)
			return qa.ToolAdvance, in
		}},
		{qa.CodeRiskSignalsPlacement, func(t *testing.T, e *env) (string, any) {
			in := adv(start(t, e, false), qa.StepTriage, qa.OutcomeCompleted)
			in.SelectedProfile, in.RiskSignals = ptr(qa.ProfileCodeReviewer), &qa.RiskSignals{}
			return qa.ToolAdvance, in
		}},
		{qa.CodeRiskSignalsRequired, func(t *testing.T, e *env) (string, any) {
			s := triaged(t, e, false, qa.AdvanceInput{SelectedProfile: ptr(qa.ProfileCodeReviewer)})
			in := adv(s, qa.StepPrimaryReview, qa.OutcomeCompleted)
			in.CompletedProfile = ptr(qa.ProfileCodeReviewer)
			return qa.ToolAdvance, in
		}},
		{qa.CodeMissingCurrent, func(t *testing.T, e *env) (string, any) {
			s := triaged(t, e, false, qa.AdvanceInput{SelectedBundle: ptr(qa.BundleOrdinaryMR)})
			tamper(t, e.store, s.RunID, func(m map[string]any) { m["current_profile"] = nil })
			in := adv(s, qa.StepPrimaryReview, qa.OutcomeCompleted)
			in.CompletedProfile = ptr(qa.ProfileCodeExplorer)
			return qa.ToolAdvance, in
		}},
		{qa.CodeAllProfilesDone, func(t *testing.T, e *env) (string, any) {
			s := triaged(t, e, false, qa.AdvanceInput{SelectedProfile: ptr(qa.ProfileCodeReviewer)})
			tamper(t, e.store, s.RunID, func(m map[string]any) { m["completed_profiles"] = []string{"code_reviewer"} })
			in := adv(s, qa.StepPrimaryReview, qa.OutcomeCompleted)
			in.CompletedProfile = ptr(qa.ProfileCodeReviewer)
			return qa.ToolAdvance, in
		}},
		{qa.CodeInconsistentProfile, func(t *testing.T, e *env) (string, any) {
			s := triaged(t, e, false, qa.AdvanceInput{SelectedBundle: ptr(qa.BundleOrdinaryMR)})
			tamper(t, e.store, s.RunID, func(m map[string]any) { m["current_profile"] = "code_reviewer" })
			in := adv(s, qa.StepPrimaryReview, qa.OutcomeCompleted)
			in.CompletedProfile = ptr(qa.ProfileCodeReviewer)
			return qa.ToolAdvance, in
		}},
		{qa.CodeProfileMismatch, func(t *testing.T, e *env) (string, any) {
			s := triaged(t, e, false, qa.AdvanceInput{SelectedBundle: ptr(qa.BundleOrdinaryMR)})
			in := adv(s, qa.StepPrimaryReview, qa.OutcomeCompleted)
			in.CompletedProfile = ptr(qa.ProfileCodeReviewer)
			return qa.ToolAdvance, in
		}},
		{qa.CodeInvalidArgument, func(t *testing.T, e *env) (string, any) {
			// Every argument rule is in the published schema, so over MCP
			// this code comes from the argument size limit (the env for
			// this case has MaxRequestBytes 1024); a malformed run_id is a
			// schema error (TestPublishedConstraintsEnforced).
			return qa.ToolGet, qa.GetInput{RunID: "qar-" + strings.Repeat("0", 32) + strings.Repeat(" ", 1100)}
		}},
		{qa.CodeInvalidReviewContext, func(t *testing.T, e *env) (string, any) {
			rc := reviewContext()
			rc.ChangedFiles = []string{"src/cart.tsx", "src/cart.tsx"} // duplicates: no schema keyword says so
			return qa.ToolStart, qa.StartInput{TaskType: qa.TaskOther, ReviewContext: rc}
		}},
		{qa.CodeInvalidProfileReport, func(t *testing.T, e *env) (string, any) {
			s := triaged(t, e, true, qa.AdvanceInput{SelectedProfile: ptr(qa.ProfileCodeReviewer)})
			in := adv(s, qa.StepPrimaryReview, qa.OutcomeCompleted)
			in.CompletedProfile, in.RiskSignals = ptr(qa.ProfileCodeReviewer), &qa.RiskSignals{}
			in.ProfileReport = profileReport(qa.ProfileCodeReviewer, s.ReviewContext.ReviewRulesSHA256)
			in.ProfileReport.EvidenceMap[0].EvidenceRef = "E99"
			return qa.ToolAdvance, in
		}},
		{qa.CodeInvalidRiskSignals, func(t *testing.T, e *env) (string, any) {
			s := triaged(t, e, false, qa.AdvanceInput{SelectedProfile: ptr(qa.ProfileCodeReviewer)})
			in := adv(s, qa.StepPrimaryReview, qa.OutcomeCompleted)
			in.CompletedProfile, in.RiskSignals = ptr(qa.ProfileCodeReviewer), &qa.RiskSignals{HighBlastRadius: true}
			return qa.ToolAdvance, in
		}},
		{qa.CodeInvalidFinalReport, func(t *testing.T, e *env) (string, any) {
			s := atSynthesis(t, e, true)
			in := adv(s, qa.StepSynthesis, qa.OutcomeCompleted)
			in.FinalReviewReport = minimalFinal(s)
			in.FinalReviewReport.ProfilesReviewed = []qa.Profile{qa.ProfileMobileReviewer}
			return qa.ToolAdvance, in
		}},
		{qa.CodeProfileReportPlacement, func(t *testing.T, e *env) (string, any) {
			in := adv(start(t, e, true), qa.StepTriage, qa.OutcomeCompleted)
			in.SelectedProfile, in.ProfileReport = ptr(qa.ProfileCodeReviewer), profileReport(qa.ProfileCodeReviewer, nil)
			return qa.ToolAdvance, in
		}},
		{qa.CodeProfileReportRequired, func(t *testing.T, e *env) (string, any) {
			s := triaged(t, e, true, qa.AdvanceInput{SelectedProfile: ptr(qa.ProfileCodeReviewer)})
			in := adv(s, qa.StepPrimaryReview, qa.OutcomeCompleted)
			in.CompletedProfile, in.RiskSignals = ptr(qa.ProfileCodeReviewer), &qa.RiskSignals{}
			return qa.ToolAdvance, in
		}},
		{qa.CodeFinalReportPlacement, func(t *testing.T, e *env) (string, any) {
			s := start(t, e, true)
			in := adv(s, qa.StepTriage, qa.OutcomeCompleted)
			in.SelectedProfile, in.FinalReviewReport = ptr(qa.ProfileCodeReviewer), minimalFinal(s)
			return qa.ToolAdvance, in
		}},
		{qa.CodeFinalReportRequired, func(t *testing.T, e *env) (string, any) {
			s := atSynthesis(t, e, true)
			e.ok(qa.ToolAdvance, adv(s, qa.StepSynthesis, qa.OutcomeCompleted), nil)
			return qa.ToolFinish, qa.FinishInput{RunID: s.RunID, Outcome: qa.OutcomeCompleted}
		}},
		{qa.CodeFinalReportConflict, func(t *testing.T, e *env) (string, any) {
			s := atSynthesis(t, e, true)
			in := adv(s, qa.StepSynthesis, qa.OutcomeCompleted)
			in.FinalReviewReport = minimalFinal(s)
			e.ok(qa.ToolAdvance, in, nil)
			other := minimalFinal(s)
			other.Summary = "something else"
			return qa.ToolFinish, qa.FinishInput{RunID: s.RunID, Outcome: qa.OutcomeCompleted, FinalReviewReport: other}
		}},
		{qa.CodeRevisionConflict, func(t *testing.T, e *env) (string, any) {
			return qa.ToolDelete, qa.DeleteInput{RunID: start(t, e, false).RunID, ExpectedRevision: ptr(int64(5))}
		}},
		{qa.CodeRequestIDConflict, func(t *testing.T, e *env) (string, any) {
			s := start(t, e, false)
			in := adv(s, qa.StepTriage, qa.OutcomeBlocked)
			in.RequestID = ptr("r1")
			e.ok(qa.ToolAdvance, in, nil)
			in.Status = qa.OutcomePartial
			return qa.ToolAdvance, in
		}},
		{qa.CodeExportNotBound, func(t *testing.T, e *env) (string, any) {
			return qa.ToolExport, qa.ExportInput{RunID: start(t, e, false).RunID}
		}},
		{qa.CodeExportNoReport, func(t *testing.T, e *env) (string, any) {
			s := start(t, e, true)
			e.ok(qa.ToolAdvance, adv(s, qa.StepTriage, qa.OutcomeBlocked), nil)
			return qa.ToolExport, qa.ExportInput{RunID: s.RunID}
		}},
	}
}

// libraryCodes reads every Code constant from the library source, so a new
// code fails this test until it is covered or explained.
func libraryCodes(t *testing.T) []qa.Code {
	t.Helper()
	src, err := os.ReadFile("../qa/errors.go")
	if err != nil {
		t.Fatal(err)
	}
	var codes []qa.Code
	for _, m := range regexp.MustCompile(`(?m)^\s+Code\w+\s+Code = "([^"]+)"`).FindAllStringSubmatch(string(src), -1) {
		codes = append(codes, qa.Code(m[1]))
	}
	if len(codes) < 40 {
		t.Fatalf("found only %d codes in ../qa/errors.go", len(codes))
	}
	return codes
}

func TestEveryErrorCode(t *testing.T) {
	covered := map[qa.Code]bool{}
	for _, c := range errCases() {
		covered[c.code] = true
		t.Run(string(c.code), func(t *testing.T) {
			eo := envOptions{storeFn: func() store.Store { return &faultyStore{Memory: store.NewMemory()} }}
			if c.code == qa.CodeSessionLimit {
				eo.cfg = func(cfg *qa.Config) { cfg.MaxSessions = 1 }
			}
			if c.code == qa.CodeInvalidArgument {
				eo.server.MaxRequestBytes = 1024
			}
			e := newEnv(t, eo)
			tool, args := c.setup(t, e)
			txt := e.fail(tool, args, string(c.code))
			if txt != string(c.code) && !strings.HasPrefix(txt, string(c.code)+": ") {
				t.Errorf("error text %q: the code must be followed by nothing or \": \"", txt)
			}
		})
	}
	for code, sc := range schemaShadowed {
		covered[code] = true
		t.Run("schema/"+string(code), func(t *testing.T) {
			e := newEnv(t, envOptions{})
			txt := e.fail(sc.tool, sc.args, `validating "arguments"`)
			if !strings.Contains(txt, "enum") {
				t.Errorf("schema error does not mention the enum: %s", txt)
			}
		})
	}
	for code := range notOverMCP {
		covered[code] = true
	}
	for _, code := range libraryCodes(t) {
		if !covered[code] {
			t.Errorf("library code %q is neither tested over MCP nor explained", code)
		}
	}
}
