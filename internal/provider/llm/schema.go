package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/clip"
)

// AnswerSchemaName names the profile answer schema (OpenAI json_schema
// name, Anthropic tool name).
const AnswerSchemaName = "diffpal_profile_answer"

// Categories a candidate may have: the findings taxonomy (DiffPal's seven,
// style included), from the one source in package findings.
var Categories = findings.CategoryNames()

// Severities a candidate may have, from package findings.
var Severities = findings.SeverityNames()

// Answer limits, enforced by Validate (the schema keeps to the keywords
// every structured-output dialect accepts; limits are stated in the
// descriptions and checked here).
const (
	MaxCandidates   = 50
	MaxNotes        = 50
	MaxTitle        = 256
	MaxDescription  = 5000
	MaxText         = 2000
	MaxAnchor       = 500
	MaxEvidenceRefs = 32
)

// AnswerSchema is the JSON Schema of a profile answer. Every property is
// required and nullable where optional, and additionalProperties is false,
// so it is accepted by OpenAI strict structured outputs and by Anthropic
// tool input schemas alike.
var AnswerSchema = json.RawMessage(strings.NewReplacer(
	`"__CATEGORIES__"`, jsonList(Categories), `"__SEVERITIES__"`, jsonList(Severities)).Replace(`{
  "type": "object",
  "additionalProperties": false,
  "required": ["candidates", "coverage_gaps", "unverified"],
  "properties": {
    "candidates": {
      "type": "array",
      "description": "Possible defects on the changed lines, at most 50. Empty when there are none or when the profile reports no finding candidates.",
      "items": {
        "type": "object",
        "additionalProperties": false,
        "required": ["title", "description", "category", "severity", "confidence", "path", "start_line", "end_line",
          "evidence_refs", "impact", "impact_scope", "suggestion", "anchor", "failure_condition", "flip_condition"],
        "properties": {
          "title": {"type": "string", "description": "Short title, 1-256 characters."},
          "description": {"type": "string", "description": "What may be wrong and why, 1-5000 characters."},
          "category": {"type": "string", "enum": "__CATEGORIES__"},
          "severity": {"type": "string", "enum": "__SEVERITIES__", "description": "Impact estimate; the host may override it."},
          "confidence": {"type": "number", "description": "Evidence confidence between 0 and 1."},
          "path": {"type": "string", "description": "Path of a file shown in the evidence, exactly as shown."},
          "start_line": {"type": "integer", "description": "First new-file line (>= 1) inside the cited evidence."},
          "end_line": {"type": "integer", "description": "Last new-file line (>= start_line)."},
          "evidence_refs": {"type": "array", "items": {"type": "string"}, "description": "1-32 refs (ref=... of the evidence blocks) that support the candidate."},
          "impact": {"type": "string", "description": "Concrete effect if not addressed, 1-2000 characters."},
          "impact_scope": {"type": "string", "description": "Who or what is affected, 1-2000 characters."},
          "suggestion": {"type": ["string", "null"], "description": "How to fix it, at most 2000 characters."},
          "anchor": {"type": ["string", "null"], "description": "The exact code text of the flagged line, at most 500 characters."},
          "failure_condition": {"type": ["string", "null"], "description": "Preconditions that make the failure occur, at most 2000 characters."},
          "flip_condition": {"type": ["string", "null"], "description": "Evidence that would refute the candidate, at most 2000 characters."}
        }
      }
    },
    "coverage_gaps": {"type": "array", "items": {"type": "string"}, "description": "Up to 50 coverage gaps (untested behaviour, evidence you lacked), each at most 2000 characters."},
    "unverified": {"type": "array", "items": {"type": "string"}, "description": "Up to 50 points you could not verify, each at most 2000 characters."}
  }
}`))

// jsonList spells a vocabulary as a JSON array for the schema text.
func jsonList(vs []string) string {
	b, _ := json.Marshal(vs)
	return string(b)
}

