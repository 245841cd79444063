package findings

import (
	"embed"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
)

// The embedded JSON Schemas are the source of truth for structure: the
// decoder and the struct validator take their required lists, types, enums
// and bounds from them (compiled once per version below), and a test checks
// the result against a full JSON Schema implementation. Rules a schema
// cannot express (end_line >= start_line, safe paths, v4 sides) live in
// validate.go.

//go:embed schema/*.json
var schemaFS embed.FS

// Schema returns the embedded JSON Schema (draft 2020-12) of a bundle
// version: v1, v2 or v3.
func Schema(version string) ([]byte, error) {
	switch version {
	case V1, V2, V3:
		return schemaFS.ReadFile("schema/findings-" + version + ".json")
	}
	return nil, fmt.Errorf("no schema for version %q: want v1, v2 or v3", version)
}

// SchemaVersions lists the versions with an embedded schema.
func SchemaVersions() []string { return []string{V1, V2, V3} }

// kind is an object shape in the bundle.
type kind uint8

const (
	kBundle kind = iota
	kFinding
	kSpan
	kEvidence
	kImpact
	kPrompt
	kInspection
	kFile
	kGate
	nKinds
)

// fieldNames fixes each kind's field ids (index = id). The schema compiler
// fails if a schema names a property the Go types do not carry, so the two
// cannot drift apart silently.
var fieldNames = [nKinds][]string{
	kBundle:     {"version", "review_id", "base_sha", "head_sha", "repo", "language", "prompt", "inspection", "change_summary", "review_result", "files", "fingerprint_version", "gate", "findings"},
	kFinding:    {"id", "review_id", "stable_id", "category", "severity", "confidence", "path", "start_line", "end_line", "changed_span", "supporting_span", "title", "message", "evidence", "impact", "suggestion", "blocking", "provider", "rule_id"},
	kSpan:       {"path", "start_line", "end_line", "side"},
	kEvidence:   {"anchor", "reasoning_basis", "source"},
	kImpact:     {"summary", "scope"},
	kPrompt:     {"prompt_id", "prompt_version", "purpose", "schema_version"},
	kInspection: {"provider_type", "required", "tool_calls", "diff_inspected", "context_inspected"},
	kFile:       {"path", "status"},
	kGate:       {"block_on", "min_confidence"},
}

const (
	bVersion = iota
	bReviewID
	bBaseSHA
	bHeadSHA
	bRepo
	bLanguage
	bPrompt
	bInspection
	bChangeSummary
	bReviewResult
	bFiles
	bFingerprintVersion
	bGate
	bFindings
)

const (
	fID = iota
	fReviewID
	fStableID
	fCategory
	fSeverity
	fConfidence
	fPath
	fStartLine
	fEndLine
	fChangedSpan
	fSupportingSpan
	fTitle
	fMessage
	fEvidence
	fImpact
	fSuggestion
	fBlocking
	fProvider
	fRuleID
)

const (
	sPath = iota
	sStartLine
	sEndLine
	sSide
)

const (
	eAnchor = iota
	eReasoningBasis
	eSource
)

const (
	iSummary = iota
	iScope
)

const (
	pPromptID = iota
	pPromptVersion
	pPurpose
	pSchemaVersion
)

const (
	inProviderType = iota
	inRequired
	inToolCalls
	inDiffInspected
	inContextInspected
)

const (
	flPath = iota
	flStatus
)

const (
	gBlockOn = iota
	gMinConfidence
)

// fieldSet is a set of field ids of one kind.
type fieldSet uint32

func (s fieldSet) has(id int) bool { return s&(1<<id) != 0 }
func (s *fieldSet) add(id int)     { *s |= 1 << id }

// jsonType is a set of JSON Schema types.
type jsonType uint8

const (
	tString jsonType = 1 << iota
	tNumber
	tInteger
	tBoolean
	tObject
	tArray
	tNull
)

