// Package azure publishes a review on an Azure DevOps pull request: one
// comment thread per finding (on the right side of the file, on the left
// side for a removed line; "active" when the finding blocks, "closed"
// otherwise), one sticky summary thread per channel, replies and status
// "fixed" on the threads of findings that are gone, and a pull-request
// status diffpal/review.
//
// It is a small client on publish.JSONClient and not
// github.com/microsoft/azure-devops-go-api/v7: diffpal needs six REST
// calls (connection data, the pull request, its iterations and their
// changes, threads and their comments, statuses), while the SDK brings a
// large generated surface (every Azure DevOps area, pointer-to-everything
// models) and its own retry, authentication and resource-location layers
// (an OPTIONS round trip per area), which would sit beside publish.Transport
// rather than under it and put error messages out of our hands. Every call
// here goes through publish.Transport (rate limits), bounds what it reads,
// and fails with a publish.APIError naming the call and the status.
//
// All calls use api-version 7.1 except connection data, which Azure
// DevOps only serves as a preview resource (7.1-preview.1).
package azure

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/diffpalhq/diffpal/internal/publish"
)

// API versions.
const (
	apiVersion = "7.1"
	// connectionData is a preview resource: a request without -preview
	// is refused with VssInvalidPreviewVersionException.
	connectionDataVersion = "7.1-preview.1"
)

// maxChangePages bounds the pages of iteration changes read (2000 changes
// each).
const maxChangePages = 500

// Host is one Azure DevOps pull request.
type Host struct {
	t   *publish.Target
	c   *publish.JSONClient
	org string // collection URI without the trailing slash
	pr  string // .../_apis/git/repositories/{repo}/pullRequests/{id}

	// Filled by Load.
	iteration int
	changes   map[string]change // by path without the leading "/"
	status    map[string]string // thread id → status as loaded
}

type change struct {
	trackingID int
	kind       string // Azure's changeType, e.g. "edit", "add", "delete", "edit, rename"
	oldPath    string
}

// New opens the pull request t names. hc carries publish.Transport; nil
// means publish.HTTPClient(nil).
func New(t *publish.Target, hc *http.Client) (*Host, error) {
	if t == nil {
		return nil, errors.New("azure: no target")
	}
	// net/http keeps Authorization on a redirect to the same host name on
	// another port or scheme: redirects stay on the organization's scheme
	// and host. JSONClient bounds the bodies itself.
	hc = publish.HostClient(hc, 0)
	u, err := url.Parse(t.APIURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("azure: organization URL %q: want an http(s) URL such as https://dev.azure.com/ORG/", t.APIURL)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("azure: organization URL %q: want no query, fragment or user", u.Redacted())
	}
	switch {
	case t.Project == "":
		return nil, errors.New("azure: no team project (SYSTEM_TEAMPROJECT or --project)")
	case t.Repo == "":
		return nil, errors.New("azure: no repository (BUILD_REPOSITORY_ID or --repo)")
	case t.Number <= 0:
		return nil, errors.New("azure: no pull request id (SYSTEM_PULLREQUEST_PULLREQUESTID or --pr)")
	case t.Token.Empty():
		return nil, errors.New("azure: no token (SYSTEM_ACCESSTOKEN or AZURE_DEVOPS_EXT_PAT)")
	}
	org := strings.TrimRight(u.String(), "/")
	h := &Host{
		t:   t,
		org: org,
		pr: fmt.Sprintf("%s/%s/_apis/git/repositories/%s/pullRequests/%d", org,
			url.PathEscape(t.Project), url.PathEscape(t.Repo), t.Number),
	}
	tok := t.Token
	auth := "Basic " + base64.StdEncoding.EncodeToString([]byte(":"+tok.Reveal()))
	if t.TokenFrom == "SYSTEM_ACCESSTOKEN" {
		// The job's System.AccessToken is an OAuth token. A personal
		// access token (AZURE_DEVOPS_EXT_PAT, or one given otherwise) is
		// Basic with an empty user name, which also takes a job token.
		auth = "Bearer " + tok.Reveal()
	}
	h.c = &publish.JSONClient{HTTP: hc, Token: tok, UserAgent: "diffpal", MaxBody: 32 << 20,
		Auth: func(r *http.Request) {
			r.Header.Set("Authorization", auth)
			// Without it Azure DevOps answers an unaccepted token with
			// 203 and a sign-in page instead of 401.
			r.Header.Set("X-TFS-FedAuthRedirect", "Suppress")
		}}
	return h, nil
}

