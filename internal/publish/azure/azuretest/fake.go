// Package azuretest is a stateful fake of the part of the Azure DevOps
// REST API (api-version 7.1) that diffpal publish azure uses, on a
// loopback httptest.Server: connection data, one pull request, its
// iterations and their changes (paged with $top/$skip and nextSkip),
// comment threads and their comments, and pull-request statuses.
//
// It answers with Azure DevOps' JSON shapes ({"value":[…],"count":N}
// envelopes, enum names such as "active" and "text", threadContext with
// leftFileStart/rightFileStart, per-thread comment ids starting at 1, an
// Azure-style error object {"$id","innerException","message","typeName",
// "typeKey","errorCode","eventId"}) and checks what the service checks:
// an Authorization header carrying the token (Bearer, or Basic with the
// token as password), an api-version (a -preview one for connection
// data), the required JSON fields, and thread positions against the
// pull request's iteration (file in the iteration, matching
// changeTrackingId, no base side on an added file, no head side on a
// deleted one, lines within the file when its length is set).
//
// Use:
//
//	s := azuretest.New(t)
//	s.Push("headsha", azuretest.Change{Path: "a.go", Lines: 40})
//	h, _ := azure.New(s.Target("SYSTEM_ACCESSTOKEN"), nil)
//	… publish.Run(ctx, h, …)
//	s.Threads(), s.Statuses(), s.Requests()
package azuretest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/diffpalhq/diffpal/internal/publish"
)

// Wire types, with Azure DevOps' field names.
type (
	// IdentityRef is an identity (author, creator).
	IdentityRef struct {
		ID          string `json:"id"`
		DisplayName string `json:"displayName"`
		UniqueName  string `json:"uniqueName,omitempty"`
		Descriptor  string `json:"descriptor,omitempty"`
		URL         string `json:"url,omitempty"`
		ImageURL    string `json:"imageUrl,omitempty"`
	}
	// Position is a line and 1-based column.
	Position struct {
		Line   int `json:"line"`
		Offset int `json:"offset"`
	}
	// ThreadContext is where a thread sits in a file.
	ThreadContext struct {
		FilePath       string    `json:"filePath"`
		LeftFileStart  *Position `json:"leftFileStart,omitempty"`
		LeftFileEnd    *Position `json:"leftFileEnd,omitempty"`
		RightFileStart *Position `json:"rightFileStart,omitempty"`
		RightFileEnd   *Position `json:"rightFileEnd,omitempty"`
	}
	// IterationContext names the iterations compared when the thread was made.
	IterationContext struct {
		FirstComparingIteration  int `json:"firstComparingIteration"`
		SecondComparingIteration int `json:"secondComparingIteration"`
	}
	// PullRequestThreadContext ties a thread to a change of an iteration.
	PullRequestThreadContext struct {
		ChangeTrackingID int               `json:"changeTrackingId"`
		IterationContext *IterationContext `json:"iterationContext,omitempty"`
	}
	// Comment is one comment of a thread.
	Comment struct {
		ID                     int            `json:"id"`
		ParentCommentID        int            `json:"parentCommentId"`
		Author                 IdentityRef    `json:"author"`
		Content                string         `json:"content"`
		PublishedDate          string         `json:"publishedDate"`
		LastUpdatedDate        string         `json:"lastUpdatedDate"`
		LastContentUpdatedDate string         `json:"lastContentUpdatedDate"`
		CommentType            string         `json:"commentType"`
		UsersLiked             []IdentityRef  `json:"usersLiked"`
		IsDeleted              bool           `json:"isDeleted,omitempty"`
		Links                  map[string]any `json:"_links,omitempty"`
	}
	// Thread is a pull request comment thread (GitPullRequestCommentThread).
	Thread struct {
		ID                       int                       `json:"id"`
		PublishedDate            string                    `json:"publishedDate"`
		LastUpdatedDate          string                    `json:"lastUpdatedDate"`
		Comments                 []Comment                 `json:"comments"`
		Status                   string                    `json:"status,omitempty"`
		ThreadContext            *ThreadContext            `json:"threadContext"`
		PullRequestThreadContext *PullRequestThreadContext `json:"pullRequestThreadContext"`
		Properties               map[string]any            `json:"properties"`
		Identities               any                       `json:"identities"`
		IsDeleted                bool                      `json:"isDeleted"`
		Links                    map[string]any            `json:"_links,omitempty"`
	}
	// StatusContext is a status's genre and name.
	StatusContext struct {
		Name  string `json:"name"`
		Genre string `json:"genre,omitempty"`
	}
	// Status is a pull request status (GitPullRequestStatus).
	Status struct {
		ID           int            `json:"id"`
		State        string         `json:"state"`
		Description  string         `json:"description,omitempty"`
		Context      StatusContext  `json:"context"`
		CreationDate string         `json:"creationDate"`
		UpdatedDate  string         `json:"updatedDate"`
		CreatedBy    IdentityRef    `json:"createdBy"`
		TargetURL    string         `json:"targetUrl,omitempty"`
		IterationID  int            `json:"iterationId,omitempty"`
		Links        map[string]any `json:"_links,omitempty"`
	}
)

