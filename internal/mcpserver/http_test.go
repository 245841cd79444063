package mcpserver

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/diffpalhq/diffpal/internal/qa/store"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const testToken = "s3cret-token-0123456789"

// bearer adds the Authorization header to every request.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// replica is one HTTP server process: its own orchestrator and MCP server
// over a shared store.
func replica(t *testing.T, st store.Store, token string) *httptest.Server {
	t.Helper()
	orch, err := qa.New(qa.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(orch, Options{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := NewHTTPHandler(srv, HTTPOptions{Token: token, MaxBodyBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts
}

func httpClient(t *testing.T, url, token string) *mcp.ClientSession {
	t.Helper()
	hc := &http.Client{Transport: http.DefaultTransport}
	if token != "" {
		hc.Transport = bearer{token, http.DefaultTransport}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "http-test", Version: "1"}, nil).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url + HTTPPath, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestHTTPStatelessReplicas: a session started through one replica is
// advanced and read through another; no transport session ties a client
// to a process.
func TestHTTPStatelessReplicas(t *testing.T) {
	st := store.NewMemory()
	a, b := replica(t, st, testToken), replica(t, st, testToken)
	ca, cb := httpClient(t, a.URL, testToken), httpClient(t, b.URL, testToken)
	var s qa.Session
	mustOK(t, callTool(t, ca, qa.ToolStart, qa.StartInput{TaskType: qa.TaskOther}), qa.ToolStart, &s)
	mustOK(t, callTool(t, cb, qa.ToolAdvance, qa.AdvanceInput{RunID: s.RunID, CompletedStep: qa.StepTriage,
		Status: qa.OutcomeBlocked, ExpectedRevision: ptr(int64(0))}), qa.ToolAdvance, &s)
	mustOK(t, callTool(t, ca, qa.ToolGet, qa.GetInput{RunID: s.RunID}), qa.ToolGet, &s)
	if s.Revision != 1 || s.Status != qa.StatusBlocked {
		t.Fatalf("replica A sees revision %d status %s", s.Revision, s.Status)
	}
	res := callTool(t, cb, qa.ToolAdvance, qa.AdvanceInput{RunID: s.RunID, CompletedStep: qa.StepTriage,
		Status: qa.OutcomeBlocked, ExpectedRevision: ptr(int64(0))})
	if !res.IsError || !strings.HasPrefix(resultText(res), "revision conflict") {
		t.Fatalf("stale write through replica B: %v %s", res.IsError, resultText(res))
	}
	tools, err := ca.ListTools(context.Background(), nil)
	if err != nil || len(tools.Tools) != 10 {
		t.Fatalf("tools/list over HTTP: %v, %d tools", err, len(tools.Tools))
	}
}

func post(t *testing.T, url string, hdr map[string]string, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+HTTPPath, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-06-18")
	for k, v := range hdr {
		if strings.EqualFold(k, "Host") {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}`

func TestHTTPProtection(t *testing.T) {
	ts := replica(t, store.NewMemory(), testToken)
	auth := "Bearer " + testToken
	cases := []struct {
		name string
		hdr  map[string]string
		body string
		want int
		text string
	}{
		{"no token", nil, initBody, http.StatusUnauthorized, "unauthorized"},
		{"wrong token", map[string]string{"Authorization": "Bearer nope"}, initBody, http.StatusUnauthorized, "unauthorized"},
		{"basic auth", map[string]string{"Authorization": "Basic " + testToken}, initBody, http.StatusUnauthorized, "unauthorized"},
		{"token", map[string]string{"Authorization": auth}, initBody, http.StatusOK, `"serverInfo"`},
		{"lower-case scheme", map[string]string{"Authorization": "bearer " + testToken}, initBody, http.StatusOK, `"serverInfo"`},
		{"cross-origin browser", map[string]string{"Authorization": auth, "Origin": "https://evil.example"}, initBody,
			http.StatusForbidden, "cross-origin"},
		{"cross-site fetch", map[string]string{"Authorization": auth, "Sec-Fetch-Site": "cross-site"}, initBody,
			http.StatusForbidden, "cross-origin"},
		{"same origin", map[string]string{"Authorization": auth, "Origin": ts.URL}, initBody, http.StatusOK, `"serverInfo"`},
		{"dns rebinding", map[string]string{"Authorization": auth, "Host": "attacker.example"}, initBody,
			http.StatusForbidden, "invalid Host"},
		{"body too large", map[string]string{"Authorization": auth}, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"x":"` +
			strings.Repeat("a", 70<<10) + `"}}`, http.StatusRequestEntityTooLarge, "exceeds"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, body := post(t, ts.URL, c.hdr, c.body)
			if code != c.want || !strings.Contains(body, c.text) {
				t.Fatalf("status %d body %q, want %d containing %q", code, body, c.want, c.text)
			}
		})
	}
	// Stateless: GET (a standalone SSE stream) is not offered.
	req, _ := http.NewRequest(http.MethodGet, ts.URL+HTTPPath, nil)
	req.Header.Set("Authorization", auth)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: status %d, want 405", resp.StatusCode)
	}
	// The SDK client without the token cannot connect.
	hc := &http.Client{}
	_, err = mcp.NewClient(&mcp.Implementation{Name: "x", Version: "1"}, nil).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL + HTTPPath, HTTPClient: hc}, nil)
	if err == nil {
		t.Error("client without token connected")
	}
}

func TestHTTPNoTokenOnLoopback(t *testing.T) {
	ts := replica(t, store.NewMemory(), "")
	if code, body := post(t, ts.URL, nil, initBody); code != http.StatusOK {
		t.Fatalf("status %d %s", code, body)
	}
	cs := httpClient(t, ts.URL, "")
	mustOK(t, callTool(t, cs, qa.ToolCatalog, nil), qa.ToolCatalog, nil)
}

func TestIsLoopbackAddr(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8080": true, "127.0.0.2:0": true, "[::1]:8765": true, "localhost:1": true, "LOCALHOST:1": true,
		"0.0.0.0:8080": false, ":8080": false, "[::]:80": false, "192.168.1.5:80": false, "example.com:80": false,
		"10.0.0.1:0": false,
	} {
		got, err := IsLoopbackAddr(addr)
		if err != nil || got != want {
			t.Errorf("IsLoopbackAddr(%q) = %v, %v; want %v", addr, got, err, want)
		}
	}
	for _, bad := range []string{"8080", "127.0.0.1", "127.0.0.1:http", "127.0.0.1:70000", "[::1"} {
		if _, err := IsLoopbackAddr(bad); err == nil {
			t.Errorf("IsLoopbackAddr(%q) accepted", bad)
		}
	}
}

func TestServeHTTPShutdown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ServeHTTP(ctx, ln, http.NotFoundHandler()) }()
	resp, err := http.Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("ServeHTTP returned %v, want context.Canceled", err)
	}
}
