package llm

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/diffpalhq/diffpal/internal/evidence"
	"github.com/diffpalhq/diffpal/internal/jcs"
	"github.com/diffpalhq/diffpal/internal/provider"
	"github.com/diffpalhq/diffpal/internal/qa"
)

func smallChange(t testing.TB) *provider.Change {
	return mkChange(t, tfile{path: "svc/handler.go", content: lines(40, "line %d of handler"), added: []int{12, 13}})
}

func TestReviewProfileSuccess(t *testing.T) {
	ch := smallChange(t)
	fc := &fakeClient{}
	p, _ := newProvider(t, fc, nil)
	res, err := p.ReviewProfile(context.Background(), profileReq(t, ch, qa.ProfileCodeReviewer))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Candidates) != 1 {
		t.Fatalf("candidates = %+v", res.Candidates)
	}
	c := res.Candidates[0]
	if c.Path != "svc/handler.go" || c.StartLine != 9 || c.Severity != "high" || c.Category != "correctness" ||
		c.Source != "changed_line" || c.RuleProfile != "code_reviewer" || c.Snippet != "line 9 of handler" || c.Anchor != c.Snippet {
		t.Errorf("candidate = %+v", c)
	}
	if !slices.Equal(c.EvidenceRefs, []string{"f1:h1"}) {
		t.Errorf("refs = %v", c.EvidenceRefs)
	}
	// Context selection: the whole packet fits; hashes as the contract says.
	sel := res.Selection
	if sel == nil || sel.SourcePacketSHA256 != ch.Packet.SHA256 {
		t.Fatalf("selection = %+v", sel)
	}
	want, _ := jcs.SHA256Hex(ch.Packet.Items)
	if sel.SelectedPacketSHA256 != want || !slices.Equal(sel.IncludedRefs, ch.Packet.Refs()) || len(sel.BudgetOmittedRefs) != 0 {
		t.Errorf("selection = %+v, want selected hash %s", sel, want)
	}
	if sel.SelectedBytes <= 0 || sel.SelectedBytes > sel.MaxBytes || sel.MaxBytes != DefaultMaxBytes {
		t.Errorf("bytes = %d / %d", sel.SelectedBytes, sel.MaxBytes)
	}
	// Metrics from real usage.
	if res.Attempts != 1 || len(res.AttemptLog) != 1 || res.AttemptLog[0].Outcome != qa.AttemptCompleted {
		t.Fatalf("attempts = %d %+v", res.Attempts, res.AttemptLog)
	}
	if *res.InputTokens != 100 || *res.OutputTokens != 10 || *res.CachedInputTokens != 0 {
		t.Errorf("tokens = %d %d %d", *res.InputTokens, *res.OutputTokens, *res.CachedInputTokens)
	}
	a := res.AttemptLog[0]
	if a.Profile != qa.ProfileCodeReviewer || a.Attempt != 1 || a.ModelSeconds == nil || a.ValidationSeconds == nil ||
		*a.InputTokens != 100 || a.StartedAt > a.CompletedAt {
		t.Errorf("attempt = %+v", a)
	}
	if res.Started.IsZero() || res.Completed.Before(res.Started) {
		t.Errorf("times %v %v", res.Started, res.Completed)
	}
	// The request: schema, model, data only in the user message.
	reqs := fc.requests()
	if len(reqs) != 1 || reqs[0].SchemaName != AnswerSchemaName || reqs[0].Model != "test-model" || len(reqs[0].Messages) != 1 {
		t.Fatalf("requests = %+v", reqs)
	}
	if strings.Contains(reqs[0].System, "handler") {
		t.Error("data in the system message")
	}
	for _, s := range []string{"Code Reviewer", qa.SectionFindingCandidates, "Perform no external writes."} {
		if !strings.Contains(reqs[0].System, s) {
			t.Errorf("system lacks %q", s)
		}
	}
}

