package output

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/buildinfo"
	"github.com/diffpalhq/diffpal/internal/output/markdown"
	"github.com/diffpalhq/diffpal/internal/output/sarif"
	"github.com/diffpalhq/diffpal/internal/review"
	"github.com/diffpalhq/diffpal/internal/weblink"
)

// The built-in formats' names.
const (
	JSON     = Canonical  // findings.json: the findings bundle (v3)
	Session  = "session"  // qa-session.json: the orchestration audit trail
	Markdown = "markdown" // summary.md
	SARIF    = "sarif"    // diffpal.sarif: SARIF 2.1.0
)

// Builtin is the registry review uses: json, session, markdown, sarif and
// html, all written by default. report.html joined the defaults because
// it is the artifact people open (issue 13); a format added later should
// stay out of them unless it is as central, so that upgrading diffpal
// does not add files to anyone's output directory.
func Builtin() *Registry {
	r, err := NewRegistry([]Format{
		FindingsFormat{},
		SessionFormat{},
		MarkdownFormat{},
		SARIFFormat{Tool: SARIFTool()},
		HTMLFormat{},
	}, []string{JSON, Session, Markdown, SARIF, HTML})
	if err != nil {
		panic(err) // the table above is wrong: a programming error
	}
	return r
}

// SARIFTool is diffpal as SARIF's tool.driver.
func SARIFTool() sarif.Tool {
	return sarif.Tool{Name: "diffpal", Version: buildinfo.Get().Version, InformationURI: "https://github.com/diffpalhq/diffpal"}
}

// FindingsFormat writes the findings bundle, the canonical output.
type FindingsFormat struct{}

func (FindingsFormat) Name() string        { return JSON }
func (FindingsFormat) Key() string         { return "findings" }
func (FindingsFormat) DefaultFile() string { return "findings.json" }
func (FindingsFormat) Write(w io.Writer, res *review.Result) error {
	return findings.Encode(w, res.Bundle)
}

// SessionFormat writes the whole review result: the QA session, the
// change and the audit (skips, drops, suppressions, policy).
type SessionFormat struct{}

func (SessionFormat) Name() string        { return Session }
func (SessionFormat) DefaultFile() string { return "qa-session.json" }
func (SessionFormat) Write(w io.Writer, res *review.Result) error {
	return EncodeJSON(w, res)
}

// MarkdownFormat writes summary.md (internal/output/markdown).
type MarkdownFormat struct{}

func (MarkdownFormat) Name() string        { return Markdown }
func (MarkdownFormat) Key() string         { return "summary" }
func (MarkdownFormat) DefaultFile() string { return "summary.md" }
func (MarkdownFormat) Write(w io.Writer, res *review.Result) error {
	return markdown.Write(w, res.Bundle, SummaryInfo(res))
}

// SARIFFormat writes SARIF 2.1.0 (internal/output/sarif) as Tool.
type SARIFFormat struct{ Tool sarif.Tool }

func (SARIFFormat) Name() string        { return SARIF }
func (SARIFFormat) DefaultFile() string { return "diffpal.sarif" }
func (f SARIFFormat) Write(w io.Writer, res *review.Result) error {
	return sarif.Write(w, res.Bundle, f.Tool)
}

// EncodeJSON writes v as indented JSON without HTML escaping, as every
// JSON file diffpal writes.
func EncodeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// SummaryInfo is what summary.md says about a review besides its
// findings: range, provider, triage, skips, drops, suppressions, baseline,
// deep pass and policy.
func SummaryInfo(res *review.Result) markdown.Info {
	ch := res.Change
	in := SummaryInfoOf(res.Bundle, &res.Audit)
	in.Repository, in.Range, in.Why = ch.Repository, ShortSHA(ch.Range.DiffBase)+".."+ShortSHA(ch.Range.Head), ch.Range.Why
	if ch.Range.Worktree {
		in.Range = ShortSHA(ch.Range.DiffBase) + "..worktree"
	}
	return in
}

// SummaryInfoOf is SummaryInfo from a bundle and, when known, the audit of
// its review (diffpal render reads it from qa-session.json): the range
// and repository come from the bundle, the web links from its repository
// id.
func SummaryInfoOf(b *findings.Bundle, a *review.Audit) markdown.Info {
	in := markdown.Info{Repository: b.Repo, Range: ShortSHA(b.BaseSHA) + ".." + ShortSHA(b.HeadSHA), Files: len(b.Files)}
	if repo, ok := weblink.FromID(b.Repo); ok {
		in.Link = func(path string, start, end int, left bool) string {
			sha := b.HeadSHA
			if left {
				sha = b.BaseSHA
			}
			return repo.Lines(sha, path, start, end)
		}
	}
	if a == nil {
		return in
	}
	in.Provider, in.Triage, in.Files, in.AddedLines, in.Notes = a.Provider, a.Triage, a.Files, a.AddedLines, a.Notes
	for _, s := range a.Skips {
		in.Skips = append(in.Skips, markdown.Note{What: s.Path, Reason: s.Reason + ": " + s.Detail})
	}
	for _, d := range a.Drops {
		in.Drops = append(in.Drops, markdown.Note{Reason: d.Reason, Count: d.Count, What: strings.Join(d.Samples, ", ")})
	}
	for _, s := range a.Suppressed {
		in.Suppressed = append(in.Suppressed, markdown.Note{What: fmt.Sprintf("%s:%d %s", s.Path, s.Line, nonEmpty(s.RuleID, s.Category)), Reason: s.By + ": " + s.Reason})
	}
	for _, s := range a.Invalid {
		in.Invalid = append(in.Invalid, markdown.Note{What: fmt.Sprintf("%s:%d %s", s.Path, s.Line, nonEmpty(s.RuleID, s.Category)), Reason: s.Reason})
	}
	if a.Baseline != nil {
		in.Baseline = &markdown.Baseline{New: len(a.Baseline.New), Unchanged: len(a.Baseline.Unchanged), Fixed: len(a.Baseline.Fixed)}
	}
	if a.Deep != nil {
		in.Deep = fmt.Sprintf("ran (%s): examined %d, lowered %d, raised %d", strings.Join(a.Deep.Reasons, ", "), a.Deep.Examined, a.Deep.Lowered, a.Deep.Raised)
	}
	if pol := a.Policy; pol != nil {
		in.PolicySource, in.PolicyWhy = pol.Source, pol.Why
		for _, c := range pol.Changes {
			what := c.Path
			if c.Line > 0 {
				what = fmt.Sprintf("%s:%d", c.Path, c.Line)
			}
			in.PolicyChanges = append(in.PolicyChanges, markdown.Note{What: what, Reason: c.Kind + ": " + c.Detail})
		}
	}
	return in
}

func nonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// ShortSHA is how outputs and the CLI abbreviate a commit: 12 hex
// digits, "worktree" for none.
func ShortSHA(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	if s == "" {
		return "worktree"
	}
	return s
}
