package html

// report.html's printer as it was before the streaming Index (commit
// 6b05ecc), kept as the reference the streaming path is compared with
// byte for byte.

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strings"
	"testing"
)

func legacyWrite(w io.Writer, r *Report) error {
	if r == nil {
		return fmt.Errorf("html: nil report")
	}
	v, err := legacyBuild(r)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := pageTemplate().Execute(&buf, v); err != nil {
		return fmt.Errorf("html: %w", err)
	}
	_, err = w.Write(buf.Bytes())
	return err
}

func legacyBuild(r *Report) (*view, error) {
	v := &view{
		Title:      line(r.Title),
		Repository: line(r.Repository),
		Range:      line(r.Range),
		Why:        line(r.Why),
		Provider:   line(r.Provider),
		Version:    line(r.Version),
		Decision:   line(strings.ToLower(strings.TrimSpace(r.Decision))),
		CSS:        template.CSS(css),
		JS:         template.JS(js),
	}
	if v.Title == "" {
		v.Title = "diffpal review"
	}

	fs := make([]jsFinding, len(r.Findings))
	for i := range r.Findings {
		fs[i] = legacyFinding(&r.Findings[i])
	}
	slices.SortStableFunc(fs, func(a, b jsFinding) int {
		return cmp.Or(
			strings.Compare(a.Path, b.Path),
			cmp.Compare(a.Start, b.Start),
			cmp.Compare(severityRank(b.Severity), severityRank(a.Severity)),
			strings.Compare(a.Severity, b.Severity),
			cmp.Compare(a.End, b.End),
			strings.Compare(a.ID, b.ID),
			strings.Compare(a.Title, b.Title),
		)
	})
	v.Total = len(fs)

	bySev := map[string]int{}
	for _, f := range fs {
		bySev[f.Severity]++
		if f.Blocking {
			v.Blocking++
		}
	}
	sevs := slices.Clone(severityOrder)
	var extra []string
	for s := range bySev {
		if severityRank(s) == 0 {
			extra = append(extra, s)
		}
	}
	slices.Sort(extra)
	sevs = append(sevs, extra...)
	for _, s := range sevs {
		v.Severities = append(v.Severities, sevCount{s, bySev[s]})
	}
	if v.Decision == "" {
		switch {
		case v.Blocking > 0:
			v.Decision = "fail"
		case v.Total > 0:
			v.Decision = "warn"
		default:
			v.Decision = "pass"
		}
	}
	switch v.Decision {
	case "pass", "warn", "fail":
		v.DecisionClass = v.Decision
	default:
		v.DecisionClass = "other"
	}
	v.Chart, v.Matrix = legacyBuildChart(fs, sevs)

	if len(fs) > NoscriptLimit {
		v.Noscript, v.NoscriptMore = fs[:NoscriptLimit], len(fs)-NoscriptLimit
	} else {
		v.Noscript = fs
	}

	for _, f := range r.Files {
		v.Files = append(v.Files, File{Path: line(f.Path), Status: line(f.Status), Findings: f.Findings})
	}
	slices.SortStableFunc(v.Files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	rows, err := templateFileRows(v.Files)
	if err != nil {
		return nil, err
	}
	v.FileRows = rows
	v.Skips = notes(r.Skips)
	v.Drops = notes(r.Drops)
	for _, d := range r.Drops {
		v.DropTotal += max(d.Count, 1)
	}
	v.Suppressed = notes(r.Suppressed)
	if b := r.Baseline; b != nil {
		v.Baseline = &Baseline{New: b.New, Unchanged: b.Unchanged, Fixed: b.Fixed, FixedList: notes(b.FixedList)}
	}
	if s := r.Session; s != nil {
		vs := &Session{ID: line(s.ID), Bundle: line(s.Bundle), Deep: text(s.Deep)}
		for _, p := range s.Profiles {
			vs.Profiles = append(vs.Profiles, Profile{Name: line(p.Name), Status: line(p.Status), Candidates: p.Candidates, Summary: text(p.Summary)})
		}
		for _, d := range s.Decisions {
			vs.Decisions = append(vs.Decisions, Decision{CandidateID: line(d.CandidateID), Profile: line(d.Profile),
				Title: line(d.Title), Decision: line(d.Decision), Rationale: text(d.Rationale)})
		}
		v.Session = vs
	}
	for _, n := range r.Notes {
		v.Notes = append(v.Notes, text(n))
	}

	data, err := legacyMarshalIsland(island{Severities: sevs, Baseline: r.Baseline != nil, Findings: fs})
	if err != nil {
		return nil, err
	}
	v.Data = template.JS(data)
	return v, nil
}

func legacyMarshalIsland(d island) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(true)
	if err := enc.Encode(d); err != nil {
		return nil, fmt.Errorf("html: %w", err)
	}
	out := bytes.TrimRight(buf.Bytes(), "\n")
	if bytes.ContainsAny(out, "<>&") || bytes.Contains(out, []byte("\u2028")) || bytes.Contains(out, []byte("\u2029")) {
		return nil, fmt.Errorf("html: data island is not escaped")
	}
	return out, nil
}

