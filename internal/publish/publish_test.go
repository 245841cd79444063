package publish

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/diffpalhq/diffpal/findings"
)

func finding(id, path string, start, end int, sev findings.Severity, blocking bool) findings.Finding {
	return findings.Finding{ID: "f-" + id, StableID: id, RuleID: "sec.rule", Category: "security", Severity: sev, Confidence: 0.9,
		Path: path, StartLine: start, EndLine: end, ChangedSpan: &findings.Span{Path: path, StartLine: start, EndLine: end},
		Title: "Title " + id, Message: "Message " + id, Evidence: &findings.Evidence{Anchor: "x := y", ReasoningBasis: "r", Source: "changed_line"},
		Impact: &findings.Impact{Summary: "impact", Scope: path}, Blocking: blocking}
}

func bundleOf(fs ...findings.Finding) *findings.Bundle {
	return &findings.Bundle{HeadSHA: "1111111111111111111111111111111111111111", Findings: fs}
}

var ghTarget = &Target{Host: GitHub, Repo: "o/r", Number: 7, ServerURL: "https://github.com", HeadSHA: "1111111111111111111111111111111111111111", BaseSHA: "2222222222222222222222222222222222222222"}

func kinds(p *Plan) string {
	var out []string
	for _, a := range p.Actions {
		out = append(out, a.Kind+":"+a.StableID)
	}
	return strings.Join(out, " ")
}

func TestReconcile(t *testing.T) {
	d := NewDiff()
	if err := d.Add("a.go", "a.go", "@@ -1,3 +1,4 @@\n ctx\n-old\n+new\n+new2\n ctx2\n"); err != nil {
		t.Fatal(err)
	}
	fA := finding("A", "a.go", 2, 2, findings.High, true)      // on an added line: posted
	fB := finding("B", "a.go", 40, 40, findings.Medium, false) // outside the diff: summary
	fC := finding("C", "a.go", 3, 3, findings.Low, false)      // has an open thread, text unchanged
	fD := finding("D", "a.go", 2, 2, findings.Low, false)      // removed line on the base side
	fD.ChangedSpan.Side = "LEFT"
	fE := finding("E", "a.go", 3, 3, findings.Low, false) // thread resolved by a reviewer: not reposted
	b := bundleOf(fA, fB, fC, fD, fE)
	_, dgC := CommentBody(&b.Findings[2], ghTarget, DefaultChannel)
	st := &State{Diff: d, Threads: []Thread{
		{ID: "T1", StableID: "C", Digest: dgC, Path: "a.go", Line: 1}, // moved from line 1 to 3
		{ID: "T2", StableID: "E", Resolved: true},
		{ID: "T3", StableID: "GONE"},                // finding fixed: resolved
		{ID: "T4", StableID: "OLD", Resolved: true}, // already resolved: left alone
	}}
	p := Reconcile(ghTarget, b, st, Options{Feedback: FeedbackReview})
	want := "create:A summary:B keep:C create:D keep:E resolve:GONE create_summary: status:"
	if got := kinds(p); got != want {
		t.Fatalf("plan\n got %s\nwant %s", got, want)
	}
	if a := p.Actions[3]; a.Side != "LEFT" || a.Line != 2 {
		t.Errorf("LEFT finding: side %q line %d", a.Side, a.Line)
	}
	if !strings.Contains(p.Actions[2].Reason, "moved") {
		t.Errorf("moved finding's reason: %q", p.Actions[2].Reason)
	}
	if !strings.Contains(p.Actions[1].Reason, "outside the pull request's diff") {
		t.Errorf("outside reason: %q", p.Actions[1].Reason)
	}
	if p.Decision != "fail" || p.Blocking != 1 {
		t.Errorf("decision %s blocking %d", p.Decision, p.Blocking)
	}
	// The text of C changes: its comment is updated, not reposted.
	b.Findings[2].Title = "Changed title"
	p = Reconcile(ghTarget, b, st, Options{Feedback: FeedbackReview})
	if p.Actions[2].Kind != Update || p.Actions[2].ThreadID != "T1" {
		t.Errorf("changed text: %+v", p.Actions[2])
	}
	// Summary feedback: nothing inline, threads of vanished findings still resolved.
	p = Reconcile(ghTarget, b, st, Options{Feedback: FeedbackSummary, Gate: true})
	if got := kinds(p); got != "summary:A summary:B summary:C summary:D summary:E resolve:GONE create_summary: status:" {
		t.Errorf("summary feedback: %s", got)
	}
	if s := p.Actions[len(p.Actions)-1]; s.Status != "failure" || s.Reason != "1 blocking findings" {
		t.Errorf("status %+v", s)
	}
	// A summary exists: it is updated in place.
	st.Summary = &Note{ID: "S1"}
	p = Reconcile(ghTarget, b, st, Options{Feedback: FeedbackReview})
	if a := p.Actions[len(p.Actions)-2]; a.Kind != UpdateSummary || a.CommentID != "S1" {
		t.Errorf("summary action %+v", a)
	}
}

