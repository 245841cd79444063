// Package gitlab publishes a findings bundle on a GitLab merge request:
// positioned discussions on the lines of the merge request's latest diff
// version (a general discussion when GitLab refuses a position), one
// sticky summary note per channel, resolution of the discussions whose
// finding is gone, and a commit status. CodeQuality writes the Code
// Quality report (gl-code-quality-report.json) with every finding.
//
// It speaks GitLab's REST API v4 through gitlab.com/gitlab-org/api/client-go
// with the client's own retries turned off (gitlab.WithoutRetries): the
// publish.Transport inside the HTTP client already waits out rate limits
// (429 with Retry-After) and repeats idempotent requests on 502/503/504,
// while client-go would also retry a POST on any 5xx (a comment posted
// twice) and multiply the waits.
package gitlab

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	gl "gitlab.com/gitlab-org/api/client-go"

	"github.com/diffpalhq/diffpal/internal/clip"
	"github.com/diffpalhq/diffpal/internal/publish"
	"github.com/diffpalhq/diffpal/internal/secrets"
	"github.com/diffpalhq/diffpal/internal/textsafe"
)

// Bounds on what is read.
const (
	maxBody  = 32 << 20 // one response body
	perPage  = 100
	maxPages = 500 // 50,000 discussions
)

// Host is one merge request, opened on a Target. Load must run before the
// writing methods: it records the diff version whose SHAs positions carry.
type Host struct {
	c        *gl.Client
	t        *publish.Target
	token    publish.Secret
	pid      string // project id or path, as the Target gives it
	iid      int64
	basePath string // the API's path prefix, "/api/v4"
	apiURL   string
	jobToken bool

	userID  int64 // the token's user; 0 when GET /user did not tell
	version *version
	files   map[string]*fileLines
	// general holds the discussions of this channel that carry no
	// position (the location is in their body, kept on updates).
	general map[string]bool
}

type version struct {
	ID                                           int64
	BaseCommitSHA, StartCommitSHA, HeadCommitSHA string
}

// New opens the merge request t.Number of project t.Repo at t.APIURL. hc
// carries the publish.Transport; nil means publish.HTTPClient(nil).
func New(t *publish.Target, hc *http.Client) (*Host, error) {
	if t == nil || t.Token.Empty() {
		return nil, errors.New("gitlab: no token (GITLAB_TOKEN or CI_JOB_TOKEN)")
	}
	if t.Repo == "" || t.Number <= 0 {
		return nil, errors.New("gitlab: the target needs a project and a merge request iid")
	}
	api := strings.TrimRight(t.APIURL, "/")
	if api == "" {
		api = "https://gitlab.com/api/v4"
	}
	u, err := url.Parse(api)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("gitlab: API URL %q: want an http(s) URL", clip.Text(api, 200))
	}
	base := strings.TrimRight(u.Path, "/")
	if !strings.HasSuffix(base, "/api/v4") {
		base += "/api/v4" // client-go appends it too
	}
	h := &Host{t: t, token: t.Token, pid: t.Repo, iid: int64(t.Number), basePath: base, apiURL: api,
		jobToken: t.TokenFrom == "CI_JOB_TOKEN", files: map[string]*fileLines{}, general: map[string]bool{}}
	opts := []gl.ClientOptionFunc{
		gl.WithBaseURL(api),
		gl.WithHTTPClient(publish.HostClient(hc, maxBody)),
		gl.WithoutRetries(),
		gl.WithUserAgent("diffpal"),
	}
	if h.jobToken {
		h.c, err = gl.NewJobClient(t.Token.Reveal(), opts...)
	} else {
		h.c, err = gl.NewClient(t.Token.Reveal(), opts...)
	}
	if err != nil {
		return nil, fmt.Errorf("gitlab: %v", err)
	}
	return h, nil
}

// path is the API path of a call, for errors: /api/v4/projects/ID/...
func (h *Host) path(format string, args ...any) string {
	return h.basePath + "/projects/" + gl.PathEscape(h.pid) + fmt.Sprintf(format, args...)
}

