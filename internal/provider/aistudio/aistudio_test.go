package aistudio

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/diffpalhq/diffpal/internal/provider/llm"
)

// fakeGemini speaks generateContent's wire format on loopback.
type fakeGemini struct {
	mu     sync.Mutex
	paths  []string
	keys   []string
	bodies []map[string]any
	status []int
	text   string
}

func (f *fakeGemini) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	json.Unmarshal(raw, &body)
	f.mu.Lock()
	f.paths = append(f.paths, r.URL.Path)
	f.keys = append(f.keys, r.Header.Get("x-goog-api-key"))
	f.bodies = append(f.bodies, body)
	st := 0
	if len(f.status) > 0 {
		st, f.status = f.status[0], f.status[1:]
	}
	text := f.text
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if st != 0 {
		w.WriteHeader(st)
		io.WriteString(w, `{"error":{"code":`+http.StatusText(st)+`,"message":"scripted","status":"RESOURCE_EXHAUSTED"}}`)
		return
	}
	out, _ := json.Marshal(map[string]any{
		"candidates":    []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": text}}}, "finishReason": "STOP", "index": 0}},
		"usageMetadata": map[string]any{"promptTokenCount": 120, "candidatesTokenCount": 30, "totalTokenCount": 150},
		"modelVersion":  "gemini-test-001",
	})
	w.Write(out)
}

func request() llm.Request {
	return llm.Request{System: "You review code.", Messages: []llm.Message{{Role: "user", Content: "Review."}, {Role: "assistant", Content: "{}"}, {Role: "user", Content: "Fix it."}},
		Schema: llm.AnswerSchema, SchemaName: llm.AnswerSchemaName, MaxTokens: 1000}
}

func TestGenerateContentWireFormat(t *testing.T) {
	fake := &fakeGemini{text: `{"candidates":[],"coverage_gaps":[],"unverified":[]}`}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	c, err := New(Config{BaseURL: srv.URL + "/v1beta", APIKey: "AIza-test", Model: "gemini-2.5-flash"})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Complete(context.Background(), request())
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.JSON) != fake.text || resp.Usage.InputTokens != 120 || resp.Usage.OutputTokens != 30 || resp.Model != "gemini-test-001" {
		t.Errorf("response = %+v", resp)
	}
	if fake.paths[0] != "/v1beta/models/gemini-2.5-flash:generateContent" || fake.keys[0] != "AIza-test" {
		t.Errorf("path %s key %q", fake.paths[0], fake.keys[0])
	}
	b := fake.bodies[0]
	gc := b["generationConfig"].(map[string]any)
	if gc["responseMimeType"] != "application/json" || gc["maxOutputTokens"] != float64(1000) {
		t.Errorf("generationConfig = %v", gc)
	}
	schema, _ := json.Marshal(gc["responseSchema"])
	if strings.Contains(string(schema), "additionalProperties") || !strings.Contains(string(schema), `"nullable":true`) {
		t.Errorf("responseSchema is not the OpenAPI subset: %s", schema)
	}
	contents := b["contents"].([]any)
	if len(contents) != 3 || contents[1].(map[string]any)["role"] != "model" {
		t.Errorf("contents = %v", contents)
	}
	if sys := b["systemInstruction"].(map[string]any)["parts"].([]any)[0].(map[string]any)["text"]; sys != "You review code." {
		t.Errorf("systemInstruction = %v", sys)
	}
}

func TestFailuresAreClassified(t *testing.T) {
	for _, tc := range []struct {
		status int
		text   string
		kind   llm.Kind
	}{
		{429, "", llm.Transient},
		{403, "", llm.Auth},
		{400, "", llm.Invalid},
		{0, "Looks fine to me.", llm.Malformed},
	} {
		fake := &fakeGemini{text: tc.text}
		if tc.status != 0 {
			fake.status = []int{tc.status}
		}
		srv := httptest.NewServer(fake)
		c, _ := New(Config{BaseURL: srv.URL, APIKey: "AIza-secret-key", Model: "m"})
		_, err := c.Complete(context.Background(), request())
		srv.Close()
		var e *llm.Error
		if !errors.As(err, &e) || e.Kind != tc.kind {
			t.Errorf("status %d: %v, want %s", tc.status, err, tc.kind)
		}
		if err != nil && strings.Contains(err.Error(), "AIza-secret-key") {
			t.Error("the key reached the error")
		}
	}
	c, _ := New(Config{Model: "m"})
	if _, err := c.Complete(context.Background(), request()); llm.KindOf(err) != llm.Auth || !strings.Contains(err.Error(), APIKeyEnv) {
		t.Errorf("no key: %v", err)
	}
}
