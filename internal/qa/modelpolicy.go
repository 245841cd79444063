package qa

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Provider is a model provider.
type Provider string

// Providers.
const (
	ProviderOpenAI    Provider = "openai"
	ProviderAnthropic Provider = "anthropic"
)

// Providers returns every provider.
func Providers() []Provider { return []Provider{ProviderOpenAI, ProviderAnthropic} }

// Reasoning is a reasoning-effort level.
type Reasoning string

// Reasoning levels in declaration order.
const (
	ReasoningNone    Reasoning = "none"
	ReasoningMinimal Reasoning = "minimal"
	ReasoningLow     Reasoning = "low"
	ReasoningMedium  Reasoning = "medium"
	ReasoningHigh    Reasoning = "high"
	ReasoningXHigh   Reasoning = "xhigh"
	ReasoningMax     Reasoning = "max"
)

// ReasoningLevels returns every reasoning level in declaration order.
func ReasoningLevels() []Reasoning {
	return []Reasoning{ReasoningNone, ReasoningMinimal, ReasoningLow, ReasoningMedium, ReasoningHigh, ReasoningXHigh, ReasoningMax}
}

// Model policy modes (seed v0.2.5).
const (
	PolicyModeConfigured  = "configured"
	PolicyModeHostDefault = "host_default"
)

// ModelSelection is the server's model policy (the anchor's on-disk policy
// file and the output of get_qa_orchestration_model_policy). Loading the file
// is the adapter's job; ParseModelSelection validates its bytes.
type ModelSelection struct {
	Provider           Provider  `json:"provider"`
	TriageModel        string    `json:"triage_model"`
	PrimaryModel       string    `json:"primary_model"`
	DeepModel          string    `json:"deep_model"`
	SynthesisModel     string    `json:"synthesis_model"`
	TriageReasoning    Reasoning `json:"triage_reasoning"`
	PrimaryReasoning   Reasoning `json:"primary_reasoning"`
	DeepReasoning      Reasoning `json:"deep_reasoning"`
	SynthesisReasoning Reasoning `json:"synthesis_reasoning"`
}

// DefaultModelSelection is the policy used when no policy file exists.
func DefaultModelSelection() ModelSelection {
	return ModelSelection{
		Provider: ProviderOpenAI, TriageModel: "gpt-6-luna", PrimaryModel: "gpt-6-sol",
		DeepModel: "gpt-6-sol", SynthesisModel: "gpt-6-sol",
		TriageReasoning: ReasoningMax, PrimaryReasoning: ReasoningMedium,
		DeepReasoning: ReasoningHigh, SynthesisReasoning: ReasoningMedium,
	}
}

// ModelPolicyInfo is the output of get_qa_orchestration_model_policy: the
// loaded selection plus the mode sessions hand out.
type ModelPolicyInfo struct {
	Mode string `json:"mode"`
	ModelSelection
}

type curatedModel struct {
	provider  Provider
	reasoning []Reasoning
}

func reasoningRange(rs ...Reasoning) []Reasoning { return rs }

