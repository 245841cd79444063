// Package markdown renders a review as summary.md: what was reviewed, what
// was skipped or dropped and why, and every finding. One printer, golden
// files beside it.
package markdown

import (
	"fmt"
	"io"
	"strings"

	"github.com/diffpalhq/diffpal/findings"
)

// Info is what the summary says besides the bundle's findings.
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

// Write renders the summary.
func Write(w io.Writer, b *findings.Bundle, in Info) error {
	var sb strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&sb, format, args...) }
	t := b.Tally()
	counts, blocking := t.BySeverity, t.Blocking
	p("# diffpal review\n\n")
	status := "✅ passed"
	if blocking > 0 {
		status = fmt.Sprintf("❌ %d blocking", blocking)
	}
	p("**%s** · %d findings (critical %d, high %d, medium %d, low %d)", status, len(b.Findings),
		counts[findings.Critical], counts[findings.High], counts[findings.Medium], counts[findings.Low])
	if b.Gate != nil {
		p(" · blocks on `%s`", b.Gate.BlockOn)
		if b.Gate.MinConfidence != nil {
			p(" with confidence ≥ %g", *b.Gate.MinConfidence)
		}
	}
	p("\n\n")
	p("| | |\n|---|---|\n")
	p("| Repository | `%s` |\n", cell(in.Repository))
	p("| Range | `%s` (%s) |\n", cell(in.Range), cell(in.Why))
	p("| Reviewed | %d files, %d added lines |\n", in.Files, in.AddedLines)
	p("| Provider | %s |\n", cell(in.Provider))
	if in.Triage != "" {
		p("| Triage | %s |\n", cell(in.Triage))
	}
	if in.Deep != "" {
		p("| Deep review | %s |\n", cell(in.Deep))
	}
	if in.Baseline != nil {
		p("| Baseline | %d new, %d unchanged (not reported), %d fixed |\n", in.Baseline.New, in.Baseline.Unchanged, in.Baseline.Fixed)
	}
	p("\n")
	if len(b.Findings) > 0 {
		p("## Findings\n\n| Severity | Category | Location | Finding | Blocking |\n|---|---|---|---|---|\n")
		for i, f := range b.Findings {
			if i == MaxFindings {
				p("\n…and %d more in `findings.json`.\n", len(b.Findings)-MaxFindings)
				break
			}
			loc := fmt.Sprintf("`%s:%d`", cell(f.Path), f.StartLine)
			if f.EndLine > f.StartLine {
				loc = fmt.Sprintf("`%s:%d-%d`", cell(f.Path), f.StartLine, f.EndLine)
			}
			block := ""
			if f.Blocking {
				block = "yes"
			}
			p("| %s | %s | %s | **%s** — %s | %s |\n", f.Severity, cell(f.Category), loc, cell(f.Title), cell(f.Message), block)
		}
		p("\n")
		p("<details><summary>Suggestions</summary>\n\n")
		for i, f := range b.Findings {
			if i == MaxFindings {
				break
			}
			if f.Suggestion != "" {
				p("- `%s:%d` %s: %s\n", f.Path, f.StartLine, oneLine(f.Title), oneLine(f.Suggestion))
			}
		}
		p("\n</details>\n\n")
	}
	section := func(title string, notes []Note) {
		if len(notes) == 0 {
			return
		}
		p("## %s\n\n", title)
		for _, n := range notes {
			switch {
			case n.Count > 0 && n.What != "":
				p("- %d × %s — %s\n", n.Count, oneLine(n.Reason), oneLine(n.What))
			case n.Count > 0:
				p("- %d × %s\n", n.Count, oneLine(n.Reason))
			default:
				p("- `%s` — %s\n", oneLine(n.What), oneLine(n.Reason))
			}
		}
		p("\n")
	}
	section("Skipped files", in.Skips)
	section("Dropped candidates", in.Drops)
	section("Suppressed", in.Suppressed)
	section("Suppressions without a reason (not applied)", in.Invalid)
	for _, n := range in.Notes {
		p("> %s\n", oneLine(n))
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// cell escapes text for a table cell.
func cell(s string) string {
	s = oneLine(s)
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "`", "'")
}
