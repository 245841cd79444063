package llm

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/diffpalhq/diffpal/findings"
)

// The answer schema's enums and the validator come from the findings
// vocabulary: DiffPal's seven categories, style included.
func TestAnswerVocabularyIsTheFindingsVocabulary(t *testing.T) {
	var s struct {
		Properties struct {
			Candidates struct {
				Items struct {
					Properties struct {
						Category struct{ Enum []string } `json:"category"`
						Severity struct{ Enum []string } `json:"severity"`
					} `json:"properties"`
				} `json:"items"`
			} `json:"candidates"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(AnswerSchema, &s); err != nil {
		t.Fatal(err)
	}
	p := s.Properties.Candidates.Items.Properties
	if !slices.Equal(p.Category.Enum, findings.CategoryNames()) || !slices.Contains(p.Category.Enum, "style") {
		t.Errorf("category enum = %v, want %v", p.Category.Enum, findings.CategoryNames())
	}
	if !slices.Equal(p.Severity.Enum, findings.SeverityNames()) {
		t.Errorf("severity enum = %v", p.Severity.Enum)
	}
	if !slices.Equal(Categories, findings.CategoryNames()) {
		t.Errorf("validator categories = %v", Categories)
	}
}
