package github_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/publish"
	"github.com/diffpalhq/diffpal/internal/publish/github"
	"github.com/diffpalhq/diffpal/internal/publish/github/githubtest"
)

const (
	repoPath = "/api/v3/repos/octo-org/demo"
	gql      = "/api/graphql"
	head2    = "2222222222222222222222222222222222222222"
)

// mainPatch: hunk 1 right 10..17, left 10..15 (old 12 removed, new 12..14
// added); hunk 2 right 42..45, left 40..42 (new 43 added).
const mainPatch = "@@ -10,6 +10,8 @@ func main() {\n ctx10\n ctx11\n-old12\n+new12\n+new13\n+new14\n ctx13\n ctx14\n ctx15\n" +
	"@@ -40,3 +42,4 @@\n a\n+b\n c\n d\n"

const utilPatch = "@@ -1,3 +1,3 @@\n package lib\n-var x = 1\n+var x = 2\n func f() {}\n"

func files() []githubtest.File {
	return []githubtest.File{
		{Filename: "app/main.go", Patch: mainPatch},
		{Filename: "lib/util.go", PreviousFilename: "lib/old_util.go", Patch: utilPatch},
		{Filename: "assets/logo.png"}, // binary: no patch
	}
}

func finding(sid, path string, start, end int, sev findings.Severity, title string) findings.Finding {
	return findings.Finding{ID: "f-" + sid, StableID: sid, RuleID: "rule." + sid, Category: "correctness", Severity: sev, Confidence: 0.9,
		Path: path, StartLine: start, EndLine: end, Title: title, Message: "Message for " + title + ".",
		Evidence: &findings.Evidence{Anchor: "x := y", ReasoningBasis: "diff", Source: "diff"}}
}

func left(f findings.Finding) findings.Finding {
	f.ChangedSpan = &findings.Span{Path: f.Path, StartLine: f.StartLine, EndLine: f.EndLine, Side: "LEFT"}
	return f
}

// baseFindings: a range, a single line, a removed line, a line outside the
// diff and a renamed file.
func baseFindings() []findings.Finding {
	f1 := finding("sid-one", "app/main.go", 12, 14, findings.High, "Nil map write")
	f1.Blocking = true
	return []findings.Finding{
		f1,
		finding("sid-two", "app/main.go", 43, 43, findings.Medium, "Unchecked error"),
		left(finding("sid-left", "app/main.go", 12, 12, findings.Low, "Removed bounds check")),
		finding("sid-out", "app/main.go", 30, 30, findings.Medium, "Far away"),
		finding("sid-util", "lib/util.go", 2, 2, findings.Low, "Magic number"),
	}
}

func bundleOf(head string, fs ...findings.Finding) *findings.Bundle {
	return &findings.Bundle{Version: findings.V3, ReviewID: "r1", BaseSHA: githubtest.DefaultBase, HeadSHA: head, Findings: fs}
}

type harness struct {
	t      *testing.T
	s      *githubtest.Server
	mu     sync.Mutex
	sleeps []time.Duration
	saved  int
}

func newHarness(t *testing.T) *harness {
	s := githubtest.New(t)
	s.SetFiles(files()...)
	return &harness{t: t, s: s}
}

func (h *harness) client() *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &publish.Transport{Sleep: func(ctx context.Context, d time.Duration) error {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.sleeps = append(h.sleeps, d)
		return nil
	}}}
}

func (h *harness) host(tg *publish.Target) *github.Host {
	gh, err := github.New(tg, h.client())
	if err != nil {
		h.t.Fatal(err)
	}
	return gh
}

// run publishes b with a fresh Host (one CLI process per run).
func (h *harness) run(b *findings.Bundle, o publish.Options, tweak ...func(*github.Host)) (*publish.Plan, error) {
	h.t.Helper()
	tg := h.s.Target()
	gh := h.host(tg)
	for _, f := range tweak {
		f(gh)
	}
	h.s.ResetRequests()
	return publish.Run(context.Background(), gh, tg, b, o, func(*publish.Plan) error { h.saved++; return nil })
}

func (h *harness) mustRun(b *findings.Bundle, o publish.Options, tweak ...func(*github.Host)) *publish.Plan {
	h.t.Helper()
	p, err := h.run(b, o, tweak...)
	if err != nil {
		h.t.Fatalf("run: %v", err)
	}
	return p
}

// calls renders requests as "METHOD PATH[?QUERY][ OPERATION]".
func calls(rs []githubtest.Request) []string {
	var out []string
	for _, r := range rs {
		s := r.Method + " " + r.Path
		if q := r.Query.Encode(); q != "" {
			s += "?" + q
		}
		if r.Operation != "" {
			s += " " + r.Operation
		}
		out = append(out, s)
	}
	return out
}

func eq(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		gj, _ := json.MarshalIndent(got, "", "  ")
		wj, _ := json.MarshalIndent(want, "", "  ")
		t.Fatalf("%s:\n got %s\nwant %s", what, gj, wj)
	}
}

// jsonOf round-trips v so it compares with a decoded request body.
func jsonOf(v any) any {
	b, _ := json.Marshal(v)
	var out any
	json.Unmarshal(b, &out)
	return out
}

func action(t *testing.T, p *publish.Plan, kind, sid string) *publish.Action {
	t.Helper()
	for i := range p.Actions {
		if a := &p.Actions[i]; a.Kind == kind && a.StableID == sid {
			return a
		}
	}
	t.Fatalf("no %s action for %q in %+v", kind, sid, p.Actions)
	return nil
}

