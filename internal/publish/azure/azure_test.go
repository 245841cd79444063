package azure_test

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
	"github.com/diffpalhq/diffpal/internal/publish/azure"
	"github.com/diffpalhq/diffpal/internal/publish/azure/azuretest"
)

const (
	head1 = "1111111111111111111111111111111111111111"
	head2 = "2222222222222222222222222222222222222222"
)

// runner publishes bundles on a fake through a Transport whose sleeps are
// recorded, not slept.
type runner struct {
	t     *testing.T
	s     *azuretest.Server
	from  string // TokenFrom
	mu    sync.Mutex
	slept []time.Duration
	plan  *publish.Plan
}

func newRunner(t *testing.T) *runner {
	return &runner{t: t, s: azuretest.New(t), from: "SYSTEM_ACCESSTOKEN"}
}

func (r *runner) client() *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &publish.Transport{Sleep: func(ctx context.Context, d time.Duration) error {
		r.mu.Lock()
		r.slept = append(r.slept, d)
		r.mu.Unlock()
		return nil
	}}}
}

func (r *runner) run(b *findings.Bundle, o publish.Options) (*publish.Plan, error) {
	r.t.Helper()
	tg := r.s.Target(r.from)
	tg.HeadSHA = b.HeadSHA
	h, err := azure.New(tg, r.client())
	if err != nil {
		r.t.Fatal(err)
	}
	if o.Feedback == "" {
		o.Feedback = publish.FeedbackReview
	}
	saves := 0
	p, err := publish.Run(context.Background(), h, tg, b, o, func(p *publish.Plan) error { saves++; return nil })
	if saves == 0 && err == nil {
		r.t.Fatal("the plan was never saved")
	}
	r.plan = p
	return p, err
}

// mustRun runs and fails the test on an error.
func (r *runner) mustRun(b *findings.Bundle, o publish.Options) *publish.Plan {
	r.t.Helper()
	p, err := r.run(b, o)
	if err != nil {
		r.t.Fatalf("publish: %v", err)
	}
	return p
}

func bundle(head string, fs ...findings.Finding) *findings.Bundle {
	return &findings.Bundle{Version: findings.V3, ReviewID: "r1", BaseSHA: strings.Repeat("a", 40), HeadSHA: head, Findings: fs}
}

func finding(sid, path string, line int, sev findings.Severity, blocking bool) findings.Finding {
	return findings.Finding{ID: "id-" + sid, ReviewID: "r1", StableID: sid, RuleID: "rule." + sid, Category: "correctness",
		Severity: sev, Confidence: 0.9, Path: path, StartLine: line, EndLine: line, Blocking: blocking,
		Title: "Problem " + sid, Message: "Something is wrong in " + sid + "."}
}

// action returns the plan's action for a stable id.
func action(t *testing.T, p *publish.Plan, sid string) *publish.Action {
	t.Helper()
	for i := range p.Actions {
		if p.Actions[i].StableID == sid {
			return &p.Actions[i]
		}
	}
	t.Fatalf("no action for %s in %+v", sid, p.Actions)
	return nil
}

func kind(p *publish.Plan, k string) []*publish.Action {
	var out []*publish.Action
	for i := range p.Actions {
		if p.Actions[i].Kind == k {
			out = append(out, &p.Actions[i])
		}
	}
	return out
}

// jsonEq compares a decoded request body with the JSON want.
func jsonEq(t *testing.T, what string, got any, want string) {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: bad want JSON: %v", what, err)
	}
	if !reflect.DeepEqual(got, w) {
		g, _ := json.MarshalIndent(got, "", " ")
		ww, _ := json.MarshalIndent(w, "", " ")
		t.Errorf("%s:\n got %s\nwant %s", what, g, ww)
	}
}

func q(s string) string { b, _ := json.Marshal(s); return string(b) }

// calls renders requests as "METHOD path?query" with the PR prefix cut.
func calls(s *azuretest.Server, rs []azuretest.Request) []string {
	pr := "/org/" + s.Project + "/_apis/git/repositories/" + s.RepoID + "/pullRequests/" + strconv.Itoa(s.PR)
	var out []string
	for _, r := range rs {
		p := r.Path
		if rest, ok := strings.CutPrefix(p, pr); ok {
			p = "PR" + rest
		}
		out = append(out, r.Method+" "+p+"?"+r.Query.Encode())
	}
	return out
}

const v = "api-version=7.1"

// markerThreads returns the fake's threads whose first comment carries a
// marker of kind on channel, by stable id (summary: "").
func markerThreads(s *azuretest.Server, kind, channel string) map[string][]azuretest.Thread {
	out := map[string][]azuretest.Thread{}
	for _, th := range s.Threads() {
		m, ok := publish.ParseMarker(th.Comments[0].Content)
		if ok && m.Kind == kind && m.Channel == channel && th.Comments[0].Author.ID == azuretest.Me.ID {
			out[m.StableID] = append(out[m.StableID], th)
		}
	}
	return out
}

