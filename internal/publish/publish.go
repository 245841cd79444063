// Package publish puts a findings bundle on the pull request it reviewed:
// inline comments on the changed lines, one sticky summary per channel,
// resolution of the threads whose finding is gone, and a status. The
// hosts (GitHub, GitLab, Azure DevOps) live in subpackages and implement
// Host; this package owns what is the same on all of them — reading the
// host's context from its CI environment (env.go), reconciling the bundle
// with what the pull request already shows (Reconcile), the comment and
// summary bodies with their hidden markers (body.go, marker.go), the plan
// file, and the HTTP transport that honours rate limits and never lets a
// token reach an error message (transport.go).
//
// Identity across runs is the finding's stable_id, which survives pushes
// and line shifts: a finding whose stable_id already has a thread on the
// pull request is not posted again, wherever it now sits, and a thread
// whose stable_id is no longer in the bundle is resolved.
package publish

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/diffpalhq/diffpal/findings"
)

// Hosts are the names `diffpal publish` takes, in the order help lists them.
var Hosts = []string{GitHub, GitLab, Azure}

// Host names.
const (
	GitHub = "github"
	GitLab = "gitlab"
	Azure  = "azure"
)

// Feedback is what is published: inline comments and the summary
// (FeedbackReview), or only the summary (FeedbackSummary).
type Feedback string

// Feedback modes.
const (
	FeedbackReview  Feedback = "review"
	FeedbackSummary Feedback = "summary"
)

// DefaultChannel is the review channel when none is given.
const DefaultChannel = "default"

// Options steer one publish run.
type Options struct {
	Feedback Feedback
	// Channel separates the reviews of several workflows on one pull
	// request: markers carry it, and only threads and the summary of the
	// same channel are reconciled.
	Channel string
	// DryRun makes no write request: the host's state is read (when a
	// token is there) and the plan written, nothing is created, updated
	// or resolved.
	DryRun bool
	// Gate says whether the review gates the merge; statuses say
	// "gate disabled" otherwise.
	Gate bool
	// CheckRun also reports the gate decision as a GitHub check run.
	CheckRun bool
	// Log receives one line per step (stderr); nil discards.
	Log io.Writer
}

// Channel returns the channel, DefaultChannel when empty.
func (o Options) channel() string {
	if o.Channel == "" {
		return DefaultChannel
	}
	return o.Channel
}

// CheckChannel checks a --review-channel value: it goes into hidden HTML
// markers and status names, so only [A-Za-z0-9._-], at most 64.
func CheckChannel(ch string) error {
	if ch == "" {
		return nil
	}
	if len(ch) > 64 {
		return fmt.Errorf("--review-channel: at most 64 characters, got %d", len(ch))
	}
	for _, r := range ch {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("--review-channel %q: only letters, digits, '.', '_' and '-' are allowed", ch)
		}
	}
	return nil
}

// Thread is one finding thread diffpal posted earlier (it carries a
// finding marker of this channel).
type Thread struct {
	// ID is the host's id of the thread (GitHub review thread node id,
	// GitLab discussion id, Azure thread id).
	ID string `json:"id"`
	// CommentID is the host's id of the comment that carries the marker,
	// the one an update edits.
	CommentID string `json:"comment_id,omitempty"`
	StableID  string `json:"stable_id"`
	// Digest is the marker's digest of the body posted; a different
	// digest now means the finding's text changed and the comment is
	// updated.
	Digest string `json:"digest,omitempty"`
	// Resolved is true when the thread no longer asks for attention:
	// resolved on GitHub and GitLab, fixed, won't fix or by design on
	// Azure. A resolved thread is never reposted nor resolved again.
	Resolved bool   `json:"resolved"`
	Path     string `json:"path,omitempty"`
	Line     int    `json:"line,omitempty"`
	// Status is the host's own status word where it has one (Azure).
	Status string `json:"status,omitempty"`
	// ResolvedByUs is true for a resolved thread whose last comment is
	// diffpal's resolve reply (marker Kind "resolved" of the channel, by
	// the token's identity): the finding was fixed, and if it comes back
	// it is posted again. A thread a reviewer resolved stays quiet.
	ResolvedByUs bool `json:"resolved_by_us,omitempty"`
}

