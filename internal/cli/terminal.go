package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/diffpalhq/diffpal/internal/review"
)

const maxTerminalFindings = 25

type palette struct{ on bool }

func (p palette) c(code, s string) string {
	if !p.on {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

func (p palette) sev(s findings.Severity) string {
	label := strings.ToUpper(string(s))
	switch s {
	case findings.Critical:
		return p.c("1;31", label)
	case findings.High:
		return p.c("31", label)
	case findings.Medium:
		return p.c("33", label)
	}
	return p.c("36", label)
}

// writeTerminalSummary prints the human summary of a review.
func writeTerminalSummary(w io.Writer, res *review.Result, paths map[string]string, color, gate bool) {
	p := palette{on: color}
	ch, a, b := res.Change, res.Audit, res.Bundle
	rng := shortSHA(ch.Range.DiffBase) + ".." + shortSHA(ch.Range.Head)
	if ch.Range.Worktree {
		rng = shortSHA(ch.Range.DiffBase) + "..worktree"
	}
	fmt.Fprintf(w, "%s %s %s (%s)\n", p.c("1", "diffpal review"), ch.Repository, rng, ch.Range.Why)
	fmt.Fprintf(w, "  reviewed %d files, %d added lines; skipped %d; %s\n", a.Files, a.AddedLines, len(a.Skips), a.Triage)
	t := b.Tally()
	counts, blocking := t.BySeverity, t.Blocking
	fmt.Fprintf(w, "  findings %d: %s %d, %s %d, %s %d, %s %d\n", len(b.Findings),
		p.sev(findings.Critical), counts[findings.Critical], p.sev(findings.High), counts[findings.High],
		p.sev(findings.Medium), counts[findings.Medium], p.sev(findings.Low), counts[findings.Low])
	if len(b.Findings) > 0 {
		fmt.Fprintln(w)
	}
	for i, f := range b.Findings {
		if i == maxTerminalFindings {
			fmt.Fprintf(w, "  … %d more in %s\n", len(b.Findings)-maxTerminalFindings, paths["findings"])
			break
		}
		mark := " "
		if f.Blocking {
			mark = p.c("1;31", "✗")
		}
		fmt.Fprintf(w, "  %s %-8s %s:%d  %s %s\n", mark, p.sev(f.Severity), printable(f.Path), f.StartLine, printable(f.Title), p.c("2", "["+printable(f.Category)+"]"))
	}
	fmt.Fprintln(w)
	dropped := 0
	for _, d := range a.Drops {
		dropped += d.Count
	}
	fmt.Fprintf(w, "  dropped %d (outside changed lines or scope), suppressed %d", dropped, len(a.Suppressed))
	if len(a.Invalid) > 0 {
		fmt.Fprintf(w, ", %s", p.c("33", fmt.Sprintf("%d suppressions without a reason were not applied", len(a.Invalid))))
	}
	fmt.Fprintln(w)
	if a.Baseline != nil {
		fmt.Fprintf(w, "  baseline: %d new, %d unchanged, %d fixed\n", len(a.Baseline.New), len(a.Baseline.Unchanged), len(a.Baseline.Fixed))
	}
	if res.Session.Status == qa.StatusCompleted {
		fmt.Fprintf(w, "  session %s: %d profiles, deep review %s\n", res.Session.RunID, len(res.Session.CompletedProfiles), deepText(a))
	}
	fmt.Fprintf(w, "  wrote %s, %s, %s, %s\n", paths["findings"], paths["session"], paths["summary"], paths["sarif"])
	switch {
	case blocking > 0 && gate:
		fmt.Fprintf(w, "%s %d blocking findings (block on %s)\n", p.c("1;31", "gate: blocked"), blocking, b.Gate.BlockOn)
	case blocking > 0:
		fmt.Fprintf(w, "%d blocking findings (block on %s); add --gate to fail CI on them\n", blocking, b.Gate.BlockOn)
	default:
		fmt.Fprintf(w, "%s no blocking findings (block on %s)\n", p.c("32", "gate: passed"), b.Gate.BlockOn)
	}
}

func deepText(a review.Audit) string {
	if a.Deep == nil {
		return "not needed"
	}
	return "ran: " + strings.Join(a.Deep.Reasons, ", ")
}

// progress draws a one-line status on stderr, only when it is a terminal.
type progress struct {
	w     io.Writer
	on    bool
	start time.Time
}

func newProgress(w io.Writer) *progress {
	return &progress{w: w, on: isTerminal(w), start: time.Now()}
}

func (p *progress) step(s string) {
	if p.on {
		fmt.Fprintf(p.w, "\r\x1b[2K⏳ %s (%.1fs)", s, time.Since(p.start).Seconds())
	}
}

func (p *progress) done() {
	if p.on {
		fmt.Fprint(p.w, "\r\x1b[2K")
	}
}

// printable replaces control characters, so that a path or a model's
// title cannot move the cursor or recolour the terminal.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return '?'
		}
		return r
	}, s)
}
