package output

import (
	"cmp"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/buildinfo"
	"github.com/diffpalhq/diffpal/internal/output/html"
	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/diffpalhq/diffpal/internal/review"
	"github.com/diffpalhq/diffpal/internal/secrets"
	"github.com/diffpalhq/diffpal/internal/weblink"
)

// HTML is report.html's format name.
const HTML = "html"

// HTMLFormat writes report.html (internal/output/html).
type HTMLFormat struct{}

func (HTMLFormat) Name() string        { return HTML }
func (HTMLFormat) Key() string         { return "report" }
func (HTMLFormat) DefaultFile() string { return "report.html" }
func (HTMLFormat) Write(w io.Writer, res *review.Result) error {
	return html.Write(w, ReportOf(res))
}

// snippetContext is how many lines around a finding's span its snippet
// shows; maxSnippet caps a snippet's lines.
const (
	snippetContext = 3
	maxSnippet     = 40
)

// Source returns the lines of a file at the reviewed head (nil when it
// cannot be read); the report's snippets come from it.
type Source func(path string) []string

// ReportOf is a review's report: the bundle, the audit and the session,
// with snippets from the change's head contents, redacted with the
// review's own redactor (it knows the change's secrets).
func ReportOf(res *review.Result) *html.Report {
	var src Source
	red := secrets.Redact
	if ch := res.Change; ch != nil {
		byPath := map[string][]string{}
		for _, f := range ch.Files {
			byPath[f.Path()] = f.Content
		}
		src = func(p string) []string { return byPath[p] }
		if ch.Packet != nil {
			red = ch.Packet.Redactor().Redact
		}
	}
	r := BuildReport(res.Bundle, &res.Audit, &res.Session, src, red)
	if ch := res.Change; ch != nil {
		r.Range = ShortSHA(ch.Range.DiffBase) + ".." + ShortSHA(ch.Range.Head)
		if ch.Range.Worktree {
			r.Range = ShortSHA(ch.Range.DiffBase) + "..worktree"
		}
		r.Why = ch.Range.Why
		r.Repository = ch.Repository
	}
	return r
}

// profileOf reads the profile from the builtin provider's reasoning basis
// ("rule ID (profile): …").
var profileOf = regexp.MustCompile(`^rule \S+ \(([a-z][a-z0-9_]*)\):`)

// BuildReport makes the report of a bundle. audit and session are nil
// when only the bundle is known (diffpal render without qa-session.json);
// src gives snippet lines (nil: none); red redacts snippet lines. It is a
// ReportBuilder over b's findings.
func BuildReport(b *findings.Bundle, audit *review.Audit, session *qa.Session, src Source, red func(string) string) *html.Report {
	rb := NewReportBuilder(b, audit, session, src, red)
	var fs []html.Finding
	for i := range b.Findings {
		rb.Count(&b.Findings[i])
		fs = append(fs, rb.Finding(&b.Findings[i], true))
	}
	r := rb.Report()
	r.Findings = fs
	return r
}

// ReportBuilder makes the report of a bundle whose findings are not in
// memory (diffpal render): the header and the audit at NewReportBuilder,
// each finding's html.Finding at Finding (as often as needed), the files'
// counts and the decision from Count, the rest of the report at Report.
// It keeps one count per file path.
type ReportBuilder struct {
	b                      *findings.Bundle
	r                      *html.Report
	link                   weblink.Repo
	linkable               bool
	baseNew, baseUnchanged map[string]bool
	src                    Source
	red                    func(string) string
	perFile                map[string]*int
	files                  []string // perFile's keys in order of first count
	counter                findings.Counter
}