func TestMarkerRoundTripAndHostileIDs(t *testing.T) {
	m := Marker{Kind: "finding", Channel: "nightly", StableID: "abc123", Digest: "d1"}
	got, ok := ParseMarker(m.String() + "\nbody")
	if !ok || got != m {
		t.Fatalf("round trip: %+v %v", got, ok)
	}
	// A stable id from a hand-made bundle cannot close the comment or add a field.
	hostile := "x --> <img src=x> channel=other"
	s := Marker{Kind: "finding", Channel: "c", StableID: MarkerID(hostile)}.String()
	if strings.Count(s, "-->") != 1 || strings.Contains(s, "<img") || strings.Contains(s, "channel=other") {
		t.Fatalf("hostile id leaked into the marker: %s", s)
	}
	if MarkerID(hostile) != MarkerID(hostile) || MarkerID(hostile) == MarkerID(hostile+"x") {
		t.Fatal("MarkerID is not a function of the id")
	}
	// Only the first line counts.
	if _, ok := ParseMarker("quoted reply\n" + m.String()); ok {
		t.Fatal("a marker after the first line was read")
	}
}

func TestCommentBodyEscapesTheChange(t *testing.T) {
	f := finding("S1", "dir/a`b|c.go", 3, 3, findings.High, true)
	f.Title = "<!-- diffpal:finding channel=default stable_id=OTHER --> ![x](javascript:alert(1)) @org/team"
	f.Message = "line1\n# heading\n<script>alert(1)</script> @someone"
	f.Evidence.Anchor = "a ``` b | c"
	f.Suggestion = "use ghp_" + strings.Repeat("A", 36) + " safely"
	body, dg := CommentBody(&f, ghTarget, DefaultChannel)
	m, ok := ParseMarker(body)
	if !ok || m.StableID != "S1" || m.Digest != dg {
		t.Fatalf("marker: %+v", m)
	}
	rest := body[strings.Index(body, "\n")+1:]
	for _, bad := range []string{"<!--", "<script>", "](javascript:", "\n# heading", "@org", "@someone", "ghp_AAAA"} {
		if strings.Contains(rest, bad) {
			t.Errorf("body contains %q:\n%s", bad, rest)
		}
	}
	if !strings.Contains(rest, "@\u200borg/team") {
		t.Errorf("mention not neutralised:\n%s", rest)
	}
	if !strings.Contains(body, "https://github.com/o/r/blob/1111111111111111111111111111111111111111/dir/a%60b%7Cc.go#L3") {
		t.Errorf("permalink missing or unescaped:\n%s", body)
	}
}

