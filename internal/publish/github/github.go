// Package github publishes a findings bundle on a GitHub pull request:
// one pull request review per run carrying the new inline comments, edits
// of comments whose finding changed, replies and resolveReviewThread for
// threads whose finding is gone, one sticky issue comment per channel as
// the summary, and optionally a check run.
//
// REST goes through google/go-github with its base URL taken from the
// Target (api.github.com or https://HOST/api/v3/ on Enterprise); review
// threads are read and resolved through plain GraphQL requests to the
// Target's GraphQL URL. Every failure is (or wraps) a *publish.APIError.
package github

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	gh "github.com/google/go-github/v75/github"

	"github.com/diffpalhq/diffpal/internal/clip"
	"github.com/diffpalhq/diffpal/internal/publish"
	"github.com/diffpalhq/diffpal/internal/textsafe"
)

// Host is a GitHub pull request.
type Host struct {
	// CheckRun makes SetStatus create a check run with the gate decision
	// (the CLI sets it from publish.Options.CheckRun). Off, SetStatus does
	// nothing: GitHub shows the workflow's own check.
	CheckRun bool

	t           *publish.Target
	owner, name string
	rest        *gh.Client
	gql         *publish.JSONClient
	gqlURL      string
	viewer      string // the token's login, "" when unknown
	viewerTried bool
	maxBody     int64
}

// maxBody bounds every REST response body read (error bodies included).
const maxBody = 32 << 20

// New opens the target's pull request. hc should carry a
// *publish.Transport (rate-limit retries); nil uses publish.HTTPClient.
func New(t *publish.Target, hc *http.Client) (*Host, error) {
	if t == nil {
		return nil, errors.New("github: no target")
	}
	owner, name, ok := strings.Cut(t.Repo, "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		return nil, fmt.Errorf("github: repository %q: want OWNER/NAME", t.Repo)
	}
	if t.Number <= 0 {
		return nil, fmt.Errorf("github: pull request number %d", t.Number)
	}
	// go-github's WithAuthToken sets Authorization on every request the
	// client sends, redirect hops included, and reads bodies whole: both
	// clients below (go-github's and the GraphQL one) use the host client.
	hc = publish.HostClient(hc, maxBody)
	base, err := restBase(t.APIURL)
	if err != nil {
		return nil, err
	}
	gqlURL := t.GraphQLURL
	if gqlURL == "" {
		gqlURL = graphQLFor(base.String())
	}
	if u, err := url.Parse(gqlURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("github: GraphQL URL %q: want an http(s) URL", clip.Text(gqlURL, 100))
	}

	c := gh.NewClient(hc)
	if !t.Token.Empty() {
		c = c.WithAuthToken(t.Token.Reveal())
	}
	c.BaseURL = base
	c.UploadURL = uploadBase(base)
	c.UserAgent = "diffpal"
	// publish.Transport waits out rate limits; go-github must not refuse
	// requests on its own from remembered headers.
	c.DisableRateLimitCheck = true

	tok := t.Token
	h := &Host{t: t, owner: owner, name: name, rest: c, gqlURL: gqlURL}
	h.gql = &publish.JSONClient{HTTP: hc, Token: tok, UserAgent: "diffpal", Auth: func(r *http.Request) {
		if !tok.Empty() {
			r.Header.Set("Authorization", "Bearer "+tok.Reveal())
		}
	}}
	return h, nil
}

// restBase is the go-github base URL for an API URL: empty means
// api.github.com; a trailing slash is required.
func restBase(api string) (*url.URL, error) {
	if api == "" {
		api = "https://api.github.com/"
	}
	u, err := url.Parse(api)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("github: API URL %q: want an http(s) URL", clip.Text(api, 100))
	}
	u.RawQuery, u.Fragment, u.User = "", "", nil
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	return u, nil
}

// uploadBase is api.github.com → uploads.github.com, HOST/api/v3/ →
// HOST/api/uploads/ (nothing is uploaded; go-github wants one).
func uploadBase(base *url.URL) *url.URL {
	u := *base
	switch {
	case u.Host == "api.github.com":
		u.Host = "uploads.github.com"
	case strings.HasSuffix(u.Path, "/api/v3/"):
		u.Path = strings.TrimSuffix(u.Path, "v3/") + "uploads/"
	}
	return &u
}

