package mcpserver

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func listTools(t *testing.T, cs *mcp.ClientSession) map[string]*mcp.Tool {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]*mcp.Tool{}
	for _, tl := range res.Tools {
		m[tl.Name] = tl
	}
	return m
}

// toSchema converts a schema as the client decoded it (a map) back into a
// jsonschema.Schema.
func toSchema(t *testing.T, v any) *jsonschema.Schema {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("schema does not decode: %v\n%s", err, raw)
	}
	return &s
}

// TestListTools pins every tool's annotations to its behaviour (the
// anchor's presets; get_review_context only reads git), and checks titles,
// descriptions and schemas. Without a local repository the server lists
// the ten session tools; with one, get_review_context too.
func TestListTools(t *testing.T) {
	if tools := listTools(t, newEnv(t, envOptions{}).cs); len(tools) != 10 || tools[ToolReviewContext] != nil {
		t.Fatalf("without a local repository: %d tools, want the 10 session tools", len(tools))
	}
	e := newEnv(t, envOptions{server: Options{LocalRepo: &LocalRepo{Dir: t.TempDir()}}})
	tools := listTools(t, e.cs)
	specs := append(qa.Tools(), reviewContextSpec())
	if len(specs) != 11 || len(tools) != len(specs) {
		t.Fatalf("server lists %d tools, want %d", len(tools), len(specs))
	}
	presets := map[string][4]*bool{ // readOnly, destructive, idempotent, openWorld
		"READ_ONLY": {ptr(true), nil, ptr(true), ptr(false)},
		"STATE":     {ptr(false), ptr(false), ptr(false), ptr(false)},
		"FINALIZE":  {ptr(false), ptr(false), ptr(true), ptr(false)},
		"DELETE":    {ptr(false), ptr(true), ptr(true), ptr(false)},
	}
	presetOf := map[string]string{
		qa.ToolPrepare: "READ_ONLY", qa.ToolCatalog: "READ_ONLY", qa.ToolModelPolicy: "READ_ONLY",
		qa.ToolGet: "READ_ONLY", qa.ToolList: "READ_ONLY", qa.ToolExport: "READ_ONLY", ToolReviewContext: "READ_ONLY",
		qa.ToolStart: "STATE", qa.ToolAdvance: "STATE", qa.ToolFinish: "FINALIZE", qa.ToolDelete: "DELETE",
	}
	for _, spec := range specs {
		t.Run(spec.Name, func(t *testing.T) {
			tl := tools[spec.Name]
			if tl == nil {
				t.Fatal("not listed")
			}
			if tl.Title != spec.Title || tl.Title == "" || tl.Description != spec.Description || tl.Description == "" {
				t.Errorf("title %q / description %q do not match the library's", tl.Title, tl.Description)
			}
			a := tl.Annotations
			if a == nil || a.Title != spec.Title {
				t.Fatalf("annotations %+v", a)
			}
			want := presets[presetOf[spec.Name]]
			got := [4]*bool{&a.ReadOnlyHint, a.DestructiveHint, &a.IdempotentHint, a.OpenWorldHint}
			for i, name := range []string{"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"} {
				if (want[i] == nil) != (got[i] == nil) || (want[i] != nil && *want[i] != *got[i]) {
					t.Errorf("%s = %v, want %v (%s preset)", name, deref(got[i]), deref(want[i]), presetOf[spec.Name])
				}
			}
			in := toSchema(t, tl.InputSchema)
			if in.Type != "object" || in.AdditionalProperties == nil || in.AdditionalProperties.Not == nil {
				t.Errorf("input schema must be a closed object: %+v", in)
			}
			walkSchema(in, func(s *jsonschema.Schema) {
				for _, name := range sortedKeys(s.Properties) {
					if strings.TrimSpace(s.Properties[name].Description) == "" {
						t.Errorf("input property %q has no description", name)
					}
				}
				if s.Type == "object" && (s.AdditionalProperties == nil || s.AdditionalProperties.Not == nil) &&
					s.Properties != nil {
					t.Errorf("nested input object with %v is open", sortedKeys(s.Properties))
				}
			})
			if tl.OutputSchema == nil {
				t.Fatal("no output schema")
			}
			if out := toSchema(t, tl.OutputSchema); out.Type != "object" || len(out.Properties) == 0 {
				t.Errorf("output schema is not an object with properties")
			}
		})
	}
}