// curatedModels is the reviewed catalog (anchor §7.2).
func curatedModels() map[string]curatedModel {
	lowMax := reasoningRange(ReasoningLow, ReasoningMedium, ReasoningHigh, ReasoningXHigh, ReasoningMax)
	noneMax := reasoningRange(ReasoningNone, ReasoningLow, ReasoningMedium, ReasoningHigh, ReasoningXHigh, ReasoningMax)
	noneXHigh := reasoningRange(ReasoningNone, ReasoningLow, ReasoningMedium, ReasoningHigh, ReasoningXHigh)
	m := map[string]curatedModel{
		"gpt-6-astra":               {ProviderOpenAI, lowMax},
		"gpt-6.1-sol":               {ProviderOpenAI, lowMax},
		"gpt-4.1":                   {ProviderOpenAI, reasoningRange(ReasoningNone)},
		"claude-haiku-4-5-20251001": {ProviderAnthropic, reasoningRange(ReasoningNone)},
		"claude-opus-4-6":           {ProviderAnthropic, reasoningRange(ReasoningLow, ReasoningMedium, ReasoningHigh, ReasoningMax)},
		"claude-sonnet-4-6":         {ProviderAnthropic, reasoningRange(ReasoningLow, ReasoningMedium, ReasoningHigh, ReasoningMax)},
	}
	for _, id := range []string{"gpt-6-sol", "gpt-6-luna", "gpt-5.6-sol", "gpt-5.6-terra", "gpt-5.6-luna"} {
		m[id] = curatedModel{ProviderOpenAI, noneMax}
	}
	for _, id := range []string{"gpt-5.5", "gpt-5.4", "gpt-5.4-mini", "gpt-5.4-nano"} {
		m[id] = curatedModel{ProviderOpenAI, noneXHigh}
	}
	for _, id := range []string{"claude-fable-5-1", "claude-opus-5-5", "claude-opus-5", "claude-sonnet-5", "claude-opus-4-8", "claude-opus-4-7"} {
		m[id] = curatedModel{ProviderAnthropic, lowMax}
	}
	return m
}

func providerHint(model string) (Provider, bool) {
	if c, ok := curatedModels()[model]; ok {
		return c.provider, true
	}
	for _, p := range []string{"claude-", "anthropic."} {
		if strings.HasPrefix(model, p) {
			return ProviderAnthropic, true
		}
	}
	for _, p := range []string{"gpt-", "chatgpt-", "o1", "o3", "o4", "o5", "o6"} {
		if strings.HasPrefix(model, p) {
			return ProviderOpenAI, true
		}
	}
	return "", false
}

func reasoningOptions(p Provider, model string) []Reasoning {
	if c, ok := curatedModels()[model]; ok {
		return c.reasoning
	}
	if p == ProviderAnthropic {
		return reasoningRange(ReasoningNone, ReasoningLow, ReasoningMedium, ReasoningHigh, ReasoningXHigh, ReasoningMax)
	}
	return reasoningRange(ReasoningNone, ReasoningMinimal, ReasoningLow, ReasoningMedium, ReasoningHigh, ReasoningXHigh, ReasoningMax)
}

func verified(p Provider, model string) bool {
	c, ok := curatedModels()[model]
	return ok && c.provider == p
}

// isModelID reports whether s is a safe model id: ^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$.
func isModelID(s string) bool { return isIdent(s, 128, "._-") }

