package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/mcpserver"
	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// scriptedHost is an agent host that knows nothing of diffpal but what the
// review_change prompt says: it renders the prompt, then runs its numbered
// steps with the tools they name, and its "specialists" are pattern
// matchers over the evidence items.
type scriptedHost struct {
	t     *testing.T
	cs    *mcp.ClientSession
	steps []string
	calls []string
	s     qa.Session
	seq   int
}

var (
	hostStepRE = regexp.MustCompile(`(?m)^(\d+)\. (.*)$`)
	hostTickRE = regexp.MustCompile("`([a-z_]+)`")
)

// step returns step n's text and the tool it starts with.
func (h *scriptedHost) step(n int) (text, tool string) {
	h.t.Helper()
	if n < 1 || n > len(h.steps) {
		h.t.Fatalf("the prompt has no step %d", n)
	}
	text = h.steps[n-1]
	if m := hostTickRE.FindStringSubmatch(text); m != nil {
		tool = m[1]
	}
	return text, tool
}

func (h *scriptedHost) call(tool string, args map[string]any, out any) {
	h.t.Helper()
	h.calls = append(h.calls, tool)
	res, err := h.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		h.t.Fatalf("%s: %v", tool, err)
	}
	if res.IsError {
		h.t.Fatalf("%s: tool error: %s\nargs: %s", tool, toolText(res), mustJSON(args))
	}
	if err := json.Unmarshal([]byte(toolText(res)), out); err != nil {
		h.t.Fatalf("%s: %v", tool, err)
	}
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

// write sends a mutating call with expected_revision and a fresh
// request_id, as step 2 asks.
func (h *scriptedHost) write(tool string, args map[string]any) {
	h.t.Helper()
	h.seq++
	args["run_id"], args["expected_revision"], args["request_id"] = h.s.RunID, h.s.Revision, fmt.Sprintf("host-%d", h.seq)
	h.call(tool, args, &h.s)
}

type packetItem struct {
	Ref       string `json:"evidence_ref"`
	Kind      string `json:"kind"`
	Path      string `json:"path"`
	StartLine int    `json:"start_line"`
	EndLine   int    `json:"end_line"`
	Content   string `json:"content"`
}

