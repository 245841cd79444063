// Package gitlabtest is a stateful loopback fake of the GitLab REST API v4
// parts diffpal publish uses, speaking GitLab's wire format: one project
// (ID "42", also reachable as "group/project") with one merge request
// (IID 7), its diff versions, discussions and notes, commit statuses, and
// the token endpoints (GET /user, GET /personal_access_tokens/self).
//
// It checks what GitLab checks: the PRIVATE-TOKEN or JOB-TOKEN header
// (401 otherwise), required fields (400 "body is missing",
// "position[base_sha] is missing"), that a text position is on a line of
// the latest version's diff (400 "line_code can't be blank, must be a
// valid line code" otherwise), that only a note's author edits it (403),
// that a JOB-TOKEN reaches none of merge request discussions, notes and
// commit statuses (401, as GitLab: they are not on the job token's API
// allowlist), and it answers with GitLab's JSON shapes and pagination headers
// (X-Page, X-Next-Page, X-Total, Link).
//
//	srv := gitlabtest.New(t)
//	srv.SetVersion(baseSHA, headSHA, gitlabtest.File{Path: "a.go", Diff: "@@ -1,2 +1,3 @@\n..."})
//	target := &publish.Target{Host: "gitlab", APIURL: srv.APIURL(), Token: publish.NewSecret(gitlabtest.Token),
//		TokenFrom: "GITLAB_TOKEN", Repo: gitlabtest.Project, Number: gitlabtest.MRIID, HeadSHA: headSHA}
package gitlabtest

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
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
)

// The fake's fixed identities.
const (
	Token = "glpat-fake-token-0123456789" // PRIVATE-TOKEN of the bot user
	// JobToken is a CI_JOB_TOKEN, sent as JOB-TOKEN: GET /user,
	// /personal_access_tokens/self, merge request discussions and notes
	// and commit statuses answer 401 to it, as on GitLab.
	JobToken = "glcbt-fake-job-token-0123"
	Project  = "42" // project id; "group/project" works too
	MRIID    = 7
	// BotID is the user of Token; OtherID the user Seed posts as.
	BotID   = 1
	OtherID = 2
)

const projectPath = "group/project"

// File is one file of a diff version.
type File struct {
	Path    string // new_path
	OldPath string // old_path; defaults to Path
	Diff    string // unified hunks, as GitLab's diffs[].diff
	// NewFile, DeletedFile, RenamedFile, TooLarge mirror GitLab's flags.
	NewFile, DeletedFile, RenamedFile, TooLarge bool
}

// Position is a note's position (GitLab's field names).
type Position struct {
	BaseSHA      string     `json:"base_sha"`
	StartSHA     string     `json:"start_sha"`
	HeadSHA      string     `json:"head_sha"`
	PositionType string     `json:"position_type"`
	OldPath      string     `json:"old_path"`
	NewPath      string     `json:"new_path"`
	OldLine      *int       `json:"old_line"`
	NewLine      *int       `json:"new_line"`
	LineRange    *LineRange `json:"line_range,omitempty"`
}

// LineRange is a multi-line position's range.
type LineRange struct {
	Start *LinePoint `json:"start"`
	End   *LinePoint `json:"end"`
}

// LinePoint is one end of a LineRange.
type LinePoint struct {
	LineCode string `json:"line_code"`
	Type     string `json:"type"`
	OldLine  *int   `json:"old_line"`
	NewLine  *int   `json:"new_line"`
}

// Note is a note as the fake stores it.
type Note struct {
	ID         int64
	Body       string
	AuthorID   int64
	System     bool
	Resolvable bool
	Resolved   bool
	Position   *Position
	Type       string // "DiffNote", "DiscussionNote" or "" (a plain MR note)
	Created    time.Time
	Updated    time.Time
}

// Discussion is a discussion with its notes, oldest first.
type Discussion struct {
	ID             string
	IndividualNote bool
	Notes          []*Note
}

// Status is a commit status as posted.
type Status struct {
	SHA, State, Name, Description, TargetURL, Ref string
}

