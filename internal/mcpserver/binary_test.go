package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
	binDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// diffpalBinary builds ./cmd/diffpal once per test run.
func diffpalBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the diffpal binary; skipped with -short")
	}
	binOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "diffpal-mcp-test-"); binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "diffpal")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/diffpal")
		cmd.Dir = filepath.Join("..", "..")
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = errors.New("go build ./cmd/diffpal: " + err.Error() + "\n" + string(out))
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// TestBinaryStdio runs the real `diffpal mcp` over stdio with the SDK's
// command transport and drives a review-bound session to an export.
func TestBinaryStdio(t *testing.T) {
	bin := diffpalBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// --no-local-repo: the ten session tools only (get_review_context is
	// tested in-process, internal/cli/mcp_host_test.go).
	cmd := exec.CommandContext(ctx, bin, "mcp", "--ttl", "10m", "--max-sessions", "5", "--no-local-repo")
	cmd.Env = append(os.Environ(), "DIFFPAL_MCP_MODEL_MODE=host_default")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "binary-test", Version: "1"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\nstderr: %s", err, stderr.String())
	}
	defer cs.Close()
	if got := cs.InitializeResult(); got == nil || got.ServerInfo.Name != ServerName {
		t.Fatalf("initialize result %+v", got)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 10 {
		t.Fatalf("tools/list: %v (%d tools)", err, len(tools.Tools))
	}
	var s qa.Session
	mustOK(t, callTool(t, cs, qa.ToolStart, qa.StartInput{TaskType: qa.TaskOther, ReviewContext: reviewContext()}), "start", &s)
	if s.ModelPolicy == nil || s.ModelPolicy.Mode != qa.PolicyModeHostDefault {
		t.Errorf("model_policy = %+v, want host_default from DIFFPAL_MCP_MODEL_MODE", s.ModelPolicy)
	}
	if d := s.ExpiresAt.Sub(time.Now()); d < 9*time.Minute || d > 11*time.Minute {
		t.Errorf("expires in %v, want about --ttl 10m", d)
	}
	run := func(in qa.AdvanceInput) {
		t.Helper()
		in.RunID = s.RunID
		mustOK(t, callTool(t, cs, qa.ToolAdvance, in), "advance", &s)
	}
	hash := s.ReviewContext.ReviewRulesSHA256
	run(qa.AdvanceInput{CompletedStep: qa.StepTriage, Status: qa.OutcomeCompleted, SelectedProfile: ptr(qa.ProfileCodeReviewer)})
	run(qa.AdvanceInput{CompletedStep: qa.StepPrimaryReview, Status: qa.OutcomeCompleted,
		CompletedProfile: ptr(qa.ProfileCodeReviewer), RiskSignals: &qa.RiskSignals{},
		ProfileReport: profileReport(qa.ProfileCodeReviewer, hash, candidate("F-01", "nil cart", true))})
	fr := &qa.FinalReviewReport{Summary: "one finding", ProfilesReviewed: []qa.Profile{qa.ProfileCodeReviewer},
		ReviewRulesSHA256: hash,
		FindingCandidates: []qa.FinalCandidate{{CandidateID: "F-01", Title: "nil cart", Description: "d",
			Confidence: qa.ConfidenceMedium, VerificationGap: "g", EvidenceRefs: []string{"E2"}, Severity: ptr(qa.SeverityHigh),
			SourceLocations:  []qa.SourceLocation{{Path: "src/cart.tsx", StartLine: 11}},
			SourceProfiles:   []qa.Profile{qa.ProfileCodeReviewer},
			SourceCandidates: []qa.CandidateRef{{Profile: qa.ProfileCodeReviewer, CandidateID: "F-01"}}}},
		CandidateDecisions: []qa.CandidateDecision{{Source: qa.CandidateRef{Profile: qa.ProfileCodeReviewer, CandidateID: "F-01"},
			Verdict: qa.VerdictConfirmed, FinalFindingID: ptr("F-01"), Rationale: "r", EvidenceRefs: []string{"E2"}}}}
	run(qa.AdvanceInput{CompletedStep: qa.StepSynthesis, Status: qa.OutcomeCompleted, FinalReviewReport: fr})
	mustOK(t, callTool(t, cs, qa.ToolFinish, qa.FinishInput{RunID: s.RunID, Outcome: qa.OutcomeCompleted}), "finish", &s)
	raw := mustOK(t, callTool(t, cs, qa.ToolExport, qa.ExportInput{RunID: s.RunID}), "export", nil)
	b, _, err := findings.Parse(raw)
	if err != nil || len(b.Findings) != 1 || !b.Findings[0].Blocking {
		t.Fatalf("exported bundle: %v %+v", err, b)
	}
	res := callTool(t, cs, qa.ToolGet, qa.GetInput{RunID: "qar-" + strings.Repeat("1", 32)})
	if !res.IsError || resultText(res) != "unknown run_id" {
		t.Fatalf("unknown run id: %v %q", res.IsError, resultText(res))
	}
}

