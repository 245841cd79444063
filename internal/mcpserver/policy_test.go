package mcpserver

import (
	"strings"
	"testing"

	"github.com/diffpalhq/diffpal/internal/qa"
)

const anchorPolicy = `{"provider":"anthropic","triage_model":"claude-sonnet-4-6","primary_model":"claude-opus-4-6",
 "deep_model":"claude-opus-4-6","synthesis_model":"claude-sonnet-4-6","triage_reasoning":"low",
 "primary_reasoning":"high","deep_reasoning":"max","synthesis_reasoning":"medium"}`

func TestParseModelPolicy(t *testing.T) {
	withMode := func(mode string) string { return `{"mode":"` + mode + `",` + strings.TrimPrefix(anchorPolicy, "{") }
	for _, c := range []struct {
		name, in    string
		hostDefault bool
		provider    qa.Provider
		err         string
	}{
		{"anchor format", anchorPolicy, false, qa.ProviderAnthropic, ""},
		{"configured", withMode("configured"), false, qa.ProviderAnthropic, ""},
		{"host_default with selection", withMode("host_default"), true, qa.ProviderAnthropic, ""},
		{"host_default alone", `{"mode":"host_default"}`, true, qa.ProviderOpenAI, ""},
		{"configured alone", `{"mode":"configured"}`, false, "", "invalid model policy"},
		{"bad mode", `{"mode":"auto"}`, false, "", "invalid model policy: mode"},
		{"unknown key", `{"mode":"host_default","temperature":1}`, false, "", "invalid model policy"},
		{"bad reasoning", strings.Replace(anchorPolicy, `"deep_reasoning":"max"`, `"deep_reasoning":"minimal"`, 1), false, "",
			"invalid model policy: deep_reasoning"},
		{"wrong provider", strings.Replace(anchorPolicy, `"anthropic"`, `"openai"`, 1), false, "", "invalid model policy: triage_model"},
		{"not an object", `[]`, false, "", "invalid model policy"},
		{"trailing data", `{"mode":"host_default"} {}`, false, "", "invalid model policy"},
		{"empty", ``, false, "", "invalid model policy"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := ParseModelPolicy([]byte(c.in))
			if c.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), c.err) {
					t.Fatalf("err = %v, want prefix %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.HostDefault != c.hostDefault || p.Selection.Provider != c.provider {
				t.Fatalf("got %+v", p)
			}
		})
	}
}

// TestHostDefaultPolicy: sessions hand out {mode: host_default} and the
// policy tool reports the mode.
func TestHostDefaultPolicy(t *testing.T) {
	p, err := ParseModelPolicy([]byte(`{"mode":"host_default"}`))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, envOptions{cfg: func(c *qa.Config) { c.ModelSelection, c.HostDefaultModel = &p.Selection, p.HostDefault }})
	var info qa.ModelPolicyInfo
	e.ok(qa.ToolModelPolicy, nil, &info)
	if info.Mode != qa.PolicyModeHostDefault {
		t.Fatalf("mode = %q", info.Mode)
	}
	raw := e.ok(qa.ToolStart, qa.StartInput{TaskType: qa.TaskOther}, nil)
	if !strings.Contains(string(raw), `"model_policy":{"mode":"host_default"}`) {
		t.Fatalf("start output: %s", raw)
	}
}

// TestParseModelPolicyWithoutReasoning: the file may leave out the
// reasoning keys (issue 9, item 6); the anchor's defaults apply and the
// server starts with them.
func TestParseModelPolicyWithoutReasoning(t *testing.T) {
	p, err := ParseModelPolicy([]byte(`{"mode":"configured","provider":"anthropic","triage_model":"claude-sonnet-4-6",
		"primary_model":"claude-opus-4-6","deep_model":"claude-opus-4-6","synthesis_model":"claude-sonnet-4-6"}`))
	if err != nil {
		t.Fatalf("policy without reasoning keys: %v", err)
	}
	def := qa.DefaultModelSelection()
	if p.Selection.TriageReasoning != def.TriageReasoning || p.Selection.DeepReasoning != def.DeepReasoning {
		t.Fatalf("selection %+v, want the default reasoning levels", p.Selection)
	}
	e := newEnv(t, envOptions{cfg: func(c *qa.Config) { c.ModelSelection = &p.Selection }})
	var s qa.Session
	e.ok(qa.ToolStart, qa.StartInput{TaskType: qa.TaskOther}, &s)
	if s.ModelPolicy == nil || s.ModelPolicy.Model != "claude-sonnet-4-6" || s.ModelPolicy.Reasoning != qa.ReasoningMax {
		t.Fatalf("triage policy %+v", s.ModelPolicy)
	}
}
