package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/diffpalhq/diffpal/hosts"
	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func getPrompt(t *testing.T, cs *mcp.ClientSession, name string, args map[string]string) (string, error) {
	t.Helper()
	res, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: name, Arguments: args})
	if err != nil {
		return "", err
	}
	if len(res.Messages) != 1 || res.Messages[0].Role != "user" {
		t.Fatalf("%s: messages %+v", name, res.Messages)
	}
	tc, ok := res.Messages[0].Content.(*mcp.TextContent)
	if !ok || tc.Text == "" {
		t.Fatalf("%s: content %T", name, res.Messages[0].Content)
	}
	if res.Description == "" {
		t.Errorf("%s: no description", name)
	}
	return tc.Text, nil
}

// stepRE is one numbered step; its first backquoted word is the tool it
// calls when that is a tool name.
var (
	stepRE     = regexp.MustCompile(`(?m)^(\d+)\. (.*)$`)
	backtickRE = regexp.MustCompile("`([^`]+)`")
)

// promptSteps returns each step's number and text, checking they run
// 1..n.
func promptSteps(t *testing.T, text string) []string {
	t.Helper()
	var steps []string
	for i, m := range stepRE.FindAllStringSubmatch(text, -1) {
		if m[1] != strconv.Itoa(i+1) {
			t.Fatalf("step %q out of order (want %d)", m[0], i+1)
		}
		steps = append(steps, m[2])
	}
	return steps
}

