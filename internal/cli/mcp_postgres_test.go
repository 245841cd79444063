package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/url"
	"strings"
	"testing"

	"github.com/diffpalhq/diffpal/internal/mcpserver"
	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/diffpalhq/diffpal/internal/qa/store/postgres/pgtest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func clearMcpEnv(t *testing.T) {
	t.Helper()
	for _, name := range []string{envMcpTTL, envMcpMaxSessions, envMcpModelPolicy, envMcpModelMode, envMcpStore,
		envMcpHTTP, envMcpTokenEnv, envMcpMaxBody, envMcpRemoveFinished, envMcpLogFormat} {
		t.Setenv(name, "")
	}
}

// TestMcpPostgresStore: with --store postgres://… (and DIFFPAL_MCP_STORE
// with a postgresql:// URL) sessions live in PostgreSQL: a session started
// by one server process is there after that process is stopped and a new
// one started, and --max-sessions is enforced by the store.
func TestMcpPostgresStore(t *testing.T) {
	clearMcpEnv(t)
	c := pgtest.NewCluster(t)
	dbURL := c.URL(t)
	cs, stop := startStdio(t, "--store", dbURL, "--max-sessions", "2")
	res := call(t, cs, qa.ToolStart, map[string]any{"task_type": "qa_planning"})
	if res.IsError {
		t.Fatal(res.Content[0].(*mcp.TextContent).Text)
	}
	runID := res.StructuredContent.(map[string]any)["run_id"].(string)
	if code := stop(); code != ExitOK {
		t.Fatalf("exit %d", code)
	}

	t.Setenv(envMcpStore, "postgresql://"+strings.TrimPrefix(dbURL, "postgres://"))
	cs, stop = startStdio(t, "--max-sessions", "2")
	defer stop()
	res = call(t, cs, qa.ToolGet, map[string]any{"run_id": runID})
	if res.IsError || res.StructuredContent.(map[string]any)["task_type"] != "qa_planning" {
		t.Fatalf("after restart: %+v", res.Content[0])
	}
	if res := call(t, cs, qa.ToolStart, map[string]any{"task_type": "other"}); res.IsError {
		t.Fatal("second start failed")
	}
	res = call(t, cs, qa.ToolStart, map[string]any{"task_type": "other"})
	if !res.IsError || res.Content[0].(*mcp.TextContent).Text != "session limit" {
		t.Fatalf("--max-sessions 2 not enforced by the store: %+v", res.Content[0])
	}
}

// TestMcpPostgresPasswordNeverPrinted: a store that cannot be reached (or a
// URL that does not parse) fails with exit 2 naming --store, and the
// password appears nowhere in the output.
func TestMcpPostgresPasswordNeverPrinted(t *testing.T) {
	dir := t.TempDir()
	unreachable := (&url.URL{Scheme: "postgres", User: url.UserPassword("diffpal", "hunter2-secret"), Path: "/qa",
		RawQuery: url.Values{"host": {dir}, "connect_timeout": {"2"}}.Encode()}).String()
	for _, c := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{nil, []string{"--store", unreachable}, "--store postgres://diffpal:xxxxx@"},
		{map[string]string{envMcpStore: unreachable}, nil, "unavailable"},
		{nil, []string{"--store", "postgres://diffpal:hunter2-secret@db:notaport/qa"}, "--store"},
		{nil, []string{"--store", "postgresql://diffpal:hunter2-secret@[::1/qa"}, "not shown"},
	} {
		code, stderr := runMcp(t, c.env, c.args...)
		if code != ExitUsage || !strings.Contains(stderr, c.want) || strings.Contains(stderr, "hunter2") {
			t.Errorf("%v %v: exit %d, stderr %q; want exit 2 with %q and no password", c.env, c.args, code, stderr, c.want)
		}
	}
}

// TestMcpLogFormat: --log-format json (or CI=true) makes every log record
// a JSON object, including the serving line; text is the default.
func TestMcpLogFormat(t *testing.T) {
	for _, c := range []struct {
		name string
		env  map[string]string
		args []string
		json bool
	}{
		{"default", nil, nil, false},
		{"flag", nil, []string{"--log-format", "json"}, true},
		{"env", map[string]string{envMcpLogFormat: "json"}, nil, true},
		{"CI", map[string]string{"CI": "true"}, nil, true},
		{"flag beats CI", map[string]string{"CI": "true"}, []string{"--log-format", "text"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := map[string]string{"CI": ""}
			for k, v := range c.env {
				env[k] = v
			}
			getenv := func(k string) string { return env[k] }
			ctx, cancel := context.WithCancel(context.Background())
			addrc := make(chan net.Addr, 1)
			var stderr bytes.Buffer
			changed := map[string]bool{"http": true}
			o := &McpOptions{IO: &IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: &stderr},
				Getenv: getenv, HTTP: "127.0.0.1:0", changed: changed, ready: func(a net.Addr) { addrc <- a }}
			if len(c.args) == 2 {
				o.LogFormat, changed["log-format"] = c.args[1], true
			}
			done := make(chan error, 1)
			go func() { done <- mcpRun(ctx, o) }()
			select {
			case <-addrc:
			case err := <-done:
				t.Fatalf("mcpRun: %v", err)
			}
			cancel()
			<-done
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			if len(lines) < 2 {
				t.Fatalf("stderr: %q", stderr.String())
			}
			for _, line := range lines {
				var rec map[string]any
				isJSON := json.Unmarshal([]byte(line), &rec) == nil
				if isJSON != c.json {
					t.Fatalf("line %q: JSON %v, want %v", line, isJSON, c.json)
				}
			}
			if !strings.Contains(lines[0], "serving http://127.0.0.1:") || !strings.Contains(lines[0], mcpserver.HTTPPath+" (stateless") {
				t.Errorf("serving line: %s", lines[0])
			}
		})
	}
}