// AnswerCandidate is one candidate as the model returns it.
type AnswerCandidate struct {
	Title            string   `json:"title"`
	Description      string   `json:"description"`
	Category         string   `json:"category"`
	Severity         string   `json:"severity"`
	Confidence       *float64 `json:"confidence"`
	Path             string   `json:"path"`
	StartLine        *float64 `json:"start_line"`
	EndLine          *float64 `json:"end_line"`
	EvidenceRefs     []string `json:"evidence_refs"`
	Impact           string   `json:"impact"`
	ImpactScope      string   `json:"impact_scope"`
	Suggestion       *string  `json:"suggestion"`
	Anchor           *string  `json:"anchor"`
	FailureCondition *string  `json:"failure_condition"`
	FlipCondition    *string  `json:"flip_condition"`
	// Message is accepted as an alias of Description (agent CLIs).
	Message string `json:"message,omitempty"`
}

// Answer is a profile answer.
type Answer struct {
	Candidates   []AnswerCandidate `json:"candidates"`
	CoverageGaps []string          `json:"coverage_gaps"`
	Unverified   []string          `json:"unverified"`
}

// Problem is one validation failure with its JSON pointer.
type Problem struct {
	Pointer string
	Reason  string
	// DropReason groups the problem for ProfileResult.Dropped.
	DropReason string
}

func (p Problem) String() string { return p.Pointer + ": " + p.Reason }

// Drop reasons, as counted in ProfileResult.Dropped.
const (
	DropMalformed    = "model candidate malformed (schema)"
	DropUnknownRef   = "model candidate cites evidence outside the selected packet"
	DropUnknownPath  = "model candidate path is not a changed file shown to the model"
	DropBadLines     = "model candidate has an invalid line range"
	DropOutsideItems = "model candidate lines outside the evidence shown for its file"
	DropNoCandidates = "profile reports no finding candidates"
	DropOverLimit    = "model answer exceeded the candidate limit"
	DropUnanchorable = "model candidate could not be anchored"
)

// scope is what an answer may refer to.
type scope struct {
	refs  map[string]bool
	paths map[string]bool
	// ranges are the line ranges of the evidence shown per path (empty:
	// no line information, any positive line is accepted).
	ranges map[string][][2]int
	// lines is the number of lines of the new file (0 unknown).
	lines map[string]int
	// real maps the path shown to the model to the file's path.
	real map[string]string
}

// stripCodeFence removes a Markdown code fence around a JSON answer, as
// agent CLIs sometimes add.
func stripCodeFence(raw []byte) []byte {
	t := bytes.TrimSpace(raw)
	if bytes.HasPrefix(t, []byte("```")) {
		if i := bytes.IndexByte(t, '\n'); i >= 0 {
			t = t[i+1:]
		}
		t = bytes.TrimSuffix(bytes.TrimSpace(t), []byte("```"))
	}
	return bytes.TrimSpace(t)
}