func TestAttemptsAndRetries(t *testing.T) {
	good := answerJSON(candJSON("t", "f1:h1", "svc/handler.go", 12, 12))
	transient := func(ra time.Duration) error {
		return &Error{Kind: Transient, Status: 429, RetryAfter: ra, Provider: "fake", Msg: "slow down"}
	}
	cases := []struct {
		name      string
		script    []step
		wantErr   error
		calls     int
		outcomes  []qa.AttemptOutcome
		waitsAtLe []time.Duration // minimum waits
	}{
		{name: "success", script: []step{{json: good}}, calls: 1, outcomes: []qa.AttemptOutcome{qa.AttemptCompleted}},
		{name: "malformed then repaired", script: []step{{json: `{"candidates": "nope"`}, {json: good}}, calls: 2,
			outcomes: []qa.AttemptOutcome{qa.AttemptRetryableError, qa.AttemptCompleted}},
		{name: "retry-after honoured", script: []step{{err: transient(7 * time.Second)}, {err: transient(0)}, {json: good}}, calls: 3,
			outcomes:  []qa.AttemptOutcome{qa.AttemptRetryableError, qa.AttemptRetryableError, qa.AttemptCompleted},
			waitsAtLe: []time.Duration{7 * time.Second, time.Second}},
		{name: "auth never retried", script: []step{{err: &Error{Kind: Auth, Status: 401, Provider: "fake", Msg: "bad key"}}},
			wantErr: ErrProviderAuth, calls: 1, outcomes: []qa.AttemptOutcome{qa.AttemptFailed}},
		{name: "invalid never retried", script: []step{{err: &Error{Kind: Invalid, Status: 400, Provider: "fake"}}},
			wantErr: ErrProviderFailed, calls: 1, outcomes: []qa.AttemptOutcome{qa.AttemptFailed}},
		{name: "unclassified never retried", script: []step{{err: errors.New("boom")}}, wantErr: ErrProviderFailed, calls: 1},
		{name: "transient exhausted", script: []step{{err: transient(0)}, {err: transient(0)}, {err: transient(0)}, {err: transient(0)}, {json: good}},
			wantErr: ErrProviderFailed, calls: 4},
		{name: "retry-after too long", script: []step{{err: transient(time.Hour)}}, wantErr: ErrProviderFailed, calls: 1},
		{name: "still invalid after repairs", script: []step{{json: `x`}, {json: `y`}, {json: `z`}}, wantErr: ErrInvalidAnswer, calls: 3,
			outcomes: []qa.AttemptOutcome{qa.AttemptRetryableError, qa.AttemptRetryableError, qa.AttemptFailed}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fc := &fakeClient{script: tc.script}
			p, ft := newProvider(t, fc, nil)
			res, err := p.ReviewProfile(context.Background(), profileReq(t, smallChange(t), qa.ProfileCodeReviewer))
			if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr != nil && !errors.Is(err, ErrProviderFailed) {
				t.Errorf("%v does not match ErrProviderFailed", err)
			}
			if got := len(fc.requests()); got != tc.calls {
				t.Errorf("calls = %d, want %d", got, tc.calls)
			}
			if tc.outcomes != nil {
				var got []qa.AttemptOutcome
				for _, a := range res.AttemptLog {
					got = append(got, a.Outcome)
				}
				if !slices.Equal(got, tc.outcomes) {
					t.Errorf("outcomes = %v, want %v", got, tc.outcomes)
				}
			}
			if len(res.AttemptLog) > MaxAttemptsLimit {
				t.Errorf("%d attempts", len(res.AttemptLog))
			}
			for i, w := range tc.waitsAtLe {
				if i >= len(ft.waits) || ft.waits[i] < w {
					t.Errorf("waits = %v, want at least %v", ft.waits, tc.waitsAtLe)
				}
			}
			if tc.wantErr == nil && len(res.Candidates) != 1 {
				t.Errorf("candidates = %+v", res.Candidates)
			}
		})
	}
}