// NewReportBuilder starts the report of the bundle whose header is b (its
// findings are not read); the arguments are BuildReport's.
func NewReportBuilder(b *findings.Bundle, audit *review.Audit, session *qa.Session, src Source, red func(string) string) *ReportBuilder {
	if red == nil {
		red = secrets.Redact
	}
	bi := buildinfo.Get()
	r := &html.Report{Title: "diffpal review", Repository: b.Repo, Range: ShortSHA(b.BaseSHA) + ".." + ShortSHA(cmp.Or(b.HeadSHA, "worktree")),
		Version: bi.Version}
	rb := &ReportBuilder{b: b, r: r, src: src, red: red, perFile: map[string]*int{}, baseNew: map[string]bool{}, baseUnchanged: map[string]bool{}}
	rb.link, rb.linkable = weblink.FromID(b.Repo)
	if audit != nil && audit.Baseline != nil {
		for _, id := range audit.Baseline.New {
			rb.baseNew[id] = true
		}
		for _, id := range audit.Baseline.Unchanged {
			rb.baseUnchanged[id] = true
		}
	}
	if audit != nil {
		r.Provider = audit.Provider
		r.Notes = audit.Notes
		for _, s := range audit.Skips {
			r.Skips = append(r.Skips, html.Note{What: s.Path, Reason: strings.TrimSuffix(s.Reason+": "+s.Detail, ": ")})
		}
		for _, d := range audit.Drops {
			r.Drops = append(r.Drops, html.Note{Reason: d.Reason, Count: d.Count, What: strings.Join(d.Samples, ", ")})
		}
		for _, s := range audit.Suppressed {
			r.Suppressed = append(r.Suppressed, html.Note{What: fmt.Sprintf("%s:%d %s", s.Path, s.Line, cmp.Or(s.RuleID, s.Category)), Reason: s.By + ": " + s.Reason, Count: 1})
		}
		if bl := audit.Baseline; bl != nil {
			r.Baseline = &html.Baseline{New: len(bl.New), Unchanged: len(bl.Unchanged), Fixed: len(bl.Fixed)}
			for _, id := range bl.Fixed {
				r.Baseline.FixedList = append(r.Baseline.FixedList, html.Note{What: id, Reason: "no longer reported"})
			}
		}
	}
	if session != nil && session.RunID != "" {
		r.Session = sessionOf(session, audit)
	}
	return rb
}

// Count counts f (the next finding) for the files' list and the
// decision; none of its strings is kept.
func (rb *ReportBuilder) Count(f *findings.Finding) {
	rb.counter.Add(f)
	if p, ok := rb.perFile[f.Path]; ok {
		*p++ // not assigned: the map keeps its own copy of the key
		return
	}
	n := 1
	path := strings.Clone(f.Path)
	rb.perFile[path] = &n
	rb.files = append(rb.files, path)
}

// Finding is f as the report shows it, with its snippet's lines from src;
// without full, only what html.Index.Add reads (id, category, severity,
// blocking, path, lines, title). Its strings may be f's.
func (rb *ReportBuilder) Finding(f *findings.Finding, full bool) html.Finding {
	hf := html.Finding{StableID: cmp.Or(f.StableID, f.ID), Category: f.Category, Severity: string(f.Severity),
		Blocking: f.Blocking, Path: f.Path, StartLine: f.StartLine, EndLine: f.EndLine, Title: f.Title}
	if !full {
		return hf
	}
	hf.RuleID, hf.Confidence, hf.Message, hf.Suggestion = f.RuleID, f.Confidence, f.Message, f.Suggestion
	if f.Impact != nil {
		hf.Impact = f.Impact.Summary
	}
	if f.Evidence != nil {
		hf.Evidence = f.Evidence.Anchor
		if m := profileOf.FindStringSubmatch(f.Evidence.ReasoningBasis); m != nil {
			hf.Profile = m[1]
		}
	}
	side := ""
	if f.ChangedSpan != nil && f.ChangedSpan.Side == "LEFT" {
		side = "LEFT"
	}
	hf.Side = side
	switch {
	case rb.baseNew[hf.StableID]:
		hf.Baseline = "new"
	case rb.baseUnchanged[hf.StableID]:
		hf.Baseline = "unchanged"
	}
	if rb.src != nil && side == "" {
		hf.Snippet = snippetOf(rb.src(f.Path), f.StartLine, f.EndLine, rb.red)
	}
	if rb.linkable {
		sha := rb.b.HeadSHA
		if side == "LEFT" {
			sha = rb.b.BaseSHA
		}
		hf.Link = rb.link.Lines(sha, f.Path, f.StartLine, f.EndLine)
	}
	return hf
}

// Report is the report without its findings (html.Index writes them),
// with the files' counts and the decision of the findings counted.
func (rb *ReportBuilder) Report() *html.Report {
	r := *rb.r
	t := rb.counter.Result()
	switch {
	case t.Blocking > 0:
		r.Decision = "fail"
	case t.Findings > 0:
		r.Decision = "warn"
	default:
		r.Decision = "pass"
	}
	listed := map[string]bool{}
	for _, f := range rb.b.Files {
		n := 0
		if p := rb.perFile[f.Path]; p != nil && !listed[f.Path] {
			n = *p
		}
		listed[f.Path] = true
		r.Files = append(r.Files, html.File{Path: f.Path, Status: f.Status, Findings: n})
	}
	var rest []string
	for _, p := range rb.files {
		if !listed[p] {
			rest = append(rest, p)
		}
	}
	slices.Sort(rest)
	for _, p := range rest {
		// A finding's file the header does not list (a hand-made bundle).
		r.Files = append(r.Files, html.File{Path: p, Findings: *rb.perFile[p]})
	}
	return &r
}