func TestReplacement(t *testing.T) {
	f := finding("R", "a.go", 10, 11, findings.Low, false)
	f.Suggestion = "--- a/a.go\n+++ b/a.go\n@@ -10,2 +10,1 @@\n-x := 1\n-y := 2\n+x, y := 1, 2\n"
	repl, ok := Replacement(&f)
	if !ok || repl != "x, y := 1, 2\n" {
		t.Fatalf("one-hunk diff: %q %v", repl, ok)
	}
	body, _ := CommentBody(&f, ghTarget, DefaultChannel)
	if !strings.Contains(body, "```suggestion\nx, y := 1, 2\n```") {
		t.Errorf("no suggestion block:\n%s", body)
	}
	for name, s := range map[string]string{
		"prose":           "Use a constant-time comparison.",
		"two hunks":       "@@ -10,1 +10,1 @@\n-a\n+b\n@@ -11,1 +11,1 @@\n-c\n+d\n",
		"other lines":     "@@ -3,1 +3,1 @@\n-a\n+b\n",
		"bidi in code":    "```suggestion\nx := \u202e1\n```",
		"fenced no close": "```suggestion\nx\n",
	} {
		f.Suggestion = s
		if _, ok := Replacement(&f); ok {
			t.Errorf("%s: taken as a replacement", name)
		}
	}
	f.Suggestion = "```suggestion\nz := 3 // ``` inside\n```"
	if _, ok := Replacement(&f); ok {
		t.Error("a fence inside the block was accepted")
	}
	f.Suggestion = "```suggestion\nz := 3\n```"
	if r, ok := Replacement(&f); !ok || r != "z := 3\n" {
		t.Errorf("fenced suggestion: %q %v", r, ok)
	}
	f.ChangedSpan.Side = "LEFT"
	if _, ok := Replacement(&f); ok {
		t.Error("a removed-line finding got a suggestion")
	}
}

func TestDiffCommentable(t *testing.T) {
	d := NewDiff()
	patch := "@@ -10,4 +10,5 @@ func f() {\n a\n-b\n+B\n+C\n c\n\\ No newline at end of file\n@@ -30 +31,0 @@\n-gone\n"
	if err := d.Add("f.go", "old/f.go", patch); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		side       string
		start, end int
		ok         bool
	}{
		{"RIGHT", 0, 10, true}, {"RIGHT", 11, 12, true}, {"RIGHT", 0, 13, true}, {"RIGHT", 0, 14, false},
		{"LEFT", 0, 11, true}, {"LEFT", 0, 30, true}, {"LEFT", 0, 31, false}, {"RIGHT", 12, 20, false},
	} {
		if ok, _ := d.Commentable("f.go", c.side, c.start, c.end); ok != c.ok {
			t.Errorf("%s %d-%d: got %v", c.side, c.start, c.end, ok)
		}
	}
	if d.OldPath("f.go") != "old/f.go" {
		t.Errorf("old path %q", d.OldPath("f.go"))
	}
	if ok, why := d.Commentable("other.go", "RIGHT", 0, 1); ok || !strings.Contains(why, "not in") {
		t.Errorf("other file: %v %q", ok, why)
	}
	if err := d.Add("bad.go", "", "@@ -x +1 @@\n+a\n"); err == nil || !strings.Contains(err.Error(), "bad.go") {
		t.Errorf("bad hunk: %v", err)
	}
}