// Note is the sticky summary diffpal posted earlier on this channel.
type Note struct {
	ID string `json:"id"`
	// ThreadID is the thread or discussion holding the note, where the
	// host has one (GitLab discussion, Azure thread).
	ThreadID string `json:"thread_id,omitempty"`
	Body     string `json:"-"`
}

// State is what the pull request shows now, as the host read it.
type State struct {
	Threads []Thread
	Summary *Note
	// Diff holds the lines a comment may be placed on; nil means the host
	// accepts any line of a changed file.
	Diff *Diff
	// Head is the pull request's current head commit on the host, when
	// known; a bundle of another head is still published (a re-run on a
	// stale head), but the plan records it.
	Head string
	// Notes are things the host wants said in the log (e.g. that markers
	// could not be checked against the author).
	Notes []string
}

// Action kinds of a plan.
const (
	Create        = "create"         // post an inline comment or thread
	Update        = "update"         // edit the comment of a kept thread: the finding's text changed
	Keep          = "keep"           // the finding's thread is there; nothing to do
	Resolve       = "resolve"        // the finding is gone: reply and resolve its thread
	SummaryOnly   = "summary"        // listed in the summary only (not on a diff line, or --feedback summary)
	CreateSummary = "create_summary" // post the sticky summary
	UpdateSummary = "update_summary" // edit the sticky summary in place
	SetStatus     = "status"         // commit or pull-request status, check run
	Skip          = "skip"           // nothing is published (fork, read-only token)
)

// Action is one step of a plan, with its reason and, after Apply, its
// outcome.
type Action struct {
	Kind     string `json:"kind"`
	StableID string `json:"stable_id,omitempty"`
	RuleID   string `json:"rule_id,omitempty"`
	Severity string `json:"severity,omitempty"`
	Blocking bool   `json:"blocking,omitempty"`
	Path     string `json:"path,omitempty"`
	// OldPath is the path on the base side for a renamed file.
	OldPath string `json:"old_path,omitempty"`
	// Line is the last line of the span (GitHub's line), StartLine the
	// first when the span has more than one line.
	Line      int    `json:"line,omitempty"`
	StartLine int    `json:"start_line,omitempty"`
	Side      string `json:"side,omitempty"` // RIGHT (head) or LEFT (base)
	ThreadID  string `json:"thread_id,omitempty"`
	CommentID string `json:"comment_id,omitempty"`
	Reason    string `json:"reason"`
	Body      string `json:"body,omitempty"`
	// Digest is the body's digest, carried in its marker.
	Digest string `json:"digest,omitempty"`
	// Result is what happened: "done", "dry-run", "moved to summary: …"
	// or "failed: …"; empty until applied.
	Result string `json:"result,omitempty"`
	// Status is the status an action sets (SetStatus): "success",
	// "failure"; the host maps it to its own words.
	Status string `json:"status,omitempty"`

	finding *findings.Finding
}

// Finding is the finding an action is about (nil for summary and status).
func (a *Action) Finding() *findings.Finding { return a.finding }

// Moved marks an inline comment the host refused to place (a line outside
// its diff): the finding is listed in the summary instead.
func (a *Action) Moved(why string) { a.Result = "moved to summary: " + why }

// IsMoved reports whether Moved was called.
func (a *Action) IsMoved() bool { return strings.HasPrefix(a.Result, "moved to summary") }

// Plan is everything one run does, in order, with reasons. It is written
// to <host>-plan.json before anything is sent and again with the outcomes.
type Plan struct {
	Host     string   `json:"host"`
	Repo     string   `json:"repo"`
	Number   int      `json:"number"`
	Head     string   `json:"head_sha"`
	Channel  string   `json:"channel"`
	Feedback Feedback `json:"feedback"`
	DryRun   bool     `json:"dry_run"`
	// Decision is fail (a finding blocks), warn (findings, none blocking)
	// or pass.
	Decision string   `json:"decision"`
	Blocking int      `json:"blocking"`
	Findings int      `json:"findings"`
	Skipped  string   `json:"skipped,omitempty"`
	Notes    []string `json:"notes,omitempty"`
	Actions  []Action `json:"actions"`
}

// Count returns how many actions have kind k.
func (p *Plan) Count(k string) int {
	n := 0
	for _, a := range p.Actions {
		if a.Kind == k {
			n++
		}
	}
	return n
}