// Change is one changed file of an iteration.
type Change struct {
	Path    string // without the leading "/"
	OldPath string // the path before a rename
	// Type is Azure's changeType: "edit" (default), "add", "delete",
	// "rename" or "edit, rename" (set when OldPath is).
	Type string
	// Lines and BaseLines are the file's line counts on the head and the
	// base side; a thread past them is refused. 0: not checked.
	Lines, BaseLines int
}

// Request is one request the fake received.
type Request struct {
	Method string
	Path   string // decoded, e.g. /org/Diff Pal/_apis/git/repositories/…
	Query  url.Values
	// Body is the decoded JSON body (map[string]any, …), nil without one.
	Body any
	// Auth is true when an Authorization header was sent; AuthScheme is
	// its first word ("Bearer", "Basic").
	Auth       bool
	AuthScheme string
}

// Identities the fake knows.
var (
	// Me is the token's identity (connection data's authenticatedUser).
	Me = IdentityRef{ID: "2b5cbd1a-6b3e-4a5f-9a0e-3f4b8f0c1d11", DisplayName: "Diff Pal Build Service (org)", UniqueName: "Build\\7d0e9a38-1c4f-4e52-8d7e-0b6a9a3b5c21", Descriptor: "svc.N2QwZTlhMzgtMWM0Zi00ZTUy"}
	// Other is another user (the pull request's author).
	Other = IdentityRef{ID: "9e8d7c6b-5a49-4838-2716-0a1b2c3d4e5f", DisplayName: "Mallory Author", UniqueName: "mallory@example.com", Descriptor: "aad.OWU4ZDdjNmItNWE0OS00ODM4"}
	// System is the identity of Azure's own system comments.
	System = IdentityRef{ID: "00000002-0000-8888-8000-000000000000", DisplayName: "Microsoft.VisualStudio.Services.TFS", UniqueName: "00000002-0000-8888-8000-000000000000@2c895908-04e0-4952-89fd-54b0046d6288"}
)

// Server is the fake. Its exported fields are fixed at New.
type Server struct {
	// URL is the collection URI (SYSTEM_COLLECTIONURI), with the trailing
	// slash: http://127.0.0.1:PORT/org/.
	URL string
	// Project, RepoID (BUILD_REPOSITORY_ID), RepoName and PR locate the
	// pull request; Token is the one token accepted.
	Project, RepoID, RepoName string
	PR                        int
	Token                     string

	srv *httptest.Server

	mu         sync.Mutex
	reqs       []Request
	pageSize   int
	readOnly   bool
	noConnData bool
	rate       *injected
	fail       *injected
	iterations []iteration
	tracking   map[string]int
	threads    []*Thread
	statuses   []*Status
	clock      int
	// placeholder: iteration 1 is New's empty one, replaced by the first Push.
	placeholder bool
}

type iteration struct {
	id      int
	head    string
	changes []Change
}

type injected struct {
	method, suffix string
	status         int
	retryAfter     string
}

// New starts a fake serving pull request 7 of repository diffpal in team
// project "Diff Pal", with one iteration of no changes (Push adds one)
// and one system thread, as Azure DevOps shows on every pull request.
// The server stops when tb's test ends.
func New(tb testing.TB) *Server {
	s := &Server{Project: "Diff Pal", RepoID: "3f1e2d4c-5b6a-4978-8a9b-0c1d2e3f4a5b", RepoName: "diffpal", PR: 7,
		Token: "azdo-fake-token-9f8e7d6c5b4a", tracking: map[string]int{}}
	s.iterations = []iteration{{id: 1, head: strings.Repeat("0", 40)}}
	s.placeholder = true
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	tb.Cleanup(s.srv.Close)
	s.URL = s.srv.URL + "/org/"
	s.threads = append(s.threads, &Thread{ID: 1, PublishedDate: s.now(), LastUpdatedDate: s.now(),
		Comments: []Comment{{ID: 1, Author: System, Content: "Diff Pal Build Service (org) joined as a reviewer", CommentType: "system",
			PublishedDate: s.now(), LastUpdatedDate: s.now(), LastContentUpdatedDate: s.now(), UsersLiked: []IdentityRef{}}},
		Properties: map[string]any{"CodeReviewThreadType": map[string]any{"$type": "System.String", "$value": "ReviewersUpdate"}}})
	return s
}

// Target is the publish target of the fake's pull request, with the
// token as if read from tokenFrom ("SYSTEM_ACCESSTOKEN" → Bearer,
// "AZURE_DEVOPS_EXT_PAT" → Basic).
func (s *Server) Target(tokenFrom string) *publish.Target {
	return &publish.Target{Host: publish.Azure, APIURL: s.URL, Project: s.Project, Repo: s.RepoID, Number: s.PR,
		Token: publish.NewSecret(s.Token), TokenFrom: tokenFrom, HeadSHA: s.Head()}
}

