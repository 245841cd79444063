package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/diffpalhq/diffpal/internal/git/gittest"
	"github.com/diffpalhq/diffpal/internal/mcpserver"
	st "github.com/diffpalhq/diffpal/internal/secrets/secretstest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// outsideMarker is the content of a file outside the repository that a
// committed symlink points to; no output may contain it.
const outsideMarker = "OUTSIDE-THE-REPOSITORY-do-not-read"

// plantedRepo: branch feature (against main) plants an SQL injection, a
// swallowed exception, a committed token and a symlink out of the
// repository.
func plantedRepo(t *testing.T) (*gittest.Repo, string) {
	t.Helper()
	repo := gittest.New(t)
	repo.Write("svc/db.py", "def find_user(cur, name):\n    cur.execute(\"SELECT * FROM users WHERE name = %s\", (name,))\n    return cur.fetchone()\n")
	repo.Write("svc/handler.py", "from svc import db\n\n\ndef handle(cur, req):\n    return db.find_user(cur, req['name'])\n")
	repo.Commit("base")
	repo.Git("checkout", "-q", "-b", "feature")
	token := "ghp_" + st.Gen("cli-mcp-planted", st.Alnum, 36)
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

// mcpClient builds the server `diffpal mcp` would run for opts (flags in
// opts.changed) and connects an SDK client over in-memory transports.
func mcpClient(t *testing.T, opts *McpOptions) *mcp.ClientSession {
	t.Helper()
	if opts.IO == nil {
		opts.IO = &IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard}
	}
	if opts.Getenv == nil {
		opts.Getenv = opts.IO.Getenv
	}
	inst, err := newMcpInstance(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inst.closeStore() })
	ct, stt := mcp.NewInMemoryTransports()
	ss, err := inst.srv.Connect(context.Background(), stt, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "cli-test", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	return cs
}

func toolText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func callOK(t *testing.T, cs *mcp.ClientSession, name string, args, out any) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	text := toolText(res)
	if res.IsError {
		t.Fatalf("%s: tool error: %s", name, text)
	}
	if out != nil {
		if err := json.Unmarshal([]byte(text), out); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	return text
}

// TestMcpReviewContextEqualsDiffpalContext: get_review_context's
// review_context is byte for byte what `diffpal context` prints for the
// same range (indented as it prints), and its packet items are
// `diffpal context --packet`'s: one code path, the same redaction; the
// token and the symlink's outside content appear in neither.
func TestMcpReviewContextEqualsDiffpalContext(t *testing.T) {
	repo, token := plantedRepo(t)
	packet := filepath.Join(t.TempDir(), "packet.json")
	code, stdout, stderr := runCLI(t, "context", "-C", repo.Dir, "--base", "main", "--head", "feature", "--packet", packet)
	if code != ExitOK {
		t.Fatalf("diffpal context: exit %d\n%s", code, stderr)
	}
	cs := mcpClient(t, &McpOptions{Repo: repo.Dir, changed: map[string]bool{"repo": true}})
	text := callOK(t, cs, mcpserver.ToolReviewContext, map[string]any{"base": "main", "head": "feature", "include_packet": true}, nil)
	var out struct {
		ReviewContext json.RawMessage `json:"review_context"`
		Packet        struct {
			Items json.RawMessage `json:"items"`
		} `json:"packet"`
	}
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		t.Fatal(err)
	}
	var indented bytes.Buffer
	if err := json.Indent(&indented, out.ReviewContext, "", "  "); err != nil {
		t.Fatal(err)
	}
	indented.WriteByte('\n')
	if indented.String() != stdout {
		t.Errorf("review_context differs from diffpal context's output:\n--- tool\n%s--- diffpal context\n%s", indented.String(), stdout)
	}
	data, err := os.ReadFile(packet)
	if err != nil {
		t.Fatal(err)
	}
	var pf struct {
		Items json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(data, &pf); err != nil {
		t.Fatal(err)
	}
	var a, b bytes.Buffer
	json.Compact(&a, out.Packet.Items)
	json.Compact(&b, pf.Items)
	if a.String() != b.String() {
		t.Errorf("packet items differ from diffpal context --packet's")
	}
	for _, s := range []string{text, string(data), stdout} {
		if strings.Contains(s, token) || strings.Contains(s, outsideMarker) {
			t.Fatal("a secret or outside content reached the output")
		}
	}
	if !strings.Contains(a.String(), "[REDACTED]") {
		t.Error("the token is not shown redacted")
	}
}

func listToolNames(t *testing.T, cs *mcp.ClientSession) map[string]bool {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]bool{}
	for _, tl := range res.Tools {
		m[tl.Name] = true
	}
	return m
}

