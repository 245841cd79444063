// Package command is diffpal's transport for agent CLIs such as
// `claude -p` or `codex exec`: any argv that reads a prompt on stdin and
// answers on stdout. It implements llm.Client.
//
// The prompt is Request.System and Request.Messages rendered as text (see
// RenderPrompt), followed by the JSON Schema and an instruction to answer
// with JSON only. The answer is the first complete JSON object in stdout;
// prose or Markdown fences around it are tolerated.
//
// Every call runs in its own process group. When the per-call timeout
// expires or the caller's context ends, the whole group gets SIGTERM and,
// after Config.KillGrace, SIGKILL, so helpers the agent spawned die with
// it. Stragglers left behind after a normal exit are killed as well.
//
// The child's environment is diffpal's own (or Config.Env): diffpal adds
// nothing to it, in particular no keys.
//
// Failures are classified as follows:
//   - timeout or cancellation: Transient;
//   - the agent cannot be started: Invalid (a configuration error);
//   - a non-zero exit: Auth when stderr or the end of stdout looks like an
//     authentication failure ("not logged in", "invalid api key",
//     "unauthorized", "HTTP 401", …), Transient when it looks like a
//     transient API or network failure ("rate limit", "overloaded",
//     "HTTP 429/5xx", "timed out", "connection reset", …), Invalid
//     otherwise; death by a signal diffpal did not send is Transient;
//   - exit 0 without a JSON object on stdout: Invalid (the caller's repair
//     loop may retry with feedback).
//
// Usage is not reported: agent CLIs do not say what they consumed in their
// text output, so Response.Usage stays zero.
package command

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/diffpalhq/diffpal/internal/clip"
	"github.com/diffpalhq/diffpal/internal/provider/llm"
)

// ProviderName is what Name returns and what errors carry as Provider.
const ProviderName = "command"

// Defaults for Config's zero values.
const (
	DefaultTimeout    = 10 * time.Minute
	DefaultKillGrace  = 5 * time.Second
	DefaultStderrTail = 2048
	DefaultMaxStdout  = 8 << 20
)

// Config configures a Client.
type Config struct {
	// Argv is the agent command line, e.g. {"claude", "-p"} or {"codex",
	// "exec", "-"}. Argv[0] is looked up in PATH when it has no slash.
	Argv []string
	// Dir is the working directory; empty means diffpal's.
	Dir string
	// Env is the child's environment; nil means diffpal's own, unchanged.
	Env []string
	// Timeout bounds one call; 0 means DefaultTimeout, negative means only
	// the caller's context bounds it.
	Timeout time.Duration
	// KillGrace is how long the group has between SIGTERM and SIGKILL;
	// 0 means DefaultKillGrace.
	KillGrace time.Duration
	// StderrTail is how many trailing bytes of stderr are kept for error
	// messages; 0 means DefaultStderrTail.
	StderrTail int
	// MaxStdout caps the answer's size; 0 means DefaultMaxStdout.
	MaxStdout int
}

// Client runs one agent CLI per call. It is safe for concurrent use.
type Client struct {
	cfg  Config
	path string // resolved Argv[0]
}

var _ llm.Client = (*Client)(nil)

// New validates cfg, resolves Argv[0] and returns a Client.
func New(cfg Config) (*Client, error) {
	if len(cfg.Argv) == 0 || strings.TrimSpace(cfg.Argv[0]) == "" {
		return nil, errors.New("command: no agent command configured")
	}
	path, err := exec.LookPath(cfg.Argv[0])
	if err != nil {
		return nil, fmt.Errorf("command: agent %q: %w", cfg.Argv[0], err)
	}
	cfg.Argv = append([]string(nil), cfg.Argv...)
	if cfg.Env != nil {
		cfg.Env = append([]string(nil), cfg.Env...)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.KillGrace <= 0 {
		cfg.KillGrace = DefaultKillGrace
	}
	if cfg.StderrTail <= 0 {
		cfg.StderrTail = DefaultStderrTail
	}
	if cfg.MaxStdout <= 0 {
		cfg.MaxStdout = DefaultMaxStdout
	}
	return &Client{cfg: cfg, path: path}, nil
}

// Name implements llm.Client.
func (c *Client) Name() string { return ProviderName }

// RenderPrompt renders req as the text fed to the agent on stdin
// (llm.RenderPrompt, shared with the ACP transport).
func RenderPrompt(req llm.Request) string { return llm.RenderPrompt(req) }

// Complete implements llm.Client. Response.JSON is the first JSON object
// in the agent's stdout; Model and Usage stay empty because agents do not
// report them in text output.
func (c *Client) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	if err := ctx.Err(); err != nil {
		return llm.Response{}, c.fail(llm.Transient, "cancelled before start: "+err.Error(), err)
	}
	callCtx := ctx
	if c.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		callCtx, cancel = context.WithTimeout(ctx, c.cfg.Timeout)
		defer cancel()
	}

	stdout := &capBuffer{max: c.cfg.MaxStdout}
	stderr := &tailBuffer{max: c.cfg.StderrTail}
	cmd := exec.Command(c.path, c.cfg.Argv[1:]...)
	cmd.Args[0] = c.cfg.Argv[0]
	cmd.Dir = c.cfg.Dir
	cmd.Env = c.cfg.Env
	cmd.Stdin = strings.NewReader(RenderPrompt(req))
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	// Bound the wait for pipes that a straggler keeps open after the
	// agent itself has exited.
	cmd.WaitDelay = c.cfg.KillGrace
	llm.SetProcessGroup(cmd)

	if err := cmd.Start(); err != nil {
		return llm.Response{}, c.fail(llm.Invalid, "cannot start agent: "+err.Error(), err)
	}
	proc := cmd.Process
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	var waitErr error
	killed := false
	select {
	case waitErr = <-done:
	case <-callCtx.Done():
		killed = true
		if testHookKill != nil {
			testHookKill(proc.Pid)
		}
		waitErr = c.stop(proc, done)
	}
	// Kill whatever the agent left behind in its group.
	llm.SignalProcessGroup(proc, true)

	var resp llm.Response
	tail := strings.TrimSpace(stderr.String())
	if killed {
		var msg string
		var cause error
		if err := ctx.Err(); err != nil {
			msg, cause = "agent cancelled: "+err.Error(), err
		} else {
			msg, cause = fmt.Sprintf("agent timed out after %s", c.cfg.Timeout), context.DeadlineExceeded
		}
		return resp, c.fail(llm.Transient, withTail(msg, tail), cause)
	}
	if waitErr != nil && !(errors.Is(waitErr, exec.ErrWaitDelay) && cmd.ProcessState != nil && cmd.ProcessState.Success()) {
		return resp, c.exitError(cmd, waitErr, tail, stdout.Bytes())
	}
	if stdout.truncated {
		return resp, c.fail(llm.Invalid, fmt.Sprintf("agent output exceeds %d bytes", c.cfg.MaxStdout), nil)
	}
	js, ok := ExtractJSON(stdout.Bytes())
	if !ok {
		out := strings.TrimSpace(string(stdout.Bytes()))
		msg := "agent output contains no JSON object"
		if out == "" {
			msg = "agent printed nothing on stdout"
		} else {
			msg += ": " + clip.Text(out, 300)
		}
		return resp, c.fail(llm.Malformed, withTail(msg, tail), nil)
	}
	resp.JSON = js
	return resp, nil
}

