//go:build unix

package acp

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/diffpalhq/diffpal/internal/diff"
	"github.com/diffpalhq/diffpal/internal/evidence"
	"github.com/diffpalhq/diffpal/internal/provider"
	"github.com/diffpalhq/diffpal/internal/provider/acp/acptest"
	"github.com/diffpalhq/diffpal/internal/provider/llm"
	"github.com/diffpalhq/diffpal/internal/qa"
)

const planted = "ghp_1234567890abcdefghijklmnopqrstuvwxyzAB"

// fixture is a repository directory (with one file holding a planted
// secret) beside a file outside it, and a record directory.
type fixture struct {
	root, records string
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	base := t.TempDir()
	root := filepath.Join(base, "repo")
	records := filepath.Join(base, "records")
	for _, d := range []string{root, records, filepath.Join(root, ".git")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "calc.go"), "package calc\n\nvar token = \""+planted+"\"\n")
	write(filepath.Join(base, "outside.txt"), "secret outside\n")
	return fixture{root: root, records: records}
}

func (f fixture) read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.records, name))
	if err != nil {
		t.Fatalf("record %s: %v", name, err)
	}
	return string(b)
}

func (f fixture) client(t *testing.T, scenario string, mod func(*Config), extra ...string) *Client {
	t.Helper()
	cfg := Config{Type: "generic_acp", Argv: acptest.Argv(), Dir: f.root, Env: acptest.Env(scenario, f.records, extra...), Timeout: -1, KillGrace: 30 * time.Second}
	if mod != nil {
		mod(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func request() llm.Request {
	return llm.Request{System: "You review code.", Messages: []llm.Message{{Role: "user", Content: "Review calc.go."}},
		Schema: llm.AnswerSchema, SchemaName: llm.AnswerSchemaName}
}

func kindOf(t *testing.T, err error) *llm.Error {
	t.Helper()
	var e *llm.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not *llm.Error", err, err)
	}
	return e
}

func TestCleanAnswer(t *testing.T) {
	f := newFixture(t)
	c := f.client(t, "clean", nil)
	resp, err := c.Complete(context.Background(), request())
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.JSON) != acptest.EmptyAnswer {
		t.Errorf("JSON = %s", resp.JSON)
	}
	if got := f.read(t, "cwd.txt"); got != c.realRoot {
		t.Errorf("session cwd = %q, want the repository root %q", got, c.realRoot)
	}
	prompt := f.read(t, "prompt.txt")
	if !strings.Contains(prompt, "You review code.") || !strings.Contains(prompt, llm.AnswerSchemaName) {
		t.Errorf("prompt lacks the instructions or the schema:\n%s", prompt)
	}
	if resp.Inspection == nil || len(resp.Inspection.ToolCalls) != 0 || len(resp.Inspection.Refused) != 0 {
		t.Errorf("inspection = %+v, want an empty record", resp.Inspection)
	}
}

func TestToolCallsAndReadsFillInspection(t *testing.T) {
	f := newFixture(t)
	c := f.client(t, "inspect", nil, acptest.EnvRead+"=calc.go")
	resp, err := c.Complete(context.Background(), request())
	if err != nil {
		t.Fatal(err)
	}
	in := resp.Inspection
	if in == nil {
		t.Fatal("no inspection")
	}
	if !slices.Equal(in.Reads, []string{"calc.go"}) {
		t.Errorf("reads = %v", in.Reads)
	}
	if labels := in.Labels(); !slices.Equal(labels, []string{"read: Read calc.go", "execute: git diff HEAD~1"}) {
		t.Errorf("tool calls = %v", labels)
	}
	if in.ToolCalls[0].Paths[0] != "calc.go" || in.ToolCalls[1].Status != "completed" {
		t.Errorf("tool calls = %+v", in.ToolCalls)
	}
	if diff, _ := in.Inspected([]string{"calc.go"}); !diff {
		t.Error("the diff does not count as inspected")
	}
	if !slices.Contains(in.Refused, "read "+provider.OutsideRepo) {
		t.Errorf("the read outside the repository was not recorded as refused: %v", in.Refused)
	}
	got := f.read(t, "read.txt")
	if !strings.Contains(got, "inside:ok:package calc") || !strings.Contains(got, "outside:error") {
		t.Errorf("served reads: %s", got)
	}
	if strings.Contains(got, planted[4:20]) {
		t.Error("the planted secret was served to the agent unredacted")
	}
}

func TestReadConfinement(t *testing.T) {
	f := newFixture(t)
	if err := os.Symlink(filepath.Join(filepath.Dir(f.root), "outside.txt"), filepath.Join(f.root, "link.txt")); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(f.root, ".git", "config"), []byte("[remote]\n"), 0o644)
	os.WriteFile(filepath.Join(f.root, "big.txt"), bytes.Repeat([]byte("x"), 200), 0o644)
	c := f.client(t, "clean", func(c *Config) { c.MaxRead = 100 })
	s := newSession(c)
	for _, p := range []string{"link.txt", ".git/config", "big.txt", "/etc/passwd", "../outside.txt"} {
		path := p
		if !filepath.IsAbs(p) {
			path = filepath.Join(c.realRoot, p)
		}
		if _, err := s.ReadTextFile(context.Background(), readReq(path)); err == nil {
			t.Errorf("%s was served", p)
		}
	}
	if n := len(s.inspection().Refused); n != 5 {
		t.Errorf("refused %d of 5: %v", n, s.inspection().Refused)
	}
	line, limit := 3, 1
	r, err := s.ReadTextFile(context.Background(), readReqLines(filepath.Join(c.realRoot, "calc.go"), &line, &limit))
	if err != nil || !strings.HasPrefix(r.Content, "var token") || strings.Contains(r.Content, planted) {
		t.Errorf("line read = %q, %v", r.Content, err)
	}
}

