package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/git/gittest"
	"github.com/diffpalhq/diffpal/internal/provider/llm"
	"github.com/diffpalhq/diffpal/internal/secrets"
)

// fakeOpenAI speaks the chat-completions wire format on loopback. Review
// requests get one candidate on the change's first hunk; verification
// requests get a "confirmed" verdict per candidate. status, when set, is
// returned for the first calls instead.
type fakeOpenAI struct {
	mu     sync.Mutex
	bodies []string
	heads  []http.Header
	status []int // scripted statuses for the first calls
	prose  int   // answer the next calls in prose instead of JSON
}

var candidateID = regexp.MustCompile(`part=candidate id=(\S+)`)

func (f *fakeOpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.bodies = append(f.bodies, string(body))
	f.heads = append(f.heads, r.Header.Clone())
	var st int
	if len(f.status) > 0 {
		st, f.status = f.status[0], f.status[1:]
	}
	prose := f.prose > 0
	if prose {
		f.prose--
	}
	f.mu.Unlock()
	if st != 0 {
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(st)
		fmt.Fprintf(w, `{"error":{"message":"scripted %d","type":"test"}}`, st)
		return
	}
	var req struct {
		Model          string `json:"model"`
		ResponseFormat struct {
			JSONSchema struct {
				Name string `json:"name"`
			} `json:"json_schema"`
		} `json:"response_format"`
		Messages []struct{ Role, Content string } `json:"messages"`
	}
	json.Unmarshal(body, &req)
	user := req.Messages[len(req.Messages)-1].Content
	var answer any
	if req.ResponseFormat.JSONSchema.Name == llm.VerifySchemaName {
		var vs []map[string]any
		for _, m := range candidateID.FindAllStringSubmatch(user, -1) {
			vs = append(vs, map[string]any{"candidate_id": m[1], "verdict": "confirmed", "rationale": "the hunk shows it", "evidence_refs": []string{"f1:h1"}})
		}
		answer = map[string]any{"verdicts": vs}
	} else {
		answer = map[string]any{"candidates": []any{map[string]any{
			"title": "Division by zero", "description": "ratio divides by a count that can be zero.", "category": "correctness",
			"severity": "high", "confidence": 0.9, "path": "calc.go", "start_line": 4, "end_line": 4, "evidence_refs": []string{"f1:h1"},
			"impact": "panics on empty input", "impact_scope": "callers of ratio", "suggestion": "check n == 0 first",
			"anchor": "return total / n", "failure_condition": "n is 0", "flip_condition": nil,
		}}, "coverage_gaps": []string{}, "unverified": []string{}}
	}
	content, _ := json.Marshal(answer)
	if prose {
		content = []byte("Sure! The change looks risky around the division.")
	}
	out, _ := json.Marshal(map[string]any{
		"id": "c1", "object": "chat.completion", "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": string(content)}}},
		"usage":   map[string]any{"prompt_tokens": 1000, "completion_tokens": 50, "prompt_tokens_details": map[string]any{"cached_tokens": 0}},
	})
	w.Header().Set("Content-Type", "application/json")
	w.Write(out)
}

func (f *fakeOpenAI) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.bodies)
}

const plantedToken = "ghp_1234567890abcdefghijklmnopqrstuvwxyzAB"

func providerRepo(t *testing.T) string {
	repo := gittest.New(t)
	repo.Write("calc.go", "package calc\n\nfunc ratio(total, n int) int {\n\treturn 0\n}\n")
	repo.Commit("base")
	repo.Git("checkout", "-q", "-b", "feature")
	repo.Write("calc.go", "package calc\n\nfunc ratio(total, n int) int {\n\treturn total / n\n}\n\nvar token = \""+plantedToken+"\"\n")
	repo.Commit("feature")
	return repo.Dir
}