// Push adds an iteration (a push to the source branch) whose head is head
// and whose changed files are changes; it returns the iteration id. A
// path keeps its changeTrackingId across iterations (a renamed file keeps
// its old path's).
func (s *Server) Push(head string, changes ...Change) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, c := range changes {
		if c.Type == "" {
			changes[i].Type = "edit"
			if c.OldPath != "" {
				changes[i].Type = "edit, rename"
			}
		}
		if _, ok := s.tracking[c.Path]; !ok {
			if id, ok := s.tracking[c.OldPath]; ok && c.OldPath != "" {
				s.tracking[c.Path] = id
			} else {
				s.tracking[c.Path] = len(s.tracking) + 1
			}
		}
	}
	it := iteration{id: len(s.iterations) + 1, head: head, changes: append([]Change(nil), changes...)}
	if s.placeholder {
		s.placeholder, s.iterations, it.id = false, nil, 1
	}
	s.iterations = append(s.iterations, it)
	return it.id
}

// Head is the latest iteration's head commit (lastMergeSourceCommit).
func (s *Server) Head() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.iterations[len(s.iterations)-1].head
}

// SetPageSize caps $top of iteration changes (Azure's own cap is 2000),
// to force several pages.
func (s *Server) SetPageSize(n int) { s.mu.Lock(); s.pageSize = n; s.mu.Unlock() }

// SetReadOnly makes every write answer 403 TF401027 (the token lacks
// "Contribute to pull requests").
func (s *Server) SetReadOnly(ro bool) { s.mu.Lock(); s.readOnly = ro; s.mu.Unlock() }

// FailConnectionData makes connection data answer 500.
func (s *Server) FailConnectionData(fail bool) { s.mu.Lock(); s.noConnData = fail; s.mu.Unlock() }

// RateLimitOnce answers the next request of method ("" for any) with
// status (429, or 403) and Retry-After: retryAfter, as Azure DevOps'
// throttling does; the request after it is served normally.
func (s *Server) RateLimitOnce(method string, status int, retryAfter string) {
	s.mu.Lock()
	s.rate = &injected{method: method, status: status, retryAfter: retryAfter}
	s.mu.Unlock()
}

// FailOnce answers the next request of method whose path ends with suffix
// with status and an error body that echoes the request's Authorization
// header (a service must not, but a proxy might: the client has to keep
// it out of its errors).
func (s *Server) FailOnce(method, suffix string, status int) {
	s.mu.Lock()
	s.fail = &injected{method: method, suffix: suffix, status: status}
	s.mu.Unlock()
}

// AddThread adds a thread written by author: a comment content, status
// ("active", "closed", …) and, when ctx is set, its place in a file
// (ctx.FilePath with the leading "/"). It returns the thread id.
func (s *Server) AddThread(author IdentityRef, status, content string, ctx *ThreadContext) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	th := &Thread{ID: len(s.threads) + 1, PublishedDate: now, LastUpdatedDate: now, Status: status, ThreadContext: ctx,
		Comments: []Comment{{ID: 1, Author: author, Content: content, CommentType: "text", PublishedDate: now,
			LastUpdatedDate: now, LastContentUpdatedDate: now, UsersLiked: []IdentityRef{}}},
		Properties: map[string]any{}}
	s.threads = append(s.threads, th)
	return th.ID
}

// AddComment adds a reply by author to thread id (under its first
// comment), as a reviewer would; it returns the comment id, 0 when there
// is no such thread.
func (s *Server) AddComment(id int, author IdentityRef, content string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id < 1 || id > len(s.threads) {
		return 0
	}
	th := s.threads[id-1]
	now := s.now()
	c := Comment{ID: len(th.Comments) + 1, ParentCommentID: 1, Author: author, Content: content, CommentType: "text", PublishedDate: now,
		LastUpdatedDate: now, LastContentUpdatedDate: now, UsersLiked: []IdentityRef{}}
	th.Comments = append(th.Comments, c)
	th.LastUpdatedDate = now
	return c.ID
}

// SetThreadStatus changes a thread's status as a reviewer would.
func (s *Server) SetThreadStatus(id int, status string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id >= 1 && id <= len(s.threads) {
		s.threads[id-1].Status = status
	}
}

// Threads returns a copy of every thread, in id order.
func (s *Server) Threads() []Thread {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Thread, len(s.threads))
	for i, th := range s.threads {
		out[i] = copyThread(th)
	}
	return out
}

// Statuses returns a copy of every status posted, in order.
func (s *Server) Statuses() []Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Status, len(s.statuses))
	for i, st := range s.statuses {
		out[i] = *st
	}
	return out
}

// Requests returns every request received, in order (refused ones too).
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Writes returns the requests other than GET.
func (s *Server) Writes() []Request {
	var w []Request
	for _, r := range s.Requests() {
		if r.Method != http.MethodGet {
			w = append(w, r)
		}
	}
	return w
}

// ResetRequests forgets the requests received so far.
func (s *Server) ResetRequests() { s.mu.Lock(); s.reqs = nil; s.mu.Unlock() }

func copyThread(th *Thread) Thread {
	c := *th
	c.Comments = append([]Comment(nil), th.Comments...)
	return c
}

// now is a deterministic clock.
func (s *Server) now() string {
	s.clock++
	return time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC).Add(time.Duration(s.clock) * time.Second).Format("2006-01-02T15:04:05.000Z")
}

// azError writes Azure DevOps' error object.
func azError(w http.ResponseWriter, status int, typeKey, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"$id": "1", "innerException": nil, "message": msg,
		"typeName": "Microsoft.VisualStudio.Services.WebApi." + typeKey + ", Microsoft.VisualStudio.Services.WebApi",
		"typeKey":  typeKey, "errorCode": 0, "eventId": 3000})
}

func reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query()}
	if a := r.Header.Get("Authorization"); a != "" {
		rec.Auth = true
		rec.AuthScheme, _, _ = strings.Cut(a, " ")
	}
	raw, _ := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &rec.Body); err != nil {
			s.reqs = append(s.reqs, rec)
			azError(w, http.StatusBadRequest, "VssRequestContentException", "The request body is not valid JSON: "+err.Error())
			return
		}
	}
	s.reqs = append(s.reqs, rec)

	if rl := s.rate; rl != nil && (rl.method == "" || rl.method == r.Method) {
		s.rate = nil
		w.Header().Set("Retry-After", rl.retryAfter)
		w.Header().Set("X-RateLimit-Resource", "Core")
		w.Header().Set("X-RateLimit-Delay", "1.5")
		azError(w, rl.status, "RequestBlockedException", "TF400733: The request has been canceled: Request was blocked due to exceeding usage of resource 'Core' in namespace 'User'.")
		return
	}
	if f := s.fail; f != nil && f.method == r.Method && strings.HasSuffix(r.URL.Path, f.suffix) {
		s.fail = nil
		azError(w, f.status, "VssServiceException", "VS800075: simulated failure for a request with Authorization "+r.Header.Get("Authorization"))
		return
	}
	if !s.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer authorization_uri=https://login.microsoftonline.com/common, Basic realm="https://fake/"`)
		azError(w, http.StatusUnauthorized, "UnauthorizedRequestException", "TF400813: The user '' is not authorized to access this resource.")
		return
	}
	version := r.URL.Query().Get("api-version")
	if version == "" {
		if _, v, ok := strings.Cut(r.Header.Get("Accept"), "api-version="); ok {
			version = strings.TrimSpace(v)
		}
	}
	if version == "" {
		azError(w, http.StatusBadRequest, "VssVersionNotSpecifiedException", fmt.Sprintf("No api-version was supplied for the %q request. The version must be supplied either as part of the Accept header (e.g. \"application/json; api-version=1.0\") or as a query parameter (e.g. \"?api-version=1.0\").", r.Method))
		return
	}
	if !strings.HasPrefix(version, "7.1") {
		azError(w, http.StatusBadRequest, "VssVersionOutOfRangeException", fmt.Sprintf("The requested REST API version of %s is out of range for this server.", version))
		return
	}

	seg := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(seg) == 3 && seg[0] == "org" && seg[1] == "_apis" && strings.EqualFold(seg[2], "connectionData") {
		if !strings.Contains(version, "-preview") {
			azError(w, http.StatusBadRequest, "VssInvalidPreviewVersionException", fmt.Sprintf("The requested version %q of the resource is under preview. The -preview flag must be supplied in the api-version for such requests. For example: \"7.1-preview\"", version))
			return
		}
		s.connectionData(w, r)
		return
	}
	if len(seg) < 8 || seg[0] != "org" || !strings.EqualFold(seg[1], s.Project) || seg[2] != "_apis" || seg[3] != "git" ||
		!strings.EqualFold(seg[4], "repositories") || !strings.EqualFold(seg[6], "pullRequests") {
		azError(w, http.StatusNotFound, "ApiResourceNotFoundException", "API resource location was not found for "+r.URL.Path)
		return
	}
	if !strings.EqualFold(seg[5], s.RepoID) && !strings.EqualFold(seg[5], s.RepoName) {
		azError(w, http.StatusNotFound, "GitRepositoryNotFoundException", fmt.Sprintf("TF401019: The Git repository with name or identifier %s does not exist or you do not have permissions for the operation you are attempting.", seg[5]))
		return
	}
	if seg[7] != strconv.Itoa(s.PR) {
		azError(w, http.StatusNotFound, "GitPullRequestNotFoundException", "TF401180: The requested pull request was not found.")
		return
	}
	if r.Method != http.MethodGet && s.readOnly {
		azError(w, http.StatusForbidden, "GitNeedsPermissionException", "TF401027: You need the Git 'PullRequestContribute' permission to perform this action. Details: identity 'Build\\7d0e9a38-1c4f-4e52-8d7e-0b6a9a3b5c21', scope 'repository'.")
		return
	}
	rest := seg[8:]
	route := func(method string, parts ...string) bool {
		if r.Method != method || len(rest) != len(parts) {
			return false
		}
		for i, p := range parts {
			if p != "*" && !strings.EqualFold(rest[i], p) {
				return false
			}
		}
		return true
	}
	switch {
	case route(http.MethodGet):
		s.pullRequest(w)
	case route(http.MethodGet, "iterations"):
		s.listIterations(w)
	case route(http.MethodGet, "iterations", "*", "changes"):
		s.changes(w, r, rest[1])
	case route(http.MethodGet, "threads"):
		list := make([]Thread, len(s.threads))
		for i, th := range s.threads {
			list[i] = copyThread(th)
		}
		reply(w, http.StatusOK, map[string]any{"value": list, "count": len(list)})
	case route(http.MethodPost, "threads"):
		s.createThread(w, rec.Body)
	case route(http.MethodGet, "threads", "*"):
		if th := s.thread(w, rest[1]); th != nil {
			reply(w, http.StatusOK, th)
		}
	case route(http.MethodPatch, "threads", "*"):
		s.updateThread(w, rest[1], rec.Body)
	case route(http.MethodPost, "threads", "*", "comments"):
		s.createComment(w, rest[1], rec.Body)
	case route(http.MethodPatch, "threads", "*", "comments", "*"):
		s.updateComment(w, rest[1], rest[3], rec.Body)
	case route(http.MethodGet, "statuses"):
		list := make([]Status, len(s.statuses))
		for i, st := range s.statuses {
			list[i] = *st
		}
		reply(w, http.StatusOK, map[string]any{"value": list, "count": len(list)})
	case route(http.MethodPost, "statuses"):
		s.createStatus(w, rec.Body)
	default:
		azError(w, http.StatusNotFound, "ApiResourceNotFoundException", fmt.Sprintf("API resource location was not found for %s %s", r.Method, r.URL.Path))
	}
}