// Request is one request the fake saw.
type Request struct {
	Method string
	Path   string // escaped path, e.g. /api/v4/projects/42/merge_requests/7/discussions
	Query  url.Values
	// Body is the decoded JSON body (nil without one).
	Body any
	// Auth is the auth header sent: "PRIVATE-TOKEN", "JOB-TOKEN" or "".
	Auth string
}

// Write reports whether the request changes state.
func (r Request) Write() bool { return r.Method != http.MethodGet && r.Method != http.MethodHead }

// Fault is a response the fake gives once, instead of handling the next
// request matching Method (empty: any) and a Path ending in PathSuffix.
type Fault struct {
	Method     string
	PathSuffix string
	Status     int
	Body       string
	Header     http.Header
}

type version struct {
	ID                      int64
	Base, Start, Head       string
	Files                   []File
	Created                 time.Time
	newLines, oldLines, ctx map[string]map[int]int // per path: added/removed lines, context new→old
}

// Server is the fake. Its methods are safe for concurrent use.
type Server struct {
	srv *httptest.Server

	mu          sync.Mutex
	reqs        []Request
	versions    []*version // oldest first
	discussions []*Discussion
	statuses    []Status
	faults      []Fault
	refused     map[string]map[int]bool
	pageSize    int
	linkOnly    bool
	readOnly    bool
	nextID      int64
	clock       time.Time
}

// New starts the fake; it is closed when the test ends.
func New(tb testing.TB) *Server {
	tb.Helper()
	s := &Server{pageSize: 100, nextID: 1000, refused: map[string]map[int]bool{}, clock: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	tb.Cleanup(s.srv.Close)
	return s
}

// URL is the server's root (http://127.0.0.1:PORT).
func (s *Server) URL() string { return s.srv.URL }

// APIURL is the REST base, Target.APIURL (CI_API_V4_URL).
func (s *Server) APIURL() string { return s.srv.URL + "/api/v4" }

// SetVersion pushes a new diff version of the merge request (it becomes
// the latest, so its SHAs are the ones positions must carry): base is
// base_commit_sha and start_commit_sha, head head_commit_sha.
func (s *Server) SetVersion(base, head string, files ...File) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := &version{ID: int64(len(s.versions) + 1), Base: base, Start: base, Head: head, Files: files, Created: s.now(),
		newLines: map[string]map[int]int{}, oldLines: map[string]map[int]int{}, ctx: map[string]map[int]int{}}
	for i := range v.Files {
		f := &v.Files[i]
		if f.OldPath == "" {
			f.OldPath = f.Path
		}
		v.newLines[f.Path], v.oldLines[f.Path], v.ctx[f.Path] = map[int]int{}, map[int]int{}, map[int]int{}
		parse(f.Diff, v.newLines[f.Path], v.oldLines[f.Path], v.ctx[f.Path])
	}
	s.versions = append(s.versions, v)
}

// SetPageSize caps per_page, forcing pagination.
func (s *Server) SetPageSize(n int) { s.mu.Lock(); s.pageSize = max(n, 1); s.mu.Unlock() }

// SetLinkOnly drops the X-Next-Page family of headers, leaving only Link
// (as keyset pagination does).
func (s *Server) SetLinkOnly(on bool) { s.mu.Lock(); s.linkOnly = on; s.mu.Unlock() }

// SetReadOnly makes Token a read_api token: GET works, every write is
// 403 insufficient_scope, and /personal_access_tokens/self says so.
func (s *Server) SetReadOnly(on bool) { s.mu.Lock(); s.readOnly = on; s.mu.Unlock() }

// RefuseLines makes GitLab refuse positions on these new-side lines of
// path even though they are in the diff (400 line_code), as it does for
// lines it cannot map.
func (s *Server) RefuseLines(path string, lines ...int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refused[path] == nil {
		s.refused[path] = map[int]bool{}
	}
	for _, l := range lines {
		s.refused[path][l] = true
	}
}