// testHookKill, when set, runs when a call's timeout expires or its
// context ends, before the agent's group is signalled. Tests use it to
// hold the kill until their fake agent is ready (has started its child),
// so that what they check does not depend on how fast a loaded machine
// starts a shell. Always nil outside tests.
var testHookKill func(pid int)

// stop terminates the group: SIGTERM, then SIGKILL after the grace
// period. It returns Wait's result.
func (c *Client) stop(proc *os.Process, done <-chan error) error {
	llm.SignalProcessGroup(proc, false)
	t := time.NewTimer(c.cfg.KillGrace)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
	}
	llm.SignalProcessGroup(proc, true)
	return <-done
}

var (
	authRe = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)(not logged in|please run /login|log ?in required|invalid[ _-]?(x-)?api[ _-]?key|api key (is )?(missing|not (set|found|valid))|authentication[ _]?(error|failed)|unauthori[sz]ed|(status|http|error|code)\W{0,3}(401|403)\b)`)
	})
	transRe = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)(rate[ _-]?limit|too many requests|overloaded|temporarily unavailable|service unavailable|bad gateway|gateway time-?out|internal server error|timed out|timeout|connection (reset|refused|closed)|econnreset|econnrefused|etimedout|network (error|is unreachable)|try again later|(status|http|error|code)\W{0,3}(408|409|429|5\d\d)\b)`)
	})
)

// exitError classifies a failed exit (see the package comment).
func (c *Client) exitError(cmd *exec.Cmd, err error, tail string, stdout []byte) error {
	var msg string
	kind := llm.Invalid
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		msg = fmt.Sprintf("agent exited with status %d", ee.ExitCode())
	case errors.As(err, &ee):
		// ExitCode -1: killed by a signal diffpal did not send (OOM
		// killer, a user's kill): worth another try.
		msg = "agent was killed: " + ee.ProcessState.String()
		kind = llm.Transient
	default:
		msg = "agent failed: " + err.Error()
	}
	evidence := tail + "\n" + lastBytes(stdout, 1024)
	switch {
	case authRe().MatchString(evidence):
		kind = llm.Auth
	case transRe().MatchString(evidence):
		kind = llm.Transient
	}
	if tail == "" {
		if out := strings.TrimSpace(lastBytes(stdout, 300)); out != "" {
			tail = out
		}
	}
	return c.fail(kind, withTail(msg, tail), err)
}

func (c *Client) fail(kind llm.Kind, msg string, err error) *llm.Error {
	return &llm.Error{Kind: kind, Provider: ProviderName, Msg: msg, Err: err}
}

func withTail(msg, tail string) string {
	if tail == "" {
		return msg
	}
	return msg + "; stderr: " + tail
}

func lastBytes(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// ExtractJSON finds the answer in an agent's output (llm.ExtractJSON).
func ExtractJSON(out []byte) (json.RawMessage, bool) { return llm.ExtractJSON(out) }

// capBuffer keeps the first max bytes written and notes the overflow.
type capBuffer struct {
	mu        sync.Mutex
	buf       bytes.Buffer
	max       int
	truncated bool
}

func (b *capBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - b.buf.Len(); room < len(p) {
		b.truncated = true
		if room > 0 {
			b.buf.Write(p[:room])
		}
		return len(p), nil
	}
	b.buf.Write(p)
	return len(p), nil
}

func (b *capBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Bytes()
}

// tailBuffer keeps the last max bytes written.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
	cut bool
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
		b.cut = true
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := string(b.buf)
	if b.cut {
		// Drop a partial UTF-8 sequence at the start.
		for len(s) > 0 && s[0]&0xC0 == 0x80 {
			s = s[1:]
		}
		s = "…" + s
	}
	return s
}
