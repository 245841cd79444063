package gitlab_test

import (
	"context"
	"crypto/sha1"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/publish"
	"github.com/diffpalhq/diffpal/internal/publish/gitlab"
	"github.com/diffpalhq/diffpal/internal/publish/gitlab/gitlabtest"
)

var (
	baseSHA = strings.Repeat("b", 40)
	headSHA = strings.Repeat("a", 40)
	head2   = strings.Repeat("c", 40)
)

const api = "/api/v4/projects/42/merge_requests/7"

// mainDiff: new 3,4 added (old 3 removed); context new 1↔1, 2↔2, 5↔4,
// 6↔5; second hunk: new 21↔20 context, 22 added, 23↔21, 24↔22.
const mainDiff = "@@ -1,5 +1,6 @@\n package main\n \n-import \"old\"\n+import \"fmt\"\n+import \"os\"\n \n func main() {\n" +
	"@@ -20,3 +21,4 @@ func main() {\n \ta()\n+\tb()\n \tc()\n \td()\n"

func finding(sid string, line, end int, title string) findings.Finding {
	return findings.Finding{ID: "id-" + sid, StableID: sid, RuleID: "rule." + sid, Category: "correctness", Severity: findings.Medium,
		Path: "app/main.go", StartLine: line, EndLine: end, Title: title, Message: "message of " + sid}
}

func bundle(fs ...findings.Finding) *findings.Bundle {
	return &findings.Bundle{Version: findings.V3, ReviewID: "r1", BaseSHA: baseSHA, HeadSHA: headSHA, Findings: fs}
}

func baseFindings() []findings.Finding {
	added := finding("sid-added", 3, 3, "Added import")
	added.Severity, added.Blocking = findings.High, true
	ctx := finding("sid-context", 6, 6, "Context line")
	left := finding("sid-left", 3, 3, "Removed import was needed")
	left.ChangedSpan = &findings.Span{Path: "app/main.go", StartLine: 3, EndLine: 3, Side: "LEFT"}
	outside := finding("sid-outside", 50, 50, "Far away")
	rng := finding("sid-range", 21, 22, "Range")
	return []findings.Finding{added, ctx, left, outside, rng}
}

type env struct {
	t      *testing.T
	srv    *gitlabtest.Server
	target *publish.Target
	sleeps []time.Duration
	plans  []*publish.Plan
}

func newEnv(t *testing.T) *env {
	t.Helper()
	srv := gitlabtest.New(t)
	srv.SetVersion(baseSHA, headSHA, gitlabtest.File{Path: "app/main.go", Diff: mainDiff})
	return &env{t: t, srv: srv, target: &publish.Target{Host: publish.GitLab, APIURL: srv.APIURL(), ServerURL: "https://gitlab.example/group/project",
		Token: publish.NewSecret(gitlabtest.Token), TokenFrom: "GITLAB_TOKEN", Repo: gitlabtest.Project, Number: gitlabtest.MRIID,
		BaseSHA: baseSHA, HeadSHA: headSHA, SourceBranch: "feature", JobURL: "https://gitlab.example/group/project/-/jobs/9"}}
}

func (e *env) host() *gitlab.Host {
	e.t.Helper()
	hc := &http.Client{Transport: &publish.Transport{Sleep: func(_ context.Context, d time.Duration) error {
		e.sleeps = append(e.sleeps, d)
		return nil
	}}}
	h, err := gitlab.New(e.target, hc)
	if err != nil {
		e.t.Fatal(err)
	}
	return h
}

func (e *env) run(b *findings.Bundle, o publish.Options) (*publish.Plan, error) {
	e.t.Helper()
	o.Gate = true
	return publish.Run(context.Background(), e.host(), e.target, b, o, func(p *publish.Plan) error {
		e.plans = append(e.plans, p)
		return nil
	})
}

func (e *env) mustRun(b *findings.Bundle, o publish.Options) *publish.Plan {
	e.t.Helper()
	e.srv.ResetRequests()
	p, err := e.run(b, o)
	if err != nil {
		e.t.Fatalf("run: %v", err)
	}
	return p
}

// ours maps stable id → discussion for the finding discussions of channel.
func (e *env) ours(channel string) map[string]gitlabtest.Discussion {
	out := map[string]gitlabtest.Discussion{}
	for _, d := range e.srv.Discussions() {
		m, ok := publish.ParseMarker(d.Notes[0].Body)
		if ok && m.Kind == "finding" && m.Channel == channel && d.Notes[0].AuthorID == gitlabtest.BotID {
			if _, dup := out[m.StableID]; dup {
				e.t.Fatalf("two discussions for %s", m.StableID)
			}
			out[m.StableID] = d
		}
	}
	return out
}