func TestAuthErrorMessage(t *testing.T) {
	fc := &fakeClient{script: []step{{err: &Error{Kind: Auth, Status: 401, Provider: "openai", Msg: "invalid api key"}}}}
	p, _ := newProvider(t, fc, nil)
	_, err := p.ReviewProfile(context.Background(), profileReq(t, smallChange(t), qa.ProfileCodeReviewer))
	var le *Error
	if !errors.As(err, &le) || le.Kind != Auth {
		t.Fatalf("err = %v", err)
	}
	msg := err.Error()
	for _, s := range []string{"authentication failed", "API key", "HTTP 401", "code_reviewer"} {
		if !strings.Contains(msg, s) {
			t.Errorf("message %q lacks %q", msg, s)
		}
	}
}

func TestBackoffJitterAndCap(t *testing.T) {
	p, _ := newProvider(t, &fakeClient{}, func(c *Config) {
		c.BaseBackoff, c.MaxBackoff = time.Second, 5*time.Second
	})
	for _, tc := range []struct {
		retries int
		r       float64
		want    time.Duration
	}{
		{0, 0, 500 * time.Millisecond}, {0, 1, time.Second}, {1, 0.5, 1500 * time.Millisecond},
		{2, 0, 2 * time.Second}, {10, 1, 5 * time.Second},
	} {
		p.cfg.Rand = func() float64 { return tc.r }
		got, ok := p.backoff(tc.retries, errors.New("x"))
		if !ok || got != tc.want {
			t.Errorf("backoff(%d, r=%v) = %v, want %v", tc.retries, tc.r, got, tc.want)
		}
	}
}

func TestCallTimeout(t *testing.T) {
	fc := &fakeClient{script: []step{{block: true}}}
	p, _ := newProvider(t, fc, func(c *Config) { c.CallTimeout = 20 * time.Millisecond })
	res, err := p.ReviewProfile(context.Background(), profileReq(t, smallChange(t), qa.ProfileCodeReviewer))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.AttemptLog) != 2 || res.AttemptLog[0].Outcome != qa.AttemptTimeout || res.AttemptLog[1].Outcome != qa.AttemptCompleted {
		t.Errorf("attempts = %+v", res.AttemptLog)
	}
	// A timeout that persists fails the profile as a transient failure.
	fc = &fakeClient{script: []step{{block: true}, {block: true}}}
	p, _ = newProvider(t, fc, func(c *Config) { c.CallTimeout = 10 * time.Millisecond; c.MaxAttempts = 2 })
	if _, err := p.ReviewProfile(context.Background(), profileReq(t, smallChange(t), qa.ProfileCodeReviewer)); !errors.Is(err, ErrProviderFailed) || KindOf(err) != Transient {
		t.Errorf("err = %v", err)
	}
}

func TestCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p, _ := newProvider(t, &fakeClient{}, nil)
	if _, err := p.ReviewProfile(ctx, profileReq(t, smallChange(t), qa.ProfileCodeReviewer)); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v", err)
	}
}