func (h *Host) mr(format string, args ...any) string {
	return h.path(fmt.Sprintf("/merge_requests/%d", h.iid)+format, args...)
}

// fail turns a client-go error into a publish.APIError naming the call.
func (h *Host) fail(method, path string, resp *gl.Response, err error) error {
	var er *gl.ErrorResponse
	switch {
	case errors.As(err, &er) && er.Response != nil:
		return publish.NewAPIError(method, path, er.Response.StatusCode, er.Body, h.token)
	case resp != nil && resp.Response != nil && resp.StatusCode >= 300:
		return publish.NewAPIError(method, path, resp.StatusCode, nil, h.token)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // the URL is the call, named already
	}
	msg := err.Error()
	if !h.token.Empty() {
		msg = strings.ReplaceAll(msg, h.token.Reveal(), "[REDACTED]")
	}
	return fmt.Errorf("%s %s: %s", method, path, textsafe.Visible(clip.Text(msg, 300)))
}

// writeFail is fail for a write: a 403 (or a job token's 401) means the
// token may not write to the merge request.
func (h *Host) writeFail(method, path string, resp *gl.Response, err error) error {
	e := h.fail(method, path, resp, err)
	switch st := publish.StatusOf(e); {
	case h.jobToken && (st == http.StatusUnauthorized || st == http.StatusForbidden):
		return h.jobTokenRefused(e)
	case st == http.StatusForbidden:
		return fmt.Errorf("%w: %w", publish.ErrReadOnly, e)
	}
	return e
}

// jobTokenHint says what to do instead of CI_JOB_TOKEN.
const jobTokenHint = "CI_JOB_TOKEN cannot read or write merge request discussions, notes or commit statuses; " +
	"set GITLAB_TOKEN to a project access token with the api scope and the Developer role"

// jobTokenRefused maps GitLab's 401 or 403 to a job token to
// publish.ErrReadOnly with jobTokenHint: the job token's API access is a
// short allowlist without merge request discussions, notes and commit
// statuses, so nothing can be published with it and that is not the
// review's failure (Run skips, exit 0). Any other error is returned as is.
func (h *Host) jobTokenRefused(err error) error {
	if !h.jobToken {
		return err
	}
	if st := publish.StatusOf(err); st != http.StatusUnauthorized && st != http.StatusForbidden {
		return err
	}
	return fmt.Errorf("%w: %s: %w", publish.ErrReadOnly, jobTokenHint, err)
}

// Load reads the merge request's discussions (every page), its summary
// and its latest diff version.
func (h *Host) Load(ctx context.Context, channel string) (*publish.State, error) {
	st := &publish.State{}
	ctxOpt := gl.WithContext(ctx)
	// Who the token is: markers are only trusted on its own notes.
	if u, resp, err := h.c.Users.CurrentUser(ctxOpt); err == nil && u != nil && u.ID != 0 {
		h.userID = u.ID
	} else {
		why := "no user"
		if err != nil {
			why = h.fail(http.MethodGet, h.basePath+"/user", resp, err).Error()
		}
		st.Notes = append(st.Notes, "could not tell the token's user ("+why+"); diffpal markers of any author are trusted")
	}
	// A personal, project or group access token without the api scope
	// reads but cannot write: say so before planning writes.
	if !h.jobToken {
		if pat, _, err := h.c.PersonalAccessTokens.GetSinglePersonalAccessToken(ctxOpt); err == nil && pat != nil && len(pat.Scopes) > 0 && !slices.Contains(pat.Scopes, "api") {
			return nil, fmt.Errorf("%w: the token's scopes are %s; publishing needs the api scope", publish.ErrReadOnly, strings.Join(pat.Scopes, ", "))
		}
	}
	if err := h.loadDiscussions(ctx, channel, st); err != nil {
		return nil, h.jobTokenRefused(err)
	}
	if err := h.loadDiff(ctx, st); err != nil {
		return nil, h.jobTokenRefused(err)
	}
	return st, nil
}