// all maps stable id → every finding discussion of channel by the bot,
// oldest first.
func (e *env) all(channel string) map[string][]gitlabtest.Discussion {
	out := map[string][]gitlabtest.Discussion{}
	for _, d := range e.srv.Discussions() {
		m, ok := publish.ParseMarker(d.Notes[0].Body)
		if ok && m.Kind == "finding" && m.Channel == channel && d.Notes[0].AuthorID == gitlabtest.BotID {
			out[m.StableID] = append(out[m.StableID], d)
		}
	}
	return out
}

type call struct{ Method, Path string }

func calls(rs []gitlabtest.Request) []call {
	var out []call
	for _, r := range rs {
		out = append(out, call{r.Method, r.Path})
	}
	return out
}

func body(t *testing.T, r gitlabtest.Request) map[string]any {
	t.Helper()
	m, ok := r.Body.(map[string]any)
	if !ok {
		t.Fatalf("%s %s: body %#v", r.Method, r.Path, r.Body)
	}
	return m
}

func num(n int) any { return float64(n) }

func kinds(p *publish.Plan) map[string]string {
	out := map[string]string{}
	for _, a := range p.Actions {
		if a.StableID != "" {
			out[a.StableID] = a.Kind
		}
	}
	return out
}

func TestLifecycle(t *testing.T) {
	e := newEnv(t)
	fs := baseFindings()

	// Run 1: reads, then posts every placeable finding, the summary, the status.
	p := e.mustRun(bundle(fs...), publish.Options{})
	reqs := e.srv.Requests()
	for _, r := range reqs {
		if r.Auth != "PRIVATE-TOKEN" {
			t.Errorf("%s %s: auth %q", r.Method, r.Path, r.Auth)
		}
	}
	want := []call{
		{"GET", "/api/v4/user"},
		{"GET", "/api/v4/personal_access_tokens/self"},
		{"GET", api + "/discussions"},
		{"GET", api + "/versions"},
		{"GET", api + "/versions/1"},
		{"POST", api + "/discussions"}, // sid-added
		{"POST", api + "/discussions"}, // sid-context
		{"POST", api + "/discussions"}, // sid-left
		{"POST", api + "/discussions"}, // sid-range
		{"POST", api + "/notes"},       // summary
		{"POST", "/api/v4/projects/42/statuses/" + headSHA},
	}
	if got := calls(reqs); !reflect.DeepEqual(got, want) {
		t.Fatalf("requests:\n got %v\nwant %v", got, want)
	}
	if q := reqs[2].Query; q.Get("per_page") != "100" || q.Get("page") != "1" {
		t.Errorf("discussions query %v", q)
	}
	if k := kinds(p); k["sid-outside"] != publish.SummaryOnly || k["sid-added"] != publish.Create {
		t.Errorf("kinds %v", k)
	}
	pos := func(i int) map[string]any { return body(t, reqs[i])["position"].(map[string]any) }
	common := map[string]any{"position_type": "text", "base_sha": baseSHA, "start_sha": baseSHA, "head_sha": headSHA, "old_path": "app/main.go", "new_path": "app/main.go"}
	with := func(kv ...any) map[string]any {
		m := map[string]any{}
		for k, v := range common {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	// An added line: new_line only.
	if got := pos(5); !reflect.DeepEqual(got, with("new_line", num(3))) {
		t.Errorf("added position %v", got)
	}
	// A context line on the new side: old_line and new_line.
	if got := pos(6); !reflect.DeepEqual(got, with("new_line", num(6), "old_line", num(5))) {
		t.Errorf("context position %v", got)
	}
	// A removed line: old_line only, on the base side.
	if got := pos(7); !reflect.DeepEqual(got, with("old_line", num(3))) {
		t.Errorf("removed position %v", got)
	}
	// A range: the last line, and line_range with GitLab's line codes.
	code := fmt.Sprintf("%x", sha1.Sum([]byte("app/main.go")))
	wantRange := with("new_line", num(22), "line_range", map[string]any{
		"start": map[string]any{"line_code": code + "_20_21", "type": "old", "old_line": num(20), "new_line": num(21)},
		"end":   map[string]any{"line_code": code + "_21_22", "type": "new", "new_line": num(22)},
	})
	if got := pos(8); !reflect.DeepEqual(got, wantRange) {
		t.Errorf("range position\n got %v\nwant %v", got, wantRange)
	}
	for i := 5; i <= 8; i++ {
		b := body(t, reqs[i])
		if len(b) != 2 || !strings.HasPrefix(b["body"].(string), "<!-- diffpal:finding channel=default stable_id=") {
			t.Errorf("discussion body %v", b)
		}
	}
	if got := body(t, reqs[9]); len(got) != 1 || !strings.HasPrefix(got["body"].(string), "<!-- diffpal:summary channel=default -->") ||
		!strings.Contains(got["body"].(string), "Far away") {
		t.Errorf("summary body %v", got)
	}
	wantStatus := map[string]any{"state": "failed", "name": "diffpal/review", "description": "1 blocking findings",
		"target_url": "https://gitlab.example/group/project/-/jobs/9", "ref": "feature"}
	if got := body(t, reqs[10]); !reflect.DeepEqual(got, wantStatus) {
		t.Errorf("status body %v", got)
	}
	for _, a := range p.Actions {
		if a.Kind == publish.Create && (a.Result != "done" || a.ThreadID == "" || a.CommentID == "") {
			t.Errorf("create %s: result %q thread %q comment %q", a.StableID, a.Result, a.ThreadID, a.CommentID)
		}
	}
	ours := e.ours("default")
	if len(ours) != 4 {
		t.Fatalf("%d finding discussions, want 4", len(ours))
	}
	summaries := func() []gitlabtest.Note { return e.srv.NotesWithPrefix("<!-- diffpal:summary channel=default") }
	if n := summaries(); len(n) != 1 {
		t.Fatalf("%d summaries", len(n))
	}
	summaryID := summaries()[0].ID

	// Run 2, same bundle: nothing posted; the summary edited in place.
	e.mustRun(bundle(fs...), publish.Options{})
	sumPath := fmt.Sprintf("%s/notes/%d", api, summaryID)
	wantWrites := []call{{"PUT", sumPath}, {"POST", "/api/v4/projects/42/statuses/" + headSHA}}
	if got := calls(e.srv.Writes()); !reflect.DeepEqual(got, wantWrites) {
		t.Fatalf("run 2 writes %v", got)
	}

	// Run 3: a finding's text changed → its note edited.
	fs[0].Message = "a new explanation"
	p = e.mustRun(bundle(fs...), publish.Options{})
	d := ours["sid-added"]
	notePath := fmt.Sprintf("%s/discussions/%s/notes/%d", api, d.ID, d.Notes[0].ID)
	writes := e.srv.Writes()
	if got := calls(writes); !reflect.DeepEqual(got, append([]call{{"PUT", notePath}}, wantWrites...)) {
		t.Fatalf("run 3 writes %v", got)
	}
	if b := body(t, writes[0]); len(b) != 1 || !strings.Contains(b["body"].(string), "a new explanation") {
		t.Errorf("update body %v", b)
	}
	if kinds(p)["sid-added"] != publish.Update {
		t.Errorf("kinds %v", kinds(p))
	}

	// Run 4: sid-context is gone → reply and resolve; sid-added moved to
	// line 4 (same stable id) → its thread kept, no new discussion; the
	// bundle is of a new head. The permalink in the footer follows the
	// head, but the digest covers only what the finding says, so no kept
	// comment is edited.
	e.srv.SetVersion(baseSHA, head2, gitlabtest.File{Path: "app/main.go", Diff: mainDiff})
	e.target.HeadSHA = head2
	fs[0].StartLine, fs[0].EndLine = 4, 4
	fs = append(fs[:1], fs[2:]...)
	b4 := bundle(fs...)
	b4.HeadSHA = head2
	p = e.mustRun(b4, publish.Options{})
	dc := ours["sid-context"]
	writes = e.srv.Writes()
	want = []call{
		{"POST", fmt.Sprintf("%s/discussions/%s/notes", api, dc.ID)},
		{"PUT", fmt.Sprintf("%s/discussions/%s", api, dc.ID)},
		{"PUT", sumPath},
		{"POST", "/api/v4/projects/42/statuses/" + head2},
	}
	if got := calls(writes); !reflect.DeepEqual(got, want) {
		t.Fatalf("run 4 writes\n got %v\nwant %v", got, want)
	}
	if b := body(t, writes[0]); b["body"] != publish.ResolveBody("default", "sid-context", head2) {
		t.Errorf("resolve reply %v", b)
	}
	if b := body(t, writes[1]); !reflect.DeepEqual(b, map[string]any{"resolved": true}) {
		t.Errorf("resolve body %v", b)
	}
	if k := kinds(p); k["sid-added"] != publish.Keep || k["sid-left"] != publish.Keep || k["sid-context"] != publish.Resolve {
		t.Errorf("kinds %v", k)
	}
	for _, a := range p.Actions {
		if a.StableID == "sid-added" && a.ThreadID != d.ID {
			t.Errorf("moved finding thread %q, want %q", a.ThreadID, d.ID)
		}
	}
	if got := e.ours("default")["sid-context"]; !got.Notes[0].Resolved || len(got.Notes) != 2 {
		t.Errorf("resolved discussion %+v", got.Notes[0])
	}

	// Three more runs: no duplicates, no writes but summary and status.
	for i := 0; i < 3; i++ {
		e.mustRun(b4, publish.Options{})
		if got := calls(e.srv.Writes()); !reflect.DeepEqual(got, []call{{"PUT", sumPath}, {"POST", "/api/v4/projects/42/statuses/" + head2}}) {
			t.Fatalf("rerun %d writes %v", i, got)
		}
	}
	if n := len(e.ours("default")); n != 4 {
		t.Errorf("%d finding discussions after reruns, want 4", n)
	}
	if n := summaries(); len(n) != 1 || n[0].ID != summaryID {
		t.Errorf("summaries %v", n)
	}
	if st := e.srv.Statuses(); len(st) != 7 || st[len(st)-1].SHA != head2 {
		t.Errorf("statuses %v", st)
	}

	// Run 8: sid-context, resolved as fixed by diffpal in run 4, is back
	// (a push changed its line meanwhile: GitLab's system note comes
	// after diffpal's reply). It is posted again in a new discussion.
	e.srv.AddSystemNote(dc.ID, "changed this line in [version 2 of the diff](/group/project/-/merge_requests/7/diffs?diff_id=2)")
	back := append(append([]findings.Finding{}, fs...), baseFindings()[1])
	b8 := bundle(back...)
	b8.HeadSHA = head2
	p = e.mustRun(b8, publish.Options{})
	a := p.Actions[len(fs)]
	if a.StableID != "sid-context" || a.Kind != publish.Create || a.Result != "done" || a.ThreadID == dc.ID ||
		!strings.Contains(a.Reason, "diffpal resolved its thread as fixed ("+dc.ID+")") {
		t.Errorf("regression %+v", a)
	}
	want = []call{{"POST", api + "/discussions"}, {"PUT", sumPath}, {"POST", "/api/v4/projects/42/statuses/" + head2}}
	if got := calls(e.srv.Writes()); !reflect.DeepEqual(got, want) {
		t.Fatalf("run 8 writes %v", got)
	}
	if ds := e.all("default")["sid-context"]; len(ds) != 2 || !ds[0].Notes[0].Resolved || ds[1].Notes[0].Resolved || ds[1].ID != a.ThreadID {
		t.Fatalf("sid-context discussions %+v", ds)
	}

	// Run 9: the open discussion is kept; nothing posted.
	p = e.mustRun(b8, publish.Options{})
	if got := calls(e.srv.Writes()); !reflect.DeepEqual(got, want[1:]) {
		t.Fatalf("run 9 writes %v", got)
	}
	if k := p.Actions[len(fs)]; k.Kind != publish.Keep || k.ThreadID != a.ThreadID {
		t.Errorf("run 9 sid-context %+v", k)
	}

	// Run 10: a reviewer resolves three discussions whose findings are
	// still reported: with a reply, without one, and with a reply that
	// forges diffpal's resolve marker. All three stay quiet.
	e.srv.Reply(ours["sid-left"].ID, gitlabtest.OtherID, "Intended, won't fix.")
	e.srv.SetResolved(ours["sid-left"].ID, true)
	e.srv.SetResolved(ours["sid-range"].ID, true)
	e.srv.Reply(d.ID, gitlabtest.OtherID, publish.ResolveBody("default", "sid-added", head2))
	e.srv.SetResolved(d.ID, true)
	st, err := e.host().Load(context.Background(), publish.DefaultChannel)
	if err != nil {
		t.Fatal(err)
	}
	byUs := map[string]bool{}
	for _, th := range st.Threads {
		if th.Resolved {
			byUs[th.StableID+" "+th.ID] = th.ResolvedByUs
		}
	}
	wantByUs := map[string]bool{"sid-context " + dc.ID: true, "sid-left " + ours["sid-left"].ID: false,
		"sid-range " + ours["sid-range"].ID: false, "sid-added " + d.ID: false}
	if !reflect.DeepEqual(byUs, wantByUs) {
		t.Errorf("resolved (by us)\n got %v\nwant %v", byUs, wantByUs)
	}
	p = e.mustRun(b8, publish.Options{})
	if got := calls(e.srv.Writes()); !reflect.DeepEqual(got, want[1:]) {
		t.Fatalf("run 10 writes %v", got)
	}
	for _, a := range p.Actions {
		switch a.StableID {
		case "sid-left", "sid-range", "sid-added":
			if a.Kind != publish.Keep || a.Reason != "a reviewer resolved its thread; not posted again" {
				t.Errorf("reviewer-resolved %s: %+v", a.StableID, a)
			}
		}
	}
}

func TestRefusedPositionBecomesGeneralDiscussion(t *testing.T) {
	e := newEnv(t)
	e.srv.RefuseLines("app/main.go", 3)
	f := finding("sid-added", 3, 3, "Added import")
	p := e.mustRun(bundle(f), publish.Options{})
	writes := e.srv.Writes()
	if got := calls(writes)[:2]; !reflect.DeepEqual(got, []call{{"POST", api + "/discussions"}, {"POST", api + "/discussions"}}) {
		t.Fatalf("writes %v", got)
	}
	if _, ok := body(t, writes[0])["position"]; !ok {
		t.Error("first attempt has no position")
	}
	gen := body(t, writes[1])
	if _, ok := gen["position"]; ok {
		t.Error("fallback has a position")
	}
	text := gen["body"].(string)
	lines := strings.SplitN(text, "\n", 3)
	if !strings.HasPrefix(lines[0], "<!-- diffpal:finding channel=default stable_id=sid-added ") || !strings.Contains(lines[1], "`app/main.go:3`") {
		t.Errorf("general body %q", text)
	}
	a := p.Actions[0]
	if a.Kind != publish.Create || a.IsMoved() || !strings.HasPrefix(a.Result, "done: posted as a general discussion") || a.ThreadID == "" {
		t.Errorf("action %+v", a)
	}
	// Next run keeps it; a text change updates it with its location kept.
	f.Message = "changed"
	e.mustRun(bundle(f), publish.Options{})
	w := e.srv.Writes()
	if !strings.Contains(w[0].Path, "/discussions/"+a.ThreadID+"/notes/") {
		t.Fatalf("writes %v", calls(w))
	}
	if b := body(t, w[0])["body"].(string); !strings.Contains(b, "`app/main.go:3`") || !strings.Contains(b, "changed") {
		t.Errorf("update body %q", b)
	}
	if n := len(e.ours("default")); n != 1 {
		t.Errorf("%d discussions", n)
	}
}

func TestRefusedTwiceMovesToSummary(t *testing.T) {
	e := newEnv(t)
	lc := `{"message":"400 Bad request - Note {:line_code=>[\"can't be blank\", \"must be a valid line code\"]}"}`
	e.srv.Inject(gitlabtest.Fault{Method: "POST", PathSuffix: "/discussions", Status: 400, Body: lc})
	e.srv.Inject(gitlabtest.Fault{Method: "POST", PathSuffix: "/discussions", Status: 400, Body: lc})
	p := e.mustRun(bundle(finding("sid-added", 3, 3, "Placed nowhere")), publish.Options{})
	if a := p.Actions[0]; !a.IsMoved() {
		t.Fatalf("action %+v", a)
	}
	sum := e.srv.NotesWithPrefix("<!-- diffpal:summary")
	if len(sum) != 1 || !strings.Contains(sum[0].Body, "Placed nowhere") {
		t.Errorf("summary %v", sum)
	}
	if n := len(e.ours("default")); n != 0 {
		t.Errorf("%d discussions", n)
	}
}

func TestOutsideDiffGoesToSummary(t *testing.T) {
	e := newEnv(t)
	other := finding("other-file", 1, 1, "x")
	other.Path = "other.go"
	p := e.mustRun(bundle(finding("sid-outside", 50, 50, "Far away"), other), publish.Options{})
	for _, a := range p.Actions[:2] {
		if a.Kind != publish.SummaryOnly {
			t.Errorf("%s: %s", a.StableID, a.Kind)
		}
	}
	for _, r := range e.srv.Writes() {
		if strings.HasSuffix(r.Path, "/discussions") {
			t.Errorf("posted %v", r)
		}
	}
}

func TestRateLimitRetried(t *testing.T) {
	e := newEnv(t)
	e.srv.Inject(gitlabtest.Fault{Method: "POST", PathSuffix: "/discussions", Status: http.StatusTooManyRequests, Body: `{"message":"Retry later"}`,
		Header: http.Header{"Retry-After": {"7"}}})
	e.srv.RateLimitOnce(3) // the very next request: GET /user
	e.mustRun(bundle(finding("sid-added", 3, 3, "x")), publish.Options{})
	if !reflect.DeepEqual(e.sleeps, []time.Duration{3 * time.Second, 7 * time.Second}) {
		t.Errorf("sleeps %v", e.sleeps)
	}
	var posts []gitlabtest.Request
	for _, r := range e.srv.Requests() {
		if r.Method == "POST" && r.Path == api+"/discussions" {
			posts = append(posts, r)
		}
	}
	if len(posts) != 2 || !reflect.DeepEqual(posts[0].Body, posts[1].Body) {
		t.Fatalf("posts %v", posts)
	}
	if n := len(e.ours("default")); n != 1 {
		t.Errorf("%d discussions", n)
	}
}

func TestReadOnlyToken(t *testing.T) {
	e := newEnv(t)
	e.srv.SetReadOnly(true)
	p, err := e.run(bundle(baseFindings()...), publish.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Skipped, "api scope") || p.Actions[0].Kind != publish.Skip {
		t.Errorf("skipped %q actions %v", p.Skipped, p.Actions)
	}
	if w := e.srv.Writes(); len(w) != 0 {
		t.Errorf("writes %v", calls(w))
	}
}

// CI_JOB_TOKEN cannot read or write merge request discussions, notes or
// commit statuses: the run is skipped (exit 0, not 4) and says to set
// GITLAB_TOKEN.
func TestJobTokenSkips(t *testing.T) {
	// loadRefused: Load failed, so the plan is the one Skip action; a
	// refused write keeps the plan, its Skipped says why.
	check := func(t *testing.T, e *env, p *publish.Plan, err error, loadRefused bool, wantCalls []call) {
		t.Helper()
		if err != nil {
			t.Fatalf("a job token is a skip, not a failure: %v", err)
		}
		for _, want := range []string{publish.ErrReadOnly.Error(), "CI_JOB_TOKEN cannot", "set GITLAB_TOKEN", "project access token with the api scope",
			"Developer role", "401 Unauthorized"} {
			if !strings.Contains(p.Skipped, want) {
				t.Errorf("skipped %q: no %q", p.Skipped, want)
			}
		}
		if loadRefused && (len(p.Actions) != 1 || p.Actions[0].Kind != publish.Skip) {
			t.Errorf("actions %+v", p.Actions)
		}
		reqs := e.srv.Requests()
		if got := calls(reqs); !reflect.DeepEqual(got, wantCalls) {
			t.Errorf("requests\n got %v\nwant %v", got, wantCalls)
		}
		for _, r := range reqs {
			if r.Auth != "JOB-TOKEN" {
				t.Errorf("%s %s auth %q", r.Method, r.Path, r.Auth)
			}
		}
		if n := len(e.srv.Discussions()) + len(e.srv.Statuses()); n != 0 {
			t.Errorf("%d discussions and statuses", n)
		}
	}
	t.Run("read refused", func(t *testing.T) {
		e := newEnv(t)
		e.target.Token, e.target.TokenFrom = publish.NewSecret(gitlabtest.JobToken), "CI_JOB_TOKEN"
		p, err := e.run(bundle(baseFindings()...), publish.Options{})
		check(t, e, p, err, true, []call{{"GET", "/api/v4/user"}, {"GET", api + "/discussions"}})
	})
	// A GitLab that lets the read through (a public project read
	// anonymously) still refuses the first write.
	t.Run("write refused", func(t *testing.T) {
		e := newEnv(t)
		e.target.Token, e.target.TokenFrom = publish.NewSecret(gitlabtest.JobToken), "CI_JOB_TOKEN"
		e.srv.Inject(gitlabtest.Fault{Method: "GET", PathSuffix: "/discussions", Status: 200, Body: `[]`})
		p, err := e.run(bundle(baseFindings()...), publish.Options{})
		check(t, e, p, err, false, []call{{"GET", "/api/v4/user"}, {"GET", api + "/discussions"}, {"GET", api + "/versions"},
			{"GET", api + "/versions/1"}, {"POST", api + "/discussions"}})
	})
}

func TestDryRun(t *testing.T) {
	e := newEnv(t)
	e.mustRun(bundle(baseFindings()...), publish.Options{}) // something to reconcile against
	e.srv.ResetRequests()
	fs := baseFindings()[1:]
	fs[0].Message = "changed"
	p, err := e.run(bundle(fs...), publish.Options{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if w := e.srv.Writes(); len(w) != 0 {
		t.Errorf("dry run wrote %v", calls(w))
	}
	if len(e.srv.Requests()) == 0 {
		t.Error("dry run did not read")
	}
	if p.Count(publish.Resolve) != 1 || p.Count(publish.Update) != 1 || p.Count(publish.UpdateSummary) != 1 {
		t.Errorf("plan %+v", p.Actions)
	}
}

func TestPagination(t *testing.T) {
	for _, linkOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("linkOnly=%v", linkOnly), func(t *testing.T) {
			e := newEnv(t)
			e.mustRun(bundle(baseFindings()...), publish.Options{})
			for i := 0; i < 23; i++ {
				e.srv.Seed(gitlabtest.OtherID, fmt.Sprintf("reviewer comment %d", i), nil)
			}
			e.srv.SetPageSize(10)
			e.srv.SetLinkOnly(linkOnly)
			e.mustRun(bundle(baseFindings()...), publish.Options{})
			var pages []string
			for _, r := range e.srv.Requests() {
				if r.Method == "GET" && r.Path == api+"/discussions" {
					pages = append(pages, r.Query.Get("page"))
				}
			}
			// 5 of ours (4 findings + summary) + 23 = 28 → 3 pages.
			if !reflect.DeepEqual(pages, []string{"1", "2", "3"}) {
				t.Errorf("pages %v", pages)
			}
			if got := calls(e.srv.Writes()); len(got) != 2 {
				t.Errorf("writes %v (a finding on page 1 was missed?)", got)
			}
		})
	}
}

func TestPaginationLinkToOtherHostRefused(t *testing.T) {
	e := newEnv(t)
	e.srv.Inject(gitlabtest.Fault{Method: "GET", PathSuffix: "/discussions", Status: 200, Body: `[]`,
		Header: http.Header{"Link": {`<https://evil.example/api/v4/x?page=2>; rel="next"`}}})
	_, err := e.run(bundle(baseFindings()...), publish.Options{})
	if err == nil || !strings.Contains(err.Error(), "evil.example") {
		t.Fatalf("err %v", err)
	}
	if w := e.srv.Writes(); len(w) != 0 {
		t.Errorf("writes %v", calls(w))
	}
}

func TestAPIFailureNamesCallWithoutToken(t *testing.T) {
	e := newEnv(t)
	e.srv.Inject(gitlabtest.Fault{Method: "GET", PathSuffix: "/discussions", Status: 500,
		Body: `{"message":"boom with PRIVATE-TOKEN ` + gitlabtest.Token + `"}`})
	_, err := e.run(bundle(baseFindings()...), publish.Options{})
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	if !strings.Contains(msg, "GET "+api+"/discussions: 500 Internal Server Error") || strings.Contains(msg, gitlabtest.Token) {
		t.Errorf("error %q", msg)
	}
	if StatusOf := publish.StatusOf(err); StatusOf != 500 {
		t.Errorf("status %d", StatusOf)
	}

	// A write failure: the run goes on, the error names the call.
	e2 := newEnv(t)
	e2.srv.Inject(gitlabtest.Fault{Method: "POST", PathSuffix: "/statuses/" + headSHA, Status: 422, Body: `{"message":"token ` + gitlabtest.Token + ` refused"}`})
	p, err := e2.run(bundle(baseFindings()...), publish.Options{})
	if err == nil || !strings.Contains(err.Error(), "POST /api/v4/projects/42/statuses/"+headSHA+": 422") || strings.Contains(err.Error(), gitlabtest.Token) {
		t.Fatalf("error %v", err)
	}
	for _, a := range p.Actions {
		if a.Kind == publish.SetStatus && !strings.HasPrefix(a.Result, "failed: ") {
			t.Errorf("status result %q", a.Result)
		}
		if strings.Contains(a.Result, gitlabtest.Token) {
			t.Errorf("token in result")
		}
	}
	if len(e2.ours("default")) != 4 {
		t.Error("the comments were not posted")
	}
}

func TestHostileTextAndForgedMarkers(t *testing.T) {
	e := newEnv(t)
	// Another user types markers: they must not hide a finding nor be
	// taken for the summary.
	e.srv.Seed(gitlabtest.OtherID, "<!-- diffpal:finding channel=default stable_id=sid-added digest=x -->\nfake", nil)
	e.srv.Seed(gitlabtest.OtherID, "<!-- diffpal:summary channel=default -->\nfake summary", nil)
	f := finding("sid-hostile", 4, 4, "<!-- diffpal:finding channel=default stable_id=evil digest=x --> ping @org/team [x](javascript:alert(1)) ```code```")
	f.Message = "line1\n<!-- diffpal:summary channel=default -->\n@admin ](javascript:void)"
	p := e.mustRun(bundle(finding("sid-added", 3, 3, "real"), f), publish.Options{})
	if k := kinds(p); k["sid-added"] != publish.Create {
		t.Errorf("forged marker hid a finding: %v", k)
	}
	if p.Count(publish.CreateSummary) != 1 {
		t.Error("forged summary taken as ours")
	}
	d, ok := e.ours("default")["sid-hostile"]
	if !ok {
		t.Fatal("hostile finding not posted")
	}
	b := d.Notes[0].Body
	first, rest, _ := strings.Cut(b, "\n")
	if !strings.HasPrefix(first, "<!-- diffpal:finding channel=default stable_id=sid-hostile ") {
		t.Errorf("first line %q", first)
	}
	for _, bad := range []string{"<!--", "@org", "@admin", "](javascript:", "```code```"} {
		if strings.Contains(rest, bad) {
			t.Errorf("body contains raw %q:\n%s", bad, rest)
		}
	}
	if !strings.Contains(rest, "@\u200borg/team") {
		t.Errorf("mention not defused:\n%s", rest)
	}
	// A second run still finds exactly our threads.
	p = e.mustRun(bundle(finding("sid-added", 3, 3, "real"), f), publish.Options{})
	if p.Count(publish.Create) != 0 || p.Count(publish.UpdateSummary) != 1 {
		t.Errorf("rerun plan %v", kinds(p))
	}
}

func TestChannels(t *testing.T) {
	e := newEnv(t)
	e.mustRun(bundle(baseFindings()...), publish.Options{})
	p := e.mustRun(bundle(baseFindings()[:1]...), publish.Options{Channel: "lint"})
	if p.Count(publish.Create) != 1 || p.Count(publish.Resolve) != 0 || p.Count(publish.CreateSummary) != 1 {
		t.Errorf("plan %v", p.Actions)
	}
	st := e.srv.Statuses()
	if last := st[len(st)-1]; last.Name != "diffpal/review/lint" {
		t.Errorf("status %+v", last)
	}
	if n := len(e.srv.NotesWithPrefix("<!-- diffpal:summary")); n != 2 {
		t.Errorf("%d summaries", n)
	}
}

func TestFeedbackSummaryGateOff(t *testing.T) {
	e := newEnv(t)
	p, err := publish.Run(context.Background(), e.host(), e.target, bundle(baseFindings()...), publish.Options{Feedback: publish.FeedbackSummary},
		func(*publish.Plan) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if p.Count(publish.Create) != 0 {
		t.Error("inline comments in summary mode")
	}
	st := e.srv.Statuses()
	if len(st) != 1 || st[0].State != "success" || st[0].Description != "1 blocking findings; gate disabled" {
		t.Errorf("statuses %+v", st)
	}
}

func TestProjectPathAndBaseURL(t *testing.T) {
	e := newEnv(t)
	e.target.Repo = "group/project"
	e.target.APIURL = e.srv.APIURL() + "/"
	e.mustRun(bundle(baseFindings()[:1]...), publish.Options{})
	for _, r := range e.srv.Requests() {
		if strings.HasPrefix(r.Path, "/api/v4/projects/") && !strings.HasPrefix(r.Path, "/api/v4/projects/group%2Fproject/") {
			t.Errorf("path %s", r.Path)
		}
	}
	if len(e.ours("default")) != 1 {
		t.Error("not posted")
	}
}

func TestNew(t *testing.T) {
	if _, err := gitlab.New(&publish.Target{Repo: "1", Number: 1}, nil); err == nil {
		t.Error("no token accepted")
	}
	_, err := gitlab.New(&publish.Target{Repo: "1", Number: 1, Token: publish.NewSecret("s3cr3t"), APIURL: "ftp://x"}, nil)
	if err == nil || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("err %v", err)
	}
	var _ publish.Host = (*gitlab.Host)(nil)
}

func TestRenamedAndTooLargeFiles(t *testing.T) {
	e := newEnv(t)
	e.srv.SetVersion(baseSHA, headSHA,
		gitlabtest.File{Path: "new/name.go", OldPath: "old/name.go", Diff: "@@ -1,2 +1,3 @@\n a\n+b\n c\n"},
		gitlabtest.File{Path: "huge.go", TooLarge: true, Diff: "@@ -1 +1 @@\n-x\n+y\n"})
	ren := finding("sid-ren", 2, 2, "In a renamed file")
	ren.Path = "new/name.go"
	huge := finding("sid-huge", 400, 400, "In a file too large to show")
	huge.Path = "huge.go"
	p := e.mustRun(bundle(ren, huge), publish.Options{})
	w := e.srv.Writes()
	pos := body(t, w[0])["position"].(map[string]any)
	if pos["old_path"] != "old/name.go" || pos["new_path"] != "new/name.go" || pos["new_line"] != num(2) {
		t.Errorf("renamed position %v", pos)
	}
	// The too-large file: every line is offered, GitLab refuses the
	// position, the finding becomes a general discussion.
	if got := calls(w[1:3]); !reflect.DeepEqual(got, []call{{"POST", api + "/discussions"}, {"POST", api + "/discussions"}}) {
		t.Fatalf("writes %v", got)
	}
	if _, ok := body(t, w[2])["position"]; ok || !strings.Contains(body(t, w[2])["body"].(string), "`huge.go:400`") {
		t.Errorf("fallback %v", body(t, w[2]))
	}
	if p.Count(publish.Create) != 2 || len(e.ours("default")) != 2 {
		t.Errorf("plan %v", kinds(p))
	}
}

// A redirect to another host is refused: the token travels in
// PRIVATE-TOKEN (JOB-TOKEN), which net/http, unlike Authorization,
// forwards to wherever a redirect points. The test's client has no
// CheckRedirect of its own.
func TestRedirectToOtherHostRefused(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, fmt.Sprintf("%s %s PRIVATE-TOKEN=%q JOB-TOKEN=%q Authorization=%q", r.Method, r.URL.Path,
			r.Header.Get("PRIVATE-TOKEN"), r.Header.Get("JOB-TOKEN"), r.Header.Get("Authorization")))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `[]`)
	}))
	defer other.Close()
	e := newEnv(t)
	e.srv.Inject(gitlabtest.Fault{Method: "GET", PathSuffix: "/discussions", Status: http.StatusFound, Body: `{"message":"302 Found"}`,
		Header: http.Header{"Location": {other.URL + "/api/v4/steal"}}})
	_, err := e.host().Load(context.Background(), publish.DefaultChannel)
	if err == nil || !strings.Contains(err.Error(), "GET "+api+"/discussions") || !strings.Contains(err.Error(), "redirect to "+other.URL+" refused") ||
		strings.Contains(err.Error(), gitlabtest.Token) {
		t.Errorf("error %v", err)
	}
	// A write too.
	e.srv.Inject(gitlabtest.Fault{Method: "POST", PathSuffix: "/notes", Status: http.StatusTemporaryRedirect,
		Header: http.Header{"Location": {other.URL + "/api/v4/steal"}}})
	err = e.host().UpsertSummary(context.Background(), &publish.Plan{}, &publish.Action{Kind: publish.CreateSummary, Body: "summary"})
	if err == nil || !strings.Contains(err.Error(), "POST "+api+"/notes") || !strings.Contains(err.Error(), "redirect to "+other.URL+" refused") {
		t.Errorf("write error %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 0 {
		t.Errorf("the other host was reached: %q", seen)
	}
}