// call sends one request to rawURL with api-version v added.
func (h *Host) call(ctx context.Context, method, rawURL, v string, q url.Values, in, out any) error {
	if q == nil {
		q = url.Values{}
	}
	q.Set("api-version", v)
	u := rawURL + "?" + q.Encode()
	resp, err := h.c.Do(ctx, method, u, in, out)
	if resp != nil && resp.StatusCode == http.StatusNonAuthoritativeInfo {
		// A sign-in page: the token was not accepted.
		path := rawURL
		if pu, perr := url.Parse(rawURL); perr == nil {
			path = pu.Path
		}
		return publish.NewAPIError(method, path, resp.StatusCode, []byte("Azure DevOps answered with a sign-in page: the token was not accepted"), h.t.Token)
	}
	return err
}

// write is call for a write request: a refusal for want of permission is
// publish.ErrReadOnly.
func (h *Host) write(ctx context.Context, method, rawURL string, in, out any) error {
	err := h.call(ctx, method, rawURL, apiVersion, nil, in, out)
	if err != nil && readOnly(err) {
		return fmt.Errorf("%w: %v", publish.ErrReadOnly, err)
	}
	return err
}

// readOnly reports a refusal that means the token may not write: 401 or
// 403 with TF401027 ("You need the Git 'PullRequestContribute'
// permission") or another permission message.
func readOnly(err error) bool {
	var ae *publish.APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusUnauthorized && ae.Status != http.StatusForbidden {
		return false
	}
	b := strings.ToLower(ae.Body)
	return strings.Contains(b, "tf401027") || strings.Contains(b, "permission")
}

// Wire types: the fields of Azure DevOps' JSON that diffpal reads or
// writes (names as in the REST reference, api-version 7.1).
type (
	identityRef struct {
		ID          string `json:"id"`
		DisplayName string `json:"displayName,omitempty"`
	}
	position struct {
		Line   int `json:"line"`
		Offset int `json:"offset"`
	}
	threadContext struct {
		FilePath       string    `json:"filePath"`
		LeftFileStart  *position `json:"leftFileStart,omitempty"`
		LeftFileEnd    *position `json:"leftFileEnd,omitempty"`
		RightFileStart *position `json:"rightFileStart,omitempty"`
		RightFileEnd   *position `json:"rightFileEnd,omitempty"`
	}
	iterationContext struct {
		FirstComparingIteration  int `json:"firstComparingIteration"`
		SecondComparingIteration int `json:"secondComparingIteration"`
	}
	prThreadContext struct {
		ChangeTrackingID int               `json:"changeTrackingId"`
		IterationContext *iterationContext `json:"iterationContext,omitempty"`
	}
	comment struct {
		ID              int          `json:"id,omitempty"`
		ParentCommentID int          `json:"parentCommentId"`
		Author          *identityRef `json:"author,omitempty"`
		Content         string       `json:"content"`
		// CommentType is written as 1 (text) and read as Azure returns
		// it ("text").
		CommentType any  `json:"commentType,omitempty"`
		IsDeleted   bool `json:"isDeleted,omitempty"`
	}
	thread struct {
		ID                       int              `json:"id,omitempty"`
		Comments                 []comment        `json:"comments"`
		Status                   string           `json:"status,omitempty"`
		ThreadContext            *threadContext   `json:"threadContext,omitempty"`
		PullRequestThreadContext *prThreadContext `json:"pullRequestThreadContext,omitempty"`
		IsDeleted                bool             `json:"isDeleted,omitempty"`
	}
)