// TestScriptedHostReviewsFromThePrompt is the end-to-end host: a real
// repository with planted problems, the server `diffpal mcp --repo`
// builds, and a host that follows only the review_change prompt's steps
// (tools named there, arguments spelled there) to an exported bundle that
// `diffpal validate` accepts and `diffpal gate` blocks.
func TestScriptedHostReviewsFromThePrompt(t *testing.T) {
	repo, token := plantedRepo(t)
	cs := mcpClient(t, &McpOptions{Repo: repo.Dir, ModelMode: "host_default",
		changed: map[string]bool{"repo": true, "model-mode": true}})
	h := &scriptedHost{t: t, cs: cs}

	prompts, err := cs.ListPrompts(context.Background(), nil)
	if err != nil || !slices.ContainsFunc(prompts.Prompts, func(p *mcp.Prompt) bool { return p.Name == mcpserver.PromptReviewChange }) {
		t.Fatalf("prompts/list: %v", err)
	}
	pr, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: mcpserver.PromptReviewChange,
		Arguments: map[string]string{"base": "main", "head": "feature"}})
	if err != nil {
		t.Fatal(err)
	}
	text := pr.Messages[0].Content.(*mcp.TextContent).Text
	for _, m := range hostStepRE.FindAllStringSubmatch(text, -1) {
		h.steps = append(h.steps, m[2])
	}
	offered := map[string]bool{}
	tools, _ := cs.ListTools(context.Background(), nil)
	for _, tl := range tools.Tools {
		offered[tl.Name] = true
	}

	// 1. Context: the arguments are the JSON the prompt spells out.
	s1, tool := h.step(1)
	args := map[string]any{}
	if m := regexp.MustCompile(`(\{.*?\})\.`).FindStringSubmatch(s1); m == nil || json.Unmarshal([]byte(m[1]), &args) != nil {
		t.Fatalf("step 1 has no JSON arguments: %s", s1)
	}
	var ctxOut struct {
		ReviewContext json.RawMessage `json:"review_context"`
		Packet        struct {
			Items            []packetItem    `json:"items"`
			ContextSelection json.RawMessage `json:"context_selection"`
		} `json:"packet"`
	}
	h.call(tool, args, &ctxOut)
	items := ctxOut.Packet.Items
	if len(items) == 0 {
		t.Fatal("no evidence items")
	}

	// 2. Start, with the task type the prompt names.
	s2, tool := h.step(2)
	tt := regexp.MustCompile(`"task_type": "([a-z_]+)"`).FindStringSubmatch(s2)
	if tt == nil {
		t.Fatalf("step 2 names no task_type: %s", s2)
	}
	h.call(tool, map[string]any{"task_type": tt[1], "review_context": ctxOut.ReviewContext}, &h.s)
	rulesHash := h.s.ReviewContext.ReviewRulesSHA256

	// 3. One route: the first recommended bundle.
	_, tool = h.step(3)
	h.write(tool, map[string]any{"completed_step": "triage", "status": "completed", "selected_bundle": h.s.RecommendedBundles[0]})

	// 4–5. Each profile in order; the specialists read the items only.
	s4, prepare := h.step(4)
	advance := hostTickRE.FindAllStringSubmatch(s4, -1)
	if !slices.ContainsFunc(advance, func(m []string) bool { return m[1] == qa.ToolAdvance }) {
		t.Fatalf("step 4 does not say how to record a profile: %s", s4)
	}
	s5, _ := h.step(5)
	if !strings.Contains(s5, "risk_signals") {
		t.Fatalf("step 5 is not the risk signals: %s", s5)
	}
	reports := map[qa.Profile][]map[string]any{} // profile → candidates sent
	for h.s.CurrentStep == qa.StepPrimaryReview {
		p := *h.s.CurrentProfile
		var route qa.ReviewRoute
		h.call(prepare, map[string]any{"agent_profile": p}, &route)
		report := map[string]any{"profile": p, "scope": "the evidence packet of main..feature as " + route.DisplayName,
			"review_rules_sha256": rulesHash}
		if slices.Contains(route.RequiredSections, "Finding Candidates") {
			cands := hostSpecialist(items)
			report["finding_candidates"] = cands
			reports[p] = cands
		}
		if p == qa.ProfileCodeExplorer {
			var em []map[string]any
			for _, it := range items {
				em = append(em, map[string]any{"evidence_ref": it.Ref, "description": it.Kind + " of " + it.Path})
			}
			report["evidence_map"] = em
			report["context_selection"] = ctxOut.Packet.ContextSelection
		}
		if p == qa.ProfilePRTestAnalyzer {
			report["coverage_gaps"] = []map[string]any{{"text": "no test covers find_user or handle", "evidence_refs": []string{refOf(items, "svc/db.py")}}}
		}
		args := map[string]any{"completed_step": "primary_review", "status": "completed", "completed_profile": p, "profile_report": report}
		if len(h.s.CompletedProfiles) == len(h.s.ReviewProfiles)-1 {
			// The last profile: the SQL injection is high-risk, and nothing
			// was executed, so the evidence is uncertain.
			args["risk_signals"] = map[string]any{"high_risk_domain": true, "evidence_uncertain": true,
				"evidence_refs": []string{refOf(items, "svc/db.py")}, "rationale": "user input reaches SQL; nothing was run"}
		}
		h.write(qa.ToolAdvance, args)
	}

	// 6. Deep review, since the signals escalate.
	if h.s.CurrentStep != qa.StepDeepReview || h.s.DeepReasonCode == nil {
		t.Fatalf("not escalated: step %s", h.s.CurrentStep)
	}
	_, tool = h.step(6)
	h.write(tool, map[string]any{"completed_step": "deep_review", "status": "completed"})

	// 7. Synthesis: every candidate decided.
	_, tool = h.step(7)
	var finals []map[string]any
	var decisions []map[string]any
	for _, p := range h.s.CompletedProfiles {
		for _, c := range reports[p] {
			src := map[string]any{"profile": p, "candidate_id": c["candidate_id"]}
			d := map[string]any{"source": src, "rationale": "re-read the hunk in deep review", "evidence_refs": c["evidence_refs"]}
			if c["title"] == "exception swallowed" {
				d["verdict"], d["final_finding_id"] = "unverified", nil
			} else {
				id := fmt.Sprintf("F-%02d", len(finals)+1)
				f := maps(c)
				f["candidate_id"], f["severity"], f["source_profiles"], f["source_candidates"] = id, "high", []qa.Profile{p}, []any{src}
				finals = append(finals, f)
				d["verdict"], d["final_finding_id"] = "confirmed", id
			}
			decisions = append(decisions, d)
		}
	}
	h.write(tool, map[string]any{"completed_step": "synthesis", "status": "completed", "final_review_report": map[string]any{
		"summary":           "- find_user formats user input into SQL\n- a token is committed\n- handle() swallows errors",
		"profiles_reviewed": h.s.CompletedProfiles, "finding_candidates": finals, "candidate_decisions": decisions,
		"unverified":          []map[string]any{{"text": "whether handle() callers rely on None", "evidence_refs": []string{refOf(items, "svc/handler.py")}}},
		"review_rules_sha256": rulesHash}})

	// 8. Finish.
	_, tool = h.step(8)
	h.write(tool, map[string]any{"outcome": "completed"})
	if h.s.Status != qa.StatusCompleted {
		t.Fatalf("status %s", h.s.Status)
	}

	// 9. Export, written as the prompt says; validate and gate judge it.
	s9, tool := h.step(9)
	var bundle map[string]any
	h.call(tool, map[string]any{"run_id": h.s.RunID}, &bundle)
	if !strings.Contains(s9, findings.DefaultPath) {
		t.Fatalf("step 9 does not say where the bundle goes: %s", s9)
	}
	out := filepath.Join(t.TempDir(), findings.DefaultPath)
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	data, _ := json.MarshalIndent(bundle, "", "  ")
	if err := os.WriteFile(out, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), token) {
		t.Fatal("the token reached the bundle")
	}
	if code, stdout, stderr := runCLI(t, "validate", out); code != ExitOK || !strings.Contains(stdout+stderr, "valid v3 bundle, 2 findings") {
		t.Fatalf("diffpal validate: exit %d\n%s%s", code, stdout, stderr)
	}
	if code, stdout, stderr := runCLI(t, "gate", out); code != ExitGateBlocked || !strings.Contains(stdout+stderr, "blocked") {
		t.Fatalf("diffpal gate: exit %d, want %d\n%s%s", code, ExitGateBlocked, stdout, stderr)
	}

	// The host called only tools the server offers and the prompt names,
	// in the prompt's order.
	named := map[string]bool{}
	for i := range h.steps {
		for _, m := range hostTickRE.FindAllStringSubmatch(h.steps[i], -1) {
			named[m[1]] = true
		}
	}
	for _, c := range h.calls {
		if !offered[c] || !named[c] {
			t.Errorf("called %s (offered %v, named by the prompt %v)", c, offered[c], named[c])
		}
	}
	want := []string{mcpserver.ToolReviewContext, qa.ToolStart, qa.ToolAdvance}
	for range h.s.ReviewProfiles {
		want = append(want, qa.ToolPrepare, qa.ToolAdvance)
	}
	want = append(want, qa.ToolAdvance, qa.ToolAdvance, qa.ToolFinish, qa.ToolExport)
	if !slices.Equal(h.calls, want) {
		t.Errorf("calls %v, want %v", h.calls, want)
	}
}

