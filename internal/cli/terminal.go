package cli

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/output"
	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/diffpalhq/diffpal/internal/review"
	"github.com/diffpalhq/diffpal/internal/textsafe"
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

// writeTerminalSummary is writeTerminalSummaryIn with the process's
// working directory.
func writeTerminalSummary(w io.Writer, res *review.Result, paths map[string]string, color, gate bool) {
	wd, _ := System().Getwd()
	writeTerminalSummaryIn(w, wd, res, paths, color, gate)
}

// writeTerminalSummaryIn prints the human summary of a review, naming the
// repository relative to wd when it is below it. paths are the outputs
// written, by key (output.Key); they are listed in the registry's order.
// Every string that can come from the repository — its directory name,
// branch names in the range text, paths, titles, categories, notes, the
// artifact paths under the repository — goes through printable, so none
// of it can move the cursor, recolour or clear the terminal, or reorder
// the line with a bidirectional override.
func writeTerminalSummaryIn(w io.Writer, wd string, res *review.Result, paths map[string]string, color, gate bool) {
	p := palette{on: color}
	ch, a, b := res.Change, res.Audit, res.Bundle
	rng := output.ShortSHA(ch.Range.DiffBase) + ".." + output.ShortSHA(ch.Range.Head)
	if ch.Range.Worktree {
		rng = output.ShortSHA(ch.Range.DiffBase) + "..worktree"
	}
	shown := func(k string) string { return printable(paths[k]) }
	// The repository actually reviewed: its top level as the caller
	// named it, not the origin remote a clone happens to have.
	fmt.Fprintf(w, "%s %s %s (%s)\n", p.c("1", "diffpal review"), printable(relToWd(wd, ch.Root)), printable(rng), printable(ch.Range.Why))
	fmt.Fprintf(w, "  reviewed %s, %s; skipped %d; %s\n", plural(a.Files, "file"), plural(a.AddedLines, "added line"), len(a.Skips), printable(a.Triage))
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
			fmt.Fprintf(w, "  … %d more in %s\n", len(b.Findings)-maxTerminalFindings, shown("findings"))
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
	if pol := a.Policy; pol != nil {
		line := "  policy from " + policyFrom(pol.Source)
		if pol.Why != "" {
			line += " (" + printable(pol.Why) + ")"
		}
		if n := len(pol.Changes); n > 0 {
			line += "; " + p.c("33", fmt.Sprintf("the change edits its own review policy: %d", n))
			if paths["summary"] != "" {
				line += " (see " + shown("summary") + ")"
			}
		}
		fmt.Fprintln(w, line)
	}
	if a.Baseline != nil {
		fmt.Fprintf(w, "  baseline: %d new, %d unchanged, %d fixed\n", len(a.Baseline.New), len(a.Baseline.Unchanged), len(a.Baseline.Fixed))
	}
	if res.Session.Status == qa.StatusCompleted {
		fmt.Fprintf(w, "  session %s: %s, deep review %s\n", printable(res.Session.RunID), plural(len(res.Session.CompletedProfiles), "profile"), printable(deepText(a)))
	}
	for _, n := range a.Notes {
		fmt.Fprintf(w, "  note: %s\n", printable(n))
	}
	var wrote []string
	for _, k := range outputOrder(paths) {
		wrote = append(wrote, shown(k))
	}
	fmt.Fprintf(w, "  wrote %s\n", strings.Join(wrote, ", "))
	switch {
	case blocking > 0 && gate:
		fmt.Fprintf(w, "%s %s (block on %s)\n", p.c("1;31", "gate: blocked"), plural(blocking, "blocking finding"), b.Gate.BlockOn)
	case blocking > 0:
		fmt.Fprintf(w, "%s (block on %s); add --gate to fail CI on them\n", plural(blocking, "blocking finding"), b.Gate.BlockOn)
	default:
		fmt.Fprintf(w, "%s no blocking findings (block on %s)\n", p.c("32", "gate: passed"), b.Gate.BlockOn)
	}
}

// policyFrom names where the review policy was read from.
func policyFrom(source string) string {
	switch source {
	case "base":
		return "base revision"
	case "head":
		return "head revision"
	case "worktree":
		return "work tree"
	}
	return printable(source)
}

func deepText(a review.Audit) string {
	if a.Deep == nil {
		return "not needed"
	}
	return "ran: " + strings.Join(a.Deep.Reasons, ", ")
}

// outputOrder is the keys of paths in the output registry's order, then
// any others sorted.
func outputOrder(paths map[string]string) []string {
	var keys []string
	known := map[string]bool{}
	for _, k := range output.Builtin().Keys() {
		known[k] = true
		if _, ok := paths[k]; ok {
			keys = append(keys, k)
		}
	}
	var rest []string
	for k := range paths {
		if !known[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	return append(keys, rest...)
}

// progress draws a one-line status on stderr, only when it is a terminal
// (IOStreams.ProgressEnabled).
type progress struct {
	w     io.Writer
	on    bool
	start time.Time
}

func newProgress(ios *IOStreams) *progress {
	return &progress{w: ios.ErrOut, on: ios.ProgressEnabled(), start: time.Now()}
}

func (p *progress) step(s string) {
	if p.on {
		fmt.Fprintf(p.w, "\r\x1b[2K⏳ %s (%.1fs)", printable(s), time.Since(p.start).Seconds())
	}
}

func (p *progress) done() {
	if p.on {
		fmt.Fprint(p.w, "\r\x1b[2K")
	}
}

// printable shows control characters (C0, DEL, C1), bidirectional
// overrides and isolates and other invisible format characters as visible
// escapes ("\x1b", "\u202e"), so that a path, a directory name or a
// model's title cannot move the cursor, recolour the terminal or reorder
// the text around it.
func printable(s string) string { return textsafe.Terminal(s) }

// plural spells a count with its noun: "1 file", "2 files".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
