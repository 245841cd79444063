package openai

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

const testKey = "sk-test-SECRET-0123456789"

// recorded is one request the fake server saw.
type recorded struct {
	Method, Path, RawQuery string
	Header                 http.Header
	Body                   map[string]any
}

// fakeServer is a loopback OpenAI-compatible endpoint with scripted
// replies.
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
		f.reqs = append(f.reqs, recorded{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Clone(), m})
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

func completion(content string) string {
	b, _ := json.Marshal(content)
	return `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-test-2026-01-01",
	"choices":[{"index":0,"message":{"role":"assistant","content":` + string(b) + `,"refusal":null},"finish_reason":"stop"}],
	"usage":{"prompt_tokens":120,"completion_tokens":30,"total_tokens":150,"prompt_tokens_details":{"cached_tokens":64}}}`
}

var testSchema = json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"],"additionalProperties":false}`)

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
	cfg := Config{BaseURL: base, APIKey: testKey, Model: "gpt-test"}
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
	if strings.Contains(e.Error(), testKey) || strings.Contains(e.Msg, testKey) {
		t.Fatalf("error leaks the API key: %v", e)
	}
	if e.Provider != "openai" {
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
	f := newFake(t, jsonReply(200, completion(`{"ok":true}`)))
	c := newClient(t, f.URL+"/v1/", nil)
	req := testRequest()
	req.Reasoning = "high"
	req.MaxTokens = 2048
	resp, err := c.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.JSON) != `{"ok":true}` {
		t.Errorf("JSON = %s", resp.JSON)
	}
	if resp.Model != "gpt-test-2026-01-01" {
		t.Errorf("Model = %q", resp.Model)
	}
	if want := (llm.Usage{InputTokens: 120, OutputTokens: 30, CachedInputTokens: 64}); resp.Usage != want {
		t.Errorf("Usage = %+v, want %+v", resp.Usage, want)
	}

	got := f.last(t)
	if got.Method != "POST" || got.Path != "/v1/chat/completions" {
		t.Errorf("%s %s", got.Method, got.Path)
	}
	if h := got.Header.Get("Authorization"); h != "Bearer "+testKey {
		t.Errorf("Authorization = %q", h)
	}
	if h := got.Header.Get("Content-Type"); h != "application/json" {
		t.Errorf("Content-Type = %q", h)
	}
	if h := got.Header.Get("User-Agent"); !strings.HasPrefix(h, "diffpal/") {
		t.Errorf("User-Agent = %q", h)
	}
	want := mustJSON(t, `{
		"model": "gpt-test",
		"messages": [
			{"role":"system","content":"You review diffs."},
			{"role":"user","content":"review this"},
			{"role":"assistant","content":"{bad"},
			{"role":"user","content":"fix it"}
		],
		"response_format": {"type":"json_schema","json_schema":{"name":"findings","strict":true,
			"schema":{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"],"additionalProperties":false}}},
		"reasoning_effort": "high",
		"max_completion_tokens": 2048
	}`)
	if !reflect.DeepEqual(any(got.Body), want) {
		gb, _ := json.MarshalIndent(got.Body, "", "  ")
		t.Errorf("request body:\n%s", gb)
	}
}