func maps(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func refOf(items []packetItem, path string) string {
	for _, it := range items {
		if it.Path == path && it.Kind == "diff" {
			return it.Ref
		}
	}
	return items[0].Ref
}

// hostSpecialist is the host's specialist: it flags what the planted problems
// look like in the diff items' added lines, located at the hunk.
func hostSpecialist(items []packetItem) []map[string]any {
	var out []map[string]any
	add := func(it packetItem, title, desc, conf, impact string) {
		out = append(out, map[string]any{"candidate_id": fmt.Sprintf("F-%02d", len(out)+1), "title": title,
			"description": desc, "confidence": conf, "verification_gap": "not executed",
			"evidence_refs": []string{it.Ref}, "impact": impact, "affected_area": it.Path,
			"source_locations": []map[string]any{{"path": it.Path, "start_line": it.StartLine, "end_line": it.EndLine}}})
	}
	for _, it := range items {
		if it.Kind != "diff" {
			continue
		}
		for _, line := range strings.Split(it.Content, "\n") {
			if !strings.HasPrefix(line, "+") {
				continue
			}
			switch {
			case strings.Contains(line, "execute(") && strings.Contains(line, "% "):
				add(it, "SQL built from user input", "find_user formats name into the query string", "high", "SQL injection")
			case strings.Contains(line, "[REDACTED]"):
				add(it, "credential committed", "a token is assigned in source", "high", "the token leaks with the repository")
			case strings.TrimSpace(line) == "+pass" || strings.HasSuffix(line, "        pass"):
				add(it, "exception swallowed", "handle() returns None on any error", "medium", "failures go unnoticed")
			}
		}
	}
	return out
}