func kinds(p *publish.Plan) map[string]int {
	m := map[string]int{}
	for _, a := range p.Actions {
		m[a.Kind]++
	}
	return m
}

func body(f findings.Finding, tg *publish.Target, ch string) string {
	b, _ := publish.CommentBody(&f, tg, ch)
	return b
}

var loadCalls = []string{
	"POST " + gql + " query viewer",
	"POST " + gql + " query reviewThreads",
	"GET " + repoPath + "/pulls/42/files?per_page=100",
	"GET " + repoPath + "/issues/42/comments?per_page=100",
}

func TestLifecycle(t *testing.T) {
	h := newHarness(t)
	s := h.s
	fs := baseFindings()
	opts := publish.Options{Gate: true}
	tg := s.Target()

	// Run 1: one review with four comments (the far-away finding goes to
	// the summary), one summary.
	p := h.mustRun(bundleOf(githubtest.DefaultHead, fs...), opts)
	rs := s.Requests()
	reviews := s.Reviews()
	if len(reviews) != 1 {
		t.Fatalf("reviews = %d", len(reviews))
	}
	rid := reviews[0].ID
	eq(t, "run 1 calls", calls(rs), append(append([]string{}, loadCalls...),
		"POST "+repoPath+"/pulls/42/reviews",
		fmt.Sprintf("GET %s/pulls/42/reviews/%d/comments?per_page=100", repoPath, rid),
		"POST "+repoPath+"/issues/42/comments"))
	for _, r := range rs {
		if !r.Auth {
			t.Errorf("%s %s without Authorization", r.Method, r.Path)
		}
	}
	wantReview := map[string]any{
		"commit_id": githubtest.DefaultHead,
		"event":     "COMMENT",
		"body":      "<!-- diffpal:review channel=default head=" + githubtest.DefaultHead + " -->\ndiffpal: 4 new findings",
		"comments": []any{
			map[string]any{"path": "app/main.go", "body": body(fs[0], tg, "default"), "line": 14.0, "side": "RIGHT", "start_line": 12.0, "start_side": "RIGHT"},
			map[string]any{"path": "app/main.go", "body": body(fs[1], tg, "default"), "line": 43.0, "side": "RIGHT"},
			map[string]any{"path": "app/main.go", "body": body(fs[2], tg, "default"), "line": 12.0, "side": "LEFT"},
			map[string]any{"path": "lib/util.go", "body": body(fs[4], tg, "default"), "line": 2.0, "side": "RIGHT"},
		},
	}
	eq(t, "review body", rs[4].Body, wantReview)
	eq(t, "run 1 kinds", kinds(p), map[string]int{publish.Create: 4, publish.SummaryOnly: 1, publish.CreateSummary: 1, publish.SetStatus: 1})
	threads := s.Threads()
	if len(threads) != 4 {
		t.Fatalf("threads = %d", len(threads))
	}
	for i, sid := range []string{"sid-one", "sid-two", "sid-left", "sid-util"} {
		a := action(t, p, publish.Create, sid)
		if a.Result != "done" || a.CommentID != strconv.FormatInt(threads[i].Comments[0].ID, 10) {
			t.Errorf("%s: result %q comment id %q, thread comment %d", sid, a.Result, a.CommentID, threads[i].Comments[0].ID)
		}
	}
	if th := threads[2]; th.Side != "LEFT" || th.Line != 12 {
		t.Errorf("LEFT finding placed at %s %d", th.Side, th.Line)
	}
	if a := action(t, p, publish.SummaryOnly, "sid-out"); !strings.Contains(a.Reason, "outside the pull request's diff") {
		t.Errorf("sid-out reason %q", a.Reason)
	}
	st := action(t, p, publish.SetStatus, "")
	if st.Result != "skipped: no --check-run" {
		t.Errorf("status result %q", st.Result)
	}
	ics := s.IssueComments()
	if len(ics) != 1 || !strings.HasPrefix(ics[0].Body, "<!-- diffpal:summary channel=default -->\n") || !strings.Contains(ics[0].Body, "Far away") {
		t.Fatalf("summary after run 1: %+v", ics)
	}
	eq(t, "summary POST body", rs[6].Body, map[string]any{"body": ics[0].Body})
	summaryID := ics[0].ID

	// Run 2: same bundle, nothing new; only the summary is edited in place.
	p = h.mustRun(bundleOf(githubtest.DefaultHead, fs...), opts)
	eq(t, "run 2 calls", calls(s.Requests()), append(append([]string{}, loadCalls...),
		fmt.Sprintf("PATCH %s/issues/comments/%d", repoPath, summaryID)))
	eq(t, "run 2 kinds", kinds(p), map[string]int{publish.Keep: 4, publish.SummaryOnly: 1, publish.UpdateSummary: 1, publish.SetStatus: 1})

	// Run 3: sid-two's text changed → its comment is edited.
	fs[1].Message = "A clearer message."
	p = h.mustRun(bundleOf(githubtest.DefaultHead, fs...), opts)
	twoID := threads[1].Comments[0].ID
	rs = s.Requests()
	eq(t, "run 3 calls", calls(rs), append(append([]string{}, loadCalls...),
		fmt.Sprintf("PATCH %s/pulls/comments/%d", repoPath, twoID),
		fmt.Sprintf("PATCH %s/issues/comments/%d", repoPath, summaryID)))
	eq(t, "update body", rs[4].Body, map[string]any{"body": body(fs[1], tg, "default")})
	if a := action(t, p, publish.Update, "sid-two"); a.Result != "done" {
		t.Errorf("update result %q", a.Result)
	}
	if got := s.Threads()[1].Comments[0].Body; got != body(fs[1], tg, "default") {
		t.Errorf("edited body = %q", got)
	}

	// Run 4: a push; sid-one is fixed, sid-two moved two lines down (its
	// permalink footer is not in the digest: no edit).
	s.SetHead(head2)
	moved := append([]findings.Finding{}, fs[1:]...)
	moved[0].StartLine, moved[0].EndLine = 45, 45
	p = h.mustRun(bundleOf(head2, moved...), opts)
	oneID := threads[0].Comments[0].ID
	rs = s.Requests()
	eq(t, "run 4 calls", calls(rs), append(append([]string{}, loadCalls...),
		fmt.Sprintf("POST %s/pulls/42/comments/%d/replies", repoPath, oneID),
		"POST "+gql+" mutation resolveReviewThread",
		fmt.Sprintf("PATCH %s/issues/comments/%d", repoPath, summaryID)))
	reply := publish.ResolveBody("default", "sid-one", head2)
	eq(t, "reply body", rs[4].Body, map[string]any{"body": reply})
	vars := rs[5].Body.(map[string]any)["variables"]
	eq(t, "resolve variables", vars, map[string]any{"threadId": threads[0].ID})
	if a := action(t, p, publish.Keep, "sid-two"); !strings.Contains(a.Reason, "the finding moved") || a.ThreadID != threads[1].ID || a.CommentID != strconv.FormatInt(twoID, 10) {
		t.Errorf("moved finding: %+v", a)
	}
	if a := action(t, p, publish.Keep, "sid-left"); a.ThreadID != threads[2].ID {
		t.Errorf("LEFT finding: %+v", a)
	}
	if a := action(t, p, publish.Resolve, "sid-one"); a.Result != "done" {
		t.Errorf("resolve result %q", a.Result)
	}
	th0 := s.Threads()[0]
	if !th0.Resolved || len(th0.Comments) != 2 || th0.Comments[1].Body != reply || th0.Comments[1].InReplyTo != oneID {
		t.Fatalf("resolved thread: %+v", th0)
	}
	if !strings.Contains(reply, "222222222222") {
		t.Errorf("reply does not name the commit: %q", reply)
	}

	// Runs 5-7: nothing new, nothing resolved again, one summary.
	for i := 0; i < 3; i++ {
		p = h.mustRun(bundleOf(head2, moved...), opts)
		eq(t, "later run writes", calls(s.Writes()), []string{fmt.Sprintf("PATCH %s/issues/comments/%d", repoPath, summaryID)})
		eq(t, "later run kinds", kinds(p), map[string]int{publish.Keep: 3, publish.SummaryOnly: 1, publish.UpdateSummary: 1, publish.SetStatus: 1})
	}
	if n := len(s.Threads()); n != 4 {
		t.Errorf("threads = %d after 7 runs", n)
	}
	// Replies are reviews of their own on GitHub; diffpal's carry its marker.
	n := 0
	for _, r := range s.Reviews() {
		if strings.Contains(r.Body, "<!-- diffpal:review") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("diffpal reviews = %d after 7 runs", n)
	}
	if ics := s.IssueComments(); len(ics) != 1 || ics[0].ID != summaryID {
		t.Errorf("summaries: %+v", ics)
	}

	// Run 8: sid-one, resolved as fixed by diffpal in run 4, is back (a
	// regression): it is posted again, on a new thread.
	back := append([]findings.Finding{fs[0]}, moved...)
	p = h.mustRun(bundleOf(head2, back...), opts)
	a := action(t, p, publish.Create, "sid-one")
	if a.Result != "done" || a.ThreadID != "" || !strings.Contains(a.Reason, "diffpal resolved its thread as fixed ("+threads[0].ID+")") {
		t.Errorf("regression: %+v", a)
	}
	eq(t, "run 8 writes", calls(s.Writes()), []string{"POST " + repoPath + "/pulls/42/reviews",
		fmt.Sprintf("PATCH %s/issues/comments/%d", repoPath, summaryID)})
	threads = s.Threads()
	if len(threads) != 5 || threads[0].Resolved != true || threads[4].Resolved {
		t.Fatalf("threads after the regression: %+v", threads)
	}
	if m, ok := publish.ParseMarker(threads[4].Comments[0].Body); !ok || m.Kind != "finding" || m.StableID != "sid-one" {
		t.Fatalf("new thread's marker: %+v", m)
	}

	// Run 9: the open thread is the one kept; nothing is posted.
	p = h.mustRun(bundleOf(head2, back...), opts)
	eq(t, "run 9 writes", calls(s.Writes()), []string{fmt.Sprintf("PATCH %s/issues/comments/%d", repoPath, summaryID)})
	if a := action(t, p, publish.Keep, "sid-one"); a.ThreadID != threads[4].ID {
		t.Errorf("kept thread %q, want the new one %q", a.ThreadID, threads[4].ID)
	}

	// Run 10: a reviewer resolves three threads whose findings are still
	// reported: one with a reply, one without, one with a reply that
	// forges diffpal's resolve marker. All three stay quiet.
	s.AddReply(threads[1].ID, "mallory", "Intended; won't fix.")
	s.ResolveThread(threads[1].ID)
	s.ResolveThread(threads[3].ID)
	s.AddReply(threads[2].ID, "mallory", publish.ResolveBody("default", "sid-left", head2))
	s.ResolveThread(threads[2].ID)
	st0, err := h.host(s.Target()).Load(context.Background(), publish.DefaultChannel)
	if err != nil {
		t.Fatal(err)
	}
	byUs := map[string]bool{}
	for _, th := range st0.Threads {
		if th.Resolved {
			byUs[th.ID] = th.ResolvedByUs
		}
	}
	eq(t, "resolved threads (id → resolved by us)", byUs, map[string]bool{threads[0].ID: true, threads[1].ID: false, threads[2].ID: false, threads[3].ID: false})
	p = h.mustRun(bundleOf(head2, back...), opts)
	eq(t, "run 10 writes", calls(s.Writes()), []string{fmt.Sprintf("PATCH %s/issues/comments/%d", repoPath, summaryID)})
	for _, sid := range []string{"sid-two", "sid-left", "sid-util"} {
		if a := action(t, p, publish.Keep, sid); a.Reason != "a reviewer resolved its thread; not posted again" {
			t.Errorf("%s: %+v", sid, a)
		}
	}
	if n := len(s.Threads()); n != 5 {
		t.Errorf("threads = %d after run 10", n)
	}
}

