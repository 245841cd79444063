package output

// report.html's report builder as it was before ReportBuilder (commit
// 6b05ecc), kept as the reference the streaming path is compared with
// byte for byte.

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/findings/findingstest"
	"github.com/diffpalhq/diffpal/internal/buildinfo"
	"github.com/diffpalhq/diffpal/internal/output/html"
	"github.com/diffpalhq/diffpal/internal/output/markdown"
	"github.com/diffpalhq/diffpal/internal/output/sarif"
	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/diffpalhq/diffpal/internal/review"
	"github.com/diffpalhq/diffpal/internal/secrets"
	"github.com/diffpalhq/diffpal/internal/weblink"
)

func legacyBuildReport(b *findings.Bundle, audit *review.Audit, session *qa.Session, src Source, red func(string) string) *html.Report {
	if red == nil {
		red = secrets.Redact
	}
	bi := buildinfo.Get()
	r := &html.Report{Title: "diffpal review", Repository: b.Repo, Range: ShortSHA(b.BaseSHA) + ".." + ShortSHA(cmp.Or(b.HeadSHA, "worktree")),
		Version: bi.Version, Decision: legacyDecision(b)}
	link, linkable := weblink.FromID(b.Repo)
	baseNew, baseUnchanged := map[string]bool{}, map[string]bool{}
	if audit != nil && audit.Baseline != nil {
		for _, id := range audit.Baseline.New {
			baseNew[id] = true
		}
		for _, id := range audit.Baseline.Unchanged {
			baseUnchanged[id] = true
		}
	}
	perFile := map[string]int{}
	for i := range b.Findings {
		f := &b.Findings[i]
		hf := html.Finding{StableID: cmp.Or(f.StableID, f.ID), RuleID: f.RuleID, Category: f.Category, Severity: string(f.Severity),
			Blocking: f.Blocking, Confidence: f.Confidence, Path: f.Path, StartLine: f.StartLine, EndLine: f.EndLine,
			Title: f.Title, Message: f.Message, Suggestion: f.Suggestion}
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
		case baseNew[hf.StableID]:
			hf.Baseline = "new"
		case baseUnchanged[hf.StableID]:
			hf.Baseline = "unchanged"
		}
		if src != nil && side == "" {
			hf.Snippet = legacySnippet(src(f.Path), f.StartLine, f.EndLine, red)
		}
		if linkable {
			sha := b.HeadSHA
			if side == "LEFT" {
				sha = b.BaseSHA
			}
			hf.Link = link.Lines(sha, f.Path, f.StartLine, f.EndLine)
		}
		perFile[f.Path]++
		r.Findings = append(r.Findings, hf)
	}
	for _, f := range b.Files {
		r.Files = append(r.Files, html.File{Path: f.Path, Status: f.Status, Findings: perFile[f.Path]})
		delete(perFile, f.Path)
	}
	for _, p := range slices.Sorted(maps.Keys(perFile)) {
		// A finding's file the header does not list (a hand-made bundle).
		r.Files = append(r.Files, html.File{Path: p, Findings: perFile[p]})
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
	return r
}

func legacyDecision(b *findings.Bundle) string {
	switch t := b.Tally(); {
	case t.Blocking > 0:
		return "fail"
	case len(b.Findings) > 0:
		return "warn"
	}
	return "pass"
}