func legacyFinding(f *Finding) jsFinding {
	j := jsFinding{
		ID:         line(f.StableID),
		Rule:       line(f.RuleID),
		Category:   line(strings.TrimSpace(f.Category)),
		Severity:   line(strings.ToLower(strings.TrimSpace(f.Severity))),
		Blocking:   f.Blocking,
		Confidence: f.Confidence,
		Profile:    line(f.Profile),
		Path:       line(f.Path),
		Start:      f.StartLine,
		End:        f.EndLine,
		Side:       line(f.Side),
		Title:      line(f.Title),
		Message:    text(f.Message),
		Impact:     text(f.Impact),
		Evidence:   text(f.Evidence),
		Suggestion: text(f.Suggestion),
		Link:       safeLink(f.Link),
		Baseline:   line(f.Baseline),
	}
	if j.End < j.Start {
		j.End = j.Start
	}
	if s := f.Snippet; s != nil && len(s.Lines) > 0 {
		js := &jsSnippet{Start: s.Start, MarkStart: s.MarkStart, MarkEnd: s.MarkEnd, Lines: make([]string, len(s.Lines))}
		for i, l := range s.Lines {
			js.Lines[i] = code(l)
		}
		j.Snippet = js
	}
	return j
}

func legacyBuildChart(fs []jsFinding, sevs []string) (chart, matrix) {
	type cat struct {
		name  string
		total int
		by    map[string]int
	}
	idx := map[string]*cat{}
	var cats []*cat
	for _, f := range fs {
		c := idx[f.Category]
		if c == nil {
			c = &cat{name: f.Category, by: map[string]int{}}
			idx[f.Category] = c
			cats = append(cats, c)
		}
		c.total++
		c.by[f.Severity]++
	}
	slices.SortStableFunc(cats, func(a, b *cat) int {
		return cmp.Or(cmp.Compare(b.total, a.total), strings.Compare(a.name, b.name))
	})
	if len(cats) > chartCategories {
		other := &cat{name: fmt.Sprintf("%d other categories", len(cats)-chartCategories+1), by: map[string]int{}}
		for _, c := range cats[chartCategories-1:] {
			other.total += c.total
			for s, n := range c.by {
				other.by[s] += n
			}
		}
		cats = append(cats[:chartCategories-1:chartCategories-1], other)
	}

	m := matrix{Severities: sevs}
	const (
		rowH, barH, labelW, barW, top = 22, 16, 200, 360, 28
	)
	ch := chart{LabelWidth: labelW, Width: labelW + barW + 60}
	maxTotal := 1
	for _, c := range cats {
		maxTotal = max(maxTotal, c.total)
	}
	x := labelW
	for _, s := range sevs {
		ch.Legend = append(ch.Legend, chartLegend{X: x, TextX: x + 14, Severity: s})
		x += 14 + 8*len(s) + 16
	}
	for i, c := range cats {
		label := c.name
		if label == "" {
			label = "(none)"
		}
		mr := matrixRow{Category: label, Total: c.total}
		y := top + i*rowH
		row := chartRow{Y: y, TextY: y + barH - 4, Label: shorten(label, 26), Full: label, Total: c.total}
		x := labelW
		acc := 0
		for _, s := range sevs {
			n := c.by[s]
			mr.Counts = append(mr.Counts, n)
			if n == 0 {
				continue
			}
			// Cumulative rounding keeps the segments adjacent.
			start := labelW + acc*barW/maxTotal
			acc += n
			end := labelW + acc*barW/maxTotal
			if end-start < 2 {
				end = start + 2
			}
			row.Segments = append(row.Segments, chartSegment{X: start, Width: end - start, Severity: s, Count: n})
			x = end
		}
		row.TotalX = x + 6
		ch.Rows = append(ch.Rows, row)
		m.Rows = append(m.Rows, mr)
	}
	ch.Height = top + max(len(cats), 1)*rowH + 4
	return ch, m
}

