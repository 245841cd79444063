// Package githubtest is a stateful loopback GitHub for tests: the REST
// endpoints and GraphQL operations diffpal's GitHub publisher uses, with
// GitHub's paths, JSON shapes, status codes and error bodies, Link
// pagination, rate-limit answers and 422s for lines outside the diff.
//
// It serves the Enterprise layout: REST under URL+"/api/v3", GraphQL at
// URL+"/api/graphql". One repository (Owner/Repo) with one pull request
// (Number) exists; the token is Token.
//
//	s := githubtest.New(t)
//	s.SetFiles(githubtest.File{Filename: "a.go", Patch: "@@ -1,2 +1,3 @@\n a\n+b\n c\n"})
//	h, _ := github.New(s.Target(), nil)
//	... publish.Run(ctx, h, s.Target(), bundle, opts, save)
//	s.Threads(), s.IssueComments(), s.Reviews(), s.CheckRuns(), s.Requests()
//
// REST served: GET pulls/N/files, POST pulls/N/reviews, GET
// pulls/N/reviews/ID/comments, GET and POST pulls/N/comments (in_reply_to
// too), POST pulls/N/comments/ID/replies, PATCH pulls/comments/ID, GET and
// POST issues/N/comments, PATCH issues/comments/ID, POST check-runs.
// GraphQL served: viewer{login}, repository.pullRequest{headRefOid
// reviewThreads(first, after){pageInfo nodes{id isResolved path line
// originalLine comments(first){nodes{databaseId body author{__typename
// login}}} ALIAS: comments(last){nodes{body author{__typename login}}}}}},
// and the resolveReviewThread mutation. Documents are recognised by the
// field names they contain, not parsed.
//
// Authors: a login ending in "[bot]" and DefaultLogin are bot accounts
// (REST user.type "Bot", GraphQL __typename "Bot"); every other login is
// a "User".
package githubtest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/diffpalhq/diffpal/internal/publish"
)

// Defaults of a new Server.
const (
	DefaultToken  = "ghs_FAKEtoken0123456789abcdefghijklmnopq"
	DefaultOwner  = "octo-org"
	DefaultRepo   = "demo"
	DefaultNumber = 42
	DefaultLogin  = "diffpal-bot"
	DefaultHead   = "1111111111111111111111111111111111111111"
	DefaultBase   = "0000000000000000000000000000000000000000"
	// SecondaryRetryAfter is the Retry-After of an injected secondary
	// rate limit, in seconds.
	SecondaryRetryAfter = 7
	// PrimaryResetIn is how far in the future x-ratelimit-reset lies for
	// an injected primary rate limit.
	PrimaryResetIn = 20 * time.Second
)

// File is one file of the pull request as GET pulls/N/files returns it.
// An empty Patch is a binary or too-large file (no "patch" field).
type File struct {
	Filename         string
	PreviousFilename string // renames
	Status           string // added, modified (default), removed, renamed
	Patch            string
}

// Comment is a review comment (in a thread) or an issue comment.
type Comment struct {
	ID        int64
	NodeID    string
	Body      string
	Author    string // REST login
	ReviewID  int64  // review comments
	InReplyTo int64  // replies
	Path      string
	Line      int
	StartLine int
	Side      string
	StartSide string
	CommitID  string
}

// Thread is a review thread: its first comment placed it.
type Thread struct {
	ID        string // GraphQL node id
	Path      string
	Line      int
	StartLine int
	Side      string
	StartSide string
	Resolved  bool
	Comments  []Comment
}

// Review is a pull request review.
type Review struct {
	ID         int64
	Body       string
	Event      string
	State      string
	CommitID   string
	Author     string
	CommentIDs []int64
}

// CheckRun is a created check run.
type CheckRun struct {
	ID                                int64
	Name, HeadSHA, Status, Conclusion string
	Title, Summary                    string
}

// Request is one request the server saw.
type Request struct {
	Method string
	// Path is the full URL path ("/api/v3/repos/OWNER/REPO/...",
	// "/api/graphql").
	Path  string
	Query url.Values
	// Body is the decoded JSON body (map[string]any), nil when none.
	Body any
	// Auth is true when an Authorization header was sent.
	Auth bool
	// Operation names a GraphQL document: "query viewer", "query
	// reviewThreads", "mutation resolveReviewThread", "" for REST or an
	// unknown document.
	Operation string
	// Write is true for REST requests other than GET and for GraphQL
	// mutations.
	Write bool
}

// RateLimit is the form of an injected rate limit.
type RateLimit int

// Rate-limit forms, as GitHub sends them.
const (
	// Secondary: 403, Retry-After, "You have exceeded a secondary rate limit".
	Secondary RateLimit = iota
	// Primary: 403, x-ratelimit-remaining: 0, x-ratelimit-reset in the future.
	Primary
	// TooMany: 429 with Retry-After (GitHub's other secondary form).
	TooMany
)

// Server is the fake GitHub.
type Server struct {
	URL        string // http://127.0.0.1:PORT (also the web UI base)
	APIURL     string // URL + "/api/v3"
	GraphQLURL string // URL + "/api/graphql"
	Token      string
	Owner      string
	Repo       string
	Number     int

	srv *httptest.Server

	mu         sync.Mutex
	head, base string
	commits    map[string]bool
	files      []File
	refused    map[string]bool
	login      string
	viewerOK   bool
	readOnly   bool
	pageSize   int
	nextID     int64
	threads    []*thread
	byComment  map[int64]*thread
	reviews    []*Review
	issue      []*Comment
	checkRuns  []CheckRun
	requests   []Request
	injections []injection
}

type thread struct {
	Thread
	comments []*Comment
}

type injection struct {
	method, suffix string
	status         int
	header         http.Header
	body           string
}

