//go:build unix

package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/config"
	"github.com/diffpalhq/diffpal/internal/provider/acp/acptest"
)

// acpAnswer is the fake agent's answer: one candidate on calc.go's
// division (the providerRepo change).
const acpAnswer = `{"candidates":[{"title":"Division by zero","description":"ratio divides by a count that can be zero.",` +
	`"category":"correctness","severity":"high","confidence":0.9,"path":"calc.go","start_line":4,"end_line":4,` +
	`"evidence_refs":["f1:h1"],"impact":"panics on empty input","impact_scope":"callers of ratio","suggestion":"check n == 0 first",` +
	`"anchor":"return total / n","failure_condition":"n is 0","flip_condition":null}],"coverage_gaps":[],"unverified":[]}`

// acpRepo is providerRepo with a config whose provider "agent" is a
// generic_acp agent: the test binary, made the fake agent of scenario by
// acptest's environment.
func acpRepo(t *testing.T, scenario string, extraConfig string) (dir, records string) {
	t.Helper()
	dir = providerRepo(t)
	records = t.TempDir()
	for _, kv := range acptest.Env(scenario, records, acptest.EnvAnswer+"="+acpAnswer, acptest.EnvRead+"=calc.go")[len(os.Environ()):] {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	argv, _ := json.Marshal(acptest.Argv())
	cfg := "version: v1\nprovider: agent\nproviders:\n  agent:\n    type: generic_acp\n    command: " + string(argv) + "\n" + extraConfig
	if err := os.MkdirAll(filepath.Join(dir, ".config/diffpal"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".config/diffpal/config.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, records
}

// TestReviewWithACPAgent drives `diffpal review` with a configured
// generic_acp provider end to end over the real protocol: the agent's
// finding reaches the bundle, its tool calls and reads fill the bundle's
// inspection, and its refused read outside the repository is in the audit.
func TestReviewWithACPAgent(t *testing.T) {
	dir, _ := acpRepo(t, "inspect", "inspection:\n  required: true\n")
	code, stdout, stderr := runReview(t, "review", "-C", dir, "--config-source", "worktree", "--color", "never", "--no-cache", "--language", "Spanish")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	b, _, err := findings.ReadFile(filepath.Join(dir, ".artifacts/diffpal/findings.json"))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range b.Findings {
		found = found || (f.Title == "Division by zero" && f.Provider == "generic_acp")
	}
	if !found {
		t.Errorf("bundle lacks the agent's finding: %+v", b.Findings)
	}
	in := b.Inspection
	if in == nil || !in.Required || !in.DiffInspected || in.ProviderType != "generic_acp" {
		t.Fatalf("inspection = %+v", in)
	}
	if !strings.Contains(strings.Join(in.ToolCalls, "|"), "execute: git diff HEAD~1") {
		t.Errorf("tool calls = %v", in.ToolCalls)
	}
	if b.Language != "Spanish" {
		t.Errorf("language = %q", b.Language)
	}
	session, _ := os.ReadFile(filepath.Join(dir, ".artifacts/diffpal/qa-session.json"))
	if !strings.Contains(string(session), `"refused"`) || !strings.Contains(string(session), "outside the repository") {
		t.Errorf("the refused read is not in the audit")
	}
	if !strings.Contains(string(session), `"execution_metrics"`) {
		t.Errorf("no execution metrics in the session")
	}
}

// TestReviewACPInspectionRequired: an agent that answers without looking
// at the change fails a review that requires inspection, with exit 3.
func TestReviewACPInspectionRequired(t *testing.T) {
	dir, _ := acpRepo(t, "clean", "inspection:\n  required: true\n")
	code, _, stderr := runReview(t, "review", "-C", dir, "--config-source", "worktree", "--no-cache")
	if code != ExitProvider || !strings.Contains(stderr, "inspection.required") || !strings.Contains(stderr, "read none of the") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

// TestReviewACPCrashIsExit3: an agent that dies mid-turn ends the review
// with exit 3 (a terminal provider failure).
func TestReviewACPCrashIsExit3(t *testing.T) {
	dir, _ := acpRepo(t, "crash", "")
	code, _, stderr := runReview(t, "review", "-C", dir, "--config-source", "worktree", "--no-cache")
	if code != ExitProvider || !strings.Contains(stderr, "exited with status 3") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

// TestReviewPoolFailsOver: a pool whose first member (an agent that
// crashes) fails hands the review to the next (the builtin rules), and
// the session's audit records both attempts.
func TestReviewPoolFailsOver(t *testing.T) {
	dir, _ := acpRepo(t, "crash", "  both:\n    type: pool\n    members: [agent, builtin]\n")
	code, stdout, stderr := runReview(t, "review", "-C", dir, "--config-source", "worktree", "--no-cache", "--provider", "both")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	session, _ := os.ReadFile(filepath.Join(dir, ".artifacts/diffpal/qa-session.json"))
	s := string(session)
	if !strings.Contains(s, "pool both: member agent failed on profile") || !strings.Contains(s, "answered by member builtin") {
		t.Errorf("the pool's attempts are not in the audit:\n%s", s)
	}
}

// TestReviewInstructionFlags: --instructions-file must name a readable,
// non-blank file (exit 2 naming the flag).
func TestReviewInstructionFlags(t *testing.T) {
	dir := providerRepo(t)
	blank := filepath.Join(t.TempDir(), "blank.md")
	os.WriteFile(blank, []byte("  \n"), 0o644)
	for _, f := range []string{blank, filepath.Join(dir, "missing.md")} {
		code, _, stderr := runReview(t, "review", "-C", dir, "--instructions-file", f)
		if code != ExitUsage || !strings.Contains(stderr, "--instructions-file") {
			t.Errorf("%s: exit %d: %s", f, code, stderr)
		}
	}
}

// TestInitSetupWritesProviderBlock: each --setup writes a config that
// loads, with its provider as the default.
func TestInitSetupWritesProviderBlock(t *testing.T) {
	for _, s := range initSetups {
		t.Run(s.name, func(t *testing.T) {
			dir := providerRepo(t)
			code, stdout, stderr := runCLI(t, "init", "-C", dir, "--setup", s.name)
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
			}
			cfg, err := config.Load(dir, "")
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Provider != s.id || !config.IsACP(cfg.Providers[s.id].Type) {
				t.Errorf("provider %q, providers %+v", cfg.Provider, cfg.Providers)
			}
		})
	}
	code, _, stderr := runCLI(t, "init", "-C", providerRepo(t), "--setup", "nope")
	if code != ExitUsage || !strings.Contains(stderr, "--setup") {
		t.Errorf("unknown setup: exit %d: %s", code, stderr)
	}
}

// TestDoctorChecksACPAgent: doctor finds the agent's command and, with
// --online, completes an ACP initialize with it.
func TestDoctorChecksACPAgent(t *testing.T) {
	dir, _ := acpRepo(t, "clean", "  missing:\n    type: generic_acp\n    command: [no-such-acp-agent-xyz]\n")
	code, stdout, _ := runCLI(t, "doctor", "-C", dir, "--config-source", "worktree", "--online")
	if code != ExitUsage {
		t.Errorf("exit %d, want 2 (a missing agent)", code)
	}
	for _, want := range []string{"provider agent: generic_acp agent command", "provider agent: ACP initialize completed (acptest 1)",
		`error: provider missing: command "no-such-acp-agent-xyz" not found on PATH`} {
		if !strings.Contains(stdout, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, stdout)
		}
	}
}
