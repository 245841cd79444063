// Package hosts holds the rule files and MCP registrations diffpal ships
// for agent hosts, embedded so `diffpal init --host` can write them.
//
// generic/DIFFPAL_QA.md is the canonical rule set for any host; the
// others adapt it: claude-code/CLAUDE.md and codex/AGENTS.md are snippets
// for the repository's own CLAUDE.md / AGENTS.md (between SnippetBegin and
// SnippetEnd), cursor/diffpal-qa.mdc is a Cursor project rule with its
// frontmatter. Each host's *.tmpl is its MCP registration, a text/template
// over MCPParams with a json function (JSON strings are valid TOML basic
// strings too).
//
// The rules name only tools, prompts and fields the server publishes; the
// tests in this package and internal/mcpserver check that.
package hosts

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"text/template"
)

// FS holds every rule file and registration template.
//
//go:embed generic claude-code codex cursor
var FS embed.FS

// CanonicalRules is the path in FS of the rule set for any host.
const CanonicalRules = "generic/DIFFPAL_QA.md"

// Snippet markers: a snippet's first line starts with SnippetBegin and
// its last line is SnippetEnd, so a writer can find and replace it in a
// file that holds the user's own text too.
const (
	SnippetBegin = "<!-- diffpal-qa:begin"
	SnippetEnd   = "<!-- diffpal-qa:end -->"
)

// Host is one agent host diffpal can be installed into.
type Host struct {
	// Name is the --host value: claude-code, codex or cursor.
	Name  string
	Title string
	// RuleFile is the rule file's path in FS.
	RuleFile string
	// RulePath is where the rule file goes in the user's repository
	// (slash-separated, relative to the root).
	RulePath string
	// Snippet: RulePath is a file the user may already have (CLAUDE.md,
	// AGENTS.md); the rules are a marked block to append or replace there.
	// Otherwise RulePath is diffpal's own file.
	Snippet bool
	// MCPTemplate is the registration template's path in FS.
	MCPTemplate string
	// MCPPath is the host's project MCP registration file, relative to
	// the repository root. It may hold other servers: the template is the
	// whole file for a repository that has none.
	MCPPath string
	// MCPFormat is "json" or "toml".
	MCPFormat string
}

var all = []Host{
	{Name: "claude-code", Title: "Claude Code", RuleFile: "claude-code/CLAUDE.md", RulePath: "CLAUDE.md", Snippet: true,
		MCPTemplate: "claude-code/mcp.json.tmpl", MCPPath: ".mcp.json", MCPFormat: "json"},
	{Name: "codex", Title: "Codex", RuleFile: "codex/AGENTS.md", RulePath: "AGENTS.md", Snippet: true,
		MCPTemplate: "codex/config.toml.tmpl", MCPPath: ".codex/config.toml", MCPFormat: "toml"},
	{Name: "cursor", Title: "Cursor", RuleFile: "cursor/diffpal-qa.mdc", RulePath: ".cursor/rules/diffpal-qa.mdc",
		MCPTemplate: "cursor/mcp.json.tmpl", MCPPath: ".cursor/mcp.json", MCPFormat: "json"},
}

// All returns the hosts in a fixed order.
func All() []Host { return append([]Host(nil), all...) }

// Names returns the --host values.
func Names() []string {
	var out []string
	for _, h := range all {
		out = append(out, h.Name)
	}
	return out
}

// Lookup finds a host by name.
func Lookup(name string) (Host, bool) {
	for _, h := range all {
		if h.Name == name {
			return h, true
		}
	}
	return Host{}, false
}

// RuleFiles lists every rule file in FS: the canonical set first.
func RuleFiles() []string {
	out := []string{CanonicalRules}
	for _, h := range all {
		out = append(out, h.RuleFile)
	}
	return out
}

// Rules returns the host's rule file.
func (h Host) Rules() ([]byte, error) { return FS.ReadFile(h.RuleFile) }

// MCPParams fill a registration template.
type MCPParams struct {
	// Command is the executable hosts launch ("diffpal", or an absolute
	// path).
	Command string
	// Args follow it; DefaultMCPParams's are ["mcp", "--model-mode",
	// "host_default"] (interactive hosts choose their own models).
	Args []string
}

// DefaultMCPParams launch `diffpal mcp --model-mode host_default` from PATH.
func DefaultMCPParams() MCPParams {
	return MCPParams{Command: "diffpal", Args: []string{"mcp", "--model-mode", "host_default"}}
}

// MCPConfig renders the host's registration file.
func (h Host) MCPConfig(p MCPParams) ([]byte, error) {
	if p.Command == "" {
		return nil, fmt.Errorf("hosts: %s: empty command", h.Name)
	}
	if p.Args == nil {
		p.Args = []string{}
	}
	src, err := FS.ReadFile(h.MCPTemplate)
	if err != nil {
		return nil, err
	}
	t, err := template.New(h.MCPTemplate).Option("missingkey=error").Funcs(template.FuncMap{
		"json": func(v any) (string, error) {
			b, err := json.Marshal(v)
			return string(b), err
		},
	}).Parse(string(src))
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, p); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
