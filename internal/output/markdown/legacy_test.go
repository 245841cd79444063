package markdown

// summary.md's printer as it was before the streaming Summary (commit
// 6b05ecc), kept as the reference the streaming path is compared with
// byte for byte.

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/findings/findingstest"
	"github.com/diffpalhq/diffpal/internal/clip"
	"github.com/diffpalhq/diffpal/internal/textsafe"
)

func legacyWrite(w io.Writer, b *findings.Bundle, in Info) error {
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
	if len(b.Findings) > 0 {
		p("## Findings\n\n| Severity | Category | Location | Finding | Blocking |\n|---|---|---|---|---|\n")
		for i, f := range b.Findings {
			if i == MaxFindings {
				p("\n…and %d more in `findings.json`.\n", len(b.Findings)-MaxFindings)
				break
			}
			block := ""
			if f.Blocking {
				block = "yes"
			}
			p("| %s | %s | %s | **%s** — %s | %s |\n", text(string(f.Severity)), text(f.Category), cell(in.locationLink(&f)),
				text(f.Title), text(f.Message), block)
		}
		p("\n")
		// One collapsible section per file, in the bundle's order (path
		// first), so a PR comment stays short until a reader opens a file.
		p("### By file\n\n")
		for i := 0; i < len(b.Findings) && i < MaxFindings; {
			path := b.Findings[i].Path
			j, block := i, 0
			for j < len(b.Findings) && j < MaxFindings && b.Findings[j].Path == path {
				if b.Findings[j].Blocking {
					block++
				}
				j++
			}
			p("<details><summary><code>%s</code> — %s", htmlText(path), plural(j-i, "finding"))
			if block > 0 {
				p(", %d blocking", block)
			}
			p("</summary>\n\n")
			for _, f := range b.Findings[i:j] {
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

func TestStreamingSameBytes(t *testing.T) {
	cases := map[string][]byte{}
	more, _ := filepath.Glob("../../../findings/testdata/*/*.json")
	for _, f := range more {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cases[f] = data
	}
	for _, o := range []findingstest.Options{{N: 0}, {N: 1}, {N: 199}, {N: 200}, {N: 201}, {N: 450, Seed: 3, Version: "v3"}, {N: 300, Seed: 5, Version: "v2", FindingsFirst: true}} {
		cases[fmt.Sprintf("gen-%+v", o)] = findingstest.Generate(o)
	}
	n := 0
	for name, data := range cases {
		b, _, problems, err := findings.Decode(data, findings.DecodeOptions{})
		if err != nil || len(problems) > 0 {
			continue
		}
		n++
		in := Info{Repository: b.Repo, Range: "a..b", Files: len(b.Files), Link: func(path string, start, end int, left bool) string {
			return fmt.Sprintf("https://example.com/%s#L%d-%d-%v", path, start, end, left)
		}}
		var want, mem, stream bytes.Buffer
		if err := legacyWrite(&want, b, in); err != nil {
			t.Fatal(err)
		}
		if err := Write(&mem, b, in); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(mem.Bytes(), want.Bytes()) {
			t.Errorf("%s: Write differs:\n%s\nwant:\n%s", name, mem.Bytes(), want.Bytes())
		}
		var s Summary
		bf, _, err := findings.ScanFile(bytes.NewReader(data), int64(len(data)), 0, s.Add)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Write(&stream, bf.Header, in); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(stream.Bytes(), want.Bytes()) {
			t.Errorf("%s: Summary.Write differs:\n%s\nwant:\n%s", name, stream.Bytes(), want.Bytes())
		}
	}
	if n < 10 {
		t.Fatalf("only %d bundles compared", n)
	}
}