func (h *Host) loadDiscussions(ctx context.Context, channel string, st *publish.State) error {
	opt := &gl.ListMergeRequestDiscussionsOptions{ListOptions: gl.ListOptions{PerPage: perPage, Page: 1}}
	var next string
	for pages := 0; ; pages++ {
		if pages == maxPages {
			return fmt.Errorf("GET %s: more than %d pages", h.mr("/discussions"), maxPages)
		}
		ro := []gl.RequestOptionFunc{gl.WithContext(ctx)}
		if next != "" {
			ro = append(ro, gl.WithKeysetPaginationParameters(next))
		}
		ds, resp, err := h.c.Discussions.ListMergeRequestDiscussions(h.pid, h.iid, opt, ro...)
		if err != nil {
			return h.fail(http.MethodGet, h.mr("/discussions"), resp, err)
		}
		for _, d := range ds {
			h.discussion(d, channel, st)
		}
		switch {
		case resp.NextPage > opt.Page:
			opt.Page, next = resp.NextPage, ""
		case resp.NextPage == 0 && len(resp.Header.Values("X-Next-Page")) == 0:
			// No offset headers (keyset pagination, a proxy that drops
			// them): follow the Link header, on the API's host only.
			l, err := publish.NextLink(resp.Response, h.apiURL)
			if err != nil {
				return fmt.Errorf("GET %s: %v", h.mr("/discussions"), err)
			}
			if l == "" || l == next {
				return nil
			}
			next = l
		default:
			return nil
		}
	}
}

// discussion records d when its first note is a marker of the channel
// written by the token's user.
func (h *Host) discussion(d *gl.Discussion, channel string, st *publish.State) {
	ours := func(n *gl.Note) bool { return !n.System && (h.userID == 0 || n.Author.ID == h.userID) }
	if d == nil || len(d.Notes) == 0 || d.Notes[0] == nil {
		return
	}
	n := d.Notes[0]
	if !ours(n) {
		return
	}
	m, ok := publish.ParseMarker(n.Body)
	if !ok || m.Channel != channel {
		return
	}
	id := strconv.FormatInt(n.ID, 10)
	switch m.Kind {
	case "finding":
		if m.StableID == "" {
			return
		}
		th := publish.Thread{ID: d.ID, CommentID: id, StableID: m.StableID, Digest: m.Digest, Resolved: n.Resolved}
		if n.Resolved {
			// diffpal resolved it when the last note (system notes such
			// as "changed this line in version 2 of the diff" aside) is
			// its resolve reply for this finding.
			for i := len(d.Notes) - 1; i > 0; i-- {
				last := d.Notes[i]
				if last == nil || last.System {
					continue
				}
				lm, ok := publish.ParseMarker(last.Body)
				th.ResolvedByUs = ours(last) && ok && lm.Kind == "resolved" && lm.Channel == channel && lm.StableID == m.StableID
				break
			}
		}
		if p := n.Position; p != nil {
			th.Path, th.Line = p.NewPath, int(p.NewLine)
			if p.NewLine == 0 && p.OldLine != 0 {
				th.Path, th.Line = p.OldPath, int(p.OldLine)
			}
		} else {
			h.general[d.ID] = true
		}
		st.Threads = append(st.Threads, th)
	case "summary":
		if st.Summary == nil { // the oldest one; discussions come oldest first
			st.Summary = &publish.Note{ID: id, ThreadID: d.ID, Body: n.Body}
		}
	}
}

// versionDiff is GET .../versions/:id with the fields client-go's Diff
// lacks (too_large, collapsed).
type versionDiff struct {
	ID             int64  `json:"id"`
	HeadCommitSHA  string `json:"head_commit_sha"`
	BaseCommitSHA  string `json:"base_commit_sha"`
	StartCommitSHA string `json:"start_commit_sha"`
	Diffs          []struct {
		OldPath     string `json:"old_path"`
		NewPath     string `json:"new_path"`
		Diff        string `json:"diff"`
		NewFile     bool   `json:"new_file"`
		RenamedFile bool   `json:"renamed_file"`
		DeletedFile bool   `json:"deleted_file"`
		TooLarge    bool   `json:"too_large"`
		Collapsed   bool   `json:"collapsed"`
	} `json:"diffs"`
}