func TestPartialCandidatesDropped(t *testing.T) {
	good := candJSON("good", "f1:h1", "svc/handler.go", 12, 12)
	cases := []struct {
		name   string
		bad    string
		reason string
	}{
		{"unknown ref", candJSON("x", "f9:h1", "svc/handler.go", 12, 12), DropUnknownRef},
		{"unknown path", candJSON("x", "f1:h1", "other.go", 12, 12), DropUnknownPath},
		{"zero line", candJSON("x", "f1:h1", "svc/handler.go", 0, 1), DropBadLines},
		{"reversed lines", candJSON("x", "f1:h1", "svc/handler.go", 12, 11), DropBadLines},
		{"beyond file", candJSON("x", "f1:h1", "svc/handler.go", 400, 400), DropBadLines},
		{"outside evidence", candJSON("x", "f1:h1", "svc/handler.go", 39, 39), DropOutsideItems},
		{"bad severity", strings.Replace(candJSON("x", "f1:h1", "svc/handler.go", 12, 12), `"high"`, `"blocker"`, 1), DropMalformed},
		{"bad confidence", strings.Replace(candJSON("x", "f1:h1", "svc/handler.go", 12, 12), `0.8`, `1.5`, 1), DropMalformed},
		{"no refs", strings.Replace(candJSON("x", "f1:h1", "svc/handler.go", 12, 12), `["f1:h1"]`, `[]`, 1), DropMalformed},
		{"not an object", `"just text"`, DropMalformed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ans := answerJSON(good, tc.bad)
			fc := &fakeClient{script: []step{{json: ans}, {json: ans}, {json: ans}}}
			p, _ := newProvider(t, fc, nil)
			res, err := p.ReviewProfile(context.Background(), profileReq(t, smallChange(t), qa.ProfileCodeReviewer))
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Candidates) != 1 || res.Candidates[0].Title != "good" {
				t.Errorf("candidates = %+v", res.Candidates)
			}
			if res.Dropped[tc.reason] != 1 || len(res.Dropped) != 1 {
				t.Errorf("dropped = %v, want %q", res.Dropped, tc.reason)
			}
			// Two repairs were asked for, with the problem fenced.
			reqs := fc.requests()
			if len(reqs) != 3 || len(reqs[2].Messages) != 5 || reqs[1].Messages[1].Role != "assistant" {
				t.Fatalf("requests = %d", len(reqs))
			}
			rep := reqs[1].Messages[2].Content
			if !strings.Contains(rep, "/candidates/1") || !strings.Contains(rep, "part=validation-errors") {
				t.Errorf("repair message = %s", rep)
			}
			last := res.AttemptLog[len(res.AttemptLog)-1]
			if last.Outcome != qa.AttemptCompleted || len(res.AttemptLog) != 3 {
				t.Errorf("attempts = %+v", res.AttemptLog)
			}
		})
	}
}

func TestRepairsDisabled(t *testing.T) {
	ans := answerJSON(candJSON("good", "f1:h1", "svc/handler.go", 12, 12), candJSON("x", "f9:h1", "svc/handler.go", 12, 12))
	fc := &fakeClient{script: []step{{json: ans}}}
	p, _ := newProvider(t, fc, func(c *Config) { c.MaxRepairs = -1 })
	res, err := p.ReviewProfile(context.Background(), profileReq(t, smallChange(t), qa.ProfileCodeReviewer))
	if err != nil || len(fc.requests()) != 1 || len(res.Candidates) != 1 || res.Dropped[DropUnknownRef] != 1 {
		t.Errorf("err=%v calls=%d res=%+v", err, len(fc.requests()), res)
	}
}

func TestProfileWithoutCandidates(t *testing.T) {
	ans := `{"candidates":[` + candJSON("x", "f1:h1", "svc/handler.go", 12, 12) + `],"coverage_gaps":["no test covers the new branch", "no test covers the new branch"],"unverified":[{"text":"caller unknown"}]}`
	fc := &fakeClient{script: []step{{json: ans}}}
	p, _ := newProvider(t, fc, nil)
	res, err := p.ReviewProfile(context.Background(), profileReq(t, smallChange(t), qa.ProfilePRTestAnalyzer))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Candidates) != 0 || res.Dropped[DropNoCandidates] != 1 {
		t.Errorf("res = %+v", res)
	}
	if !slices.Equal(res.Gaps, []string{"no test covers the new branch"}) || !slices.Equal(res.Unverified, []string{"caller unknown"}) {
		t.Errorf("gaps %v unverified %v", res.Gaps, res.Unverified)
	}
	if !strings.Contains(fc.requests()[0].System, `return "candidates": []`) {
		t.Error("system does not tell the profile to return no candidates")
	}
}

func TestFoldedProfilesInPrompt(t *testing.T) {
	fc := &fakeClient{}
	p, _ := newProvider(t, fc, nil)
	req := profileReq(t, smallChange(t), qa.ProfileCodeReviewer)
	req.RuleProfiles = []string{"code_reviewer", "security_reviewer", "not_a_profile"}
	if _, err := p.ReviewProfile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(fc.requests()[0].System, "Security Reviewer: Check authentication") {
		t.Error("folded profile's checklist missing")
	}
}