// snippetOf is lines start-ctx..end+ctx of content, redacted as one text
// (a PEM block spans lines). When redaction changes the number of lines
// the numbers would lie, so there is no snippet: the finding's anchor in
// the bundle is redacted already.
func snippetOf(content []string, start, end int, red func(string) string) *html.Snippet {
	if len(content) == 0 || start <= 0 || start > len(content) {
		return nil
	}
	end = min(max(end, start), len(content))
	from := max(1, start-snippetContext)
	to := min(len(content), end+snippetContext, from+maxSnippet-1)
	lines := content[from-1 : to]
	joined := strings.Join(lines, "\n")
	if r := red(joined); r != joined {
		lines = strings.Split(r, "\n")
		if len(lines) != to-from+1 {
			return nil
		}
	}
	return &html.Snippet{Start: from, MarkStart: start, MarkEnd: end, Lines: slices.Clone(lines)}
}

// sessionOf is the session's audit trail: the profiles run, every
// candidate's decision and the deep-review reason.
func sessionOf(s *qa.Session, audit *review.Audit) *html.Session {
	out := &html.Session{ID: s.RunID}
	if s.SelectedBundle != nil {
		out.Bundle = string(*s.SelectedBundle)
		if audit != nil && audit.Triage != "" {
			out.Bundle += " (" + audit.Triage + ")"
		}
	}
	titles := map[string]string{}
	done := map[qa.Profile]bool{}
	for _, pr := range s.ProfileReports {
		done[pr.Profile] = true
		out.Profiles = append(out.Profiles, html.Profile{Name: string(pr.Profile), Status: "completed", Candidates: len(pr.FindingCandidates), Summary: pr.Scope})
		for _, c := range pr.FindingCandidates {
			titles[string(pr.Profile)+"/"+c.CandidateID] = c.Title
		}
	}
	for _, p := range s.ReviewProfiles {
		if !done[p] {
			out.Profiles = append(out.Profiles, html.Profile{Name: string(p), Status: "not run"})
		}
	}
	if fr := s.FinalReviewReport; fr != nil {
		for _, d := range fr.CandidateDecisions {
			key := string(d.Source.Profile) + "/" + d.Source.CandidateID
			out.Decisions = append(out.Decisions, html.Decision{CandidateID: d.Source.CandidateID, Profile: string(d.Source.Profile),
				Title: titles[key], Decision: string(d.Verdict), Rationale: d.Rationale})
		}
	}
	switch {
	case audit != nil && audit.Deep != nil:
		out.Deep = fmt.Sprintf("ran (%s): examined %d, lowered %d, raised %d", strings.Join(audit.Deep.Reasons, ", "), audit.Deep.Examined, audit.Deep.Lowered, audit.Deep.Raised)
	case s.DeepAssessment != nil && s.DeepAssessment.ShouldEscalate:
		var codes []string
		for _, c := range s.DeepAssessment.ReasonCodes {
			codes = append(codes, string(c))
		}
		out.Deep = "escalation advised: " + strings.Join(codes, ", ")
	default:
		out.Deep = "not needed"
	}
	return out
}

// WriteReportFile writes report.html of a bundle read from a file (its
// findings are not in memory): the bytes html.Write gives for BuildReport
// of the same bundle. It reads bf once in order (counts and the page's
// order of the findings, html.Index), then in the page's order (in one
// pass when the bundle is in that order, as diffpal's bundles nearly
// are), each with its snippet from src.
func WriteReportFile(w io.Writer, bf *findings.BundleFile, audit *review.Audit, session *qa.Session, src Source, red func(string) string) error {
	rb := NewReportBuilder(bf.Header, audit, session, src, red)
	var x html.Index
	x.Grow(bf.Len())
	if err := bf.Each(func(_ int, f *findings.Finding) error {
		rb.Count(f)
		hf := rb.Finding(f, false)
		x.Add(&hf)
		return nil
	}); err != nil {
		return err
	}
	rd := bf.Reader()
	defer rd.Close()
	return x.Write(w, rb.Report(), func(ord int) (*html.Finding, error) {
		f, err := rd.Get(ord)
		if err != nil {
			return nil, err
		}
		hf := rb.Finding(f, true)
		return &hf, nil
	})
}

// Prewarm does now the set-up the formats would do on their first write
// (the HTML page's template), so that a command that will write outputs
// can have it done on another goroutine while it reviews.
func Prewarm() { html.Prewarm() }
