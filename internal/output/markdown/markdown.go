// Package markdown renders a review as summary.md: what was reviewed, what
// was skipped or dropped and why, and every finding. One printer, golden
// files beside it.
package markdown

import (
	"fmt"
	"html"
	"io"
	"strings"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/clip"
	"github.com/diffpalhq/diffpal/internal/textsafe"
)

// Info is what the summary says besides the bundle's findings. Every
// string in it may come from the reviewed repository (its directory name,
// branch names, paths, commit subjects) and is escaped when written.
type Info struct {
	Repository string
	Range      string // "abc123..def456"
	Why        string // how the range was chosen
	Provider   string
	Triage     string
	Files      int
	AddedLines int
	Skips      []Note
	Drops      []Note
	Suppressed []Note
	Invalid    []Note
	Baseline   *Baseline
	Deep       string
	Notes      []string
	// PolicySource is where the review's policy (config, .diffpalignore,
	// rule packs) was read from: base, head or worktree; empty when not
	// recorded.
	PolicySource string
	// PolicyWhy says how PolicySource was chosen ("CI is set").
	PolicyWhy string
	// PolicyChanges are the edits the change makes to its own review
	// policy: What is the path (and line), Reason the kind and detail.
	PolicyChanges []Note
	// Link, when the repository's web UI is known, links a finding's
	// lines (left: on the base side); nil or "" means no link.
	Link func(path string, start, end int, left bool) string
}

// Note is one line item with a count or a reason.
type Note struct {
	What   string
	Reason string
	Count  int
}

// Baseline counts.
type Baseline struct{ New, Unchanged, Fixed int }

// MaxFindings caps the findings table; the rest are counted.
const MaxFindings = 200

// MaxCommits caps the commit subjects listed.
const MaxCommits = 20

// maxAnchor caps a finding's evidence anchor (the flagged code) in the
// details; the whole anchor is in findings.json.
const maxAnchor = 160

// Write renders the summary. Everything from the bundle and from in is
// escaped: paths, anchors and the repository name as code spans, other
// text as inline text, so that no name or message can add a heading, a
// link, an image, HTML or a line of its own (package textsafe).
func Write(w io.Writer, b *findings.Bundle, in Info) error {
	return WriteSummary(w, b, b.Tally(), b.Findings[:min(len(b.Findings), MaxFindings)], in)
}

// Summary collects, one finding at a time, what the summary needs of a
// bundle that is not in memory: the counts and the first MaxFindings
// findings (copied).
type Summary struct {
	counter findings.Counter
	first   []findings.Finding
}

// Add counts f and keeps a copy of it while fewer than MaxFindings are
// kept.
func (s *Summary) Add(f *findings.Finding) {
	s.counter.Add(f)
	if len(s.first) < MaxFindings {
		s.first = append(s.first, f.Clone())
	}
}

// Write renders the summary of the bundle whose header is hdr and whose
// findings Add saw: the bytes Write gives for the whole bundle.
func (s *Summary) Write(w io.Writer, hdr *findings.Bundle, in Info) error {
	return WriteSummary(w, hdr, s.counter.Result(), s.first, in)
}