// New starts a fake GitHub, closed when tb's test ends.
func New(tb testing.TB) *Server {
	tb.Helper()
	s := &Server{Token: DefaultToken, Owner: DefaultOwner, Repo: DefaultRepo, Number: DefaultNumber,
		head: DefaultHead, base: DefaultBase, commits: map[string]bool{DefaultHead: true}, refused: map[string]bool{},
		login: DefaultLogin, viewerOK: true, pageSize: 100, nextID: 1000, byComment: map[int64]*thread{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	tb.Cleanup(s.srv.Close)
	s.URL = s.srv.URL
	s.APIURL = s.URL + "/api/v3"
	s.GraphQLURL = s.URL + "/api/graphql"
	return s
}

// Target is a publish target for the fake's pull request.
func (s *Server) Target() *publish.Target {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &publish.Target{Host: publish.GitHub, APIURL: s.APIURL, GraphQLURL: s.GraphQLURL, ServerURL: s.URL,
		Token: publish.NewSecret(s.Token), TokenFrom: "GITHUB_TOKEN", Repo: s.Owner + "/" + s.Repo, Number: s.Number,
		HeadSHA: s.head, BaseSHA: s.base, Event: "pull_request"}
}

// SetFiles replaces the pull request's files (its diff).
func (s *Server) SetFiles(files ...File) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files = append([]File(nil), files...)
}

// SetHead moves the pull request's head to sha (a push). Earlier heads
// stay valid commit_ids, as on GitHub.
func (s *Server) SetHead(sha string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.head = sha
	s.commits[sha] = true
}

// RefuseLine makes GitHub refuse comments on path's line on side
// ("RIGHT" or "LEFT") with its 422 even though the diff shows the line
// (the diff changed between reading and posting).
func (s *Server) RefuseLine(path, side string, line int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refused[refKey(path, side, line)] = true
}

func refKey(path, side string, line int) string {
	return fmt.Sprintf("%s\x00%s\x00%d", path, side, line)
}

// SetPageSize caps every page (REST per_page and GraphQL first) at n.
func (s *Server) SetPageSize(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pageSize = max(n, 1)
}

// SetIdentity sets the token's login as REST shows it ("name[bot]" for an
// app; GraphQL then shows "name", as GitHub does). viewer false makes the
// GraphQL viewer query fail as it does for some installation tokens.
func (s *Server) SetIdentity(login string, viewer bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.login, s.viewerOK = login, viewer
}

// RedirectOnce answers the next request matching method ("" any) and
// path suffix ("" any) with 302 Found to location, as a proxy or a moved
// API might.
func (s *Server) RedirectOnce(method, suffix, location string) {
	h := http.Header{}
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Location", location)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.injections = append(s.injections, injection{method: method, suffix: suffix, status: http.StatusFound, header: h,
		body: `{"message":"Moved","documentation_url":"https://docs.github.com/rest"}`})
}

// SetReadOnly makes every write answer 403 "Resource not accessible by
// integration" (REST) or a FORBIDDEN error (GraphQL mutation), like a
// fork's GITHUB_TOKEN.
func (s *Server) SetReadOnly(ro bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.readOnly = ro
}

// RateLimitOnce answers the next request whose method is method ("" any)
// and whose path ends with suffix ("" any) with a rate limit of form rl.
func (s *Server) RateLimitOnce(method, suffix string, rl RateLimit) {
	h := http.Header{}
	h.Set("Content-Type", "application/json; charset=utf-8")
	var status int
	var body string
	switch rl {
	case Primary:
		status = http.StatusForbidden
		h.Set("X-Ratelimit-Limit", "5000")
		h.Set("X-Ratelimit-Remaining", "0")
		h.Set("X-Ratelimit-Used", "5000")
		h.Set("X-Ratelimit-Resource", "core")
		h.Set("X-Ratelimit-Reset", strconv.FormatInt(time.Now().Add(PrimaryResetIn).Unix(), 10))
		body = `{"message":"API rate limit exceeded for installation ID 12345678. If you reach out to GitHub Support for help, please include the request ID 0000:0000:0000000:0000000:00000000.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api","status":"403"}`
	case TooMany:
		status = http.StatusTooManyRequests
		h.Set("Retry-After", strconv.Itoa(SecondaryRetryAfter))
		body = `{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID 0000:0000:0000000:0000000:00000000.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits","status":"429"}`
	default:
		status = http.StatusForbidden
		h.Set("Retry-After", strconv.Itoa(SecondaryRetryAfter))
		body = `{"message":"You have exceeded a secondary rate limit and have been temporarily blocked from content creation. Please retry your request again later. If you reach out to GitHub Support for help, please include the request ID 0000:0000:0000000:0000000:00000000.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits","status":"403"}`
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.injections = append(s.injections, injection{method: method, suffix: suffix, status: status, header: h, body: body})
}

// FailOnce answers the next matching request (as RateLimitOnce) with
// status and body (JSON).
func (s *Server) FailOnce(method, suffix string, status int, body string) {
	h := http.Header{}
	h.Set("Content-Type", "application/json; charset=utf-8")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.injections = append(s.injections, injection{method: method, suffix: suffix, status: status, header: h, body: body})
}

// AddThread seeds a review thread whose first comment is by author,
// placed at path:line on side (GitHub does not check it); it returns the
// thread's node id.
func (s *Server) AddThread(author, path string, line int, side, body string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	rv := s.newReview(author, "", "COMMENT", s.head)
	c := &Comment{ID: s.id(), Body: body, Author: author, ReviewID: rv.ID, Path: path, Line: line, Side: side, CommitID: s.head}
	c.NodeID = nodeID("PRRC_", c.ID)
	rv.CommentIDs = append(rv.CommentIDs, c.ID)
	th := s.newThread(c)
	return th.ID
}

// AddReply seeds a reply by author on the thread threadID (its last
// comment then); it returns the reply's id, 0 when there is no such thread.
func (s *Server) AddReply(threadID, author, body string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, th := range s.threads {
		if th.ID != threadID {
			continue
		}
		top := th.comments[0]
		rv := s.newReview(author, "", "COMMENT", s.head)
		c := &Comment{ID: s.id(), Body: body, Author: author, ReviewID: rv.ID, InReplyTo: top.ID, Path: top.Path, Line: top.Line,
			StartLine: top.StartLine, Side: top.Side, StartSide: top.StartSide, CommitID: top.CommitID}
		c.NodeID = nodeID("PRRC_", c.ID)
		rv.CommentIDs = append(rv.CommentIDs, c.ID)
		th.comments = append(th.comments, c)
		s.byComment[c.ID] = th
		return c.ID
	}
	return 0
}

// AddIssueComment seeds an issue (conversation) comment; it returns its id.
func (s *Server) AddIssueComment(author, body string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := &Comment{ID: s.id(), Body: body, Author: author}
	c.NodeID = nodeID("IC_", c.ID)
	s.issue = append(s.issue, c)
	return c.ID
}

// ResolveThread resolves a thread as a reviewer would.
func (s *Server) ResolveThread(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, th := range s.threads {
		if th.ID == id {
			th.Resolved = true
		}
	}
}

// Threads returns the review threads, oldest first.
func (s *Server) Threads() []Thread {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Thread, 0, len(s.threads))
	for _, th := range s.threads {
		t := th.Thread
		for _, c := range th.comments {
			t.Comments = append(t.Comments, *c)
		}
		out = append(out, t)
	}
	return out
}

