// Package acp is diffpal's transport for agent CLIs spoken to over the
// Agent Client Protocol (github.com/coder/acp-go-sdk): Codex (through its
// ACP bridge), Copilot, OpenCode, Gemini, Claude Code, or any ACP stdio
// command. It implements llm.Client, so an agent's answer goes through
// the same schema validation, repair loop, anchoring, redaction and cache
// as the HTTP providers' answers.
//
// Every call starts the agent in its own process group with the
// repository root as its working directory, then: initialize (protocol
// version 1; the client offers fs/read_text_file and nothing else),
// session/new with cwd = the repository root, one session/prompt holding
// the rendered request (llm.RenderPrompt), and the streamed
// session/update notifications, whose agent message text is the answer.
// On timeout or cancellation diffpal sends session/cancel and gives the
// agent Config.KillGrace to end its turn; then, and after every call, the
// whole group gets SIGTERM and, after the grace period, SIGKILL.
//
// The agent is read-only by construction: fs/read_text_file is served for
// regular files inside the repository only (symlinks resolved, .git and
// paths outside refused, bounded size, content redacted), file writes and
// terminals are refused, and permission requests are answered with a
// reject option (or cancelled). Everything refused is recorded in the
// call's provider.Inspection, with the tool calls the agent reported and
// the files it read.
//
// Failures are classified as follows: the agent cannot be started, speaks
// another protocol version, or exits before answering: Invalid (a
// configuration problem; a death by a signal diffpal did not send is
// Transient); a JSON-RPC error -32000 (authentication required): Auth; an
// agent error marked retryable (data.retryable, a kind of rate_limited or
// unavailable, or a message about rate limits or unavailability):
// Transient; other agent errors: Invalid; timeout or cancellation:
// Transient; an answer without a JSON object, a refusal or a cut-off
// turn: Malformed (the repair loop asks again).
package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/diffpalhq/diffpal/internal/buildinfo"
	"github.com/diffpalhq/diffpal/internal/clip"
	"github.com/diffpalhq/diffpal/internal/provider"
	"github.com/diffpalhq/diffpal/internal/provider/llm"
	"github.com/diffpalhq/diffpal/internal/repofs"
)

// Defaults for Config's zero values.
const (
	DefaultTimeout    = 10 * time.Minute
	DefaultKillGrace  = 5 * time.Second
	DefaultMaxAnswer  = 1 << 20
	DefaultMaxRead    = 1 << 20
	DefaultStderrTail = 2048
)

// Config configures a Client.
type Config struct {
	// Type is the provider type (codex_acp, generic_acp, …): Name and
	// the Provider of errors.
	Type string
	// Argv is the agent command line (see CommandLine). Argv[0] is looked
	// up in PATH when it has no slash.
	Argv []string
	// Dir is the repository root: the agent's working directory, the
	// session's cwd and the only tree it may read.
	Dir string
	// Env is the agent's environment; nil means diffpal's own.
	Env []string
	// Timeout bounds one call; 0 means DefaultTimeout, negative means only
	// the caller's context bounds it.
	Timeout time.Duration
	// KillGrace is how long the agent has to end its turn after
	// session/cancel, and its group between SIGTERM and SIGKILL.
	KillGrace time.Duration
	// MaxAnswer caps the answer text; MaxRead one file served to the agent.
	MaxAnswer int
	MaxRead   int64
	// Redactor redacts file content served to the agent and what is
	// recorded of its tool calls (default settings when nil).
	Redactor *llm.Redactor
}

// Client runs one ACP agent per call. It is safe for concurrent use.
type Client struct {
	cfg            Config
	path           string
	root, realRoot string
}

var _ llm.Client = (*Client)(nil)