// Inject queues a one-shot fault; faults are matched in order.
func (s *Server) Inject(f Fault) { s.mu.Lock(); s.faults = append(s.faults, f); s.mu.Unlock() }

// RateLimitOnce answers the next request with 429 and Retry-After, as
// GitLab's rate limiter does.
func (s *Server) RateLimitOnce(retryAfter int) {
	s.Inject(Fault{Status: http.StatusTooManyRequests, Body: `{"message":"Retry later"}`,
		Header: http.Header{"Retry-After": {strconv.Itoa(retryAfter)}, "Ratelimit-Remaining": {"0"}}})
}

// Seed adds a discussion by another user (OtherID); position may be nil.
// It returns the discussion id.
func (s *Server) Seed(authorID int64, body string, pos *Position) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addDiscussion(authorID, body, pos, false).ID
}

// Reply adds a note by authorID to discussion id (a reviewer's answer);
// it returns the note id, 0 when there is no such discussion.
func (s *Server) Reply(id string, authorID int64, body string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.findDiscussion(id)
	if d == nil {
		return 0
	}
	first := d.Notes[0]
	n := &Note{ID: s.id(), Body: body, AuthorID: authorID, Type: first.Type, Resolvable: first.Resolvable, Resolved: first.Resolved,
		Position: first.Position, Created: s.now()}
	n.Updated = n.Created
	d.Notes = append(d.Notes, n)
	return n.ID
}

// AddSystemNote adds a system note to discussion id, as GitLab does in
// a diff discussion whose line a push changed ("changed this line in
// version 2 of the diff").
func (s *Server) AddSystemNote(id, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := s.findDiscussion(id); d != nil {
		n := &Note{ID: s.id(), Body: body, AuthorID: BotID, System: true, Type: d.Notes[0].Type, Position: d.Notes[0].Position, Created: s.now()}
		n.Updated = n.Created
		d.Notes = append(d.Notes, n)
	}
}

// SetResolved resolves (or reopens) discussion id as a reviewer would.
func (s *Server) SetResolved(id string, resolved bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := s.findDiscussion(id); d != nil {
		for _, n := range d.Notes {
			if n.Resolvable {
				n.Resolved = resolved
			}
		}
	}
}

// Requests returns every request seen, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Writes returns the requests that change state.
func (s *Server) Writes() []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Write() {
			out = append(out, r)
		}
	}
	return out
}

// ResetRequests forgets the requests seen so far.
func (s *Server) ResetRequests() { s.mu.Lock(); s.reqs = nil; s.mu.Unlock() }

// Discussions returns a deep copy of the merge request's discussions,
// oldest first (MR notes appear as individual-note discussions).
func (s *Server) Discussions() []Discussion {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Discussion, len(s.discussions))
	for i, d := range s.discussions {
		out[i] = Discussion{ID: d.ID, IndividualNote: d.IndividualNote}
		for _, n := range d.Notes {
			c := *n
			out[i].Notes = append(out[i].Notes, &c)
		}
	}
	return out
}

// NotesWithPrefix returns the first notes of discussions whose body
// starts with prefix (e.g. "<!-- diffpal:summary channel=default").
func (s *Server) NotesWithPrefix(prefix string) []Note {
	var out []Note
	for _, d := range s.Discussions() {
		if n := d.Notes[0]; strings.HasPrefix(n.Body, prefix) {
			out = append(out, *n)
		}
	}
	return out
}

// Statuses returns the commit statuses posted, in order.
func (s *Server) Statuses() []Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Status(nil), s.statuses...)
}

func (s *Server) now() time.Time { s.clock = s.clock.Add(time.Second); return s.clock }

func (s *Server) id() int64 { s.nextID++; return s.nextID }