// commentText is Azure's CommentType.text.
const commentText = 1

// Load reads the pull request's threads, summary, latest iteration's
// changed files and head commit.
func (h *Host) Load(ctx context.Context, channel string) (*publish.State, error) {
	st := &publish.State{}
	me, err := h.identity(ctx)
	if err != nil {
		// Unlike GitHub (a Bot account type), Azure DevOps' identities
		// carry no flag that tells a build service or other non-person
		// account from a person, so there is nothing narrower to fall
		// back on: trusting no marker would repost every finding on
		// every run, so markers of any author are taken, and the log
		// says that they could not be checked.
		st.Notes = append(st.Notes, fmt.Sprintf("azure: could not tell the token's identity (%v); markers of any author are taken as diffpal's", err),
			"azure: diffpal markers could not be checked against their author (Azure DevOps has no bot flag to fall back on): a marker another user typed can hide a finding or be taken for the summary")
	}

	var pr struct {
		PullRequestID         int    `json:"pullRequestId"`
		Status                string `json:"status"`
		LastMergeSourceCommit *struct {
			CommitID string `json:"commitId"`
		} `json:"lastMergeSourceCommit"`
	}
	if err := h.call(ctx, http.MethodGet, h.pr, apiVersion, nil, nil, &pr); err != nil {
		return nil, err
	}
	if pr.LastMergeSourceCommit != nil {
		st.Head = pr.LastMergeSourceCommit.CommitID
	}
	if pr.Status != "" && pr.Status != "active" {
		st.Notes = append(st.Notes, fmt.Sprintf("azure: pull request %d is %s", h.t.Number, pr.Status))
	}

	if err := h.loadChanges(ctx); err != nil {
		return nil, err
	}
	st.Diff = publish.NewDiff()
	for p, ch := range h.changes {
		st.Diff.AddWhole(p, ch.oldPath)
	}

	var list struct {
		Value []thread `json:"value"`
		Count int      `json:"count"`
	}
	if err := h.call(ctx, http.MethodGet, h.pr+"/threads", apiVersion, nil, nil, &list); err != nil {
		return nil, err
	}
	h.status = map[string]string{}
	var summaries []*publish.Note
	for _, th := range list.Value {
		if th.IsDeleted || th.ID <= 0 {
			continue
		}
		first := firstComment(th.Comments)
		if first == nil {
			continue
		}
		m, ok := publish.ParseMarker(first.Content)
		if !ok || m.Channel != channel {
			continue
		}
		if me != "" && (first.Author == nil || !strings.EqualFold(first.Author.ID, me)) {
			continue
		}
		id := strconv.Itoa(th.ID)
		h.status[id] = th.Status
		switch m.Kind {
		case "finding":
			if m.StableID == "" {
				continue
			}
			t := publish.Thread{ID: id, CommentID: strconv.Itoa(first.ID), StableID: m.StableID, Digest: m.Digest,
				Resolved: resolved(th.Status), Status: th.Status}
			if last := lastComment(th.Comments); t.Resolved && last != nil && last.ID != first.ID {
				// diffpal set it to fixed when the last comment is its
				// resolve reply for this finding.
				lm, ok := publish.ParseMarker(last.Content)
				t.ResolvedByUs = ok && lm.Kind == "resolved" && lm.Channel == channel && lm.StableID == m.StableID &&
					(me == "" || last.Author != nil && strings.EqualFold(last.Author.ID, me))
			}
			if c := th.ThreadContext; c != nil {
				t.Path = strings.TrimPrefix(c.FilePath, "/")
				switch {
				case c.RightFileStart != nil:
					t.Line = c.RightFileStart.Line
				case c.LeftFileStart != nil:
					t.Line = c.LeftFileStart.Line
				}
			}
			st.Threads = append(st.Threads, t)
		case "summary":
			summaries = append(summaries, &publish.Note{ID: strconv.Itoa(first.ID), ThreadID: id, Body: first.Content})
		}
	}
	if len(summaries) > 0 {
		// Threads come in id order; the oldest summary is the one kept.
		sort.SliceStable(summaries, func(i, j int) bool { return atoi(summaries[i].ThreadID) < atoi(summaries[j].ThreadID) })
		st.Summary = summaries[0]
		if len(summaries) > 1 {
			st.Notes = append(st.Notes, fmt.Sprintf("azure: %d summary threads of channel %s; thread %s is updated", len(summaries), channel, st.Summary.ThreadID))
		}
	}
	return st, nil
}