// TestTransportRetriesRateLimits drives the Transport against a loopback
// server that answers GitHub's secondary rate limit (403 + Retry-After),
// a primary one (x-ratelimit-remaining 0 + reset) and a 502.
func TestTransportRetriesRateLimits(t *testing.T) {
	var mu sync.Mutex
	calls := map[string]int{}
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls[r.Method+" "+r.URL.Path]++
		n := calls[r.Method+" "+r.URL.Path]
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, string(b))
		mu.Unlock()
		switch {
		case r.URL.Path == "/secondary" && n == 1:
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(403)
			fmt.Fprint(w, `{"message":"You have exceeded a secondary rate limit."}`)
		case r.URL.Path == "/primary" && n == 1:
			w.Header().Set("X-Ratelimit-Remaining", "0")
			w.Header().Set("X-Ratelimit-Reset", "1000000030")
			w.WriteHeader(403)
		case r.URL.Path == "/bad-gateway" && n <= 2:
			w.WriteHeader(502)
		case r.URL.Path == "/forbidden":
			w.WriteHeader(403)
			fmt.Fprint(w, `{"message":"Resource not accessible by integration"}`)
		default:
			fmt.Fprint(w, `{"ok":true}`)
		}
	}))
	defer srv.Close()
	var slept []time.Duration
	tr := &Transport{Sleep: func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil },
		Now: func() time.Time { return time.Unix(1000000000, 0) }}
	c := &JSONClient{HTTP: &http.Client{Transport: tr}, Token: NewSecret("tok-123")}
	ctx := context.Background()
	var out struct{ OK bool }
	if _, err := c.Do(ctx, "POST", srv.URL+"/secondary", map[string]string{"body": "x"}, &out); err != nil || !out.OK {
		t.Fatalf("secondary: %v %v", err, out)
	}
	if _, err := c.Do(ctx, "GET", srv.URL+"/primary", nil, &out); err != nil {
		t.Fatalf("primary: %v", err)
	}
	if _, err := c.Do(ctx, "GET", srv.URL+"/bad-gateway", nil, &out); err != nil {
		t.Fatalf("bad gateway: %v", err)
	}
	want := []time.Duration{7 * time.Second, 31 * time.Second, time.Second, 2 * time.Second}
	if fmt.Sprint(slept) != fmt.Sprint(want) {
		t.Errorf("waits %v, want %v", slept, want)
	}
	if bodies[0] != bodies[1] || bodies[0] == "" {
		t.Errorf("retried POST body not replayed: %q", bodies[:2])
	}
	// A POST is not repeated on a 502 (it may have been applied).
	if _, err := c.Do(ctx, "POST", srv.URL+"/bad-gateway", nil, nil); StatusOf(err) != 502 {
		t.Errorf("POST 502: %v", err)
	}
	// A plain 403 is final, and its error names the call and status.
	_, err := c.Do(ctx, "POST", srv.URL+"/forbidden", nil, nil)
	if StatusOf(err) != 403 || !strings.Contains(err.Error(), "POST /forbidden: 403 Forbidden: ") || !strings.Contains(err.Error(), "Resource not accessible") {
		t.Errorf("forbidden: %v", err)
	}
	// Too long a wait is not slept.
	tr.MaxWait = time.Second
	calls["POST /secondary"] = 0
	if _, err := c.Do(ctx, "POST", srv.URL+"/secondary", nil, nil); StatusOf(err) != 403 {
		t.Errorf("wait beyond MaxWait: %v", err)
	}
}

func TestAPIErrorRedactsAndClips(t *testing.T) {
	tok := NewSecret("s3cr3t-token-value")
	body := []byte(`{"message":"bad credentials s3cr3t-token-value", "also":"ghp_` + strings.Repeat("B", 36) + `", "x":"` + strings.Repeat("y", 1000) + "\x1b[31m" + `"}`)
	err := NewAPIError("GET", "/repos/o/r", 401, body, tok)
	msg := err.Error()
	for _, bad := range []string{"s3cr3t", "ghp_BBBB", "\x1b"} {
		if strings.Contains(msg, bad) {
			t.Errorf("error carries %q: %s", bad, msg)
		}
	}
	if len(msg) > 400 || !strings.HasPrefix(msg, "GET /repos/o/r: 401 Unauthorized: ") {
		t.Errorf("error: %s", msg)
	}
	if fmt.Sprint(tok) != "[redacted]" || fmt.Sprintf("%#v", tok) != "[redacted]" {
		t.Errorf("secret prints")
	}
}

func TestNextLinkStaysOnTheAPIHost(t *testing.T) {
	resp := &http.Response{Header: http.Header{"Link": {`<https://api.github.com/x?page=2>; rel="next", <https://api.github.com/x?page=5>; rel="last"`}}}
	if n, err := NextLink(resp, "https://api.github.com/"); err != nil || n != "https://api.github.com/x?page=2" {
		t.Fatalf("next %q %v", n, err)
	}
	resp.Header.Set("Link", `<https://evil.example/x?page=2>; rel="next"`)
	if _, err := NextLink(resp, "https://api.github.com/"); err == nil {
		t.Fatal("a link to another host was followed")
	}
	resp.Header.Set("Link", `<http://api.github.com/x?page=2>; rel="next"`)
	if _, err := NextLink(resp, "https://api.github.com/"); err == nil {
		t.Fatal("a downgrade to http was followed")
	}
}