// legacyReports are reports of every shape: the golden one, one without
// findings, many findings with equal and unequal keys in random order,
// unknown severities, more than NoscriptLimit findings and more than
// chartCategories categories.
func legacyReports() map[string]*Report {
	out := map[string]*Report{"small": smallReport(), "empty": {Title: "t"}, "nil-decision": {}}
	big := smallReport()
	big.Decision = ""
	sevs := []string{"low", "medium", "high", "critical", "Bogus", " HIGH ", "weird<sev>"}
	for i := 0; i < 700; i++ {
		f := big.Findings[i%len(big.Findings)]
		f.Path = fmt.Sprintf("dir%d/f%d.go", i%7, (i*7919)%13)
		f.StartLine = (i * 31) % 17
		f.EndLine = f.StartLine + (i % 3) - 1
		f.Severity = sevs[(i*13)%len(sevs)]
		f.Category = fmt.Sprintf("cat-%d", (i*17)%19)
		if i%5 == 0 {
			f.StableID = "same"
			f.Title = fmt.Sprintf("title %d", i%4)
		}
		f.Blocking = i%9 == 0
		out["big"] = big
		big.Findings = append(big.Findings, f)
	}
	for n := range 3 {
		r := *big
		r.Findings = big.Findings[:n*NoscriptLimit/2+1]
		r.Baseline = nil
		out[fmt.Sprintf("big-%d", n)] = &r
	}
	return out
}

func TestStreamingSameBytes(t *testing.T) {
	for name, r := range legacyReports() {
		var want, got bytes.Buffer
		if err := legacyWrite(&want, r); err != nil {
			t.Fatal(err)
		}
		if err := Write(&got, r); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Errorf("%s: Write differs from the legacy printer (%d vs %d bytes)", name, got.Len(), want.Len())
		}
		// The streaming path proper: findings fetched by index.
		var x Index
		for i := range r.Findings {
			x.Add(&r.Findings[i])
		}
		hdr := *r
		hdr.Findings = nil
		got.Reset()
		fetched := 0
		if err := x.Write(&got, &hdr, func(ord int) (*Finding, error) { fetched++; f := r.Findings[ord]; return &f, nil }); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) || fetched != len(r.Findings) {
			t.Errorf("%s: Index.Write differs from the legacy printer (%d fetched of %d)", name, fetched, len(r.Findings))
		}
	}
}

// templateFileRows is the files table's rows as the page template wrote
// them before fileRows: the template's own range, with html/template's
// escaping.
func templateFileRows(files []File) (template.HTML, error) {
	t, err := template.New("rows").Parse("<tbody>\n{{- range .}}\n<tr><th scope=\"row\"><code>{{.Path}}</code></th><td>{{.Status}}</td><td>{{.Findings}}</td></tr>\n{{- end}}\n</tbody>")
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if err := t.Execute(&b, files); err != nil {
		return "", err
	}
	rows := strings.TrimSuffix(strings.TrimPrefix(b.String(), "<tbody>"), "\n</tbody>")
	return template.HTML(rows), nil
}

// TestFileRowsAsTemplate: fileRows writes what the template's range wrote,
// over paths and statuses with every character html/template escapes in
// text, invalid UTF-8, non-ASCII text and a NUL.
func TestFileRowsAsTemplate(t *testing.T) {
	files := []File{
		{Path: "src/c++/a<b>.cc", Status: "modified", Findings: 3},
		{Path: `q"u'o&te.go`, Status: "added", Findings: 0},
		{Path: "bad\xff\xfe-utf8/\u00e9t\u00e9/\u65e5\u672c.txt", Status: "renamed", Findings: 12},
		{Path: "nul\x00byte", Status: "<deleted>", Findings: -1},
		{Path: "\ufdd0\uffff+plus", Status: "", Findings: 1 << 40},
	}
	for n := 0; n <= len(files); n++ {
		want, err := templateFileRows(files[:n])
		if err != nil {
			t.Fatal(err)
		}
		if got := fileRows(files[:n]); got != want {
			t.Errorf("%d files:\n got %q\nwant %q", n, got, want)
		}
	}
}
