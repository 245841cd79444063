package mcpserver

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/diffpalhq/diffpal/internal/git"
	"github.com/diffpalhq/diffpal/internal/git/gittest"
	"github.com/diffpalhq/diffpal/internal/jcs"
	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/diffpalhq/diffpal/internal/reviewctx"
	st "github.com/diffpalhq/diffpal/internal/secrets/secretstest"
)

// outsideMarker is the content of a file outside the repository that a
// committed symlink points to; it must never reach a host.
const outsideMarker = "OUTSIDE-THE-REPOSITORY-do-not-read"

// plantedRepo is a repository whose branch feature (against main) plants
// problems: SQL built by string formatting, a swallowed exception, a
// committed token, and a symlink to a file outside the repository.
func plantedRepo(t *testing.T) (repo *gittest.Repo, token string) {
	t.Helper()
	repo = gittest.New(t)
	repo.Write("svc/db.py", "def find_user(cur, name):\n    cur.execute(\"SELECT * FROM users WHERE name = %s\", (name,))\n    return cur.fetchone()\n")
	repo.Write("svc/handler.py", "from svc import db\n\n\ndef handle(cur, req):\n    return db.find_user(cur, req['name'])\n")
	repo.Commit("base")
	repo.Git("checkout", "-q", "-b", "feature")
	token = "ghp_" + st.Gen("mcp-planted", st.Alnum, 36)
	repo.Write("svc/db.py", "def find_user(cur, name):\n    cur.execute(\"SELECT * FROM users WHERE name = '%s'\" % name)\n    return cur.fetchone()\n")
	repo.Write("svc/handler.py", "from svc import db\n\n\ndef handle(cur, req):\n    try:\n        return db.find_user(cur, req['name'])\n    except Exception:\n        pass\n")
	repo.Write("svc/settings.py", "GITHUB_TOKEN = \""+token+"\"\nTIMEOUT = 30\n")
	outside := filepath.Join(t.TempDir(), "outside.txt")
	if err := os.WriteFile(outside, []byte(outsideMarker+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(repo.Dir, "svc", "leak.txt")); err != nil {
		t.Fatal(err)
	}
	repo.Commit("feature")
	return repo, token
}

func localEnv(t *testing.T, dir string) *env {
	t.Helper()
	return newEnv(t, envOptions{server: Options{LocalRepo: &LocalRepo{Dir: dir}}})
}

// TestGetReviewContext: the tool returns reviewctx's review_context (the
// one diffpal context prints) and the redacted packet; nothing from
// outside the repository and no secret reaches the host; the result
// starts a bound session unchanged; nothing is stored.
func TestGetReviewContext(t *testing.T) {
	repo, token := plantedRepo(t)
	e := localEnv(t, repo.Dir)
	res := e.call(ToolReviewContext, map[string]any{"base": "main", "head": "feature", "include_packet": true})
	raw := mustOK(t, res, ToolReviewContext, nil)
	if strings.Contains(string(raw), token) || strings.Contains(resultText(res), token) {
		t.Fatal("the token reached the host")
	}
	if strings.Contains(string(raw), outsideMarker) {
		t.Fatal("content from outside the repository reached the host")
	}
	var out struct {
		ReviewContext json.RawMessage `json:"review_context"`
		Range         RangeInfo       `json:"range"`
		Packet        struct {
			Items []struct {
				Ref     string `json:"evidence_ref"`
				Content string `json:"content"`
			} `json:"items"`
			ContextSelection qa.ContextSelection `json:"context_selection"`
		} `json:"packet"`
	}
	if err := json.Unmarshal([]byte(resultText(res)), &out); err != nil {
		t.Fatal(err)
	}
	want, err := reviewctx.Build(context.Background(), reviewctx.Request{Dir: repo.Dir,
		Range: gitRange("main", "feature")})
	if err != nil {
		t.Fatal(err)
	}
	wantJSON, _ := json.Marshal(want.Context)
	if string(out.ReviewContext) != string(wantJSON) {
		t.Errorf("review_context differs from reviewctx's:\n got %s\nwant %s", out.ReviewContext, wantJSON)
	}
	if out.Range.DiffBase != want.Change.Range.DiffBase || out.Range.BaseRef != "main" || out.Range.HeadRef != "feature" {
		t.Errorf("range %+v", out.Range)
	}
	redacted := false
	var refs []string
	for _, it := range out.Packet.Items {
		refs = append(refs, it.Ref)
		redacted = redacted || strings.Contains(it.Content, "[REDACTED]")
	}
	if !redacted {
		t.Error("no item shows the token redacted")
	}
	cs := out.Packet.ContextSelection
	if sorted, all := slices.Sorted(slices.Values(refs)), slices.Sorted(slices.Values(want.Context.EvidenceRefs)); !slices.Equal(sorted, all) {
		t.Errorf("packet refs %v, want every ref %v", refs, want.Context.EvidenceRefs)
	}
	if cs.SourcePacketSHA256 != want.Context.EvidencePacketSHA256 || len(cs.BudgetOmittedRefs) != 0 ||
		cs.MaxBytes != DefaultPacketBytes || !slices.Equal(cs.IncludedRefs, refs) {
		t.Errorf("context_selection %+v", cs)
	}
	if h, _ := jcs.SHA256Hex(want.Context.EvidenceRegistry); cs.SelectedPacketSHA256 != h {
		t.Errorf("selected_packet_sha256 %s, want the registry's hash %s", cs.SelectedPacketSHA256, h)
	}

	var s qa.Session
	e.ok(qa.ToolStart, map[string]any{"task_type": "ordinary_review", "review_context": out.ReviewContext}, &s)
	if s.ReviewContext.EvidencePacketSHA256 != want.Context.EvidencePacketSHA256 {
		t.Errorf("session bound to %s", s.ReviewContext.EvidencePacketSHA256)
	}
	// Only the started session is stored: get_review_context wrote nothing.
	var list qa.ListOutput
	e.ok(qa.ToolList, map[string]any{}, &list)
	if len(list.Sessions) != 1 {
		t.Errorf("%d sessions stored, want the one started", len(list.Sessions))
	}
	// Without include_packet no content at all.
	res = e.call(ToolReviewContext, map[string]any{"base": "main", "head": "feature"})
	var bare map[string]json.RawMessage
	mustOK(t, res, ToolReviewContext, &bare)
	if string(bare["packet"]) != "null" {
		t.Errorf("packet without include_packet: %s", bare["packet"])
	}
}

// TestGetReviewContextBudget: a byte budget cuts the packet, and the
// context_selection returned is one a profile report may assert.
func TestGetReviewContextBudget(t *testing.T) {
	repo, _ := plantedRepo(t)
	e := localEnv(t, repo.Dir)
	var out ReviewContextOutput
	e.ok(ToolReviewContext, map[string]any{"base": "main", "head": "feature", "include_packet": true, "max_packet_bytes": 300}, &out)
	cs := out.Packet.ContextSelection
	if len(cs.BudgetOmittedRefs) == 0 || len(cs.IncludedRefs) == 0 || cs.SelectedBytes > 300 || cs.MaxBytes != 300 {
		t.Fatalf("budget 300: %+v", cs)
	}
	sum := 0
	for _, it := range out.Packet.Items {
		sum += len(it.Content)
	}
	if sum != cs.SelectedBytes || len(out.Packet.Items) != len(cs.IncludedRefs) {
		t.Errorf("items carry %d bytes in %d items; selection says %d in %d", sum, len(out.Packet.Items), cs.SelectedBytes, len(cs.IncludedRefs))
	}
	all := append(slices.Clone(cs.IncludedRefs), cs.BudgetOmittedRefs...)
	slices.Sort(all)
	want := slices.Clone(out.ReviewContext.EvidenceRefs)
	slices.Sort(want)
	if !slices.Equal(all, want) {
		t.Errorf("included+omitted %v, want every ref %v", all, want)
	}
	// The selection is accepted as the explorer's context_selection.
	var s qa.Session
	e.ok(qa.ToolStart, map[string]any{"task_type": "ordinary_review", "review_context": out.ReviewContext}, &s)
	e.ok(qa.ToolAdvance, map[string]any{"run_id": s.RunID, "completed_step": "triage", "status": "completed", "selected_profile": "code_explorer"}, &s)
	e.ok(qa.ToolAdvance, map[string]any{"run_id": s.RunID, "completed_step": "primary_review", "status": "completed",
		"completed_profile": "code_explorer", "risk_signals": map[string]any{},
		"profile_report": map[string]any{"profile": "code_explorer", "scope": "the budgeted packet",
			"evidence_map":      []any{map[string]any{"evidence_ref": cs.IncludedRefs[0], "description": "first item"}},
			"context_selection": cs}}, &s)
	if got := s.ProfileReports[0].ContextSelection; got == nil || got.SelectedPacketSHA256 != cs.SelectedPacketSHA256 {
		t.Errorf("stored context_selection %+v", got)
	}

	e.fail(ToolReviewContext, map[string]any{"base": "main", "max_packet_bytes": 10}, "invalid argument: max_packet_bytes")
	e.fail(ToolReviewContext, map[string]any{"base": "main", "include_packet": true, "max_packet_bytes": 0}, `validating "arguments"`)
	e.fail(ToolReviewContext, map[string]any{"base": "main", "include_packet": true, "max_packet_bytes": MaxPacketBytes + 1}, `validating "arguments"`)
}

func TestGetReviewContextErrors(t *testing.T) {
	repo, _ := plantedRepo(t)
	e := localEnv(t, repo.Dir)
	for _, c := range []struct {
		name   string
		args   map[string]any
		prefix string
	}{
		{"option injection", map[string]any{"base": "--output=/tmp/x"}, "invalid argument: base: must not start with '-'"},
		{"head injection", map[string]any{"base": "main", "head": "-p"}, "invalid argument: head"},
		{"control characters", map[string]any{"base": "main\nHEAD"}, "invalid argument: base"},
		{"unknown revision", map[string]any{"base": "no-such-branch"}, "invalid argument: range: unknown revision"},
		{"path escapes", map[string]any{"base": "main", "head": "feature", "paths": []string{"svc/../../etc"}}, "invalid argument: paths[0]"},
		{"absolute path", map[string]any{"base": "main", "head": "feature", "paths": []string{"/etc/passwd"}}, "invalid argument: paths[0]"},
		{"pathspec magic", map[string]any{"base": "main", "head": "feature", "paths": []string{":(top)"}}, "invalid argument: paths[0]"},
		{"empty change", map[string]any{"base": "feature", "head": "feature"}, "change cannot be bound: no changed files"},
		{"nothing under the path", map[string]any{"base": "main", "head": "feature", "paths": []string{"docs"}}, "change cannot be bound"},
		{"missing base", map[string]any{"head": "feature"}, `validating "arguments"`},
		{"unknown property", map[string]any{"base": "main", "uncommitted": true}, `validating "arguments"`},
	} {
		t.Run(c.name, func(t *testing.T) { e.fail(ToolReviewContext, c.args, c.prefix) })
	}
	// A directory that stopped being a repository: git's failure, coded.
	gone := localEnv(t, t.TempDir())
	gone.fail(ToolReviewContext, map[string]any{"base": "main"}, "unable to read repository")
}

func gitRange(base, head string) git.RangeOptions { return git.RangeOptions{Base: base, Head: head} }
