package publish

import (
	"cmp"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/clip"
	"github.com/diffpalhq/diffpal/internal/secrets"
	"github.com/diffpalhq/diffpal/internal/textsafe"
)

// Every string a body takes from the bundle came from the reviewed change
// (paths, titles, messages, anchors, suggestions) or from whoever wrote the
// bundle publish --input read. It is redacted (the secret detector), then
// escaped: text as Markdown inline text that renders as itself (no
// heading, link, image, HTML, table or new line of its own), code as a code
// span, and "@" is followed by a zero-width space so a finding cannot
// mention people or teams. Only a suggestion block shows code as lines,
// inside a fence longer than any backtick run in it.

// Body limits: GitHub refuses bodies over 65536 characters; GitLab and
// Azure take more, but a comment that long helps nobody.
const (
	maxMessage    = 4000
	maxAnchor     = 300
	maxSuggestion = 6000
	maxSummary    = 60000
	maxListed     = 100
)

func text(s string, n int) string {
	s = strings.Join(strings.Fields(secrets.Redact(s)), " ")
	return noMention(textsafe.Inline(clip.Text(s, n)))
}

func code(s string, n int) string {
	s = strings.Join(strings.Fields(secrets.Redact(s)), " ")
	return strings.ReplaceAll(textsafe.Code(clip.Text(s, n)), "|", `\|`)
}

func noMention(s string) string { return strings.ReplaceAll(s, "@", "@\u200b") }

var sevIcon = map[findings.Severity]string{findings.Critical: "🛑", findings.High: "🔴", findings.Medium: "🟠", findings.Low: "🟡"}

// CommentBody is the inline comment for a finding, with its marker first.
func CommentBody(f *findings.Finding, t *Target, channel string) (body, dg string) {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("%s **%s**", sevIcon[f.Severity], strings.ToUpper(string(f.Severity)))
	if f.Blocking {
		p(" · **blocking**")
	}
	if f.RuleID != "" {
		p(" · %s", code(f.RuleID, 120))
	}
	if f.Category != "" {
		p(" · %s", text(f.Category, 60))
	}
	p("\n\n**%s**\n\n", text(f.Title, 256))
	if msg := f.Message; msg != "" && strings.TrimSpace(msg) != strings.TrimSpace(f.Title) {
		p("%s\n\n", text(msg, maxMessage))
	}
	if f.Impact != nil && f.Impact.Summary != "" && f.Impact.Summary != f.Title {
		p("**Impact:** %s\n\n", text(f.Impact.Summary, 600))
	}
	if f.Evidence != nil && f.Evidence.Anchor != "" {
		p("**Evidence:** %s\n\n", code(f.Evidence.Anchor, maxAnchor))
	}
	if repl, ok := Replacement(f); ok {
		fence := fenceFor(repl)
		p("**Suggested change:**\n\n%ssuggestion\n%s%s\n\n", fence, repl, fence)
	} else if f.Suggestion != "" {
		p("**Fix:** %s\n\n", text(f.Suggestion, 1000))
	}
	// The digest covers what the finding says, not the footer: its
	// permalink names the head commit and line, which change with every
	// push without the finding changing.
	dg = digest(b.String())
	if link := Permalink(t, f); link != "" {
		p("<sub>[%s](%s) · ", codeText(fmt.Sprintf("%s:%d", f.Path, f.StartLine)), link)
	} else {
		p("<sub>")
	}
	p("diffpal · stable id %s</sub>\n", code(f.StableID, 80))
	content := b.String()
	m := Marker{Kind: "finding", Channel: channel, StableID: MarkerID(cmp.Or(f.StableID, f.ID)), Digest: dg}
	return m.String() + "\n" + content, dg
}

// codeText is a code span usable as a link's text.
func codeText(s string) string { return code(s, 200) }

// ResolveBody is the reply posted on a thread before it is resolved. Its
// marker tells a later run that diffpal, not a reviewer, resolved the
// thread: should the finding come back, it is posted again.
func ResolveBody(channel, stableID, head string) string {
	return Marker{Kind: "resolved", Channel: channel, StableID: MarkerID(stableID)}.String() + "\n" +
		fmt.Sprintf("✅ Resolved by diffpal: the review of %s no longer reports this finding.", code(short(head), 40))
}

// fenceFor returns a backtick fence longer than any run of backticks in s
// (at least three).
func fenceFor(s string) string {
	longest, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}

