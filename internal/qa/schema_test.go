package qa

import (
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// The MCP SDK infers tool schemas from these structs; hosts need a
// description on every input property, and optional inputs must carry
// omitzero so inference does not mark them required.
func TestInputPropertiesHaveDescriptions(t *testing.T) {
	wordEq := regexp.MustCompile(`^[^ \t\n]+=`)
	seen := map[reflect.Type]bool{}
	var walk func(t *testing.T, typ reflect.Type, path string)
	walk = func(t *testing.T, typ reflect.Type, path string) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || seen[typ] {
			return
		}
		seen[typ] = true
		for i := range typ.NumField() {
			f := typ.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			desc := f.Tag.Get("jsonschema")
			if desc == "" || wordEq.MatchString(desc) {
				t.Errorf("%s.%s has no usable jsonschema description", path, name)
			}
			walk(t, f.Type, path+"."+name)
		}
	}
	for _, v := range []any{PrepareInput{}, StartInput{}, AdvanceInput{}, GetInput{}, FinishInput{}, DeleteInput{}, ExportInput{}} {
		walk(t, reflect.TypeOf(v), reflect.TypeOf(v).Name())
	}
	required := map[string][]string{
		"StartInput":   {"task_type"},
		"AdvanceInput": {"run_id", "completed_step", "status"},
		"FinishInput":  {"run_id", "outcome"},
		"DeleteInput":  {"run_id"},
		"ExportInput":  {"run_id"},
	}
	for _, v := range []any{StartInput{}, AdvanceInput{}, FinishInput{}, DeleteInput{}, ExportInput{}} {
		typ := reflect.TypeOf(v)
		var got []string
		for i := range typ.NumField() {
			name, opts, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			if !strings.Contains(opts, "omitzero") {
				got = append(got, name)
			}
		}
		if strings.Join(got, ",") != strings.Join(required[typ.Name()], ",") {
			t.Errorf("%s required properties = %v, want %v", typ.Name(), got, required[typ.Name()])
		}
	}
}

func TestDecodeInputRejectsUnknownProperties(t *testing.T) {
	var in FinishInput
	if err := DecodeInput([]byte(`{"run_id":"qar-x","outcome":"completed","reason":"done"}`), &in); err == nil {
		t.Fatal("unknown property accepted")
	}
	var adv AdvanceInput
	err := DecodeInput([]byte(`{"run_id":"r","completed_step":"primary_review","status":"completed","risk_signals":{"extra":true}}`), &adv)
	wantCode(t, err, CodeInvalidArgument)
	if err := DecodeInput([]byte(`{"run_id":"r","completed_step":"triage","status":"completed","selected_bundle":null}`), &adv); err != nil || adv.SelectedBundle != nil {
		t.Fatalf("null optional: %v", err)
	}
}

func TestToolSpecs(t *testing.T) {
	tools := Tools()
	if len(tools) != 10 {
		t.Fatalf("%d tools", len(tools))
	}
	seen := map[string]bool{}
	for _, ts := range tools {
		if ts.Name == "" || ts.Title == "" || ts.Description == "" || seen[ts.Name] || ts.OpenWorldHint {
			t.Errorf("bad tool spec %+v", ts)
		}
		seen[ts.Name] = true
	}
	for _, ts := range tools {
		switch ts.Name {
		case ToolStart, ToolAdvance:
			if ts.ReadOnlyHint || ts.IdempotentHint || ts.DestructiveHint {
				t.Errorf("%s must be STATE", ts.Name)
			}
		case ToolFinish:
			if ts.ReadOnlyHint || !ts.IdempotentHint || ts.DestructiveHint {
				t.Errorf("finish must be FINALIZE")
			}
		case ToolDelete:
			if ts.ReadOnlyHint || !ts.IdempotentHint || !ts.DestructiveHint {
				t.Errorf("delete must be DELETE")
			}
		default:
			if !ts.ReadOnlyHint || !ts.IdempotentHint {
				t.Errorf("%s must be READ_ONLY", ts.Name)
			}
		}
	}
}
