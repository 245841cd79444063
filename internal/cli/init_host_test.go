package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/diffpalhq/diffpal/hosts"
	"github.com/diffpalhq/diffpal/internal/git/gittest"
)

// TestInitHost installs diffpal into each host's project files, keeps the
// user's other servers and text, refuses to replace diffpal's entries
// without --force, and doctor reports the result.
func TestInitHost(t *testing.T) {
	repo := gittest.New(t)
	repo.Write("README.md", "x\n")
	repo.Commit("base")
	dir := repo.Dir
	read := func(rel string) string {
		data, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	// The user's own files come first.
	if err := os.WriteFile(filepath.Join(dir, ".mcp.json"), []byte(`{"mcpServers":{"other":{"command":"other-server"}},"extra":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "CLAUDE.md"), []byte("# My project\n\nUse tabs.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, ".codex"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".codex", "config.toml"), []byte("model = \"o3\"\n\n[mcp_servers.other]\ncommand = \"x\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, h := range hosts.Names() {
		if code, out, stderr := runCLI(t, "init", "-C", dir, "--host", h); code != 0 {
			t.Fatalf("init --host %s: exit %d\n%s%s", h, code, out, stderr)
		}
	}
	var mcp struct {
		MCPServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
		Extra int `json:"extra"`
	}
	if err := json.Unmarshal([]byte(read(".mcp.json")), &mcp); err != nil {
		t.Fatal(err)
	}
	if mcp.MCPServers["other"].Command != "other-server" || mcp.Extra != 1 || mcp.MCPServers["diffpal"].Command != "diffpal" || strings.Join(mcp.MCPServers["diffpal"].Args, " ") != "mcp --model-mode host_default" {
		t.Errorf(".mcp.json: %+v", mcp)
	}
	claude := read("CLAUDE.md")
	if !strings.HasPrefix(claude, "# My project\n\nUse tabs.\n") || strings.Count(claude, hosts.SnippetBegin) != 1 || !strings.Contains(claude, "start_qa_orchestration") {
		t.Errorf("CLAUDE.md:\n%s", claude)
	}
	codex := read(".codex/config.toml")
	if !strings.Contains(codex, "[mcp_servers.other]") || strings.Count(codex, "[mcp_servers.diffpal]") != 1 || !strings.HasPrefix(codex, "model = \"o3\"") {
		t.Errorf("config.toml:\n%s", codex)
	}
	if rules := read(".cursor/rules/diffpal-qa.mdc"); !strings.HasPrefix(rules, "---\n") {
		t.Errorf("cursor rule:\n%.200s", rules)
	}
	for _, rel := range []string{".cursor/mcp.json", "AGENTS.md"} {
		if _, err := os.Stat(filepath.Join(dir, rel)); err != nil {
			t.Errorf("%s not written: %v", rel, err)
		}
	}
	// Again: everything kept, nothing duplicated.
	code, out, _ := runCLI(t, "init", "-C", dir, "--host", "claude-code")
	if code != 0 || strings.Count(out, "kept ") != 2 || strings.Count(read("CLAUDE.md"), hosts.SnippetBegin) != 1 {
		t.Errorf("second init: exit %d\n%s", code, out)
	}
	// --force replaces diffpal's own entries only.
	if code, out, _ := runCLI(t, "init", "-C", dir, "--host", "codex", "--force"); code != 0 || strings.Count(read(".codex/config.toml"), "[mcp_servers.diffpal]") != 1 || !strings.Contains(read(".codex/config.toml"), "[mcp_servers.other]") {
		t.Errorf("--force: exit %d\n%s\n%s", code, out, read(".codex/config.toml"))
	}
	if code, _, _ := runCLI(t, "init", "-C", dir, "--host", "claude-code", "--force"); code != 0 || !strings.HasPrefix(read("CLAUDE.md"), "# My project") || strings.Count(read("CLAUDE.md"), hosts.SnippetBegin) != 1 {
		t.Errorf("--force CLAUDE.md:\n%s", read("CLAUDE.md"))
	}
	_, doctor, _ := runCLI(t, "doctor", "-C", dir)
	for _, want := range []string{"Claude Code: installed", "Codex: installed", "Cursor: installed"} {
		if !strings.Contains(doctor, want) {
			t.Errorf("doctor lacks %q:\n%s", want, doctor)
		}
	}
	// Errors name the flag or the file.
	if code, _, stderr := runCLI(t, "init", "-C", dir, "--host", "vscode"); code != ExitUsage || !strings.Contains(stderr, `--host "vscode"`) {
		t.Errorf("unknown host: %d %s", code, stderr)
	}
	if err := os.WriteFile(filepath.Join(dir, ".cursor", "mcp.json"), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(t, "init", "-C", dir, "--host", "cursor"); code != ExitUsage || !strings.Contains(stderr, ".cursor/mcp.json: not JSON") {
		t.Errorf("bad json: %d %s", code, stderr)
	}
	// A symlink out of the repository is refused, not followed.
	outside := filepath.Join(t.TempDir(), "victim.md")
	if err := os.WriteFile(outside, []byte("victim\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "AGENTS.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "AGENTS.md")); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := runCLI(t, "init", "-C", dir, "--host", "codex", "--force"); code == 0 {
		t.Error("a symlinked AGENTS.md was written through")
	}
	if data, _ := os.ReadFile(outside); string(data) != "victim\n" {
		t.Errorf("the file outside changed: %q", data)
	}
}
