package publish

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/diffpalhq/diffpal/findings"
)

// HTTPClient is the client hosts use: the retrying Transport, a bound on
// each attempt (not on the whole call: a rate-limit wait may be longer),
// and redirects only within the same scheme and host — a host library
// that sets the Authorization header itself would otherwise carry the
// token to wherever a redirect points.
func HTTPClient(log io.Writer) *http.Client {
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.ResponseHeaderTimeout = 2 * time.Minute
	return &http.Client{Transport: &Transport{Base: base, Log: log}, CheckRedirect: SameHostRedirects}
}

// HostClient is hc as a host library may use it: redirects always stay on
// the API's scheme and host (SameHostRedirects, whatever hc's own policy:
// go-github sets Authorization on every hop, GitLab's PRIVATE-TOKEN is
// forwarded by net/http, Azure's Authorization survives a port change),
// and, with maxBody > 0, every response body is bounded: a library that
// reads bodies whole fails past maxBody instead. nil hc is HTTPClient(nil).
func HostClient(hc *http.Client, maxBody int64) *http.Client {
	if hc == nil {
		hc = HTTPClient(nil)
	}
	c := *hc
	c.CheckRedirect = SameHostRedirects
	if maxBody > 0 {
		base := hc.Transport
		if base == nil {
			base = http.DefaultTransport
		}
		c.Transport = boundedTransport{base: base, limit: maxBody}
	}
	return &c
}

// boundedTransport caps response bodies: a read past limit fails.
type boundedTransport struct {
	base  http.RoundTripper
	limit int64
}

func (b boundedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := b.base.RoundTrip(r)
	if resp != nil && resp.Body != nil {
		resp.Body = &boundedBody{rc: resp.Body, left: b.limit, limit: b.limit}
	}
	return resp, err
}

type boundedBody struct {
	rc          io.ReadCloser
	left, limit int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body of exactly the limit from a longer one.
		var one [1]byte
		if n, _ := b.rc.Read(one[:]); n > 0 {
			return 0, fmt.Errorf("response larger than %d MiB", b.limit>>20)
		}
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }

// SameHostRedirects is a CheckRedirect that follows at most 5 redirects,
// none to another scheme or host.
func SameHostRedirects(req *http.Request, via []*http.Request) error {
	if len(via) >= 5 {
		return fmt.Errorf("%s %s: more than 5 redirects", req.Method, req.URL.Path)
	}
	if first := via[0].URL; req.URL.Scheme != first.Scheme || req.URL.Host != first.Host {
		return fmt.Errorf("%s %s: redirect to %s://%s refused: the token would follow it", via[0].Method, first.Path, req.URL.Scheme, req.URL.Host)
	}
	return nil
}