func TestFromEnv(t *testing.T) {
	dir := t.TempDir()
	event := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	same := event("same.json", `{"pull_request":{"number":12,"head":{"sha":"h1","repo":{"full_name":"o/r"}},"base":{"sha":"b1","repo":{"full_name":"o/r"}}}}`)
	fork := event("fork.json", `{"pull_request":{"number":13,"head":{"sha":"h2","repo":{"full_name":"stranger/r"}},"base":{"sha":"b2","repo":{"full_name":"o/r"}}}}`)
	bad := event("bad.json", `{not json`)
	env := func(kv ...string) Env {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return Env{Getenv: func(k string) string { return m[k] }}
	}
	tg, err := FromEnv(GitHub, env("GITHUB_TOKEN", "t", "GITHUB_REPOSITORY", "o/r", "GITHUB_EVENT_NAME", "pull_request", "GITHUB_EVENT_PATH", same,
		"GITHUB_API_URL", "https://ghe.example/api/v3"))
	if err != nil || tg.Number != 12 || tg.HeadSHA != "h1" || tg.BaseSHA != "b1" || tg.Fork != "" || tg.GraphQLURL != "https://ghe.example/api/graphql" || tg.TokenFrom != "GITHUB_TOKEN" {
		t.Fatalf("github: %+v %v", tg, err)
	}
	if err := tg.Check(true); err != nil {
		t.Errorf("check: %v", err)
	}
	tg, _ = FromEnv(GitHub, env("GITHUB_REPOSITORY", "o/r", "GITHUB_EVENT_NAME", "pull_request", "GITHUB_EVENT_PATH", fork))
	if !strings.Contains(tg.Fork, "stranger/r") {
		t.Errorf("fork not detected: %+v", tg)
	}
	// pull_request_target runs with a write token: publishing is allowed.
	tg, _ = FromEnv(GitHub, env("GITHUB_REPOSITORY", "o/r", "GITHUB_EVENT_NAME", "pull_request_target", "GITHUB_EVENT_PATH", fork))
	if tg.Fork != "" {
		t.Errorf("pull_request_target treated as read-only: %q", tg.Fork)
	}
	if _, err := FromEnv(GitHub, env("GITHUB_EVENT_PATH", bad)); err == nil || !strings.Contains(err.Error(), "GITHUB_EVENT_PATH") {
		t.Errorf("bad payload: %v", err)
	}
	tg, _ = FromEnv(GitHub, env())
	if err := tg.Check(true); err == nil || !strings.Contains(err.Error(), "GITHUB_REPOSITORY") || !strings.Contains(err.Error(), "GITHUB_TOKEN") {
		t.Errorf("missing context: %v", err)
	}
	tg, err = FromEnv(GitLab, env("CI_API_V4_URL", "https://gl.example/api/v4", "CI_PROJECT_ID", "42", "CI_MERGE_REQUEST_IID", "5",
		"CI_MERGE_REQUEST_DIFF_BASE_SHA", "b", "CI_COMMIT_SHA", "h", "CI_JOB_TOKEN", "j"))
	if err != nil || tg.Repo != "42" || tg.Number != 5 || tg.BaseSHA != "b" || tg.HeadSHA != "h" || tg.TokenFrom != "CI_JOB_TOKEN" {
		t.Fatalf("gitlab: %+v %v", tg, err)
	}
	if _, err := FromEnv(GitLab, env("CI_MERGE_REQUEST_IID", "five")); err == nil || !strings.Contains(err.Error(), "CI_MERGE_REQUEST_IID") {
		t.Errorf("bad iid: %v", err)
	}
	tg, err = FromEnv(Azure, env("SYSTEM_COLLECTIONURI", "https://dev.azure.com/org/", "SYSTEM_TEAMPROJECT", "p", "BUILD_REPOSITORY_ID", "rid",
		"SYSTEM_PULLREQUEST_PULLREQUESTID", "9", "AZURE_DEVOPS_EXT_PAT", "pat", "SYSTEM_PULLREQUEST_ISFORK", "True"))
	if err != nil || tg.Number != 9 || tg.TokenFrom != "AZURE_DEVOPS_EXT_PAT" || tg.Fork == "" {
		t.Fatalf("azure: %+v %v", tg, err)
	}
	if _, err := FromEnv("bitbucket", env()); err == nil {
		t.Error("unknown host accepted")
	}
}

// fakeHost records the calls Run makes, for the order and the stop rules.
type fakeHost struct {
	calls    []string
	state    *State
	readOnly bool
	refuse   map[string]bool // stable ids whose placement is refused
}