func (s *Server) addDiscussion(author int64, body string, pos *Position, individual bool) *Discussion {
	sum := sha1.Sum([]byte(strconv.FormatInt(s.id(), 10)))
	d := &Discussion{ID: hex.EncodeToString(sum[:]), IndividualNote: individual}
	n := &Note{ID: s.id(), Body: body, AuthorID: author, Position: pos, Created: s.now()}
	n.Updated = n.Created
	switch {
	case individual:
	case pos != nil:
		n.Type, n.Resolvable = "DiffNote", true
	default:
		n.Type, n.Resolvable = "DiscussionNote", true
	}
	d.Notes = []*Note{n}
	s.discussions = append(s.discussions, d)
	return d
}

// parse reads hunks into added (new line → 1), removed (old line → 1) and
// context (new line → old line) lines.
func parse(patch string, added, removed, ctx map[int]int) {
	o, n, in := 0, 0, false
	for _, ln := range strings.Split(patch, "\n") {
		switch {
		case strings.HasPrefix(ln, "@@"):
			f := strings.Fields(ln)
			if len(f) < 3 {
				in = false
				continue
			}
			o, _ = strconv.Atoi(strings.SplitN(strings.TrimPrefix(f[1], "-"), ",", 2)[0])
			n, _ = strconv.Atoi(strings.SplitN(strings.TrimPrefix(f[2], "+"), ",", 2)[0])
			in = true
		case !in || ln == "" || ln[0] == '\\':
		case ln[0] == '+':
			added[n] = 1
			n++
		case ln[0] == '-':
			removed[o] = 1
			o++
		case ln[0] == ' ':
			ctx[n] = o
			o++
			n++
		}
	}
}

// ---- HTTP ----

type apiErr struct {
	status int
	body   string
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	req := Request{Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.Query()}
	if len(bytes.TrimSpace(raw)) > 0 {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			req.Body = string(raw)
		} else {
			req.Body = v
		}
	}
	auth := ""
	switch {
	case r.Header.Get("PRIVATE-TOKEN") != "":
		req.Auth, auth = "PRIVATE-TOKEN", r.Header.Get("PRIVATE-TOKEN")
	case r.Header.Get("JOB-TOKEN") != "":
		req.Auth, auth = "JOB-TOKEN", r.Header.Get("JOB-TOKEN")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, req)
	for i, f := range s.faults {
		if (f.Method == "" || f.Method == r.Method) && strings.HasSuffix(req.Path, f.PathSuffix) {
			s.faults = append(s.faults[:i], s.faults[i+1:]...)
			for k, vs := range f.Header {
				w.Header()[k] = vs
			}
			writeJSONRaw(w, f.Status, f.Body)
			return
		}
	}
	if (req.Auth == "PRIVATE-TOKEN" && auth != Token) || (req.Auth == "JOB-TOKEN" && auth != JobToken) || req.Auth == "" {
		writeJSONRaw(w, http.StatusUnauthorized, `{"message":"401 Unauthorized"}`)
		return
	}
	body, _ := req.Body.(map[string]any)
	if req.Body != nil && body == nil {
		writeJSONRaw(w, http.StatusBadRequest, `{"error":"The request body is not valid JSON"}`)
		return
	}
	if req.Write() && s.readOnly {
		writeJSONRaw(w, http.StatusForbidden, `{"error":"insufficient_scope","error_description":"The request requires higher privileges than provided by the access token.","scope":"api"}`)
		return
	}
	status, out, e := s.route(r.Method, strings.TrimPrefix(req.Path, "/api/v4"), req, body)
	if e != nil {
		writeJSONRaw(w, e.status, e.body)
		return
	}
	if page, ok := out.(pageOf); ok {
		s.paginate(w, r, page)
		return
	}
	writeJSON(w, status, out)
}

type pageOf []any