// parseAnswer decodes and validates an answer. fatal problems make the
// whole answer unusable; the others concern single candidates (keyed by
// index in bad) or notes, which are dropped while the rest survives.
func parseAnswer(raw []byte, sc scope) (ans Answer, fatal []Problem, bad map[int]Problem, notes []Problem) {
	raw = stripCodeFence(raw)
	bad = map[int]Problem{}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return ans, []Problem{{Pointer: "", Reason: "the answer is not a JSON object: " + clip.Text(err.Error(), 200)}}, bad, nil
	}
	for _, k := range []string{"candidates", "coverage_gaps", "unverified"} {
		if _, ok := top[k]; !ok {
			fatal = append(fatal, Problem{Pointer: "/" + k, Reason: "required property is missing"})
		}
	}
	if v, ok := top["coverage_gaps"]; ok {
		ans.CoverageGaps, notes = parseNotes(v, "/coverage_gaps", notes)
	}
	if v, ok := top["unverified"]; ok {
		ans.Unverified, notes = parseNotes(v, "/unverified", notes)
	}
	v, ok := top["candidates"]
	if !ok {
		return ans, fatal, bad, notes
	}
	var items []json.RawMessage
	if err := json.Unmarshal(v, &items); err != nil {
		fatal = append(fatal, Problem{Pointer: "/candidates", Reason: "must be an array"})
		return ans, fatal, bad, notes
	}
	for i, it := range items {
		ptr := "/candidates/" + strconv.Itoa(i)
		var c AnswerCandidate
		if err := json.Unmarshal(it, &c); err != nil {
			ans.Candidates = append(ans.Candidates, c)
			bad[i] = Problem{Pointer: ptr, Reason: "not a candidate object: " + clip.Text(err.Error(), 200), DropReason: DropMalformed}
			continue
		}
		if c.Description == "" {
			c.Description = c.Message
		}
		ans.Candidates = append(ans.Candidates, c)
		if p, ok := validateCandidate(c, ptr, sc); !ok {
			bad[i] = p
		}
	}
	if len(items) > MaxCandidates {
		for i := MaxCandidates; i < len(items); i++ {
			if _, ok := bad[i]; !ok {
				bad[i] = Problem{Pointer: "/candidates/" + strconv.Itoa(i), Reason: fmt.Sprintf("at most %d candidates are allowed; report the most important ones", MaxCandidates), DropReason: DropOverLimit}
			}
		}
	}
	return ans, fatal, bad, notes
}

func parseNotes(v json.RawMessage, ptr string, notes []Problem) ([]string, []Problem) {
	var arr []json.RawMessage
	if err := json.Unmarshal(v, &arr); err != nil {
		return nil, append(notes, Problem{Pointer: ptr, Reason: "must be an array of strings"})
	}
	var out []string
	for i, e := range arr {
		var s string
		if err := json.Unmarshal(e, &s); err != nil {
			// {text: ...} objects are accepted too.
			var o struct {
				Text string `json:"text"`
			}
			if json.Unmarshal(e, &o) != nil || o.Text == "" {
				notes = append(notes, Problem{Pointer: ptr + "/" + strconv.Itoa(i), Reason: "must be a string"})
				continue
			}
			s = o.Text
		}
		s = strings.TrimSpace(s)
		switch {
		case s == "":
			continue
		case len(out) >= MaxNotes:
			notes = append(notes, Problem{Pointer: ptr + "/" + strconv.Itoa(i), Reason: fmt.Sprintf("at most %d entries", MaxNotes)})
			continue
		}
		out = append(out, clip.Text(s, MaxText))
	}
	return out, notes
}