// Run publishes b on the target's pull request through h and returns the
// plan with each action's outcome. h is nil when there is no token and
// this is a dry run: the plan is then made against an empty pull request.
//
// Order: the plan is saved before anything is sent; then inline comments
// (one GitHub review), comment updates, resolutions, the summary (which
// lists what could not be placed), the status; the plan is saved again
// with the outcomes. A failed step does not stop the later ones; the
// errors are returned together. A fork target, or a host that finds its
// token read-only, publishes nothing more and returns no error: the plan's
// Skipped says why.
func Run(ctx context.Context, h Host, t *Target, b *findings.Bundle, o Options, save func(*Plan) error) (*Plan, error) {
	logf := func(format string, args ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, "publish %s: "+format+"\n", append([]any{t.Host}, args...)...)
		}
	}
	if o.Feedback == "" {
		o.Feedback = FeedbackReview
	}
	if t.Fork != "" {
		p := Reconcile(t, b, &State{}, o)
		p.Skipped = t.Fork
		p.Actions = []Action{{Kind: Skip, Reason: t.Fork}}
		logf("skipped: %s", t.Fork)
		return p, save(p)
	}
	var st *State
	if h != nil {
		var err error
		if st, err = h.Load(ctx, o.channel()); err != nil {
			if errors.Is(err, ErrReadOnly) {
				p := Reconcile(t, b, &State{}, o)
				p.Skipped, p.Actions = err.Error(), []Action{{Kind: Skip, Reason: err.Error()}}
				logf("skipped: %v", err)
				return p, save(p)
			}
			// The plan still records the attempt: nothing was sent.
			p := Reconcile(t, b, &State{}, o)
			p.Skipped, p.Actions = "reading the pull request failed: "+err.Error(), nil
			return p, errors.Join(fmt.Errorf("reading the pull request: %w", err), save(p))
		}
	}
	// A workflow_run job publishes a bundle another workflow produced for
	// a pull request it names (for a fork, read from that workflow's
	// artifact). The event's head commit is GitHub's and trusted; a pull
	// request whose head is another commit is not the one reviewed.
	if t.Event == "workflow_run" && st != nil && st.Head != "" && t.HeadSHA != "" && st.Head != t.HeadSHA {
		why := fmt.Sprintf("pull request #%d is at %s, not at the reviewed workflow_run head %s: not publishing", t.Number, short(st.Head), short(t.HeadSHA))
		p := Reconcile(t, b, &State{}, o)
		p.Skipped, p.Actions = why, []Action{{Kind: Skip, Reason: why}}
		logf("skipped: %s", why)
		return p, save(p)
	}
	p := Reconcile(t, b, st, o)
	if h == nil {
		p.Notes = append(p.Notes, "no token: planned against an empty pull request")
	}
	for i := range p.Actions {
		if a := &p.Actions[i]; a.Kind == CreateSummary || a.Kind == UpdateSummary {
			a.Body = SummaryBody(SummaryInput{Plan: p, Bundle: b, Target: t})
		}
	}
	if err := save(p); err != nil {
		return p, err
	}
	if o.DryRun || h == nil {
		for i := range p.Actions {
			if k := p.Actions[i].Kind; k != Keep && k != SummaryOnly {
				p.Actions[i].Result = "dry-run"
			}
		}
		logf("dry run: %s", p.tally())
		return p, save(p)
	}
	var errs []error
	fail := func(a *Action, err error) {
		a.Result = "failed: " + err.Error()
		errs = append(errs, err)
	}
	// A refusal to write is "nothing may be published" (a fork, a
	// read-only token: exit 0) only before anything was written. After a
	// write went through, the token can write and the refusal is a step
	// that failed (a role without the permission for statuses, a comment
	// of someone else's): the run goes on and fails.
	wrote := false
	stop := func(err error) (*Plan, error) {
		p.Skipped = err.Error()
		logf("stopped: %v", err)
		return p, errors.Join(append(errs, save(p))...)
	}
	var creates []*Action
	for i := range p.Actions {
		if p.Actions[i].Kind == Create {
			creates = append(creates, &p.Actions[i])
		}
	}
	if len(creates) > 0 {
		err := h.PostComments(ctx, p, creates)
		for _, a := range creates {
			if a.Result == "done" || a.IsMoved() && a.ThreadID != "" {
				wrote = true
			}
		}
		if err != nil {
			if errors.Is(err, ErrReadOnly) && !wrote {
				return stop(err)
			}
			for _, a := range creates {
				if a.Result == "" {
					a.Result = "failed: " + err.Error()
				}
			}
			errs = append(errs, err)
		}
		for _, a := range creates {
			if a.Result == "" {
				a.Result = "done"
				wrote = true
			}
		}
	}
	for i := range p.Actions {
		a := &p.Actions[i]
		var err error
		switch a.Kind {
		case Update:
			err = h.UpdateComment(ctx, a)
		case Resolve:
			err = h.Resolve(ctx, p, a)
		case CreateSummary, UpdateSummary:
			// Rendered now: it lists the comments the host refused.
			a.Body = SummaryBody(SummaryInput{Plan: p, Bundle: b, Target: t})
			err = h.UpsertSummary(ctx, p, a)
		case SetStatus:
			err = h.SetStatus(ctx, p, a)
		default:
			continue
		}
		switch {
		case errors.Is(err, ErrReadOnly) && !wrote:
			return stop(err)
		case err != nil:
			fail(a, err)
		case a.Result == "":
			a.Result = "done"
			wrote = true
		default:
			wrote = wrote || !strings.HasPrefix(a.Result, "skipped")
		}
	}
	logf("%s", p.tally())
	if err := save(p); err != nil {
		errs = append(errs, err)
	}
	return p, errors.Join(errs...)
}

// tally is the one-line account of a plan.
func (p *Plan) tally() string {
	moved := 0
	for _, a := range p.Actions {
		if a.IsMoved() {
			moved++
		}
	}
	return fmt.Sprintf("PR #%d channel %s: %d new, %d updated, %d kept, %d resolved, %d in the summary only (%d moved there), decision %s",
		p.Number, p.Channel, p.Count(Create)-moved, p.Count(Update), p.Count(Keep), p.Count(Resolve), p.Count(SummaryOnly)+moved, moved, p.Decision)
}
