package mcpserver

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/google/jsonschema-go/jsonschema"
)

// Schemas are inferred from the qa wire types (jsonschema-go, as the SDK
// does) and then given the library's own constraints: every fixed-value
// string type becomes an enum (qa.EnumValues), and every qa.Rule of
// qa.FieldRules becomes its JSON Schema keywords (lengths, patterns,
// formats, item counts, ranges, const, narrowed enums). The library checks
// inputs against the same two tables, so what hosts are shown and what is
// enforced come from one source; the SDK's schema validation only answers
// first.

func enumOf[T ~string](vals ...T) *jsonschema.Schema {
	e := make([]any, len(vals))
	for i, v := range vals {
		e[i] = string(v)
	}
	return &jsonschema.Schema{Type: "string", Enum: e}
}

// enumTypes maps each fixed-value string type to its schema: qa's value
// sets, plus the findings bundle's severity and time.Time as a date-time.
func enumTypes() map[reflect.Type]*jsonschema.Schema {
	m := map[reflect.Type]*jsonschema.Schema{}
	for t, vals := range qa.EnumValues() {
		m[t] = enumOf(vals...)
	}
	m[reflect.TypeFor[findings.Severity]()] = enumOf(findings.Severities[:]...)
	m[reflect.TypeFor[time.Time]()] = &jsonschema.Schema{Type: "string", Format: "date-time"}
	return m
}

// schemaFor infers the schema of T with enums, then applies patch (which may
// be nil) and makes every nullable enum accept null.
func schemaFor[T any](patch func(*jsonschema.Schema)) (*jsonschema.Schema, error) {
	s, err := jsonschema.For[T](&jsonschema.ForOptions{TypeSchemas: enumTypes()})
	if err != nil {
		return nil, err
	}
	applyRules(s, reflect.TypeFor[T](), qa.FieldRules())
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

// applyRules walks s alongside the Go type t it was inferred from and
// adds the keywords of every qa.Rule of a field of t (or of a nested type).
func applyRules(s *jsonschema.Schema, t reflect.Type, rules map[reflect.Type]map[string]qa.Rule) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if s == nil {
		return
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		applyRules(s.Items, t.Elem(), rules)
		return
	case reflect.Struct:
		if t == reflect.TypeFor[time.Time]() {
			return
		}
	default:
		return
	}
	fields := rules[t]
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			applyRules(s, f.Type, rules) // promoted into the same object
			continue
		}
		name := qa.JSONName(f)
		if name == "" {
			continue
		}
		ps := s.Properties[name]
		if ps == nil {
			continue
		}
		if r, ok := fields[name]; ok {
			applyRule(ps, f.Type, r)
		}
		applyRules(ps, f.Type, rules)
	}
}

// applyRule sets r's keywords on the schema of one property of Go type t.
// A list's own keywords go on the list, which is then never null; the
// string keywords go on its items.
func applyRule(ps *jsonschema.Schema, t reflect.Type, r qa.Rule) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	target := ps
	if t.Kind() == reflect.Slice {
		ps.Type, ps.Types = "array", nil
		if r.MinItems > 0 {
			ps.MinItems = jsonschema.Ptr(r.MinItems)
		}
		if r.MaxItems > 0 {
			ps.MaxItems = jsonschema.Ptr(r.MaxItems)
		}
		target = ps.Items
	}
	if r.MinLength > 0 {
		target.MinLength = jsonschema.Ptr(r.MinLength)
	}
	if r.MaxLength > 0 {
		target.MaxLength = jsonschema.Ptr(r.MaxLength)
	}
	target.Pattern = r.Pattern
	target.Format = cmp.Or(r.Format, target.Format)
	if len(r.Enum) > 0 {
		target.Enum = make([]any, len(r.Enum))
		for i, v := range r.Enum {
			target.Enum[i] = v
		}
	}
	if r.Minimum != nil {
		target.Minimum = jsonschema.Ptr(*r.Minimum)
	}
	if r.Maximum != nil {
		target.Maximum = jsonschema.Ptr(*r.Maximum)
	}
	if r.Const != nil {
		v := r.Const
		target.Const = &v
		// The one allowed value is never null.
		if i := slices.Index(target.Types, "null"); i >= 0 && len(target.Types) == 2 {
			target.Type, target.Types = target.Types[1-i], nil
		}
	}
}

// patchCatalogOutput says which keys the task-type map has.
func patchCatalogOutput(s *jsonschema.Schema) {
	keys := enumOf(qa.TaskTypes()...)
	prop(s, "recommended_bundles_by_task_type").PropertyNames = keys
}

// emptyInput is the input of the tools that take no arguments; the inferred
// schema is a closed, empty object.
type emptyInput struct{}
