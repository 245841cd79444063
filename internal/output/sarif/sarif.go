// Package sarif converts a findings bundle to SARIF 2.1.0 for code-scanning
// hosts. It owns only the conversion; reading and writing bundles belongs to
// package findings.
package sarif

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/textsafe"
)

// FingerprintKey is the partialFingerprints key carrying stable_id. It is
// our own name: GitHub computes primaryLocationLineHash itself, and a tool
// that sends its own value under that key gets a warning per result and
// alerts that re-open whenever lines shift.
const FingerprintKey = "diffpalStableId/v1"

// SchemaURI is the SARIF 2.1.0 schema the output declares.
const SchemaURI = "https://json.schemastore.org/sarif-2.1.0.json"

// Tool describes the producing tool.
type Tool struct {
	Name           string
	Version        string
	InformationURI string
}

// Log is a SARIF log with the subset of fields diffpal writes.
type Log struct {
	Schema  string `json:"$schema"`
	Version string `json:"version"`
	Runs    []Run  `json:"runs"`
}

// Run is one SARIF run.
type Run struct {
	Tool    ToolComponent `json:"tool"`
	Results []Result      `json:"results"`
}

// ToolComponent wraps the driver.
type ToolComponent struct {
	Driver Driver `json:"driver"`
}

// Driver is the analysis tool and its rules.
type Driver struct {
	Name           string `json:"name"`
	Version        string `json:"version,omitempty"`
	SemanticVer    string `json:"semanticVersion,omitempty"`
	InformationURI string `json:"informationUri,omitempty"`
	Rules          []Rule `json:"rules"`
}

// Rule is a reportingDescriptor.
type Rule struct {
	ID                   string         `json:"id"`
	Name                 string         `json:"name"`
	ShortDescription     Text           `json:"shortDescription"`
	DefaultConfiguration Configuration  `json:"defaultConfiguration"`
	Properties           RuleProperties `json:"properties"`
}

// Text is a SARIF message string.
type Text struct {
	Text string `json:"text"`
}

// Configuration is a reportingConfiguration.
type Configuration struct {
	Level string `json:"level"`
}

// RuleProperties carry GitHub's security-severity and our category.
type RuleProperties struct {
	Category         string   `json:"category"`
	SecuritySeverity string   `json:"security-severity"`
	Tags             []string `json:"tags,omitempty"`
}

// Result is one finding.
type Result struct {
	RuleID              string            `json:"ruleId"`
	RuleIndex           int               `json:"ruleIndex"`
	Level               string            `json:"level"`
	Message             Text              `json:"message"`
	Locations           []Location        `json:"locations"`
	PartialFingerprints map[string]string `json:"partialFingerprints,omitempty"`
	Properties          ResultProperties  `json:"properties"`
}

// ResultProperties carry the bundle's own fields.
type ResultProperties struct {
	ID         string  `json:"id,omitempty"`
	StableID   string  `json:"stable_id,omitempty"`
	Severity   string  `json:"severity"`
	Confidence float64 `json:"confidence"`
	Blocking   bool    `json:"blocking"`
	Provider   string  `json:"provider,omitempty"`
	// RemovedLines is "start-end" of the old file for findings about
	// removed lines (changed_span.side LEFT).
	RemovedLines string `json:"removed_lines,omitempty"`
}

// Location is a physical location.
type Location struct {
	PhysicalLocation PhysicalLocation `json:"physicalLocation"`
}

// PhysicalLocation is a file region.
type PhysicalLocation struct {
	ArtifactLocation ArtifactLocation `json:"artifactLocation"`
	// Region is nil for findings on removed lines: their line numbers
	// belong to the old file, and the artifact is the new one.
	Region *Region `json:"region,omitempty"`
}

// ArtifactLocation is a repository-relative URI.
type ArtifactLocation struct {
	URI       string `json:"uri"`
	URIBaseID string `json:"uriBaseId"`
}

// Region is a line range.
type Region struct {
	StartLine int `json:"startLine"`
	EndLine   int `json:"endLine"`
}

// Level maps a severity to a SARIF level: critical and high are errors,
// medium a warning, low a note.
func Level(s findings.Severity) string {
	switch s {
	case findings.Critical, findings.High:
		return "error"
	case findings.Medium:
		return "warning"
	}
	return "note"
}