func (s *Server) authorized(r *http.Request) bool {
	scheme, cred, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	switch strings.ToLower(scheme) {
	case "bearer":
		return cred == s.Token
	case "basic":
		b, err := base64.StdEncoding.DecodeString(cred)
		if err != nil {
			return false
		}
		_, pass, ok := strings.Cut(string(b), ":")
		return ok && pass == s.Token
	}
	return false
}

func (s *Server) connectionData(w http.ResponseWriter, r *http.Request) {
	if s.noConnData {
		azError(w, http.StatusInternalServerError, "VssServiceException", "VS800075: the location service is unavailable.")
		return
	}
	user := map[string]any{"id": Me.ID, "descriptor": "Microsoft.TeamFoundation.ServiceIdentity;" + Me.UniqueName,
		"subjectDescriptor": Me.Descriptor, "providerDisplayName": Me.DisplayName, "isActive": true,
		"properties":      map[string]any{"Account": map[string]any{"$type": "System.String", "$value": Me.UniqueName}},
		"resourceVersion": 2, "metaTypeId": 0}
	reply(w, http.StatusOK, map[string]any{"authenticatedUser": user, "authorizedUser": user,
		"instanceId": "2c895908-04e0-4952-89fd-54b0046d6288", "deploymentId": "0d5d1f7e-1b63-4e39-9f3e-6d9f6e3d2a10",
		"deploymentType": "hosted", "locationServiceData": map[string]any{"serviceOwner": "00025394-6065-48ca-87d9-7f5672854ef7",
			"defaultAccessMappingMoniker": "PublicAccessMapping", "lastChangeId": 1, "lastChangeId64": 1}})
}

func (s *Server) prBase() string {
	return strings.TrimRight(s.URL, "/") + "/" + url.PathEscape(s.Project) + "/_apis/git/repositories/" + s.RepoID + "/pullRequests/" + strconv.Itoa(s.PR)
}

func commit(sha string) map[string]any {
	return map[string]any{"commitId": sha, "url": "https://fake/_apis/git/commits/" + sha}
}

func (s *Server) pullRequest(w http.ResponseWriter) {
	last := s.iterations[len(s.iterations)-1]
	reply(w, http.StatusOK, map[string]any{
		"repository": map[string]any{"id": s.RepoID, "name": s.RepoName, "url": "https://fake/_apis/git/repositories/" + s.RepoID,
			"project": map[string]any{"id": "6ce954b1-ce1f-45d1-b94d-e6bf2464ba2c", "name": s.Project, "state": "wellFormed", "visibility": "private"}},
		"pullRequestId": s.PR, "codeReviewId": s.PR, "status": "active", "createdBy": Other, "creationDate": "2025-01-02T03:04:05.000Z",
		"title": "Add the feature", "description": "", "sourceRefName": "refs/heads/feature", "targetRefName": "refs/heads/main",
		"mergeStatus": "succeeded", "isDraft": false, "mergeId": "f5fc8381-3fb2-49fe-8a0d-27dcc2d6ef82",
		"lastMergeSourceCommit": commit(last.head), "lastMergeTargetCommit": commit(strings.Repeat("b", 40)),
		"lastMergeCommit": commit(strings.Repeat("c", 40)), "reviewers": []any{}, "url": s.prBase(),
		"supportsIterations": true, "artifactId": "vstfs:///Git/PullRequestId/6ce954b1-ce1f-45d1-b94d-e6bf2464ba2c%2f" + s.RepoID + "%2f" + strconv.Itoa(s.PR),
	})
}

func (s *Server) listIterations(w http.ResponseWriter) {
	var list []map[string]any
	for _, it := range s.iterations {
		reason := "push"
		if it.id == 1 {
			reason = "create"
		}
		list = append(list, map[string]any{"id": it.id, "description": "Iteration " + strconv.Itoa(it.id), "author": Other,
			"createdDate": "2025-01-02T03:04:05.000Z", "updatedDate": "2025-01-02T03:04:05.000Z",
			"sourceRefCommit": map[string]any{"commitId": it.head}, "targetRefCommit": map[string]any{"commitId": strings.Repeat("b", 40)},
			"commonRefCommit": map[string]any{"commitId": strings.Repeat("a", 40)}, "hasMoreCommits": false, "reason": reason})
	}
	reply(w, http.StatusOK, map[string]any{"value": list, "count": len(list)})
}