// IssueComments returns the pull request's conversation comments (where
// the summary lives), oldest first.
func (s *Server) IssueComments() []Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Comment, 0, len(s.issue))
	for _, c := range s.issue {
		out = append(out, *c)
	}
	return out
}

// Reviews returns the reviews, oldest first.
func (s *Server) Reviews() []Review {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Review, 0, len(s.reviews))
	for _, r := range s.reviews {
		c := *r
		c.CommentIDs = append([]int64(nil), r.CommentIDs...)
		out = append(out, c)
	}
	return out
}

// CheckRuns returns the created check runs.
func (s *Server) CheckRuns() []CheckRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]CheckRun(nil), s.checkRuns...)
}

// Requests returns every request seen, in order (rate-limited and failed
// ones included).
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Writes returns the requests with Write set.
func (s *Server) Writes() []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Write {
			out = append(out, r)
		}
	}
	return out
}

// ResetRequests forgets the requests seen so far.
func (s *Server) ResetRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = nil
}

// ---- serving

const maxRequestBody = 4 << 20

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody+1))
	if err != nil || len(raw) > maxRequestBody {
		writeJSON(w, http.StatusRequestEntityTooLarge, map[string]any{"message": "Request body too large"})
		return
	}
	var body any
	decodeErr := error(nil)
	if len(strings.TrimSpace(string(raw))) > 0 {
		decodeErr = json.Unmarshal(raw, &body)
	}
	isGQL := r.URL.Path == "/api/graphql"
	op := ""
	if isGQL {
		if m, ok := body.(map[string]any); ok {
			q, _ := m["query"].(string)
			op = operation(q)
		}
	}
	req := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Body: body, Auth: r.Header.Get("Authorization") != "", Operation: op,
		Write: (!isGQL && r.Method != http.MethodGet) || strings.HasPrefix(op, "mutation")}

	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, req)
	for i, in := range s.injections {
		if (in.method == "" || in.method == r.Method) && strings.HasSuffix(r.URL.Path, in.suffix) {
			s.injections = append(s.injections[:i], s.injections[i+1:]...)
			for k, v := range in.header {
				w.Header()[k] = v
			}
			w.WriteHeader(in.status)
			io.WriteString(w, in.body)
			return
		}
	}
	doc := "https://docs.github.com/rest"
	if isGQL {
		doc = "https://docs.github.com/graphql"
	}
	switch auth := r.Header.Get("Authorization"); {
	case auth == "":
		msg := "Requires authentication"
		if isGQL {
			msg = "This endpoint requires you to be authenticated."
		}
		writeJSON(w, http.StatusUnauthorized, ghErr(msg, doc, 401))
		return
	case auth != "Bearer "+s.Token && auth != "token "+s.Token:
		writeJSON(w, http.StatusUnauthorized, ghErr("Bad credentials", doc, 401))
		return
	}
	if decodeErr != nil {
		writeJSON(w, http.StatusBadRequest, ghErr("Problems parsing JSON", doc, 400))
		return
	}
	s.rateHeaders(w)
	if isGQL {
		if r.Method != http.MethodPost {
			writeJSON(w, http.StatusNotFound, ghErr("Not Found", doc, 404))
			return
		}
		s.graphql(w, body, op)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/api/v3/")
	if !ok {
		writeJSON(w, http.StatusNotFound, ghErr("Not Found", doc, 404))
		return
	}
	if s.readOnly && r.Method != http.MethodGet {
		writeJSON(w, http.StatusForbidden, ghErr("Resource not accessible by integration", "https://docs.github.com/rest/pulls/reviews#create-a-review-for-a-pull-request", 403))
		return
	}
	s.rest(w, r, rest, body)
}

func (s *Server) rateHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("X-Ratelimit-Limit", "5000")
	h.Set("X-Ratelimit-Remaining", "4999")
	h.Set("X-Ratelimit-Used", "1")
	h.Set("X-Ratelimit-Resource", "core")
	h.Set("X-Ratelimit-Reset", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10))
	h.Set("X-Github-Api-Version-Selected", "2022-11-28")
}