// SecuritySeverity maps a severity into GitHub's CVSS-like bands
// (critical >= 9.0, high 7.0-8.9, medium 4.0-6.9, low 0.1-3.9).
func SecuritySeverity(s findings.Severity) string {
	switch s {
	case findings.Critical:
		return "9.5"
	case findings.High:
		return "8.0"
	case findings.Medium:
		return "5.5"
	}
	return "2.0"
}

// Convert builds a SARIF log with one run: one rule per category (its
// default level from the most severe finding of that category) and one
// result per finding, each with an explicit level so that consumers reading
// only result.level see the same gate.
//
// Every result carries partialFingerprints: a finding without a stable_id
// (or id), as in bundles written by other producers such as the seed's
// minimal example, gets the one Normalize would give it
// (findings.FillIDs). b itself is not changed. Write writes the same log
// without building it.
func Convert(b *findings.Bundle, tool Tool) *Log {
	b = withIDs(b)
	var rs Rules
	for i := range b.Findings {
		rs.Add(&b.Findings[i])
	}
	rules, index := rs.rules()
	results := make([]Result, 0, len(b.Findings))
	for i := range b.Findings {
		results = append(results, result(&b.Findings[i], index))
	}
	return &Log{
		Schema:  SchemaURI,
		Version: "2.1.0",
		Runs: []Run{{
			Tool:    ToolComponent{Driver: driver(tool, rules)},
			Results: results,
		}},
	}
}

func driver(tool Tool, rules []Rule) Driver {
	return Driver{
		Name: tool.Name, Version: tool.Version, SemanticVer: semver(tool.Version),
		InformationURI: tool.InformationURI, Rules: rules,
	}
}

// Rules collects what tool.driver.rules needs from every finding: the
// most severe severity of each category (one entry per category).
type Rules struct {
	worst map[string]*findings.Severity
	// missing is set when a finding lacks an id or a stable id.
	missing bool
}

// Add counts f (its strings are not kept: f may be a streamed finding).
func (rs *Rules) Add(f *findings.Finding) {
	if f.ID == "" || f.StableID == "" {
		rs.missing = true
	}
	if rs.worst == nil {
		rs.worst = map[string]*findings.Severity{}
	}
	// Updated through the pointer: assigning to the map again would
	// replace the key with f's string, which a streamed finding reuses.
	if cur, ok := rs.worst[f.Category]; !ok {
		s := findings.Severity(strings.Clone(string(f.Severity)))
		rs.worst[strings.Clone(f.Category)] = &s
	} else if f.Severity.Rank() > cur.Rank() {
		*cur = findings.Severity(strings.Clone(string(f.Severity)))
	}
}

func (rs *Rules) rules() ([]Rule, map[string]int) {
	cats := make([]string, 0, len(rs.worst))
	for c := range rs.worst {
		cats = append(cats, c)
	}
	slices.Sort(cats)
	index := make(map[string]int, len(cats))
	rules := make([]Rule, len(cats))
	for i, c := range cats {
		index[c] = i
		w := *rs.worst[c]
		rules[i] = Rule{
			ID:                   c,
			Name:                 ruleName(textsafe.Visible(c)),
			ShortDescription:     Text{Text: "diffpal " + PlainText(c) + " finding"},
			DefaultConfiguration: Configuration{Level: Level(w)},
			Properties:           RuleProperties{Category: c, SecuritySeverity: SecuritySeverity(w), Tags: []string{textsafe.Visible(c)}},
		}
	}
	return rules, index
}