func (s *Server) iteration(id int) *iteration {
	for i := range s.iterations {
		if s.iterations[i].id == id {
			return &s.iterations[i]
		}
	}
	return nil
}

func (s *Server) changes(w http.ResponseWriter, r *http.Request, idStr string) {
	id, _ := strconv.Atoi(idStr)
	it := s.iteration(id)
	if it == nil {
		azError(w, http.StatusNotFound, "GitPullRequestIterationNotFoundException", fmt.Sprintf("TF401174: The item could not be found: iteration %s of pull request %d.", idStr, s.PR))
		return
	}
	q := r.URL.Query()
	top, skip := 100, 0
	var err error
	if v := q.Get("$top"); v != "" {
		if top, err = strconv.Atoi(v); err != nil || top < 0 {
			azError(w, http.StatusBadRequest, "InvalidArgumentValueException", "Invalid argument value. Parameter name: $top")
			return
		}
	}
	if v := q.Get("$skip"); v != "" {
		if skip, err = strconv.Atoi(v); err != nil || skip < 0 {
			azError(w, http.StatusBadRequest, "InvalidArgumentValueException", "Invalid argument value. Parameter name: $skip")
			return
		}
	}
	top = min(top, 2000)
	if s.pageSize > 0 {
		top = min(top, s.pageSize)
	}
	entries := []map[string]any{}
	end := min(skip+top, len(it.changes))
	for i := skip; i < end; i++ {
		c := it.changes[i]
		item := map[string]any{"objectId": fmt.Sprintf("%040x", i+1), "originalObjectId": fmt.Sprintf("%040x", i+1001), "path": "/" + c.Path}
		switch c.Type {
		case "add":
			delete(item, "originalObjectId")
		case "delete":
			delete(item, "objectId")
		}
		e := map[string]any{"changeTrackingId": s.tracking[c.Path], "changeId": i + 1, "item": item, "changeType": c.Type}
		if c.OldPath != "" {
			e["sourceServerItem"], e["originalPath"] = "/"+c.OldPath, "/"+c.OldPath
		}
		entries = append(entries, e)
	}
	res := map[string]any{"changeEntries": entries, "nextSkip": 0, "nextTop": 0}
	if end < len(it.changes) {
		res["nextSkip"], res["nextTop"] = end, top
	}
	reply(w, http.StatusOK, res)
}

// enum reads an enum value sent as its name (any case) or its number.
func enum(v any, names []string) (string, bool) {
	switch x := v.(type) {
	case string:
		for _, n := range names {
			if strings.EqualFold(n, x) {
				return n, true
			}
		}
		if i, err := strconv.Atoi(x); err == nil && i >= 0 && i < len(names) {
			return names[i], true
		}
	case float64:
		if i := int(x); float64(i) == x && i >= 0 && i < len(names) {
			return names[i], true
		}
	}
	return "", false
}

var (
	threadStatuses = []string{"unknown", "active", "fixed", "wontFix", "closed", "byDesign", "pending"}
	commentTypes   = []string{"unknown", "text", "codeChange", "system"}
	statusStates   = []string{"notSet", "pending", "succeeded", "failed", "error", "notApplicable"}
)

// decode re-reads a request body into v; a mistyped field is 400.
func decode(w http.ResponseWriter, body, v any) bool {
	b, _ := json.Marshal(body)
	if err := json.Unmarshal(b, v); err != nil || body == nil {
		azError(w, http.StatusBadRequest, "VssRequestContentException", fmt.Sprintf("The request content is not valid: %v", err))
		return false
	}
	return true
}

type commentIn struct {
	ParentCommentID *int   `json:"parentCommentId"`
	Content         string `json:"content"`
	CommentType     any    `json:"commentType"`
}

func (s *Server) newComment(w http.ResponseWriter, th *Thread, in commentIn) (*Comment, bool) {
	if strings.TrimSpace(in.Content) == "" {
		azError(w, http.StatusBadRequest, "InvalidArgumentValueException", "The comment content cannot be empty. Parameter name: comment.Content")
		return nil, false
	}
	ct := "text"
	if in.CommentType != nil {
		var ok bool
		if ct, ok = enum(in.CommentType, commentTypes); !ok {
			azError(w, http.StatusBadRequest, "InvalidArgumentValueException", fmt.Sprintf("Invalid argument value. Parameter name: commentType (%v)", in.CommentType))
			return nil, false
		}
	}
	parent := 0
	if in.ParentCommentID != nil {
		parent = *in.ParentCommentID
	}
	if parent != 0 {
		found := false
		for _, c := range th.Comments {
			found = found || c.ID == parent
		}
		if !found {
			azError(w, http.StatusBadRequest, "InvalidArgumentValueException", fmt.Sprintf("TF401181: The parent comment %d was not found in thread %d.", parent, th.ID))
			return nil, false
		}
	}
	now := s.now()
	c := Comment{ID: len(th.Comments) + 1, ParentCommentID: parent, Author: Me, Content: in.Content, PublishedDate: now,
		LastUpdatedDate: now, LastContentUpdatedDate: now, CommentType: ct, UsersLiked: []IdentityRef{},
		Links: map[string]any{"self": map[string]any{"href": fmt.Sprintf("%s/threads/%d/comments/%d", s.prBase(), th.ID, len(th.Comments)+1)}}}
	th.Comments = append(th.Comments, c)
	th.LastUpdatedDate = now
	return &th.Comments[len(th.Comments)-1], true
}