// Validate checks the selection against the model-id pattern, the provider
// of every stage model and every stage's reasoning options.
func (m ModelSelection) Validate() error {
	if m.Provider != ProviderOpenAI && m.Provider != ProviderAnthropic {
		return newError(CodeInvalidModelPolicy, "provider", "must be openai or anthropic")
	}
	stages := []struct {
		name      string
		model     string
		reasoning Reasoning
	}{
		{"triage", m.TriageModel, m.TriageReasoning},
		{"primary", m.PrimaryModel, m.PrimaryReasoning},
		{"deep", m.DeepModel, m.DeepReasoning},
		{"synthesis", m.SynthesisModel, m.SynthesisReasoning},
	}
	for _, s := range stages {
		if !isModelID(s.model) {
			return newError(CodeInvalidModelPolicy, s.name+"_model", "must match ^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
		}
		if hint, ok := providerHint(s.model); ok && hint != m.Provider {
			return newError(CodeInvalidModelPolicy, s.name+"_model",
				fmt.Sprintf("%s does not belong to provider %s", s.model, m.Provider))
		}
		opts := reasoningOptions(m.Provider, s.model)
		if !slices.Contains(opts, s.reasoning) {
			names := make([]string, len(opts))
			for i, o := range opts {
				names[i] = string(o)
			}
			return newError(CodeInvalidModelPolicy, s.name+"_reasoning",
				fmt.Sprintf("%s supports %s", s.model, strings.Join(names, ", ")))
		}
	}
	return nil
}

// ParseModelSelection decodes and validates a policy file's bytes. Unknown
// keys are rejected because the policy object is closed. The four
// *_reasoning keys may be omitted (or null): the anchor's defaults apply,
// as in DefaultModelSelection (triage max, primary medium, deep high,
// synthesis medium), and a default the stage's model does not support is
// reported as such, naming the key to set.
func ParseModelSelection(data []byte) (ModelSelection, error) {
	def := DefaultModelSelection()
	m := ModelSelection{TriageReasoning: def.TriageReasoning, PrimaryReasoning: def.PrimaryReasoning,
		DeepReasoning: def.DeepReasoning, SynthesisReasoning: def.SynthesisReasoning}
	if err := decodeStrict(data, &m); err != nil {
		return ModelSelection{}, newError(CodeInvalidModelPolicy, "", err.Error())
	}
	var given map[string]json.RawMessage
	_ = json.Unmarshal(data, &given) // decodeStrict accepted it: an object
	err := m.Validate()
	var qe *Error
	if errors.As(err, &qe) && strings.HasSuffix(qe.Field, "_reasoning") {
		if raw, ok := given[qe.Field]; !ok || string(raw) == "null" {
			qe.Detail = fmt.Sprintf("omitted, so the default %s applies, but %s; set %s", defaultReasoning(def, qe.Field), qe.Detail, qe.Field)
		}
	}
	return m, err
}

// defaultReasoning is the default of one *_reasoning key.
func defaultReasoning(def ModelSelection, key string) Reasoning {
	switch key {
	case "triage_reasoning":
		return def.TriageReasoning
	case "primary_reasoning":
		return def.PrimaryReasoning
	case "deep_reasoning":
		return def.DeepReasoning
	}
	return def.SynthesisReasoning
}

// ModelPolicy is the per-step policy handed to the host. It has two wire
// shapes: {mode:"configured", provider, model, reasoning,
// reasoning_capabilities_verified} and {mode:"host_default"}.
type ModelPolicy struct {
	Mode                          string    `json:"mode"`
	Provider                      Provider  `json:"provider,omitzero"`
	Model                         string    `json:"model,omitzero"`
	Reasoning                     Reasoning `json:"reasoning,omitzero"`
	ReasoningCapabilitiesVerified bool      `json:"reasoning_capabilities_verified,omitzero"`
}

// MarshalJSON emits exactly one of the two shapes.
func (p ModelPolicy) MarshalJSON() ([]byte, error) {
	if p.Mode == PolicyModeHostDefault {
		return []byte(`{"mode":"host_default"}`), nil
	}
	type configured struct {
		Mode                          string    `json:"mode"`
		Provider                      Provider  `json:"provider"`
		Model                         string    `json:"model"`
		Reasoning                     Reasoning `json:"reasoning"`
		ReasoningCapabilitiesVerified bool      `json:"reasoning_capabilities_verified"`
	}
	return json.Marshal(configured{PolicyModeConfigured, p.Provider, p.Model, p.Reasoning, p.ReasoningCapabilitiesVerified})
}

func (m ModelSelection) policyFor(step Step, hostDefault bool) *ModelPolicy {
	if hostDefault {
		return &ModelPolicy{Mode: PolicyModeHostDefault}
	}
	var model string
	var r Reasoning
	switch step {
	case StepTriage:
		model, r = m.TriageModel, m.TriageReasoning
	case StepPrimaryReview:
		model, r = m.PrimaryModel, m.PrimaryReasoning
	case StepDeepReview:
		model, r = m.DeepModel, m.DeepReasoning
	case StepSynthesis:
		model, r = m.SynthesisModel, m.SynthesisReasoning
	default:
		return nil
	}
	return &ModelPolicy{Mode: PolicyModeConfigured, Provider: m.Provider, Model: model, Reasoning: r,
		ReasoningCapabilitiesVerified: verified(m.Provider, model)}
}