func TestBudgetSelection(t *testing.T) {
	ch := mkChange(t,
		tfile{path: "a/readme_notes.go", content: lines(60, "note %d"), added: []int{5, 40}},
		tfile{path: "b/big.go", content: lines(80, "big %d"), added: []int{10, 11, 12, 13, 14, 15, 50}},
		tfile{path: "z/auth/session.go", content: lines(30, "session %d"), added: []int{20}},
	)
	p, _ := newProvider(t, &fakeClient{}, nil)
	full, err := p.selectEvidence(ch, MaxSelectionBytes)
	if err != nil {
		t.Fatal(err)
	}
	size := map[string]int{}
	for _, b := range full.blocks {
		size[b.item.Ref] = b.size
	}
	// Budget for every hunk plus nothing else: windows are omitted first;
	// then the sensitive file's hunk, then the big file's, come first.
	hunks := 0
	for _, it := range ch.Packet.Items {
		if it.Kind == evidence.KindDiff {
			hunks += size[it.Ref]
		}
	}
	s, _ := p.selectEvidence(ch, hunks)
	for _, r := range s.ctx.IncludedRefs {
		if it, _ := ch.Packet.Item(r); it.Kind != evidence.KindDiff {
			t.Errorf("window %s selected before all hunks", r)
		}
	}
	if s.ctx.SelectedBytes != hunks {
		t.Errorf("selected %d bytes, want %d", s.ctx.SelectedBytes, hunks)
	}
	tight, _ := p.selectEvidence(ch, size["f3:h1"]+size["f2:h1"])
	if !slices.Equal(tight.ctx.IncludedRefs, []string{"f2:h1", "f3:h1"}) {
		t.Errorf("tight budget chose %v", tight.ctx.IncludedRefs)
	}
	// Contract invariants: included and omitted partition the packet.
	for _, sel := range []*selection{full, s, tight} {
		c := sel.ctx
		all := append(slices.Clone(c.IncludedRefs), c.BudgetOmittedRefs...)
		slices.Sort(all)
		want := ch.Packet.Refs()
		slices.Sort(want)
		if !slices.Equal(all, want) || c.SelectedBytes > c.MaxBytes || c.SourcePacketSHA256 != ch.Packet.SHA256 {
			t.Errorf("selection %+v", c)
		}
		var items []evidence.Item
		for _, r := range ch.Packet.Refs() {
			if slices.Contains(c.IncludedRefs, r) {
				it, _ := ch.Packet.Item(r)
				items = append(items, *it)
			}
		}
		if h, _ := jcs.SHA256Hex(items); h != c.SelectedPacketSHA256 {
			t.Errorf("selected hash %s, want %s", c.SelectedPacketSHA256, h)
		}
	}
	// Deterministic.
	again, _ := p.selectEvidence(ch, size["f3:h1"]+size["f2:h1"])
	if !slices.Equal(again.ctx.IncludedRefs, tight.ctx.IncludedRefs) {
		t.Error("selection is not deterministic")
	}
	// The profile reports what the budget left out.
	fc := &fakeClient{}
	p2, _ := newProvider(t, fc, func(c *Config) { c.MaxBytes = size["f3:h1"] + size["f2:h1"] })
	res, err := p2.ReviewProfile(context.Background(), profileReq(t, ch, qa.ProfileSecurityReviewer))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Gaps) == 0 || !strings.Contains(res.Gaps[len(res.Gaps)-1], "budget") {
		t.Errorf("gaps = %v", res.Gaps)
	}
	if len(res.Selection.BudgetOmittedRefs) == 0 {
		t.Error("no budget-omitted refs")
	}
}

