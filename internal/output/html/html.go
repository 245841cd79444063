package html

import (
	"bufio"
	"bytes"
	"cmp"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

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

	// pageTemplate is parsed on first use (or by Prewarm), not when the
	// package initialises: every command paid for parsing it before main.
	// It is also escaped then: html/template works out each action's
	// context on the first Execute, about half of writing a small report;
	// executing once on no data (which stops at the first field, into
	// io.Discard) does that here instead.
	pageTemplate = sync.OnceValue(func() *template.Template {
		t := template.Must(template.New("report").Parse(pageSource))
		_ = t.Execute(io.Discard, nil)
		return t
	})
)

// Prewarm parses the page template now, so that a command that will write
// a report can have it parsed on another goroutine while it works.
func Prewarm() { pageTemplate() }

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
// that the inline script renders with DOM text nodes only. It is an Index
// over r's findings.
func Write(w io.Writer, r *Report) error {
	if r == nil {
		return fmt.Errorf("html: nil report")
	}
	var x Index
	x.Grow(len(r.Findings))
	for i := range r.Findings {
		x.Add(&r.Findings[i])
	}
	return x.Write(w, r, func(ord int) (*Finding, error) { return &r.Findings[ord], nil })
}

// Index collects, one finding at a time, what the page shows before its
// data island — the counts, the chart, the first NoscriptLimit findings —
// and the page's order of the findings, so that a report whose findings
// are not in memory (diffpal render) is written with one finding in
// memory at a time. It keeps, per finding, its place in the order (path,
// lines, severity, id, title, category: about 100 bytes besides the
// strings shared between findings), never its message, evidence or
// snippet.
type Index struct {
	entries  []entry
	intern   map[string]string
	bySev    map[string]*int
	cats     map[string]*catCount
	blocking int
}

// entry is a finding's place in the page's order and what the noscript
// list shows of it, as the page shows it (visible-safe).
type entry struct {
	path, sev, id, title, cat string
	start, end, rank, ord     int
	blocking                  bool
}

type catCount struct {
	total int
	by    map[string]*int
}

func (x *Index) in(s string) string {
	if v, ok := x.intern[s]; ok {
		return v
	}
	if x.intern == nil {
		x.intern = map[string]string{}
	}
	v := strings.Clone(s)
	x.intern[v] = v
	return v
}

// count adds one to m[k] without assigning to the map when k is there
// (which would make the map keep k's memory, a streamed finding's).
func count(m map[string]*int, k string) {
	if p, ok := m[k]; ok {
		*p++
		return
	}
	n := 1
	m[strings.Clone(k)] = &n
}

// Grow makes room for n more findings.
func (x *Index) Grow(n int) { x.entries = slices.Grow(x.entries, n) }

// Add records f, the next finding (its index is the order Add saw it in);
// its snippet is not read, and none of its strings is kept.
func (x *Index) Add(f *Finding) {
	j := head(f)
	e := entry{path: x.in(j.Path), sev: x.in(j.Severity), id: strings.Clone(j.ID), title: x.in(j.Title), cat: x.in(j.Category),
		start: j.Start, end: j.End, rank: severityRank(j.Severity), ord: len(x.entries), blocking: j.Blocking}
	x.entries = append(x.entries, e)
	if x.bySev == nil {
		x.bySev, x.cats = map[string]*int{}, map[string]*catCount{}
	}
	count(x.bySev, e.sev)
	if e.blocking {
		x.blocking++
	}
	c := x.cats[e.cat]
	if c == nil {
		c = &catCount{by: map[string]*int{}}
		x.cats[e.cat] = c
	}
	c.total++
	count(c.by, e.sev)
}

// islandMark stands for the data island in the rendered page: html/template
// writes a template.JS value as it is, and every other string of the page
// is escaped, so the mark can only be the island.
const islandMark = "\x00diffpal-data-island\x00"