// Host is one code host's pull request, opened on a Target.
type Host interface {
	// Load reads the pull request's threads, summary and diff for the
	// channel. It only reads.
	Load(ctx context.Context, channel string) (*State, error)
	// PostComments posts the Create actions (all of one run, so GitHub
	// can post them as one review). An action the host refuses to place
	// is marked with Moved, and the run goes on; any other failure is
	// returned.
	PostComments(ctx context.Context, p *Plan, creates []*Action) error
	// UpdateComment edits a kept thread's comment (Update).
	UpdateComment(ctx context.Context, a *Action) error
	// Resolve replies on the thread and resolves it.
	Resolve(ctx context.Context, p *Plan, a *Action) error
	// UpsertSummary creates or updates the sticky summary.
	UpsertSummary(ctx context.Context, p *Plan, a *Action) error
	// SetStatus reports the decision (commit status, PR status or check
	// run); a host with nothing to set returns nil.
	SetStatus(ctx context.Context, p *Plan, a *Action) error
}

// ErrReadOnly is returned (wrapped) by a host whose token may not write to
// the pull request: a fork's read-only GITHUB_TOKEN, a job token without
// the API scope. Run stops publishing and says why; it is not a failure.
var ErrReadOnly = errors.New("the token may not write to this pull request")

// Decision is fail, warn or pass for a bundle.
func Decision(b *findings.Bundle) string {
	t := b.Tally()
	switch {
	case t.Blocking > 0:
		return "fail"
	case len(b.Findings) > 0:
		return "warn"
	}
	return "pass"
}