func ghErr(msg, doc string, status int) map[string]any {
	return map[string]any{"message": msg, "documentation_url": doc, "status": strconv.Itoa(status)}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// rest routes a REST path (after "/api/v3/").
func (s *Server) rest(w http.ResponseWriter, r *http.Request, path string, body any) {
	notFound := func() {
		writeJSON(w, http.StatusNotFound, ghErr("Not Found", "https://docs.github.com/rest", 404))
	}
	seg := strings.Split(strings.Trim(path, "/"), "/")
	if len(seg) < 4 || seg[0] != "repos" || seg[1] != s.Owner || seg[2] != s.Repo {
		notFound()
		return
	}
	seg = seg[3:]
	in, _ := body.(map[string]any)
	num := func(s string) (int64, bool) {
		n, err := strconv.ParseInt(s, 10, 64)
		return n, err == nil && n > 0
	}
	pr := func(x string) bool {
		n, ok := num(x)
		return ok && n == int64(s.Number)
	}
	m := r.Method
	switch {
	case len(seg) == 3 && seg[0] == "pulls" && seg[2] == "files" && m == http.MethodGet:
		if !pr(seg[1]) {
			notFound()
			return
		}
		s.listFiles(w, r)
	case len(seg) == 3 && seg[0] == "pulls" && seg[2] == "reviews" && m == http.MethodPost:
		if !pr(seg[1]) {
			notFound()
			return
		}
		s.createReview(w, in)
	case len(seg) == 5 && seg[0] == "pulls" && seg[2] == "reviews" && seg[4] == "comments" && m == http.MethodGet:
		id, ok := num(seg[3])
		if !pr(seg[1]) || !ok {
			notFound()
			return
		}
		var rv *Review
		for _, x := range s.reviews {
			if x.ID == id {
				rv = x
			}
		}
		if rv == nil {
			notFound()
			return
		}
		var items []any
		for _, cid := range rv.CommentIDs {
			if th := s.byComment[cid]; th != nil {
				for _, c := range th.comments {
					if c.ID == cid {
						items = append(items, s.reviewCommentJSON(c))
					}
				}
			}
		}
		s.page(w, r, items)
	case len(seg) == 3 && seg[0] == "pulls" && seg[2] == "comments" && m == http.MethodGet:
		if !pr(seg[1]) {
			notFound()
			return
		}
		var items []any
		for _, th := range s.threads {
			for _, c := range th.comments {
				items = append(items, s.reviewCommentJSON(c))
			}
		}
		sort.Slice(items, func(i, j int) bool {
			return items[i].(map[string]any)["id"].(int64) < items[j].(map[string]any)["id"].(int64)
		})
		s.page(w, r, items)
	case len(seg) == 3 && seg[0] == "pulls" && seg[2] == "comments" && m == http.MethodPost:
		if !pr(seg[1]) {
			notFound()
			return
		}
		if irt, ok := in["in_reply_to"].(float64); ok {
			s.reply(w, int64(irt), in)
			return
		}
		s.createComment(w, in)
	case len(seg) == 5 && seg[0] == "pulls" && seg[2] == "comments" && seg[4] == "replies" && m == http.MethodPost:
		id, ok := num(seg[3])
		if !pr(seg[1]) || !ok {
			notFound()
			return
		}
		s.reply(w, id, in)
	case len(seg) == 3 && seg[0] == "pulls" && seg[1] == "comments" && m == http.MethodPatch:
		id, ok := num(seg[2])
		th := s.byComment[id]
		if !ok || th == nil {
			notFound()
			return
		}
		b, ok := in["body"].(string)
		if !ok || b == "" {
			s.invalid(w, "PullRequestReviewComment", "body", "missing_field", "https://docs.github.com/rest/pulls/comments#update-a-review-comment-for-a-pull-request")
			return
		}
		for _, c := range th.comments {
			if c.ID == id {
				c.Body = b
				writeJSON(w, http.StatusOK, s.reviewCommentJSON(c))
			}
		}
	case len(seg) == 3 && seg[0] == "issues" && seg[2] == "comments" && m == http.MethodGet:
		if !pr(seg[1]) {
			notFound()
			return
		}
		items := make([]any, 0, len(s.issue))
		for _, c := range s.issue {
			items = append(items, s.issueCommentJSON(c))
		}
		s.page(w, r, items)
	case len(seg) == 3 && seg[0] == "issues" && seg[2] == "comments" && m == http.MethodPost:
		if !pr(seg[1]) {
			notFound()
			return
		}
		b, ok := in["body"].(string)
		if !ok || b == "" {
			s.invalid(w, "IssueComment", "body", "missing_field", "https://docs.github.com/rest/issues/comments#create-an-issue-comment")
			return
		}
		c := &Comment{ID: s.id(), Body: b, Author: s.login}
		c.NodeID = nodeID("IC_", c.ID)
		s.issue = append(s.issue, c)
		writeJSON(w, http.StatusCreated, s.issueCommentJSON(c))
	case len(seg) == 3 && seg[0] == "issues" && seg[1] == "comments" && m == http.MethodPatch:
		id, ok := num(seg[2])
		var c *Comment
		for _, x := range s.issue {
			if ok && x.ID == id {
				c = x
			}
		}
		if c == nil {
			notFound()
			return
		}
		b, ok := in["body"].(string)
		if !ok || b == "" {
			s.invalid(w, "IssueComment", "body", "missing_field", "https://docs.github.com/rest/issues/comments#update-an-issue-comment")
			return
		}
		c.Body = b
		writeJSON(w, http.StatusOK, s.issueCommentJSON(c))
	case len(seg) == 1 && seg[0] == "check-runs" && m == http.MethodPost:
		s.createCheckRun(w, in)
	default:
		notFound()
	}
}

// invalid is GitHub's 422 "Validation Failed" for one field.
func (s *Server) invalid(w http.ResponseWriter, resource, field, code, doc string) {
	writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed",
		"errors": []any{map[string]any{"resource": resource, "code": code, "field": field}}, "documentation_url": doc, "status": "422"})
}