// TestMcpLocalRepoSettings: when get_review_context is offered, and on
// which repository.
func TestMcpLocalRepoSettings(t *testing.T) {
	repo, _ := plantedRepo(t)
	t.Setenv("DIFFPAL_TEST_MCP_TOKEN", strings.Repeat("t", 32))
	for _, c := range []struct {
		name    string
		opts    McpOptions
		env     map[string]string
		want    string // cfg.localRepo
		offWhy  string
		errWant string
	}{
		{name: "default: the working directory", want: "."},
		{name: "--repo", opts: McpOptions{Repo: repo.Dir, changed: map[string]bool{"repo": true}}, want: repo.Dir},
		{name: "env repo", env: map[string]string{envMcpRepo: repo.Dir}, want: repo.Dir},
		{name: "--no-local-repo", opts: McpOptions{NoLocalRepo: true, changed: map[string]bool{"no-local-repo": true}}, offWhy: "--no-local-repo"},
		{name: "env off", env: map[string]string{envMcpNoLocalRepo: "1"}, offWhy: envMcpNoLocalRepo},
		{name: "env off false", env: map[string]string{envMcpNoLocalRepo: "false"}, want: "."},
		{name: "flag false wins over env", opts: McpOptions{changed: map[string]bool{"no-local-repo": true}}, env: map[string]string{envMcpNoLocalRepo: "1"}, want: "."},
		{name: "loopback http", opts: McpOptions{HTTP: "127.0.0.1:0", changed: map[string]bool{"http": true}}, want: "."},
		{name: "non-loopback http", opts: McpOptions{HTTP: "0.0.0.0:0", TokenEnv: "DIFFPAL_TEST_MCP_TOKEN", changed: map[string]bool{"http": true, "token-env": true}}, offWhy: "non-loopback"},
		{name: "non-loopback http with --repo", opts: McpOptions{HTTP: "0.0.0.0:0", TokenEnv: "DIFFPAL_TEST_MCP_TOKEN", Repo: repo.Dir,
			changed: map[string]bool{"http": true, "token-env": true, "repo": true}}, want: repo.Dir},
		{name: "contradiction", opts: McpOptions{Repo: repo.Dir, NoLocalRepo: true, changed: map[string]bool{"repo": true, "no-local-repo": true}}, errWant: "contradict"},
		{name: "bad env bool", env: map[string]string{envMcpNoLocalRepo: "maybe"}, errWant: envMcpNoLocalRepo},
		{name: "empty repo", opts: McpOptions{Repo: " ", changed: map[string]bool{"repo": true}}, errWant: "--repo"},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := c.opts
			o.IO = &IOStreams{}
			o.Getenv = func(k string) string {
				if k == "DIFFPAL_TEST_MCP_TOKEN" {
					return os.Getenv(k)
				}
				return c.env[k]
			}
			if o.changed == nil {
				o.changed = map[string]bool{}
			}
			cfg, err := o.resolve()
			if c.errWant != "" {
				if err == nil || !strings.Contains(err.Error(), c.errWant) {
					t.Fatalf("error %v, want %q", err, c.errWant)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.localRepo != c.want || (c.offWhy != "") != (cfg.localRepoOff != "") || !strings.Contains(cfg.localRepoOff, c.offWhy) {
				t.Errorf("localRepo %q off %q, want %q off %q", cfg.localRepo, cfg.localRepoOff, c.want, c.offWhy)
			}
		})
	}

	// What hosts see: the tool on a repository, none with --no-local-repo
	// or outside a repository, and an explicit --repo that is no
	// repository refused at start-up.
	if !listToolNames(t, mcpClient(t, &McpOptions{Repo: repo.Dir, changed: map[string]bool{"repo": true}}))[mcpserver.ToolReviewContext] {
		t.Error("--repo: get_review_context not listed")
	}
	if listToolNames(t, mcpClient(t, &McpOptions{Repo: repo.Dir, changed: map[string]bool{}, NoLocalRepo: true,
		Getenv: func(k string) string { return map[string]string{envMcpNoLocalRepo: "true"}[k] }}))[mcpserver.ToolReviewContext] {
		t.Error("DIFFPAL_MCP_NO_LOCAL_REPO=true: get_review_context listed")
	}
	notRepo := t.TempDir()
	var logs bytes.Buffer
	t.Chdir(notRepo)
	tools := listToolNames(t, mcpClient(t, &McpOptions{IO: &IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: &logs}, changed: map[string]bool{}}))
	if tools[mcpserver.ToolReviewContext] || len(tools) != 10 || !strings.Contains(logs.String(), "get_review_context is off") {
		t.Errorf("outside a repository: tools %v, log %q", tools, logs.String())
	}
	if code, stderr := runMcp(t, nil, "--repo", notRepo); code != ExitUsage || !strings.Contains(stderr, "--repo") {
		t.Errorf("--repo on a non-repository: exit %d\n%s", code, stderr)
	}
}