func TestOptionalFieldsOmitted(t *testing.T) {
	f := newFake(t, jsonReply(200, completion(`{"ok":true}`)))
	c := newClient(t, f.URL, func(c *Config) { c.APIKey = ""; c.Model = "llama3" })
	_, err := c.Complete(context.Background(), llm.Request{Messages: []llm.Message{{Content: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	got := f.last(t)
	want := mustJSON(t, `{"model":"llama3","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_object"}}`)
	if !reflect.DeepEqual(any(got.Body), want) {
		t.Errorf("body = %v", got.Body)
	}
	if _, ok := got.Header["Authorization"]; ok {
		t.Errorf("Authorization sent without a key")
	}
	if got.Path != "/chat/completions" {
		t.Errorf("path = %s", got.Path)
	}
}

func TestAzureStyle(t *testing.T) {
	f := newFake(t, jsonReply(200, completion(`{"ok":true}`)))
	c := newClient(t, f.URL+"/openai/deployments/gpt4o?api-version=2024-10-21", func(c *Config) {
		c.APIKeyHeader = "api-key"
		c.LegacyMaxTokens = true
	})
	req := testRequest()
	req.MaxTokens = 100
	if _, err := c.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	got := f.last(t)
	if got.Path != "/openai/deployments/gpt4o/chat/completions" || got.RawQuery != "api-version=2024-10-21" {
		t.Errorf("URL = %s?%s", got.Path, got.RawQuery)
	}
	if got.Header.Get("api-key") != testKey || got.Header.Get("Authorization") != "" {
		t.Errorf("auth headers = %v", got.Header)
	}
	if got.Body["max_tokens"] != float64(100) || got.Body["max_completion_tokens"] != nil {
		t.Errorf("max tokens fields: %v", got.Body)
	}
}

func TestFencedContentAccepted(t *testing.T) {
	f := newFake(t, jsonReply(200, completion("```json\n{\"ok\":true}\n```")))
	c := newClient(t, f.URL, nil)
	resp, err := c.Complete(context.Background(), testRequest())
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.JSON) != `{"ok":true}` {
		t.Errorf("JSON = %s", resp.JSON)
	}
}

func TestMalformedOutput(t *testing.T) {
	cases := []struct {
		name, body, want string
	}{
		{"prose", completion("Sure! The diff looks fine."), "not valid JSON: Sure! The diff looks fine."},
		{"truncated", strings.Replace(completion(`{"ok":tr`), `"stop"`, `"length"`, 1), "cut off at the token limit"},
		{"refusal", `{"model":"m","choices":[{"message":{"role":"assistant","content":null,"refusal":"I can't help with that."},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2}}`, "model refused: I can't help with that."},
		{"empty", completion(""), "empty content"},
		{"no choices", `{"model":"m","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":0}}`, "no choices"},
		{"not a completion", `<html>gateway</html>`, "not a chat completion"},
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
				t.Errorf("JSON = %s on error", resp.JSON)
			}
			if tc.name == "prose" && resp.Usage.InputTokens != 120 {
				t.Errorf("usage not kept on malformed output: %+v", resp.Usage)
			}
		})
	}
}

func TestRateLimitRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	body := `{"error":{"message":"Rate limit reached for gpt-test","type":"requests","param":null,"code":"rate_limit_exceeded"}}`
	cases := []struct {
		name string
		hdr  []string
		want time.Duration
	}{
		{"seconds", []string{"Retry-After", "7"}, 7 * time.Second},
		{"date", []string{"Retry-After", now.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second},
		{"past date", []string{"Retry-After", now.Add(-time.Minute).Format(http.TimeFormat)}, 0},
		{"ms wins", []string{"Retry-After", "7", "retry-after-ms", "1500"}, 1500 * time.Millisecond},
		{"garbage", []string{"Retry-After", "soon"}, 0},
		{"none", nil, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, jsonReply(429, body, tc.hdr...))
			c := newClient(t, f.URL, nil)
			c.ep.Now = func() time.Time { return now }
			_, err := c.Complete(context.Background(), testRequest())
			e := asLLMError(t, err)
			if e.Kind != llm.Transient || e.Status != 429 || e.RetryAfter != tc.want {
				t.Errorf("got kind=%v status=%d retry=%v, want transient 429 %v", e.Kind, e.Status, e.RetryAfter, tc.want)
			}
			if !strings.Contains(e.Msg, "Rate limit reached for gpt-test") {
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
		{401, `{"error":{"message":"Incorrect API key provided: sk-test-SECRET-0123456789.","type":"invalid_request_error","code":"invalid_api_key"}}`, llm.Auth, "Incorrect API key provided: [REDACTED]."},
		{403, `{"error":{"message":"forbidden"}}`, llm.Auth, "forbidden"},
		{400, `{"error":{"message":"Invalid schema for response_format 'findings'","type":"invalid_request_error","param":"response_format","code":null}}`, llm.Invalid, "Invalid schema for response_format"},
		{404, `{"error":"model \"nope\" not found, try pulling it first"}`, llm.Invalid, `model "nope" not found`},
		{422, `{"detail":"unprocessable"}`, llm.Invalid, "unprocessable"},
		{408, ``, llm.Transient, "Request Timeout"},
		{409, `{"message":"busy"}`, llm.Transient, "busy"},
		{500, `{"error":{"message":"The server had an error while processing your request."}}`, llm.Transient, "The server had an error"},
		{503, `upstream connect error`, llm.Transient, "upstream connect error"},
		{429, `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`, llm.Auth, "exceeded your current quota"},
	}
	for _, tc := range cases {
		t.Run(http.StatusText(tc.status), func(t *testing.T) {
			f := newFake(t, jsonReply(tc.status, tc.body, "X-Request-Id", "req_123"))
			c := newClient(t, f.URL, nil)
			_, err := c.Complete(context.Background(), testRequest())
			e := asLLMError(t, err)
			if e.Kind != tc.kind || e.Status != tc.status {
				t.Errorf("kind=%v status=%d, want %v %d", e.Kind, e.Status, tc.kind, tc.status)
			}
			if !strings.Contains(e.Msg, tc.msg) || !strings.Contains(e.Msg, "req_123") {
				t.Errorf("Msg = %q, want it to contain %q and the request id", e.Msg, tc.msg)
			}
			if llm.KindOf(err) != tc.kind {
				t.Errorf("KindOf = %v", llm.KindOf(err))
			}
		})
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
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("took %v", d)
	}
}

func TestCallerCancel(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	c := newClient(t, f.URL, nil)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := c.Complete(ctx, testRequest())
	e := asLLMError(t, err)
	if e.Kind != llm.Transient || !errors.Is(err, context.Canceled) {
		t.Errorf("got %v", e)
	}
}

func TestConnectionRefused(t *testing.T) {
	f := httptest.NewServer(http.NotFoundHandler())
	base := f.URL
	f.Close()
	c := newClient(t, base, nil)
	_, err := c.Complete(context.Background(), testRequest())
	e := asLLMError(t, err)
	if e.Kind != llm.Transient || !strings.Contains(e.Msg, "connection error") {
		t.Errorf("got %v", e)
	}
	if strings.Contains(e.Msg, base) {
		t.Errorf("Msg repeats the URL: %q", e.Msg)
	}
}

func TestMissingKeyForOpenAI(t *testing.T) {
	c, err := New(Config{Model: "gpt-test"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Complete(context.Background(), testRequest())
	if e := asLLMError(t, err); e.Kind != llm.Auth || !strings.Contains(e.Msg, "OPENAI_API_KEY") {
		t.Errorf("got %v", e)
	}
	if c.Endpoint() != "https://api.openai.com/v1/chat/completions" {
		t.Errorf("Endpoint = %s", c.Endpoint())
	}
}

func TestNoModel(t *testing.T) {
	c := newClient(t, "http://127.0.0.1:1", func(c *Config) { c.Model = "" })
	_, err := c.Complete(context.Background(), testRequest())
	if e := asLLMError(t, err); e.Kind != llm.Invalid {
		t.Errorf("got %v", e)
	}
}

func TestBadSchemaJSON(t *testing.T) {
	c := newClient(t, "http://127.0.0.1:1", nil)
	req := testRequest()
	req.Schema = json.RawMessage(`{"type":`)
	_, err := c.Complete(context.Background(), req)
	if e := asLLMError(t, err); e.Kind != llm.Invalid {
		t.Errorf("got %v", e)
	}
}

func TestNewRejectsBadBaseURL(t *testing.T) {
	for _, u := range []string{"api.openai.com/v1", "ftp://x/v1", "http://"} {
		if _, err := New(Config{BaseURL: u}); err == nil {
			t.Errorf("New(%q) succeeded", u)
		}
	}
}

func TestFromEnv(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "k1")
	t.Setenv("OPENAI_BASE_URL", " http://127.0.0.1:8000/v1 ")
	cfg := FromEnv()
	if cfg.APIKey != "k1" || cfg.BaseURL != "http://127.0.0.1:8000/v1" {
		t.Errorf("%+v", cfg)
	}
	t.Setenv("OPENAI_BASE_URL", "")
	if cfg := FromEnv(); cfg.BaseURL != "" {
		t.Errorf("BaseURL = %q", cfg.BaseURL)
	}
	c, err := New(FromEnv())
	if err != nil || c.ep.URL.String() != DefaultBaseURL+"/chat/completions" {
		t.Errorf("endpoint %v err %v", c.ep.URL, err)
	}
}

func TestSchemaName(t *testing.T) {
	for in, want := range map[string]string{"": "answer", "findings": "findings", "my schema.v1": "my_schema_v1", strings.Repeat("a", 70): strings.Repeat("a", 64)} {
		if got := SchemaName(in); got != want {
			t.Errorf("SchemaName(%q) = %q", in, got)
		}
	}
}

func TestRedactURL(t *testing.T) {
	got := llm.RedactURL("https://user:pw@h/openai?api-version=1&key=zzz")
	if strings.Contains(got, "pw") || strings.Contains(got, "zzz") || !strings.Contains(got, "api-version=1") {
		t.Errorf("redactURL = %s", got)
	}
}
