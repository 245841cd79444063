package llm

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHTTPEndpointRejectsBadBaseURL(t *testing.T) {
	for _, base := range []string{"", "api.example.com/v1", "ftp://example.com", "http:///nohost", "://bad"} {
		_, err := NewHTTPEndpoint("openai", base, "/chat/completions", nil, 0, "", "")
		if err == nil || !strings.Contains(err.Error(), "openai: base URL") || !strings.Contains(err.Error(), "absolute http(s) URL") {
			t.Errorf("base %q: err = %v, want the provider, the field and the rule", base, err)
		}
	}
	ep, err := NewHTTPEndpoint("anthropic", "https://gw.example/ai/?x=1#frag", "/v1/messages", nil, 0, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if got := ep.URL.String(); got != "https://gw.example/ai/v1/messages?x=1" {
		t.Errorf("URL = %q", got)
	}
	if !strings.HasPrefix(ep.UserAgent, "diffpal/") {
		t.Errorf("UserAgent = %q", ep.UserAgent)
	}
}

// A response over MaxResponseBody is refused rather than read into memory,
// and the error names the limit without echoing the key.
func TestHTTPEndpointPostCapsTheBody(t *testing.T) {
	const key = "sk-test-0123456789"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Content-Type") != "application/json" || r.Header.Get("X-Extra") != "yes" {
			http.Error(w, "missing headers", http.StatusBadRequest)
			return
		}
		chunk := []byte(strings.Repeat("x", 1<<20))
		for range MaxResponseBody>>20 + 1 {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	ep, err := NewHTTPEndpoint("openai", srv.URL, "/chat/completions", srv.Client(), 0, "", key)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = ep.Post(context.Background(), []byte(`{}`), http.Header{"X-Extra": {"yes"}})
	var e *Error
	if !errors.As(err, &e) || e.Kind != Invalid || e.Status != http.StatusOK || !strings.Contains(e.Msg, "response body exceeds 16777216 bytes") {
		t.Fatalf("err = %#v, want Invalid with the size limit", err)
	}
	if strings.Contains(e.Error(), key) {
		t.Errorf("key leaked: %v", e)
	}
}
