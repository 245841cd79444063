package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/diffpalhq/diffpal/internal/provider/llm"
)

const testKey = "sk-ant-test-SECRET-0123456789"

type recorded struct {
	Method, Path string
	Header       http.Header
	Body         map[string]any
}

// fakeServer is a loopback Messages API with scripted replies.
type fakeServer struct {
	*httptest.Server
	mu    sync.Mutex
	reqs  []recorded
	reply func(w http.ResponseWriter, r *http.Request)
}

func newFake(t *testing.T, reply func(w http.ResponseWriter, r *http.Request)) *fakeServer {
	t.Helper()
	f := &fakeServer{reply: reply}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Errorf("request body is not JSON: %v: %s", err, b)
		}
		f.mu.Lock()
		f.reqs = append(f.reqs, recorded{r.Method, r.URL.Path, r.Header.Clone(), m})
		f.mu.Unlock()
		f.reply(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeServer) last(t *testing.T) recorded {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.reqs) == 0 {
		t.Fatal("server saw no request")
	}
	return f.reqs[len(f.reqs)-1]
}

func jsonReply(status int, body string, hdr ...string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(hdr); i += 2 {
			w.Header().Set(hdr[i], hdr[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

const toolReply = `{"id":"msg_01","type":"message","role":"assistant","model":"claude-test-20260101",
"content":[{"type":"tool_use","id":"toolu_01","name":"findings","input":{"ok":true}}],
"stop_reason":"tool_use","stop_sequence":null,
"usage":{"input_tokens":100,"cache_creation_input_tokens":20,"cache_read_input_tokens":300,"output_tokens":40}}`

func errReply(typ, msg string) string {
	return `{"type":"error","error":{"type":"` + typ + `","message":"` + msg + `"},"request_id":"req_011"}`
}

var testSchema = json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`)

func testRequest() llm.Request {
	return llm.Request{
		System:     "You review diffs.",
		Messages:   []llm.Message{{Role: "user", Content: "review this"}, {Role: "assistant", Content: "{bad"}, {Role: "user", Content: "fix it"}},
		Schema:     testSchema,
		SchemaName: "findings",
	}
}

func newClient(t *testing.T, base string, mod func(*Config)) *Client {
	t.Helper()
	cfg := Config{BaseURL: base, APIKey: testKey, Model: "claude-test"}
	if mod != nil {
		mod(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func asLLMError(t *testing.T, err error) *llm.Error {
	t.Helper()
	var e *llm.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not *llm.Error", err, err)
	}
	if strings.Contains(e.Error(), testKey) {
		t.Fatalf("error leaks the API key: %v", e)
	}
	if e.Provider != "anthropic" {
		t.Errorf("Provider = %q", e.Provider)
	}
	return e
}

func mustJSON(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestCompleteSuccessRequestShape(t *testing.T) {
	f := newFake(t, jsonReply(200, toolReply))
	c := newClient(t, f.URL+"/", nil)
	req := testRequest()
	req.Reasoning = "high" // ignored: thinking is incompatible with forced tool use
	resp, err := c.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.JSON) != `{"ok":true}` {
		t.Errorf("JSON = %s", resp.JSON)
	}
	if resp.Model != "claude-test-20260101" {
		t.Errorf("Model = %q", resp.Model)
	}
	if want := (llm.Usage{InputTokens: 420, OutputTokens: 40, CachedInputTokens: 300}); resp.Usage != want {
		t.Errorf("Usage = %+v, want %+v", resp.Usage, want)
	}
	got := f.last(t)
	if got.Method != "POST" || got.Path != "/v1/messages" {
		t.Errorf("%s %s", got.Method, got.Path)
	}
	for h, want := range map[string]string{
		"X-Api-Key":         testKey,
		"Anthropic-Version": "2023-06-01",
		"Content-Type":      "application/json",
	} {
		if v := got.Header.Get(h); v != want {
			t.Errorf("%s = %q, want %q", h, v, want)
		}
	}
	if h := got.Header.Get("User-Agent"); !strings.HasPrefix(h, "diffpal/") {
		t.Errorf("User-Agent = %q", h)
	}
	if got.Header.Get("Authorization") != "" {
		t.Errorf("Authorization header sent")
	}
	want := mustJSON(t, `{
		"model": "claude-test",
		"max_tokens": 4096,
		"system": "You review diffs.",
		"messages": [
			{"role":"user","content":"review this"},
			{"role":"assistant","content":"{bad"},
			{"role":"user","content":"fix it"}
		],
		"tools": [{"name":"findings","description":"`+toolDescription+`",
			"input_schema":{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}}],
		"tool_choice": {"type":"tool","name":"findings"}
	}`)
	if !reflect.DeepEqual(any(got.Body), want) {
		gb, _ := json.MarshalIndent(got.Body, "", "  ")
		t.Errorf("request body:\n%s", gb)
	}
}

func TestMaxTokensAndDefaults(t *testing.T) {
	f := newFake(t, jsonReply(200, strings.Replace(toolReply, `"name":"findings"`, `"name":"answer"`, 1)))
	c := newClient(t, f.URL+"/proxy", func(c *Config) { c.MaxTokens = 1000; c.APIKey = "" })
	resp, err := c.Complete(context.Background(), llm.Request{Messages: []llm.Message{{Content: "hi"}}, MaxTokens: 77})
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.JSON) != `{"ok":true}` {
		t.Errorf("JSON = %s", resp.JSON)
	}
	got := f.last(t)
	if got.Path != "/proxy/v1/messages" {
		t.Errorf("path %s", got.Path)
	}
	if _, ok := got.Header["X-Api-Key"]; ok {
		t.Errorf("x-api-key sent without a key")
	}
	want := mustJSON(t, `{"model":"claude-test","max_tokens":77,"messages":[{"role":"user","content":"hi"}],
		"tools":[{"name":"answer","description":"`+toolDescription+`","input_schema":{"type":"object"}}],
		"tool_choice":{"type":"tool","name":"answer"}}`)
	if !reflect.DeepEqual(any(got.Body), want) {
		gb, _ := json.MarshalIndent(got.Body, "", "  ")
		t.Errorf("request body:\n%s", gb)
	}
}

func TestMalformedOutput(t *testing.T) {
	usage := `"usage":{"input_tokens":10,"output_tokens":5}`
	cases := []struct{ name, body, want string }{
		{"text only", `{"type":"message","model":"m","content":[{"type":"text","text":"Here is my review: looks fine"}],"stop_reason":"end_turn",` + usage + `}`,
			"no findings tool call (stop_reason=end_turn): Here is my review: looks fine"},
		{"truncated", `{"type":"message","model":"m","content":[{"type":"tool_use","id":"t","name":"findings","input":{}}],"stop_reason":"max_tokens",` + usage + `}`,
			"cut off at max_tokens"},
		{"refusal", `{"type":"message","model":"m","content":[{"type":"text","text":"I can't"}],"stop_reason":"refusal",` + usage + `}`,
			"model refused: I can't"},
		{"input not object", `{"type":"message","model":"m","content":[{"type":"tool_use","id":"t","name":"findings","input":"{\"ok\":true}"}],"stop_reason":"tool_use",` + usage + `}`,
			"tool input is not a JSON object"},
		{"not a message", `<html>bad gateway</html>`, "response is not a message"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, jsonReply(200, tc.body))
			c := newClient(t, f.URL, nil)
			resp, err := c.Complete(context.Background(), testRequest())
			e := asLLMError(t, err)
			// An unusable answer from a working API goes to the repair
			// loop (Malformed); a reply in no API format at all is Invalid.
			want := llm.Malformed
			if strings.HasPrefix(tc.name, "not a") {
				want = llm.Invalid
			}
			if e.Kind != want || !strings.Contains(e.Msg, tc.want) {
				t.Errorf("got %v, want %v containing %q", e, want, tc.want)
			}
			if resp.JSON != nil {
				t.Errorf("JSON on error: %s", resp.JSON)
			}
			if tc.name == "text only" && resp.Usage.InputTokens != 10 {
				t.Errorf("usage lost: %+v", resp.Usage)
			}
		})
	}
}

func TestRateLimitRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		hdr  []string
		want time.Duration
	}{
		{"seconds", []string{"Retry-After", "12"}, 12 * time.Second},
		{"date", []string{"Retry-After", now.Add(45 * time.Second).Format(http.TimeFormat)}, 45 * time.Second},
		{"ms", []string{"retry-after-ms", "250"}, 250 * time.Millisecond},
		{"none", nil, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, jsonReply(429, errReply("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"), tc.hdr...))
			c := newClient(t, f.URL, nil)
			c.ep.Now = func() time.Time { return now }
			_, err := c.Complete(context.Background(), testRequest())
			e := asLLMError(t, err)
			if e.Kind != llm.Transient || e.Status != 429 || e.RetryAfter != tc.want {
				t.Errorf("kind=%v status=%d retry=%v, want transient 429 %v", e.Kind, e.Status, e.RetryAfter, tc.want)
			}
			if !strings.Contains(e.Msg, "rate_limit_error: Number of request tokens") {
				t.Errorf("Msg = %q", e.Msg)
			}
		})
	}
}

func TestStatusClassification(t *testing.T) {
	cases := []struct {
		status int
		body   string
		kind   llm.Kind
		msg    string
	}{
		{401, errReply("authentication_error", "invalid x-api-key"), llm.Auth, "authentication_error: invalid x-api-key"},
		{403, errReply("permission_error", "no access"), llm.Auth, "no access"},
		{400, errReply("invalid_request_error", "tools.0.input_schema: JSON schema is invalid"), llm.Invalid, "JSON schema is invalid"},
		{404, errReply("not_found_error", "model: claude-nope"), llm.Invalid, "model: claude-nope"},
		{413, errReply("request_too_large", "too big"), llm.Invalid, "too big"},
		{500, errReply("api_error", "Internal server error"), llm.Transient, "api_error: Internal server error"},
		{529, errReply("overloaded_error", "Overloaded"), llm.Transient, "Overloaded"},
		{502, `<html>Bad Gateway</html>`, llm.Transient, "<html>Bad Gateway</html>"},
	}
	for _, tc := range cases {
		t.Run(http.StatusText(tc.status), func(t *testing.T) {
			f := newFake(t, jsonReply(tc.status, tc.body, "Request-Id", "req_abc"))
			c := newClient(t, f.URL, nil)
			_, err := c.Complete(context.Background(), testRequest())
			e := asLLMError(t, err)
			if e.Kind != tc.kind || e.Status != tc.status {
				t.Errorf("kind=%v status=%d, want %v %d", e.Kind, e.Status, tc.kind, tc.status)
			}
			if !strings.Contains(e.Msg, tc.msg) || !strings.Contains(e.Msg, "req_abc") {
				t.Errorf("Msg = %q, want %q and the request id", e.Msg, tc.msg)
			}
		})
	}
}

func TestKeyEchoRedacted(t *testing.T) {
	f := newFake(t, jsonReply(401, errReply("authentication_error", "bad key "+testKey)))
	c := newClient(t, f.URL, nil)
	_, err := c.Complete(context.Background(), testRequest())
	e := asLLMError(t, err) // fails on a leak
	if !strings.Contains(e.Msg, "[REDACTED]") {
		t.Errorf("Msg = %q", e.Msg)
	}
}

func TestErrorIn200(t *testing.T) {
	f := newFake(t, jsonReply(200, errReply("overloaded_error", "Overloaded")))
	c := newClient(t, f.URL, nil)
	_, err := c.Complete(context.Background(), testRequest())
	if e := asLLMError(t, err); e.Kind != llm.Transient {
		t.Errorf("got %v", e)
	}
}

func TestTimeout(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	c := newClient(t, f.URL, func(c *Config) { c.Timeout = 100 * time.Millisecond })
	start := time.Now()
	_, err := c.Complete(context.Background(), testRequest())
	e := asLLMError(t, err)
	if e.Kind != llm.Transient || !strings.Contains(e.Msg, "timed out") || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %v", e)
	}
	if llm.KindOf(err) != llm.Transient {
		t.Errorf("KindOf = %v", llm.KindOf(err))
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("took %v", d)
	}
}

func TestConnectionRefused(t *testing.T) {
	f := httptest.NewServer(http.NotFoundHandler())
	base := f.URL
	f.Close()
	c := newClient(t, base, nil)
	_, err := c.Complete(context.Background(), testRequest())
	if e := asLLMError(t, err); e.Kind != llm.Transient {
		t.Errorf("got %v", e)
	}
}

func TestMissingKeyAndModel(t *testing.T) {
	c, err := New(Config{Model: "claude-test"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Complete(context.Background(), testRequest())
	if e := asLLMError(t, err); e.Kind != llm.Auth || !strings.Contains(e.Msg, "ANTHROPIC_API_KEY") {
		t.Errorf("got %v", e)
	}
	if c.Endpoint() != "https://api.anthropic.com/v1/messages" {
		t.Errorf("Endpoint = %s", c.Endpoint())
	}
	c = newClient(t, "http://127.0.0.1:1", func(c *Config) { c.Model = "" })
	_, err = c.Complete(context.Background(), testRequest())
	if e := asLLMError(t, err); e.Kind != llm.Invalid {
		t.Errorf("got %v", e)
	}
	c = newClient(t, "http://127.0.0.1:1", nil)
	_, err = c.Complete(context.Background(), llm.Request{})
	if e := asLLMError(t, err); e.Kind != llm.Invalid || !strings.Contains(e.Msg, "no messages") {
		t.Errorf("got %v", e)
	}
}

func TestFromEnv(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "k2")
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/gw/")
	cfg := FromEnv()
	if cfg.APIKey != "k2" || cfg.BaseURL != "http://127.0.0.1:9/gw/" {
		t.Errorf("%+v", cfg)
	}
	c, err := New(cfg)
	if err != nil || c.ep.URL.String() != "http://127.0.0.1:9/gw/v1/messages" {
		t.Errorf("endpoint %v err %v", c.ep.URL, err)
	}
}

func TestNewRejectsBadBaseURL(t *testing.T) {
	for _, u := range []string{"api.anthropic.com", "unix:///x", "https://"} {
		if _, err := New(Config{BaseURL: u}); err == nil {
			t.Errorf("New(%q) succeeded", u)
		}
	}
}