func TestWriteAndPermissionRefusedAndRecorded(t *testing.T) {
	f := newFixture(t)
	c := f.client(t, "write", nil)
	resp, err := c.Complete(context.Background(), request())
	if err != nil {
		t.Fatal(err)
	}
	if got := f.read(t, "write.txt"); got != "error" {
		t.Errorf("write outcome = %q", got)
	}
	if got := f.read(t, "permission.txt"); got != "reject" {
		t.Errorf("permission outcome = %q, want the reject option", got)
	}
	if _, err := os.Stat(filepath.Join(f.root, "pwned.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Error("the agent wrote into the repository")
	}
	if r := resp.Inspection.Refused; !slices.Equal(r, []string{"write pwned.txt", "permission for edit: Edit config.json"}) {
		t.Errorf("refused = %v", r)
	}
}

func TestMalformedThenRepaired(t *testing.T) {
	f := newFixture(t)
	c := f.client(t, "malformed", nil)
	_, err := c.Complete(context.Background(), request())
	if e := kindOf(t, err); e.Kind != llm.Malformed || !strings.Contains(e.Msg, "no JSON object") {
		t.Fatalf("first answer: %v", err)
	}
	// Through the llm machinery: the repair round gets JSON.
	p, err := llm.New(llm.Config{Client: c, Sleep: func(context.Context, time.Duration) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.ReviewProfile(context.Background(), profileRequest(t))
	if err != nil {
		t.Fatal(err)
	}
	if res.Attempts != 2 || res.AttemptLog[0].Outcome != "retryable_error" || res.AttemptLog[1].Outcome != "completed" {
		t.Errorf("attempts = %d %+v", res.Attempts, res.AttemptLog)
	}
	if res.Inspection == nil {
		t.Error("no inspection reported through the llm layer")
	}
}

func TestErrorsAreClassified(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		scenario string
		kind     llm.Kind
		msg      string
	}{
		{"crash", llm.Invalid, "exited with status 3"},
		{"auth", llm.Auth, "-32000"},
		{"retryable", llm.Transient, "model overloaded"},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			_, err := f.client(t, tc.scenario, nil).Complete(context.Background(), request())
			if e := kindOf(t, err); e.Kind != tc.kind || !strings.Contains(e.Msg, tc.msg) {
				t.Errorf("got %v (%s), want %s containing %q", err, e.Kind, tc.kind, tc.msg)
			}
		})
	}
	t.Run("crash stderr", func(t *testing.T) {
		_, err := f.client(t, "crash", nil).Complete(context.Background(), request())
		if !strings.Contains(err.Error(), "segmentation fault (scripted)") {
			t.Errorf("stderr tail missing: %v", err)
		}
	})
}

// TestCancelSendsSessionCancelAndKillsGroup: once the agent is in its
// turn with a child running, the caller cancels; the agent receives
// session/cancel, and its whole group (the child too) is gone afterwards.
func TestCancelSendsSessionCancelAndKillsGroup(t *testing.T) {
	f := newFixture(t)
	c := f.client(t, "hang", nil)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		waitFile(filepath.Join(f.records, "pid"))
		cancel()
	}()
	_, err := c.Complete(ctx, request())
	if e := kindOf(t, err); e.Kind != llm.Transient || !strings.Contains(e.Msg, "cancelled") {
		t.Fatalf("error = %v", err)
	}
	if got := f.read(t, "cancelled"); got != "1\n" {
		t.Error("session/cancel did not reach the agent")
	}
	if pid := readPID(t, f); !gone(t, pid) {
		t.Errorf("the agent's child %d survived", pid)
	}
}