// page writes one page of items with GitHub's Link header.
func (s *Server) page(w http.ResponseWriter, r *http.Request, items []any) {
	q := r.URL.Query()
	per := 30
	if v, err := strconv.Atoi(q.Get("per_page")); err == nil && v > 0 {
		per = min(v, 100)
	}
	per = min(per, s.pageSize)
	pg := 1
	if v, err := strconv.Atoi(q.Get("page")); err == nil && v > 0 {
		pg = v
	}
	last := max((len(items)+per-1)/per, 1)
	lo, hi := min((pg-1)*per, len(items)), min(pg*per, len(items))
	link := func(p int, rel string) string {
		q2 := url.Values{}
		for k, v := range q {
			q2[k] = v
		}
		q2.Set("page", strconv.Itoa(p))
		return fmt.Sprintf(`<%s%s?%s>; rel="%s"`, s.URL, r.URL.Path, q2.Encode(), rel)
	}
	var links []string
	if pg > 1 {
		links = append(links, link(pg-1, "prev"))
	}
	if pg < last {
		links = append(links, link(pg+1, "next"), link(last, "last"))
	}
	if pg > 1 {
		links = append(links, link(1, "first"))
	}
	if len(links) > 0 {
		w.Header().Set("Link", strings.Join(links, ", "))
	}
	out := items[lo:hi]
	if out == nil {
		out = []any{}
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) listFiles(w http.ResponseWriter, r *http.Request) {
	items := make([]any, 0, len(s.files))
	for _, f := range s.files {
		st := f.Status
		if st == "" {
			st = "modified"
			if f.PreviousFilename != "" {
				st = "renamed"
			}
		}
		adds, dels := 0, 0
		for _, ln := range strings.Split(f.Patch, "\n") {
			switch {
			case strings.HasPrefix(ln, "+"):
				adds++
			case strings.HasPrefix(ln, "-"):
				dels++
			}
		}
		m := map[string]any{"sha": "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "filename": f.Filename, "status": st,
			"additions": adds, "deletions": dels, "changes": adds + dels,
			"blob_url":     fmt.Sprintf("%s/%s/%s/blob/%s/%s", s.URL, s.Owner, s.Repo, s.head, f.Filename),
			"raw_url":      fmt.Sprintf("%s/%s/%s/raw/%s/%s", s.URL, s.Owner, s.Repo, s.head, f.Filename),
			"contents_url": fmt.Sprintf("%s/repos/%s/%s/contents/%s?ref=%s", s.APIURL, s.Owner, s.Repo, f.Filename, s.head)}
		if f.Patch != "" {
			m["patch"] = f.Patch
		}
		if f.PreviousFilename != "" {
			m["previous_filename"] = f.PreviousFilename
		}
		items = append(items, m)
	}
	s.page(w, r, items)
}

// hunk is one hunk's commentable lines per side.
type hunk struct{ right, left map[int]bool }

func hunks(patch string) []hunk {
	var out []hunk
	var cur *hunk
	oldLn, newLn := 0, 0
	re := regexp.MustCompile(`^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@`)
	for _, ln := range strings.Split(patch, "\n") {
		if m := re.FindStringSubmatch(ln); m != nil {
			out = append(out, hunk{right: map[int]bool{}, left: map[int]bool{}})
			cur = &out[len(out)-1]
			oldLn, _ = strconv.Atoi(m[1])
			newLn, _ = strconv.Atoi(m[2])
			continue
		}
		if cur == nil {
			continue
		}
		switch {
		case strings.HasPrefix(ln, "+"):
			cur.right[newLn] = true
			newLn++
		case strings.HasPrefix(ln, "-"):
			cur.left[oldLn] = true
			oldLn++
		case strings.HasPrefix(ln, " "):
			cur.right[newLn], cur.left[oldLn] = true, true
			newLn++
			oldLn++
		}
	}
	return out
}

// place checks a comment's position the way GitHub does; it returns the
// field at fault and GitHub's words, or "" when the position is good.
func (s *Server) place(path string, line int, side string, start int, startSide string) (field, msg string) {
	var f *File
	for i := range s.files {
		if s.files[i].Filename == path {
			f = &s.files[i]
		}
	}
	if f == nil || f.Patch == "" {
		return "path", "Path could not be resolved"
	}
	hs := hunks(f.Patch)
	in := func(h hunk, sd string, l int) bool {
		if s.refused[refKey(path, sd, l)] {
			return false
		}
		if sd == "LEFT" {
			return h.left[l]
		}
		return h.right[l]
	}
	idx := -1
	for i, h := range hs {
		if in(h, side, line) {
			idx = i
		}
	}
	if idx < 0 {
		return "line", "Line could not be resolved"
	}
	if start > 0 {
		if start >= line && startSide == side {
			return "start_line", "Start line must precede the end line."
		}
		if !in(hs[idx], startSide, start) {
			return "start_line", "Start line must be part of the same hunk as the line."
		}
	}
	return "", ""
}

type draft struct {
	path, body, side, startSide string
	line, start                 int
}

// parseDraft reads a comment's placement fields; msg is GitHub's
// complaint when a required one is missing or wrong.
func parseDraft(m map[string]any) (d draft, msg string) {
	str := func(k string) string { v, _ := m[k].(string); return v }
	intv := func(k string) (int, bool) {
		v, ok := m[k].(float64)
		return int(v), ok && v == float64(int(v))
	}
	d.path, d.body = str("path"), str("body")
	if _, ok := m["position"]; ok {
		return d, "the fake GitHub takes line/side comments only, not position"
	}
	if d.path == "" {
		return d, `"path" wasn't supplied.`
	}
	if d.body == "" {
		return d, `"body" wasn't supplied.`
	}
	line, ok := intv("line")
	if !ok || line <= 0 {
		return d, `"line" wasn't supplied.`
	}
	d.line = line
	d.side = str("side")
	if d.side == "" {
		d.side = "RIGHT"
	}
	if d.side != "RIGHT" && d.side != "LEFT" {
		return d, fmt.Sprintf("%q is not a member of [\"LEFT\", \"RIGHT\"] (side)", d.side)
	}
	if _, has := m["start_line"]; has {
		st, ok := intv("start_line")
		if !ok || st <= 0 {
			return d, `"start_line" is not a positive integer.`
		}
		d.start = st
		d.startSide = str("start_side")
		if d.startSide == "" {
			d.startSide = d.side
		}
		if d.startSide != "RIGHT" && d.startSide != "LEFT" {
			return d, fmt.Sprintf("%q is not a member of [\"LEFT\", \"RIGHT\"] (start_side)", d.startSide)
		}
	} else if _, has := m["start_side"]; has {
		return d, `"start_side" needs "start_line".`
	}
	return d, ""
}

func invalidRequest(w http.ResponseWriter, msg, doc string) {
	writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "Invalid request.\n\n" + msg, "documentation_url": doc, "status": "422"})
}

func (s *Server) createReview(w http.ResponseWriter, in map[string]any) {
	const doc = "https://docs.github.com/rest/pulls/reviews#create-a-review-for-a-pull-request"
	if in == nil {
		invalidRequest(w, "a JSON object is required.", doc)
		return
	}
	unprocessable := func(msg string) {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "Unprocessable Entity", "errors": []string{msg}, "documentation_url": doc, "status": "422"})
	}
	commit, _ := in["commit_id"].(string)
	if commit == "" {
		commit = s.head
	} else if !s.commits[commit] {
		unprocessable("Commit " + commit + " is not part of the pull request")
		return
	}
	event, _ := in["event"].(string)
	body, _ := in["body"].(string)
	switch event {
	case "", "APPROVE", "REQUEST_CHANGES", "COMMENT":
	default:
		invalidRequest(w, fmt.Sprintf("%q is not a member of [\"APPROVE\", \"REQUEST_CHANGES\", \"COMMENT\"].", event), doc)
		return
	}
	if (event == "COMMENT" || event == "REQUEST_CHANGES") && body == "" {
		unprocessable("Body is required when using " + event)
		return
	}
	var drafts []draft
	if raw, ok := in["comments"]; ok {
		list, ok := raw.([]any)
		if !ok {
			invalidRequest(w, `"comments" is not an array.`, doc)
			return
		}
		for _, x := range list {
			m, _ := x.(map[string]any)
			if m == nil {
				invalidRequest(w, `a comment is not an object.`, doc)
				return
			}
			d, msg := parseDraft(m)
			if msg != "" {
				invalidRequest(w, msg, doc)
				return
			}
			if _, why := s.place(d.path, d.line, d.side, d.start, d.startSide); why != "" {
				// The whole review is refused; nothing is created.
				unprocessable(why)
				return
			}
			drafts = append(drafts, d)
		}
	}
	state := "COMMENTED"
	switch event {
	case "":
		state = "PENDING"
	case "APPROVE":
		state = "APPROVED"
	case "REQUEST_CHANGES":
		state = "CHANGES_REQUESTED"
	}
	rv := s.newReview(s.login, body, event, commit)
	rv.State = state
	for _, d := range drafts {
		c := &Comment{ID: s.id(), Body: d.body, Author: s.login, ReviewID: rv.ID, Path: d.path, Line: d.line, StartLine: d.start,
			Side: d.side, StartSide: d.startSide, CommitID: commit}
		c.NodeID = nodeID("PRRC_", c.ID)
		rv.CommentIDs = append(rv.CommentIDs, c.ID)
		s.newThread(c)
	}
	writeJSON(w, http.StatusOK, s.reviewJSON(rv))
}