// loadDiff reads the latest diff version: its SHAs go into every
// position, its patches say which lines can carry one.
func (h *Host) loadDiff(ctx context.Context, st *publish.State) error {
	vs, resp, err := h.c.MergeRequests.GetMergeRequestDiffVersions(h.pid, h.iid, nil, gl.WithContext(ctx))
	if err != nil {
		return h.fail(http.MethodGet, h.mr("/versions"), resp, err)
	}
	st.Diff = publish.NewDiff()
	if len(vs) == 0 || vs[0] == nil {
		st.Notes = append(st.Notes, "the merge request has no diff version yet: no line can carry a comment")
		return nil
	}
	p := h.mr("/versions/%d", vs[0].ID)
	req, err := h.c.NewRequest(http.MethodGet, strings.TrimPrefix(p, h.basePath+"/"), nil, []gl.RequestOptionFunc{gl.WithContext(ctx)})
	if err != nil {
		return fmt.Errorf("GET %s: %v", p, err)
	}
	var v versionDiff
	if resp, err := h.c.Do(req, &v); err != nil {
		return h.fail(http.MethodGet, p, resp, err)
	}
	h.version = &version{ID: v.ID, BaseCommitSHA: v.BaseCommitSHA, StartCommitSHA: v.StartCommitSHA, HeadCommitSHA: v.HeadCommitSHA}
	st.Head = v.HeadCommitSHA
	for _, d := range v.Diffs {
		path := d.NewPath
		if path == "" {
			path = d.OldPath
		}
		if d.Diff == "" && (d.TooLarge || d.Collapsed) {
			// GitLab did not send the patch; positions are tried and
			// fall back to a general discussion when refused.
			st.Diff.AddWhole(path, d.OldPath)
			continue
		}
		if err := st.Diff.Add(path, d.OldPath, d.Diff); err != nil {
			return fmt.Errorf("GET %s: %v", p, err)
		}
		h.files[path] = parseLines(d.Diff)
	}
	return nil
}

// PostComments creates one discussion per action: positioned on its line
// of the latest diff version, or, when GitLab refuses the position, a
// general discussion whose body names the location. Only when that is
// refused too does the finding move to the summary.
func (h *Host) PostComments(ctx context.Context, p *publish.Plan, creates []*publish.Action) error {
	var errs []error
	for _, a := range creates {
		d, err := h.postPositioned(ctx, a)
		if err != nil && refusedPosition(err) {
			why := publish.StatusOf(err)
			d, err = h.createDiscussion(ctx, locatedBody(a), nil)
			switch {
			case err == nil:
				a.Result = fmt.Sprintf("done: posted as a general discussion (GitLab refused the position with %d)", why)
				h.general[d.ID] = true
			case publish.StatusOf(err) == http.StatusBadRequest:
				a.Moved(err.Error())
				continue
			}
		}
		if err != nil {
			if errors.Is(err, publish.ErrReadOnly) {
				return err
			}
			a.Result = "failed: " + err.Error()
			errs = append(errs, err)
			continue
		}
		a.ThreadID = d.ID
		if len(d.Notes) > 0 && d.Notes[0] != nil {
			a.CommentID = strconv.FormatInt(d.Notes[0].ID, 10)
		}
		if a.Result == "" {
			a.Result = "done"
		}
	}
	return errors.Join(errs...)
}

// refusedPosition reports GitLab's 400 for a position it cannot place
// ("line_code can't be blank", "must be a valid line code", "position is
// incomplete/invalid").
func refusedPosition(err error) bool {
	var ae *publish.APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest {
		return false
	}
	b := strings.ToLower(ae.Body)
	return strings.Contains(b, "line_code") || strings.Contains(b, "line code") || strings.Contains(b, "position")
}