func legacySnippet(content []string, start, end int, red func(string) string) *html.Snippet {
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

func streamBundles(t *testing.T) map[string][]byte {
	t.Helper()
	cases := map[string][]byte{}
	files, _ := filepath.Glob("../../findings/testdata/*/*.json")
	more, _ := filepath.Glob("sarif/testdata/*.json")
	for _, f := range append(files, more...) {
		if strings.Contains(f, "schema") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cases[f] = data
	}
	for _, v := range []string{"", "v2", "v3", "v4"} {
		for _, o := range []findingstest.Options{{N: 0}, {N: 1}, {N: 350, Seed: 3}, {N: 150, Seed: 4, NoIDs: true}, {N: 150, Seed: 5, FindingsFirst: true}, {N: 90, Seed: 6, FindingsFirst: true, VersionLast: true}} {
			o.Version = v
			cases[fmt.Sprintf("gen-%+v", o)] = findingstest.Generate(o)
		}
	}
	return cases
}

// fakeSource has lines for some paths: one with a secret, so redaction
// runs, and a short one, so snippets are clipped.
func fakeSource(path string) []string {
	switch path {
	case "src/main.go", "a b/c#d?.go":
		var lines []string
		for i := range 40 {
			lines = append(lines, fmt.Sprintf("line %d\t<code> & \"x\"", i+1))
		}
		lines[5] = `token := "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB"`
		return lines
	case "z.go":
		return []string{"package z"}
	}
	return nil
}

// TestStreamingSameBytes: report.html, summary.md and SARIF written from
// a bundle file by the streaming paths (WriteReportFile, markdown.Summary,
// sarif.WriteFile: diffpal render's) are the bytes the in-memory paths
// wrote before them, with and without an audit and snippets.
func TestStreamingSameBytes(t *testing.T) {
	n := 0
	for name, data := range streamBundles(t) {
		b, _, problems, err := findings.Decode(data, findings.DecodeOptions{})
		if err != nil || len(problems) > 0 {
			continue
		}
		audit := &review.Audit{Provider: "builtin", Notes: []string{"note"}, Drops: []review.Drop{{Reason: "r", Count: 2, Samples: []string{"a.go:1"}}},
			Baseline: &review.BaselineSummary{Fixed: []string{"gone"}}}
		for i, f := range b.Findings {
			if i%3 == 0 {
				audit.Baseline.New = append(audit.Baseline.New, cmp.Or(f.StableID, f.ID))
			} else if i%3 == 1 {
				audit.Baseline.Unchanged = append(audit.Baseline.Unchanged, cmp.Or(f.StableID, f.ID))
			}
		}
		n++
		p := filepath.Join(t.TempDir(), "b.json")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		r, size, done, err := findings.OpenFile(p, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer done()
		for _, a := range []*review.Audit{nil, audit} {
			for _, src := range []Source{nil, fakeSource} {
				var want, mem, got bytes.Buffer
				if err := html.Write(&want, legacyBuildReport(b, a, nil, src, nil)); err != nil {
					t.Fatal(err)
				}
				if err := html.Write(&mem, BuildReport(b, a, nil, src, nil)); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(mem.Bytes(), want.Bytes()) {
					t.Errorf("%s: BuildReport differs from the legacy builder", name)
				}
				bf, _, err := findings.ScanFile(r, size, 0, nil)
				if err != nil {
					t.Fatal(err)
				}
				if err := WriteReportFile(&got, bf, a, nil, src, nil); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got.Bytes(), want.Bytes()) {
					t.Errorf("%s: WriteReportFile differs (%d vs %d bytes)", name, got.Len(), want.Len())
				}
			}
			var want, got bytes.Buffer
			in := SummaryInfoOf(b, a)
			if err := markdown.Write(&want, b, in); err != nil {
				t.Fatal(err)
			}
			var s markdown.Summary
			bf, _, err := findings.ScanFile(r, size, 0, s.Add)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Write(&got, bf.Header, SummaryInfoOf(bf.Header, a)); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Errorf("%s: summary differs", name)
			}
		}
		var want, got bytes.Buffer
		if err := sarif.Encode(&want, sarif.Convert(b, SARIFTool())); err != nil {
			t.Fatal(err)
		}
		var rs sarif.Rules
		bf, _, err := findings.ScanFile(r, size, 0, rs.Add)
		if err != nil {
			t.Fatal(err)
		}
		if err := sarif.WriteFile(&got, bf, &rs, SARIFTool()); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Errorf("%s: sarif differs", name)
		}
	}
	if n < 20 {
		t.Fatalf("only %d bundles compared", n)
	}
}