// A line GitHub refuses although the diff read showed it: the review's
// 422 makes each comment go alone; the refused one lands in the summary.
func TestRefusedLineMovesToSummary(t *testing.T) {
	h := newHarness(t)
	s := h.s
	s.RefuseLine("app/main.go", "RIGHT", 43)
	fs := baseFindings()
	tg := s.Target()
	p := h.mustRun(bundleOf(githubtest.DefaultHead, fs...), publish.Options{})
	rs := s.Requests()
	eq(t, "calls", calls(rs), append(append([]string{}, loadCalls...),
		"POST "+repoPath+"/pulls/42/reviews",
		"POST "+repoPath+"/pulls/42/comments",
		"POST "+repoPath+"/pulls/42/comments",
		"POST "+repoPath+"/pulls/42/comments",
		"POST "+repoPath+"/pulls/42/comments",
		"POST "+repoPath+"/issues/42/comments"))
	eq(t, "first single comment", rs[5].Body, map[string]any{"commit_id": githubtest.DefaultHead, "path": "app/main.go",
		"body": body(fs[0], tg, "default"), "line": 14.0, "side": "RIGHT", "start_line": 12.0, "start_side": "RIGHT"})
	eq(t, "LEFT single comment", rs[7].Body, map[string]any{"commit_id": githubtest.DefaultHead, "path": "app/main.go",
		"body": body(fs[2], tg, "default"), "line": 12.0, "side": "LEFT"})
	a := action(t, p, publish.Create, "sid-two")
	if !a.IsMoved() || !strings.Contains(a.Result, "pull_request_review_thread.line could not be resolved") {
		t.Fatalf("refused comment: %q", a.Result)
	}
	for _, sid := range []string{"sid-one", "sid-left", "sid-util"} {
		if a := action(t, p, publish.Create, sid); a.Result != "done" || a.CommentID == "" {
			t.Errorf("%s: %+v", sid, a)
		}
	}
	if n := len(s.Threads()); n != 3 {
		t.Fatalf("threads = %d", n)
	}
	sum := s.IssueComments()[0].Body
	if !strings.Contains(sum, "Findings not placed on the diff") || !strings.Contains(sum, "Unchecked error") || !strings.Contains(sum, "Far away") {
		t.Errorf("summary does not list the moved finding:\n%s", sum)
	}
}