// TestCancelKillsStubbornGroup: an agent that ignores session/cancel and
// SIGTERM is killed with its group after the grace period.
func TestCancelKillsStubbornGroup(t *testing.T) {
	f := newFixture(t)
	c := f.client(t, "stubborn", func(c *Config) { c.KillGrace = 50 * time.Millisecond })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		waitFile(filepath.Join(f.records, "pid"))
		cancel()
	}()
	_, err := c.Complete(ctx, request())
	if e := kindOf(t, err); e.Kind != llm.Transient {
		t.Fatalf("error = %v", err)
	}
	if pid := readPID(t, f); !gone(t, pid) {
		t.Errorf("the stubborn agent's child %d survived", pid)
	}
}

// TestTimeoutIsTransient: the call's own timeout ends a hanging agent with
// a transient "timed out" error and kills its group.
func TestTimeoutIsTransient(t *testing.T) {
	f := newFixture(t)
	pidfile := filepath.Join(f.records, "pid")
	c := f.client(t, "hang", func(c *Config) { c.Timeout = time.Millisecond })
	testHookCancel = func() { waitFileOrPrompting(f) }
	t.Cleanup(func() { testHookCancel = nil })
	_, err := c.Complete(context.Background(), request())
	if e := kindOf(t, err); e.Kind != llm.Transient || !strings.Contains(e.Msg, "timed out") {
		t.Fatalf("error = %v", err)
	}
	if _, err := os.Stat(pidfile); err == nil {
		if pid := readPID(t, f); !gone(t, pid) {
			t.Errorf("the agent's child %d survived", pid)
		}
	}
}

// waitFileOrPrompting returns at once unless the agent is in its turn,
// then until its child's pid is written.
func waitFileOrPrompting(f fixture) {
	if _, err := os.Stat(filepath.Join(f.records, "prompting")); err == nil {
		waitFile(filepath.Join(f.records, "pid"))
	}
}

func waitFile(p string) {
	for {
		if b, err := os.ReadFile(p); err == nil && bytes.HasSuffix(b, []byte("\n")) {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func readPID(t *testing.T, f fixture) int {
	t.Helper()
	pid, err := strconv.Atoi(strings.TrimSpace(f.read(t, "pid")))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// gone reports whether pid has exited (a zombie counts), polling; the
// bound only decides how long a failure takes to report.
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

func exited(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	switch {
	case err == nil:
		i := bytes.LastIndexByte(stat, ')')
		return i > 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X')
	case runtime.GOOS == "linux":
		return true
	default:
		return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
	}
}

func readReq(p string) acpsdk.ReadTextFileRequest {
	return acpsdk.ReadTextFileRequest{SessionId: "s", Path: p}
}

func readReqLines(p string, line, limit *int) acpsdk.ReadTextFileRequest {
	return acpsdk.ReadTextFileRequest{SessionId: "s", Path: p, Line: line, Limit: limit}
}

// profileRequest is a one-file change (a new calc.go) as the engine hands
// it to providers.
func profileRequest(t *testing.T) provider.ProfileRequest {
	t.Helper()
	content := []string{"package calc", "", "func ratio(total, n int) int { return total / n }"}
	d := &diff.File{OldPath: "calc.go", NewPath: "calc.go", Status: diff.Added, NewMode: "100644"}
	h := diff.Hunk{NewStart: 1, NewLines: len(content)}
	for i, l := range content {
		h.Lines = append(h.Lines, diff.Line{Kind: '+', Text: l, NewNo: i + 1})
	}
	d.Hunks = []diff.Hunk{h}
	ch := &provider.Change{Files: []*provider.ChangedFile{{Diff: d, Content: content}},
		RawDiff: []byte("diff --git a/calc.go b/calc.go\n" + strings.Join(content, "\n"))}
	pk, err := evidence.Build(ch.RawDiff, []evidence.File{{Diff: d, Content: content}}, evidence.Options{
		Repository: "example/repo", BaseSHA: strings.Repeat("a", 40), HeadSHA: strings.Repeat("b", 40)})
	if err != nil {
		t.Fatal(err)
	}
	ch.Packet = pk
	route, err := qa.Prepare(qa.PrepareInput{AgentProfile: qa.ProfileCodeReviewer})
	if err != nil {
		t.Fatal(err)
	}
	return provider.ProfileRequest{Profile: qa.ProfileCodeReviewer, Route: route, Change: ch, RuleProfiles: []string{string(qa.ProfileCodeReviewer)}}
}
