package qa

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/diffpalhq/diffpal/internal/jcs"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 10, 14, 9, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newTestOrch(t *testing.T, mod func(*Config)) (*Orchestrator, *fakeClock) {
	t.Helper()
	clk := newFakeClock()
	cfg := Config{Clock: clk.Now, Random: rand.NewChaCha8([32]byte{1, 2, 3})}
	if mod != nil {
		mod(&cfg)
	}
	o, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return o, clk
}

var ctx = context.Background()

const (
	sha40 = "0123456789abcdef0123456789abcdef01234567"
	shaA  = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	shaB  = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	shaC  = "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
)

func boundContext() *ReviewContextInput {
	return &ReviewContextInput{
		Repository: "github.com/acme/shop", BaseSHA: strings.ToUpper(sha40), HeadSHA: sha40,
		DiffSHA256: shaA, EvidencePacketSHA256: shaB,
		ChangedFiles: []string{"src/auth/login.ts", "src/cart.tsx"},
		EvidenceRefs: []string{"E1", "E2", "diff:src/cart.tsx:h1"},
	}
}

func mustStart(t *testing.T, o *Orchestrator, in StartInput) Session {
	t.Helper()
	s, err := o.Start(ctx, in)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	return s
}

func mustAdvance(t *testing.T, o *Orchestrator, in AdvanceInput) Session {
	t.Helper()
	s, err := o.Advance(ctx, in)
	if err != nil {
		t.Fatalf("advance %s: %v", in.CompletedStep, err)
	}
	return s
}

func wantCode(t *testing.T, err error, code Code) {
	t.Helper()
	if err == nil {
		t.Fatalf("got success, want %q", code)
	}
	if !errors.Is(err, code) || !strings.HasPrefix(err.Error(), string(code)) {
		t.Fatalf("got %q, want code %q", err, code)
	}
}

func wantErr(t *testing.T, err error, code Code, field string) {
	t.Helper()
	wantCode(t, err, code)
	var e *Error
	if !errors.As(err, &e) || e.Field != field {
		t.Fatalf("error %q names field %q, want %q", err, e.Field, field)
	}
	if !strings.Contains(err.Error(), field) {
		t.Fatalf("error text %q does not name %q", err, field)
	}
}

// reportFor builds a valid report for p; profiles that may submit
// candidates get one candidate with a source location.
func reportFor(p Profile, rulesHash *string) *ProfileReport {
	r := &ProfileReport{Profile: p, Scope: "reviewed " + string(p),
		EvidenceMap:       []EvidenceMapEntry{{EvidenceRef: "E1", Description: "entry point"}},
		CoverageGaps:      []RefNote{{Text: "no integration test", EvidenceRefs: []string{"E2"}}},
		ReviewRulesSHA256: rulesHash}
	if allowsCandidates(p) {
		r.FindingCandidates = []ProfileCandidate{{
			CandidateID: "F-01", Title: string(p) + " problem", Description: "nil dereference on empty cart",
			Confidence: ConfidenceHigh, VerificationGap: "not run", EvidenceRefs: []string{"E1", "diff:src/cart.tsx:h1"},
			Impact: ptr("checkout crashes"), SourceLocations: []SourceLocation{{Path: "src/cart.tsx", StartLine: 10, EndLine: ptr(12)}},
		}}
	}
	return r
}

// finalReportFor confirms every stored candidate as its own final finding.
func finalReportFor(s Session) *FinalReviewReport {
	fr := &FinalReviewReport{Summary: "- Cart handling changed\n- Login hardened", ProfilesReviewed: slices.Clone(s.CompletedProfiles)}
	if s.ReviewContext != nil {
		fr.ReviewRulesSHA256 = s.ReviewContext.ReviewRulesSHA256
	}
	n := 0
	for _, rep := range s.ProfileReports {
		for _, c := range rep.FindingCandidates {
			n++
			id := fmt.Sprintf("F-%02d", n)
			fr.FindingCandidates = append(fr.FindingCandidates, FinalCandidate{
				CandidateID: id, Title: c.Title, Description: c.Description, Confidence: c.Confidence,
				VerificationGap: c.VerificationGap, EvidenceRefs: c.EvidenceRefs, Impact: c.Impact,
				SourceLocations: c.SourceLocations, Severity: ptr(SeverityHigh),
				SourceProfiles: []Profile{rep.Profile}, SourceCandidates: []CandidateRef{{rep.Profile, c.CandidateID}},
			})
			fr.CandidateDecisions = append(fr.CandidateDecisions, CandidateDecision{
				Source: CandidateRef{rep.Profile, c.CandidateID}, Verdict: VerdictConfirmed, FinalFindingID: ptr(id),
				Rationale: "reproduced by reading the handler", EvidenceRefs: []string{"E1"},
			})
		}
	}
	return fr
}

// runPrimary completes every primary-review profile of s with reports and
// the given signals on the last one.
func runPrimary(t *testing.T, o *Orchestrator, s Session, signals RiskSignals) Session {
	t.Helper()
	var rulesHash *string
	if s.ReviewContext != nil {
		rulesHash = s.ReviewContext.ReviewRulesSHA256
	}
	for i, p := range s.ReviewProfiles {
		if s.CurrentProfile == nil || *s.CurrentProfile != p {
			t.Fatalf("current_profile = %v, want %s", s.CurrentProfile, p)
		}
		in := AdvanceInput{RunID: s.RunID, CompletedStep: StepPrimaryReview, Status: OutcomeCompleted,
			CompletedProfile: ptr(p), ProfileReport: reportFor(p, rulesHash)}
		if i == len(s.ReviewProfiles)-1 {
			in.RiskSignals = &signals
		}
		s = mustAdvance(t, o, in)
	}
	return s
}

func jcsHashRaw(raw json.RawMessage) (string, error) { return jcs.SHA256Hex(raw) }