func (s *Server) createComment(w http.ResponseWriter, in map[string]any) {
	const doc = "https://docs.github.com/rest/pulls/comments#create-a-review-comment-for-a-pull-request"
	if in == nil {
		invalidRequest(w, "a JSON object is required.", doc)
		return
	}
	commit, _ := in["commit_id"].(string)
	if commit == "" {
		invalidRequest(w, `"commit_id" wasn't supplied.`, doc)
		return
	}
	d, msg := parseDraft(in)
	if msg != "" {
		invalidRequest(w, msg, doc)
		return
	}
	if !s.commits[commit] {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed",
			"errors":            []any{map[string]any{"resource": "PullRequestReviewComment", "code": "custom", "field": "commit_id", "message": "commit_id is not part of the pull request"}},
			"documentation_url": doc, "status": "422"})
		return
	}
	if field, why := s.place(d.path, d.line, d.side, d.start, d.startSide); why != "" {
		m := "could not be resolved"
		if field == "start_line" {
			m = strings.TrimPrefix(why, "Start line ")
		}
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed",
			"errors":            []any{map[string]any{"resource": "PullRequestReviewComment", "code": "custom", "field": "pull_request_review_thread." + field, "message": m}},
			"documentation_url": doc, "status": "422"})
		return
	}
	// A lone review comment is a review of its own on GitHub.
	rv := s.newReview(s.login, "", "COMMENT", commit)
	c := &Comment{ID: s.id(), Body: d.body, Author: s.login, ReviewID: rv.ID, Path: d.path, Line: d.line, StartLine: d.start,
		Side: d.side, StartSide: d.startSide, CommitID: commit}
	c.NodeID = nodeID("PRRC_", c.ID)
	rv.CommentIDs = append(rv.CommentIDs, c.ID)
	s.newThread(c)
	writeJSON(w, http.StatusCreated, s.reviewCommentJSON(c))
}

func (s *Server) reply(w http.ResponseWriter, to int64, in map[string]any) {
	const doc = "https://docs.github.com/rest/pulls/comments#create-a-reply-for-a-review-comment"
	th := s.byComment[to]
	if th == nil {
		writeJSON(w, http.StatusNotFound, ghErr("Not Found", doc, 404))
		return
	}
	b, _ := in["body"].(string)
	if b == "" {
		invalidRequest(w, `"body" wasn't supplied.`, doc)
		return
	}
	top := th.comments[0]
	rv := s.newReview(s.login, "", "COMMENT", s.head)
	c := &Comment{ID: s.id(), Body: b, Author: s.login, ReviewID: rv.ID, InReplyTo: top.ID, Path: top.Path, Line: top.Line,
		StartLine: top.StartLine, Side: top.Side, StartSide: top.StartSide, CommitID: top.CommitID}
	c.NodeID = nodeID("PRRC_", c.ID)
	rv.CommentIDs = append(rv.CommentIDs, c.ID)
	th.comments = append(th.comments, c)
	s.byComment[c.ID] = th
	writeJSON(w, http.StatusCreated, s.reviewCommentJSON(c))
}

func (s *Server) createCheckRun(w http.ResponseWriter, in map[string]any) {
	const doc = "https://docs.github.com/rest/checks/runs#create-a-check-run"
	str := func(k string) string { v, _ := in[k].(string); return v }
	name, sha, status, conclusion := str("name"), str("head_sha"), str("status"), str("conclusion")
	if name == "" {
		invalidRequest(w, `"name" wasn't supplied.`, doc)
		return
	}
	if sha == "" {
		invalidRequest(w, `"head_sha" wasn't supplied.`, doc)
		return
	}
	if !s.commits[sha] {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "No commit found for SHA: " + sha, "documentation_url": doc, "status": "422"})
		return
	}
	switch status {
	case "":
		status = "queued"
		if conclusion != "" {
			status = "completed"
		}
	case "queued", "in_progress", "completed", "waiting", "requested", "pending":
	default:
		invalidRequest(w, fmt.Sprintf("%q is not a member of [\"queued\", \"in_progress\", \"completed\", \"waiting\", \"requested\", \"pending\"].", status), doc)
		return
	}
	switch conclusion {
	case "":
		if status == "completed" {
			invalidRequest(w, `"conclusion" wasn't supplied.`, doc)
			return
		}
	case "action_required", "cancelled", "failure", "neutral", "success", "skipped", "stale", "timed_out":
	default:
		invalidRequest(w, fmt.Sprintf("%q is not a member of the conclusions.", conclusion), doc)
		return
	}
	var title, summary string
	if o, ok := in["output"].(map[string]any); ok {
		title, _ = o["title"].(string)
		summary, _ = o["summary"].(string)
		if title == "" || summary == "" {
			invalidRequest(w, `"title" and "summary" are required in "output".`, doc)
			return
		}
	}
	cr := CheckRun{ID: s.id(), Name: name, HeadSHA: sha, Status: status, Conclusion: conclusion, Title: title, Summary: summary}
	s.checkRuns = append(s.checkRuns, cr)
	now := time.Now().UTC().Format(time.RFC3339)
	out := map[string]any{"id": cr.ID, "node_id": nodeID("CR_", cr.ID), "head_sha": sha, "external_id": "",
		"url":      fmt.Sprintf("%s/repos/%s/%s/check-runs/%d", s.APIURL, s.Owner, s.Repo, cr.ID),
		"html_url": fmt.Sprintf("%s/%s/%s/runs/%d", s.URL, s.Owner, s.Repo, cr.ID), "details_url": "",
		"status": status, "conclusion": nil, "started_at": now, "completed_at": nil, "name": name,
		"output": map[string]any{"title": nilIfEmpty(title), "summary": nilIfEmpty(summary), "text": nil, "annotations_count": 0,
			"annotations_url": fmt.Sprintf("%s/repos/%s/%s/check-runs/%d/annotations", s.APIURL, s.Owner, s.Repo, cr.ID)},
		"check_suite":   map[string]any{"id": s.id()},
		"app":           map[string]any{"id": 15368, "slug": "github-actions", "name": "GitHub Actions"},
		"pull_requests": []any{}}
	if conclusion != "" {
		out["conclusion"], out["completed_at"] = conclusion, now
	}
	writeJSON(w, http.StatusCreated, out)
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// ---- state helpers (s.mu held)

func (s *Server) id() int64 {
	s.nextID++
	return s.nextID
}

func nodeID(prefix string, id int64) string {
	return prefix + base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprintf("fake:%d", id)))
}

func (s *Server) newReview(author, body, event, commit string) *Review {
	rv := &Review{ID: s.id(), Body: body, Event: event, State: "COMMENTED", CommitID: commit, Author: author}
	s.reviews = append(s.reviews, rv)
	return rv
}

