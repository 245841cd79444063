package cli

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/diffpalhq/diffpal/internal/mcpserver"
	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// runMcp runs `diffpal mcp args...` through Run with the given environment
// (DIFFPAL_MCP_* variables are cleared first) and returns the exit code and
// stderr.
func runMcp(t *testing.T, env map[string]string, args ...string) (int, string) {
	t.Helper()
	for _, name := range []string{envMcpTTL, envMcpMaxSessions, envMcpModelPolicy, envMcpModelMode, envMcpStore,
		envMcpHTTP, envMcpTokenEnv, envMcpMaxBody, envMcpRemoveFinished, envMcpLogFormat} {
		t.Setenv(name, "")
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	var stderr bytes.Buffer
	ios := &IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: &stderr}
	code := Run(context.Background(), append([]string{"mcp"}, args...), ios)
	return code, stderr.String()
}

func writeFile(t *testing.T, name, data string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestMcpUsageErrors: every invalid flag or variable exits 2 with a
// message naming it, before anything is served.
func TestMcpUsageErrors(t *testing.T) {
	badPolicy := writeFile(t, "policy.json", `{"provider":"openai","mode":"sometimes"}`)
	for _, c := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"ttl zero", nil, []string{"--ttl", "0"}, "--ttl"},
		{"ttl garbage", nil, []string{"--ttl", "soon"}, "--ttl"},
		{"ttl beyond storable expiries", nil, []string{"--ttl", "9223372036"}, "--ttl"},
		{"ttl env", map[string]string{envMcpTTL: "-5m"}, nil, envMcpTTL},
		{"max sessions", nil, []string{"--max-sessions", "0"}, "--max-sessions"},
		{"max sessions env", map[string]string{envMcpMaxSessions: "many"}, nil, envMcpMaxSessions},
		{"max body", nil, []string{"--max-body", "4 parsecs"}, "--max-body"},
		{"max body tiny", map[string]string{envMcpMaxBody: "12"}, nil, envMcpMaxBody},
		{"policy missing", nil, []string{"--model-policy", "/nonexistent/policy.json"}, "--model-policy"},
		{"policy invalid", map[string]string{envMcpModelPolicy: badPolicy}, nil, envMcpModelPolicy + " " + badPolicy + ": invalid model policy"},
		{"model mode", nil, []string{"--model-mode", "auto"}, "--model-mode"},
		{"store", nil, []string{"--store", "redis://x"}, "--store"},
		{"store sqlite no path", map[string]string{envMcpStore: "sqlite:"}, nil, envMcpStore},
		{"store postgres bad port", nil, []string{"--store", "postgres://u:pw@db:port/qa"}, "--store"},
		{"log format", nil, []string{"--log-format", "yaml"}, "--log-format"},
		{"log format env", map[string]string{envMcpLogFormat: "xml"}, nil, envMcpLogFormat},
		{"http addr", nil, []string{"--http", "8080"}, "--http"},
		{"http env", map[string]string{envMcpHTTP: "localhost:http"}, nil, envMcpHTTP},
		{"non-loopback without token", nil, []string{"--http", "0.0.0.0:0"}, "--token-env"},
		{"all interfaces without token", map[string]string{envMcpHTTP: ":8765"}, nil, envMcpHTTP},
		{"token env unset", map[string]string{"DIFFPAL_TEST_NO_TOKEN": ""}, []string{"--http", "0.0.0.0:0", "--token-env", "DIFFPAL_TEST_NO_TOKEN"}, "DIFFPAL_TEST_NO_TOKEN is unset or empty"},
		{"token too short", map[string]string{"DIFFPAL_TEST_TOKEN": "abc"}, []string{"--http", "127.0.0.1:0", "--token-env", "DIFFPAL_TEST_TOKEN"}, "at least 16"},
		{"token env bad name", nil, []string{"--http", "127.0.0.1:0", "--token-env", "MY-TOKEN"}, "--token-env"},
		{"token env without http", map[string]string{envMcpTokenEnv: "X"}, nil, envMcpTokenEnv + " applies to HTTP only"},
		{"positional argument", nil, []string{"serve"}, "unknown command"},
		{"unknown flag", nil, []string{"--port", "1"}, "unknown flag"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stderr := runMcp(t, c.env, c.args...)
			if code != ExitUsage || !strings.Contains(stderr, c.want) {
				t.Fatalf("exit %d, stderr %q; want exit 2 naming %q", code, stderr, c.want)
			}
		})
	}
}

