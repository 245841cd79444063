package findings

import (
	"fmt"
	"strings"
)

// Bundle versions.
const (
	V1 = "v1"
	V2 = "v2"
	V3 = "v3"
	// V4 is DiffPal's newest format (changed_span.side required). diffpal reads
	// and validates it but never writes it unless the caller asks.
	V4 = "v4"

	// CurrentVersion is what new writes use when the caller set no version.
	CurrentVersion = V3

	// DefaultPath is where diffpal writes and looks for the bundle.
	DefaultPath = ".artifacts/diffpal/findings.json"
)

// Bundle is the canonical findings bundle. Field order is the order written.
type Bundle struct {
	Version       string      `json:"version"`
	ReviewID      string      `json:"review_id"`
	BaseSHA       string      `json:"base_sha"`
	HeadSHA       string      `json:"head_sha"`
	Repo          string      `json:"repo,omitempty"`
	Language      string      `json:"language,omitempty"`
	Prompt        *Prompt     `json:"prompt,omitempty"`
	Inspection    *Inspection `json:"inspection,omitempty"`
	ChangeSummary []string    `json:"change_summary,omitempty"`
	ReviewResult  string      `json:"review_result,omitempty"`
	Files         []File      `json:"files,omitempty"`
	// FingerprintVersion names the recipe of every stable_id in the bundle.
	FingerprintVersion string `json:"fingerprint_version,omitempty"`
	// Gate records the policy the blocking flags were computed with.
	Gate     *GatePolicy `json:"gate,omitempty"`
	Findings []Finding   `json:"findings"`
}

// Prompt is prompt metadata.
type Prompt struct {
	PromptID      string `json:"prompt_id,omitempty"`
	PromptVersion string `json:"prompt_version,omitempty"`
	Purpose       string `json:"purpose,omitempty"`
	SchemaVersion string `json:"schema_version,omitempty"`
}

// Inspection is provider inspection metadata.
type Inspection struct {
	ProviderType     string   `json:"provider_type,omitempty"`
	Required         bool     `json:"required"`
	ToolCalls        []string `json:"tool_calls,omitempty"`
	DiffInspected    bool     `json:"diff_inspected"`
	ContextInspected bool     `json:"context_inspected"`
}

// File is one reviewed file.
type File struct {
	Path   string `json:"path"`
	Status string `json:"status,omitempty"`

	seen, bad fieldSet
}

// GatePolicy is the threshold that decides blocking.
type GatePolicy struct {
	BlockOn       Severity `json:"block_on"`
	MinConfidence *float64 `json:"min_confidence,omitempty"`
}

// Finding is one review finding.
type Finding struct {
	ID             string    `json:"id"`
	ReviewID       string    `json:"review_id"`
	StableID       string    `json:"stable_id,omitempty"`
	RuleID         string    `json:"rule_id,omitempty"`
	Category       string    `json:"category"`
	Severity       Severity  `json:"severity"`
	Confidence     float64   `json:"confidence"`
	Path           string    `json:"path"`
	StartLine      int       `json:"start_line"`
	EndLine        int       `json:"end_line"`
	ChangedSpan    *Span     `json:"changed_span,omitempty"`
	SupportingSpan *Span     `json:"supporting_span,omitempty"`
	Title          string    `json:"title"`
	Message        string    `json:"message"`
	Evidence       *Evidence `json:"evidence"`
	Impact         *Impact   `json:"impact"`
	Suggestion     string    `json:"suggestion,omitempty"`
	Blocking       bool      `json:"blocking"`
	Provider       string    `json:"provider,omitempty"`

	// seen records which fields were present in decoded JSON, so validation
	// can tell "missing" from "empty" (bit 31 marks "decoded"); it is zero
	// for values built in Go, where a zero value counts as missing. bad
	// holds fields whose JSON type the decoder already rejected.
	seen, bad fieldSet
}

// Span is a line span in one file.
type Span struct {
	Path      string `json:"path"`
	StartLine int    `json:"start_line"`
	EndLine   int    `json:"end_line"`
	// Side is LEFT or RIGHT (v4). Empty means RIGHT.
	Side string `json:"side,omitempty"`

	seen, bad fieldSet
}

// Evidence says why a finding is grounded in the change.
type Evidence struct {
	Anchor         string `json:"anchor"`
	ReasoningBasis string `json:"reasoning_basis"`
	Source         string `json:"source"`

	seen, bad fieldSet
}

// Impact says what happens if the finding is not addressed.
type Impact struct {
	Summary string `json:"summary"`
	Scope   string `json:"scope"`

	seen, bad fieldSet
}

// Text is the evidence text that enters DiffPal's id recipe: the non-empty
// trimmed anchor, reasoning basis and source joined by single spaces.
func (e *Evidence) Text() string {
	if e == nil {
		return ""
	}
	parts := make([]string, 0, 3)
	for _, s := range [...]string{e.Anchor, e.ReasoningBasis, e.Source} {
		if s = strings.TrimSpace(s); s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, " ")
}

// Severity is low, medium, high or critical.
type Severity string

// Severities in rank order.
const (
	Low      Severity = "low"
	Medium   Severity = "medium"
	High     Severity = "high"
	Critical Severity = "critical"
)

// Severities lists every severity from lowest to highest. It is the one
// source of the severity vocabulary: schemas, completions, config
// validation, rule packs and the model answer schema derive from it.
var Severities = [...]Severity{Low, Medium, High, Critical}

// SeverityNames returns Severities as strings, lowest first.
func SeverityNames() []string {
	out := make([]string, len(Severities))
	for i, s := range Severities {
		out[i] = string(s)
	}
	return out
}

// Categories is the finding taxonomy, DiffPal's seven categories. The
// bundle schema leaves category open (other producers may use others);
// diffpal's own producers — rule packs and model answers — use these.
var Categories = [...]string{"security", "correctness", "reliability", "performance", "maintainability", "testing", "style"}

// CategoryNames returns a copy of Categories.
func CategoryNames() []string { return append([]string(nil), Categories[:]...) }

// Rank is 1..4 for low..critical and 0 for anything else.
func (s Severity) Rank() int {
	switch s {
	case Low:
		return 1
	case Medium:
		return 2
	case High:
		return 3
	case Critical:
		return 4
	}
	return 0
}

// ParseSeverity accepts a severity in any case and surrounding space.
func ParseSeverity(s string) (Severity, error) {
	v := Severity(strings.ToLower(strings.TrimSpace(s)))
	if v.Rank() == 0 {
		return "", fmt.Errorf("invalid severity %q: want one of low, medium, high, critical", s)
	}
	return v, nil
}