// Replacement returns the lines that replace the finding's span when its
// suggestion is a replacement: a fenced ```suggestion block, or a unified
// diff of one hunk whose removed lines are exactly the finding's head-side
// lines. Anything else (prose) is not, and is shown as the fix.
// The text ends with a newline; ok is false for LEFT findings (a
// suggestion changes the head).
func Replacement(f *findings.Finding) (string, bool) {
	s := strings.ReplaceAll(secrets.Redact(f.Suggestion), "\r\n", "\n")
	if s == "" || len(s) > maxSuggestion || (f.ChangedSpan != nil && f.ChangedSpan.Side == "LEFT") {
		return "", false
	}
	if strings.ContainsFunc(s, func(r rune) bool { return r != '\n' && r != '\t' && textsafe.Hidden(r) }) {
		// Hidden characters (bidi overrides, escapes) never go into code
		// a reviewer may commit with one click.
		return "", false
	}
	trim := strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(trim, "```suggestion\n"); ok {
		if body, ok := strings.CutSuffix(rest, "```"); ok && !strings.Contains(body, "```") {
			// The closing fence must stand on a line of its own.
			if body != "" && !strings.HasSuffix(body, "\n") {
				body += "\n"
			}
			return body, true
		}
		return "", false
	}
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	i := 0
	for i < len(lines) && (strings.HasPrefix(lines[i], "--- ") || strings.HasPrefix(lines[i], "+++ ") || strings.HasPrefix(lines[i], "diff ") || strings.HasPrefix(lines[i], "index ")) {
		i++
	}
	if i >= len(lines) || !strings.HasPrefix(lines[i], "@@") {
		return "", false
	}
	oldStart, _, err := hunkHeader(lines[i])
	if err != nil {
		return "", false
	}
	var out strings.Builder
	removed, changed := 0, false
	for _, ln := range lines[i+1:] {
		switch {
		case strings.HasPrefix(ln, "@@"):
			return "", false // more than one hunk
		case strings.HasPrefix(ln, "-"):
			removed, changed = removed+1, true
		case strings.HasPrefix(ln, "+"):
			out.WriteString(ln[1:] + "\n")
			changed = true
		case strings.HasPrefix(ln, " "):
			if changed {
				// Context after a change: the hunk is more than one run of
				// replaced lines, which one suggestion cannot express.
				return "", false
			}
			oldStart++
		case strings.HasPrefix(ln, `\`):
		default:
			return "", false
		}
	}
	// The lines the comment spans, which the suggestion replaces.
	_, start, end := span(f)
	if start == 0 {
		start = end
	}
	if removed == 0 || oldStart != start || oldStart+removed-1 != end {
		return "", false
	}
	return out.String(), true
}

// Permalink links the finding's lines at the reviewed commit (base commit
// for removed lines) on the host's web UI; "" when it cannot (no server,
// an absolute or ".." path).
func Permalink(t *Target, f *findings.Finding) string {
	if t == nil || t.ServerURL == "" || f.Path == "" || strings.HasPrefix(f.Path, "/") || strings.Contains("/"+f.Path+"/", "/../") {
		return ""
	}
	sha := t.HeadSHA
	if f.ChangedSpan != nil && f.ChangedSpan.Side == "LEFT" {
		sha = t.BaseSHA
	}
	if sha == "" {
		return ""
	}
	return t.permalink(sha, f.Path, f.StartLine, f.EndLine)
}

// SummaryInput is what the summary reports about a run besides the bundle.
type SummaryInput struct {
	Plan   *Plan
	Bundle *findings.Bundle
	Target *Target
}

// SummaryBody is the sticky summary for the channel, marker first.
func SummaryBody(in SummaryInput) string {
	p, b := in.Plan, in.Bundle
	var sb strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&sb, format, args...) }
	w("%s\n", Marker{Kind: "summary", Channel: p.Channel}.String())
	title := "diffpal review"
	if p.Channel != DefaultChannel {
		title += " · " + p.Channel
	}
	w("## %s\n\n", title)
	t := b.Tally()
	status := "✅ passed"
	switch {
	case t.Blocking > 0:
		status = fmt.Sprintf("❌ %d blocking", t.Blocking)
	case len(b.Findings) > 0:
		status = "⚠️ advisory findings only"
	}
	w("**%s** · %d findings (critical %d, high %d, medium %d, low %d)", status, len(b.Findings),
		t.BySeverity[findings.Critical], t.BySeverity[findings.High], t.BySeverity[findings.Medium], t.BySeverity[findings.Low])
	if p.Head != "" {
		w(" · reviewed %s", code(short(p.Head), 40))
	}
	w("\n\n")
	var listed []*Action
	counts := map[string]int{}
	for i := range p.Actions {
		a := &p.Actions[i]
		k := a.Kind
		if a.IsMoved() {
			k = SummaryOnly
		}
		counts[k]++
		if k == SummaryOnly {
			listed = append(listed, a)
		}
	}
	if p.Feedback == FeedbackReview {
		w("Inline: %d new · %d updated · %d already open · %d resolved as fixed this run", counts[Create], counts[Update], counts[Keep], counts[Resolve])
		if n := counts[SummaryOnly]; n > 0 {
			w(" · %d listed below (not on a line of the diff)", n)
		}
		w("\n\n")
	}
	if len(listed) > 0 {
		heading := "Findings"
		if p.Feedback == FeedbackReview {
			heading = "Findings not placed on the diff"
		}
		w("### %s\n\n| severity | rule | location | finding |\n|---|---|---|---|\n", heading)
		sort.SliceStable(listed, func(i, j int) bool { return sevRank(listed[i].Severity) > sevRank(listed[j].Severity) })
		for i, a := range listed {
			if i == maxListed {
				w("\n… and %d more in findings.json.\n", len(listed)-maxListed)
				break
			}
			f := a.finding
			loc := f.Path
			if f.StartLine > 0 {
				loc += ":" + strconv.Itoa(f.StartLine)
			}
			sev := strings.ToUpper(string(f.Severity))
			if f.Blocking {
				sev += " (blocking)"
			}
			cell := text(f.Title, 200)
			if link := Permalink(in.Target, f); link != "" {
				loc = fmt.Sprintf("[%s](%s)", codeText(loc), link)
			} else {
				loc = codeText(loc)
			}
			w("| %s %s | %s | %s | %s |\n", sevIcon[f.Severity], sev, code(cmp.Or(f.RuleID, f.Category), 100), loc, cell)
			if sb.Len() > maxSummary {
				w("\n… and more in findings.json.\n")
				break
			}
		}
		w("\n")
	}
	w("<sub>diffpal updates this comment in place on every run")
	if p.Channel != DefaultChannel {
		w(" of channel %s", code(p.Channel, 64))
	}
	w(".</sub>\n")
	return sb.String()
}

func sevRank(s string) int { return findings.Severity(s).Rank() }