func graphQLFor(base string) string {
	b := strings.TrimRight(base, "/")
	if s, ok := strings.CutSuffix(b, "/api/v3"); ok {
		return s + "/api/graphql"
	}
	return b + "/graphql"
}

// ---- errors

// restErr turns a go-github failure into a *publish.APIError (or a
// transport error naming the call). A 403 "Resource not accessible" on a
// write wraps publish.ErrReadOnly as well.
func (h *Host) restErr(method, path string, resp *gh.Response, err error) error {
	if err == nil {
		return nil
	}
	// A *url.Error is the transport's failure, whatever the response: a
	// redirect CheckRedirect refused comes with the 3xx it refused.
	var ue *url.Error
	if errors.As(err, &ue) {
		return h.transportErr(method, path, ue.Err)
	}
	if resp != nil && resp.Response != nil && resp.StatusCode >= 300 {
		var body []byte
		if resp.Body != nil {
			body, _ = io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		}
		if len(bytes.TrimSpace(body)) == 0 {
			var er *gh.ErrorResponse
			if errors.As(err, &er) {
				body = []byte(er.Message)
			}
		}
		if resp.Request != nil && resp.Request.URL != nil {
			path = resp.Request.URL.Path
		}
		ae := publish.NewAPIError(method, path, resp.StatusCode, body, h.t.Token)
		if method != http.MethodGet && readOnly(resp.StatusCode, string(body)) {
			return &readOnlyError{ae}
		}
		return ae
	}
	return h.transportErr(method, path, err)
}

// transportErr names the call of a failure without a host's answer.
func (h *Host) transportErr(method, path string, err error) error {
	msg := strings.TrimPrefix(err.Error(), method+" "+path+": ")
	if !h.t.Token.Empty() {
		msg = strings.ReplaceAll(msg, h.t.Token.Reveal(), "[REDACTED]")
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	return fmt.Errorf("%s %s: %s", method, path, clip.Text(msg, 300))
}

// readOnly is GitHub's answer to a write with a token that may only read:
// the fork's GITHUB_TOKEN, a workflow without pull-requests: write.
func readOnly(status int, body string) bool {
	return status == http.StatusForbidden && strings.Contains(body, "Resource not accessible by")
}

// readOnlyError is an APIError that also matches publish.ErrReadOnly.
type readOnlyError struct{ *publish.APIError }

func (e *readOnlyError) Error() string {
	return publish.ErrReadOnly.Error() + " (" + e.APIError.Error() + ")"
}
func (e *readOnlyError) Unwrap() []error { return []error{publish.ErrReadOnly, e.APIError} }

func (h *Host) repoPath(format string, args ...any) string {
	return strings.TrimRight(h.rest.BaseURL.Path, "/") + fmt.Sprintf("/repos/%s/%s", h.owner, h.name) + fmt.Sprintf(format, args...)
}

// ---- GraphQL

type gqlError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
	Path    []any  `json:"path"`
}

