package acp

import (
	"fmt"
	"slices"
	"strings"
)

// Agent is a known ACP agent: its provider type, the command line diffpal
// starts when the config gives none, and the binary it needs on PATH.
type Agent struct {
	Type string
	// Default is the command line started when the config sets none
	// (nil for generic_acp, whose command is required).
	Default []string
	// Binary is the agent CLI the command runs (what doctor looks for).
	Binary string
	// ModelFlag, when set, is the flag that passes the configured model.
	ModelFlag string
	// FixedCommand agents take no command from the config.
	FixedCommand bool
	// Install is the CI install line DiffPal documents ("" when the user
	// installs the agent).
	Install string
}

// CodexBridgeVersion is the pinned @normahq/codex-acp-bridge DiffPal uses.
const CodexBridgeVersion = "1.8.4"

// Agents are the ACP provider types, in the order the docs list them.
var Agents = []Agent{
	{Type: "codex_acp", Default: []string{"npx", "-y", "@normahq/codex-acp-bridge@" + CodexBridgeVersion}, Binary: "codex",
		Install: "npm i -g @openai/codex@0.139.0 @normahq/codex-acp-bridge@" + CodexBridgeVersion},
	{Type: "copilot_acp", Default: []string{"copilot", "--acp", "--stdio"}, Binary: "copilot",
		Install: "npm i -g @github/copilot@1.0.61"},
	{Type: "opencode_acp", Default: []string{"opencode", "acp"}, Binary: "opencode"},
	{Type: "gemini_acp", Default: []string{"gemini", "--acp"}, Binary: "gemini", ModelFlag: "--model", FixedCommand: true},
	{Type: "claude_code_acp", Default: []string{"npx", "-y", "@zed-industries/claude-code-acp@latest"}, Binary: "claude"},
	{Type: "generic_acp"},
}

// Types are the ACP provider type names.
func Types() []string {
	out := make([]string, len(Agents))
	for i, a := range Agents {
		out[i] = a.Type
	}
	return out
}

// Lookup returns the agent of a provider type.
func Lookup(typ string) (Agent, bool) {
	i := slices.IndexFunc(Agents, func(a Agent) bool { return a.Type == typ })
	if i < 0 {
		return Agent{}, false
	}
	return Agents[i], true
}

// IsType reports whether typ is an ACP provider type.
func IsType(typ string) bool {
	_, ok := Lookup(typ)
	return ok
}

// CommandLine is the argv diffpal starts for an agent of type typ: the
// configured command (with {{.Model}} replaced by the model) or the
// type's default, plus the model flag where the agent has one.
func CommandLine(typ string, configured []string, model string) ([]string, error) {
	a, ok := Lookup(typ)
	if !ok {
		return nil, fmt.Errorf("unknown ACP provider type %q", typ)
	}
	switch {
	case a.FixedCommand && len(configured) > 0:
		return nil, fmt.Errorf("type %s takes no command (diffpal runs %s)", typ, strings.Join(a.Default, " "))
	case len(configured) == 0 && a.Default == nil:
		return nil, fmt.Errorf("type %s needs a command (the ACP agent's command line, e.g. [\"my-agent\", \"acp\"])", typ)
	}
	argv := slices.Clone(configured)
	if len(argv) == 0 {
		argv = slices.Clone(a.Default)
		if a.ModelFlag != "" && model != "" {
			argv = append(argv, a.ModelFlag, model)
		}
	}
	for i, s := range argv {
		argv[i] = strings.ReplaceAll(s, "{{.Model}}", model)
	}
	if strings.TrimSpace(argv[0]) == "" {
		return nil, fmt.Errorf("type %s: the command's program is empty", typ)
	}
	return argv, nil
}
