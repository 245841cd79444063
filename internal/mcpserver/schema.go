package mcpserver

import (
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/google/jsonschema-go/jsonschema"
)

// Schemas are inferred from the qa wire types (jsonschema-go, as the SDK
// does) with one addition: every Go string type with a fixed value set is
// published as an enum, so hosts see the allowed values and the SDK rejects
// anything else before the library runs. The library still validates the
// same values itself, so in-process callers are held to the same rules.

func enumOf[T ~string](vals ...T) *jsonschema.Schema {
	e := make([]any, len(vals))
	for i, v := range vals {
		e[i] = string(v)
	}
	return &jsonschema.Schema{Type: "string", Enum: e}
}

// allSteps is every Step value; qa exports only the completable ones.
func allSteps() []qa.Step { return append(qa.CompletableSteps(), qa.StepAwaitingHostOutcome) }

// policyModes are the two model_policy shapes (seed v0.2.5).
func policyModes() []string { return []string{qa.PolicyModeConfigured, qa.PolicyModeHostDefault} }

// enumTypes maps each fixed-value string type to its schema. The lists are
// spelled out here for the types qa does not enumerate (its validators are
// unexported); TestSchemaEnums pins the published values.
func enumTypes() map[reflect.Type]*jsonschema.Schema {
	return map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[qa.TaskType](): enumOf(qa.TaskTypes()...),
		reflect.TypeFor[qa.Outcome]():  enumOf(qa.Outcomes()...),
		reflect.TypeFor[qa.Profile]():  enumOf(qa.Profiles()...),
		reflect.TypeFor[qa.Bundle]():   enumOf(qa.Bundles()...),
		reflect.TypeFor[qa.Step]():     enumOf(allSteps()...),
		reflect.TypeFor[qa.Status](): enumOf(qa.StatusActive, qa.StatusAwaitingHostOutcome, qa.StatusCompleted,
			qa.StatusPartial, qa.StatusBlocked, qa.StatusExpired),
		reflect.TypeFor[qa.ReasonCode](): enumOf(qa.ReasonEvidenceGap, qa.ReasonCrossRepository, qa.ReasonRootCause,
			qa.ReasonHighBlastRadius, qa.ReasonHighRiskDomain, qa.ReasonEvidenceConflict, qa.ReasonNonReproducible),
		reflect.TypeFor[qa.DeepRule](): enumOf(qa.RuleHighRiskWithUncertainty, qa.RuleMultipleComplexity,
			qa.RuleCriticalEvidenceConflict),
		reflect.TypeFor[qa.Confidence](): enumOf(qa.ConfidenceHigh, qa.ConfidenceMedium, qa.ConfidenceLow),
		reflect.TypeFor[qa.Severity]():   enumOf(qa.SeverityHigh, qa.SeverityMedium, qa.SeverityLow),
		reflect.TypeFor[qa.Verdict](): enumOf(qa.VerdictConfirmed, qa.VerdictRejected, qa.VerdictDuplicate,
			qa.VerdictUnverified),
		reflect.TypeFor[qa.RefutationStatus](): enumOf(qa.RefutationRefuted, qa.RefutationNotRefuted,
			qa.RefutationUnverified),
		reflect.TypeFor[qa.EvidenceKind](): enumOf(qa.EvidenceSource, qa.EvidenceDiff, qa.EvidenceRequirement,
			qa.EvidenceRuntime, qa.EvidenceOther),
		reflect.TypeFor[qa.RuleKind](): enumOf(qa.RuleKindRaise, qa.RuleKindGuard),
		reflect.TypeFor[qa.AttemptOutcome](): enumOf(qa.AttemptCompleted, qa.AttemptRetryableError, qa.AttemptTimeout,
			qa.AttemptFailed, qa.AttemptCancelled),
		reflect.TypeFor[qa.Provider](): enumOf(qa.ProviderOpenAI, qa.ProviderAnthropic),
		reflect.TypeFor[qa.Reasoning](): enumOf(qa.ReasoningNone, qa.ReasoningMinimal, qa.ReasoningLow,
			qa.ReasoningMedium, qa.ReasoningHigh, qa.ReasoningXHigh, qa.ReasoningMax),
		reflect.TypeFor[findings.Severity](): enumOf(findings.Severities[:]...),
		reflect.TypeFor[time.Time]():         {Type: "string", Format: "date-time"},
	}
}