// graphql posts one operation; name is what errors call it ("query
// reviewThreads"). Errors in a 200 answer are errors.
func (h *Host) graphql(ctx context.Context, name, query string, vars map[string]any, data any) error {
	var out struct {
		Data   json.RawMessage `json:"data"`
		Errors []gqlError      `json:"errors"`
	}
	in := map[string]any{"query": query}
	if vars != nil {
		in["variables"] = vars
	}
	path := "/graphql"
	if u, err := url.Parse(h.gqlURL); err == nil {
		path = u.Path
	}
	resp, err := h.gql.Do(ctx, http.MethodPost, h.gqlURL, in, &out)
	if err != nil {
		if ae := (*publish.APIError)(nil); errors.As(err, &ae) && strings.HasPrefix(name, "mutation") && readOnly(ae.Status, ae.Body) {
			return fmt.Errorf("GraphQL %s: %w", name, &readOnlyError{ae})
		}
		return fmt.Errorf("GraphQL %s: %w", name, err)
	}
	if len(out.Errors) > 0 {
		msgs := make([]string, 0, len(out.Errors))
		forbidden := false
		for _, e := range out.Errors {
			m := e.Message
			if e.Type != "" {
				m = e.Type + ": " + m
			}
			msgs = append(msgs, m)
			forbidden = forbidden || e.Type == "FORBIDDEN" || strings.Contains(e.Message, "Resource not accessible by")
		}
		ae := publish.NewAPIError(http.MethodPost, path, resp.StatusCode, []byte("GraphQL errors: "+strings.Join(msgs, "; ")), h.t.Token)
		if forbidden && strings.HasPrefix(name, "mutation") {
			return fmt.Errorf("GraphQL %s: %w", name, &readOnlyError{ae})
		}
		return fmt.Errorf("GraphQL %s: %w", name, ae)
	}
	if len(out.Data) == 0 || string(out.Data) == "null" {
		return fmt.Errorf("GraphQL %s: %w", name, publish.NewAPIError(http.MethodPost, path, resp.StatusCode, []byte("no data in the answer"), h.t.Token))
	}
	if data != nil {
		if err := json.Unmarshal(out.Data, data); err != nil {
			return fmt.Errorf("GraphQL %s: the answer is not the expected JSON: %v", name, err)
		}
	}
	return nil
}

const viewerQuery = `query { viewer { login } }`

const threadsQuery = `query($owner: String!, $name: String!, $number: Int!, $cursor: String) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      headRefOid
      reviewThreads(first: 100, after: $cursor) {
        pageInfo { hasNextPage endCursor }
        nodes {
          id
          isResolved
          path
          line
          originalLine
          comments(first: 1) { nodes { databaseId body author { __typename login } } }
          last: comments(last: 1) { nodes { body author { __typename login } } }
        }
      }
    }
  }
}`

const resolveMutation = `mutation($threadId: ID!) {
  resolveReviewThread(input: {threadId: $threadId}) { thread { id isResolved } }
}`

// gqlActor is a GraphQL comment author: __typename is "Bot" for a GitHub
// App (GITHUB_TOKEN's github-actions included), "User" for a person.
type gqlActor struct {
	Typename string `json:"__typename"`
	Login    string `json:"login"`
}

type threadNode struct {
	ID           string `json:"id"`
	IsResolved   bool   `json:"isResolved"`
	Path         string `json:"path"`
	Line         *int   `json:"line"`
	OriginalLine *int   `json:"originalLine"`
	Comments     struct {
		Nodes []struct {
			DatabaseID int64     `json:"databaseId"`
			Body       string    `json:"body"`
			Author     *gqlActor `json:"author"`
		} `json:"nodes"`
	} `json:"comments"`
	// Last is the thread's last comment: diffpal's resolve reply when
	// diffpal resolved the thread.
	Last struct {
		Nodes []struct {
			Body   string    `json:"body"`
			Author *gqlActor `json:"author"`
		} `json:"nodes"`
	} `json:"last"`
}

// botsOnly is the note for an unknown viewer.
const botsOnly = "only markers written by a bot account (a GitHub App, GITHUB_TOKEN's github-actions[bot]) are taken as diffpal's"

// maxPages bounds every paginated read (100 per page: 100,000 items).
const maxPages = 1000

// sameLogin compares a GraphQL login with a REST one: an app's bot is
// "name" in GraphQL and "name[bot]" in REST.
func sameLogin(a, b string) bool {
	norm := func(s string) string { return strings.ToLower(strings.TrimSuffix(s, "[bot]")) }
	return norm(a) == norm(b)
}

// ---- Load