func (h *Host) postPositioned(ctx context.Context, a *publish.Action) (*gl.Discussion, error) {
	pos := h.position(a, true)
	d, err := h.createDiscussion(ctx, a.Body, pos)
	if err != nil && pos.LineRange != nil && refusedPosition(err) {
		// A range GitLab does not take may still be a line it takes.
		d, err = h.createDiscussion(ctx, a.Body, h.position(a, false))
	}
	return d, err
}

func (h *Host) createDiscussion(ctx context.Context, body string, pos *gl.PositionOptions) (*gl.Discussion, error) {
	d, resp, err := h.c.Discussions.CreateMergeRequestDiscussion(h.pid, h.iid, &gl.CreateMergeRequestDiscussionOptions{Body: &body, Position: pos}, gl.WithContext(ctx))
	if err != nil {
		return nil, h.writeFail(http.MethodPost, h.mr("/discussions"), resp, err)
	}
	if d == nil {
		return nil, fmt.Errorf("POST %s: empty response", h.mr("/discussions"))
	}
	return d, nil
}

// position is the text position of an action on the latest diff version.
// RIGHT: new_line, and old_line too for a context line; LEFT (a removed
// line): old_line, and new_line too for a context line. withRange adds
// line_range for a multi-line span.
func (h *Host) position(a *publish.Action, withRange bool) *gl.PositionOptions {
	v := h.version
	if v == nil {
		v = &version{BaseCommitSHA: h.t.BaseSHA, StartCommitSHA: h.t.BaseSHA, HeadCommitSHA: h.t.HeadSHA}
	}
	oldPath := a.OldPath
	if oldPath == "" {
		oldPath = a.Path
	}
	fl := h.files[a.Path]
	oldLine, newLine := fl.lineAt(a.Side, a.Line)
	pos := &gl.PositionOptions{
		PositionType: gl.Ptr("text"),
		BaseSHA:      gl.Ptr(v.BaseCommitSHA), StartSHA: gl.Ptr(v.StartCommitSHA), HeadSHA: gl.Ptr(v.HeadCommitSHA),
		OldPath: gl.Ptr(oldPath), NewPath: gl.Ptr(a.Path),
	}
	if oldLine > 0 {
		pos.OldLine = gl.Ptr(int64(oldLine))
	}
	if newLine > 0 {
		pos.NewLine = gl.Ptr(int64(newLine))
	}
	if withRange && a.StartLine > 0 && a.StartLine < a.Line && fl != nil {
		pos.LineRange = &gl.LineRangeOptions{Start: fl.rangePoint(a.Path, a.Side, a.StartLine), End: fl.rangePoint(a.Path, a.Side, a.Line)}
	}
	return pos
}

// locatedBody is the body of a general discussion: the marker line, then
// the location GitLab would not show, then the comment.
func locatedBody(a *publish.Action) string {
	marker, rest, _ := strings.Cut(a.Body, "\n")
	loc := a.Path
	if a.Line > 0 {
		if a.StartLine > 0 && a.StartLine < a.Line {
			loc += fmt.Sprintf(":%d-%d", a.StartLine, a.Line)
		} else {
			loc += ":" + strconv.Itoa(a.Line)
		}
	}
	side := "new"
	if a.Side == "LEFT" {
		side = "old (removed lines)"
	}
	loc = strings.Join(strings.Fields(secrets.Redact(loc)), " ")
	return fmt.Sprintf("%s\n📍 %s (%s side) — GitLab could not place this comment on the diff.\n\n%s", marker, textsafe.Code(clip.Text(loc, 300)), side, rest)
}

// UpdateComment edits the note that carries the finding's marker.
func (h *Host) UpdateComment(ctx context.Context, a *publish.Action) error {
	p := h.mr("/discussions/%s/notes/%s", a.ThreadID, a.CommentID)
	nid, err := strconv.ParseInt(a.CommentID, 10, 64)
	if err != nil || a.ThreadID == "" {
		return fmt.Errorf("PUT %s: not a GitLab discussion and note id", p)
	}
	body := a.Body
	if h.general[a.ThreadID] {
		body = locatedBody(a)
	}
	_, resp, err := h.c.Discussions.UpdateMergeRequestDiscussionNote(h.pid, h.iid, a.ThreadID, nid, &gl.UpdateMergeRequestDiscussionNoteOptions{Body: &body}, gl.WithContext(ctx))
	if err != nil {
		return h.writeFail(http.MethodPut, p, resp, err)
	}
	return nil
}