func (t jsonType) String() string {
	var names []string
	for _, n := range []struct {
		t    jsonType
		name string
	}{{tString, "string"}, {tNumber, "number"}, {tInteger, "integer"}, {tBoolean, "boolean"}, {tObject, "object"}, {tArray, "array"}, {tNull, "null"}} {
		if t&n.t != 0 {
			names = append(names, n.name)
		}
	}
	return strings.Join(names, " or ")
}

// prop is the compiled schema of one property.
type prop struct {
	name   string
	types  jsonType
	enum   []string // const is an enum of one
	min    float64
	max    float64
	minLen int
	items  jsonType // element type of arrays of scalars
	obj    kind     // shape of an object value (or of array elements)
	hasObj bool
}

// objRules is the compiled schema of one object kind in one version.
type objRules struct {
	props    []*prop // by field id; nil when the version's schema lacks the field
	byName   map[string]int
	required fieldSet
}

func (r *objRules) lookup(name string) int {
	if id, ok := r.byName[name]; ok {
		return id
	}
	return -1
}

// versionRules are all compiled rules of one bundle version.
type versionRules struct {
	version string
	objs    [nKinds]*objRules
}

// inlineKinds names the shapes of object properties that a schema writes
// inline rather than through $defs.
var inlineKinds = map[string]kind{
	"prompt":     kPrompt,
	"inspection": kInspection,
	"gate":       kGate,
	"files":      kFile,
}

var defKinds = map[string]kind{
	"#/$defs/finding":  kFinding,
	"#/$defs/span":     kSpan,
	"#/$defs/evidence": kEvidence,
	"#/$defs/impact":   kImpact,
}

type rawSchema struct {
	Type       any                   `json:"type"`
	Ref        string                `json:"$ref"`
	Required   []string              `json:"required"`
	Properties map[string]*rawSchema `json:"properties"`
	Items      *rawSchema            `json:"items"`
	Enum       []string              `json:"enum"`
	Const      *string               `json:"const"`
	Minimum    *float64              `json:"minimum"`
	Maximum    *float64              `json:"maximum"`
	MinLength  int                   `json:"minLength"`
	Defs       map[string]*rawSchema `json:"$defs"`
}

// compiledRules holds v1..v4, each compiled on first use and never
// mutated: compiling all four schemas was the largest part of the
// package's initialisation, which every command pays, and a command reads
// bundles of one version, if any.
var compiledRules = [4]func() *versionRules{
	sync.OnceValue(func() *versionRules { return mustCompile(V1) }),
	sync.OnceValue(func() *versionRules { return mustCompile(V2) }),
	sync.OnceValue(func() *versionRules { return mustCompile(V3) }),
	sync.OnceValue(func() *versionRules {
		// v4 is DiffPal's v3 plus a required changed_span.side (checked in
		// validate.go, because supporting_span shares the span shape but not the
		// rule); the version constant is the only structural difference.
		r := mustCompile(V3)
		r.version = V4
		r.objs[kBundle].props[bVersion].enum = []string{V4}
		return r
	}),
}

// Prewarm compiles the current version's schema now, so that a command
// that will write or read a bundle can have it compiled on another
// goroutine while it works.
func Prewarm() { rulesFor(CurrentVersion) }

func rulesFor(version string) *versionRules {
	switch version {
	case V1:
		return compiledRules[0]()
	case V2:
		return compiledRules[1]()
	case V3:
		return compiledRules[2]()
	case V4:
		return compiledRules[3]()
	}
	return nil
}

// mustCompile compiles embedded schema v (a fresh copy each call).
func mustCompile(v string) *versionRules {
	data, err := Schema(v)
	if err != nil {
		panic(err)
	}
	r, err := compileSchema(v, data)
	if err != nil {
		panic(fmt.Sprintf("embedded schema %s: %v", v, err))
	}
	return r
}

