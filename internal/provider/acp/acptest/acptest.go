// Package acptest is a scripted fake ACP agent for tests, built on the
// SDK's agent side (github.com/coder/acp-go-sdk), so that what the client
// under test speaks is the real protocol. A test binary that imports this
// package becomes the agent when it is started with EnvScenario set (its
// init runs the agent and exits): tests use Argv and Env as the agent's
// command line and environment.
//
// Scenarios:
//
//	clean      answer with the scripted answer (EnvAnswer, else no candidates)
//	inspect    report tool calls (a read of EnvRead, a git diff), read EnvRead
//	           and a file outside the repository through the client, answer
//	write      ask to write a file and for permission, record the outcomes, answer
//	malformed  answer in prose, then (in the repair round) with JSON
//	hang       start a child in the group, block in the prompt; on
//	           session/cancel record it and end the turn as cancelled
//	stubborn   like hang, but ignore session/cancel and SIGTERM
//	crash      print to stderr and exit 3 in the middle of the prompt
//	auth       refuse session/new with -32000 (authentication required)
//	retryable  fail the prompt with an error marked retryable
//
// Files written to EnvDir: pid (the child of hang and stubborn, once it
// runs, newline-terminated), prompting (the prompt turn began), cancelled
// (session/cancel arrived), read.txt (what the client served), write.txt
// and permission.txt (the outcomes), prompt.txt (the last prompt).
package acptest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"

	acp "github.com/coder/acp-go-sdk"
)

// The environment of the fake agent.
const (
	EnvScenario = "DIFFPAL_ACPTEST_AGENT"
	EnvDir      = "DIFFPAL_ACPTEST_DIR"
	EnvAnswer   = "DIFFPAL_ACPTEST_ANSWER"
	EnvRead     = "DIFFPAL_ACPTEST_READ"
)

// EmptyAnswer is a profile answer without candidates.
const EmptyAnswer = `{"candidates":[],"coverage_gaps":[],"unverified":[]}`

func init() {
	if sc := os.Getenv(EnvScenario); sc != "" {
		os.Exit(run(sc))
	}
}

// Argv is the fake agent's command line: the running test binary.
func Argv() []string {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	return []string{exe}
}

// Env is the environment that makes the test binary the agent of
// scenario, writing its records to dir; extra are more NAME=VALUE pairs.
func Env(scenario, dir string, extra ...string) []string {
	env := append(os.Environ(), EnvScenario+"="+scenario, EnvDir+"="+dir)
	return append(env, extra...)
}

func run(scenario string) int {
	a := &agent{scenario: scenario, dir: os.Getenv(EnvDir), cancelled: make(chan struct{})}
	if scenario == "stubborn" {
		signal.Ignore(syscall.SIGTERM)
	}
	conn := acp.NewAgentSideConnection(a, os.Stdout, os.Stdin)
	a.conn = conn
	<-conn.Done()
	return 0
}

type agent struct {
	scenario  string
	dir       string
	conn      *acp.AgentSideConnection
	cwd       string
	cancelled chan struct{}
}

var _ acp.Agent = (*agent)(nil)

func (a *agent) record(name, content string) {
	if a.dir == "" {
		return
	}
	// Written whole then renamed, so a reader never sees half a record.
	tmp := filepath.Join(a.dir, "."+name+".tmp")
	_ = os.WriteFile(tmp, []byte(content), 0o644)
	_ = os.Rename(tmp, filepath.Join(a.dir, name))
}

func (a *agent) Initialize(context.Context, acp.InitializeRequest) (acp.InitializeResponse, error) {
	return acp.InitializeResponse{ProtocolVersion: acp.ProtocolVersionNumber, AgentInfo: &acp.Implementation{Name: "acptest", Version: "1"},
		AuthMethods: []acp.AuthMethod{}}, nil
}

func (a *agent) Authenticate(context.Context, acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
	return acp.AuthenticateResponse{}, nil
}

func (a *agent) NewSession(_ context.Context, p acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	if a.scenario == "auth" {
		return acp.NewSessionResponse{}, acp.NewAuthRequired(map[string]any{"hint": "run acptest login"})
	}
	a.cwd = p.Cwd
	a.record("cwd.txt", p.Cwd)
	return acp.NewSessionResponse{SessionId: "sess-1"}, nil
}

func (a *agent) Cancel(context.Context, acp.CancelNotification) error {
	a.record("cancelled", "1\n")
	if a.scenario != "stubborn" {
		select {
		case <-a.cancelled:
		default:
			close(a.cancelled)
		}
	}
	return nil
}

func (a *agent) say(ctx context.Context, sid acp.SessionId, text string) {
	// Streamed in pieces, as real agents do.
	for len(text) > 0 {
		n := min(len(text), 17)
		_ = a.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: sid, Update: acp.UpdateAgentMessageText(text[:n])})
		text = text[n:]
	}
}

var candidateID = regexp.MustCompile(`part=candidate id=(\S+)`)

// answer is the JSON the scenario answers prompt with.
func answer(prompt string) string {
	if strings.Contains(prompt, "diffpal_verification_answer") {
		var vs []map[string]any
		for _, m := range candidateID.FindAllStringSubmatch(prompt, -1) {
			vs = append(vs, map[string]any{"candidate_id": m[1], "verdict": "confirmed", "rationale": "the hunk shows it", "evidence_refs": []string{"f1:h1"}})
		}
		if vs == nil {
			vs = []map[string]any{}
		}
		b, _ := json.Marshal(map[string]any{"verdicts": vs})
		return string(b)
	}
	if s := os.Getenv(EnvAnswer); s != "" {
		return s
	}
	return EmptyAnswer
}