func (s *Server) paginate(w http.ResponseWriter, r *http.Request, items pageOf) {
	per, _ := strconv.Atoi(r.URL.Query().Get("per_page"))
	if per <= 0 {
		per = 20
	}
	per = min(per, s.pageSize, 100)
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	page = max(page, 1)
	total := len(items)
	pages := max((total+per-1)/per, 1)
	lo, hi := min((page-1)*per, total), min(page*per, total)
	link := func(p int) string {
		q := r.URL.Query()
		q.Set("page", strconv.Itoa(p))
		q.Set("per_page", strconv.Itoa(per))
		return "<" + s.srv.URL + r.URL.EscapedPath() + "?" + q.Encode() + ">"
	}
	var links []string
	if page < pages {
		links = append(links, link(page+1)+`; rel="next"`)
	}
	if page > 1 {
		links = append(links, link(page-1)+`; rel="prev"`)
	}
	links = append(links, link(1)+`; rel="first"`, link(pages)+`; rel="last"`)
	h := w.Header()
	h.Set("Link", strings.Join(links, ", "))
	if !s.linkOnly {
		h.Set("X-Page", strconv.Itoa(page))
		h.Set("X-Per-Page", strconv.Itoa(per))
		h.Set("X-Total", strconv.Itoa(total))
		h.Set("X-Total-Pages", strconv.Itoa(pages))
		next, prev := "", ""
		if page < pages {
			next = strconv.Itoa(page + 1)
		}
		if page > 1 {
			prev = strconv.Itoa(page - 1)
		}
		h.Set("X-Next-Page", next)
		h.Set("X-Prev-Page", prev)
	}
	writeJSON(w, http.StatusOK, []any(items[lo:hi]))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	writeJSONRaw(w, status, string(b))
}

