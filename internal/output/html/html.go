package html

import (
	"bytes"
	"cmp"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"net/url"
	"slices"
	"strings"

	"github.com/diffpalhq/diffpal/internal/textsafe"
)

// The page is one file: the stylesheet and the script are embedded here
// and written inline; nothing in it names a URL outside the document.
var (
	//go:embed assets/report.css
	css string
	//go:embed assets/report.js
	js string
	//go:embed assets/report.html.tmpl
	pageSource string

	pageTemplate = template.Must(template.New("report").Parse(pageSource))
)

// NoscriptLimit is how many findings the page lists without JavaScript
// (title, severity and place only); the full list, its snippets and the
// filters are rendered by the inline script.
const NoscriptLimit = 100

// chartCategories caps the chart's rows; the rest are one "other" row.
const chartCategories = 12

// severityOrder is the order severities are shown in, most severe first.
var severityOrder = []string{"critical", "high", "medium", "low"}

func severityRank(s string) int {
	switch s {
	case "critical":
		return 4
	case "high":
		return 3
	case "medium":
		return 2
	case "low":
		return 1
	}
	return 0
}

// Write renders r as one self-contained HTML5 document. The output is a
// function of r alone (no clock, no random ids): the same report is the
// same bytes. Every string from r is made visible (textsafe: no control,
// bidirectional or zero-width character reaches the page raw) and then
// escaped for where it stands; the findings travel as a JSON data island
// that the inline script renders with DOM text nodes only.
func Write(w io.Writer, r *Report) error {
	if r == nil {
		return fmt.Errorf("html: nil report")
	}
	v, err := build(r)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, v); err != nil {
		return fmt.Errorf("html: %w", err)
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// view is what the template sees: every string already visible-safe.
type view struct {
	Title, Repository, Range, Why, Provider, Version, Decision string
	// DecisionClass is pass, warn, fail or other: Decision is text.
	DecisionClass string

	Total, Blocking int
	Severities      []sevCount
	Chart           chart
	Matrix          matrix

	Noscript     []jsFinding
	NoscriptMore int

	Files      []File
	Skips      []Note
	Drops      []Note
	DropTotal  int
	Suppressed []Note
	Baseline   *Baseline
	Session    *Session
	Notes      []string

	CSS  template.CSS
	JS   template.JS
	Data template.JS
}

type sevCount struct {
	Name  string
	Count int
}

// jsFinding is a finding in the data island, with short keys: 10,000 of
// them are a large document.
type jsFinding struct {
	ID         string     `json:"id"`
	Rule       string     `json:"rule,omitempty"`
	Category   string     `json:"cat"`
	Severity   string     `json:"sev"`
	Blocking   bool       `json:"blk,omitempty"`
	Confidence float64    `json:"conf"`
	Profile    string     `json:"prof,omitempty"`
	Path       string     `json:"path"`
	Start      int        `json:"sl"`
	End        int        `json:"el"`
	Side       string     `json:"side,omitempty"`
	Title      string     `json:"title"`
	Message    string     `json:"msg,omitempty"`
	Impact     string     `json:"imp,omitempty"`
	Evidence   string     `json:"ev,omitempty"`
	Suggestion string     `json:"sug,omitempty"`
	Snippet    *jsSnippet `json:"snip,omitempty"`
	Link       string     `json:"link,omitempty"`
	Baseline   string     `json:"base,omitempty"`
}

type jsSnippet struct {
	Start     int      `json:"s"`
	Lines     []string `json:"l"`
	MarkStart int      `json:"ms"`
	MarkEnd   int      `json:"me"`
}

type island struct {
	Severities []string    `json:"severities"`
	Baseline   bool        `json:"baseline"`
	Findings   []jsFinding `json:"findings"`
}

func build(r *Report) (*view, error) {
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
		fs[i] = finding(&r.Findings[i])
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
	v.Chart, v.Matrix = buildChart(fs, sevs)

	if len(fs) > NoscriptLimit {
		v.Noscript, v.NoscriptMore = fs[:NoscriptLimit], len(fs)-NoscriptLimit
	} else {
		v.Noscript = fs
	}

	for _, f := range r.Files {
		v.Files = append(v.Files, File{Path: line(f.Path), Status: line(f.Status), Findings: f.Findings})
	}
	slices.SortStableFunc(v.Files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
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

	data, err := marshalIsland(island{Severities: sevs, Baseline: r.Baseline != nil, Findings: fs})
	if err != nil {
		return nil, err
	}
	v.Data = template.JS(data)
	return v, nil
}

// marshalIsland encodes the data island. encoding/json escapes <, > and &
// as \u003c, \u003e and \u0026, and U+2028 and U+2029, so no "</script>",
// "<!--" or line terminator can end or confuse the script element; the
// check after is belt and braces.
func marshalIsland(d island) ([]byte, error) {
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

func finding(f *Finding) jsFinding {
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

func notes(ns []Note) []Note {
	var out []Note
	for _, n := range ns {
		out = append(out, Note{What: line(n.What), Reason: text(n.Reason), Count: n.Count})
	}
	return out
}

// line is one-line text: every hidden character, a line break included,
// is shown as its escape ("\n", "\u202e").
func line(s string) string { return textsafe.Visible(s) }

// text is prose that may run over lines: the line breaks stay (the page
// shows them with white-space: pre-wrap) and everything else hidden is
// made visible.
func text(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	if !strings.Contains(s, "\n") {
		return line(s)
	}
	parts := strings.Split(s, "\n")
	for i, p := range parts {
		parts[i] = line(p)
	}
	return strings.Join(parts, "\n")
}

// code is one line of source: tabs stay, a trailing carriage return goes,
// everything else hidden is made visible.
func code(s string) string {
	s = strings.TrimSuffix(s, "\r")
	if !strings.Contains(s, "\t") {
		return line(s)
	}
	parts := strings.Split(s, "\t")
	for i, p := range parts {
		parts[i] = line(p)
	}
	return strings.Join(parts, "\t")
}

// safeLink keeps an absolute http(s) URL with a host and drops anything
// else (javascript:, data:, relative, malformed, with user info).
func safeLink(s string) string {
	s = strings.TrimSpace(s)
	if s == "" || textsafe.Visible(s) != s || strings.ContainsAny(s, " \"'<>\\`") {
		return ""
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.User != nil || u.Opaque != "" {
		return ""
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return ""
	}
	return u.String()
}

// chart is the inline SVG: one row per category, a stacked bar of its
// findings by severity.
type chart struct {
	Width, Height int
	LabelWidth    int
	Rows          []chartRow
	Legend        []chartLegend
	Title         string
}

type chartRow struct {
	Y, TextY int
	Label    string
	Full     string
	Total    int
	TotalX   int
	Segments []chartSegment
}

type chartSegment struct {
	X, Width int
	Severity string
	Count    int
}

type chartLegend struct {
	X, TextX int
	Severity string
}

// matrix is the chart's numbers as a table, for screen readers and print.
type matrix struct {
	Severities []string
	Rows       []matrixRow
}

type matrixRow struct {
	Category string
	Counts   []int
	Total    int
}

func buildChart(fs []jsFinding, sevs []string) (chart, matrix) {
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

func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