func TestListPrompts(t *testing.T) {
	e := newEnv(t, envOptions{})
	if caps := e.cs.InitializeResult().Capabilities; caps.Prompts == nil || caps.Tools == nil {
		t.Fatalf("capabilities %+v", caps)
	}
	res, err := e.cs.ListPrompts(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*mcp.Prompt{}
	for _, p := range res.Prompts {
		got[p.Name] = p
		if p.Title == "" || p.Description == "" {
			t.Errorf("%s: title %q description %q", p.Name, p.Title, p.Description)
		}
		for _, a := range p.Arguments {
			if a.Description == "" {
				t.Errorf("%s.%s: no description", p.Name, a.Name)
			}
		}
	}
	args := func(p *mcp.Prompt) (names []string, required []string) {
		for _, a := range p.Arguments {
			names = append(names, a.Name)
			if a.Required {
				required = append(required, a.Name)
			}
		}
		return
	}
	if p := got[PromptReviewChange]; p == nil {
		t.Fatal("review_change not listed")
	} else if n, r := args(p); !slices.Equal(n, []string{"base", "head", "focus"}) || !slices.Equal(r, []string{"base"}) {
		t.Errorf("review_change arguments %v, required %v", n, r)
	}
	if p := got[PromptResumeReview]; p == nil {
		t.Fatal("resume_review not listed")
	} else if n, r := args(p); !slices.Equal(n, []string{"run_id"}) || !slices.Equal(r, []string{"run_id"}) {
		t.Errorf("resume_review arguments %v, required %v", n, r)
	}
	if len(got) != 2 {
		t.Errorf("%d prompts", len(got))
	}
}

// wantFlow is the tool each step of review_change calls, in order (the
// last step, the report to the user, calls none).
var wantFlow = []string{ToolReviewContext, qa.ToolStart, qa.ToolAdvance, qa.ToolPrepare, qa.ToolAdvance,
	qa.ToolAdvance, qa.ToolAdvance, qa.ToolFinish, qa.ToolExport, ""}

func stepTools(steps []string) []string {
	var out []string
	for _, s := range steps {
		tool := ""
		if m := backtickRE.FindStringSubmatch(s); m != nil && (strings.HasSuffix(m[1], "_orchestration") ||
			strings.HasSuffix(m[1], "_orchestrations") || m[1] == ToolReviewContext || m[1] == qa.ToolExport) {
			tool = m[1]
		}
		out = append(out, tool)
	}
	return out
}

func TestReviewChangePrompt(t *testing.T) {
	repo, token := plantedRepo(t)
	e := localEnv(t, repo.Dir)
	text, err := getPrompt(t, e.cs, PromptReviewChange, map[string]string{"base": "main", "head": "feature", "focus": "security_reviewer"})
	if err != nil {
		t.Fatal(err)
	}
	var out ReviewContextOutput
	e.ok(ToolReviewContext, map[string]any{"base": "main", "head": "feature"}, &out)
	for _, want := range []string{"main..feature", out.ReviewContext.BaseSHA, out.ReviewContext.HeadSHA,
		out.ReviewContext.EvidencePacketSHA256, "4 changed files", "8 evidence refs", "security_reviewer",
		"read_only=true", "host_owns_decisions=true", "unavailable"} {
		if !strings.Contains(text, want) {
			t.Errorf("prompt lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, token) {
		t.Error("prompt shows the token")
	}
	steps := promptSteps(t, text)
	if got := stepTools(steps); !slices.Equal(got, wantFlow) {
		t.Errorf("steps call %v, want %v", got, wantFlow)
	}
	// Step 1's arguments are JSON a host can send as they are.
	m := regexp.MustCompile("`" + ToolReviewContext + "` (\\{[^}]*\\})").FindStringSubmatch(steps[0])
	var args map[string]any
	if m == nil || json.Unmarshal([]byte(m[1]), &args) != nil || args["base"] != "main" || args["head"] != "feature" || args["include_packet"] != true {
		t.Fatalf("step 1 arguments: %q", steps[0])
	}

	// Without a local repository the prompt points at diffpal context and
	// the flow is otherwise the same.
	plain := newEnv(t, envOptions{})
	text, err = getPrompt(t, plain.cs, PromptReviewChange, map[string]string{"base": "origin/main"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "diffpal context --base origin/main --packet") || strings.Contains(text, "base_sha") {
		t.Errorf("prompt without a repository:\n%s", text)
	}
	if got := stepTools(promptSteps(t, text)); !slices.Equal(got[1:], wantFlow[1:]) || got[0] != "" {
		t.Errorf("steps call %v", got)
	}
}

func TestResumePrompt(t *testing.T) {
	e := newEnv(t, envOptions{})
	id := "qar-" + strings.Repeat("ab", 16)
	text, err := getPrompt(t, e.cs, PromptResumeReview, map[string]string{"run_id": id})
	if err != nil {
		t.Fatal(err)
	}
	steps := promptSteps(t, text)
	if got := stepTools(steps); got[0] != qa.ToolGet || !slices.Equal(got[2:], wantFlow[2:]) {
		t.Errorf("steps call %v", got)
	}
	if !strings.Contains(steps[0], `{"run_id":"`+id+`"}`) {
		t.Errorf("step 1 %q", steps[0])
	}
}

// TestPromptArgumentErrors: bad arguments are JSON-RPC invalid-params
// errors whose message starts with "invalid argument: <name>".
func TestPromptArgumentErrors(t *testing.T) {
	repo, _ := plantedRepo(t)
	local := localEnv(t, repo.Dir)
	plain := newEnv(t, envOptions{})
	for _, c := range []struct {
		name, prompt string
		e            *env
		args         map[string]string
		want         string
	}{
		{"missing base", PromptReviewChange, plain, map[string]string{"head": "x"}, "invalid argument: base: must not be empty"},
		{"option base", PromptReviewChange, plain, map[string]string{"base": "--upload-pack=evil"}, "invalid argument: base: must not start with '-'"},
		{"spaced head", PromptReviewChange, plain, map[string]string{"base": "main", "head": "a b"}, "invalid argument: head"},
		{"unknown focus", PromptReviewChange, plain, map[string]string{"base": "main", "focus": "speed_reviewer"}, "invalid argument: focus: \"speed_reviewer\" is not a review profile"},
		{"unknown argument", PromptReviewChange, plain, map[string]string{"base": "main", "task_type": "other"}, "invalid argument: task_type: unknown argument"},
		{"unknown revision", PromptReviewChange, local, map[string]string{"base": "nope"}, "invalid argument: range: unknown revision"},
		{"empty change", PromptReviewChange, local, map[string]string{"base": "feature", "head": "feature"}, "change cannot be bound"},
		{"bad run id", PromptResumeReview, plain, map[string]string{"run_id": "qar-123"}, "invalid argument: run_id"},
		{"missing run id", PromptResumeReview, plain, nil, "invalid argument: run_id"},
		{"unknown prompt", "review_everything", plain, nil, "unknown prompt"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := getPrompt(t, c.e.cs, c.prompt, c.args)
			var je *jsonrpc.Error
			if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams || !strings.Contains(je.Message, c.want) {
				t.Fatalf("error %v, want invalid params %q", err, c.want)
			}
			if c.prompt != "review_everything" && !strings.HasPrefix(je.Message, "invalid argument: ") &&
				!strings.HasPrefix(je.Message, string(CodeUnbindable)+": ") {
				t.Errorf("message %q does not start with the code", je.Message)
			}
		})
	}
}

// TestRulesNameOnlyPublishedNames: every identifier the host rule files
// and the rendered prompts put in backquotes (or use as a JSON key) is a
// tool, a prompt or prompt argument, a schema property or an enum value
// the server publishes. Nothing is invented.
func TestRulesNameOnlyPublishedNames(t *testing.T) {
	repo, _ := plantedRepo(t)
	e := localEnv(t, repo.Dir)
	vocab := map[string]bool{}
	tools, err := e.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools.Tools {
		vocab[tl.Name] = true
		for _, sch := range []any{tl.InputSchema, tl.OutputSchema} {
			walkSchema(toSchema(t, sch), func(s *jsonschema.Schema) {
				for k := range s.Properties {
					vocab[k] = true
				}
				for _, v := range s.Enum {
					if str, ok := v.(string); ok {
						vocab[str] = true
					}
				}
			})
		}
	}
	prompts, err := e.cs.ListPrompts(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range prompts.Prompts {
		vocab[p.Name] = true
		for _, a := range p.Arguments {
			vocab[a.Name] = true
		}
	}
	texts := map[string]string{}
	for _, f := range hosts.RuleFiles() {
		data, err := hosts.FS.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		texts[f] = string(data)
	}
	for name, args := range map[string]map[string]string{
		PromptReviewChange: {"base": "main", "head": "feature", "focus": "code_reviewer"},
		PromptResumeReview: {"run_id": "qar-" + strings.Repeat("0", 32)},
	} {
		text, err := getPrompt(t, e.cs, name, args)
		if err != nil {
			t.Fatal(err)
		}
		texts["prompt "+name] = text
	}
	ident := regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)+$`)
	jsonKey := regexp.MustCompile(`"([a-z_]+)":`)
	for src, text := range texts {
		var words []string
		for _, m := range backtickRE.FindAllStringSubmatch(text, -1) {
			words = append(words, strings.Split(m[1], ".")...)
		}
		for _, m := range jsonKey.FindAllStringSubmatch(text, -1) {
			words = append(words, m[1])
		}
		for _, w := range words {
			if ident.MatchString(w) && !vocab[w] {
				t.Errorf("%s names %q, which the server does not publish", src, w)
			}
		}
	}
}