// identity is the id of the token's user (connection data's
// authenticatedUser).
func (h *Host) identity(ctx context.Context) (string, error) {
	var cd struct {
		AuthenticatedUser *identityRef `json:"authenticatedUser"`
	}
	if err := h.call(ctx, http.MethodGet, h.org+"/_apis/connectionData", connectionDataVersion, nil, nil, &cd); err != nil {
		return "", err
	}
	if cd.AuthenticatedUser == nil || cd.AuthenticatedUser.ID == "" {
		return "", errors.New("connection data names no authenticated user")
	}
	return cd.AuthenticatedUser.ID, nil
}

// loadChanges reads the latest iteration and its changed files, all pages.
func (h *Host) loadChanges(ctx context.Context) error {
	var its struct {
		Value []struct {
			ID int `json:"id"`
		} `json:"value"`
	}
	if err := h.call(ctx, http.MethodGet, h.pr+"/iterations", apiVersion, nil, nil, &its); err != nil {
		return err
	}
	h.iteration = 0
	for _, it := range its.Value {
		h.iteration = max(h.iteration, it.ID)
	}
	h.changes = map[string]change{}
	if h.iteration == 0 {
		return nil
	}
	skip := 0
	for page := 0; ; page++ {
		if page == maxChangePages {
			return fmt.Errorf("GET %s/iterations/%d/changes: more than %d pages", h.pr, h.iteration, maxChangePages)
		}
		var res struct {
			ChangeEntries []struct {
				ChangeTrackingID int    `json:"changeTrackingId"`
				ChangeType       string `json:"changeType"`
				Item             *struct {
					Path          string `json:"path"`
					IsFolder      bool   `json:"isFolder"`
					GitObjectType string `json:"gitObjectType"`
				} `json:"item"`
				OriginalPath     string `json:"originalPath"`
				SourceServerItem string `json:"sourceServerItem"`
			} `json:"changeEntries"`
			NextSkip int `json:"nextSkip"`
			NextTop  int `json:"nextTop"`
		}
		q := url.Values{"$top": {"2000"}, "$skip": {strconv.Itoa(skip)}}
		if err := h.call(ctx, http.MethodGet, fmt.Sprintf("%s/iterations/%d/changes", h.pr, h.iteration), apiVersion, q, nil, &res); err != nil {
			return err
		}
		for _, e := range res.ChangeEntries {
			if e.Item == nil || e.Item.IsFolder || e.Item.GitObjectType == "tree" || e.Item.Path == "" {
				continue
			}
			p := strings.TrimPrefix(e.Item.Path, "/")
			old := strings.TrimPrefix(cmpOr(e.OriginalPath, e.SourceServerItem), "/")
			if old == p {
				old = ""
			}
			h.changes[p] = change{trackingID: e.ChangeTrackingID, kind: e.ChangeType, oldPath: old}
		}
		if res.NextSkip <= skip || len(res.ChangeEntries) == 0 {
			// nextSkip is 0 (or absent) on the last page.
			return nil
		}
		skip = res.NextSkip
	}
}