func TestConcurrencyBounded(t *testing.T) {
	var files []tfile
	for i := 0; i < 12; i++ {
		files = append(files, tfile{path: "pkg" + string(rune('a'+i)) + "/f.go", content: lines(20, "x%d"), added: []int{10}})
	}
	ch := mkChange(t, files...)
	fc := &fakeClient{delay: 2 * time.Millisecond}
	p, _ := newProvider(t, fc, func(c *Config) { c.Concurrency = 2; c.ChunkBytes = 1 })
	errs := make(chan error, 3)
	for _, prof := range []qa.Profile{qa.ProfileCodeReviewer, qa.ProfileSecurityReviewer, qa.ProfileSilentFailureHunter} {
		go func() {
			_, err := p.ReviewProfile(context.Background(), profileReq(t, ch, prof))
			errs <- err
		}()
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if fc.peak > 2 || fc.peak < 1 {
		t.Errorf("peak concurrency %d", fc.peak)
	}
	if n := len(fc.requests()); n != 3*len(ch.Packet.Items) {
		t.Errorf("%d calls for %d items x 3 profiles", n, len(ch.Packet.Items))
	}
}

func TestChunkFailureFailsProfile(t *testing.T) {
	ch := mkChange(t, tfile{path: "a.go", content: lines(20, "a%d"), added: []int{3}}, tfile{path: "b.go", content: lines(20, "b%d"), added: []int{3}})
	fc := &fakeClient{fallback: func(req Request) (Response, error) {
		if strings.Contains(req.Messages[0].Content, `"b.go"`) {
			return Response{}, &Error{Kind: Auth, Provider: "fake"}
		}
		return Response{JSON: []byte(validAnswer(req))}, nil
	}}
	p, _ := newProvider(t, fc, func(c *Config) { c.ChunkBytes = 1 })
	res, err := p.ReviewProfile(context.Background(), profileReq(t, ch, qa.ProfileCodeReviewer))
	if !errors.Is(err, ErrProviderAuth) {
		t.Fatalf("err = %v", err)
	}
	if res.Attempts == 0 {
		t.Error("failed profile reports no attempts")
	}
}

func TestNewValidates(t *testing.T) {
	for _, c := range []Config{{}, {Client: &fakeClient{}, MaxBytes: 3_000_000}, {Client: &fakeClient{}, MaxAttempts: 5}} {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) accepted", c)
		}
	}
}

// TestMalformedAnswerIsRepaired: a transport's Malformed error (prose
// instead of JSON, a refusal) goes to the repair loop with the problem
// stated, instead of failing the profile.
func TestMalformedAnswerIsRepaired(t *testing.T) {
	fc := &fakeClient{script: []step{{err: &Error{Kind: Malformed, Provider: "fake", Msg: "model output is not valid JSON: Sure! Here you go"}}}}
	p, _ := newProvider(t, fc, nil)
	res, err := p.ReviewProfile(context.Background(), profileReq(t, smallChange(t), qa.ProfileCodeReviewer))
	if err != nil {
		t.Fatalf("malformed answer not repaired: %v", err)
	}
	reqs := fc.requests()
	if len(reqs) != 2 {
		t.Fatalf("calls = %d, want 2 (answer, repair)", len(reqs))
	}
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	if last.Role != "user" || !strings.Contains(last.Content, "not valid JSON") {
		t.Errorf("repair message = %+v", last)
	}
	if len(res.AttemptLog) != 2 || res.AttemptLog[0].Outcome != qa.AttemptRetryableError || res.AttemptLog[1].Outcome != qa.AttemptCompleted {
		t.Errorf("attempt log = %+v", res.AttemptLog)
	}
}

// TestWindowsOnlyForVerification: by default profile reviews send diff
// hunks only; the windows are recorded as deliberately omitted.
func TestWindowsOnlyForVerification(t *testing.T) {
	fc := &fakeClient{}
	p, _ := newProvider(t, fc, func(c *Config) { c.ProfileWindows = false })
	res, err := p.ReviewProfile(context.Background(), profileReq(t, smallChange(t), qa.ProfileCodeReviewer))
	if err != nil {
		t.Fatal(err)
	}
	sel := res.Selection
	if sel == nil || len(sel.OmittedRefs) == 0 || len(sel.BudgetOmittedRefs) != 0 {
		t.Fatalf("selection = %+v", sel)
	}
	for _, r := range sel.IncludedRefs {
		if strings.Contains(r, ":w") {
			t.Errorf("window %s sent to a profile review", r)
		}
	}
	for _, r := range sel.OmittedRefs {
		if !strings.Contains(r, ":w") {
			t.Errorf("%s omitted but not a window", r)
		}
	}
}
