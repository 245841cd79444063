package mcpserver

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/diffpalhq/diffpal/internal/qa/store"
)

func get(t *testing.T, url string, hdr map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
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

// /healthz is always 200; /readyz follows the Ready check; both answer
// without the bearer token, even from another origin, and say nothing
// but ok or unavailable; readiness changes are logged once each, with the
// cause, which never reaches the answer.
func TestHealthAndReadiness(t *testing.T) {
	orch, err := qa.New(qa.Config{Store: store.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(orch, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var down atomic.Bool
	var logs bytes.Buffer
	h, err := NewHTTPHandler(srv, HTTPOptions{Token: testToken, ReadyLogger: slog.New(slog.NewTextHandler(&logs, nil)),
		Ready: func(ctx context.Context) error {
			if down.Load() {
				return errors.New("db host-17 password=hunter2 refused")
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	defer ts.Close()
	foreign := map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}
	for _, hdr := range []map[string]string{nil, foreign} {
		if code, body := get(t, ts.URL+HealthPath, hdr); code != http.StatusOK || body != "ok\n" {
			t.Fatalf("healthz: %d %q", code, body)
		}
		if code, body := get(t, ts.URL+ReadyPath, hdr); code != http.StatusOK || body != "ok\n" {
			t.Fatalf("readyz: %d %q", code, body)
		}
	}
	down.Store(true)
	for range 3 {
		code, body := get(t, ts.URL+ReadyPath, nil)
		if code != http.StatusServiceUnavailable || strings.TrimSpace(body) != "unavailable" {
			t.Fatalf("readyz while the store is down: %d %q", code, body)
		}
		if code, _ := get(t, ts.URL+HealthPath, nil); code != http.StatusOK {
			t.Fatalf("healthz while the store is down: %d", code)
		}
	}
	down.Store(false)
	if code, _ := get(t, ts.URL+ReadyPath, nil); code != http.StatusOK {
		t.Fatalf("readyz after recovery: %d", code)
	}
	if n := strings.Count(logs.String(), "not ready"); n != 1 || !strings.Contains(logs.String(), "answers again") {
		t.Fatalf("readiness log (want one loss, one recovery):\n%s", logs.String())
	}
	if code, _ := post(t, ts.URL, nil, initBody); code != http.StatusUnauthorized {
		t.Fatalf("the MCP endpoint lost its token check: %d", code)
	}
	resp, err := http.Post(ts.URL+ReadyPath, "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST /readyz: %d", resp.StatusCode)
	}
}

// Serve's graceful shutdown: once ctx is done no new connection is
// accepted, and a request already in flight runs to completion with its
// context intact and is answered.
func TestServeFinishesInFlight(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	started, release := make(chan struct{}), make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release
		if r.Context().Err() != nil {
			http.Error(w, "cancelled", http.StatusInternalServerError)
			return
		}
		_, _ = io.WriteString(w, "finished")
	})
	var logs bytes.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, ln, h, ServeOptions{ShutdownTimeout: time.Minute, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	}()
	addr := "http://" + ln.Addr().String()
	answer := make(chan string, 1)
	go func() {
		resp, err := http.Get(addr + "/slow")
		if err != nil {
			answer <- "error: " + err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		answer <- string(b)
	}()
	<-started
	cancel()
	// Shutdown closes the listener first: wait until new connections are
	// refused, then let the in-flight request finish.
	for {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			break
		}
		c.Close()
		time.Sleep(5 * time.Millisecond)
	}
	close(release)
	if got := <-answer; got != "finished" {
		t.Fatalf("in-flight request answered %q, want finished", got)
	}
	if err := <-done; err != context.Canceled {
		t.Fatalf("Serve returned %v", err)
	}
	if !strings.Contains(logs.String(), "every in-flight call answered") {
		t.Errorf("shutdown log: %s", logs.String())
	}
}