func (s *Server) createThread(w http.ResponseWriter, body any) {
	var in struct {
		Comments                 []commentIn               `json:"comments"`
		Status                   any                       `json:"status"`
		ThreadContext            *ThreadContext            `json:"threadContext"`
		PullRequestThreadContext *PullRequestThreadContext `json:"pullRequestThreadContext"`
	}
	if !decode(w, body, &in) {
		return
	}
	if len(in.Comments) == 0 {
		azError(w, http.StatusBadRequest, "InvalidArgumentValueException", "A thread must have at least one comment. Parameter name: thread.Comments")
		return
	}
	if p := in.Comments[0].ParentCommentID; p != nil && *p != 0 {
		azError(w, http.StatusBadRequest, "InvalidArgumentValueException", "The first comment of a thread cannot have a parent. Parameter name: parentCommentId")
		return
	}
	status := "active"
	if in.Status != nil {
		var ok bool
		if status, ok = enum(in.Status, threadStatuses); !ok {
			azError(w, http.StatusBadRequest, "InvalidArgumentValueException", fmt.Sprintf("Invalid argument value. Parameter name: status (%v)", in.Status))
			return
		}
	}
	if msg := s.checkPlace(in.ThreadContext, in.PullRequestThreadContext); msg != "" {
		azError(w, http.StatusBadRequest, "InvalidArgumentValueException", msg)
		return
	}
	now := s.now()
	th := &Thread{ID: len(s.threads) + 1, PublishedDate: now, LastUpdatedDate: now, Status: status, ThreadContext: in.ThreadContext,
		PullRequestThreadContext: in.PullRequestThreadContext, Properties: map[string]any{}}
	th.Links = map[string]any{"self": map[string]any{"href": fmt.Sprintf("%s/threads/%d", s.prBase(), th.ID)}}
	for i, c := range in.Comments {
		if i > 0 && c.ParentCommentID == nil {
			one := 1
			c.ParentCommentID = &one
		}
		if _, ok := s.newComment(w, th, c); !ok {
			return
		}
	}
	s.threads = append(s.threads, th)
	reply(w, http.StatusOK, copyThread(th))
}

// checkPlace checks a thread's file position against the iteration it
// names; "" when it is fine.
func (s *Server) checkPlace(tc *ThreadContext, pc *PullRequestThreadContext) string {
	if tc == nil {
		if pc != nil {
			return "pullRequestThreadContext needs a threadContext. Parameter name: threadContext"
		}
		return ""
	}
	if !strings.HasPrefix(tc.FilePath, "/") {
		return fmt.Sprintf("The file path %q must be a server path starting with '/'. Parameter name: threadContext.FilePath", tc.FilePath)
	}
	if pc == nil {
		return "The pull request supports iterations: pullRequestThreadContext.changeTrackingId is required. Parameter name: pullRequestThreadContext"
	}
	itID := len(s.iterations)
	if ic := pc.IterationContext; ic != nil {
		if s.iteration(ic.FirstComparingIteration) == nil || s.iteration(ic.SecondComparingIteration) == nil {
			return fmt.Sprintf("TF401174: iteration %d or %d of pull request %d does not exist.", ic.FirstComparingIteration, ic.SecondComparingIteration, s.PR)
		}
		itID = ic.SecondComparingIteration
	}
	it := s.iteration(itID)
	path := strings.TrimPrefix(tc.FilePath, "/")
	var ch *Change
	for i := range it.changes {
		if it.changes[i].Path == path {
			ch = &it.changes[i]
		}
	}
	if ch == nil {
		return fmt.Sprintf("The file %s is not changed in iteration %d. Parameter name: threadContext.FilePath", tc.FilePath, itID)
	}
	if pc.ChangeTrackingID != s.tracking[path] {
		return fmt.Sprintf("changeTrackingId %d does not track %s (its id is %d). Parameter name: pullRequestThreadContext.changeTrackingId", pc.ChangeTrackingID, tc.FilePath, s.tracking[path])
	}
	side := func(name string, start, end *Position, lines int, absent bool) string {
		if start == nil && end == nil {
			return ""
		}
		if start == nil || end == nil {
			return fmt.Sprintf("%sFileStart and %sFileEnd go together. Parameter name: threadContext", name, name)
		}
		if absent {
			return fmt.Sprintf("%s has no %s side in this pull request. Parameter name: threadContext.%sFileStart", tc.FilePath, name, name)
		}
		if start.Line < 1 || start.Offset < 1 || end.Offset < 1 || end.Line < start.Line {
			return fmt.Sprintf("Invalid position %d:%d-%d:%d. Parameter name: threadContext.%sFileStart", start.Line, start.Offset, end.Line, end.Offset, name)
		}
		if lines > 0 && end.Line > lines {
			return fmt.Sprintf("Line %d is past the end of %s (%d lines). Parameter name: threadContext.%sFileEnd", end.Line, tc.FilePath, lines, name)
		}
		return ""
	}
	if tc.LeftFileStart == nil && tc.RightFileStart == nil {
		return "A file thread needs leftFileStart or rightFileStart. Parameter name: threadContext"
	}
	if msg := side("left", tc.LeftFileStart, tc.LeftFileEnd, ch.BaseLines, ch.Type == "add"); msg != "" {
		return msg
	}
	return side("right", tc.RightFileStart, tc.RightFileEnd, ch.Lines, ch.Type == "delete")
}