func (a *agent) Prompt(ctx context.Context, p acp.PromptRequest) (acp.PromptResponse, error) {
	var prompt strings.Builder
	for _, b := range p.Prompt {
		if b.Text != nil {
			prompt.WriteString(b.Text.Text)
		}
	}
	text := prompt.String()
	a.record("prompt.txt", text)
	a.record("prompting", "1\n")
	sid := p.SessionId
	end := acp.PromptResponse{StopReason: acp.StopReasonEndTurn}
	switch a.scenario {
	case "clean":
		a.say(ctx, sid, "Here is my review.\n"+answer(text)+"\n")
	case "inspect":
		rel := os.Getenv(EnvRead)
		abs := filepath.Join(a.cwd, rel)
		_ = a.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: sid, Update: acp.StartReadToolCall("t1", "Read "+rel, abs)})
		_ = a.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: sid, Update: acp.StartToolCall("t2", "git diff HEAD~1",
			acp.WithStartKind(acp.ToolKindExecute), acp.WithStartRawInput(map[string]any{"command": "git diff HEAD~1 -- " + rel}))})
		_ = a.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: sid, Update: acp.UpdateToolCall("t2", acp.WithUpdateStatus(acp.ToolCallStatusCompleted))})
		var got strings.Builder
		if r, err := a.conn.ReadTextFile(ctx, acp.ReadTextFileRequest{SessionId: sid, Path: abs}); err == nil {
			got.WriteString("inside:ok:" + r.Content + "\n")
		} else {
			got.WriteString("inside:error:" + err.Error() + "\n")
		}
		if _, err := a.conn.ReadTextFile(ctx, acp.ReadTextFileRequest{SessionId: sid, Path: filepath.Join(filepath.Dir(a.cwd), "outside.txt")}); err == nil {
			got.WriteString("outside:ok\n")
		} else {
			got.WriteString("outside:error\n")
		}
		a.record("read.txt", got.String())
		a.say(ctx, sid, answer(text))
	case "write":
		var got strings.Builder
		if _, err := a.conn.WriteTextFile(ctx, acp.WriteTextFileRequest{SessionId: sid, Path: filepath.Join(a.cwd, "pwned.txt"), Content: "x"}); err == nil {
			got.WriteString("ok")
		} else {
			got.WriteString("error")
		}
		a.record("write.txt", got.String())
		perm, err := a.conn.RequestPermission(ctx, acp.RequestPermissionRequest{SessionId: sid,
			ToolCall: acp.ToolCallUpdate{ToolCallId: "t9", Title: acp.Ptr("Edit config.json"), Kind: acp.Ptr(acp.ToolKindEdit)},
			Options: []acp.PermissionOption{
				{Kind: acp.PermissionOptionKindAllowOnce, Name: "Allow", OptionId: "allow"},
				{Kind: acp.PermissionOptionKindRejectOnce, Name: "Reject", OptionId: "reject"},
			}})
		switch {
		case err != nil:
			a.record("permission.txt", "error")
		case perm.Outcome.Selected != nil:
			a.record("permission.txt", string(perm.Outcome.Selected.OptionId))
		default:
			a.record("permission.txt", "cancelled")
		}
		a.say(ctx, sid, answer(text))
	case "malformed":
		if strings.Contains(text, "=== USER ===") {
			a.say(ctx, sid, answer(text))
		} else {
			a.say(ctx, sid, "The change looks fine to me, nothing to report.")
		}
	case "hang", "stubborn":
		child := exec.Command("sleep", "300")
		if err := child.Start(); err != nil {
			return end, err
		}
		a.record("pid", strconv.Itoa(child.Process.Pid)+"\n")
		<-a.cancelled // never closed for stubborn
		return acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
	case "crash":
		fmt.Fprintln(os.Stderr, "acptest: segmentation fault (scripted)")
		os.Exit(3)
	case "retryable":
		return end, &acp.RequestError{Code: -32603, Message: "model overloaded", Data: map[string]any{"retryable": true}}
	default:
		return end, fmt.Errorf("acptest: unknown scenario %q", a.scenario)
	}
	return end, nil
}

func (a *agent) CloseSession(context.Context, acp.CloseSessionRequest) (acp.CloseSessionResponse, error) {
	return acp.CloseSessionResponse{}, nil
}

func (a *agent) ListSessions(context.Context, acp.ListSessionsRequest) (acp.ListSessionsResponse, error) {
	return acp.ListSessionsResponse{}, nil
}

func (a *agent) ResumeSession(context.Context, acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
	return acp.ResumeSessionResponse{}, nil
}

func (a *agent) SetSessionConfigOption(context.Context, acp.SetSessionConfigOptionRequest) (acp.SetSessionConfigOptionResponse, error) {
	return acp.SetSessionConfigOptionResponse{}, nil
}

func (a *agent) SetSessionMode(context.Context, acp.SetSessionModeRequest) (acp.SetSessionModeResponse, error) {
	return acp.SetSessionModeResponse{}, nil
}