// Load reads the review threads (GraphQL, all pages), the pull request's
// files (REST, all pages) and the channel's summary issue comment.
func (h *Host) Load(ctx context.Context, channel string) (*publish.State, error) {
	st := &publish.State{}
	if !h.viewerTried {
		h.viewerTried = true
		var v struct {
			Viewer struct {
				Login string `json:"login"`
			} `json:"viewer"`
		}
		if err := h.graphql(ctx, "query viewer", viewerQuery, nil, &v); err != nil || v.Viewer.Login == "" {
			why := "no login"
			if err != nil {
				why = err.Error()
			}
			st.Notes = append(st.Notes, "github: cannot tell the token's identity ("+clip.Text(why, 200)+"); "+botsOnly)
		} else {
			h.viewer = v.Viewer.Login
		}
	} else if h.viewer == "" {
		st.Notes = append(st.Notes, "github: cannot tell the token's identity; "+botsOnly)
	}
	// ours says whether a marker's author is diffpal. With the viewer
	// unknown (an installation token such as Actions' GITHUB_TOKEN, which
	// may not read viewer), only a bot account can be: trusting any author
	// would let the pull request's author forge a marker that hides a
	// finding or takes over the summary. isBot is GraphQL's __typename
	// "Bot" or REST's user.type "Bot".
	ours := func(login string, isBot bool) bool {
		if h.viewer == "" {
			return isBot
		}
		return sameLogin(login, h.viewer)
	}
	oursGQL := func(a *gqlActor) bool { return a != nil && ours(a.Login, a.Typename == "Bot") }

	var cursor any
	for page := 0; ; page++ {
		if page == maxPages {
			return nil, fmt.Errorf("GraphQL query reviewThreads: more than %d pages", maxPages)
		}
		var d struct {
			Repository *struct {
				PullRequest *struct {
					HeadRefOid    string `json:"headRefOid"`
					ReviewThreads struct {
						PageInfo struct {
							HasNextPage bool   `json:"hasNextPage"`
							EndCursor   string `json:"endCursor"`
						} `json:"pageInfo"`
						Nodes []threadNode `json:"nodes"`
					} `json:"reviewThreads"`
				} `json:"pullRequest"`
			} `json:"repository"`
		}
		vars := map[string]any{"owner": h.owner, "name": h.name, "number": h.t.Number, "cursor": cursor}
		if err := h.graphql(ctx, "query reviewThreads", threadsQuery, vars, &d); err != nil {
			return nil, err
		}
		if d.Repository == nil || d.Repository.PullRequest == nil {
			return nil, fmt.Errorf("GraphQL query reviewThreads: pull request %s#%d not found", h.t.Repo, h.t.Number)
		}
		pr := d.Repository.PullRequest
		st.Head = pr.HeadRefOid
		for _, n := range pr.ReviewThreads.Nodes {
			if len(n.Comments.Nodes) == 0 {
				continue
			}
			c := n.Comments.Nodes[0]
			m, ok := publish.ParseMarker(c.Body)
			if !ok || m.Kind != "finding" || m.Channel != channel || m.StableID == "" {
				continue
			}
			if !oursGQL(c.Author) {
				continue
			}
			th := publish.Thread{ID: n.ID, StableID: m.StableID, Digest: m.Digest, Resolved: n.IsResolved, Path: n.Path}
			if n.IsResolved && len(n.Last.Nodes) > 0 {
				// Resolved by diffpal when the last comment is its resolve
				// reply for this finding; a reviewer's resolution (no
				// reply, or a reply of the reviewer's) stays quiet.
				l := n.Last.Nodes[0]
				lm, ok := publish.ParseMarker(l.Body)
				th.ResolvedByUs = ok && lm.Kind == "resolved" && lm.Channel == channel && lm.StableID == m.StableID && oursGQL(l.Author)
			}
			if c.DatabaseID != 0 {
				th.CommentID = strconv.FormatInt(c.DatabaseID, 10)
			}
			switch {
			case n.Line != nil:
				th.Line = *n.Line
			case n.OriginalLine != nil:
				th.Line = *n.OriginalLine
			}
			st.Threads = append(st.Threads, th)
		}
		info := pr.ReviewThreads.PageInfo
		if !info.HasNextPage || info.EndCursor == "" {
			break
		}
		cursor = info.EndCursor
	}

	diff := publish.NewDiff()
	opt := &gh.ListOptions{PerPage: 100}
	for page := 0; ; page++ {
		if page == maxPages {
			return nil, fmt.Errorf("GET %s: more than %d pages", h.repoPath("/pulls/%d/files", h.t.Number), maxPages)
		}
		files, resp, err := h.rest.PullRequests.ListFiles(ctx, h.owner, h.name, h.t.Number, opt)
		if err != nil {
			return nil, h.restErr(http.MethodGet, h.repoPath("/pulls/%d/files", h.t.Number), resp, err)
		}
		for _, f := range files {
			// No patch: binary or too large; GitHub takes no comment there.
			if f.GetPatch() == "" || f.GetFilename() == "" {
				continue
			}
			old := f.GetPreviousFilename()
			if old == "" {
				old = f.GetFilename()
			}
			if err := diff.Add(f.GetFilename(), old, f.GetPatch()); err != nil {
				return nil, fmt.Errorf("GET %s: %w", h.repoPath("/pulls/%d/files", h.t.Number), err)
			}
		}
		if resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	st.Diff = diff

	copt := &gh.IssueListCommentsOptions{ListOptions: gh.ListOptions{PerPage: 100}}
	for page := 0; ; page++ {
		if page == maxPages {
			return nil, fmt.Errorf("GET %s: more than %d pages", h.repoPath("/issues/%d/comments", h.t.Number), maxPages)
		}
		cs, resp, err := h.rest.Issues.ListComments(ctx, h.owner, h.name, h.t.Number, copt)
		if err != nil {
			return nil, h.restErr(http.MethodGet, h.repoPath("/issues/%d/comments", h.t.Number), resp, err)
		}
		for _, c := range cs {
			if st.Summary != nil {
				break
			}
			m, ok := publish.ParseMarker(c.GetBody())
			if !ok || m.Kind != "summary" || m.Channel != channel || !ours(c.GetUser().GetLogin(), c.GetUser().GetType() == "Bot") {
				continue
			}
			st.Summary = &publish.Note{ID: strconv.FormatInt(c.GetID(), 10), Body: c.GetBody()}
		}
		if st.Summary != nil || resp.NextPage == 0 {
			break
		}
		copt.Page = resp.NextPage
	}
	return st, nil
}

// ---- writes

// PostComments posts all creates as one review. When GitHub refuses the
// review (422: a line it does not take), each comment is posted alone and
// those refused again are moved to the summary.
func (h *Host) PostComments(ctx context.Context, p *publish.Plan, creates []*publish.Action) error {
	if len(creates) == 0 {
		return nil
	}
	review := &gh.PullRequestReviewRequest{
		Body:  gh.Ptr(fmt.Sprintf("%s\ndiffpal: %d new findings", publish.Marker{Kind: "review", Channel: p.Channel, Head: p.Head}, len(creates))),
		Event: gh.Ptr("COMMENT"),
	}
	if p.Head != "" {
		review.CommitID = gh.Ptr(p.Head)
	}
	for _, a := range creates {
		review.Comments = append(review.Comments, draft(a))
	}
	rpath := h.repoPath("/pulls/%d/reviews", h.t.Number)
	rv, resp, err := h.rest.PullRequests.CreateReview(ctx, h.owner, h.name, h.t.Number, review)
	if err != nil {
		err = h.restErr(http.MethodPost, rpath, resp, err)
		if publish.StatusOf(err) != http.StatusUnprocessableEntity {
			return err
		}
		return h.postOneByOne(ctx, p, creates)
	}
	// Map the review's comments back to the actions by their markers.
	byID := map[string]*publish.Action{}
	for _, a := range creates {
		byID[a.StableID] = a
	}
	opt := &gh.ListOptions{PerPage: 100}
	cpath := h.repoPath("/pulls/%d/reviews/%d/comments", h.t.Number, rv.GetID())
	for page := 0; page < maxPages; page++ {
		cs, resp, err := h.rest.PullRequests.ListReviewComments(ctx, h.owner, h.name, h.t.Number, rv.GetID(), opt)
		if err != nil {
			// The comments are posted; only their ids are unknown, and
			// the next run finds them by their markers.
			p.Notes = append(p.Notes, "github: review posted, but its comment ids could not be read: "+h.restErr(http.MethodGet, cpath, resp, err).Error())
			return nil
		}
		for _, c := range cs {
			if m, ok := publish.ParseMarker(c.GetBody()); ok && m.Kind == "finding" {
				if a := byID[m.StableID]; a != nil && a.CommentID == "" {
					a.CommentID = strconv.FormatInt(c.GetID(), 10)
				}
			}
		}
		if resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	return nil
}

func draft(a *publish.Action) *gh.DraftReviewComment {
	d := &gh.DraftReviewComment{Path: gh.Ptr(a.Path), Body: gh.Ptr(a.Body), Line: gh.Ptr(a.Line), Side: gh.Ptr(side(a))}
	if a.StartLine > 0 && a.StartLine < a.Line {
		d.StartLine, d.StartSide = gh.Ptr(a.StartLine), gh.Ptr(side(a))
	}
	return d
}

func side(a *publish.Action) string {
	if a.Side == "LEFT" {
		return "LEFT"
	}
	return "RIGHT"
}

// postOneByOne posts each comment as its own review comment.
func (h *Host) postOneByOne(ctx context.Context, p *publish.Plan, creates []*publish.Action) error {
	var errs []error
	path := h.repoPath("/pulls/%d/comments", h.t.Number)
	for _, a := range creates {
		c := &gh.PullRequestComment{Body: gh.Ptr(a.Body), Path: gh.Ptr(a.Path), Line: gh.Ptr(a.Line), Side: gh.Ptr(side(a))}
		if p.Head != "" {
			c.CommitID = gh.Ptr(p.Head)
		}
		if a.StartLine > 0 && a.StartLine < a.Line {
			c.StartLine, c.StartSide = gh.Ptr(a.StartLine), gh.Ptr(side(a))
		}
		got, resp, err := h.rest.PullRequests.CreateComment(ctx, h.owner, h.name, h.t.Number, c)
		if err == nil {
			a.CommentID, a.Result = strconv.FormatInt(got.GetID(), 10), "done"
			continue
		}
		why := refusal(err)
		err = h.restErr(http.MethodPost, path, resp, err)
		switch {
		case errors.Is(err, publish.ErrReadOnly):
			return err
		case publish.StatusOf(err) == http.StatusUnprocessableEntity:
			a.Moved("GitHub refused the line: " + why)
		default:
			a.Result = "failed: " + err.Error()
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// refusal is the short reason of a 422 from go-github's error: the
// message and each error's field and message.
func refusal(err error) string {
	var er *gh.ErrorResponse
	if !errors.As(err, &er) {
		return "422"
	}
	parts := []string{}
	if er.Message != "" {
		parts = append(parts, er.Message)
	}
	for _, e := range er.Errors {
		s := strings.TrimSpace(strings.Join(strings.Fields(e.Field+" "+e.Message), " "))
		if s == "" {
			s = e.Code
		}
		if s != "" {
			parts = append(parts, s)
		}
	}
	if len(parts) == 0 {
		return "422"
	}
	return textsafe.Visible(clip.Text(strings.Join(parts, ": "), 200))
}

// UpdateComment edits the kept thread's first comment.
func (h *Host) UpdateComment(ctx context.Context, a *publish.Action) error {
	id, err := commentID(a.CommentID)
	if err != nil {
		return err
	}
	_, resp, err := h.rest.PullRequests.EditComment(ctx, h.owner, h.name, id, &gh.PullRequestComment{Body: gh.Ptr(a.Body)})
	return h.restErr(http.MethodPatch, h.repoPath("/pulls/comments/%d", id), resp, err)
}

// Resolve replies on the thread, then resolves it.
func (h *Host) Resolve(ctx context.Context, p *publish.Plan, a *publish.Action) error {
	if a.ThreadID == "" {
		return errors.New("github: resolve: no thread id")
	}
	if a.CommentID != "" {
		id, err := commentID(a.CommentID)
		if err != nil {
			return err
		}
		path := h.repoPath("/pulls/%d/comments/%d/replies", h.t.Number, id)
		u := strings.TrimPrefix(path, strings.TrimRight(h.rest.BaseURL.Path, "/")+"/")
		req, err := h.rest.NewRequest(http.MethodPost, u, map[string]string{"body": a.Body})
		if err != nil {
			return fmt.Errorf("POST %s: %v", path, err)
		}
		resp, err := h.rest.Do(ctx, req, nil)
		if err != nil {
			return h.restErr(http.MethodPost, path, resp, err)
		}
	}
	var d struct {
		ResolveReviewThread *struct {
			Thread struct {
				ID         string `json:"id"`
				IsResolved bool   `json:"isResolved"`
			} `json:"thread"`
		} `json:"resolveReviewThread"`
	}
	if err := h.graphql(ctx, "mutation resolveReviewThread", resolveMutation, map[string]any{"threadId": a.ThreadID}, &d); err != nil {
		return err
	}
	if d.ResolveReviewThread == nil || !d.ResolveReviewThread.Thread.IsResolved {
		return fmt.Errorf("GraphQL mutation resolveReviewThread: thread %s is not resolved after the call", clip.Text(a.ThreadID, 80))
	}
	return nil
}

// UpsertSummary creates the channel's summary issue comment or edits it.
func (h *Host) UpsertSummary(ctx context.Context, p *publish.Plan, a *publish.Action) error {
	c := &gh.IssueComment{Body: gh.Ptr(a.Body)}
	if a.Kind == publish.UpdateSummary {
		id, err := commentID(a.CommentID)
		if err != nil {
			return err
		}
		_, resp, err := h.rest.Issues.EditComment(ctx, h.owner, h.name, id, c)
		return h.restErr(http.MethodPatch, h.repoPath("/issues/comments/%d", id), resp, err)
	}
	got, resp, err := h.rest.Issues.CreateComment(ctx, h.owner, h.name, h.t.Number, c)
	if err != nil {
		return h.restErr(http.MethodPost, h.repoPath("/issues/%d/comments", h.t.Number), resp, err)
	}
	a.CommentID = strconv.FormatInt(got.GetID(), 10)
	return nil
}

// SetStatus creates a check run with the decision when CheckRun is set.
func (h *Host) SetStatus(ctx context.Context, p *publish.Plan, a *publish.Action) error {
	if !h.CheckRun {
		a.Result = "skipped: no --check-run"
		return nil
	}
	if p.Head == "" {
		return errors.New("github: check run: no head commit")
	}
	name := "diffpal/review"
	if p.Channel != "" && p.Channel != publish.DefaultChannel {
		name += "/" + p.Channel
	}
	conclusion := "success"
	switch {
	case a.Status == "failure":
		conclusion = "failure"
	case p.Decision == "fail":
		// Blocking findings with the gate disabled.
		conclusion = "neutral"
	}
	summary := fmt.Sprintf("%s\n\nDecision: %s · %d findings, %d blocking.", a.Reason, p.Decision, p.Findings, p.Blocking)
	opts := gh.CreateCheckRunOptions{
		Name: name, HeadSHA: p.Head, Status: gh.Ptr("completed"), Conclusion: gh.Ptr(conclusion),
		Output: &gh.CheckRunOutput{Title: gh.Ptr("diffpal: " + a.Reason), Summary: gh.Ptr(summary)},
	}
	_, resp, err := h.rest.Checks.CreateCheckRun(ctx, h.owner, h.name, opts)
	err = h.restErr(http.MethodPost, h.repoPath("/check-runs"), resp, err)
	var ro *readOnlyError
	if errors.As(err, &ro) {
		// Comments went through: only the check run is not allowed.
		return fmt.Errorf("check run (needs the checks: write permission): %w", ro.APIError)
	}
	return err
}

func commentID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, fmt.Errorf("github: comment id %q is not a number", clip.Text(s, 40))
	}
	return id, nil
}

var _ publish.Host = (*Host)(nil)