func (s *Server) newThread(c *Comment) *thread {
	th := &thread{Thread: Thread{ID: nodeID("PRRT_", c.ID), Path: c.Path, Line: c.Line, StartLine: c.StartLine, Side: c.Side, StartSide: c.StartSide}}
	th.comments = []*Comment{c}
	s.threads = append(s.threads, th)
	s.byComment[c.ID] = th
	return th
}

// userType is GitHub's account type of a login: "Bot" for an app's
// account (and the fake's own DefaultLogin), "User" otherwise.
func userType(login string) string {
	if strings.HasSuffix(login, "[bot]") || login == DefaultLogin {
		return "Bot"
	}
	return "User"
}

func (s *Server) user(login string) map[string]any {
	typ := userType(login)
	return map[string]any{"login": login, "id": 4242, "node_id": "U_fake", "type": typ, "site_admin": false,
		"html_url": s.URL + "/" + url.PathEscape(login)}
}

func (s *Server) reviewJSON(rv *Review) map[string]any {
	return map[string]any{"id": rv.ID, "node_id": nodeID("PRR_", rv.ID), "user": s.user(rv.Author), "body": rv.Body, "state": rv.State,
		"html_url":         fmt.Sprintf("%s/%s/%s/pull/%d#pullrequestreview-%d", s.URL, s.Owner, s.Repo, s.Number, rv.ID),
		"pull_request_url": fmt.Sprintf("%s/repos/%s/%s/pulls/%d", s.APIURL, s.Owner, s.Repo, s.Number),
		"commit_id":        rv.CommitID, "submitted_at": time.Now().UTC().Format(time.RFC3339), "author_association": "NONE"}
}

func (s *Server) reviewCommentJSON(c *Comment) map[string]any {
	now := time.Now().UTC().Format(time.RFC3339)
	m := map[string]any{"id": c.ID, "node_id": c.NodeID, "pull_request_review_id": c.ReviewID, "diff_hunk": "@@",
		"path": c.Path, "commit_id": c.CommitID, "original_commit_id": c.CommitID, "user": s.user(c.Author), "body": c.Body,
		"created_at": now, "updated_at": now,
		"html_url":           fmt.Sprintf("%s/%s/%s/pull/%d#discussion_r%d", s.URL, s.Owner, s.Repo, s.Number, c.ID),
		"url":                fmt.Sprintf("%s/repos/%s/%s/pulls/comments/%d", s.APIURL, s.Owner, s.Repo, c.ID),
		"pull_request_url":   fmt.Sprintf("%s/repos/%s/%s/pulls/%d", s.APIURL, s.Owner, s.Repo, s.Number),
		"author_association": "NONE", "line": c.Line, "original_line": c.Line, "side": c.Side, "subject_type": "line",
		"start_line": nil, "original_start_line": nil, "start_side": nil}
	if c.StartLine > 0 {
		m["start_line"], m["original_start_line"], m["start_side"] = c.StartLine, c.StartLine, c.StartSide
	}
	if c.InReplyTo != 0 {
		m["in_reply_to_id"] = c.InReplyTo
	}
	return m
}

func (s *Server) issueCommentJSON(c *Comment) map[string]any {
	now := time.Now().UTC().Format(time.RFC3339)
	return map[string]any{"id": c.ID, "node_id": c.NodeID, "body": c.Body, "user": s.user(c.Author), "created_at": now, "updated_at": now,
		"html_url":  fmt.Sprintf("%s/%s/%s/pull/%d#issuecomment-%d", s.URL, s.Owner, s.Repo, s.Number, c.ID),
		"url":       fmt.Sprintf("%s/repos/%s/%s/issues/comments/%d", s.APIURL, s.Owner, s.Repo, c.ID),
		"issue_url": fmt.Sprintf("%s/repos/%s/%s/issues/%d", s.APIURL, s.Owner, s.Repo, s.Number), "author_association": "NONE"}
}

// ---- GraphQL

// operation names a document by the fields it asks for.
func operation(q string) string {
	t := strings.TrimSpace(q)
	switch {
	case strings.HasPrefix(t, "mutation") && strings.Contains(t, "resolveReviewThread"):
		return "mutation resolveReviewThread"
	case strings.HasPrefix(t, "mutation"):
		return "mutation"
	case strings.Contains(t, "reviewThreads"):
		return "query reviewThreads"
	case strings.Contains(t, "viewer"):
		return "query viewer"
	}
	return ""
}

// graphQLLogin is how GraphQL shows a REST login: apps without "[bot]".
func graphQLLogin(l string) string { return strings.TrimSuffix(l, "[bot]") }

var (
	reThreadsFirst  = regexp.MustCompile(`reviewThreads\s*\(\s*first\s*:\s*(\d+)`)
	reThreadsAfter  = regexp.MustCompile(`reviewThreads\s*\([^)]*after\s*:\s*\$(\w+)`)
	reCommentsFirst = regexp.MustCompile(`comments\s*\(\s*first\s*:\s*(\d+)`)
	reCommentsLast  = regexp.MustCompile(`(?:(\w+)\s*:\s*)?comments\s*\(\s*last\s*:\s*(\d+)\s*\)`)
)

// actor is a GraphQL author object; __typename only when the document
// asks for it.
func actor(login string, typename bool) map[string]any {
	a := map[string]any{"login": graphQLLogin(login)}
	if typename {
		a["__typename"] = userType(login)
	}
	return a
}