// New validates cfg, resolves Argv[0] and returns a Client.
func New(cfg Config) (*Client, error) {
	if cfg.Type == "" {
		cfg.Type = "generic_acp"
	}
	if len(cfg.Argv) == 0 || strings.TrimSpace(cfg.Argv[0]) == "" {
		return nil, fmt.Errorf("%s: no agent command configured", cfg.Type)
	}
	if cfg.Dir == "" {
		return nil, fmt.Errorf("%s: no repository directory", cfg.Type)
	}
	path, err := exec.LookPath(cfg.Argv[0])
	if err != nil {
		return nil, fmt.Errorf("%s: agent %q: %w", cfg.Type, cfg.Argv[0], err)
	}
	root, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, err
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, fmt.Errorf("%s: repository %s: %w", cfg.Type, cfg.Dir, err)
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
	if cfg.MaxAnswer <= 0 {
		cfg.MaxAnswer = DefaultMaxAnswer
	}
	if cfg.MaxRead <= 0 {
		cfg.MaxRead = DefaultMaxRead
	}
	if cfg.Redactor == nil {
		cfg.Redactor = &llm.Redactor{}
	}
	return &Client{cfg: cfg, path: path, root: root, realRoot: realRoot}, nil
}

// Name implements llm.Client: the provider type.
func (c *Client) Name() string { return c.cfg.Type }

// testHookCancel, when set, runs after session/cancel was sent and before
// the client waits for the agent to end its turn. Always nil outside
// tests.
var testHookCancel func()

// Complete implements llm.Client: one agent process, one session, one
// prompt turn. Response.Inspection is set whether or not the call
// succeeds.
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
	ag, err := c.launch()
	if err != nil {
		return llm.Response{}, err
	}
	s := newSession(c)
	// The SDK starts reading the agent's output inside
	// NewClientSideConnection and reads its logger, unsynchronised, when
	// that output ends: an agent that exits at once raced with SetLogger
	// (go test -race). Its reads wait until the logger is set.
	out := &gatedReader{r: ag.out, open: make(chan struct{})}
	conn := acpsdk.NewClientSideConnection(s, ag.in, out)
	conn.SetLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	close(out.open)
	resp, err := c.converse(ctx, callCtx, conn, s, req)
	resp.Inspection = s.inspection()
	if c.end(ag, errors.Is(err, errDisconnected)) {
		return resp, c.exitError(ag.waitErr, strings.TrimSpace(ag.stderr.String()))
	}
	return resp, err
}

// gatedReader is r whose reads wait until open is closed.
type gatedReader struct {
	r    io.Reader
	open chan struct{}
}

func (g *gatedReader) Read(p []byte) (int, error) {
	<-g.open
	return g.r.Read(p)
}

// running is a started agent.
type running struct {
	cmd     *exec.Cmd
	in      *os.File // the agent's stdin, our end
	out     *os.File // its stdout, our end
	stderr  *tailBuffer
	exited  chan struct{}
	waitErr error // set when exited is closed
}

// launch starts the agent in its own process group, in the repository.
func (c *Client) launch() (*running, error) {
	// Pipes of our own, so that Wait never closes the end the connection
	// still reads (the agent's last messages may follow its exit).
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, c.fail(llm.Invalid, "pipe: "+err.Error(), err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, c.fail(llm.Invalid, "pipe: "+err.Error(), err)
	}
	ag := &running{in: inW, out: outR, stderr: &tailBuffer{max: DefaultStderrTail}, exited: make(chan struct{})}
	cmd := exec.Command(c.path, c.cfg.Argv[1:]...)
	cmd.Args[0] = c.cfg.Argv[0]
	cmd.Dir = c.realRoot
	cmd.Env = c.cfg.Env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, ag.stderr
	cmd.WaitDelay = c.cfg.KillGrace
	llm.SetProcessGroup(cmd)
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, c.fail(llm.Invalid, "cannot start agent: "+err.Error(), err)
	}
	ag.cmd = cmd
	go func() { ag.waitErr = cmd.Wait(); close(ag.exited) }()
	return ag, nil
}