// result is f's SARIF result; index maps categories to rule indexes.
func result(f *findings.Finding, index map[string]int) Result {
	r := Result{
		RuleID:    f.Category,
		RuleIndex: index[f.Category],
		Level:     Level(f.Severity),
		Message:   Text{Text: messageText(f)},
		Locations: []Location{{PhysicalLocation: PhysicalLocation{
			ArtifactLocation: ArtifactLocation{URI: PathURI(f.Path), URIBaseID: "%SRCROOT%"},
		}}},
		Properties: ResultProperties{
			ID: f.ID, StableID: f.StableID, Severity: string(f.Severity),
			Confidence: f.Confidence, Blocking: f.Blocking, Provider: f.Provider,
		},
	}
	if f.ChangedSpan != nil && f.ChangedSpan.Side == "LEFT" {
		r.Properties.RemovedLines = fmt.Sprintf("%d-%d", f.StartLine, f.EndLine)
		r.Message.Text = fmt.Sprintf("(removed lines %d-%d) %s", f.StartLine, f.EndLine, r.Message.Text)
	} else {
		r.Locations[0].PhysicalLocation.Region = &Region{StartLine: f.StartLine, EndLine: f.EndLine}
	}
	if f.StableID != "" {
		r.PartialFingerprints = map[string]string{FingerprintKey: f.StableID}
	}
	return r
}

// withIDs returns b when every finding has an id and a stable id, else a
// copy (sharing everything but the findings slice) with the missing ones
// computed.
func withIDs(b *findings.Bundle) *findings.Bundle {
	if !findings.MissingIDs(b.Findings) {
		return b
	}
	c := *b
	c.Findings = slices.Clone(b.Findings)
	findings.FillIDs(&c, "")
	return &c
}

// Encode writes the log as indented JSON.
func Encode(w io.Writer, l *Log) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(l)
}

// Write writes the SARIF log of b, byte for byte Encode(w, Convert(b,
// tool)), without building it: a Writer over b's findings. It is what
// review's diffpal.sarif is written with.
func Write(w io.Writer, b *findings.Bundle, tool Tool) error {
	b = withIDs(b)
	var rs Rules
	for i := range b.Findings {
		rs.Add(&b.Findings[i])
	}
	sw, err := NewWriter(w, tool, &rs)
	if err != nil {
		return err
	}
	for i := range b.Findings {
		if err := sw.Result(&b.Findings[i]); err != nil {
			return err
		}
	}
	return sw.Close()
}

// WriteFile writes the SARIF log of a bundle read from a file, byte for
// byte Encode(w, Convert(b, tool)) of the same bundle decoded in memory,
// holding one finding at a time: rs must have seen every finding of the
// scan (findings.ScanFile's each calling rs.Add). The results are written
// in a second pass over bf; a bundle with findings that lack ids takes
// one more first (findings.IDFiller).
func WriteFile(w io.Writer, bf *findings.BundleFile, rs *Rules, tool Tool) error {
	var ids *findings.IDFiller
	if rs.missing {
		ids = findings.NewIDFiller(bf.Header, "")
		if err := bf.Each(func(_ int, f *findings.Finding) error { ids.Add(f); return nil }); err != nil {
			return err
		}
		ids.Done()
	}
	sw, err := NewWriter(w, tool, rs)
	if err != nil {
		return err
	}
	if err := bf.Each(func(_ int, f *findings.Finding) error {
		if ids != nil {
			ids.Fill(f)
		}
		return sw.Result(f)
	}); err != nil {
		return err
	}
	return sw.Close()
}

// Writer writes a SARIF log one result at a time, for bundles that are
// not in memory (diffpal sarif): the rules, which need every finding
// (Rules, a first pass), at NewWriter, then each finding's result, then
// the end. Memory is the rules and one result. The bytes are Encode's of
// Convert's log for the same findings.
type Writer struct {
	bw    *bufio.Writer
	index map[string]int
	buf   bytes.Buffer
	enc   *json.Encoder
	n     int
	tail  []byte
}

// NewWriter writes the log up to its results through a buffer that Close
// flushes.
func NewWriter(w io.Writer, tool Tool, rs *Rules) (*Writer, error) {
	rules, index := rs.rules()
	var head bytes.Buffer
	if err := Encode(&head, &Log{Schema: SchemaURI, Version: "2.1.0", Runs: []Run{{
		Tool: ToolComponent{Driver: driver(tool, rules)}, Results: []Result{},
	}}}); err != nil {
		return nil, err
	}
	// Results is the last field of the only run: the log ends with
	// `"results": []` and the closing brackets.
	const empty = `"results": []`
	h := head.Bytes()
	at := bytes.LastIndex(h, []byte(empty))
	if at < 0 {
		return nil, errors.New("sarif: internal: no results array")
	}
	sw := &Writer{bw: bufio.NewWriterSize(w, 256<<10), index: index}
	sw.bw.Write(h[:at+len(empty)-1]) // up to the '['
	sw.tail = slices.Clone(h[at+len(empty):])
	sw.enc = json.NewEncoder(&sw.buf)
	sw.enc.SetIndent(resultIndent, "  ")
	sw.enc.SetEscapeHTML(false)
	return sw, nil
}