// schemaFor infers the schema of T with enums, then applies patch (which may
// be nil) and makes every nullable enum accept null.
func schemaFor[T any](patch func(*jsonschema.Schema)) (*jsonschema.Schema, error) {
	s, err := jsonschema.For[T](&jsonschema.ForOptions{TypeSchemas: enumTypes()})
	if err != nil {
		return nil, err
	}
	if patch != nil {
		patch(s)
	}
	walkSchema(s, func(s *jsonschema.Schema) {
		// For *Enum the inference yields types ["null","string"] but keeps
		// the enum, which would then reject null.
		if len(s.Enum) > 0 && slices.Contains(s.Types, "null") && !slices.Contains(s.Enum, nil) {
			s.Enum = append(s.Enum, nil)
		}
	})
	if _, err := s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true}); err != nil {
		return nil, fmt.Errorf("schema for %v: %w", reflect.TypeFor[T](), err)
	}
	return s, nil
}

// walkSchema calls fn on s and every schema nested in it (properties,
// items, additionalProperties, combinators).
func walkSchema(s *jsonschema.Schema, fn func(*jsonschema.Schema)) {
	if s == nil {
		return
	}
	fn(s)
	for _, k := range sortedKeys(s.Properties) {
		walkSchema(s.Properties[k], fn)
	}
	walkSchema(s.Items, fn)
	walkSchema(s.AdditionalProperties, fn)
	walkSchema(s.PropertyNames, fn)
	for _, list := range [][]*jsonschema.Schema{s.AllOf, s.AnyOf, s.OneOf, s.PrefixItems, s.ItemsArray} {
		for _, sub := range list {
			walkSchema(sub, fn)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// prop returns the nested property at path, or panics: patches name fields
// of library types, and a rename must fail loudly at start-up (and in
// tests), never silently drop the patch.
func prop(s *jsonschema.Schema, path ...string) *jsonschema.Schema {
	for _, p := range path {
		next := s.Properties[p]
		if next == nil {
			panic(fmt.Sprintf("mcpserver: schema has no property %q", p))
		}
		s = next
	}
	return s
}

func setEnum(s *jsonschema.Schema, vals []string) {
	s.Enum = make([]any, len(vals))
	for i, v := range vals {
		s.Enum[i] = v
	}
}

// patchAdvanceInput narrows completed_step to the steps a host may report.
func patchAdvanceInput(s *jsonschema.Schema) {
	steps := qa.CompletableSteps()
	vals := make([]string, len(steps))
	for i, st := range steps {
		vals[i] = string(st)
	}
	setEnum(prop(s, "completed_step"), vals)
}

// patchExportInput publishes block_on's severities.
func patchExportInput(s *jsonschema.Schema) {
	vals := make([]string, len(findings.Severities))
	for i, sev := range findings.Severities {
		vals[i] = string(sev)
	}
	setEnum(prop(s, "block_on"), vals)
}

// patchSessionOutput publishes the model_policy modes.
func patchSessionOutput(s *jsonschema.Schema) {
	setEnum(prop(s, "model_policy", "mode"), policyModes())
}

// patchModelPolicyOutput publishes the policy modes.
func patchModelPolicyOutput(s *jsonschema.Schema) {
	setEnum(prop(s, "mode"), policyModes())
}

// patchCatalogOutput says which keys the task-type map has.
func patchCatalogOutput(s *jsonschema.Schema) {
	keys := enumOf(qa.TaskTypes()...)
	prop(s, "recommended_bundles_by_task_type").PropertyNames = keys
}

// emptyInput is the input of the tools that take no arguments; the inferred
// schema is a closed, empty object.
type emptyInput struct{}