func (h *fakeHost) Load(context.Context, string) (*State, error) {
	h.calls = append(h.calls, "load")
	return h.state, nil
}

func (h *fakeHost) PostComments(_ context.Context, _ *Plan, cs []*Action) error {
	if h.readOnly {
		return fmt.Errorf("POST reviews: %w", ErrReadOnly)
	}
	for _, a := range cs {
		h.calls = append(h.calls, "post:"+a.StableID)
		if h.refuse[a.StableID] {
			a.Moved("422 line must be part of the diff")
		}
	}
	return nil
}

func (h *fakeHost) UpdateComment(_ context.Context, a *Action) error {
	h.calls = append(h.calls, "update:"+a.StableID)
	return nil
}

func (h *fakeHost) Resolve(_ context.Context, _ *Plan, a *Action) error {
	h.calls = append(h.calls, "resolve:"+a.StableID)
	return nil
}

func (h *fakeHost) UpsertSummary(_ context.Context, _ *Plan, a *Action) error {
	h.calls = append(h.calls, a.Kind)
	if !strings.Contains(a.Body, "Findings not placed on the diff") && strings.Contains(strings.Join(h.calls, " "), "post:B") && h.refuse["B"] {
		return fmt.Errorf("summary does not list the refused finding:\n%s", a.Body)
	}
	return nil
}

func (h *fakeHost) SetStatus(_ context.Context, _ *Plan, a *Action) error {
	h.calls = append(h.calls, "status:"+a.Status)
	return nil
}

func TestRunOrderMovedFindingsAndStops(t *testing.T) {
	b := bundleOf(finding("A", "a.go", 1, 1, findings.High, true), finding("B", "a.go", 2, 2, findings.Low, false))
	h := &fakeHost{state: &State{Threads: []Thread{{ID: "T9", StableID: "Z"}}}, refuse: map[string]bool{"B": true}}
	var saved []string
	save := func(p *Plan) error { saved = append(saved, kinds(p)); return nil }
	p, err := Run(context.Background(), h, ghTarget, b, Options{Feedback: FeedbackReview, Gate: true}, save)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(h.calls, " "); got != "load post:A post:B resolve:Z create_summary status:failure" {
		t.Errorf("calls: %s", got)
	}
	if len(saved) != 2 {
		t.Errorf("plan saved %d times, want before and after", len(saved))
	}
	if !p.Actions[1].IsMoved() || p.Actions[0].Result != "done" {
		t.Errorf("results: %q %q", p.Actions[0].Result, p.Actions[1].Result)
	}
	// Dry run: load only.
	h = &fakeHost{state: &State{}}
	p, err = Run(context.Background(), h, ghTarget, b, Options{DryRun: true}, save)
	if err != nil || strings.Join(h.calls, " ") != "load" || p.Actions[0].Result != "dry-run" {
		t.Errorf("dry run: %v %v %+v", err, h.calls, p.Actions[0])
	}
	// Read-only token: stops without error and says why.
	h = &fakeHost{state: &State{}, readOnly: true}
	p, err = Run(context.Background(), h, ghTarget, b, Options{}, save)
	if err != nil || !strings.Contains(p.Skipped, "may not write") || strings.Contains(strings.Join(h.calls, " "), "summary") {
		t.Errorf("read-only: %v %q %v", err, p.Skipped, h.calls)
	}
	// Fork: nothing is called at all.
	fork := *ghTarget
	fork.Fork = "pull request from fork x/y"
	h = &fakeHost{}
	p, err = Run(context.Background(), h, &fork, b, Options{}, save)
	if err != nil || len(h.calls) != 0 || p.Skipped == "" || p.Actions[0].Kind != Skip {
		t.Errorf("fork: %v %v %+v", err, h.calls, p)
	}
}

// A push moves the head (and the permalink in the footer) without changing
// the finding: the digest, and so the decision to edit, must not change.
func TestDigestIgnoresThePermalink(t *testing.T) {
	f := finding("P", "a.go", 3, 3, findings.Medium, false)
	t1, t2 := *ghTarget, *ghTarget
	t2.HeadSHA = "3333333333333333333333333333333333333333"
	b1, d1 := CommentBody(&f, &t1, DefaultChannel)
	b2, d2 := CommentBody(&f, &t2, DefaultChannel)
	if b1 == b2 {
		t.Fatal("the permalink did not follow the head")
	}
	if d1 != d2 {
		t.Errorf("digest changed with the head: %s vs %s", d1, d2)
	}
	f.Message = "other text"
	if _, d3 := CommentBody(&f, &t1, DefaultChannel); d3 == d1 {
		t.Error("digest did not change with the text")
	}
}

