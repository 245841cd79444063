package hosts

import (
	"encoding/json"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// ruleTerms is what every rule file must name: the anchor's rule contract
// (reference §12: the tools, the one-route rule, model-neutral stage
// labels, user-controlled speed, risk_signals, completed_profile, the
// read_only/host_owns_decisions literals, host-owned evidence, no raw
// input, the unavailable fallback, the final outcome, run_id), then ours:
// the context tool and prompt, the bound review, revisions and receipts,
// export and gate, the evidence-ref and candidate-id conventions, severity
// versus confidence, and the final report's shape.
var ruleTerms = []string{
	"start_qa_orchestration", "prepare_qa_orchestration", "get_qa_orchestration", "finish_qa_orchestration",
	"advance_qa_orchestration", "get_qa_orchestration_catalog", "list_qa_orchestrations", "delete_qa_orchestration",
	"exactly one", "model-neutral", "speed",
	"risk_signals", "completed_profile", "read_only=true", "host_owns_decisions=true",
	"host-owned evidence", "never send raw", "unavailable", "never fake", "final outcome", "run_id",
	"export_qa_findings", "review_context", "expected_revision", "request_id", "get_review_context", "review_change",
	"profile_report", "final_review_report", "candidate_decisions", "evidence_refs",
	"diffpal validate", "diffpal gate", "diffpal context",
	"f1:h1", "F-01", "severity", "confidence", "verification_gap", "source_locations",
	"Findings", "Changes", "Manual Test Plan", "Open Questions – Could Not Verify",
	"Finding ID", "Affected area", "Evidence confidence", "Verification gap", "Next step",
}

func TestRuleFilesNameTheContract(t *testing.T) {
	for _, name := range RuleFiles() {
		t.Run(name, func(t *testing.T) {
			data, err := FS.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			text := strings.ToLower(string(data))
			for _, term := range ruleTerms {
				if !strings.Contains(text, strings.ToLower(term)) {
					t.Errorf("does not mention %q", term)
				}
			}
		})
	}
}

// TestEveryEmbeddedFileIsListed: nothing in FS is orphaned, and every
// host's files exist.
func TestEveryEmbeddedFileIsListed(t *testing.T) {
	listed := RuleFiles()
	for _, h := range All() {
		listed = append(listed, h.MCPTemplate)
	}
	var found []string
	if err := fs.WalkDir(FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			found = append(found, p)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(listed)
	slices.Sort(found)
	if !slices.Equal(listed, found) {
		t.Errorf("embedded files %v, listed %v", found, listed)
	}
	if !slices.Equal(Names(), []string{"claude-code", "codex", "cursor"}) {
		t.Errorf("hosts %v", Names())
	}
	if _, ok := Lookup("vim"); ok {
		t.Error("Lookup(vim) found a host")
	}
}

func TestSnippetsAreMarked(t *testing.T) {
	for _, h := range All() {
		data, err := h.Rules()
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		marked := strings.HasPrefix(text, SnippetBegin) && strings.HasSuffix(text, SnippetEnd+"\n") &&
			strings.Count(text, SnippetBegin) == 1 && strings.Count(text, SnippetEnd) == 1
		if marked != h.Snippet {
			t.Errorf("%s: snippet=%v but markers present=%v", h.Name, h.Snippet, marked)
		}
	}
}

// TestCursorRuleFrontmatter: a Cursor project rule starts with YAML
// frontmatter holding exactly description, globs and alwaysApply.
func TestCursorRuleFrontmatter(t *testing.T) {
	h, _ := Lookup("cursor")
	if !strings.HasPrefix(h.RulePath, ".cursor/rules/") || !strings.HasSuffix(h.RulePath, ".mdc") {
		t.Errorf("rule path %s", h.RulePath)
	}
	data, _ := h.Rules()
	text := string(data)
	if !strings.HasPrefix(text, "---\n") {
		t.Fatal("no frontmatter")
	}
	end := strings.Index(text[4:], "\n---\n")
	if end < 0 {
		t.Fatal("frontmatter not closed")
	}
	var fm map[string]any
	if err := yaml.Unmarshal([]byte(text[4:4+end]), &fm); err != nil {
		t.Fatalf("frontmatter: %v", err)
	}
	keys := make([]string, 0, len(fm))
	for k := range fm {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if !slices.Equal(keys, []string{"alwaysApply", "description", "globs"}) {
		t.Errorf("frontmatter keys %v", keys)
	}
	if d, _ := fm["description"].(string); len(d) < 20 {
		t.Errorf("description %q", fm["description"])
	}
	if _, ok := fm["alwaysApply"].(bool); !ok {
		t.Errorf("alwaysApply %v is not a boolean", fm["alwaysApply"])
	}
}

func TestMCPConfig(t *testing.T) {
	params := MCPParams{Command: `/opt/my tools/diffpal "beta"`, Args: []string{"mcp", "--store", `sqlite:C:\q.db`}}
	for _, h := range All() {
		t.Run(h.Name, func(t *testing.T) {
			for _, p := range []MCPParams{DefaultMCPParams(), params} {
				out, err := h.MCPConfig(p)
				if err != nil {
					t.Fatal(err)
				}
				var command string
				var args []string
				switch h.MCPFormat {
				case "json":
					var v struct {
						MCPServers map[string]struct {
							Command string   `json:"command"`
							Args    []string `json:"args"`
						} `json:"mcpServers"`
					}
					if err := json.Unmarshal(out, &v); err != nil {
						t.Fatalf("%s: %v\n%s", h.MCPPath, err, out)
					}
					command, args = v.MCPServers["diffpal"].Command, v.MCPServers["diffpal"].Args
				case "toml":
					// The values are JSON strings and arrays, which TOML reads
					// the same way; check the table and decode them as JSON.
					text := string(out)
					if !strings.Contains(text, "\n[mcp_servers.diffpal]\n") {
						t.Fatalf("no [mcp_servers.diffpal] table:\n%s", text)
					}
					for _, line := range strings.Split(text, "\n") {
						if v, ok := strings.CutPrefix(line, "command = "); ok {
							if err := json.Unmarshal([]byte(v), &command); err != nil {
								t.Fatal(err)
							}
						}
						if v, ok := strings.CutPrefix(line, "args = "); ok {
							if err := json.Unmarshal([]byte(v), &args); err != nil {
								t.Fatal(err)
							}
						}
					}
				default:
					t.Fatalf("format %q", h.MCPFormat)
				}
				if command != p.Command || !slices.Equal(args, p.Args) {
					t.Errorf("%s: command %q args %q, want %q %q", h.MCPPath, command, args, p.Command, p.Args)
				}
			}
			if _, err := h.MCPConfig(MCPParams{}); err == nil {
				t.Error("empty command accepted")
			}
		})
	}
}