// Resolve replies on the discussion, then resolves it.
func (h *Host) Resolve(ctx context.Context, p *publish.Plan, a *publish.Action) error {
	if a.ThreadID == "" {
		return errors.New("resolve: no discussion id")
	}
	body := a.Body
	_, resp, err := h.c.Discussions.AddMergeRequestDiscussionNote(h.pid, h.iid, a.ThreadID, &gl.AddMergeRequestDiscussionNoteOptions{Body: &body}, gl.WithContext(ctx))
	if err != nil {
		return h.writeFail(http.MethodPost, h.mr("/discussions/%s/notes", a.ThreadID), resp, err)
	}
	_, resp, err = h.c.Discussions.ResolveMergeRequestDiscussion(h.pid, h.iid, a.ThreadID, &gl.ResolveMergeRequestDiscussionOptions{Resolved: gl.Ptr(true)}, gl.WithContext(ctx))
	if err != nil {
		return h.writeFail(http.MethodPut, h.mr("/discussions/%s", a.ThreadID), resp, err)
	}
	return nil
}

// UpsertSummary posts the sticky summary as a merge request note (not a
// discussion: a resolvable thread would hold up "all threads must be
// resolved"), or edits it in place.
func (h *Host) UpsertSummary(ctx context.Context, p *publish.Plan, a *publish.Action) error {
	body := a.Body
	if a.Kind == publish.UpdateSummary {
		path := h.mr("/notes/%s", a.CommentID)
		nid, err := strconv.ParseInt(a.CommentID, 10, 64)
		if err != nil {
			return fmt.Errorf("PUT %s: not a GitLab note id", path)
		}
		_, resp, err := h.c.Notes.UpdateMergeRequestNote(h.pid, h.iid, nid, &gl.UpdateMergeRequestNoteOptions{Body: &body}, gl.WithContext(ctx))
		if err != nil {
			return h.writeFail(http.MethodPut, path, resp, err)
		}
		return nil
	}
	n, resp, err := h.c.Notes.CreateMergeRequestNote(h.pid, h.iid, &gl.CreateMergeRequestNoteOptions{Body: &body}, gl.WithContext(ctx))
	if err != nil {
		return h.writeFail(http.MethodPost, h.mr("/notes"), resp, err)
	}
	if n != nil {
		a.CommentID = strconv.FormatInt(n.ID, 10)
	}
	return nil
}

// SetStatus sets the commit status diffpal/review (/channel) on the head.
func (h *Host) SetStatus(ctx context.Context, p *publish.Plan, a *publish.Action) error {
	sha := p.Head
	if sha == "" && h.version != nil {
		sha = h.version.HeadCommitSHA
	}
	if sha == "" {
		return errors.New("commit status: no head commit known")
	}
	name := "diffpal/review"
	if p.Channel != "" && p.Channel != publish.DefaultChannel {
		name += "/" + p.Channel
	}
	state := gl.Success
	if a.Status == "failure" {
		state = gl.Failed
	}
	opt := &gl.SetCommitStatusOptions{State: state, Name: &name, Description: gl.Ptr(clip.Text(textsafe.Visible(a.Reason), 255))}
	if h.t.JobURL != "" {
		opt.TargetURL = gl.Ptr(h.t.JobURL)
	}
	if h.t.SourceBranch != "" {
		opt.Ref = gl.Ptr(h.t.SourceBranch)
	}
	_, resp, err := h.c.Commits.SetCommitStatus(h.pid, sha, opt, gl.WithContext(ctx))
	if err != nil {
		return h.writeFail(http.MethodPost, h.path("/statuses/%s", url.PathEscape(sha)), resp, err)
	}
	return nil
}