// validateCandidate checks schema rules, then refs, path and lines; it
// reports the first problem.
func validateCandidate(c AnswerCandidate, ptr string, sc scope) (Problem, bool) {
	schema := func(field, reason string) (Problem, bool) {
		return Problem{Pointer: ptr + "/" + field, Reason: reason, DropReason: DropMalformed}, false
	}
	switch {
	case strings.TrimSpace(c.Title) == "" || len(c.Title) > MaxTitle:
		return schema("title", fmt.Sprintf("must be 1-%d characters", MaxTitle))
	case strings.TrimSpace(c.Description) == "" || len(c.Description) > MaxDescription:
		return schema("description", fmt.Sprintf("must be 1-%d characters", MaxDescription))
	case !slices.Contains(Categories, strings.ToLower(strings.TrimSpace(c.Category))):
		return schema("category", "must be one of "+strings.Join(Categories, ", "))
	case !slices.Contains(Severities, strings.ToLower(strings.TrimSpace(c.Severity))):
		return schema("severity", "must be one of "+strings.Join(Severities, ", "))
	case c.Confidence == nil || math.IsNaN(*c.Confidence) || *c.Confidence < 0 || *c.Confidence > 1:
		return schema("confidence", "must be a number between 0 and 1")
	case strings.TrimSpace(c.Impact) == "" || len(c.Impact) > MaxText:
		return schema("impact", fmt.Sprintf("must be 1-%d characters", MaxText))
	case strings.TrimSpace(c.ImpactScope) == "" || len(c.ImpactScope) > MaxText:
		return schema("impact_scope", fmt.Sprintf("must be 1-%d characters", MaxText))
	case c.Suggestion != nil && len(*c.Suggestion) > MaxText:
		return schema("suggestion", fmt.Sprintf("must be at most %d characters", MaxText))
	case c.Anchor != nil && len(*c.Anchor) > MaxAnchor:
		return schema("anchor", fmt.Sprintf("must be at most %d characters", MaxAnchor))
	case c.FailureCondition != nil && len(*c.FailureCondition) > MaxText:
		return schema("failure_condition", fmt.Sprintf("must be at most %d characters", MaxText))
	case c.FlipCondition != nil && len(*c.FlipCondition) > MaxText:
		return schema("flip_condition", fmt.Sprintf("must be at most %d characters", MaxText))
	case len(c.EvidenceRefs) == 0 || len(c.EvidenceRefs) > MaxEvidenceRefs:
		return schema("evidence_refs", fmt.Sprintf("must cite 1-%d evidence refs", MaxEvidenceRefs))
	}
	for j, r := range c.EvidenceRefs {
		if !sc.refs[r] {
			return Problem{Pointer: fmt.Sprintf("%s/evidence_refs/%d", ptr, j),
				Reason:     fmt.Sprintf("%q is not the ref of an evidence block you were given; cite only %s", clip.Text(r, 80), listSome(keys(sc.refs), 40)),
				DropReason: DropUnknownRef}, false
		}
	}
	if !sc.paths[c.Path] {
		return Problem{Pointer: ptr + "/path", Reason: fmt.Sprintf("%q is not a changed file shown to you; use one of %s", clip.Text(c.Path, 200), listSome(keys(sc.paths), 20)),
			DropReason: DropUnknownPath}, false
	}
	start, sok := intOf(c.StartLine)
	end, eok := intOf(c.EndLine)
	switch {
	case !sok || start < 1:
		return Problem{Pointer: ptr + "/start_line", Reason: "must be an integer >= 1", DropReason: DropBadLines}, false
	case !eok || end < start:
		return Problem{Pointer: ptr + "/end_line", Reason: "must be an integer >= start_line", DropReason: DropBadLines}, false
	case sc.lines[c.Path] > 0 && start > sc.lines[c.Path]:
		return Problem{Pointer: ptr + "/start_line", Reason: fmt.Sprintf("%s has only %d lines", clip.Text(c.Path, 200), sc.lines[c.Path]), DropReason: DropBadLines}, false
	}
	if rs := sc.ranges[c.Path]; len(rs) > 0 {
		in := false
		var shown []string
		for _, r := range rs {
			if start <= r[1] && end >= r[0] {
				in = true
				break
			}
			shown = append(shown, fmt.Sprintf("%d-%d", r[0], r[1]))
		}
		if !in {
			return Problem{Pointer: ptr + "/start_line", Reason: fmt.Sprintf("lines %d-%d are outside the evidence shown for this file (lines %s)", start, end, listSome(shown, 20)),
				DropReason: DropOutsideItems}, false
		}
	}
	return Problem{}, true
}

func intOf(f *float64) (int, bool) {
	if f == nil || *f != math.Trunc(*f) || *f > 1e9 || *f < -1e9 {
		return 0, false
	}
	return int(*f), true
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func listSome(xs []string, n int) string {
	if len(xs) == 0 {
		return "(none)"
	}
	q := make([]string, 0, min(n, len(xs)))
	for i, x := range xs {
		if i == n {
			break
		}
		q = append(q, strconv.Quote(x))
	}
	s := strings.Join(q, ", ")
	if len(xs) > n {
		s += fmt.Sprintf(" and %d more", len(xs)-n)
	}
	return s
}