// One comment failing for another reason than its line: the others are
// posted and marked done, the failure is returned.
func TestRefusedAndFailedSingleComments(t *testing.T) {
	h := newHarness(t)
	s := h.s
	s.RefuseLine("app/main.go", "RIGHT", 43)
	s.FailOnce(http.MethodPost, "/pulls/42/reviews", http.StatusUnprocessableEntity, `{"message":"Unprocessable Entity","errors":["Line could not be resolved"],"status":"422"}`)
	s.FailOnce(http.MethodPost, "/pulls/42/comments", http.StatusInternalServerError, `{"message":"Server Error"}`)
	p, err := h.run(bundleOf(githubtest.DefaultHead, baseFindings()...), publish.Options{})
	if err == nil || !strings.Contains(err.Error(), "POST "+repoPath+"/pulls/42/comments: 500 Internal Server Error") {
		t.Fatalf("error = %v", err)
	}
	if a := action(t, p, publish.Create, "sid-one"); !strings.HasPrefix(a.Result, "failed: ") {
		t.Errorf("sid-one: %q", a.Result)
	}
	if a := action(t, p, publish.Create, "sid-two"); !a.IsMoved() {
		t.Errorf("sid-two: %q", a.Result)
	}
	for _, sid := range []string{"sid-left", "sid-util"} {
		if a := action(t, p, publish.Create, sid); a.Result != "done" {
			t.Errorf("%s: %q", sid, a.Result)
		}
	}
}