var servingRE = regexp.MustCompile(`serving (http://\S+)`)

// startHTTPBinary runs `diffpal mcp` with args and returns the URL it
// reports once it is listening.
func startHTTPBinary(t *testing.T, env []string, args ...string) string {
	t.Helper()
	bin := diffpalBinary(t)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, append([]string{"mcp"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		err := cmd.Wait()
		var ee *exec.ExitError
		if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 130) {
			t.Errorf("diffpal mcp after SIGINT: %v", err)
		}
	})
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatal("diffpal mcp exited before listening")
			}
			if m := servingRE.FindStringSubmatch(line); m != nil {
				go func() {
					for range lines {
					}
				}()
				return m[1]
			}
		case <-timeout:
			t.Fatal("diffpal mcp did not report its address")
		}
	}
}

// TestBinaryHTTP runs the real `diffpal mcp --http 127.0.0.1:0` with a
// bearer token: the SDK client works with the token, a request without it
// gets 401 and a cross-origin browser request gets 403.
func TestBinaryHTTP(t *testing.T) {
	url := startHTTPBinary(t, []string{"DIFFPAL_TEST_TOKEN=" + testToken},
		"--http", "127.0.0.1:0", "--token-env", "DIFFPAL_TEST_TOKEN", "--max-body", "64KiB")
	base := strings.TrimSuffix(url, HTTPPath)
	cs := httpClient(t, base, testToken)
	var s qa.Session
	mustOK(t, callTool(t, cs, qa.ToolStart, qa.StartInput{TaskType: qa.TaskQAPlanning}), "start", &s)
	mustOK(t, callTool(t, cs, qa.ToolGet, qa.GetInput{RunID: s.RunID}), "get", &s)
	if s.TaskType != qa.TaskQAPlanning {
		t.Fatalf("task type %s", s.TaskType)
	}
	if code, body := post(t, base, nil, initBody); code != http.StatusUnauthorized {
		t.Errorf("without token: %d %s", code, body)
	}
	if code, body := post(t, base, map[string]string{"Authorization": "Bearer " + testToken, "Origin": "http://evil.example"},
		initBody); code != http.StatusForbidden {
		t.Errorf("bad Origin: %d %s", code, body)
	}
	if code, body := post(t, base, map[string]string{"Authorization": "Bearer " + testToken},
		strings.Replace(initBody, `"curl"`, `"`+strings.Repeat("c", 70<<10)+`"`, 1)); code != http.StatusRequestEntityTooLarge {
		t.Errorf("--max-body 64KiB: %d %s", code, body)
	}
}

// TestBinaryNonLoopbackNeedsToken: binding a non-loopback address without
// --token-env is a usage error (exit 2) before anything is bound.
func TestBinaryNonLoopbackNeedsToken(t *testing.T) {
	bin := diffpalBinary(t)
	for _, args := range [][]string{
		{"mcp", "--http", "0.0.0.0:0"},
		{"mcp", "--http", ":0"},
		{"mcp", "--http", "0.0.0.0:0", "--token-env", "DIFFPAL_UNSET_TOKEN_VAR"},
	} {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "DIFFPAL_UNSET_TOKEN_VAR=")
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Fatalf("%v: err %v, want exit 2\n%s", args, err, out)
		}
		if !strings.Contains(string(out), "--token-env") && !strings.Contains(string(out), "--http") {
			t.Errorf("%v: message does not name the flag: %s", args, out)
		}
	}
}