// WriteSummary is Write from the bundle's header (its findings are not
// read), its counts t, and its first findings in order (at least the
// first MaxFindings of them, or all).
func WriteSummary(w io.Writer, b *findings.Bundle, t findings.GateResult, first []findings.Finding, in Info) error {
	var sb strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&sb, format, args...) }
	total := t.Findings
	counts, blocking := t.BySeverity, t.Blocking
	p("# diffpal review\n\n")
	status := "✅ passed"
	if blocking > 0 {
		status = fmt.Sprintf("❌ %d blocking", blocking)
	}
	p("**%s** · %d findings (critical %d, high %d, medium %d, low %d)", status, total,
		counts[findings.Critical], counts[findings.High], counts[findings.Medium], counts[findings.Low])
	if b.Gate != nil {
		p(" · blocks on %s", textsafe.Code(string(b.Gate.BlockOn)))
		if b.Gate.MinConfidence != nil {
			p(" with confidence ≥ %g", *b.Gate.MinConfidence)
		}
	}
	p("\n\n")
	p("| | |\n|---|---|\n")
	p("| Repository | %s |\n", codeCell(in.Repository))
	p("| Range | %s (%s) |\n", codeCell(in.Range), text(in.Why))
	p("| Reviewed | %s, %s |\n", plural(in.Files, "file"), plural(in.AddedLines, "added line"))
	p("| Provider | %s |\n", text(in.Provider))
	if in.Triage != "" {
		p("| Triage | %s |\n", text(in.Triage))
	}
	if in.Deep != "" {
		p("| Deep review | %s |\n", text(in.Deep))
	}
	if in.Baseline != nil {
		p("| Baseline | %d new, %d unchanged (not reported), %d fixed |\n", in.Baseline.New, in.Baseline.Unchanged, in.Baseline.Fixed)
	}
	p("\n")
	if len(b.ChangeSummary) > 0 {
		p("## Commits\n\n")
		for i, s := range b.ChangeSummary {
			if i == MaxCommits {
				p("- …and %d more\n", len(b.ChangeSummary)-MaxCommits)
				break
			}
			p("- %s\n", text(s))
		}
		p("\n")
	}
	if total > 0 {
		p("## Findings\n\n| Severity | Category | Location | Finding | Blocking |\n|---|---|---|---|---|\n")
		for i, f := range first {
			if i == MaxFindings {
				break
			}
			block := ""
			if f.Blocking {
				block = "yes"
			}
			p("| %s | %s | %s | **%s** — %s | %s |\n", text(string(f.Severity)), text(f.Category), cell(in.locationLink(&f)),
				text(f.Title), text(f.Message), block)
		}
		if total > MaxFindings {
			p("\n…and %d more in `findings.json`.\n", total-MaxFindings)
		}
		p("\n")
		// One collapsible section per file, in the bundle's order (path
		// first), so a PR comment stays short until a reader opens a file.
		p("### By file\n\n")
		for i := 0; i < len(first) && i < MaxFindings; {
			path := first[i].Path
			j, block := i, 0
			for j < len(first) && j < MaxFindings && first[j].Path == path {
				if first[j].Blocking {
					block++
				}
				j++
			}
			p("<details><summary><code>%s</code> — %s", htmlText(path), plural(j-i, "finding"))
			if block > 0 {
				p(", %d blocking", block)
			}
			p("</summary>\n\n")
			for _, f := range first[i:j] {
				p("- **%s** %s %s", text(strings.ToUpper(string(f.Severity))), in.locationLink(&f), text(f.Title))
				if f.Message != "" && f.Message != f.Title {
					p(" — %s", text(f.Message))
				}
				if f.Evidence != nil && strings.TrimSpace(f.Evidence.Anchor) != "" {
					p(" — flagged %s", textsafe.Code(clip.Text(strings.TrimSpace(f.Evidence.Anchor), maxAnchor)))
				}
				if f.Suggestion != "" {
					p(" — suggestion: %s", text(f.Suggestion))
				}
				p("\n")
			}
			p("\n</details>\n\n")
			i = j
		}
	}
	section := func(title string, notes []Note) {
		if len(notes) == 0 {
			return
		}
		p("## %s\n\n", title)
		for _, n := range notes {
			switch {
			case n.Count > 0 && n.What != "":
				// What lists samples ("path:line rule"): paths keep their
				// characters, made visible, rather than being reflowed.
				p("- %d × %s — %s\n", n.Count, text(n.Reason), textsafe.Inline(n.What))
			case n.Count > 0:
				p("- %d × %s\n", n.Count, text(n.Reason))
			default:
				p("- %s — %s\n", textsafe.Code(n.What), text(n.Reason))
			}
		}
		p("\n")
	}
	if in.PolicySource != "" || len(in.PolicyChanges) > 0 {
		p("## Review policy\n\n")
		if in.PolicySource != "" {
			p("The configuration, `.diffpalignore` and rule packs were read from %s.\n\n", policySource(in.PolicySource, in.PolicyWhy))
		}
		if len(in.PolicyChanges) > 0 {
			p("**The change edits its own review policy** (%d):\n\n", len(in.PolicyChanges))
			for _, n := range in.PolicyChanges {
				p("- %s — %s\n", textsafe.Code(n.What), text(n.Reason))
			}
			p("\n")
		}
	}
	section("Skipped files", in.Skips)
	section("Dropped candidates", in.Drops)
	section("Suppressed", in.Suppressed)
	section("Suppressions without a reason (not applied)", in.Invalid)
	for _, n := range in.Notes {
		p("> %s\n", text(n))
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

// locationLink is the finding's location as a code span, linked to its
// lines when the web UI is known. The URL comes from package weblink,
// which percent-escapes every path character that could end a Markdown
// link destination.
func (in Info) locationLink(f *findings.Finding) string {
	loc := textsafe.Code(location(f))
	if in.Link == nil {
		return loc
	}
	left := f.ChangedSpan != nil && f.ChangedSpan.Side == "LEFT"
	if u := in.Link(f.Path, f.StartLine, f.EndLine, left); u != "" && strings.HasPrefix(u, "https://") && !strings.ContainsAny(u, " ()<>\n") {
		return "[" + loc + "](" + u + ")"
	}
	return loc
}

// cell makes inline Markdown safe inside a GFM table cell: every "|"
// (code spans included) is escaped.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// htmlText is text for raw HTML (a <summary>): hidden characters made
// visible, HTML escaped, and the Markdown metacharacters written as
// character references, so that a renderer that does read Markdown
// inside the HTML block still shows the text and nothing else.
func htmlText(s string) string {
	var b strings.Builder
	for _, r := range html.EscapeString(textsafe.Visible(s)) {
		if r < 0x80 && strings.ContainsRune("\\`*_[]()#!~|$", r) {
			fmt.Fprintf(&b, "&#%d;", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func location(f *findings.Finding) string {
	if f.EndLine > f.StartLine {
		return fmt.Sprintf("%s:%d-%d", f.Path, f.StartLine, f.EndLine)
	}
	return fmt.Sprintf("%s:%d", f.Path, f.StartLine)
}

// policySource names where the policy was read from.
func policySource(source, why string) string {
	var s string
	switch source {
	case "base":
		s = "the **base** revision"
	case "head":
		s = "the **head** revision (the change under review)"
	case "worktree":
		s = "the **work tree**"
	default:
		s = text(source)
	}
	if why != "" {
		s += " (" + text(why) + ")"
	}
	return s
}

// text is prose for one line: runs of white space (line breaks included)
// become one space, then Inline escapes the rest.
func text(s string) string { return textsafe.Inline(strings.Join(strings.Fields(s), " ")) }

// codeCell is a code span inside a GFM table cell, where a "|" would end
// the cell even inside the span: GFM takes "\|" as a literal pipe there.
func codeCell(s string) string { return strings.ReplaceAll(textsafe.Code(s), "|", `\|`) }

// plural spells a count with its noun: "1 file", "2 files".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