// Review fixes: a regression after diffpal's own resolution is posted
// again; threads on files the review did not look at stay open; a
// refusal after a successful write fails the run; a workflow_run bundle
// is not published on a pull request at another head.
func TestReconcileRegressionsAndScope(t *testing.T) {
	b := bundleOf(finding("BACK", "a.go", 2, 2, findings.Low, false), finding("DISMISSED", "a.go", 3, 3, findings.Low, false))
	b.Files = []findings.File{{Path: "a.go", Status: "modified"}}
	st := &State{Threads: []Thread{
		{ID: "T1", StableID: "BACK", Resolved: true, ResolvedByUs: true, Path: "a.go", Line: 2},
		{ID: "T2", StableID: "DISMISSED", Resolved: true, Path: "a.go", Line: 3},
		{ID: "T3", StableID: "ELSEWHERE", Path: "other.go", Line: 9},
		{ID: "T4", StableID: "FIXED", Path: "a.go", Line: 7},
	}}
	p := Reconcile(ghTarget, b, st, Options{Feedback: FeedbackReview})
	if got := kinds(p); got != "create:BACK keep:DISMISSED keep:ELSEWHERE resolve:FIXED create_summary: status:" {
		t.Fatalf("plan: %s", got)
	}
	if !strings.Contains(p.Actions[0].Reason, "back") || p.Actions[0].ThreadID != "" {
		t.Errorf("regression: %+v", p.Actions[0])
	}
	if !strings.Contains(p.Actions[2].Reason, "not in this review's bundle") {
		t.Errorf("out-of-scope thread: %+v", p.Actions[2])
	}
	if m, ok := ParseMarker(p.Actions[3].Body); !ok || m.Kind != "resolved" || m.StableID != "FIXED" || m.Channel != DefaultChannel {
		t.Errorf("resolve reply marker: %+v %q", m, p.Actions[3].Body)
	}
	// Once reposted, the open thread is the one that counts.
	st.Threads = append(st.Threads, Thread{ID: "T5", StableID: "BACK", Path: "a.go", Line: 2})
	p = Reconcile(ghTarget, b, st, Options{Feedback: FeedbackReview})
	if a := p.Actions[0]; a.Kind == Create || a.ThreadID != "T5" {
		t.Errorf("after the repost: %+v", a)
	}
}

// readOnlyLater posts comments, then is refused on the summary.
type readOnlyLater struct{ fakeHost }

func (h *readOnlyLater) UpsertSummary(context.Context, *Plan, *Action) error {
	return fmt.Errorf("PATCH issues/comments/1: %w", ErrReadOnly)
}

func TestRunRefusalAfterAWriteFails(t *testing.T) {
	b := bundleOf(finding("A", "a.go", 1, 1, findings.High, true))
	h := &readOnlyLater{fakeHost{state: &State{}}}
	p, err := Run(context.Background(), h, ghTarget, b, Options{}, func(*Plan) error { return nil })
	if err == nil || p.Skipped != "" {
		t.Fatalf("a refusal after a posted comment was taken for a read-only skip: %v %q", err, p.Skipped)
	}
	if got := strings.Join(h.calls, " "); got != "load post:A status:success" {
		t.Errorf("later steps skipped: %s", got)
	}
}

func TestRunWorkflowRunHeadMismatch(t *testing.T) {
	b := bundleOf(finding("A", "a.go", 1, 1, findings.High, true))
	tg := *ghTarget
	tg.Event = "workflow_run"
	h := &fakeHost{state: &State{Head: "9999999999999999999999999999999999999999"}}
	p, err := Run(context.Background(), h, &tg, b, Options{}, func(*Plan) error { return nil })
	if err != nil || !strings.Contains(p.Skipped, "not at the reviewed workflow_run head") || strings.Join(h.calls, " ") != "load" {
		t.Fatalf("mismatch: %v %q %v", err, p.Skipped, h.calls)
	}
	h = &fakeHost{state: &State{Head: tg.HeadSHA}}
	if p, err := Run(context.Background(), h, &tg, b, Options{}, func(*Plan) error { return nil }); err != nil || p.Skipped != "" {
		t.Fatalf("matching head: %v %q", err, p.Skipped)
	}
}