func deref(b *bool) any {
	if b == nil {
		return "unset"
	}
	return *b
}

// TestSchemaEnums checks that fixed-value fields publish their values, that
// nullable ones accept null, and that the library accepts every published
// value where it exposes a validator.
func TestSchemaEnums(t *testing.T) {
	e := newEnv(t, envOptions{})
	tools := listTools(t, e.cs)
	enum := func(s *jsonschema.Schema) []string {
		var out []string
		for _, v := range s.Enum {
			if v == nil {
				out = append(out, "null")
			} else {
				out = append(out, v.(string))
			}
		}
		return out
	}
	strs := func(vs ...string) []string { return vs }
	adv := toSchema(t, tools[qa.ToolAdvance].InputSchema)
	checks := []struct {
		name string
		got  *jsonschema.Schema
		want []string
	}{
		{"start.task_type", prop(toSchema(t, tools[qa.ToolStart].InputSchema), "task_type"),
			strs("ordinary_review", "widget_review", "epic_analysis", "requirements_analysis", "qa_planning", "autotest_implementation", "other")},
		{"advance.completed_step", prop(adv, "completed_step"), strs("triage", "primary_review", "deep_review", "synthesis")},
		{"advance.status", prop(adv, "status"), strs("completed", "partial", "blocked")},
		{"advance.selected_bundle", prop(adv, "selected_bundle"),
			strs("ordinary_mr", "widget", "widget_js", "ruby_backend", "python_backend", "mobile", "security", "autotest", "requirements", "null")},
		{"advance.final_review_report.finding_candidates[].severity",
			prop(adv, "final_review_report", "finding_candidates").Items.Properties["severity"], strs("high", "medium", "low", "null")},
		{"advance.final_review_report.candidate_decisions[].verdict",
			prop(adv, "final_review_report", "candidate_decisions").Items.Properties["verdict"], strs("confirmed", "rejected", "duplicate", "unverified")},
		{"export.block_on", prop(toSchema(t, tools[qa.ToolExport].InputSchema), "block_on"), strs("low", "medium", "high", "critical", "null")},
		{"finish.outcome", prop(toSchema(t, tools[qa.ToolFinish].InputSchema), "outcome"), strs("completed", "partial", "blocked")},
		{"prepare.agent_profile", prop(toSchema(t, tools[qa.ToolPrepare].InputSchema), "agent_profile"), nil},
		{"get.output.model_policy.mode", prop(toSchema(t, tools[qa.ToolGet].OutputSchema), "model_policy", "mode"), strs("configured", "host_default")},
		{"model_policy.output.mode", prop(toSchema(t, tools[qa.ToolModelPolicy].OutputSchema), "mode"), strs("configured", "host_default")},
	}
	for _, c := range checks {
		want := c.want
		if want == nil {
			for _, p := range qa.Profiles() {
				want = append(want, string(p))
			}
		}
		if got := enum(c.got); !slices.Equal(got, want) {
			t.Errorf("%s enum = %v, want %v", c.name, got, want)
		}
	}
	for _, v := range qa.TaskTypes() {
		if !v.Valid() {
			t.Errorf("library rejects published task type %q", v)
		}
	}
	for _, v := range qa.Bundles() {
		if !v.Valid() {
			t.Errorf("library rejects published bundle %q", v)
		}
	}
}

// TestUnknownPropertiesRejected checks closed objects at the top level and
// inside nested inputs: the SDK rejects them before the library runs.
func TestUnknownPropertiesRejected(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.fail(qa.ToolStart, map[string]any{"task_type": "other", "extra": true}, `validating "arguments"`)
	e.fail(qa.ToolList, map[string]any{"extra": 1}, `validating "arguments"`)
	rc := map[string]any{"repository": "r", "base_sha": headSHA, "head_sha": headSHA, "diff_sha256": diffSHA,
		"evidence_packet_sha256": packetSHA, "changed_files": []string{"a.go"}, "evidence_refs": []string{"E1"},
		"raw_diff": "--- a/a.go"}
	txt := e.fail(qa.ToolStart, map[string]any{"task_type": "other", "review_context": rc}, `validating "arguments"`)
	if !strings.Contains(txt, "raw_diff") {
		t.Errorf("error does not name the property: %s", txt)
	}
	e.fail(qa.ToolStart, map[string]any{"task_type": "bogus"}, `validating "arguments"`)
	e.fail(qa.ToolStart, map[string]any{}, `validating "arguments"`)
	if got, _ := e.orch.List(context.Background(), qa.ListInput{}); len(got.Sessions) != 0 {
		t.Fatalf("rejected calls created sessions: %+v", got.Sessions)
	}
}