// end stops the agent: EOF on its stdin first (a well-behaved agent
// exits), then its whole group, then whatever it left behind. It returns
// crashed, for the caller's classification.
func (c *Client) end(ag *running, crashed bool) bool {
	ag.in.Close()
	c.stop(ag.cmd.Process, ag.exited, crashed)
	llm.SignalProcessGroup(ag.cmd.Process, true)
	ag.out.Close()
	return crashed
}

// Probe starts the agent and completes an ACP initialize, for doctor
// --online; it returns the agent's name and version as it reports them.
func (c *Client) Probe(ctx context.Context) (string, error) {
	if c.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.Timeout)
		defer cancel()
	}
	ag, err := c.launch()
	if err != nil {
		return "", err
	}
	conn := acpsdk.NewClientSideConnection(newSession(c), ag.in, ag.out)
	conn.SetLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	init, err := conn.Initialize(ctx, acpsdk.InitializeRequest{ProtocolVersion: acpsdk.ProtocolVersionNumber,
		ClientCapabilities: acpsdk.ClientCapabilities{Fs: acpsdk.FileSystemCapabilities{ReadTextFile: true}},
		ClientInfo:         &acpsdk.Implementation{Name: "diffpal", Version: buildinfo.Version}})
	disconnected := false
	select {
	case <-conn.Done():
		disconnected = err != nil
	default:
	}
	if c.end(ag, disconnected) {
		return "", c.exitError(ag.waitErr, strings.TrimSpace(ag.stderr.String()))
	}
	if err != nil {
		if ctx.Err() != nil {
			return "", c.fail(llm.Transient, "initialize timed out", ctx.Err())
		}
		return "", c.rpcError("initialize", err)
	}
	if init.ProtocolVersion != acpsdk.ProtocolVersionNumber {
		return "", c.fail(llm.Invalid, fmt.Sprintf("the agent speaks ACP protocol version %d; diffpal speaks %d", init.ProtocolVersion, acpsdk.ProtocolVersionNumber), nil)
	}
	name := "an ACP agent"
	if i := init.AgentInfo; i != nil && i.Name != "" {
		name = strings.TrimSpace(i.Name + " " + i.Version)
	}
	return clip.Text(name, 100), nil
}

// errDisconnected marks a call whose agent went away mid-conversation.
var errDisconnected = errors.New("agent disconnected")