func TestMcpResolve(t *testing.T) {
	policy := writeFile(t, "policy.json", `{"mode":"host_default"}`)
	env := map[string]string{envMcpTTL: "90", envMcpMaxSessions: "7", envMcpModelPolicy: policy,
		envMcpMaxBody: "8MiB", envMcpStore: "memory", "TOK": "0123456789abcdef0123"}
	o := &McpOptions{Getenv: func(k string) string { return env[k] }, TTL: "2h", HTTP: "0.0.0.0:9", TokenEnv: "TOK",
		changed: map[string]bool{"ttl": true, "http": true, "token-env": true}}
	cfg, err := o.resolve()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ttl != 2*time.Hour || cfg.maxSessions != 7 || cfg.maxBody != 8<<20 || !cfg.policy.HostDefault ||
		cfg.httpAddr != "0.0.0.0:9" || cfg.token != env["TOK"] || cfg.storeSpec != "memory" {
		t.Fatalf("cfg = %+v (the flag must win over %s, the variables fill the rest)", cfg, envMcpTTL)
	}
	o = &McpOptions{Getenv: func(string) string { return "" }, changed: map[string]bool{}}
	if cfg, err = o.resolve(); err != nil || cfg.ttl != qa.DefaultTTL || cfg.maxSessions != qa.DefaultMaxSessions ||
		cfg.maxBody != mcpserver.DefaultMaxRequestBytes || cfg.httpAddr != "" || cfg.policy.HostDefault {
		t.Fatalf("defaults: %+v %v", cfg, err)
	}
	o = &McpOptions{Getenv: func(k string) string { return map[string]string{envMcpModelPolicy: policy}[k] },
		ModelMode: "configured", changed: map[string]bool{"model-mode": true}}
	if cfg, err = o.resolve(); err != nil || cfg.policy.HostDefault {
		t.Fatalf("--model-mode configured must override the file's host_default: %+v %v", cfg, err)
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"4194304": 4 << 20, "4MiB": 4 << 20, "512KiB": 512 << 10, "1GiB": 1 << 30, "2048B": 2048, " 8 MiB ": 8 << 20} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-1", "1023", "2GiB", "4MB", "x"} {
		if _, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) accepted", in)
		}
	}
}

// startStdio connects an SDK client to `diffpal mcp` running in-process on
// stdio (the command's IOStreams).
func startStdio(t *testing.T, args ...string) (*mcp.ClientSession, func() int) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		code := Run(context.Background(), append([]string{"mcp"}, args...), &IOStreams{In: inR, Out: outW, ErrOut: &stderr})
		outW.Close()
		done <- code
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "cli-test", Version: "1"}, nil).
		Connect(context.Background(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatalf("connect: %v (stderr %s)", err, stderr.String())
	}
	stop := func() int {
		cs.Close()
		inW.Close()
		select {
		case code := <-done:
			return code
		case <-time.After(10 * time.Second):
			t.Fatal("diffpal mcp did not exit after stdin closed")
			return -1
		}
	}
	return cs, stop
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

func TestMcpStdioInProcess(t *testing.T) {
	for _, name := range []string{envMcpTTL, envMcpMaxSessions, envMcpModelPolicy, envMcpModelMode, envMcpStore,
		envMcpHTTP, envMcpTokenEnv, envMcpMaxBody, envMcpRemoveFinished} {
		t.Setenv(name, "")
	}
	cs, stop := startStdio(t, "--max-sessions", "1", "--model-mode", "host_default")
	res := call(t, cs, qa.ToolModelPolicy, nil)
	if res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, `"mode":"host_default"`) {
		t.Fatalf("model policy: %+v", res.Content[0])
	}
	if res := call(t, cs, qa.ToolStart, map[string]any{"task_type": "other"}); res.IsError {
		t.Fatal("first start failed")
	}
	res = call(t, cs, qa.ToolStart, map[string]any{"task_type": "other"})
	if !res.IsError || res.Content[0].(*mcp.TextContent).Text != "session limit" {
		t.Fatalf("--max-sessions 1 not applied: %+v", res.Content[0])
	}
	if code := stop(); code != ExitOK {
		t.Fatalf("exit %d after stdin closed, want 0", code)
	}
}