func TestLifecycle(t *testing.T) {
	r := newRunner(t)
	s := r.s
	s.Push(head1,
		azuretest.Change{Path: "a.go", Lines: 100},
		azuretest.Change{Path: "b.go"},
		azuretest.Change{Path: "gone.go", Type: "delete", BaseLines: 20},
		azuretest.Change{Path: "pkg/new.go", OldPath: "pkg/old.go"},
		azuretest.Change{Path: "added.go", Type: "add"},
	)
	fA := finding("sid-a", "a.go", 10, findings.High, true)
	fB := finding("sid-b", "b.go", 20, findings.Medium, false)
	fB.EndLine = 22
	fL := finding("sid-left", "gone.go", 5, findings.Medium, false)
	fL.ChangedSpan = &findings.Span{Path: "gone.go", StartLine: 5, EndLine: 5, Side: "LEFT"}
	fFar := finding("sid-far", "a.go", 500, findings.Low, false)       // past a.go's 100 lines: Azure refuses
	fOut := finding("sid-out", "elsewhere.go", 3, findings.Low, false) // not in the pull request
	fR := finding("sid-ren", "pkg/new.go", 7, findings.Low, false)
	fLA := finding("sid-leftadd", "added.go", 2, findings.Low, false) // a removed line of an added file
	fLA.ChangedSpan = &findings.Span{Path: "added.go", StartLine: 2, EndLine: 2, Side: "LEFT"}
	b1 := bundle(head1, fA, fB, fL, fFar, fOut, fR, fLA)

	// Run 1: everything is posted.
	p := r.mustRun(b1, publish.Options{Gate: true})
	pr := "PR"
	want := []string{
		"GET /org/_apis/connectionData?api-version=7.1-preview.1",
		"GET " + pr + "?" + v,
		"GET " + pr + "/iterations?" + v,
		"GET " + pr + "/iterations/1/changes?%24skip=0&%24top=2000&" + v,
		"GET " + pr + "/threads?" + v,
		"POST " + pr + "/threads?" + v, // sid-a
		"POST " + pr + "/threads?" + v, // sid-b
		"POST " + pr + "/threads?" + v, // sid-left
		"POST " + pr + "/threads?" + v, // sid-far, refused
		"POST " + pr + "/threads?" + v, // sid-ren
		"POST " + pr + "/threads?" + v, // summary
		"POST " + pr + "/statuses?" + v,
	}
	reqs := s.Requests()
	if got := calls(s, reqs); !reflect.DeepEqual(got, want) {
		t.Fatalf("run 1 calls:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, rq := range reqs {
		if !rq.Auth || rq.AuthScheme != "Bearer" {
			t.Errorf("%s %s: auth %v %q, want Bearer", rq.Method, rq.Path, rq.Auth, rq.AuthScheme)
		}
	}
	// Change tracking ids: a.go 1, b.go 2, gone.go 3, pkg/new.go 4.
	jsonEq(t, "thread sid-a", reqs[5].Body, `{"comments":[{"parentCommentId":0,"content":`+q(action(t, p, "sid-a").Body)+`,"commentType":1}],
		"status":"active",
		"threadContext":{"filePath":"/a.go","rightFileStart":{"line":10,"offset":1},"rightFileEnd":{"line":10,"offset":1}},
		"pullRequestThreadContext":{"changeTrackingId":1,"iterationContext":{"firstComparingIteration":1,"secondComparingIteration":1}}}`)
	jsonEq(t, "thread sid-b", reqs[6].Body, `{"comments":[{"parentCommentId":0,"content":`+q(action(t, p, "sid-b").Body)+`,"commentType":1}],
		"status":"closed",
		"threadContext":{"filePath":"/b.go","rightFileStart":{"line":20,"offset":1},"rightFileEnd":{"line":22,"offset":1}},
		"pullRequestThreadContext":{"changeTrackingId":2,"iterationContext":{"firstComparingIteration":1,"secondComparingIteration":1}}}`)
	// The removed line goes on the base (left) side.
	jsonEq(t, "thread sid-left", reqs[7].Body, `{"comments":[{"parentCommentId":0,"content":`+q(action(t, p, "sid-left").Body)+`,"commentType":1}],
		"status":"closed",
		"threadContext":{"filePath":"/gone.go","leftFileStart":{"line":5,"offset":1},"leftFileEnd":{"line":5,"offset":1}},
		"pullRequestThreadContext":{"changeTrackingId":3,"iterationContext":{"firstComparingIteration":1,"secondComparingIteration":1}}}`)
	jsonEq(t, "thread sid-ren", reqs[9].Body, `{"comments":[{"parentCommentId":0,"content":`+q(action(t, p, "sid-ren").Body)+`,"commentType":1}],
		"status":"closed",
		"threadContext":{"filePath":"/pkg/new.go","rightFileStart":{"line":7,"offset":1},"rightFileEnd":{"line":7,"offset":1}},
		"pullRequestThreadContext":{"changeTrackingId":4,"iterationContext":{"firstComparingIteration":1,"secondComparingIteration":1}}}`)
	if a := action(t, p, "sid-ren"); a.OldPath != "pkg/old.go" {
		t.Errorf("renamed file's old path = %q", a.OldPath)
	}
	var sum *publish.Action
	for _, k := range []string{publish.CreateSummary, publish.UpdateSummary} {
		if l := kind(p, k); len(l) == 1 {
			sum = l[0]
		}
	}
	if sum == nil || sum.Kind != publish.CreateSummary {
		t.Fatalf("summary action = %+v", sum)
	}
	// The summary thread has no file and is active while a finding blocks.
	jsonEq(t, "summary", reqs[10].Body, `{"comments":[{"parentCommentId":0,"content":`+q(sum.Body)+`,"commentType":1}],"status":"active"}`)
	jsonEq(t, "status", reqs[11].Body, `{"state":"failed","description":"1 blocking findings","context":{"name":"review","genre":"diffpal"}}`)

	// Placements refused (by Azure, by the client, by the plan): the
	// summary lists them, the run did not fail.
	if a := action(t, p, "sid-out"); a.Kind != publish.SummaryOnly || a.Reason != "the file is not in the pull request's diff" {
		t.Errorf("sid-out: %+v", a)
	}
	for sid, why := range map[string]string{
		"sid-far":     "moved to summary: Azure DevOps refused the thread's position: POST /org/Diff Pal/",
		"sid-leftadd": "moved to summary: the file is new in the pull request: it has no base side",
		"sid-out":     "",
	} {
		if a := action(t, p, sid); !strings.HasPrefix(a.Result, why) {
			t.Errorf("%s: result %q, want prefix %q", sid, a.Result, why)
		}
		if !strings.Contains(sum.Body, "Problem "+sid) {
			t.Errorf("summary does not list %s:\n%s", sid, sum.Body)
		}
	}
	if a := action(t, p, "sid-far"); !strings.Contains(a.Result, "400") || !strings.Contains(a.Result, "past the end") {
		t.Errorf("sid-far result = %q", a.Result)
	}
	for _, sid := range []string{"sid-a", "sid-b", "sid-left", "sid-ren"} {
		if a := action(t, p, sid); a.Result != "done" || a.ThreadID == "" || a.CommentID != "1" {
			t.Errorf("%s: %+v", sid, a)
		}
	}
	ours := markerThreads(s, "finding", publish.DefaultChannel)
	if len(ours) != 4 {
		t.Fatalf("finding threads after run 1: %v", ours)
	}
	if st := s.Statuses(); len(st) != 1 || st[0].State != "failed" || st[0].Context != (azuretest.StatusContext{Name: "review", Genre: "diffpal"}) {
		t.Errorf("statuses = %+v", st)
	}

	// Run 2, same bundle: nothing new; the summary is edited in place
	// (its status does not change, so the thread is not patched).
	s.ResetRequests()
	p = r.mustRun(b1, publish.Options{Gate: true})
	sumTh := markerThreads(s, "summary", publish.DefaultChannel)[""]
	if len(sumTh) != 1 {
		t.Fatalf("summary threads: %d", len(sumTh))
	}
	sumID := strconv.Itoa(sumTh[0].ID)
	want = []string{
		"POST PR/threads?" + v, // sid-far is tried again, and refused again
		"PATCH PR/threads/" + sumID + "/comments/1?" + v,
		"POST PR/statuses?" + v,
	}
	if got := calls(s, s.Writes()); !reflect.DeepEqual(got, want) {
		t.Fatalf("run 2 writes:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := len(kind(p, publish.Create)); n != 2 { // the two moved ones are tried again
		t.Errorf("run 2 creates = %d", n)
	}
	if n := len(kind(p, publish.Keep)); n != 4 {
		t.Errorf("run 2 keeps = %d", n)
	}

	// Run 3, after a push: sid-a's text changes (no longer blocking),
	// sid-left is gone, sid-ren moved three lines.
	s.Push(head2,
		azuretest.Change{Path: "a.go", Lines: 100},
		azuretest.Change{Path: "b.go"},
		azuretest.Change{Path: "pkg/new.go", OldPath: "pkg/old.go"},
	)
	fA2 := fA
	fA2.Blocking = false
	fR2 := fR
	fR2.StartLine, fR2.EndLine = 10, 10
	b3 := bundle(head2, fA2, fB, fR2)
	s.ResetRequests()
	p = r.mustRun(b3, publish.Options{Gate: true})
	tA := ours["sid-a"][0].ID
	tL := ours["sid-left"][0].ID
	want = []string{
		fmt.Sprintf("PATCH PR/threads/%d/comments/1?%s", tA, v), // new text
		fmt.Sprintf("PATCH PR/threads/%d?%s", tA, v),            // active → closed
		fmt.Sprintf("POST PR/threads/%d/comments?%s", tL, v),    // reply
		fmt.Sprintf("PATCH PR/threads/%d?%s", tL, v),            // fixed
		"PATCH PR/threads/" + sumID + "/comments/1?" + v,
		"PATCH PR/threads/" + sumID + "?" + v, // no longer blocking: closed
		"POST PR/statuses?" + v,
	}
	w := s.Writes()
	if got := calls(s, w); !reflect.DeepEqual(got, want) {
		t.Fatalf("run 3 writes:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	jsonEq(t, "update", w[0].Body, `{"content":`+q(action(t, p, "sid-a").Body)+`}`)
	jsonEq(t, "update status", w[1].Body, `{"status":"closed"}`)
	jsonEq(t, "resolve reply", w[2].Body, `{"parentCommentId":1,"content":`+q(publish.ResolveBody("default", "sid-left", head2))+`,"commentType":1}`)
	jsonEq(t, "resolve status", w[3].Body, `{"status":"fixed"}`)
	jsonEq(t, "summary status", w[5].Body, `{"status":"closed"}`)
	jsonEq(t, "status 3", w[6].Body, `{"state":"succeeded","description":"3 findings, none blocking","context":{"name":"review","genre":"diffpal"}}`)
	if a := action(t, p, "sid-ren"); a.Kind != publish.Keep || !strings.Contains(a.Reason, "moved") {
		t.Errorf("moved finding: %+v", a)
	}
	// The iteration changes of the new push were read.
	if got := calls(s, s.Requests())[3]; got != "GET PR/iterations/2/changes?%24skip=0&%24top=2000&"+v {
		t.Errorf("run 3 changes call = %s", got)
	}
	left := s.Threads()[tL-1]
	if left.Status != "fixed" || len(left.Comments) != 2 || left.Comments[1].ParentCommentID != 1 || !strings.Contains(left.Comments[1].Content, "Resolved by diffpal") {
		t.Errorf("resolved thread = %+v", left)
	}

	// Three more runs: no duplicates, no more resolutions, one summary.
	// A reviewer marks sid-b "won't fix" in between: it stays resolved.
	s.SetThreadStatus(ours["sid-b"][0].ID, "wontFix")
	before := len(s.Threads())
	for i := 0; i < 3; i++ {
		s.ResetRequests()
		p = r.mustRun(b3, publish.Options{Gate: true})
		for _, wr := range s.Writes() {
			if wr.Method == http.MethodPost && strings.HasSuffix(wr.Path, "/threads") || strings.HasSuffix(wr.Path, "/comments") {
				t.Errorf("run %d: %s %s", 4+i, wr.Method, wr.Path)
			}
		}
		if a := action(t, p, "sid-b"); a.Kind != publish.Keep || !strings.Contains(a.Reason, "resolved") {
			t.Errorf("won't-fix thread: %+v", a)
		}
	}
	if after := len(s.Threads()); after != before {
		t.Errorf("threads %d → %d", before, after)
	}
	for sid, ths := range markerThreads(s, "finding", publish.DefaultChannel) {
		if len(ths) != 1 {
			t.Errorf("%s has %d threads", sid, len(ths))
		}
	}
	sums := markerThreads(s, "summary", publish.DefaultChannel)[""]
	if len(sums) != 1 || len(sums[0].Comments) != 1 || sums[0].Status != "closed" {
		t.Fatalf("summary threads = %+v", sums)
	}
	if got := sums[0].Comments[0].Content; got != kind(p, publish.UpdateSummary)[0].Body {
		t.Errorf("summary content is not the last run's")
	}
	if n := len(s.Statuses()); n != 6 {
		t.Errorf("statuses posted = %d, want one per run", n)
	}

	// Run 7: sid-left, set to fixed by diffpal in run 3, is back (a
	// push brought gone.go's removal back): it is posted again, in a new
	// thread.
	const head3 = "3333333333333333333333333333333333333333"
	s.Push(head3,
		azuretest.Change{Path: "a.go", Lines: 100},
		azuretest.Change{Path: "b.go"},
		azuretest.Change{Path: "gone.go", Type: "delete", BaseLines: 20},
		azuretest.Change{Path: "pkg/new.go", OldPath: "pkg/old.go"},
	)
	b7 := bundle(head3, fA2, fB, fR2, fL)
	s.ResetRequests()
	p = r.mustRun(b7, publish.Options{Gate: true})
	a := action(t, p, "sid-left")
	if a.Kind != publish.Create || a.Result != "done" || a.ThreadID == strconv.Itoa(tL) ||
		!strings.Contains(a.Reason, "diffpal resolved its thread as fixed ("+strconv.Itoa(tL)+")") {
		t.Errorf("regression: %+v", a)
	}
	want = []string{"POST PR/threads?" + v, "PATCH PR/threads/" + sumID + "/comments/1?" + v, "POST PR/statuses?" + v}
	if got := calls(s, s.Writes()); !reflect.DeepEqual(got, want) {
		t.Fatalf("run 7 writes:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if ths := markerThreads(s, "finding", publish.DefaultChannel)["sid-left"]; len(ths) != 2 || ths[0].Status != "fixed" || ths[1].Status != "closed" {
		t.Fatalf("sid-left threads: %+v", ths)
	}

	// Run 8: the open thread is kept; nothing is posted.
	s.ResetRequests()
	p = r.mustRun(b7, publish.Options{Gate: true})
	if got := calls(s, s.Writes()); !reflect.DeepEqual(got, want[1:]) {
		t.Fatalf("run 8 writes: %v", got)
	}
	if k := action(t, p, "sid-left"); k.Kind != publish.Keep || k.ThreadID != a.ThreadID {
		t.Errorf("run 8 sid-left: %+v", k)
	}

	// Run 9: a reviewer replies on sid-a's thread and sets it to fixed,
	// and sets sid-ren's to fixed with a reply that forges diffpal's
	// resolve marker: both stay quiet (sid-b, won't fix without a reply,
	// still does).
	s.AddComment(tA, azuretest.Other, "Fixed differently, thanks.")
	s.SetThreadStatus(tA, "fixed")
	tR := ours["sid-ren"][0].ID
	s.AddComment(tR, azuretest.Other, publish.ResolveBody("default", "sid-ren", head3))
	s.SetThreadStatus(tR, "fixed")
	tg := s.Target("SYSTEM_ACCESSTOKEN")
	hst, err := azure.New(tg, r.client())
	if err != nil {
		t.Fatal(err)
	}
	st, err := hst.Load(context.Background(), publish.DefaultChannel)
	if err != nil {
		t.Fatal(err)
	}
	byUs := map[string]bool{}
	for _, th := range st.Threads {
		if th.Resolved {
			byUs[th.StableID+" "+th.ID] = th.ResolvedByUs
		}
	}
	wantByUs := map[string]bool{"sid-left " + strconv.Itoa(tL): true, "sid-a " + strconv.Itoa(tA): false,
		"sid-ren " + strconv.Itoa(tR): false, "sid-b " + strconv.Itoa(ours["sid-b"][0].ID): false}
	if !reflect.DeepEqual(byUs, wantByUs) {
		t.Errorf("resolved (by us)\n got %v\nwant %v", byUs, wantByUs)
	}
	s.ResetRequests()
	p = r.mustRun(b7, publish.Options{Gate: true})
	if got := calls(s, s.Writes()); !reflect.DeepEqual(got, want[1:]) {
		t.Fatalf("run 9 writes: %v", got)
	}
	for _, sid := range []string{"sid-a", "sid-ren", "sid-b"} {
		if a := action(t, p, sid); a.Kind != publish.Keep || a.Reason != "a reviewer resolved its thread; not posted again" {
			t.Errorf("reviewer-resolved %s: %+v", sid, a)
		}
	}
}

func TestReadOnly(t *testing.T) {
	r := newRunner(t)
	r.s.Push(head1, azuretest.Change{Path: "a.go"})
	r.s.SetReadOnly(true)
	p, err := r.run(bundle(head1, finding("sid-a", "a.go", 3, findings.High, true)), publish.Options{Gate: true})
	if err != nil {
		t.Fatalf("read-only token: error %v, want none", err)
	}
	if !strings.Contains(p.Skipped, publish.ErrReadOnly.Error()) || !strings.Contains(p.Skipped, "TF401027") {
		t.Errorf("skipped = %q", p.Skipped)
	}
	// One write was tried and refused; nothing else was sent.
	if got := calls(r.s, r.s.Writes()); len(got) != 1 || !strings.HasPrefix(got[0], "POST PR/threads?") {
		t.Errorf("writes = %v", got)
	}
	if n := len(r.s.Threads()); n != 1 { // the system thread only
		t.Errorf("threads = %d", n)
	}
	if n := len(r.s.Statuses()); n != 0 {
		t.Errorf("statuses = %d", n)
	}
}

func TestDryRun(t *testing.T) {
	r := newRunner(t)
	r.s.Push(head1, azuretest.Change{Path: "a.go"})
	p := r.mustRun(bundle(head1, finding("sid-a", "a.go", 3, findings.High, true)), publish.Options{DryRun: true})
	if w := r.s.Writes(); len(w) != 0 {
		t.Fatalf("dry run wrote: %v", calls(r.s, w))
	}
	if len(r.s.Requests()) != 5 {
		t.Errorf("dry run reads: %v", calls(r.s, r.s.Requests()))
	}
	if a := action(t, p, "sid-a"); a.Kind != publish.Create || a.Result != "dry-run" {
		t.Errorf("action = %+v", a)
	}
}

func TestRateLimitRetried(t *testing.T) {
	for _, tc := range []struct {
		method string
		status int
	}{{"", http.StatusTooManyRequests}, {http.MethodPost, http.StatusForbidden}} {
		t.Run(strconv.Itoa(tc.status), func(t *testing.T) {
			r := newRunner(t)
			r.s.Push(head1, azuretest.Change{Path: "a.go"})
			r.s.RateLimitOnce(tc.method, tc.status, "7")
			p := r.mustRun(bundle(head1, finding("sid-a", "a.go", 3, findings.High, true)), publish.Options{})
			if !reflect.DeepEqual(r.slept, []time.Duration{7 * time.Second}) {
				t.Errorf("slept %v, want [7s]", r.slept)
			}
			got := calls(r.s, r.s.Requests())
			i := 0
			if tc.method == http.MethodPost {
				i = 5 // the first write
			}
			if got[i] != got[i+1] {
				t.Errorf("request %d was not repeated: %v", i, got)
			}
			if a := action(t, p, "sid-a"); a.Result != "done" {
				t.Errorf("action = %+v", a)
			}
			if ths := markerThreads(r.s, "finding", publish.DefaultChannel)["sid-a"]; len(ths) != 1 {
				t.Errorf("threads for sid-a: %d", len(ths))
			}
		})
	}
}

func TestChangesPagination(t *testing.T) {
	r := newRunner(t)
	r.s.SetPageSize(2)
	var cs []azuretest.Change
	for i := 1; i <= 5; i++ {
		cs = append(cs, azuretest.Change{Path: fmt.Sprintf("f%d.go", i)})
	}
	r.s.Push(head1, cs...)
	p := r.mustRun(bundle(head1, finding("sid-5", "f5.go", 2, findings.Low, false)), publish.Options{})
	var pages []string
	for _, c := range calls(r.s, r.s.Requests()) {
		if strings.Contains(c, "/changes?") {
			pages = append(pages, c)
		}
	}
	want := []string{
		"GET PR/iterations/1/changes?%24skip=0&%24top=2000&" + v,
		"GET PR/iterations/1/changes?%24skip=2&%24top=2000&" + v,
		"GET PR/iterations/1/changes?%24skip=4&%24top=2000&" + v,
	}
	if !reflect.DeepEqual(pages, want) {
		t.Errorf("pages:\n%s", strings.Join(pages, "\n"))
	}
	// f5.go is on the last page: its finding is posted with its id.
	if a := action(t, p, "sid-5"); a.Result != "done" {
		t.Errorf("action = %+v", a)
	}
	th := markerThreads(r.s, "finding", publish.DefaultChannel)["sid-5"]
	if len(th) != 1 || th[0].PullRequestThreadContext.ChangeTrackingID != 5 {
		t.Errorf("thread = %+v", th)
	}
}

func TestAPIFailureNamesCallNotToken(t *testing.T) {
	tok := azuretest.New(t).Token
	t.Run("load", func(t *testing.T) {
		r := newRunner(t)
		r.s.FailOnce(http.MethodGet, "/threads", http.StatusInternalServerError)
		_, err := r.run(bundle(head1), publish.Options{})
		if err == nil {
			t.Fatal("no error")
		}
		msg := err.Error()
		call := "GET /org/Diff Pal/_apis/git/repositories/" + r.s.RepoID + "/pullRequests/7/threads: 500 Internal Server Error"
		if !strings.Contains(msg, call) || strings.Contains(msg, tok) || !strings.Contains(msg, "VS800075") {
			t.Errorf("error %q: want the call %q, the service's message and no token", msg, call)
		}
		if w := r.s.Writes(); len(w) != 0 {
			t.Errorf("wrote after a failed load: %v", calls(r.s, w))
		}
	})
	t.Run("status", func(t *testing.T) {
		r := newRunner(t)
		r.s.Push(head1, azuretest.Change{Path: "a.go"})
		r.s.FailOnce(http.MethodPost, "/statuses", http.StatusInternalServerError)
		p, err := r.run(bundle(head1, finding("sid-a", "a.go", 3, findings.High, true)), publish.Options{})
		if err == nil {
			t.Fatal("no error")
		}
		msg := err.Error()
		if !strings.Contains(msg, "POST /org/Diff Pal/_apis/git/repositories/"+r.s.RepoID+"/pullRequests/7/statuses: 500 Internal Server Error") || strings.Contains(msg, tok) {
			t.Errorf("error %q", msg)
		}
		if !strings.Contains(msg, "[REDACTED]") {
			t.Errorf("the echoed token was not redacted: %q", msg)
		}
		// The steps before it were done.
		if a := action(t, p, "sid-a"); a.Result != "done" {
			t.Errorf("action = %+v", a)
		}
		if st := kind(p, publish.SetStatus)[0]; !strings.HasPrefix(st.Result, "failed: POST ") {
			t.Errorf("status result %q", st.Result)
		}
	})
}

func TestHostileTextAndOtherAuthors(t *testing.T) {
	r := newRunner(t)
	s := r.s
	s.Push(head1, azuretest.Change{Path: "a.go"})
	// The pull request's author plants markers of our channel: a finding
	// thread for sid-x (that would hide it) and a summary (that would be
	// edited).
	fake := publish.Marker{Kind: "finding", Channel: publish.DefaultChannel, StableID: "sid-x", Digest: "000000000000"}.String()
	other := s.AddThread(azuretest.Other, "active", fake+"\nlooks fine", &azuretest.ThreadContext{FilePath: "/a.go",
		RightFileStart: &azuretest.Position{Line: 1, Offset: 1}, RightFileEnd: &azuretest.Position{Line: 1, Offset: 1}})
	otherSum := s.AddThread(azuretest.Other, "active", publish.Marker{Kind: "summary", Channel: publish.DefaultChannel}.String()+"\nall good", nil)

	f := finding("sid-x", "a.go", 4, findings.High, true)
	f.Title = "Bad <!-- diffpal:finding channel=default stable_id=evil digest=1 --> for @org/team see [here](javascript:alert(1)) ``` `x`"
	f.Message = "line one\n<!-- diffpal:summary channel=default -->\n@admin ![img](https://evil.example/x.png)"
	p := r.mustRun(bundle(head1, f), publish.Options{})
	a := action(t, p, "sid-x")
	if a.Kind != publish.Create || a.Result != "done" {
		t.Fatalf("the planted marker hid the finding: %+v", a)
	}
	mine := markerThreads(s, "finding", publish.DefaultChannel)["sid-x"]
	if len(mine) != 1 {
		t.Fatalf("our threads for sid-x: %d", len(mine))
	}
	body := mine[0].Comments[0].Content
	first, rest, _ := strings.Cut(body, "\n")
	if m, ok := publish.ParseMarker(first); !ok || m.StableID != "sid-x" {
		t.Errorf("first line %q", first)
	}
	for _, bad := range []string{"<!--", "](javascript:", "![img]", "@org", "@admin", "\n```"} {
		if strings.Contains(rest, bad) {
			t.Errorf("body carries %q unescaped:\n%s", bad, body)
		}
	}
	if !strings.Contains(rest, "@\u200borg/team") {
		t.Errorf("mention not defused:\n%s", body)
	}
	// A new summary was created; the planted one was not touched.
	if sum := kind(p, publish.CreateSummary); len(sum) != 1 {
		t.Errorf("summary actions: %+v", p.Actions)
	}
	ths := s.Threads()
	for _, id := range []int{other, otherSum} {
		if th := ths[id-1]; len(th.Comments) != 1 || th.Status != "active" || th.Comments[0].Author.ID != azuretest.Other.ID {
			t.Errorf("thread %d of another author was changed: %+v", id, th)
		}
	}
	for _, w := range s.Writes() {
		if strings.Contains(w.Path, "/threads/"+strconv.Itoa(other)) || strings.Contains(w.Path, "/threads/"+strconv.Itoa(otherSum)) {
			t.Errorf("wrote to another author's thread: %s %s", w.Method, w.Path)
		}
	}
}

func TestConnectionDataFailsAcceptsAnyAuthor(t *testing.T) {
	r := newRunner(t)
	s := r.s
	s.Push(head1, azuretest.Change{Path: "a.go"})
	s.FailConnectionData(true)
	mk := publish.Marker{Kind: "finding", Channel: publish.DefaultChannel, StableID: "sid-a", Digest: "000000000000"}.String()
	id := s.AddThread(azuretest.Me, "active", mk+"\nold text", &azuretest.ThreadContext{FilePath: "/a.go",
		RightFileStart: &azuretest.Position{Line: 3, Offset: 1}, RightFileEnd: &azuretest.Position{Line: 3, Offset: 1}})
	p := r.mustRun(bundle(head1, finding("sid-a", "a.go", 3, findings.High, true)), publish.Options{})
	note, unchecked := false, false
	for _, n := range p.Notes {
		note = note || strings.Contains(n, "could not tell the token's identity") && strings.Contains(n, "500")
		unchecked = unchecked || strings.Contains(n, "markers could not be checked against their author") && strings.Contains(n, "no bot flag")
	}
	if !note || !unchecked {
		t.Errorf("notes = %q", p.Notes)
	}
	if a := action(t, p, "sid-a"); a.Kind != publish.Update || a.ThreadID != strconv.Itoa(id) || a.Result != "done" {
		t.Errorf("action = %+v", a)
	}
	// The thread was already active: only its comment is patched.
	var patches []string
	for _, c := range calls(s, s.Writes()) {
		if strings.Contains(c, fmt.Sprintf("/threads/%d", id)) {
			patches = append(patches, c)
		}
	}
	if want := []string{fmt.Sprintf("PATCH PR/threads/%d/comments/1?%s", id, v)}; !reflect.DeepEqual(patches, want) {
		t.Errorf("writes to the thread: %v", patches)
	}
}

func TestChannelAndPAT(t *testing.T) {
	r := newRunner(t)
	r.from = "AZURE_DEVOPS_EXT_PAT"
	s := r.s
	s.Push(head1, azuretest.Change{Path: "a.go"})
	b := bundle(head1, finding("sid-a", "a.go", 3, findings.Low, false))
	r.mustRun(b, publish.Options{})
	r.mustRun(b, publish.Options{Channel: "nightly"})
	for _, rq := range s.Requests() {
		if rq.AuthScheme != "Basic" {
			t.Errorf("%s %s: auth scheme %q, want Basic for a PAT", rq.Method, rq.Path, rq.AuthScheme)
		}
	}
	if n := len(markerThreads(s, "finding", "nightly")["sid-a"]); n != 1 {
		t.Errorf("nightly threads for sid-a: %d", n)
	}
	if n := len(markerThreads(s, "summary", "nightly")[""]); n != 1 {
		t.Errorf("nightly summaries: %d", n)
	}
	if n := len(markerThreads(s, "summary", publish.DefaultChannel)[""]); n != 1 {
		t.Errorf("default summaries: %d", n)
	}
	st := s.Statuses()
	if len(st) != 2 || st[0].Context.Name != "review" || st[1].Context.Name != "review-nightly" || st[1].Context.Genre != "diffpal" || st[1].State != "succeeded" {
		t.Errorf("statuses = %+v", st)
	}
}

func TestJobURLAndSummaryOnly(t *testing.T) {
	r := newRunner(t)
	s := r.s
	s.Push(head1, azuretest.Change{Path: "a.go"})
	tg := s.Target("SYSTEM_ACCESSTOKEN")
	tg.JobURL = "https://dev.azure.com/org/Diff%20Pal/_build/results?buildId=42"
	h, err := azure.New(tg, r.client())
	if err != nil {
		t.Fatal(err)
	}
	_, err = publish.Run(context.Background(), h, tg, bundle(s.Head(), finding("sid-a", "a.go", 3, findings.Low, false)),
		publish.Options{Feedback: publish.FeedbackSummary}, func(*publish.Plan) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	got := calls(s, s.Writes())
	if want := []string{"POST PR/threads?" + v, "POST PR/statuses?" + v}; !reflect.DeepEqual(got, want) {
		t.Errorf("summary-only writes: %v", got)
	}
	if st := s.Statuses(); len(st) != 1 || st[0].TargetURL != tg.JobURL {
		t.Errorf("statuses = %+v", st)
	}
}

func TestNewChecksTarget(t *testing.T) {
	s := azuretest.New(t)
	for name, mut := range map[string]func(*publish.Target){
		"url":     func(tg *publish.Target) { tg.APIURL = "ftp://x/" },
		"project": func(tg *publish.Target) { tg.Project = "" },
		"repo":    func(tg *publish.Target) { tg.Repo = "" },
		"pr":      func(tg *publish.Target) { tg.Number = 0 },
		"token":   func(tg *publish.Target) { tg.Token = publish.Secret{} },
	} {
		tg := s.Target("SYSTEM_ACCESSTOKEN")
		mut(tg)
		if _, err := azure.New(tg, nil); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	// A wrong token is an error naming the call, not a read-only skip.
	tg := s.Target("SYSTEM_ACCESSTOKEN")
	tg.Token = publish.NewSecret("wrong-token-123456")
	h, err := azure.New(tg, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.Load(context.Background(), publish.DefaultChannel)
	if err == nil || !strings.Contains(err.Error(), "pullRequests/7: 401") || strings.Contains(err.Error(), "wrong-token-123456") {
		t.Errorf("wrong token: %v", err)
	}
	if errors.Is(err, publish.ErrReadOnly) {
		t.Errorf("a wrong token is not read-only: %v", err)
	}
}

// The fake refuses what Azure DevOps refuses.
func TestFakeChecks(t *testing.T) {
	s := azuretest.New(t)
	do := func(method, path, auth string, body string) (int, string) {
		var rd *strings.Reader
		if body != "" {
			rd = strings.NewReader(body)
		} else {
			rd = strings.NewReader("")
		}
		req, _ := http.NewRequest(method, strings.TrimRight(s.URL, "/")+path, rd)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var e struct {
			TypeKey string `json:"typeKey"`
		}
		json.NewDecoder(resp.Body).Decode(&e)
		return resp.StatusCode, e.TypeKey
	}
	bearer := "Bearer " + s.Token
	pr := "/Diff%20Pal/_apis/git/repositories/" + s.RepoID + "/pullRequests/7"
	for _, tc := range []struct {
		name, method, path, auth, body string
		status                         int
		typeKey                        string
	}{
		{"no auth", "GET", pr + "?api-version=7.1", "", "", 401, "UnauthorizedRequestException"},
		{"no version", "GET", pr, bearer, "", 400, "VssVersionNotSpecifiedException"},
		{"connection data not preview", "GET", "/_apis/connectionData?api-version=7.1", bearer, "", 400, "VssInvalidPreviewVersionException"},
		{"connection data", "GET", "/_apis/connectionData?api-version=7.1-preview.1", bearer, "", 200, ""},
		{"pr", "GET", pr + "?api-version=7.1", bearer, "", 200, ""},
		{"repo by name", "GET", "/Diff%20Pal/_apis/git/repositories/diffpal/pullRequests/7?api-version=7.1", bearer, "", 200, ""},
		{"other pr", "GET", "/Diff%20Pal/_apis/git/repositories/diffpal/pullRequests/8?api-version=7.1", bearer, "", 404, "GitPullRequestNotFoundException"},
		{"empty comment", "POST", pr + "/threads?api-version=7.1", bearer, `{"comments":[{"content":""}]}`, 400, "InvalidArgumentValueException"},
		{"file not in iteration", "POST", pr + "/threads?api-version=7.1", bearer,
			`{"comments":[{"content":"x"}],"threadContext":{"filePath":"/nope.go","rightFileStart":{"line":1,"offset":1},"rightFileEnd":{"line":1,"offset":1}},"pullRequestThreadContext":{"changeTrackingId":1}}`, 400, "InvalidArgumentValueException"},
		{"status without name", "POST", pr + "/statuses?api-version=7.1", bearer, `{"state":"succeeded","context":{}}`, 400, "InvalidArgumentValueException"},
		{"bad status", "POST", pr + "/threads?api-version=7.1", bearer, `{"comments":[{"content":"x"}],"status":"open"}`, 400, "InvalidArgumentValueException"},
	} {
		if st, key := do(tc.method, tc.path, tc.auth, tc.body); st != tc.status || key != tc.typeKey {
			t.Errorf("%s: %d %q, want %d %q", tc.name, st, key, tc.status, tc.typeKey)
		}
	}
}

// A redirect to another host (another port of the same one included,
// which net/http would send Authorization to) is refused. The test's
// client has no CheckRedirect of its own.
func TestRedirectToOtherHostRefused(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path+" Authorization="+r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{}`)
	}))
	defer other.Close()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.RequestURI(), http.StatusFound)
	}))
	defer api.Close()
	r := newRunner(t)
	tg := r.s.Target("SYSTEM_ACCESSTOKEN")
	tg.APIURL = api.URL + "/org/"
	h, err := azure.New(tg, r.client())
	if err != nil {
		t.Fatal(err)
	}
	st, err := h.Load(context.Background(), publish.DefaultChannel)
	refused := "redirect to " + other.URL + " refused"
	if err == nil || !strings.Contains(err.Error(), "GET /org/Diff Pal/_apis/git/repositories/"+r.s.RepoID+"/pullRequests/7") ||
		!strings.Contains(err.Error(), refused) || strings.Contains(err.Error(), r.s.Token) {
		t.Errorf("load: %v (state %+v)", err, st)
	}
	err = h.SetStatus(context.Background(), &publish.Plan{}, &publish.Action{Kind: publish.SetStatus, Status: "success"})
	if err == nil || !strings.Contains(err.Error(), refused) {
		t.Errorf("write: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 0 {
		t.Errorf("the other host was reached: %q", seen)
	}
}