// converse runs the protocol: initialize, session/new, session/prompt.
func (c *Client) converse(parent, ctx context.Context, conn *acpsdk.ClientSideConnection, s *session, req llm.Request) (llm.Response, error) {
	var resp llm.Response
	// Requests run on a context the call's deadline does not end: when it
	// ends, the agent is told (session/cancel) and given time to stop.
	rctx, stop := context.WithCancel(context.Background())
	defer stop()
	var sid acpsdk.SessionId
	call := func(step string, f func() error) error {
		done := make(chan error, 1)
		go func() { done <- f() }()
		select {
		case err := <-done:
			if err != nil {
				select {
				case <-conn.Done():
					return errDisconnected
				default:
				}
				return c.rpcError(step, err)
			}
			return nil
		case <-conn.Done():
			return errDisconnected
		case <-ctx.Done():
		}
		if sid != "" {
			go func() { _ = conn.Cancel(context.Background(), acpsdk.CancelNotification{SessionId: sid}) }()
			if testHookCancel != nil {
				testHookCancel()
			}
			t := time.NewTimer(c.cfg.KillGrace)
			defer t.Stop()
			select {
			case <-done:
			case <-conn.Done():
			case <-t.C:
			}
		}
		if err := parent.Err(); err != nil {
			return c.fail(llm.Transient, "agent cancelled: "+err.Error(), err)
		}
		return c.fail(llm.Transient, fmt.Sprintf("agent timed out after %s (%s)", c.cfg.Timeout, step), context.DeadlineExceeded)
	}

	var init acpsdk.InitializeResponse
	err := call("initialize", func() (err error) {
		init, err = conn.Initialize(rctx, acpsdk.InitializeRequest{
			ProtocolVersion: acpsdk.ProtocolVersionNumber,
			// Read-only by construction: no writes, no terminals.
			ClientCapabilities: acpsdk.ClientCapabilities{Fs: acpsdk.FileSystemCapabilities{ReadTextFile: true}},
			ClientInfo:         &acpsdk.Implementation{Name: "diffpal", Version: buildinfo.Version},
		})
		return err
	})
	if err != nil {
		return resp, err
	}
	if init.ProtocolVersion != acpsdk.ProtocolVersionNumber {
		return resp, c.fail(llm.Invalid, fmt.Sprintf("the agent speaks ACP protocol version %d; diffpal speaks %d", init.ProtocolVersion, acpsdk.ProtocolVersionNumber), nil)
	}
	var ns acpsdk.NewSessionResponse
	if err := call("session/new", func() (err error) {
		ns, err = conn.NewSession(rctx, acpsdk.NewSessionRequest{Cwd: c.realRoot, McpServers: []acpsdk.McpServer{}})
		return err
	}); err != nil {
		return resp, err
	}
	sid = ns.SessionId
	var pr acpsdk.PromptResponse
	if err := call("session/prompt", func() (err error) {
		pr, err = conn.Prompt(rctx, acpsdk.PromptRequest{SessionId: sid, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock(llm.RenderPrompt(req))}})
		return err
	}); err != nil {
		return resp, err
	}
	if u := pr.Usage; u != nil {
		resp.Usage = llm.Usage{InputTokens: int64(u.InputTokens), OutputTokens: int64(u.OutputTokens)}
		if u.CachedReadTokens != nil {
			resp.Usage.CachedInputTokens = int64(*u.CachedReadTokens)
		}
	}
	text, truncated := s.answer()
	switch pr.StopReason {
	case acpsdk.StopReasonEndTurn, "":
	case acpsdk.StopReasonCancelled:
		return resp, c.fail(llm.Transient, "the agent cancelled its turn", nil)
	case acpsdk.StopReasonRefusal:
		return resp, c.fail(llm.Malformed, "the agent refused to answer", nil)
	default:
		return resp, c.fail(llm.Malformed, fmt.Sprintf("the agent's turn ended early (%s)", pr.StopReason), nil)
	}
	if truncated {
		return resp, c.fail(llm.Invalid, fmt.Sprintf("agent answer exceeds %d bytes", c.cfg.MaxAnswer), nil)
	}
	js, ok := llm.ExtractJSON([]byte(text))
	if !ok {
		msg := "the agent's answer contains no JSON object"
		if out := strings.TrimSpace(text); out == "" {
			msg = "the agent answered with no text"
		} else {
			msg += ": " + clip.Text(out, 300)
		}
		return resp, c.fail(llm.Malformed, msg, nil)
	}
	resp.JSON = js
	return resp, nil
}

// stop waits for the agent to exit after EOF on its stdin (a crashed one
// has already gone), then terminates its group: SIGTERM, then SIGKILL
// after the grace period.
func (c *Client) stop(proc *os.Process, exited <-chan struct{}, crashed bool) {
	t := time.NewTimer(c.cfg.KillGrace)
	defer t.Stop()
	if crashed {
		select {
		case <-exited:
			return
		case <-t.C:
		}
	} else {
		select {
		case <-exited:
			return
		case <-time.After(min(c.cfg.KillGrace, 500*time.Millisecond)):
		}
	}
	llm.SignalProcessGroup(proc, false)
	t.Reset(c.cfg.KillGrace)
	select {
	case <-exited:
		return
	case <-t.C:
	}
	llm.SignalProcessGroup(proc, true)
	<-exited
}

var retryRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)(rate[ _-]?limit|too many requests|overloaded|temporarily unavailable|service unavailable|unavailable|try again later|\b(429|502|503|504)\b)`)
})

// rpcError classifies an agent's JSON-RPC error.
func (c *Client) rpcError(step string, err error) error {
	var re *acpsdk.RequestError
	if !errors.As(err, &re) {
		return c.fail(llm.Invalid, step+": "+err.Error(), err)
	}
	detail := ""
	if re.Data != nil {
		if b, e := json.Marshal(re.Data); e == nil {
			detail = string(b)
		}
	}
	kind := llm.Invalid
	switch {
	case re.Code == -32000:
		kind = llm.Auth
	case retryable(re.Data, re.Message+" "+detail):
		kind = llm.Transient
	}
	msg := fmt.Sprintf("%s: agent error %d: %s", step, re.Code, re.Message)
	if detail != "" {
		msg += " " + clip.Text(detail, 300)
	}
	return c.fail(kind, c.cfg.Redactor.Redact(msg), err)
}

// retryable reads DiffPal's marks of a retryable agent error: data's
// retryable flag, or a kind of rate_limited or unavailable; without
// marks, the message.
func retryable(data any, text string) bool {
	if m, ok := data.(map[string]any); ok {
		if r, ok := m["retryable"].(bool); ok {
			return r
		}
		if k, ok := m["kind"].(string); ok {
			switch k {
			case "rate_limited", "unavailable":
				return true
			}
			return false
		}
	}
	return retryRe().MatchString(text)
}

var authRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)(not logged in|log ?in required|please (run )?.{0,20}login|invalid[ _-]?api[ _-]?key|unauthori[sz]ed|authentication (error|failed|required))`)
})

// exitError classifies an agent that went away before answering.
func (c *Client) exitError(err error, tail string) error {
	kind := llm.Invalid
	msg := "the agent exited before answering"
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		msg = fmt.Sprintf("the agent exited with status %d before answering", ee.ExitCode())
	case errors.As(err, &ee):
		msg = "the agent was killed: " + ee.ProcessState.String()
		kind = llm.Transient
	case err != nil:
		msg = "agent failed: " + err.Error()
	}
	if authRe().MatchString(tail) {
		kind = llm.Auth
	}
	if tail != "" {
		msg += "; stderr: " + c.cfg.Redactor.Redact(tail)
	}
	return c.fail(kind, msg, err)
}

func (c *Client) fail(kind llm.Kind, msg string, err error) *llm.Error {
	return &llm.Error{Kind: kind, Provider: c.cfg.Type, Msg: msg, Err: err}
}

// session is the client side of one conversation: it serves and refuses
// the agent's requests and records what it sees.
type session struct {
	c *Client

	mu        sync.Mutex
	text      strings.Builder
	truncated bool
	calls     []provider.ToolCall
	index     map[acpsdk.ToolCallId]int
	reads     []string
	refused   []string
}

var _ acpsdk.Client = (*session)(nil)

func newSession(c *Client) *session {
	return &session{c: c, index: map[acpsdk.ToolCallId]int{}}
}

func (s *session) answer() (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.text.String(), s.truncated
}

func (s *session) inspection() *provider.Inspection {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.calls) == 0 && len(s.reads) == 0 && len(s.refused) == 0 {
		// Observed, and nothing happened: still an inspection record.
		return &provider.Inspection{}
	}
	in := &provider.Inspection{}
	for _, t := range s.calls {
		t.Paths = append([]string(nil), t.Paths...)
		in.ToolCalls = append(in.ToolCalls, t)
	}
	in.Reads = append([]string(nil), s.reads...)
	in.Refused = append([]string(nil), s.refused...)
	return in
}

func (s *session) refuse(what string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.refused) < provider.MaxInspectionItems {
		s.refused = append(s.refused, s.c.cfg.Redactor.Redact(clip.Text(what, 300)))
	}
}