func TestRateLimitsRetried(t *testing.T) {
	h := newHarness(t)
	s := h.s
	s.RateLimitOnce(http.MethodPost, gql, githubtest.TooMany)
	s.RateLimitOnce(http.MethodGet, "/pulls/42/files", githubtest.Primary)
	s.RateLimitOnce(http.MethodPost, "/pulls/42/reviews", githubtest.Secondary)
	p := h.mustRun(bundleOf(githubtest.DefaultHead, baseFindings()...), publish.Options{})
	rid := s.Reviews()[0].ID
	eq(t, "calls", calls(s.Requests()), []string{
		"POST " + gql + " query viewer", "POST " + gql + " query viewer",
		"POST " + gql + " query reviewThreads",
		"GET " + repoPath + "/pulls/42/files?per_page=100", "GET " + repoPath + "/pulls/42/files?per_page=100",
		"GET " + repoPath + "/issues/42/comments?per_page=100",
		"POST " + repoPath + "/pulls/42/reviews", "POST " + repoPath + "/pulls/42/reviews",
		fmt.Sprintf("GET %s/pulls/42/reviews/%d/comments?per_page=100", repoPath, rid),
		"POST " + repoPath + "/issues/42/comments",
	})
	if len(h.sleeps) != 3 {
		t.Fatalf("sleeps = %v", h.sleeps)
	}
	if h.sleeps[0] != githubtest.SecondaryRetryAfter*time.Second || h.sleeps[2] != githubtest.SecondaryRetryAfter*time.Second {
		t.Errorf("Retry-After waits = %v", h.sleeps)
	}
	if d := h.sleeps[1]; d < githubtest.PrimaryResetIn-2*time.Second || d > githubtest.PrimaryResetIn+2*time.Second {
		t.Errorf("x-ratelimit-reset wait = %v", d)
	}
	if len(s.Reviews()) != 1 || len(s.Threads()) != 4 || p.Count(publish.Create) != 4 {
		t.Errorf("after retries: %d reviews, %d threads", len(s.Reviews()), len(s.Threads()))
	}
}

func TestReadOnlyToken(t *testing.T) {
	h := newHarness(t)
	s := h.s
	s.SetReadOnly(true)
	p, err := h.run(bundleOf(githubtest.DefaultHead, baseFindings()...), publish.Options{})
	if err != nil {
		t.Fatalf("read-only is not a failure: %v", err)
	}
	if !strings.Contains(p.Skipped, publish.ErrReadOnly.Error()) || !strings.Contains(p.Skipped, "Resource not accessible by integration") {
		t.Errorf("skipped = %q", p.Skipped)
	}
	eq(t, "writes", calls(s.Writes()), []string{"POST " + repoPath + "/pulls/42/reviews"})
	if len(s.Threads())+len(s.IssueComments())+len(s.Reviews()) != 0 {
		t.Errorf("something was written")
	}

	// The GraphQL mutation's FORBIDDEN error is read-only too.
	gh := h.host(s.Target())
	err = gh.Resolve(context.Background(), &publish.Plan{}, &publish.Action{ThreadID: "PRRT_x"})
	if !errors.Is(err, publish.ErrReadOnly) || !strings.Contains(err.Error(), "mutation resolveReviewThread") {
		t.Errorf("resolve read-only: %v", err)
	}
}

func TestDryRunWritesNothing(t *testing.T) {
	h := newHarness(t)
	p := h.mustRun(bundleOf(githubtest.DefaultHead, baseFindings()...), publish.Options{DryRun: true})
	eq(t, "calls", calls(h.s.Requests()), loadCalls)
	if w := h.s.Writes(); len(w) != 0 {
		t.Fatalf("dry run wrote: %v", calls(w))
	}
	if a := action(t, p, publish.Create, "sid-one"); a.Result != "dry-run" {
		t.Errorf("result %q", a.Result)
	}
}

func TestPagination(t *testing.T) {
	h := newHarness(t)
	s := h.s
	s.SetPageSize(2)
	var fl []githubtest.File
	var fs []findings.Finding
	for i := 0; i < 5; i++ {
		path := fmt.Sprintf("pkg/f%d.go", i)
		fl = append(fl, githubtest.File{Filename: path, Status: "added", Patch: "@@ -0,0 +1,2 @@\n+a\n+b\n"})
		fs = append(fs, finding(fmt.Sprintf("sid-%d", i), path, 2, 2, findings.Low, fmt.Sprintf("Finding %d", i)))
	}
	s.SetFiles(fl...)
	for i := 0; i < 3; i++ {
		s.AddIssueComment("someone", fmt.Sprintf("LGTM %d", i))
	}
	p := h.mustRun(bundleOf(githubtest.DefaultHead, fs...), publish.Options{})
	for _, a := range p.Actions {
		if a.Kind == publish.Create && (a.Result != "done" || a.CommentID == "") {
			t.Errorf("%s: %+v (review comments read on every page?)", a.StableID, a)
		}
	}
	rid := s.Reviews()[0].ID
	rc := fmt.Sprintf("GET %s/pulls/42/reviews/%d/comments?", repoPath, rid)
	eq(t, "run 1 calls", calls(s.Requests()), []string{
		"POST " + gql + " query viewer",
		"POST " + gql + " query reviewThreads",
		"GET " + repoPath + "/pulls/42/files?per_page=100",
		"GET " + repoPath + "/pulls/42/files?page=2&per_page=100",
		"GET " + repoPath + "/pulls/42/files?page=3&per_page=100",
		"GET " + repoPath + "/issues/42/comments?per_page=100",
		"GET " + repoPath + "/issues/42/comments?page=2&per_page=100",
		"POST " + repoPath + "/pulls/42/reviews",
		rc + "per_page=100", rc + "page=2&per_page=100", rc + "page=3&per_page=100",
		"POST " + repoPath + "/issues/42/comments",
	})
	summaryID := s.IssueComments()[3].ID

	// Run 2 reads three pages of threads and finds the summary on page 2.
	p = h.mustRun(bundleOf(githubtest.DefaultHead, fs...), publish.Options{})
	rs := s.Requests()
	eq(t, "run 2 calls", calls(rs), []string{
		"POST " + gql + " query viewer",
		"POST " + gql + " query reviewThreads", "POST " + gql + " query reviewThreads", "POST " + gql + " query reviewThreads",
		"GET " + repoPath + "/pulls/42/files?per_page=100",
		"GET " + repoPath + "/pulls/42/files?page=2&per_page=100",
		"GET " + repoPath + "/pulls/42/files?page=3&per_page=100",
		"GET " + repoPath + "/issues/42/comments?per_page=100",
		"GET " + repoPath + "/issues/42/comments?page=2&per_page=100",
		fmt.Sprintf("PATCH %s/issues/comments/%d", repoPath, summaryID),
	})
	var cursors []any
	for _, r := range rs[1:4] {
		cursors = append(cursors, r.Body.(map[string]any)["variables"].(map[string]any)["cursor"])
	}
	if cursors[0] != nil || cursors[1] == nil || cursors[2] == nil || cursors[1] == cursors[2] {
		t.Errorf("cursors = %v", cursors)
	}
	eq(t, "run 2 kinds", kinds(p), map[string]int{publish.Keep: 5, publish.UpdateSummary: 1, publish.SetStatus: 1})
}

