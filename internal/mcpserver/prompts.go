package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/diffpalhq/diffpal/internal/textsafe"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Prompt names. Hosts that surface prompts as commands (Claude Code shows
// /mcp__diffpal__review_change) start a full review in one step.
const (
	PromptReviewChange = "review_change"
	PromptResumeReview = "resume_review"
)

var runIDPattern = regexp.MustCompile(`^qar-[0-9a-f]{32}$`)

// registerPrompts adds the prompts; local (nil when the server has no
// repository) fills the change's identifiers into review_change.
func registerPrompts(srv *mcp.Server, local *LocalRepo) {
	srv.AddPrompt(&mcp.Prompt{Name: PromptReviewChange, Title: "Review a change with diffpal QA orchestration",
		Description: "The review-bound flow for base..head, step by step, with this change's identifiers filled in: review context, start, one route, a report per profile citing evidence refs, risk signals, deep review, synthesis deciding every candidate, finish, export, gate.",
		Arguments: []*mcp.PromptArgument{
			{Name: "base", Title: "Base revision", Required: true,
				Description: "Branch, tag or commit the change is compared with (merge-base(base, head) is the diff base), e.g. main or origin/main."},
			{Name: "head", Title: "Head revision", Description: "Committed revision under review; default HEAD."},
			{Name: "focus", Title: "Focus profile",
				Description: "Optional review profile to put first: " + strings.Join(profileNames(), ", ") + "."},
		}}, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return reviewChangePrompt(ctx, local, req.Params.Arguments)
	})
	srv.AddPrompt(&mcp.Prompt{Name: PromptResumeReview, Title: "Resume a diffpal QA session",
		Description: "Recover a session by run_id after a lost response or a restart and continue the flow from its current_step.",
		Arguments: []*mcp.PromptArgument{
			{Name: "run_id", Title: "Run id", Required: true, Description: "The session's run_id (qar- and 32 hex); list_qa_orchestrations shows the retained ones."},
		}}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return resumePrompt(req.Params.Arguments)
	})
}

func profileNames() []string {
	var out []string
	for _, p := range qa.Profiles() {
		out = append(out, string(p))
	}
	return out
}

// promptError is a JSON-RPC invalid-params error whose message starts
// with the fixed code, as tool errors do.
func promptError(field, format string, args ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
		Message: (&qa.Error{Code: qa.CodeInvalidArgument, Field: field, Detail: fmt.Sprintf(format, args...)}).Error()}
}

func checkPromptArgs(args map[string]string, known ...string) error {
	for _, k := range sortedKeys(args) {
		if !slices.Contains(known, k) {
			return promptError(k, "unknown argument; this prompt takes %s", strings.Join(known, ", "))
		}
	}
	return nil
}

func asJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func reviewChangePrompt(ctx context.Context, local *LocalRepo, args map[string]string) (*mcp.GetPromptResult, error) {
	if err := checkPromptArgs(args, "base", "head", "focus"); err != nil {
		return nil, err
	}
	base, head, focus := args["base"], args["head"], args["focus"]
	if err := checkRevision("base", base); err != nil {
		return nil, promptError("base", "%s", strings.TrimPrefix(err.Error(), "invalid argument: base: "))
	}
	var headArg *string
	if head != "" {
		if err := checkRevision("head", head); err != nil {
			return nil, promptError("head", "%s", strings.TrimPrefix(err.Error(), "invalid argument: head: "))
		}
		headArg = &head
	}
	if focus != "" && !slices.Contains(profileNames(), focus) {
		return nil, promptError("focus", "%q is not a review profile; want one of %s", focus, strings.Join(profileNames(), ", "))
	}
	headShown := head
	if headShown == "" {
		headShown = "HEAD"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Review the change %s..%s with the diffpal QA orchestration tools (server %q).\n", base, headShown, ServerName)
	b.WriteString("You, the host, read the code, run each specialist review and make every decision; the server checks your reports against this change and keeps the session (read_only=true, host_owns_decisions=true). Send it structured reports, never raw diffs or file contents. Never invent a tool result: if the server is unavailable, say so, review without it and do not claim a session, export or gate result.\n\n")
	ctxArgs := map[string]any{"base": base, "include_packet": true}
	if head != "" {
		ctxArgs["head"] = head
	}
	if local != nil {
		res, err := local.buildContext(ctx, base, headArg, nil)
		if err != nil {
			if qe, ok := err.(*qa.Error); ok {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: qe.Error()}
			}
			return nil, err
		}
		rc := res.Context
		files := rc.ChangedFiles
		more := ""
		if len(files) > 20 {
			files, more = files[:20], fmt.Sprintf(", … %d more", len(rc.ChangedFiles)-20)
		}
		safe := make([]string, len(files))
		for i, f := range files {
			safe[i] = textsafe.Terminal(f)
		}
		fmt.Fprintf(&b, "This change: repository %s, base_sha %s (merge base of %s and %s), head_sha %s, %d changed files (%s%s), %d evidence refs, evidence_packet_sha256 %s.\n\n",
			textsafe.Terminal(rc.Repository), rc.BaseSHA, base, headShown, rc.HeadSHA, len(rc.ChangedFiles), strings.Join(safe, ", "), more, len(rc.EvidenceRefs), rc.EvidencePacketSHA256)
	}
	if focus != "" {
		fmt.Fprintf(&b, "Focus: the user asked for %s. At triage select a bundle that contains it, or \"selected_profile\": %q alone if that is all they want.\n\n", focus, focus)
	}
	b.WriteString("Steps, in order:\n")
	if local != nil {
		fmt.Fprintf(&b, "1. `%s` %s. Keep `review_context` exactly as returned and pass it unchanged. `packet.items` are the evidence: each has an `evidence_ref` (f1:h1 is file 1's first hunk, f1:w1 its source window) and redacted `content`; brief reviewers with these items only. If `packet.context_selection.budget_omitted_refs` is not empty, raise max_packet_bytes or say what was not read.\n",
			ToolReviewContext, asJSON(ctxArgs))
	} else {
		hf := ""
		if head != "" {
			hf = " --head " + head
		}
		fmt.Fprintf(&b, "1. Run `diffpal context --base %s%s --packet .artifacts/diffpal/packet.json` in the repository (this server has no local repository, so it offers no %s). Its output is the `review_context`, passed unchanged; the packet file's `items` are the evidence (an `evidence_ref` and redacted `content` each).\n", base, hf, ToolReviewContext)
	}
	for i, s := range flowSteps() {
		fmt.Fprintf(&b, "%d. %s\n", i+2, s)
	}
	b.WriteString("\n" + flowRules)
	return &mcp.GetPromptResult{Description: fmt.Sprintf("diffpal QA review of %s..%s", base, headShown),
		Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: b.String()}}}}, nil
}

func resumePrompt(args map[string]string) (*mcp.GetPromptResult, error) {
	if err := checkPromptArgs(args, "run_id"); err != nil {
		return nil, err
	}
	id := args["run_id"]
	if !runIDPattern.MatchString(id) {
		return nil, promptError("run_id", "want qar- followed by 32 lowercase hex digits")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Resume the diffpal QA session %s.\n\n", id)
	fmt.Fprintf(&b, "1. `%s` %s. On `unknown run_id` or `expired session` the session is gone: start a new review with the review_change prompt. Otherwise note `revision`, `current_step`, `current_profile` and `review_context.evidence_refs`.\n",
		qa.ToolGet, asJSON(map[string]string{"run_id": id}))
	b.WriteString("2. Continue from `current_step` with the matching step below (triage, primary_review from `current_profile`, deep_review, synthesis; `awaiting_host_outcome` means finish). A call that timed out may be resent unchanged with the same `request_id`: a replay applies nothing twice.\n")
	for i, s := range flowSteps()[1:] {
		fmt.Fprintf(&b, "%d. %s\n", i+3, s)
	}
	b.WriteString("\n" + flowRules)
	return &mcp.GetPromptResult{Description: "resume diffpal QA session " + id,
		Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: b.String()}}}}, nil
}