// rel is p relative to the repository root, slash-separated; false when
// p is outside it. Relative paths are taken from the root.
func (s *session) rel(p string) (string, bool) {
	if p == "" || strings.ContainsRune(p, 0) {
		return "", false
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(s.c.realRoot, p)
	}
	p = filepath.Clean(p)
	for _, r := range []string{s.c.realRoot, s.c.root} {
		if repofs.Within(r, p) {
			rel, err := filepath.Rel(r, p)
			if err == nil {
				return filepath.ToSlash(rel), true
			}
		}
	}
	return "", false
}

// display is how a path is recorded: repository-relative, or
// provider.OutsideRepo.
func (s *session) display(p string) string {
	if rel, ok := s.rel(p); ok {
		return rel
	}
	return provider.OutsideRepo
}

func refusal(reason string) error {
	return &acpsdk.RequestError{Code: -32603, Message: "refused by diffpal: " + reason}
}

// ReadTextFile serves a regular file inside the repository, redacted.
func (s *session) ReadTextFile(_ context.Context, p acpsdk.ReadTextFileRequest) (acpsdk.ReadTextFileResponse, error) {
	rel, ok := s.rel(p.Path)
	if !ok {
		s.refuse("read " + provider.OutsideRepo)
		return acpsdk.ReadTextFileResponse{}, refusal("the path is outside the repository")
	}
	if rel == ".git" || strings.HasPrefix(rel, ".git/") {
		s.refuse("read " + rel)
		return acpsdk.ReadTextFileResponse{}, refusal("git's own files are not served")
	}
	data, err := repofs.ReadFile(s.c.realRoot, rel, s.c.cfg.MaxRead)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return acpsdk.ReadTextFileResponse{}, &acpsdk.RequestError{Code: -32602, Message: "no such file: " + rel}
		}
		s.refuse("read " + rel + ": " + err.Error())
		return acpsdk.ReadTextFileResponse{}, refusal(rel + ": " + err.Error())
	}
	content := string(data)
	if p.Line != nil || p.Limit != nil {
		lines := strings.SplitAfter(content, "\n")
		start := 0
		if p.Line != nil && *p.Line > 1 {
			start = min(*p.Line-1, len(lines))
		}
		end := len(lines)
		if p.Limit != nil && *p.Limit > 0 && start+*p.Limit < end {
			end = start + *p.Limit
		}
		content = strings.Join(lines[start:end], "")
	}
	s.mu.Lock()
	if len(s.reads) < provider.MaxInspectionItems && !contains(s.reads, rel) {
		s.reads = append(s.reads, rel)
	}
	s.mu.Unlock()
	return acpsdk.ReadTextFileResponse{Content: s.c.cfg.Redactor.Redact(content)}, nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// WriteTextFile is refused: a review never changes the repository.
func (s *session) WriteTextFile(_ context.Context, p acpsdk.WriteTextFileRequest) (acpsdk.WriteTextFileResponse, error) {
	s.refuse("write " + s.display(p.Path))
	return acpsdk.WriteTextFileResponse{}, refusal("diffpal reviews read-only; file writes are not allowed")
}

// RequestPermission answers with a reject option (cancelled when there is
// none).
func (s *session) RequestPermission(_ context.Context, p acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
	what := "tool call"
	if p.ToolCall.Title != nil {
		what = *p.ToolCall.Title
	}
	if p.ToolCall.Kind != nil {
		what = string(*p.ToolCall.Kind) + ": " + what
	}
	s.refuse("permission for " + what)
	for _, kind := range []acpsdk.PermissionOptionKind{acpsdk.PermissionOptionKindRejectOnce, acpsdk.PermissionOptionKindRejectAlways} {
		for _, o := range p.Options {
			if o.Kind == kind {
				return acpsdk.RequestPermissionResponse{Outcome: acpsdk.RequestPermissionOutcome{Selected: &acpsdk.RequestPermissionOutcomeSelected{OptionId: o.OptionId}}}, nil
			}
		}
	}
	return acpsdk.RequestPermissionResponse{Outcome: acpsdk.RequestPermissionOutcome{Cancelled: &acpsdk.RequestPermissionOutcomeCancelled{}}}, nil
}