func (s *Server) thread(w http.ResponseWriter, idStr string) *Thread {
	id, err := strconv.Atoi(idStr)
	if err != nil || id < 1 || id > len(s.threads) {
		azError(w, http.StatusNotFound, "GitPullRequestThreadNotFoundException", fmt.Sprintf("TF401180: The requested comment thread %s was not found.", idStr))
		return nil
	}
	return s.threads[id-1]
}

func (s *Server) updateThread(w http.ResponseWriter, idStr string, body any) {
	th := s.thread(w, idStr)
	if th == nil {
		return
	}
	var in struct {
		Status any `json:"status"`
	}
	if !decode(w, body, &in) {
		return
	}
	if in.Status != nil {
		st, ok := enum(in.Status, threadStatuses)
		if !ok {
			azError(w, http.StatusBadRequest, "InvalidArgumentValueException", fmt.Sprintf("Invalid argument value. Parameter name: status (%v)", in.Status))
			return
		}
		th.Status = st
	}
	th.LastUpdatedDate = s.now()
	reply(w, http.StatusOK, copyThread(th))
}

func (s *Server) createComment(w http.ResponseWriter, idStr string, body any) {
	th := s.thread(w, idStr)
	if th == nil {
		return
	}
	var in commentIn
	if !decode(w, body, &in) {
		return
	}
	if c, ok := s.newComment(w, th, in); ok {
		reply(w, http.StatusOK, *c)
	}
}

func (s *Server) updateComment(w http.ResponseWriter, tidStr, cidStr string, body any) {
	th := s.thread(w, tidStr)
	if th == nil {
		return
	}
	cid, _ := strconv.Atoi(cidStr)
	var c *Comment
	for i := range th.Comments {
		if th.Comments[i].ID == cid {
			c = &th.Comments[i]
		}
	}
	if c == nil {
		azError(w, http.StatusNotFound, "CommentNotFoundException", fmt.Sprintf("TF401181: The comment %s of thread %s was not found.", cidStr, tidStr))
		return
	}
	var in struct {
		Content *string `json:"content"`
	}
	if !decode(w, body, &in) {
		return
	}
	if in.Content == nil || strings.TrimSpace(*in.Content) == "" {
		azError(w, http.StatusBadRequest, "InvalidArgumentValueException", "The comment content cannot be empty. Parameter name: comment.Content")
		return
	}
	if c.Author.ID != Me.ID {
		azError(w, http.StatusForbidden, "CommentUpdateException", "TF401194: Only the author of a comment can edit it.")
		return
	}
	c.Content = *in.Content
	c.LastUpdatedDate, c.LastContentUpdatedDate = s.now(), s.now()
	reply(w, http.StatusOK, *c)
}

func (s *Server) createStatus(w http.ResponseWriter, body any) {
	var in struct {
		State       any            `json:"state"`
		Description string         `json:"description"`
		Context     *StatusContext `json:"context"`
		TargetURL   string         `json:"targetUrl"`
		IterationID int            `json:"iterationId"`
	}
	if !decode(w, body, &in) {
		return
	}
	if in.Context == nil || in.Context.Name == "" {
		azError(w, http.StatusBadRequest, "InvalidArgumentValueException", "Value cannot be null or empty. Parameter name: status.Context.Name")
		return
	}
	state := "notSet"
	if in.State != nil {
		var ok bool
		if state, ok = enum(in.State, statusStates); !ok {
			azError(w, http.StatusBadRequest, "InvalidArgumentValueException", fmt.Sprintf("Invalid argument value. Parameter name: status.State (%v)", in.State))
			return
		}
	}
	if in.TargetURL != "" {
		if u, err := url.Parse(in.TargetURL); err != nil || !u.IsAbs() {
			azError(w, http.StatusBadRequest, "InvalidArgumentValueException", "The target URL must be absolute. Parameter name: status.TargetUrl")
			return
		}
	}
	if in.IterationID != 0 && s.iteration(in.IterationID) == nil {
		azError(w, http.StatusBadRequest, "InvalidArgumentValueException", fmt.Sprintf("TF401174: iteration %d does not exist.", in.IterationID))
		return
	}
	now := s.now()
	st := &Status{ID: len(s.statuses) + 1, State: state, Description: in.Description, Context: *in.Context, CreationDate: now,
		UpdatedDate: now, CreatedBy: Me, TargetURL: in.TargetURL, IterationID: in.IterationID}
	st.Links = map[string]any{"self": map[string]any{"href": fmt.Sprintf("%s/statuses/%d", s.prBase(), st.ID)}}
	s.statuses = append(s.statuses, st)
	reply(w, http.StatusOK, st)
}