// Write renders the page of r (its Findings are not read: the findings
// are those Add saw), fetching each finding by its index with get, in the
// page's order, to write it into the data island; the bytes are those
// Write gives for r with those findings.
func (x *Index) Write(w io.Writer, r *Report, get func(ord int) (*Finding, error)) error {
	if r == nil {
		return fmt.Errorf("html: nil report")
	}
	v := header(r)
	es := x.entries
	slices.SortFunc(es, func(a, b entry) int {
		return cmp.Or(
			strings.Compare(a.path, b.path),
			cmp.Compare(a.start, b.start),
			cmp.Compare(b.rank, a.rank),
			strings.Compare(a.sev, b.sev),
			cmp.Compare(a.end, b.end),
			strings.Compare(a.id, b.id),
			strings.Compare(a.title, b.title),
			cmp.Compare(a.ord, b.ord),
		)
	})
	v.Total, v.Blocking = len(es), x.blocking
	sevs := slices.Clone(severityOrder)
	var extra []string
	for s := range x.bySev {
		if severityRank(s) == 0 {
			extra = append(extra, s)
		}
	}
	slices.Sort(extra)
	sevs = append(sevs, extra...)
	for _, s := range sevs {
		n := 0
		if p := x.bySev[s]; p != nil {
			n = *p
		}
		v.Severities = append(v.Severities, sevCount{s, n})
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
	v.Chart, v.Matrix = buildChart(x.cats, sevs)
	shown := es
	if len(es) > NoscriptLimit {
		shown, v.NoscriptMore = es[:NoscriptLimit], len(es)-NoscriptLimit
	}
	v.Noscript = make([]jsFinding, len(shown))
	for i, e := range shown {
		v.Noscript[i] = jsFinding{ID: e.id, Category: e.cat, Severity: e.sev, Blocking: e.blocking, Path: e.path, Start: e.start, End: e.end, Title: e.title}
	}
	v.Data = template.JS(islandMark)
	var page bytes.Buffer
	if err := pageTemplate().Execute(&page, v); err != nil {
		return fmt.Errorf("html: %w", err)
	}
	pre, post, ok := bytes.Cut(page.Bytes(), []byte(islandMark))
	if !ok || bytes.Contains(post, []byte(islandMark)) {
		return fmt.Errorf("html: internal: the data island's place is not unique")
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	bw.Write(pre)
	head, err := marshalIsland(island{Severities: sevs, Baseline: r.Baseline != nil, Findings: []jsFinding{}})
	if err != nil {
		return err
	}
	// The island ends with the empty findings array: `[]}`.
	bw.Write(head[:len(head)-2])
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(true)
	for i, e := range es {
		f, err := get(e.ord)
		if err != nil {
			return err
		}
		buf.Reset()
		if err := enc.Encode(finding(f)); err != nil {
			return fmt.Errorf("html: %w", err)
		}
		out := bytes.TrimRight(buf.Bytes(), "\n")
		if unescaped(out) {
			return fmt.Errorf("html: data island is not escaped")
		}
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.Write(out)
	}
	bw.WriteString("]}")
	bw.Write(post)
	return bw.Flush()
}

// header is the view of r's fields other than its findings.
func header(r *Report) *view {
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
	for _, f := range r.Files {
		v.Files = append(v.Files, File{Path: line(f.Path), Status: line(f.Status), Findings: f.Findings})
	}
	slices.SortStableFunc(v.Files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	v.FileRows = fileRows(v.Files)
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
	return v
}

func unescaped(out []byte) bool {
	return bytes.ContainsAny(out, "<>&") || bytes.Contains(out, []byte("\u2028")) || bytes.Contains(out, []byte("\u2029"))
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

	Files []File
	// FileRows is Files' table rows, written here rather than by the
	// template: a review of 2,000 files spent ~10 ms of its final,
	// single-goroutine HTML output in the template's escaper calls for
	// them (go tool pprof; docs/benchmarks.md, twelfth round).
	// TestFileRowsAsTemplate holds it to what the template wrote.
	FileRows   template.HTML
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
	if unescaped(out) {
		return nil, fmt.Errorf("html: data island is not escaped")
	}
	return out, nil
}

func finding(f *Finding) jsFinding {
	j := head(f)
	j.Rule = line(f.RuleID)
	j.Confidence = f.Confidence
	j.Profile = line(f.Profile)
	j.Side = line(f.Side)
	j.Message = text(f.Message)
	j.Impact = text(f.Impact)
	j.Evidence = text(f.Evidence)
	j.Suggestion = text(f.Suggestion)
	j.Link = safeLink(f.Link)
	j.Baseline = line(f.Baseline)
	if s := f.Snippet; s != nil && len(s.Lines) > 0 {
		js := &jsSnippet{Start: s.Start, MarkStart: s.MarkStart, MarkEnd: s.MarkEnd, Lines: make([]string, len(s.Lines))}
		for i, l := range s.Lines {
			js.Lines[i] = code(l)
		}
		j.Snippet = js
	}
	return j
}

// head is what the page's order, counts and noscript list read of a
// finding.
func head(f *Finding) jsFinding {
	j := jsFinding{
		ID:       line(f.StableID),
		Category: line(strings.TrimSpace(f.Category)),
		Severity: line(strings.ToLower(strings.TrimSpace(f.Severity))),
		Blocking: f.Blocking,
		Path:     line(f.Path),
		Start:    f.StartLine,
		End:      f.EndLine,
		Title:    line(f.Title),
	}
	if j.End < j.Start {
		j.End = j.Start
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

func buildChart(counts map[string]*catCount, sevs []string) (chart, matrix) {
	type cat struct {
		name  string
		total int
		by    map[string]int
	}
	var cats []*cat
	for name, cc := range counts {
		c := &cat{name: name, total: cc.total, by: map[string]int{}}
		for s, n := range cc.by {
			c.by[s] = *n
		}
		cats = append(cats, c)
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

// fileRows is the files table's rows as the template wrote them, each on
// a line of its own after the <tbody> line: {{- range .Files}}
// "\n<tr><th scope="row"><code>{{.Path}}</code></th><td>{{.Status}}</td><td>{{.Findings}}</td></tr>"
// {{- end}}, escaped as html/template escapes text (htmlText).
func fileRows(files []File) template.HTML {
	var b strings.Builder
	for _, f := range files {
		b.WriteString("\n<tr><th scope=\"row\"><code>")
		htmlText(&b, f.Path)
		b.WriteString("</code></th><td>")
		htmlText(&b, f.Status)
		b.WriteString("</td><td>")
		b.WriteString(strconv.Itoa(f.Findings))
		b.WriteString("</td></tr>")
	}
	return template.HTML(b.String())
}

// htmlText writes s escaped as html/template escapes a string in text:
// its replacement table (NUL, quotes, &, +, <, >), byte by byte, which
// is the same as rune by rune since every byte it replaces is ASCII and
// it leaves everything else, invalid UTF-8 included, as it is.
func htmlText(b *strings.Builder, s string) {
	last := 0
	for i := 0; i < len(s); i++ {
		var r string
		switch s[i] {
		case 0:
			r = "\uFFFD"
		case '"':
			r = "&#34;"
		case '&':
			r = "&amp;"
		case '\'':
			r = "&#39;"
		case '+':
			r = "&#43;"
		case '<':
			r = "&lt;"
		case '>':
			r = "&gt;"
		default:
			continue
		}
		b.WriteString(s[last:i])
		b.WriteString(r)
		last = i + 1
	}
	b.WriteString(s[last:])
}