// TestEveryToolCalled calls every tool and checks that each success carries
// structured content matching its text (mustOK) and each failure none.
func TestEveryToolCalled(t *testing.T) {
	e := newEnv(t, envOptions{})
	called := map[string]bool{}
	okCall := func(name string, args, out any) {
		t.Helper()
		e.ok(name, args, out)
		called[name] = true
	}
	var route qa.ReviewRoute
	okCall(qa.ToolPrepare, qa.PrepareInput{AgentProfile: qa.ProfileCodeExplorer}, &route)
	if route.DisplayName != "Faraday — Evidence Investigator" || !route.ReadOnly || !route.HostOwnsDecisions {
		t.Errorf("route = %+v", route)
	}
	var cat qa.Catalog
	okCall(qa.ToolCatalog, nil, &cat)
	if len(cat.Profiles) != 10 || len(cat.Bundles) != 9 || len(cat.RecommendedBundlesByTaskType) != 7 {
		t.Errorf("catalog has %d profiles, %d bundles, %d task types", len(cat.Profiles), len(cat.Bundles), len(cat.RecommendedBundlesByTaskType))
	}
	var pol qa.ModelPolicyInfo
	okCall(qa.ToolModelPolicy, map[string]any{}, &pol)
	if pol.Mode != qa.PolicyModeConfigured || pol.ModelSelection != qa.DefaultModelSelection() {
		t.Errorf("policy = %+v", pol)
	}
	var s qa.Session
	okCall(qa.ToolStart, qa.StartInput{TaskType: qa.TaskOrdinaryReview}, &s)
	okCall(qa.ToolGet, qa.GetInput{RunID: s.RunID}, &s)
	var list qa.ListOutput
	okCall(qa.ToolList, nil, &list)
	if len(list.Sessions) != 1 || list.Sessions[0].RunID != s.RunID {
		t.Errorf("list = %+v", list)
	}
	okCall(qa.ToolAdvance, qa.AdvanceInput{RunID: s.RunID, CompletedStep: qa.StepTriage, Status: qa.OutcomeBlocked}, &s)
	okCall(qa.ToolFinish, qa.FinishInput{RunID: s.RunID, Outcome: qa.OutcomeBlocked}, &s)
	if s.Status != qa.StatusBlocked || s.Revision != 2 {
		t.Errorf("after finish: status %s revision %d", s.Status, s.Revision)
	}
	// Export needs a review-bound session with a final report; the full flow
	// test covers success, here the tool answers with its domain error.
	e.fail(qa.ToolExport, qa.ExportInput{RunID: s.RunID}, string(qa.CodeExportNotBound))
	called[qa.ToolExport] = true
	var del qa.DeleteOutput
	okCall(qa.ToolDelete, qa.DeleteInput{RunID: s.RunID}, &del)
	if !del.Deleted || del.RunID != s.RunID {
		t.Errorf("delete = %+v", del)
	}
	e.fail(qa.ToolGet, qa.GetInput{RunID: s.RunID}, string(qa.CodeUnknownRunID))
	for _, spec := range qa.Tools() {
		if !called[spec.Name] {
			t.Errorf("%s not called", spec.Name)
		}
	}
}

func TestArgumentLimit(t *testing.T) {
	e := newEnv(t, envOptions{server: Options{MaxRequestBytes: 2048}})
	big := qa.StartInput{TaskType: qa.TaskOther, ReviewContext: reviewContext()}
	big.ReviewContext.Repository = strings.Repeat("r", 500)
	for i := range 40 {
		big.ReviewContext.ChangedFiles = append(big.ReviewContext.ChangedFiles, strings.Repeat("x", 40)+string(rune('a'+i%26))+strings.Repeat("y", i))
	}
	txt := e.fail(qa.ToolStart, big, "invalid argument: arguments: request is ")
	if !strings.Contains(txt, "limit of 2048 bytes") {
		t.Errorf("error = %q", txt)
	}
	e.ok(qa.ToolStart, qa.StartInput{TaskType: qa.TaskOther}, nil)
	if _, err := New(e.orch, Options{MaxRequestBytes: -1}); err == nil {
		t.Error("negative limit accepted")
	}
}