// firstComment is the thread's root comment: the lowest id without a
// parent that is not deleted.
func firstComment(cs []comment) *comment {
	var first *comment
	for i := range cs {
		c := &cs[i]
		if c.IsDeleted || c.ParentCommentID != 0 {
			continue
		}
		if first == nil || c.ID < first.ID {
			first = c
		}
	}
	return first
}

// lastComment is the thread's latest comment, replies included: the
// highest id (ids grow within a thread) that is not deleted nor a
// system comment.
func lastComment(cs []comment) *comment {
	var last *comment
	for i := range cs {
		c := &cs[i]
		if c.IsDeleted || c.CommentType == "system" {
			continue
		}
		if last == nil || c.ID > last.ID {
			last = c
		}
	}
	return last
}

// resolved is true for the statuses that no longer ask for attention.
// "closed" is not one: it is how non-blocking findings are posted.
func resolved(status string) bool {
	switch strings.ToLower(status) {
	case "fixed", "wontfix", "bydesign":
		return true
	}
	return false
}

func threadStatus(blocking bool) string {
	if blocking {
		return "active"
	}
	return "closed"
}

// PostComments creates one thread per action.
func (h *Host) PostComments(ctx context.Context, p *publish.Plan, creates []*publish.Action) error {
	var errs []error
	for _, a := range creates {
		ch, ok := h.changes[a.Path]
		if !ok {
			a.Moved("the file is not in the pull request's latest iteration")
			continue
		}
		left := a.Side == "LEFT"
		kind := strings.ToLower(ch.kind)
		switch {
		case left && strings.Contains(kind, "add"):
			a.Moved("the file is new in the pull request: it has no base side for a removed line")
			continue
		case !left && strings.Contains(kind, "delete"):
			a.Moved("the file is deleted in the pull request: it has no head side")
			continue
		}
		start := a.StartLine
		if start <= 0 {
			start = a.Line
		}
		tc := &threadContext{FilePath: "/" + a.Path}
		s, e := &position{Line: start, Offset: 1}, &position{Line: a.Line, Offset: 1}
		if left {
			tc.LeftFileStart, tc.LeftFileEnd = s, e
		} else {
			tc.RightFileStart, tc.RightFileEnd = s, e
		}
		in := thread{
			Comments:      []comment{{ParentCommentID: 0, Content: a.Body, CommentType: commentText}},
			Status:        threadStatus(a.Blocking),
			ThreadContext: tc,
			PullRequestThreadContext: &prThreadContext{ChangeTrackingID: ch.trackingID,
				IterationContext: &iterationContext{FirstComparingIteration: h.iteration, SecondComparingIteration: h.iteration}},
		}
		var out thread
		err := h.write(ctx, http.MethodPost, h.pr+"/threads", in, &out)
		switch {
		case errors.Is(err, publish.ErrReadOnly):
			return err
		case publish.StatusOf(err) == http.StatusBadRequest:
			// Azure refused the position (a line past the file's end, a
			// change it no longer tracks): the summary lists it.
			a.Moved("Azure DevOps refused the thread's position: " + err.Error())
			continue
		case err != nil:
			a.Result = "failed: " + err.Error()
			errs = append(errs, err)
			continue
		}
		a.ThreadID = strconv.Itoa(out.ID)
		if c := firstComment(out.Comments); c != nil {
			a.CommentID = strconv.Itoa(c.ID)
		}
		a.Result = "done"
	}
	return errors.Join(errs...)
}

// UpdateComment edits the finding's comment and sets the thread's status
// from the finding's blocking flag.
func (h *Host) UpdateComment(ctx context.Context, a *publish.Action) error {
	tid, cid, err := ids(a.ThreadID, a.CommentID)
	if err != nil {
		return err
	}
	if err := h.write(ctx, http.MethodPatch, fmt.Sprintf("%s/threads/%d/comments/%d", h.pr, tid, cid), map[string]string{"content": a.Body}, nil); err != nil {
		return err
	}
	return h.setThreadStatus(ctx, a.ThreadID, threadStatus(a.Blocking))
}