// TestMcpSQLiteStore: sessions in --store sqlite:PATH survive a restart.
func TestMcpSQLiteStore(t *testing.T) {
	for _, name := range []string{envMcpTTL, envMcpMaxSessions, envMcpModelPolicy, envMcpModelMode, envMcpStore,
		envMcpHTTP, envMcpTokenEnv, envMcpMaxBody, envMcpRemoveFinished} {
		t.Setenv(name, "")
	}
	path := filepath.Join(t.TempDir(), "qa.db")
	cs, stop := startStdio(t, "--store", "sqlite:"+path)
	res := call(t, cs, qa.ToolStart, map[string]any{"task_type": "qa_planning"})
	if res.IsError {
		t.Fatal(res.Content[0].(*mcp.TextContent).Text)
	}
	runID := res.StructuredContent.(map[string]any)["run_id"].(string)
	if code := stop(); code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("store file: %v %v", fi, err)
	}
	cs, stop = startStdio(t, "--store", "sqlite:"+path)
	res = call(t, cs, qa.ToolGet, map[string]any{"run_id": runID})
	if res.IsError || res.StructuredContent.(map[string]any)["task_type"] != "qa_planning" {
		t.Fatalf("after restart: %+v", res.Content[0])
	}
	stop()
	if code, stderr := runMcp(t, nil, "--store", "sqlite:"+t.TempDir()); code != ExitUsage || !strings.Contains(stderr, "--store") {
		t.Fatalf("directory as store: exit %d %s", code, stderr)
	}
}

// TestMcpHTTPInProcess: the HTTP path binds, reports its address and stops
// on cancellation.
func TestMcpHTTPInProcess(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan net.Addr, 1)
	var stderr bytes.Buffer
	opts := &McpOptions{IO: &IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: &stderr},
		Getenv: func(string) string { return "" }, HTTP: "127.0.0.1:0", changed: map[string]bool{"http": true},
		ready: func(a net.Addr) { addrc <- a }}
	done := make(chan error, 1)
	go func() { done <- mcpRun(ctx, opts) }()
	var addr net.Addr
	select {
	case addr = <-addrc:
	case err := <-done:
		t.Fatalf("mcpRun: %v", err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "x", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: "http://" + addr.String() + mcpserver.HTTPPath}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res := call(t, cs, qa.ToolCatalog, nil); res.IsError {
		t.Fatal("catalog failed")
	}
	cs.Close()
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("mcpRun after cancel: %v", err)
	}
	if !strings.Contains(stderr.String(), "serving http://127.0.0.1:") {
		t.Errorf("stderr: %s", stderr.String())
	}
}

func TestMcpHelp(t *testing.T) {
	var out bytes.Buffer
	code := Run(context.Background(), []string{"mcp", "--help"}, &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: io.Discard})
	if code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"Examples:", "--http", "--token-env", "--store", "--ttl", "--max-sessions",
		"--model-policy", "--model-mode", "--max-body", "DIFFPAL_MCP_TOKEN_ENV", "host_default",
		"postgres://", "/healthz", "/readyz", "--log-format", "DIFFPAL_MCP_LOG_FORMAT", "SIGTERM"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--help lacks %q", want)
		}
	}
}