func gqlErrors(w http.ResponseWriter, data any, errs ...map[string]any) {
	out := map[string]any{"errors": errs}
	if data != nil {
		out["data"] = data
	} else {
		out["data"] = nil
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) graphql(w http.ResponseWriter, body any, op string) {
	in, _ := body.(map[string]any)
	q, _ := in["query"].(string)
	vars, _ := in["variables"].(map[string]any)
	if q == "" {
		gqlErrors(w, nil, map[string]any{"message": "A query attribute must be specified and must be a string."})
		return
	}
	switch op {
	case "query viewer":
		if !s.viewerOK {
			gqlErrors(w, nil, map[string]any{"type": "FORBIDDEN", "path": []any{"viewer"}, "extensions": map[string]any{"saml_failure": false},
				"locations": []any{map[string]any{"line": 1, "column": 9}}, "message": "Resource not accessible by integration"})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"viewer": map[string]any{"login": graphQLLogin(s.login)}}})
	case "query reviewThreads":
		s.gqlThreads(w, q, vars)
	case "mutation resolveReviewThread":
		id, _ := vars["threadId"].(string)
		if id == "" {
			gqlErrors(w, nil, map[string]any{"message": "Variable $threadId of type ID! was provided invalid value", "locations": []any{map[string]any{"line": 1, "column": 10}}})
			return
		}
		if s.readOnly {
			gqlErrors(w, map[string]any{"resolveReviewThread": nil}, map[string]any{"type": "FORBIDDEN", "path": []any{"resolveReviewThread"},
				"locations": []any{map[string]any{"line": 2, "column": 3}}, "message": "Resource not accessible by integration"})
			return
		}
		for _, th := range s.threads {
			if th.ID == id {
				th.Resolved = true
				writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"resolveReviewThread": map[string]any{"thread": map[string]any{"id": th.ID, "isResolved": true}}}})
				return
			}
		}
		gqlErrors(w, map[string]any{"resolveReviewThread": nil}, map[string]any{"type": "NOT_FOUND", "path": []any{"resolveReviewThread"},
			"locations": []any{map[string]any{"line": 2, "column": 3}}, "message": fmt.Sprintf("Could not resolve to a node with the global id of '%s'", id)})
	default:
		gqlErrors(w, nil, map[string]any{"message": "the fake GitHub does not serve this document"})
	}
}

func (s *Server) gqlThreads(w http.ResponseWriter, q string, vars map[string]any) {
	owner, _ := vars["owner"].(string)
	name, _ := vars["name"].(string)
	number, _ := vars["number"].(float64)
	if owner != s.Owner || name != s.Repo {
		gqlErrors(w, map[string]any{"repository": nil}, map[string]any{"type": "NOT_FOUND", "path": []any{"repository"},
			"message": fmt.Sprintf("Could not resolve to a Repository with the name '%s/%s'.", owner, name)})
		return
	}
	if int(number) != s.Number {
		gqlErrors(w, map[string]any{"repository": map[string]any{"pullRequest": nil}}, map[string]any{"type": "NOT_FOUND", "path": []any{"repository", "pullRequest"},
			"message": fmt.Sprintf("Could not resolve to a PullRequest with the number of %d.", int(number))})
		return
	}
	m := reThreadsFirst.FindStringSubmatch(q)
	if m == nil {
		gqlErrors(w, nil, map[string]any{"type": "MISSING_PAGINATION_BOUNDARIES", "path": []any{"repository", "pullRequest", "reviewThreads"},
			"message": "You must provide a `first` or `last` value to properly paginate the `reviewThreads` connection."})
		return
	}
	first, _ := strconv.Atoi(m[1])
	if first < 1 || first > 100 {
		gqlErrors(w, nil, map[string]any{"type": "EXCESSIVE_PAGINATION", "path": []any{"repository", "pullRequest", "reviewThreads"},
			"message": fmt.Sprintf("Requesting %d records on the `reviewThreads` connection exceeds the `first` limit of 100 records.", first)})
		return
	}
	first = min(first, s.pageSize)
	cfirst := 0
	if m := reCommentsFirst.FindStringSubmatch(q); m != nil {
		cfirst, _ = strconv.Atoi(m[1])
	}
	if cfirst < 1 || cfirst > 100 {
		gqlErrors(w, nil, map[string]any{"type": "MISSING_PAGINATION_BOUNDARIES", "path": []any{"repository", "pullRequest", "reviewThreads", "nodes", "comments"},
			"message": "You must provide a `first` or `last` value to properly paginate the `comments` connection."})
		return
	}
	lastAlias, clast := "", 0
	if m := reCommentsLast.FindStringSubmatch(q); m != nil {
		lastAlias = m[1]
		clast, _ = strconv.Atoi(m[2])
		if lastAlias == "" || lastAlias == "comments" {
			// comments(first:) is asked for too: without an alias the two
			// are one field with conflicting arguments.
			gqlErrors(w, nil, map[string]any{"type": "FIELDS_CONFLICT", "path": []any{"repository", "pullRequest", "reviewThreads", "nodes"},
				"message": "Field 'comments' has an argument conflict: {first:\"1\"} or {last:\"1\"}?"})
			return
		}
		if clast < 1 || clast > 100 {
			gqlErrors(w, nil, map[string]any{"type": "EXCESSIVE_PAGINATION", "path": []any{"repository", "pullRequest", "reviewThreads", "nodes", lastAlias},
				"message": fmt.Sprintf("Requesting %d records on the `comments` connection exceeds the `last` limit of 100 records.", clast)})
			return
		}
	}
	typename := strings.Contains(q, "__typename")
	start := 0
	if m := reThreadsAfter.FindStringSubmatch(q); m != nil {
		if c, ok := vars[m[1]].(string); ok && c != "" {
			raw, err := base64.StdEncoding.DecodeString(c)
			n, err2 := strconv.Atoi(strings.TrimPrefix(string(raw), "cursor:v2:"))
			if err != nil || err2 != nil || !strings.HasPrefix(string(raw), "cursor:v2:") {
				gqlErrors(w, nil, map[string]any{"type": "INVALID_CURSOR_ARGUMENTS", "path": []any{"repository", "pullRequest", "reviewThreads"},
					"message": fmt.Sprintf("`%s` does not appear to be a valid cursor.", c)})
				return
			}
			start = n + 1
		}
	}
	start = min(start, len(s.threads))
	end := min(start+first, len(s.threads))
	nodes := []any{}
	for _, th := range s.threads[start:end] {
		var cs []any
		for _, c := range th.comments[:min(cfirst, len(th.comments))] {
			cs = append(cs, map[string]any{"databaseId": c.ID, "body": c.Body, "author": actor(c.Author, typename)})
		}
		node := map[string]any{"id": th.ID, "isResolved": th.Resolved, "path": th.Path, "line": th.Line, "originalLine": th.Line,
			"comments": map[string]any{"nodes": cs}}
		if lastAlias != "" {
			ls := []any{}
			for _, c := range th.comments[max(len(th.comments)-clast, 0):] {
				ls = append(ls, map[string]any{"databaseId": c.ID, "body": c.Body, "author": actor(c.Author, typename)})
			}
			node[lastAlias] = map[string]any{"nodes": ls}
		}
		nodes = append(nodes, node)
	}
	var endCursor any
	if end > start {
		endCursor = base64.StdEncoding.EncodeToString([]byte("cursor:v2:" + strconv.Itoa(end-1)))
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"repository": map[string]any{"pullRequest": map[string]any{
		"headRefOid": s.head,
		"reviewThreads": map[string]any{"pageInfo": map[string]any{"hasNextPage": end < len(s.threads), "endCursor": endCursor},
			"nodes": nodes}}}}})
}
