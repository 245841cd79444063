package qa

import (
	"strings"
	"testing"
)

// TestModelPolicyOmittedReasoningUsesDefaults: a policy file may leave out
// the *_reasoning keys (issue 9, item 6). The anchor's defaults apply (max,
// medium, high, medium), and when a default does not suit the stage's
// model the message says the key was omitted and names it, instead of only
// listing the model's levels as if the file had chosen one.
func TestModelPolicyOmittedReasoningUsesDefaults(t *testing.T) {
	def := DefaultModelSelection()
	m, err := ParseModelSelection([]byte(`{"provider":"anthropic","triage_model":"claude-sonnet-4-6",
		"primary_model":"claude-opus-4-6","deep_model":"claude-opus-4-6","synthesis_model":"claude-sonnet-4-6"}`))
	if err != nil {
		t.Fatalf("policy without reasoning keys refused: %v", err)
	}
	if m.TriageReasoning != def.TriageReasoning || m.PrimaryReasoning != def.PrimaryReasoning ||
		m.DeepReasoning != def.DeepReasoning || m.SynthesisReasoning != def.SynthesisReasoning {
		t.Fatalf("reasoning = %s/%s/%s/%s, want the defaults %s/%s/%s/%s", m.TriageReasoning, m.PrimaryReasoning,
			m.DeepReasoning, m.SynthesisReasoning, def.TriageReasoning, def.PrimaryReasoning, def.DeepReasoning, def.SynthesisReasoning)
	}

	// Some keys given, others omitted or null: given ones win, the rest default.
	m, err = ParseModelSelection([]byte(`{"provider":"openai","triage_model":"gpt-6-luna","primary_model":"gpt-6-sol",
		"deep_model":"gpt-6-sol","synthesis_model":"gpt-6-sol","primary_reasoning":"low","deep_reasoning":null}`))
	if err != nil {
		t.Fatal(err)
	}
	if m.PrimaryReasoning != ReasoningLow || m.TriageReasoning != ReasoningMax || m.DeepReasoning != ReasoningHigh {
		t.Fatalf("mixed: %+v", m)
	}

	// gpt-4.1 only supports none: the omitted triage default (max) cannot apply.
	_, err = ParseModelSelection([]byte(`{"provider":"openai","triage_model":"gpt-4.1","primary_model":"gpt-6-sol",
		"deep_model":"gpt-6-sol","synthesis_model":"gpt-6-sol"}`))
	wantErr(t, err, CodeInvalidModelPolicy, "triage_reasoning")
	for _, want := range []string{"omitted", "default max", "gpt-4.1 supports none", "set triage_reasoning"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	// A level the file did choose keeps the plain message.
	_, err = ParseModelSelection([]byte(`{"provider":"openai","triage_model":"gpt-4.1","primary_model":"gpt-6-sol",
		"deep_model":"gpt-6-sol","synthesis_model":"gpt-6-sol","triage_reasoning":"high"}`))
	wantErr(t, err, CodeInvalidModelPolicy, "triage_reasoning")
	if strings.Contains(err.Error(), "omitted") {
		t.Errorf("explicit level reported as omitted: %v", err)
	}
}