// TestMcpRemoveFinished: finished sessions are kept by default (a get after
// finish works); --remove-finished, or DIFFPAL_MCP_REMOVE_FINISHED, removes
// them at finish (issue 9, item 8).
func TestMcpRemoveFinished(t *testing.T) {
	for _, name := range []string{envMcpTTL, envMcpMaxSessions, envMcpModelPolicy, envMcpModelMode, envMcpStore,
		envMcpHTTP, envMcpTokenEnv, envMcpMaxBody, envMcpRemoveFinished} {
		t.Setenv(name, "")
	}
	finishThenGet := func(t *testing.T, args ...string) *mcp.CallToolResult {
		t.Helper()
		cs, stop := startStdio(t, args...)
		defer stop()
		res := call(t, cs, qa.ToolStart, map[string]any{"task_type": "other"})
		runID := res.StructuredContent.(map[string]any)["run_id"].(string)
		for _, c := range []struct {
			tool string
			args map[string]any
		}{
			{qa.ToolAdvance, map[string]any{"run_id": runID, "completed_step": "triage", "status": "blocked"}},
			{qa.ToolFinish, map[string]any{"run_id": runID, "outcome": "blocked"}},
		} {
			if res := call(t, cs, c.tool, c.args); res.IsError {
				t.Fatalf("%s: %s", c.tool, res.Content[0].(*mcp.TextContent).Text)
			}
		}
		return call(t, cs, qa.ToolGet, map[string]any{"run_id": runID})
	}
	if res := finishThenGet(t); res.IsError {
		t.Fatalf("default: finished session not retained: %s", res.Content[0].(*mcp.TextContent).Text)
	}
	for _, args := range [][]string{{"--remove-finished"}, {"--store", "sqlite:" + filepath.Join(t.TempDir(), "qa.db"), "--remove-finished"}} {
		if res := finishThenGet(t, args...); !res.IsError || res.Content[0].(*mcp.TextContent).Text != "unknown run_id" {
			t.Fatalf("%v: get after finish = %+v, want unknown run_id", args, res.Content[0])
		}
	}
	o := &McpOptions{Getenv: func(k string) string { return map[string]string{envMcpRemoveFinished: "1"}[k] }, changed: map[string]bool{}}
	if cfg, err := o.resolve(); err != nil || !cfg.removeFinished {
		t.Fatalf("%s=1: %+v %v", envMcpRemoveFinished, cfg, err)
	}
	o.RemoveFinished, o.changed = false, map[string]bool{"remove-finished": true}
	if cfg, err := o.resolve(); err != nil || cfg.removeFinished {
		t.Fatalf("--remove-finished=false must win over the variable: %+v %v", cfg, err)
	}
	if code, stderr := runMcp(t, map[string]string{envMcpRemoveFinished: "sometimes"}); code != ExitUsage ||
		!strings.Contains(stderr, envMcpRemoveFinished) {
		t.Fatalf("bad %s: exit %d %s", envMcpRemoveFinished, code, stderr)
	}
}

// TestMcpStdioAnswersEveryCallAtEOF: calls piped in right before the end of
// stdin are all answered, then `diffpal mcp` exits 0 (issue 9, item 3).
func TestMcpStdioAnswersEveryCallAtEOF(t *testing.T) {
	var in strings.Builder
	in.WriteString(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}` + "\n")
	in.WriteString("not json\n")
	for _, id := range []string{"2", "3", "4"} {
		in.WriteString(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"start_qa_orchestration","arguments":{"task_type":"other"}}}` + "\n")
	}
	var out, stderr bytes.Buffer
	code := Run(context.Background(), []string{"mcp"}, &IOStreams{In: strings.NewReader(in.String()), Out: &out, ErrOut: &stderr})
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{`"id":1,"result"`, `"id":null,"error":{"code":-32700`, `"id":2,"result"`, `"id":3,"result"`, `"id":4,"result"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %s:\n%s", want, out.String())
		}
	}
	if !strings.Contains(stderr.String(), "rejected input line") {
		t.Errorf("no log line for the bad line: %s", stderr.String())
	}
}

// TestMcpModelPolicyWithoutReasoning: --model-policy accepts a file that
// leaves out the reasoning keys (issue 9, item 6).
func TestMcpModelPolicyWithoutReasoning(t *testing.T) {
	policy := writeFile(t, "policy.json", `{"provider":"openai","triage_model":"gpt-6-luna","primary_model":"gpt-6-sol",
		"deep_model":"gpt-6-sol","synthesis_model":"gpt-6-sol"}`)
	o := &McpOptions{Getenv: func(string) string { return "" }, ModelPolicy: policy, changed: map[string]bool{"model-policy": true}}
	cfg, err := o.resolve()
	if err != nil {
		t.Fatalf("policy without reasoning keys refused: %v", err)
	}
	if cfg.policy.Selection != qa.DefaultModelSelection() {
		t.Fatalf("selection %+v, want the defaults", cfg.policy.Selection)
	}
}