// SessionUpdate collects the answer text and the tool calls.
func (s *session) SessionUpdate(_ context.Context, n acpsdk.SessionNotification) error {
	u := n.Update
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case u.AgentMessageChunk != nil:
		if t := u.AgentMessageChunk.Content.Text; t != nil && !s.truncated {
			if s.text.Len()+len(t.Text) > s.c.cfg.MaxAnswer {
				s.truncated = true
				return nil
			}
			s.text.WriteString(t.Text)
		}
	case u.ToolCall != nil:
		tc := u.ToolCall
		s.upsert(tc.ToolCallId, string(tc.Kind), &tc.Title, string(tc.Status), tc.Locations, tc.RawInput)
	case u.ToolCallUpdate != nil:
		tc := u.ToolCallUpdate
		kind, status := "", ""
		if tc.Kind != nil {
			kind = string(*tc.Kind)
		}
		if tc.Status != nil {
			status = string(*tc.Status)
		}
		s.upsert(tc.ToolCallId, kind, tc.Title, status, tc.Locations, tc.RawInput)
	}
	return nil
}

// upsert records or updates a tool call (s.mu held).
func (s *session) upsert(id acpsdk.ToolCallId, kind string, title *string, status string, locs []acpsdk.ToolCallLocation, input any) {
	i, ok := s.index[id]
	if !ok {
		if len(s.calls) >= provider.MaxInspectionItems {
			return
		}
		s.calls = append(s.calls, provider.ToolCall{ID: clip.Text(string(id), 100)})
		i = len(s.calls) - 1
		s.index[id] = i
	}
	t := &s.calls[i]
	red := s.c.cfg.Redactor.Redact
	if kind != "" {
		t.Kind = clip.Text(kind, 40)
	}
	if title != nil && *title != "" {
		t.Title = red(clip.Text(strings.Join(strings.Fields(*title), " "), 200))
	}
	if status != "" {
		t.Status = status
	}
	for _, l := range locs {
		if d := s.display(l.Path); !contains(t.Paths, d) && len(t.Paths) < 50 {
			t.Paths = append(t.Paths, d)
		}
	}
	if input != nil {
		if b, err := json.Marshal(input); err == nil {
			t.Input = red(clip.Text(string(b), 500))
		}
	}
}

// Terminals are refused: the client does not offer them, and a review
// runs no commands on diffpal's side.
func (s *session) CreateTerminal(_ context.Context, p acpsdk.CreateTerminalRequest) (acpsdk.CreateTerminalResponse, error) {
	s.refuse("terminal " + strings.Join(append([]string{p.Command}, p.Args...), " "))
	return acpsdk.CreateTerminalResponse{}, refusal("terminals are not available")
}

func (s *session) KillTerminal(context.Context, acpsdk.KillTerminalRequest) (acpsdk.KillTerminalResponse, error) {
	return acpsdk.KillTerminalResponse{}, refusal("terminals are not available")
}

func (s *session) TerminalOutput(context.Context, acpsdk.TerminalOutputRequest) (acpsdk.TerminalOutputResponse, error) {
	return acpsdk.TerminalOutputResponse{}, refusal("terminals are not available")
}

func (s *session) ReleaseTerminal(context.Context, acpsdk.ReleaseTerminalRequest) (acpsdk.ReleaseTerminalResponse, error) {
	return acpsdk.ReleaseTerminalResponse{}, refusal("terminals are not available")
}

func (s *session) WaitForTerminalExit(context.Context, acpsdk.WaitForTerminalExitRequest) (acpsdk.WaitForTerminalExitResponse, error) {
	return acpsdk.WaitForTerminalExitResponse{}, refusal("terminals are not available")
}

// tailBuffer keeps the last max bytes written.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.ToValidUTF8(string(b.buf), "")
}