// setThreadStatus PATCHes a thread's status unless Load saw it already.
func (h *Host) setThreadStatus(ctx context.Context, threadID, status string) error {
	if h.status != nil && h.status[threadID] == status {
		return nil
	}
	tid, err := strconv.Atoi(threadID)
	if err != nil || tid <= 0 {
		return fmt.Errorf("azure: thread id %q is not a number", threadID)
	}
	if err := h.write(ctx, http.MethodPatch, fmt.Sprintf("%s/threads/%d", h.pr, tid), map[string]string{"status": status}, nil); err != nil {
		return err
	}
	if h.status != nil {
		h.status[threadID] = status
	}
	return nil
}

// Resolve replies on the thread and sets it to fixed.
func (h *Host) Resolve(ctx context.Context, p *publish.Plan, a *publish.Action) error {
	tid, err := strconv.Atoi(a.ThreadID)
	if err != nil || tid <= 0 {
		return fmt.Errorf("azure: thread id %q is not a number", a.ThreadID)
	}
	parent, _ := strconv.Atoi(a.CommentID)
	reply := comment{ParentCommentID: parent, Content: a.Body, CommentType: commentText}
	if err := h.write(ctx, http.MethodPost, fmt.Sprintf("%s/threads/%d/comments", h.pr, tid), reply, nil); err != nil {
		return err
	}
	return h.setThreadStatus(ctx, a.ThreadID, "fixed")
}

// UpsertSummary creates the channel's summary thread or edits its
// comment; the thread is active while findings block.
func (h *Host) UpsertSummary(ctx context.Context, p *publish.Plan, a *publish.Action) error {
	status := threadStatus(p.Blocking > 0)
	if a.Kind == publish.UpdateSummary {
		tid, cid, err := ids(a.ThreadID, a.CommentID)
		if err != nil {
			return err
		}
		if err := h.write(ctx, http.MethodPatch, fmt.Sprintf("%s/threads/%d/comments/%d", h.pr, tid, cid), map[string]string{"content": a.Body}, nil); err != nil {
			return err
		}
		return h.setThreadStatus(ctx, a.ThreadID, status)
	}
	in := thread{Comments: []comment{{ParentCommentID: 0, Content: a.Body, CommentType: commentText}}, Status: status}
	var out thread
	if err := h.write(ctx, http.MethodPost, h.pr+"/threads", in, &out); err != nil {
		return err
	}
	a.ThreadID = strconv.Itoa(out.ID)
	if c := firstComment(out.Comments); c != nil {
		a.CommentID = strconv.Itoa(c.ID)
	}
	return nil
}

// SetStatus posts the pull-request status diffpal/review (genre diffpal,
// name review, or review-CHANNEL on another channel).
func (h *Host) SetStatus(ctx context.Context, p *publish.Plan, a *publish.Action) error {
	state := "succeeded"
	if a.Status == "failure" {
		state = "failed"
	}
	name := "review"
	if p.Channel != "" && p.Channel != publish.DefaultChannel {
		name += "-" + p.Channel
	}
	in := struct {
		State       string            `json:"state"`
		Description string            `json:"description"`
		Context     map[string]string `json:"context"`
		TargetURL   string            `json:"targetUrl,omitempty"`
	}{State: state, Description: a.Reason, Context: map[string]string{"name": name, "genre": "diffpal"}, TargetURL: h.t.JobURL}
	return h.write(ctx, http.MethodPost, h.pr+"/statuses", in, nil)
}

func ids(thread, comment string) (int, int, error) {
	tid, err1 := strconv.Atoi(thread)
	cid, err2 := strconv.Atoi(comment)
	if err1 != nil || err2 != nil || tid <= 0 || cid <= 0 {
		return 0, 0, fmt.Errorf("azure: thread %q comment %q: not Azure DevOps ids", thread, comment)
	}
	return tid, cid, nil
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