// Reconcile plans one run: what to post, update, keep, resolve and list in
// the summary, from the bundle and the pull request's state. It calls
// nothing and is deterministic: findings in the bundle's order, resolves
// by thread id.
func Reconcile(t *Target, b *findings.Bundle, st *State, o Options) *Plan {
	ch := o.channel()
	p := &Plan{Host: t.Host, Repo: t.Repo, Number: t.Number, Head: cmp.Or(t.HeadSHA, b.HeadSHA), Channel: ch,
		Feedback: o.Feedback, DryRun: o.DryRun, Decision: Decision(b), Blocking: b.Tally().Blocking, Findings: len(b.Findings)}
	if st == nil {
		st = &State{}
	}
	p.Notes = append(p.Notes, st.Notes...)
	if st.Head != "" && p.Head != "" && st.Head != p.Head {
		p.Notes = append(p.Notes, fmt.Sprintf("the bundle reviewed %s but the pull request's head is now %s", short(p.Head), short(st.Head)))
	}
	byID := map[string]*Thread{}
	for i := range st.Threads {
		th := &st.Threads[i]
		// Several threads for one stable id (a race, an old bug): the
		// open one counts.
		if prev, ok := byID[th.StableID]; !ok || prev.Resolved && !th.Resolved {
			byID[th.StableID] = th
		}
	}
	present := map[string]bool{}
	for i := range b.Findings {
		f := &b.Findings[i]
		id := MarkerID(cmp.Or(f.StableID, f.ID))
		present[id] = true
		a := Action{StableID: id, RuleID: f.RuleID, Severity: string(f.Severity), Blocking: f.Blocking, Path: f.Path, finding: f}
		a.Side, a.StartLine, a.Line = span(f)
		if o.Feedback == FeedbackSummary {
			a.Kind, a.Reason = SummaryOnly, "--feedback summary: findings are listed in the summary only"
			p.Actions = append(p.Actions, a)
			continue
		}
		a.Body, a.Digest = CommentBody(f, t, ch)
		if th, ok := byID[id]; ok {
			a.ThreadID, a.CommentID = th.ID, th.CommentID
			switch {
			case th.Resolved && th.ResolvedByUs:
				// Fixed once, back now: a regression is posted again below.
				a.ThreadID, a.CommentID = "", ""
			case th.Resolved:
				a.Kind, a.Reason = Keep, "a reviewer resolved its thread; not posted again"
			case th.Digest != a.Digest:
				a.Kind, a.Reason = Update, "its thread is open; the finding's text changed"
			default:
				a.Kind, a.Reason = Keep, "its thread is open"
				if th.Path != "" && (th.Path != f.Path || th.Line != 0 && th.Line != a.Line) {
					a.Reason = fmt.Sprintf("its thread is open (posted at %s:%d; the finding moved)", th.Path, th.Line)
				}
			}
			if a.Kind != "" {
				if a.Kind == Keep {
					a.Body = ""
				}
				p.Actions = append(p.Actions, a)
				continue
			}
		}
		if f.Path == "" || a.Line <= 0 {
			a.Kind, a.Reason = SummaryOnly, "the finding has no line to comment on"
		} else if st.Diff != nil {
			if ok, why := st.Diff.Commentable(f.Path, a.Side, a.StartLine, a.Line); !ok {
				a.Kind, a.Reason = SummaryOnly, why
			}
		}
		if a.Kind == "" {
			a.Kind, a.Reason = Create, "no thread of this channel has its stable_id"
			if th, ok := byID[id]; ok && th.ResolvedByUs {
				a.Reason = "diffpal resolved its thread as fixed (" + th.ID + ") and the finding is back"
			}
			if st.Diff != nil {
				a.OldPath = st.Diff.OldPath(f.Path)
			}
		} else {
			a.Body = ""
		}
		p.Actions = append(p.Actions, a)
	}
	// A thread is resolved only when this review looked at its file: a
	// bundle of fewer paths (-- PATH, a narrower scope) says nothing about
	// the others.
	reviewed := map[string]bool{}
	for _, f := range b.Files {
		reviewed[f.Path] = true
	}
	var gone []*Thread
	for i := range st.Threads {
		th := &st.Threads[i]
		if th.Resolved || present[th.StableID] || byID[th.StableID] != th {
			continue
		}
		if len(reviewed) > 0 && th.Path != "" && !reviewed[th.Path] {
			p.Actions = append(p.Actions, Action{Kind: Keep, StableID: th.StableID, ThreadID: th.ID, Path: th.Path, Line: th.Line,
				Reason: "its file is not in this review's bundle; the thread is left open"})
			continue
		}
		gone = append(gone, th)
	}
	sort.Slice(gone, func(i, j int) bool { return gone[i].ID < gone[j].ID })
	for _, th := range gone {
		p.Actions = append(p.Actions, Action{Kind: Resolve, StableID: th.StableID, ThreadID: th.ID, CommentID: th.CommentID, Path: th.Path, Line: th.Line,
			Reason: fmt.Sprintf("the review of %s no longer reports this finding", short(p.Head)),
			Body:   ResolveBody(ch, th.StableID, p.Head)})
	}
	sum := Action{Kind: CreateSummary, Reason: "no summary of this channel yet"}
	if st.Summary != nil {
		sum = Action{Kind: UpdateSummary, CommentID: st.Summary.ID, ThreadID: st.Summary.ThreadID, Reason: "the channel's summary is edited in place"}
	}
	p.Actions = append(p.Actions, sum)
	p.Actions = append(p.Actions, Action{Kind: SetStatus, Status: statusOf(p.Decision, o.Gate), Reason: StatusDescription(b, o.Gate)})
	return p
}

func statusOf(decision string, gate bool) string {
	if decision == "fail" && gate {
		return "failure"
	}
	return "success"
}

// StatusDescription is the one-line description of a status.
func StatusDescription(b *findings.Bundle, gate bool) string {
	t := b.Tally()
	switch {
	case t.Blocking > 0 && gate:
		return fmt.Sprintf("%d blocking findings", t.Blocking)
	case t.Blocking > 0:
		return fmt.Sprintf("%d blocking findings; gate disabled", t.Blocking)
	case len(b.Findings) > 0:
		return fmt.Sprintf("%d findings, none blocking", len(b.Findings))
	}
	return "no findings"
}

// span is the side and lines a finding's comment covers: the changed span
// when the bundle has one (it carries the side), else the finding's lines.
func span(f *findings.Finding) (side string, start, end int) {
	side, start, end = "RIGHT", f.StartLine, f.EndLine
	if s := f.ChangedSpan; s != nil && s.StartLine > 0 {
		start, end = s.StartLine, s.EndLine
		if s.Side == "LEFT" {
			side = "LEFT"
		}
	}
	if end < start {
		end = start
	}
	if start == end {
		start = 0
	}
	return side, start, end
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