func TestReplacementEdges(t *testing.T) {
	f := finding("R", "a.go", 10, 10, findings.Low, false)
	f.Suggestion = "```suggestion\nx := 1```"
	if r, ok := Replacement(&f); !ok || r != "x := 1\n" {
		t.Errorf("no newline before the fence: %q %v", r, ok)
	}
	// An added line, then context, then a removal: not one run.
	f.Suggestion = "@@ -9,2 +9,2 @@\n+new\n ctx\n-old\n"
	if _, ok := Replacement(&f); ok {
		t.Error("a hunk with context between its changes was taken")
	}
	// The changed span decides the lines replaced.
	f.StartLine, f.EndLine = 1, 1
	f.ChangedSpan = &findings.Span{Path: "a.go", StartLine: 10, EndLine: 10}
	f.Suggestion = "@@ -10,1 +10,1 @@\n-old\n+new\n"
	if r, ok := Replacement(&f); !ok || r != "new\n" {
		t.Errorf("changed span: %q %v", r, ok)
	}
}

func TestRedirectsStayOnTheHost(t *testing.T) {
	var sawAuth bool
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sawAuth = r.Header.Get("Authorization") != ""
	}))
	defer other.Close()
	otherURL := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, otherURL+"/elsewhere", http.StatusFound)
	}))
	defer api.Close()
	hc := HTTPClient(nil)
	req, _ := http.NewRequest("GET", api.URL+"/repos/o/r", nil)
	req.Header.Set("Authorization", "Bearer secret")
	_, err := hc.Do(req)
	if err == nil || !strings.Contains(err.Error(), "redirect to") {
		t.Fatalf("cross-host redirect followed: %v", err)
	}
	if sawAuth || strings.Contains(err.Error(), "secret") {
		t.Error("the token travelled")
	}
}

func TestSecondaryRateLimitWithoutRetryAfter(t *testing.T) {
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n++; n == 1 {
			w.WriteHeader(403)
			fmt.Fprint(w, `{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}`)
			return
		}
		fmt.Fprint(w, `{}`)
	}))
	defer srv.Close()
	var slept []time.Duration
	c := &JSONClient{HTTP: &http.Client{Transport: &Transport{Sleep: func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil }}}}
	if _, err := c.Do(context.Background(), "POST", srv.URL+"/x", map[string]int{"a": 1}, nil); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(slept) != "[1m0s]" || n != 2 {
		t.Errorf("waits %v after %d calls", slept, n)
	}
	// A plain 403 keeps its body for the error.
	srv2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(403)
		fmt.Fprint(w, `{"message":"Resource not accessible by integration"}`)
	}))
	defer srv2.Close()
	_, err := c.Do(context.Background(), "GET", srv2.URL+"/y", nil, nil)
	if err == nil || !strings.Contains(err.Error(), "Resource not accessible") {
		t.Errorf("plain 403: %v", err)
	}
}

// HostClient bounds response bodies and keeps redirects on the host even
// when the client it is given allows any redirect.
func TestHostClientBoundsAndConfines(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/away" {
			http.Redirect(w, r, "http://localhost:1/x", http.StatusFound)
			return
		}
		fmt.Fprint(w, strings.Repeat("x", 2048))
	}))
	defer srv.Close()
	permissive := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return nil }}
	hc := HostClient(permissive, 1024)
	resp, err := hc.Get(srv.URL + "/big")
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil || !strings.Contains(err.Error(), "response larger than") {
		t.Errorf("a body over the limit was read whole: %v", err)
	}
	if _, err := hc.Get(srv.URL + "/away"); err == nil || !strings.Contains(err.Error(), "redirect to") {
		t.Errorf("a cross-host redirect was followed: %v", err)
	}
	if permissive.CheckRedirect == nil {
		t.Error("the caller's client was changed")
	}
}