func writeJSONRaw(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

func notFound(what string) *apiErr {
	return &apiErr{http.StatusNotFound, fmt.Sprintf(`{"message":"404 %s Not Found"}`, what)}
}

func bad(msg string) *apiErr {
	b, _ := json.Marshal(map[string]string{"error": msg})
	return &apiErr{http.StatusBadRequest, string(b)}
}

// unauthorized is GitLab's 401, also its answer to a JOB-TOKEN on an
// endpoint the job token may not use.
var unauthorized = &apiErr{http.StatusUnauthorized, `{"message":"401 Unauthorized"}`}

// lineCodeErr is GitLab's answer to a position it cannot map to a line.
var lineCodeErr = &apiErr{http.StatusBadRequest, `{"message":"400 Bad request - Note {:line_code=>[\"can't be blank\", \"must be a valid line code\"]}"}`}

func (s *Server) route(method, path string, req Request, body map[string]any) (int, any, *apiErr) {
	seg := strings.Split(strings.Trim(path, "/"), "/")
	user := int64(BotID)
	switch {
	case method == http.MethodGet && path == "/user":
		if req.Auth == "JOB-TOKEN" {
			return 0, nil, unauthorized
		}
		return http.StatusOK, userJSON(BotID), nil
	case method == http.MethodGet && path == "/personal_access_tokens/self":
		if req.Auth == "JOB-TOKEN" {
			return 0, nil, unauthorized
		}
		scopes := []string{"api"}
		if s.readOnly {
			scopes = []string{"read_api"}
		}
		return http.StatusOK, map[string]any{"id": 5, "name": "diffpal", "revoked": false, "created_at": s.clock.Format(time.RFC3339),
			"scopes": scopes, "user_id": BotID, "active": true, "expires_at": nil}, nil
	}
	if len(seg) < 2 || seg[0] != "projects" {
		return 0, nil, &apiErr{http.StatusNotFound, `{"error":"404 Not Found"}`}
	}
	if p, _ := url.PathUnescape(seg[1]); p != Project && p != projectPath {
		return 0, nil, notFound("Project")
	}
	seg = seg[2:]
	if len(seg) == 2 && seg[0] == "statuses" && method == http.MethodPost {
		if req.Auth == "JOB-TOKEN" {
			return 0, nil, unauthorized
		}
		return s.postStatus(seg[1], body)
	}
	if len(seg) < 2 || seg[0] != "merge_requests" {
		return 0, nil, &apiErr{http.StatusNotFound, `{"error":"404 Not Found"}`}
	}
	if seg[1] != strconv.Itoa(MRIID) {
		return 0, nil, notFound("Merge Request")
	}
	seg = seg[2:]
	if req.Auth == "JOB-TOKEN" && len(seg) > 0 && (seg[0] == "discussions" || seg[0] == "notes") {
		return 0, nil, unauthorized
	}
	key := method + " " + strings.Join(seg, "/")
	switch {
	case key == "GET versions":
		var items pageOf
		for i := len(s.versions) - 1; i >= 0; i-- {
			items = append(items, s.versionJSON(s.versions[i], false))
		}
		return http.StatusOK, items, nil
	case method == http.MethodGet && len(seg) == 2 && seg[0] == "versions":
		for _, v := range s.versions {
			if strconv.FormatInt(v.ID, 10) == seg[1] {
				return http.StatusOK, s.versionJSON(v, true), nil
			}
		}
		return 0, nil, notFound("Version")
	case key == "GET discussions":
		var items pageOf
		for _, d := range s.discussions {
			items = append(items, s.discussionJSON(d))
		}
		return http.StatusOK, items, nil
	case key == "POST discussions":
		text, ok := body["body"].(string)
		if !ok || text == "" {
			return 0, nil, bad("body is missing")
		}
		var pos *Position
		if pm, ok := body["position"].(map[string]any); ok {
			p, e := s.checkPosition(pm)
			if e != nil {
				return 0, nil, e
			}
			pos = p
		}
		return http.StatusCreated, s.discussionJSON(s.addDiscussion(user, text, pos, false)), nil
	case key == "POST notes":
		text, ok := body["body"].(string)
		if !ok || text == "" {
			return 0, nil, bad("body is missing")
		}
		d := s.addDiscussion(user, text, nil, true)
		return http.StatusCreated, s.noteJSON(d.Notes[0]), nil
	case method == http.MethodPut && len(seg) == 2 && seg[0] == "notes":
		n := s.findNote("", seg[1])
		if n == nil {
			return 0, nil, notFound("Note")
		}
		return s.editNote(n, user, body)
	case len(seg) >= 2 && seg[0] == "discussions":
		d := s.findDiscussion(seg[1])
		if d == nil {
			return 0, nil, notFound("Discussion")
		}
		switch {
		case method == http.MethodPut && len(seg) == 2:
			v, ok := body["resolved"]
			if !ok && req.Query.Has("resolved") {
				v = req.Query.Get("resolved") == "true"
			}
			res, ok := v.(bool)
			if !ok {
				return 0, nil, bad("resolved is missing")
			}
			if !d.Notes[0].Resolvable {
				return 0, nil, &apiErr{http.StatusForbidden, `{"message":"403 Forbidden"}`}
			}
			for _, n := range d.Notes {
				if n.Resolvable {
					n.Resolved = res
				}
			}
			return http.StatusOK, s.discussionJSON(d), nil
		case method == http.MethodPost && len(seg) == 3 && seg[2] == "notes":
			text, ok := body["body"].(string)
			if !ok || text == "" {
				return 0, nil, bad("body is missing")
			}
			if d.IndividualNote {
				return 0, nil, bad("discussion is an individual note")
			}
			n := &Note{ID: s.id(), Body: text, AuthorID: user, Type: d.Notes[0].Type, Resolvable: d.Notes[0].Resolvable,
				Resolved: d.Notes[0].Resolved, Position: d.Notes[0].Position, Created: s.now()}
			n.Updated = n.Created
			d.Notes = append(d.Notes, n)
			return http.StatusCreated, s.noteJSON(n), nil
		case method == http.MethodPut && len(seg) == 4 && seg[2] == "notes":
			n := s.findNote(d.ID, seg[3])
			if n == nil {
				return 0, nil, notFound("Note")
			}
			return s.editNote(n, user, body)
		}
	}
	return 0, nil, &apiErr{http.StatusNotFound, `{"error":"404 Not Found"}`}
}

func (s *Server) editNote(n *Note, user int64, body map[string]any) (int, any, *apiErr) {
	text, hasBody := body["body"].(string)
	res, hasRes := body["resolved"].(bool)
	if !hasBody && !hasRes {
		return 0, nil, bad("body, resolved are missing, at least one parameter must be provided")
	}
	if hasBody {
		if n.AuthorID != user {
			return 0, nil, &apiErr{http.StatusForbidden, `{"message":"403 Forbidden"}`}
		}
		if text == "" {
			return 0, nil, bad("body is empty")
		}
		n.Body, n.Updated = text, s.now()
	}
	if hasRes && n.Resolvable {
		n.Resolved = res
	}
	return http.StatusOK, s.noteJSON(n), nil
}

func (s *Server) findDiscussion(id string) *Discussion {
	for _, d := range s.discussions {
		if d.ID == id {
			return d
		}
	}
	return nil
}

func (s *Server) findNote(discussion, id string) *Note {
	for _, d := range s.discussions {
		if discussion != "" && d.ID != discussion {
			continue
		}
		for _, n := range d.Notes {
			if strconv.FormatInt(n.ID, 10) == id {
				return n
			}
		}
	}
	return nil
}

// checkPosition validates a text position against the latest version,
// as GitLab does when it computes the note's line_code.
func (s *Server) checkPosition(pm map[string]any) (*Position, *apiErr) {
	for _, k := range []string{"base_sha", "start_sha", "head_sha", "position_type"} {
		if v, _ := pm[k].(string); v == "" {
			return nil, bad("position[" + k + "] is missing")
		}
	}
	str := func(k string) string { v, _ := pm[k].(string); return v }
	line := func(m map[string]any, k string) *int {
		if f, ok := m[k].(float64); ok && f > 0 {
			i := int(f)
			return &i
		}
		return nil
	}
	p := &Position{BaseSHA: str("base_sha"), StartSHA: str("start_sha"), HeadSHA: str("head_sha"), PositionType: str("position_type"),
		OldPath: str("old_path"), NewPath: str("new_path"), OldLine: line(pm, "old_line"), NewLine: line(pm, "new_line")}
	if p.PositionType != "text" {
		return nil, bad("position[position_type] does not have a valid value")
	}
	if len(s.versions) == 0 {
		return nil, lineCodeErr
	}
	v := s.versions[len(s.versions)-1]
	if p.BaseSHA != v.Base || p.StartSHA != v.Start || p.HeadSHA != v.Head {
		return nil, lineCodeErr
	}
	var f *File
	for i := range v.Files {
		if v.Files[i].Path == p.NewPath {
			f = &v.Files[i]
		}
	}
	if f == nil || f.OldPath != p.OldPath {
		return nil, lineCodeErr
	}
	switch {
	case p.NewLine != nil && p.OldLine == nil:
		if v.newLines[f.Path][*p.NewLine] == 0 || s.refused[f.Path][*p.NewLine] {
			return nil, lineCodeErr
		}
	case p.OldLine != nil && p.NewLine == nil:
		if v.oldLines[f.Path][*p.OldLine] == 0 {
			return nil, lineCodeErr
		}
	case p.OldLine != nil && p.NewLine != nil:
		if o, ok := v.ctx[f.Path][*p.NewLine]; !ok || o != *p.OldLine || s.refused[f.Path][*p.NewLine] {
			return nil, lineCodeErr
		}
	default:
		return nil, lineCodeErr
	}
	if lr, ok := pm["line_range"].(map[string]any); ok {
		p.LineRange = &LineRange{}
		for i, k := range []string{"start", "end"} {
			m, _ := lr[k].(map[string]any)
			code, _ := m["line_code"].(string)
			if code == "" {
				return nil, &apiErr{http.StatusBadRequest, `{"message":"400 Bad request - Note {:position=>[\"is invalid\"]}"}`}
			}
			typ, _ := m["type"].(string)
			pt := &LinePoint{LineCode: code, Type: typ, OldLine: line(m, "old_line"), NewLine: line(m, "new_line")}
			if i == 0 {
				p.LineRange.Start = pt
			} else {
				p.LineRange.End = pt
			}
		}
	}
	return p, nil
}

func (s *Server) postStatus(sha string, body map[string]any) (int, any, *apiErr) {
	state, _ := body["state"].(string)
	if state == "" {
		return 0, nil, bad("state is missing")
	}
	switch state {
	case "pending", "running", "success", "failed", "canceled", "skipped":
	default:
		return 0, nil, bad("state does not have a valid value")
	}
	known := false
	for _, v := range s.versions {
		known = known || v.Head == sha || v.Base == sha
	}
	if !known {
		return 0, nil, notFound("Commit")
	}
	str := func(k string) string { v, _ := body[k].(string); return v }
	if d := str("description"); len([]rune(d)) > 255 {
		return 0, nil, bad("description is too long (maximum is 255 characters)")
	}
	st := Status{SHA: sha, State: state, Name: str("name"), Description: str("description"), TargetURL: str("target_url"), Ref: str("ref")}
	if st.Name == "" {
		st.Name = str("context")
	}
	if st.Name == "" {
		st.Name = "default"
	}
	s.statuses = append(s.statuses, st)
	return http.StatusCreated, map[string]any{"id": s.id(), "sha": sha, "ref": st.Ref, "status": state, "name": st.Name,
		"target_url": st.TargetURL, "description": st.Description, "created_at": s.now().Format(time.RFC3339), "allow_failure": false,
		"author": userJSON(BotID), "coverage": nil, "pipeline_id": 1}, nil
}

func userJSON(id int64) map[string]any {
	name := "diffpal-bot"
	if id != BotID {
		name = "user" + strconv.FormatInt(id, 10)
	}
	return map[string]any{"id": id, "username": name, "name": name, "state": "active", "avatar_url": "", "web_url": "https://gitlab.example/" + name}
}

func (s *Server) versionJSON(v *version, diffs bool) map[string]any {
	m := map[string]any{"id": v.ID, "head_commit_sha": v.Head, "base_commit_sha": v.Base, "start_commit_sha": v.Start,
		"created_at": v.Created.Format(time.RFC3339), "merge_request_id": 700, "state": "collected", "real_size": strconv.Itoa(len(v.Files))}
	if diffs {
		ds := []map[string]any{}
		for _, f := range v.Files {
			d := f.Diff
			if f.TooLarge {
				d = ""
			}
			ds = append(ds, map[string]any{"old_path": f.OldPath, "new_path": f.Path, "a_mode": "100644", "b_mode": "100644", "diff": d,
				"new_file": f.NewFile, "renamed_file": f.RenamedFile || f.OldPath != f.Path, "deleted_file": f.DeletedFile,
				"too_large": f.TooLarge, "collapsed": false, "generated_file": false})
		}
		m["diffs"] = ds
		m["commits"] = []any{}
	}
	return m
}

func (s *Server) discussionJSON(d *Discussion) map[string]any {
	notes := []any{}
	for _, n := range d.Notes {
		notes = append(notes, s.noteJSON(n))
	}
	return map[string]any{"id": d.ID, "individual_note": d.IndividualNote, "notes": notes}
}

func (s *Server) noteJSON(n *Note) map[string]any {
	var typ any
	if n.Type != "" {
		typ = n.Type
	}
	m := map[string]any{"id": n.ID, "type": typ, "body": n.Body, "attachment": nil, "author": userJSON(n.AuthorID),
		"created_at": n.Created.Format(time.RFC3339), "updated_at": n.Updated.Format(time.RFC3339), "system": n.System,
		"noteable_id": 700, "noteable_type": "MergeRequest", "noteable_iid": MRIID, "project_id": 42,
		"resolvable": n.Resolvable, "confidential": false, "internal": false}
	if n.Resolvable {
		m["resolved"] = n.Resolved
		if n.Resolved {
			m["resolved_by"] = userJSON(BotID)
		} else {
			m["resolved_by"] = nil
		}
	}
	if n.Position != nil {
		m["position"] = n.Position
	}
	return m
}