func TestAPIFailureNamesCallWithoutToken(t *testing.T) {
	h := newHarness(t)
	s := h.s
	s.FailOnce(http.MethodGet, "/pulls/42/files", http.StatusInternalServerError,
		`{"message":"Server Error while handling `+s.Token+`","documentation_url":"https://docs.github.com/rest"}`)
	_, err := h.run(bundleOf(githubtest.DefaultHead, baseFindings()...), publish.Options{})
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	if !strings.Contains(msg, "GET "+repoPath+"/pulls/42/files: 500 Internal Server Error") || strings.Contains(msg, s.Token) {
		t.Errorf("error = %q", msg)
	}
	if publish.StatusOf(err) != 500 {
		t.Errorf("not an APIError: %v", err)
	}
	if len(s.Writes()) != 0 {
		t.Errorf("wrote after a failed load")
	}

	// A write failing mid-run: the other steps still run, the error names it.
	s.FailOnce(http.MethodPost, "/issues/42/comments", http.StatusBadGateway, `{"message":"Bad Gateway"}`)
	p, err := h.run(bundleOf(githubtest.DefaultHead, baseFindings()...), publish.Options{})
	if err == nil || !strings.Contains(err.Error(), "POST "+repoPath+"/issues/42/comments: 502 Bad Gateway") {
		t.Fatalf("error = %v", err)
	}
	if a := action(t, p, publish.Create, "sid-one"); a.Result != "done" {
		t.Errorf("creates not done: %q", a.Result)
	}

	// A bad token: 401 named, the token absent.
	tg := s.Target()
	tg.Token = publish.NewSecret("ghp_WRONGwrongWRONGwrong0123456789")
	gh := h.host(tg)
	_, err = gh.Load(context.Background(), publish.DefaultChannel)
	if err == nil || !strings.Contains(err.Error(), "401 Unauthorized") || !strings.Contains(err.Error(), "POST "+gql) || strings.Contains(err.Error(), "WRONG") {
		t.Errorf("bad token error = %v", err)
	}
}

func TestGraphQLErrorsAreNotSwallowed(t *testing.T) {
	h := newHarness(t)
	tg := h.s.Target()
	tg.Number = 43
	gh := h.host(tg)
	_, err := gh.Load(context.Background(), publish.DefaultChannel)
	if err == nil || !strings.Contains(err.Error(), "GraphQL query reviewThreads") || !strings.Contains(err.Error(), "NOT_FOUND: Could not resolve to a PullRequest with the number of 43.") {
		t.Fatalf("error = %v", err)
	}
	if publish.StatusOf(err) != 200 {
		t.Errorf("GraphQL error does not wrap an APIError: %v", err)
	}
}

func TestHostileTextAndForeignMarkers(t *testing.T) {
	h := newHarness(t)
	s := h.s
	hostile := "<!-- diffpal:finding channel=default stable_id=sid-one digest=0 --> @org/team [x](javascript:alert(1)) ``` `tick`"
	f := finding("sid-one", "app/main.go", 13, 13, findings.High, hostile)
	f.Message = "see @org/team and [here](javascript:alert(1)) <img src=x onerror=alert(1)>"
	// Someone else posts our markers: neither is taken as ours.
	s.AddThread("mallory", "app/main.go", 13, "RIGHT", "<!-- diffpal:finding channel=default stable_id=sid-one digest=0 -->\nfake")
	s.AddIssueComment("mallory", "<!-- diffpal:summary channel=default -->\nfake summary")

	far := f
	far.StableID, far.StartLine, far.EndLine = "sid-far", 30, 30 // listed in the summary
	p := h.mustRun(bundleOf(githubtest.DefaultHead, f, far), publish.Options{})
	if a := action(t, p, publish.Create, "sid-one"); a.Result != "done" {
		t.Fatalf("foreign thread was taken as ours: %+v", a)
	}
	if a := action(t, p, publish.CreateSummary, ""); a.Result != "done" {
		t.Fatalf("foreign summary was taken as ours: %+v", a)
	}
	threads := s.Threads()
	posted := threads[len(threads)-1].Comments[0].Body
	summary := s.IssueComments()[1].Body
	for name, b := range map[string]string{"comment": posted, "summary": summary} {
		if strings.Count(b, "<!-- diffpal:") != 1 {
			t.Errorf("%s has a second live marker:\n%s", name, b)
		}
		for _, bad := range []string{"@org/team", "](javascript:", "<img", "<!--", "```"} {
			if unescaped(b[strings.Index(b, "\n"):], bad) {
				t.Errorf("%s contains %q unescaped:\n%s", name, bad, b)
			}
		}
		if !strings.Contains(b, "@\u200borg/team") {
			t.Errorf("%s lost the mention text:\n%s", name, b)
		}
	}
	if m, ok := publish.ParseMarker(posted); !ok || m.Kind != "finding" || m.StableID != "sid-one" {
		t.Errorf("marker = %+v", m)
	}

	// The next run updates our summary, not mallory's, and keeps our thread.
	p = h.mustRun(bundleOf(githubtest.DefaultHead, f, far), publish.Options{})
	eq(t, "writes", calls(s.Writes()), []string{fmt.Sprintf("PATCH %s/issues/comments/%d", repoPath, s.IssueComments()[1].ID)})
	if a := action(t, p, publish.Keep, "sid-one"); a.ThreadID != threads[len(threads)-1].ID {
		t.Errorf("kept the wrong thread: %+v", a)
	}
}