// flowSteps are the canonical steps after the review context (step 1);
// each starts with the tool it calls, in backquotes.
func flowSteps() []string {
	return []string{
		fmt.Sprintf("`%s` {\"task_type\": \"ordinary_review\", \"review_context\": <review_context>}. Keep `run_id`. On every later `%s` and `%s` call send `expected_revision` (the `revision` you last saw) and a new `request_id` (\"triage-1\", \"code_reviewer-1\", …); after a timeout resend the same call unchanged.",
			qa.ToolStart, qa.ToolAdvance, qa.ToolFinish),
		fmt.Sprintf("`%s` triage: {\"completed_step\": \"triage\", \"status\": \"completed\"} with exactly one route, `selected_bundle` (usually the first of `recommended_bundles`; `%s` lists every bundle) or `selected_profile`. `recommended_profiles` are hints only.",
			qa.ToolAdvance, qa.ToolCatalog),
		fmt.Sprintf("`%s` {\"agent_profile\": <current_profile>} for each profile of `review_profiles`, in order: it returns the checklist (`focus`, `required_sections`, `constraints`, `escalation_signals`). Review the evidence as that specialist, then `%s` {\"completed_step\": \"primary_review\", \"status\": \"completed\", \"completed_profile\": <current_profile>, \"profile_report\": {…}} with `profile`, `scope`, `evidence_map` ({`evidence_ref`, `description`}), `finding_candidates`, `coverage_gaps` and `unverified` ({`text`, `evidence_refs`}), and `review_rules_sha256` echoing `review_context.review_rules_sha256` (null when no rules are bound). Candidates have ids F-01, F-02, … and each has `title`, `description`, `confidence` (high, medium, low), `verification_gap`, `evidence_refs`, and `source_locations` ({`path`, `start_line`, `end_line`}) where a line is known. Cite only refs of `review_context.evidence_refs`. code_explorer and pr_test_analyzer submit no candidates.",
			qa.ToolPrepare, qa.ToolAdvance),
		fmt.Sprintf("`%s` for the last profile also carries `risk_signals`: set only the booleans the evidence supports (`high_risk_domain`, `evidence_uncertain`, `cross_system_scope`, `multiple_plausible_causes`, `evidence_conflict`, `non_reproducible`, `high_blast_radius`) with their `evidence_refs` and a `rationale`; send {} when none applies.",
			qa.ToolAdvance),
		fmt.Sprintf("`%s` deep review, only when `current_step` is `deep_review`: investigate what `deep_reason_code` names, then send {\"completed_step\": \"deep_review\", \"status\": \"completed\"}.",
			qa.ToolAdvance),
		fmt.Sprintf("`%s` synthesis: {\"completed_step\": \"synthesis\", \"status\": \"completed\", \"final_review_report\": {…}} with `summary`, `profiles_reviewed` (exactly the completed profiles), `finding_candidates` (the surviving findings: the candidate fields plus `severity` high, medium or low, `source_profiles` and `source_candidates` ({`profile`, `candidate_id`})), `candidate_decisions` (exactly one for every candidate of every profile report: `source`, `verdict` confirmed, duplicate, rejected or unverified, `final_finding_id` for confirmed and duplicate, else null, `rationale`, `evidence_refs`), `coverage_gaps`, `unverified`, `review_rules_sha256`.",
			qa.ToolAdvance),
		fmt.Sprintf("`%s` {\"run_id\": …, \"outcome\": \"completed\"}; after an early stop use the stop's status (partial or blocked).",
			qa.ToolFinish),
		fmt.Sprintf("`%s` {\"run_id\": …}: write the result unchanged to .artifacts/diffpal/findings.json, then `diffpal validate` and `diffpal gate` judge it (gate exit 10 means blocking findings).",
			qa.ToolExport),
		"Report to the user: Findings (each with Finding ID, Severity, Affected area, Problem, Evidence, Impact, Evidence confidence, Verification gap, Next step), Changes, Manual Test Plan, Open Questions – Could Not Verify, then the final outcome and the gate result.",
	}
}

const flowRules = `Rules: severity is the impact if the finding is true; confidence is how well the evidence supports it, and the two are judged separately. A step you cannot finish is advanced with "status": "partial" or "blocked" (the session stops early) and finished with the same outcome. Errors start with a fixed code: "revision conflict" means get_qa_orchestration and decide again; "invalid …" names the field to fix, resend with the same request_id. Delete a session only when the user asks.
`