func runReview(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Run(context.Background(), args, &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	return code, out.String(), errOut.String()
}

// TestReviewWithOpenAICompatible drives `diffpal review --provider openai`
// end to end against a loopback server in the real wire format: the
// findings come from the model, the deep/synthesis verification runs, the
// request carries the key and the schema, a planted secret never leaves,
// and a second run is served from the cache.
func TestReviewWithOpenAICompatible(t *testing.T) {
	fake := &fakeOpenAI{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	dir := providerRepo(t)
	t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", "sk-test-key")
	code, stdout, stderr := runReview(t, "review", "-C", dir, "--provider", "openai", "--model", "gpt-test", "--color", "never")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "calc.go:4  Division by zero") {
		t.Errorf("model finding missing:\n%s", stdout)
	}
	b, _, err := findings.ReadFile(filepath.Join(dir, ".artifacts/diffpal/findings.json"))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range b.Findings {
		found = found || (f.Title == "Division by zero" && f.Provider == "openai")
	}
	if !found {
		t.Errorf("bundle lacks the model finding: %+v", b.Findings)
	}
	first := fake.calls()
	if first == 0 {
		t.Fatal("no model calls")
	}
	for i, body := range fake.bodies {
		if strings.Contains(body, plantedToken) || strings.Contains(body, plantedToken[:20]) {
			t.Errorf("request %d carries the planted token", i)
		}
		if h := fake.heads[i]; h.Get("Authorization") != "Bearer sk-test-key" || !strings.HasPrefix(h.Get("User-Agent"), "diffpal/") {
			t.Errorf("request %d headers: %v", i, h)
		}
		var req map[string]any
		json.Unmarshal([]byte(body), &req)
		if req["model"] != "gpt-test" || req["response_format"].(map[string]any)["type"] != "json_schema" {
			t.Errorf("request %d body: model %v format %v", i, req["model"], req["response_format"])
		}
	}
	// The session records what the model cost.
	data, _ := os.ReadFile(filepath.Join(dir, ".artifacts/diffpal/qa-session.json"))
	if !bytes.Contains(data, []byte(`"input_tokens": 1000`)) {
		t.Errorf("execution metrics lack the reported tokens")
	}
	// Same change again: every answer comes from the cache.
	code, _, stderr = runReview(t, "review", "-C", dir, "--provider", "openai", "--model", "gpt-test", "--color", "never")
	if code != 0 || fake.calls() != first {
		t.Errorf("re-review: exit %d, calls %d -> %d (%s)", code, first, fake.calls(), stderr)
	}
}

func TestReviewProviderFailures(t *testing.T) {
	dir := providerRepo(t)
	t.Run("auth fails fast with exit 3", func(t *testing.T) {
		fake := &fakeOpenAI{status: []int{401, 401, 401, 401}}
		srv := httptest.NewServer(fake)
		defer srv.Close()
		t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
		t.Setenv("OPENAI_API_KEY", "sk-wrong")
		code, _, stderr := runReview(t, "review", "-C", dir, "--provider", "openai", "--model", "m", "--no-cache")
		if code != ExitProvider || !strings.Contains(stderr, "authentication failed") || !strings.Contains(stderr, "OPENAI_API_KEY") {
			t.Errorf("exit %d: %s", code, stderr)
		}
		if strings.Contains(stderr, "sk-wrong") {
			t.Error("the key reached the error message")
		}
		if fake.calls() != 1 {
			t.Errorf("auth failure retried: %d calls", fake.calls())
		}
	})
	t.Run("429 then success", func(t *testing.T) {
		fake := &fakeOpenAI{status: []int{429, 503}}
		srv := httptest.NewServer(fake)
		defer srv.Close()
		t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
		t.Setenv("OPENAI_API_KEY", "sk-test")
		code, _, stderr := runReview(t, "review", "-C", dir, "--provider", "openai", "--model", "m", "--no-cache")
		if code != 0 {
			t.Errorf("exit %d: %s", code, stderr)
		}
	})
	t.Run("usage errors", func(t *testing.T) {
		for _, args := range [][]string{
			{"--provider", "openai"},
			{"--provider", "command"},
			{"--provider", "gemini"},
		} {
			code, _, stderr := runReview(t, append([]string{"review", "-C", dir}, args...)...)
			if code != ExitUsage || stderr == "" {
				t.Errorf("%v: exit %d %s", args, code, stderr)
			}
		}
	})
}

// TestReviewRepairsMalformedAnswers: the model first answers in prose; the
// review asks again with the problem stated and succeeds.
func TestReviewRepairsMalformedAnswers(t *testing.T) {
	fake := &fakeOpenAI{prose: 1}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	dir := providerRepo(t)
	t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", "sk-test")
	code, stdout, stderr := runReview(t, "review", "-C", dir, "--provider", "openai", "--model", "m", "--no-cache", "--color", "never")
	if code != 0 || !strings.Contains(stdout, "Division by zero") {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(fake.bodies[1], "not valid JSON") {
		t.Errorf("second request does not state the problem: %.300s", fake.bodies[1])
	}
}

// TestReviewWithAgentCommand runs --provider command with a fake agent
// CLI that reads the prompt on stdin and answers JSON wrapped in prose.
func TestReviewWithAgentCommand(t *testing.T) {
	dir := providerRepo(t)
	agent := filepath.Join(t.TempDir(), "agent.sh")
	script := `#!/bin/sh
input=$(cat)
case "$input" in
*` + llm.VerifySchemaName + `*) echo '{"verdicts":[]}' ;;
*) echo 'I reviewed the change. {"candidates":[],"coverage_gaps":["no tests for ratio"],"unverified":[]} Done.' ;;
esac
`
	if err := os.WriteFile(agent, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runReview(t, "review", "-C", dir, "--provider", "command", "--command", agent, "--no-cache", "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	var out ReviewOutput
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	if out.Bundle.Inspection == nil || out.Bundle.Inspection.ProviderType != "command" {
		t.Errorf("inspection = %+v", out.Bundle.Inspection)
	}
	data, _ := os.ReadFile(filepath.Join(dir, ".artifacts/diffpal/qa-session.json"))
	if !bytes.Contains(data, []byte("no tests for ratio")) {
		t.Error("the agent's coverage gap is not in the session")
	}
}

// TestAgentCommandDoesNotSeeHostTokens: the agent reads the untrusted
// change, so the code hosts' write tokens that review --publish holds in
// CI are not in its environment; everything else is.
func TestAgentCommandDoesNotSeeHostTokens(t *testing.T) {
	dir := providerRepo(t)
	seen := filepath.Join(t.TempDir(), "env.txt")
	agent := filepath.Join(t.TempDir(), "agent.sh")
	script := `#!/bin/sh
cat >/dev/null
env > '` + seen + `'
echo '{"candidates":[],"coverage_gaps":[],"unverified":[],"verdicts":[]}'
`
	if err := os.WriteFile(agent, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, k := range secrets.CodeHostTokenVars {
		t.Setenv(k, "host-token-"+k)
	}
	t.Setenv("DIFFPAL_AGENT_VISIBLE", "yes")
	if code, stdout, stderr := runReview(t, "review", "-C", dir, "--provider", "command", "--command", agent, "--no-cache", "--json"); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	env, err := os.ReadFile(seen)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(env, []byte("DIFFPAL_AGENT_VISIBLE=yes")) {
		t.Fatalf("the agent did not get diffpal's environment:\n%s", env)
	}
	if bytes.Contains(env, []byte("host-token-")) {
		t.Errorf("a code host token reached the agent:\n%s", env)
	}
}