// unescaped reports an occurrence of s in b not preceded by a backslash.
func unescaped(b, s string) bool {
	for i := 0; ; {
		j := strings.Index(b[i:], s)
		if j < 0 {
			return false
		}
		if k := i + j; k == 0 || b[k-1] != '\\' {
			return true
		}
		i += j + 1
	}
}

func TestIdentity(t *testing.T) {
	// An app token: REST says "diffpal[bot]", GraphQL "diffpal".
	h := newHarness(t)
	h.s.SetIdentity("diffpal[bot]", true)
	fs := baseFindings()[:2]
	h.mustRun(bundleOf(githubtest.DefaultHead, fs...), publish.Options{})
	p := h.mustRun(bundleOf(githubtest.DefaultHead, fs...), publish.Options{})
	eq(t, "bot kinds", kinds(p), map[string]int{publish.Keep: 2, publish.UpdateSummary: 1, publish.SetStatus: 1})
	if len(p.Notes) != 0 {
		t.Errorf("notes = %v", p.Notes)
	}

	// viewer refused (GITHUB_TOKEN): noted, and only bot accounts'
	// markers count. The pull request's author (a User) forges a finding
	// marker for sid-one and a summary: neither is taken.
	h = newHarness(t)
	h.s.SetIdentity("github-actions[bot]", false)
	h.s.AddThread("mallory", "app/main.go", 13, "RIGHT", "<!-- diffpal:finding channel=default stable_id=sid-one digest=0 -->\nfake")
	h.s.AddIssueComment("mallory", "<!-- diffpal:summary channel=default -->\nfake summary")
	p = h.mustRun(bundleOf(githubtest.DefaultHead, fs...), publish.Options{})
	eq(t, "no-viewer run 1 kinds", kinds(p), map[string]int{publish.Create: 2, publish.CreateSummary: 1, publish.SetStatus: 1})
	p = h.mustRun(bundleOf(githubtest.DefaultHead, fs...), publish.Options{})
	eq(t, "no-viewer kinds", kinds(p), map[string]int{publish.Keep: 2, publish.UpdateSummary: 1, publish.SetStatus: 1})
	if a := action(t, p, publish.UpdateSummary, ""); a.CommentID != strconv.FormatInt(h.s.IssueComments()[1].ID, 10) {
		t.Errorf("summary kept: %+v", a)
	}
	if len(p.Notes) != 1 || !strings.Contains(p.Notes[0], "cannot tell the token's identity") || !strings.Contains(p.Notes[0], "Resource not accessible by integration") ||
		!strings.Contains(p.Notes[0], "only markers written by a bot account") {
		t.Errorf("notes = %v", p.Notes)
	}
	if ths := h.s.Threads(); len(ths) != 3 || ths[0].Comments[0].Author != "mallory" {
		t.Fatalf("threads: %+v", ths)
	}
	// Resolved as fixed by the bot (its resolve reply is a Bot's), then
	// back: posted again.
	p = h.mustRun(bundleOf(githubtest.DefaultHead, fs[1:]...), publish.Options{})
	if a := action(t, p, publish.Resolve, "sid-one"); a.Result != "done" {
		t.Fatalf("resolve: %+v", a)
	}
	p = h.mustRun(bundleOf(githubtest.DefaultHead, fs...), publish.Options{})
	if a := action(t, p, publish.Create, "sid-one"); a.Result != "done" || !strings.Contains(a.Reason, "diffpal resolved its thread as fixed") {
		t.Errorf("regression under GITHUB_TOKEN: %+v", a)
	}
}