func compileSchema(version string, data []byte) (*versionRules, error) {
	var root rawSchema
	if err := json.Unmarshal(data, &root); err != nil {
		return nil, err
	}
	vr := &versionRules{version: version}
	var compileObj func(k kind, s *rawSchema) error
	compileObj = func(k kind, s *rawSchema) error {
		if s.Ref != "" {
			def := strings.TrimPrefix(s.Ref, "#/$defs/")
			if s = root.Defs[def]; s == nil {
				return fmt.Errorf("unresolved $ref %q", def)
			}
		}
		if vr.objs[k] != nil {
			return nil
		}
		names := fieldNames[k]
		r := &objRules{props: make([]*prop, len(names)), byName: map[string]int{}}
		vr.objs[k] = r
		index := map[string]int{}
		for i, n := range names {
			index[n] = i
		}
		keys := make([]string, 0, len(s.Properties))
		for name := range s.Properties {
			keys = append(keys, name)
		}
		sort.Strings(keys)
		for _, name := range keys {
			ps := s.Properties[name]
			id, ok := index[name]
			if !ok {
				return fmt.Errorf("property %q has no Go field", name)
			}
			p := &prop{name: name, min: math.Inf(-1), max: math.Inf(1)}
			target := ps
			if ps.Ref != "" {
				k2, ok := defKinds[ps.Ref]
				if !ok {
					return fmt.Errorf("property %q: unknown $ref %q", name, ps.Ref)
				}
				if err := compileObj(k2, ps); err != nil {
					return err
				}
				target = root.Defs[strings.TrimPrefix(ps.Ref, "#/$defs/")]
				p.obj, p.hasObj = k2, true
			}
			t, err := parseTypes(target.Type)
			if err != nil {
				return fmt.Errorf("property %q: %v", name, err)
			}
			p.types = t
			p.enum = target.Enum
			if target.Const != nil {
				p.enum = []string{*target.Const}
			}
			if target.Minimum != nil {
				p.min = *target.Minimum
			}
			if target.Maximum != nil {
				p.max = *target.Maximum
			}
			p.minLen = target.MinLength
			if t&tArray != 0 && target.Items != nil {
				it := target.Items
				if it.Ref != "" {
					k2, ok := defKinds[it.Ref]
					if !ok {
						return fmt.Errorf("property %q: unknown items $ref %q", name, it.Ref)
					}
					if err := compileObj(k2, it); err != nil {
						return err
					}
					p.obj, p.hasObj = k2, true
					p.items = tObject
				} else if p.items, err = parseTypes(it.Type); err != nil {
					return fmt.Errorf("property %q items: %v", name, err)
				}
			}
			if k2, ok := inlineKinds[name]; ok && k == kBundle {
				sub := target
				if t&tArray != 0 {
					sub = target.Items
				}
				if err := compileObj(k2, sub); err != nil {
					return err
				}
				p.obj, p.hasObj = k2, true
			}
			r.props[id] = p
			r.byName[name] = id
		}
		for _, name := range s.Required {
			id, ok := r.byName[name]
			if !ok {
				return fmt.Errorf("required property %q is not defined", name)
			}
			r.required.add(id)
		}
		return nil
	}
	if err := compileObj(kBundle, &root); err != nil {
		return nil, err
	}
	for k := kind(0); k < nKinds; k++ {
		if vr.objs[k] == nil {
			return nil, fmt.Errorf("schema does not define the %s shape", fieldNames[k][0])
		}
	}
	return vr, nil
}

func parseTypes(v any) (jsonType, error) {
	var names []string
	switch t := v.(type) {
	case string:
		names = []string{t}
	case []any:
		for _, x := range t {
			s, ok := x.(string)
			if !ok {
				return 0, fmt.Errorf("bad type %v", x)
			}
			names = append(names, s)
		}
	default:
		return 0, fmt.Errorf("missing type")
	}
	var out jsonType
	for _, n := range names {
		switch n {
		case "string":
			out |= tString
		case "number":
			out |= tNumber
		case "integer":
			out |= tInteger
		case "boolean":
			out |= tBoolean
		case "object":
			out |= tObject
		case "array":
			out |= tArray
		case "null":
			out |= tNull
		default:
			return 0, fmt.Errorf("unknown type %q", n)
		}
	}
	return out, nil
}