// resultIndent is the indentation of a result in the log.
const resultIndent = "        "

// Result writes f's result; f must carry its ids (findings.IDFiller) as
// Convert's would.
func (sw *Writer) Result(f *findings.Finding) error {
	sw.buf.Reset()
	if err := sw.enc.Encode(result(f, sw.index)); err != nil {
		return err
	}
	if sw.n > 0 {
		sw.bw.WriteByte(',')
	}
	sw.n++
	sw.bw.WriteString("\n" + resultIndent)
	_, err := sw.bw.Write(bytes.TrimSuffix(sw.buf.Bytes(), []byte("\n")))
	return err
}

// Close ends the log and flushes it.
func (sw *Writer) Close() error {
	if sw.n > 0 {
		sw.bw.WriteString("\n      ")
	}
	sw.bw.WriteByte(']')
	sw.bw.Write(sw.tail)
	return sw.bw.Flush()
}

// PathURI turns a repository-relative path into a relative URI reference
// (RFC 3986), percent-encoding each segment: controls and line breaks,
// spaces, '#', '?', '%', brackets, backslashes and non-ASCII bytes become
// %XX, and so does every ':', so that no first segment ("javascript:x",
// "C:x") reads as a scheme and the reference stays relative to its
// uriBaseId.
func PathURI(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = strings.ReplaceAll(url.PathEscape(s), ":", "%3A")
	}
	return strings.Join(segs, "/")
}

// PlainText makes s safe as a SARIF plain-text message (message.text,
// SARIF 2.1.0 §3.11.3): control, bidirectional and other invisible
// characters are shown as escapes (textsafe.Visible), and square brackets
// are backslash-escaped (§3.11.6), so a title or message from the reviewed
// repository cannot form an embedded link such as
// "[x](javascript:alert(1))" in a viewer that renders them. A run of
// backslashes right before a bracket is doubled so the escape cannot be
// cancelled. diffpal writes no message.markdown.
func PlainText(s string) string {
	v := textsafe.Visible(s)
	if !strings.ContainsAny(v, "[]") {
		return v
	}
	var b strings.Builder
	b.Grow(len(v) + 8)
	for i := 0; i < len(v); {
		j := i
		for j < len(v) && v[j] == '\\' {
			j++
		}
		if j < len(v) && (v[j] == '[' || v[j] == ']') {
			b.WriteString(strings.Repeat(`\\`, j-i))
			b.WriteByte('\\')
			b.WriteByte(v[j])
			i = j + 1
			continue
		}
		if j > i {
			b.WriteString(v[i:j])
			i = j
			continue
		}
		b.WriteByte(v[i])
		i++
	}
	return b.String()
}

func messageText(f *findings.Finding) string {
	t, m := strings.TrimSpace(f.Title), strings.TrimSpace(f.Message)
	switch {
	case t == "":
		return PlainText(m)
	case m == "" || m == t:
		return PlainText(t)
	}
	return PlainText(t + ": " + m)
}

// ruleName is a PascalCase rendering of a category, as SARIF viewers show it.
func ruleName(c string) string {
	var b strings.Builder
	up := true
	for _, r := range c {
		if r == '_' || r == '-' || r == ' ' || r == '.' || r == '/' {
			up = true
			continue
		}
		if up {
			b.WriteString(strings.ToUpper(string(r)))
			up = false
		} else {
			b.WriteRune(r)
		}
	}
	if b.Len() == 0 {
		return "Finding"
	}
	return b.String()
}

// semver returns v when it looks like a semantic version, else "".
func semver(v string) string {
	v = strings.TrimPrefix(v, "v")
	if v == "" || v[0] < '0' || v[0] > '9' || strings.Count(strings.SplitN(strings.SplitN(v, "+", 2)[0], "-", 2)[0], ".") != 2 {
		return ""
	}
	return v
}
