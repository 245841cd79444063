package command

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/diffpalhq/diffpal/internal/provider/llm"
)

func script(t *testing.T, name string) []string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return []string{"sh", p}
}

func newClient(t *testing.T, name string, mod func(*Config)) *Client {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("fake agents are shell scripts")
	}
	cfg := Config{Argv: script(t, name), Timeout: 20 * time.Second}
	if mod != nil {
		mod(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var testSchema = json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`)

func testRequest() llm.Request {
	return llm.Request{
		Model:      "agent-model",
		System:     "You review diffs.",
		Messages:   []llm.Message{{Role: "user", Content: "review this"}},
		Schema:     testSchema,
		SchemaName: "findings",
	}
}

func asLLMError(t *testing.T, err error) *llm.Error {
	t.Helper()
	var e *llm.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not *llm.Error", err, err)
	}
	if e.Provider != "command" {
		t.Errorf("Provider = %q", e.Provider)
	}
	return e
}

// gone reports whether pid has exited (a zombie waiting for a reaper
// counts as gone), polling for up to 30 s. The callers ask after the
// group was killed, so the bound only decides how long a failure takes
// to report.
func gone(t *testing.T, pid int) bool {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if exited(pid) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// exited reports whether pid is gone or a zombie.
func exited(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	switch {
	case err == nil:
		// "pid (comm) S ..." — the state follows the last ')'.
		i := bytes.LastIndexByte(stat, ')')
		return i > 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X')
	case runtime.GOOS == "linux":
		return true
	default:
		return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
	}
}

// waitReady waits, with no time limit, until the fake agent has written
// its child's pid to pidfile (it does so once the child is running), and
// returns that pid. It gives up, returning 0, when stop says the agent
// will never get there.
func waitReady(pidfile string, stop func() bool) int {
	for {
		if b, err := os.ReadFile(pidfile); err == nil && bytes.HasSuffix(b, []byte("\n")) {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				return pid
			}
		}
		if stop() {
			return 0
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// holdKillUntilReady makes Complete, once its timeout has expired, wait
// for the fake agent's readiness before it signals the group: the timeout
// may expire before a loaded machine has even started the shell, and the
// test must not depend on that. The returned function gives the time the
// kill was released (zero if it never was).
func holdKillUntilReady(t *testing.T, pidfile string) func() time.Time {
	t.Helper()
	var released time.Time
	testHookKill = func(agent int) {
		if waitReady(pidfile, func() bool { return exited(agent) }) == 0 {
			t.Errorf("fake agent %d exited before it was ready", agent)
		}
		released = time.Now()
	}
	t.Cleanup(func() { testHookKill = nil })
	return func() time.Time { return released }
}

// completeOrReport runs Complete and returns its error. Should Complete
// not return (the group outlived the signals it should have died of), it
// fails the test shortly before the test binary's deadline instead of
// letting the whole binary time out.
func completeOrReport(t *testing.T, c *Client, ctx context.Context, what string) error {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		_, err := c.Complete(ctx, testRequest())
		errc <- err
	}()
	var watchdog <-chan time.Time
	if d, ok := t.Deadline(); ok {
		watchdog = time.After(time.Until(d) * 9 / 10)
	}
	select {
	case err := <-errc:
		return err
	case <-watchdog:
		t.Fatalf("Complete did not return: %s", what)
		return nil
	}
}

func readPID(t *testing.T, file string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("pid file: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func TestRenderPrompt(t *testing.T) {
	got := RenderPrompt(testRequest())
	want := "You review diffs.\n\nreview this\n\n=== OUTPUT FORMAT ===\n" +
		"Answer with one JSON object and nothing else: no prose, no Markdown code fences.\n" +
		"The object must validate against this JSON Schema (findings):\n" +
		"{\n  \"type\": \"object\",\n  \"properties\": {\n    \"ok\": {\n      \"type\": \"boolean\"\n    }\n  },\n  \"required\": [\n    \"ok\"\n  ]\n}\n"
	if got != want {
		t.Errorf("RenderPrompt:\n%s\nwant:\n%s", got, want)
	}

	repair := testRequest()
	repair.Messages = append(repair.Messages, llm.Message{Role: "assistant", Content: "{bad"}, llm.Message{Role: "user", Content: "fix: not JSON"})
	got = RenderPrompt(repair)
	if !strings.Contains(got, "=== USER ===\nreview this\n\n=== ASSISTANT ===\n{bad\n\n=== USER ===\nfix: not JSON\n\n=== OUTPUT FORMAT ===") {
		t.Errorf("repair prompt:\n%s", got)
	}
	if strings.Contains(RenderPrompt(llm.Request{Messages: []llm.Message{{Content: "x"}}}), "JSON Schema") {
		t.Error("schema section without a schema")
	}
}

func TestSuccessStdinArgsAndEnv(t *testing.T) {
	stdin := filepath.Join(t.TempDir(), "stdin")
	t.Setenv("FAKE_AGENT_STDIN", stdin)
	t.Setenv("DIFFPAL_FAKE_VAR", "inherited")
	c := newClient(t, "echo.sh", func(c *Config) { c.Argv = append(c.Argv, "-p", "--flag") })
	if c.Name() != "command" {
		t.Errorf("Name = %q", c.Name())
	}
	req := testRequest()
	resp, err := c.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.JSON) != `{"ok":true,"env":"inherited","args":"-p --flag"}` {
		t.Errorf("JSON = %s", resp.JSON)
	}
	if resp.Model != "" || resp.Usage != (llm.Usage{}) {
		t.Errorf("resp = %+v", resp)
	}
	got, err := os.ReadFile(stdin)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != RenderPrompt(req) {
		t.Errorf("agent read:\n%s", got)
	}
}

func TestExplicitEnv(t *testing.T) {
	stdin := filepath.Join(t.TempDir(), "stdin")
	t.Setenv("DIFFPAL_FAKE_VAR", "inherited")
	c := newClient(t, "echo.sh", func(c *Config) {
		c.Env = []string{"PATH=" + os.Getenv("PATH"), "FAKE_AGENT_STDIN=" + stdin, "DIFFPAL_FAKE_VAR=explicit"}
	})
	resp, err := c.Complete(context.Background(), testRequest())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(resp.JSON), `"env":"explicit"`) {
		t.Errorf("JSON = %s", resp.JSON)
	}
}

func TestProseAroundJSON(t *testing.T) {
	for script, want := range map[string]string{
		"prose.sh":  `{"ok": true, "note": "fenced"}`,
		"inline.sh": `{"ok": true, "nested": {"a": [1, "}"]}}`,
	} {
		t.Run(script, func(t *testing.T) {
			c := newClient(t, script, nil)
			resp, err := c.Complete(context.Background(), testRequest())
			if err != nil {
				t.Fatal(err)
			}
			if string(resp.JSON) != want {
				t.Errorf("JSON = %s, want %s", resp.JSON, want)
			}
		})
	}
}

func TestNoJSON(t *testing.T) {
	c := newClient(t, "nojson.sh", nil)
	_, err := c.Complete(context.Background(), testRequest())
	e := asLLMError(t, err)
	if e.Kind != llm.Malformed || !strings.Contains(e.Msg, "no JSON object: I looked at the diff") {
		t.Errorf("got %v", e)
	}
}

func TestAgentIgnoresStdin(t *testing.T) {
	c := newClient(t, "nostdin.sh", nil)
	req := testRequest()
	req.Messages[0].Content = strings.Repeat("x", 4<<20) // far beyond a pipe buffer
	resp, err := c.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.JSON) != `{"ok":true}` {
		t.Errorf("JSON = %s", resp.JSON)
	}
}

// slowness runs f for an agent that gets ready at once and for one that
// needs longer than the timeout to start its child (FAKE_AGENT_DELAY),
// as on a loaded machine: the tests must hold for both.
func slowness(t *testing.T, f func(t *testing.T)) {
	for _, tc := range []struct{ name, delay string }{{"prompt agent", ""}, {"slow agent", "0.5"}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("FAKE_AGENT_DELAY", tc.delay)
			f(t)
		})
	}
}

// TestTimeoutKillsGroup: when the timeout expires, SIGTERM goes to the
// agent's whole process group, which ends the agent and the child it
// started. The kill is held until the child runs (holdKillUntilReady),
// and the grace period is an hour: Complete returning at all shows that
// SIGTERM, not the SIGKILL after the grace, ended the group.
func TestTimeoutKillsGroup(t *testing.T) {
	slowness(t, func(t *testing.T) {
		pidfile := filepath.Join(t.TempDir(), "pid")
		t.Setenv("FAKE_AGENT_PIDFILE", pidfile)
		c := newClient(t, "hang.sh", func(c *Config) {
			c.Timeout = 300 * time.Millisecond
			c.KillGrace = time.Hour
		})
		released := holdKillUntilReady(t, pidfile)
		err := completeOrReport(t, c, context.Background(), "SIGTERM did not end the agent's group")
		if released().IsZero() {
			t.Fatal("the timeout did not reach the kill")
		}
		e := asLLMError(t, err)
		if e.Kind != llm.Transient || !strings.Contains(e.Msg, "timed out after 300ms") || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("got %v", e)
		}
		if llm.KindOf(err) != llm.Transient {
			t.Errorf("KindOf = %v", llm.KindOf(err))
		}
		if pid := readPID(t, pidfile); !gone(t, pid) {
			t.Errorf("child sleep %d survived", pid)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

// TestTermIgnoredEscalatesToKill: an agent (and child) that ignore
// SIGTERM get SIGKILL once the grace period is over. The kill is held
// until the agent ignores SIGTERM and its child runs.
func TestTermIgnoredEscalatesToKill(t *testing.T) {
	slowness(t, func(t *testing.T) {
		pidfile := filepath.Join(t.TempDir(), "pid")
		t.Setenv("FAKE_AGENT_PIDFILE", pidfile)
		const grace = 300 * time.Millisecond
		c := newClient(t, "hang_ignore_term.sh", func(c *Config) {
			c.Timeout = 200 * time.Millisecond
			c.KillGrace = grace
		})
		released := holdKillUntilReady(t, pidfile)
		err := completeOrReport(t, c, context.Background(), "SIGKILL did not follow the grace period")
		returned := time.Now()
		if released().IsZero() {
			t.Fatal("the timeout did not reach the kill")
		}
		if e := asLLMError(t, err); e.Kind != llm.Transient || !strings.Contains(e.Msg, "timed out after 200ms") {
			t.Errorf("got %v", e)
		}
		// A lower bound only: the grace timer starts after the release,
		// so no load can make this fail unless SIGKILL came early.
		if d := returned.Sub(released()); d < grace {
			t.Errorf("returned %v after SIGTERM, before the %v grace period was over", d, grace)
		}
		if pid := readPID(t, pidfile); !gone(t, pid) {
			t.Errorf("child sleep %d survived SIGKILL", pid)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

// TestCallerCancelKillsGroup: cancelling the caller's context kills the
// group too. The test cancels once the child runs; no timeout is set, so
// only the cancellation can end the call.
func TestCallerCancelKillsGroup(t *testing.T) {
	slowness(t, testCallerCancelKillsGroup)
}

func testCallerCancelKillsGroup(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pid")
	t.Setenv("FAKE_AGENT_PIDFILE", pidfile)
	c := newClient(t, "hang.sh", func(c *Config) { c.Timeout = -1 })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	returned := make(chan struct{})
	go func() {
		waitReady(pidfile, func() bool {
			select {
			case <-returned:
				return true
			default:
				return false
			}
		})
		cancel()
	}()
	err := completeOrReport(t, c, ctx, "cancellation did not end the agent's group")
	close(returned)
	e := asLLMError(t, err)
	if e.Kind != llm.Transient || !errors.Is(err, context.Canceled) || !strings.Contains(e.Msg, "cancelled") {
		t.Errorf("got %v", e)
	}
	if pid := readPID(t, pidfile); !gone(t, pid) {
		t.Errorf("child sleep %d survived", pid)
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

func TestStragglerKilledAfterSuccess(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pid")
	t.Setenv("FAKE_AGENT_PIDFILE", pidfile)
	c := newClient(t, "straggler.sh", nil)
	resp, err := c.Complete(context.Background(), testRequest())
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.JSON) != `{"ok":true}` {
		t.Errorf("JSON = %s", resp.JSON)
	}
	if pid := readPID(t, pidfile); !gone(t, pid) {
		t.Errorf("straggler %d survived", pid)
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

func TestExitClassification(t *testing.T) {
	cases := []struct {
		script string
		kind   llm.Kind
		msg    []string
	}{
		{"fail.sh", llm.Invalid, []string{"agent exited with status 3", "stderr: error: unknown option '--bogus'"}},
		{"ratelimit.sh", llm.Transient, []string{"status 1", "rate_limit_error"}},
		{"auth.sh", llm.Auth, []string{"status 1", "Please run /login"}},
		{"selfkill.sh", llm.Transient, []string{"agent was killed", "killed"}},
	}
	for _, tc := range cases {
		t.Run(tc.script, func(t *testing.T) {
			c := newClient(t, tc.script, nil)
			resp, err := c.Complete(context.Background(), testRequest())
			e := asLLMError(t, err)
			if e.Kind != tc.kind {
				t.Errorf("kind = %v, want %v (%v)", e.Kind, tc.kind, e)
			}
			for _, m := range tc.msg {
				if !strings.Contains(e.Msg, m) {
					t.Errorf("Msg %q lacks %q", e.Msg, m)
				}
			}
			if resp.JSON != nil {
				t.Errorf("JSON on failure: %s", resp.JSON)
			}
		})
	}
}

func TestStderrTail(t *testing.T) {
	c := newClient(t, "noisy.sh", func(c *Config) { c.StderrTail = 200 })
	_, err := c.Complete(context.Background(), testRequest())
	e := asLLMError(t, err)
	if e.Kind != llm.Invalid || !strings.HasSuffix(e.Msg, "fatal: the last line") || strings.Contains(e.Msg, "log line 0:") {
		t.Errorf("got %v", e)
	}
	if i := strings.Index(e.Msg, "stderr: "); i < 0 || len(e.Msg)-i > 200+len("stderr: …") {
		t.Errorf("tail not bounded: %d bytes", len(e.Msg))
	}
}

func TestStdoutCap(t *testing.T) {
	c := newClient(t, "prose.sh", func(c *Config) { c.MaxStdout = 16 })
	_, err := c.Complete(context.Background(), testRequest())
	if e := asLLMError(t, err); e.Kind != llm.Invalid || !strings.Contains(e.Msg, "exceeds 16 bytes") {
		t.Errorf("got %v", e)
	}
}

func TestNewErrors(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Error("empty argv accepted")
	}
	if _, err := New(Config{Argv: []string{"diffpal-no-such-agent-xyz"}}); err == nil {
		t.Error("missing binary accepted")
	}
}

func TestStartFailure(t *testing.T) {
	c := newClient(t, "echo.sh", func(c *Config) { c.Dir = filepath.Join(t.TempDir(), "missing") })
	_, err := c.Complete(context.Background(), testRequest())
	if e := asLLMError(t, err); e.Kind != llm.Invalid || !strings.Contains(e.Msg, "cannot start agent") {
		t.Errorf("got %v", e)
	}
}

func TestAlreadyCancelled(t *testing.T) {
	c := newClient(t, "echo.sh", nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.Complete(ctx, testRequest())
	if e := asLLMError(t, err); e.Kind != llm.Transient || !errors.Is(err, context.Canceled) {
		t.Errorf("got %v", e)
	}
}

func TestExtractJSON(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"a":1}`, `{"a":1}`},
		{"  [1,2]\n", `[1,2]`},
		{"```json\n{\"a\":1}\n```", `{"a":1}`},
		{"text ```\n{\"a\":2}\n``` more", `{"a":2}`},
		{"```go\nfunc(){}\n```\n```json\n{\"a\":3}\n```", `{"a":3}`},
		{`prefix {"a":{"b":"}"}} suffix {"c":1}`, `{"a":{"b":"}"}}`},
		{`{broken {"a":4}`, `{"a":4}`},
		{"no json here", ""},
		{`{"unterminated":`, ""},
		{``, ""},
	}
	for _, tc := range cases {
		got, ok := ExtractJSON([]byte(tc.in))
		if (tc.want == "") == ok || string(got) != tc.want {
			t.Errorf("ExtractJSON(%q) = %s, %v; want %s", tc.in, got, ok, tc.want)
		}
	}
}

func TestTailBuffer(t *testing.T) {
	b := &tailBuffer{max: 5}
	b.Write([]byte("abc"))
	if b.String() != "abc" {
		t.Errorf("%q", b.String())
	}
	b.Write([]byte("défgh"))
	if got := b.String(); got != "…éfgh" {
		t.Errorf("%q", got)
	}
	b = &tailBuffer{max: 4} // cuts é in half
	b.Write([]byte("défgh"))
	if got := b.String(); got != "…fgh" {
		t.Errorf("%q", got)
	}
}