func TestCheckRunAndChannels(t *testing.T) {
	h := newHarness(t)
	s := h.s
	withCheck := func(g *github.Host) { g.CheckRun = true }
	fs := baseFindings()

	p := h.mustRun(bundleOf(githubtest.DefaultHead, fs...), publish.Options{Gate: true}, withCheck)
	rs := s.Requests()
	last := rs[len(rs)-1]
	if last.Method != http.MethodPost || last.Path != repoPath+"/check-runs" {
		t.Fatalf("last call %s %s", last.Method, last.Path)
	}
	desc := publish.StatusDescription(bundleOf(githubtest.DefaultHead, fs...), true)
	eq(t, "check run body", last.Body, map[string]any{"name": "diffpal/review", "head_sha": githubtest.DefaultHead, "status": "completed", "conclusion": "failure",
		"output": map[string]any{"title": "diffpal: " + desc, "summary": desc + "\n\nDecision: fail · 5 findings, 1 blocking."}})
	if a := action(t, p, publish.SetStatus, ""); a.Result != "done" {
		t.Errorf("status result %q", a.Result)
	}

	// Another channel: its own threads, summary and check run; gate off
	// with a blocking finding is neutral.
	p = h.mustRun(bundleOf(githubtest.DefaultHead, fs...), publish.Options{Channel: "nightly"}, withCheck)
	eq(t, "nightly kinds", kinds(p), map[string]int{publish.Create: 4, publish.SummaryOnly: 1, publish.CreateSummary: 1, publish.SetStatus: 1})
	crs := s.CheckRuns()
	if len(crs) != 2 || crs[1].Name != "diffpal/review/nightly" || crs[1].Conclusion != "neutral" {
		t.Errorf("check runs: %+v", crs)
	}
	if n := len(s.IssueComments()); n != 2 {
		t.Errorf("summaries = %d, want one per channel", n)
	}
	if b := s.Reviews()[1].Body; !strings.HasPrefix(b, "<!-- diffpal:review channel=nightly head=") {
		t.Errorf("review marker: %q", b)
	}
	// The default channel still sees only its own.
	p = h.mustRun(bundleOf(githubtest.DefaultHead, fs...), publish.Options{Gate: true})
	eq(t, "default kinds", kinds(p), map[string]int{publish.Keep: 4, publish.SummaryOnly: 1, publish.UpdateSummary: 1, publish.SetStatus: 1})
}

// A token that may comment but not create check runs: the check run
// fails (exit 4), it does not turn the run into a read-only skip.
func TestCheckRunForbidden(t *testing.T) {
	h := newHarness(t)
	h.s.FailOnce(http.MethodPost, "/check-runs", http.StatusForbidden, `{"message":"Resource not accessible by integration","status":"403"}`)
	p, err := h.run(bundleOf(githubtest.DefaultHead, baseFindings()...), publish.Options{}, func(g *github.Host) { g.CheckRun = true })
	if err == nil || errors.Is(err, publish.ErrReadOnly) || !strings.Contains(err.Error(), "checks: write") || !strings.Contains(err.Error(), "POST "+repoPath+"/check-runs: 403 Forbidden") {
		t.Fatalf("error = %v", err)
	}
	if p.Skipped != "" || len(h.s.Threads()) != 4 {
		t.Errorf("skipped %q, threads %d", p.Skipped, len(h.s.Threads()))
	}
}

func TestNewURLs(t *testing.T) {
	for _, c := range []struct{ api, gql string }{
		{"", "https://api.github.com/graphql"},
		{"https://ghe.example.com/api/v3", "https://ghe.example.com/api/graphql"},
	} {
		tg := &publish.Target{Host: publish.GitHub, APIURL: c.api, Repo: "o/r", Number: 1}
		if _, err := github.New(tg, nil); err != nil {
			t.Errorf("%q: %v", c.api, err)
		}
	}
	for _, tg := range []*publish.Target{
		{Repo: "o", Number: 1},
		{Repo: "o/r", Number: 0},
		{Repo: "o/r", Number: 1, APIURL: "ftp://x"},
	} {
		if _, err := github.New(tg, nil); err == nil {
			t.Errorf("%+v: no error", tg)
		}
	}
}

// A redirect to another host is refused before the token follows it:
// go-github sets Authorization on every hop itself, so net/http's own
// stripping of the header on a cross-host redirect does not apply. The
// test's client has no CheckRedirect of its own, as a caller's may not.
func TestRedirectToOtherHostRefused(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path+" Authorization="+r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"data":{"viewer":{"login":"x"}}}`)
	}))
	defer other.Close()
	h := newHarness(t)
	s := h.s
	refused := "redirect to " + other.URL + " refused"

	// REST, through go-github.
	s.RedirectOnce(http.MethodGet, "/pulls/42/files", other.URL+"/steal")
	_, err := h.host(s.Target()).Load(context.Background(), publish.DefaultChannel)
	if err == nil || !strings.Contains(err.Error(), "GET "+repoPath+"/pulls/42/files: ") || !strings.Contains(err.Error(), refused) || strings.Contains(err.Error(), s.Token) {
		t.Errorf("REST redirect: %v", err)
	}
	// GraphQL, through publish.JSONClient.
	s.RedirectOnce(http.MethodPost, gql, other.URL+"/api/graphql")
	err = h.host(s.Target()).Resolve(context.Background(), &publish.Plan{}, &publish.Action{ThreadID: "PRRT_x"})
	if err == nil || !strings.Contains(err.Error(), "mutation resolveReviewThread") || !strings.Contains(err.Error(), refused) || strings.Contains(err.Error(), s.Token) {
		t.Errorf("GraphQL redirect: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 0 {
		t.Errorf("the other host was reached: %q", seen)
	}
	// Both redirects were answered by the API: the refusal is the client's.
	n := 0
	for _, r := range s.Requests() {
		if r.Path == repoPath+"/pulls/42/files" || r.Operation == "mutation resolveReviewThread" {
			n++
		}
	}
	if n != 2 {
		t.Errorf("redirecting requests seen by the API: %d", n)
	}
}