// fileLines maps the lines of one file's patch to GitLab's line
// positions: for every line of a hunk, its old and new line number (0 on
// the side it is not on) and the counters GitLab's line_code uses.
type fileLines struct {
	byNew, byOld map[int]lineInfo
}

type lineInfo struct {
	old, new       int // 0 when the line is not on that side
	oldPos, newPos int // GitLab's old_pos/new_pos, for line_code
	kind           byte
}

func parseLines(patch string) *fileLines {
	fl := &fileLines{byNew: map[int]lineInfo{}, byOld: map[int]lineInfo{}}
	oldLine, newLine, in := 0, 0, false
	for _, ln := range strings.Split(patch, "\n") {
		switch {
		case strings.HasPrefix(ln, "@@"):
			o, n, ok := hunkStart(ln)
			if !ok {
				in = false
				continue
			}
			oldLine, newLine, in = o, n, true
		case !in, strings.HasPrefix(ln, `\`), ln == "":
		case ln[0] == '+':
			fl.byNew[newLine] = lineInfo{new: newLine, oldPos: oldLine, newPos: newLine, kind: '+'}
			newLine++
		case ln[0] == '-':
			fl.byOld[oldLine] = lineInfo{old: oldLine, oldPos: oldLine, newPos: newLine, kind: '-'}
			oldLine++
		case ln[0] == ' ':
			li := lineInfo{old: oldLine, new: newLine, oldPos: oldLine, newPos: newLine, kind: ' '}
			fl.byNew[newLine], fl.byOld[oldLine] = li, li
			oldLine++
			newLine++
		}
	}
	return fl
}

func hunkStart(h string) (int, int, bool) {
	f := strings.Fields(h)
	if len(f) < 3 || !strings.HasPrefix(f[1], "-") || !strings.HasPrefix(f[2], "+") {
		return 0, 0, false
	}
	n := func(s string) (int, bool) {
		s, _, _ = strings.Cut(s[1:], ",")
		v, err := strconv.Atoi(s)
		return v, err == nil && v >= 0
	}
	o, ok1 := n(f[1])
	nw, ok2 := n(f[2])
	return o, nw, ok1 && ok2
}

// lineAt returns the old and new line of line on side: a context line has
// both. A line the patch does not show (or a file without patch) keeps
// only its own side, which GitLab may refuse.
func (fl *fileLines) lineAt(side string, line int) (oldLine, newLine int) {
	if side == "LEFT" {
		if fl != nil {
			if li, ok := fl.byOld[line]; ok {
				return li.old, li.new
			}
		}
		return line, 0
	}
	if fl != nil {
		if li, ok := fl.byNew[line]; ok {
			return li.old, li.new
		}
	}
	return 0, line
}

// rangePoint is one end of a line_range: GitLab's line_code
// "<sha1(path)>_<old_pos>_<new_pos>", type "new" for an added line and
// "old" otherwise, and the lines.
func (fl *fileLines) rangePoint(path, side string, line int) *gl.LinePositionOptions {
	li, ok := fl.byNew[line]
	if side == "LEFT" {
		li, ok = fl.byOld[line]
	}
	if !ok {
		li = lineInfo{new: line, newPos: line}
		if side == "LEFT" {
			li = lineInfo{old: line, oldPos: line}
		}
	}
	sum := sha1.Sum([]byte(path))
	p := &gl.LinePositionOptions{LineCode: gl.Ptr(fmt.Sprintf("%s_%d_%d", hex.EncodeToString(sum[:]), li.oldPos, li.newPos)), Type: gl.Ptr("old")}
	if li.kind == '+' {
		p.Type = gl.Ptr("new")
	}
	if li.old > 0 {
		p.OldLine = gl.Ptr(int64(li.old))
	}
	if li.new > 0 {
		p.NewLine = gl.Ptr(int64(li.new))
	}
	return p
}

var _ publish.Host = (*Host)(nil)
