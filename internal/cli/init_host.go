package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/diffpalhq/diffpal/hosts"
	"github.com/diffpalhq/diffpal/internal/repofs"
	"github.com/diffpalhq/diffpal/internal/safefile"
	"github.com/diffpalhq/diffpal/internal/textsafe"
)

// maxHostFile bounds the read of an existing host file init edits.
const maxHostFile = 4 << 20

// initHostRun installs diffpal into an agent host's project files: the
// MCP registration and the QA rules (package hosts).
//
// Nothing the user wrote is lost:
//   - the registration file may list other servers: JSON gets a
//     mcpServers.diffpal entry, TOML a [mcp_servers.diffpal] table, beside
//     what is there; an existing diffpal entry is replaced only with --force;
//   - CLAUDE.md and AGENTS.md are the user's own: the rules are a marked
//     block appended to them, and an existing block is replaced only with
//     --force;
//   - the Cursor rule file is diffpal's own: kept unless --force.
//
// Every write goes through safefile (no symlinks below the root, regular
// files only, atomic replace).
func initHostRun(ctx context.Context, opts *InitOptions, root string) error {
	h, ok := hosts.Lookup(opts.Host)
	if !ok {
		return usageErr("--host %q: want %s", opts.Host, strings.Join(hosts.Names(), ", "))
	}
	reg, err := h.MCPConfig(hosts.DefaultMCPParams())
	if err != nil {
		return ioErr(err)
	}
	rules, err := h.Rules()
	if err != nil {
		return ioErr(err)
	}
	regPath := filepath.Join(root, filepath.FromSlash(h.MCPPath))
	old, exists, err := readHostFile(root, h.MCPPath)
	if err != nil {
		return err
	}
	merged, action, err := mergeRegistration(h, old, exists, reg, opts.Force)
	if err != nil {
		return usageErr("%s: %v", h.MCPPath, err)
	}
	if err := writeHostFile(ctx, opts, root, regPath, merged, action); err != nil {
		return err
	}

	rulePath := filepath.Join(root, filepath.FromSlash(h.RulePath))
	old, exists, err = readHostFile(root, h.RulePath)
	if err != nil {
		return err
	}
	var content []byte
	switch {
	case !exists:
		content, action = rules, "wrote"
	case h.Snippet:
		content, action = mergeSnippet(old, rules, opts.Force)
	case opts.Force:
		content, action = rules, "replaced"
	default:
		content, action = nil, "kept"
	}
	return writeHostFile(ctx, opts, root, rulePath, content, action)
}

// readHostFile reads a host file inside the repository (symlinks resolved
// inside it, regular files only, bounded); exists is false when absent.
func readHostFile(root, rel string) ([]byte, bool, error) {
	data, err := repofs.ReadFile(root, rel, maxHostFile)
	switch {
	case err == nil:
		return data, true, nil
	case errors.Is(err, os.ErrNotExist):
		return nil, false, nil
	}
	return nil, false, usageErr("%s: %v", rel, err)
}

func writeHostFile(ctx context.Context, opts *InitOptions, root, path string, content []byte, action string) error {
	shown := textsafe.Terminal(path)
	if content == nil {
		fmt.Fprintf(opts.IO.Out, "kept %s (diffpal's entry exists; --force replaces it)\n", shown)
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return ioErr(err)
	}
	if err := writeOutput(ctx, root, path, safefile.Options{Perm: 0o644}, func(w io.Writer) error {
		_, err := w.Write(content)
		return err
	}); err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.Out, "%s %s\n", action, shown)
	return nil
}

// mergeRegistration adds diffpal to a host's MCP registration file. A nil
// result means "keep the file": diffpal is registered and there is no
// --force.
func mergeRegistration(h hosts.Host, old []byte, exists bool, reg []byte, force bool) ([]byte, string, error) {
	if !exists || len(bytes.TrimSpace(old)) == 0 {
		return reg, "wrote", nil
	}
	switch h.MCPFormat {
	case "json":
		var doc map[string]any
		if err := json.Unmarshal(old, &doc); err != nil {
			return nil, "", fmt.Errorf("not JSON (%v): fix or remove it first", err)
		}
		var ours struct {
			MCPServers map[string]any `json:"mcpServers"`
		}
		if err := json.Unmarshal(reg, &ours); err != nil {
			return nil, "", err
		}
		servers, _ := doc["mcpServers"].(map[string]any)
		if doc["mcpServers"] != nil && servers == nil {
			return nil, "", errors.New(`"mcpServers" is not an object`)
		}
		if servers == nil {
			servers = map[string]any{}
		}
		if _, ok := servers["diffpal"]; ok && !force {
			return nil, "kept", nil
		}
		servers["diffpal"] = ours.MCPServers["diffpal"]
		doc["mcpServers"] = servers
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(doc); err != nil {
			return nil, "", err
		}
		return b.Bytes(), "updated", nil
	case "toml":
		const table = "[mcp_servers.diffpal]"
		text := string(old)
		if !strings.Contains(text, table) {
			return []byte(strings.TrimRight(text, "\n") + "\n\n" + string(reg)), "updated", nil
		}
		if !force {
			return nil, "kept", nil
		}
		// Drop the old table (its header up to the next table that is not
		// one of its own sub-tables), then append ours.
		var out []string
		in := false
		for _, ln := range strings.Split(text, "\n") {
			t := strings.TrimSpace(ln)
			if strings.HasPrefix(t, "[") {
				in = t == table || strings.HasPrefix(t, "[mcp_servers.diffpal.")
			}
			if !in {
				out = append(out, ln)
			}
		}
		return []byte(strings.TrimRight(strings.Join(out, "\n"), "\n") + "\n\n" + string(reg)), "updated", nil
	}
	return nil, "", fmt.Errorf("unknown registration format %q", h.MCPFormat)
}

// mergeSnippet appends the rules block to a user's CLAUDE.md / AGENTS.md,
// or replaces the block there with force; nil means keep.
func mergeSnippet(old, block []byte, force bool) ([]byte, string) {
	text := string(old)
	start := strings.Index(text, hosts.SnippetBegin)
	if start < 0 {
		return []byte(strings.TrimRight(text, "\n") + "\n\n" + string(block)), "updated"
	}
	if !force {
		return nil, "kept"
	}
	end := strings.Index(text[start:], hosts.SnippetEnd)
	if end < 0 {
		// A begin marker without its end: replace to the end of the file.
		return []byte(text[:start] + string(block)), "replaced"
	}
	end += start + len(hosts.SnippetEnd)
	rest := strings.TrimPrefix(text[end:], "\n")
	return []byte(text[:start] + strings.TrimRight(string(block), "\n") + "\n" + rest), "replaced"
}

// hostStatus is what doctor says about one host's installation.
func hostStatus(root string, h hosts.Host) (string, bool) {
	reg, regOK, _ := readHostFile(root, h.MCPPath)
	rules, rulesOK, _ := readHostFile(root, h.RulePath)
	registered := regOK && (bytes.Contains(reg, []byte(`"diffpal"`)) || bytes.Contains(reg, []byte("[mcp_servers.diffpal]")))
	ruled := rulesOK && (!h.Snippet || bytes.Contains(rules, []byte(hosts.SnippetBegin)))
	switch {
	case registered && ruled:
		return fmt.Sprintf("%s: installed (%s, %s)", h.Title, h.MCPPath, h.RulePath), true
	case registered:
		return fmt.Sprintf("%s: registered in %s, but no QA rules in %s (diffpal init --host %s)", h.Title, h.MCPPath, h.RulePath, h.Name), false
	case ruled:
		return fmt.Sprintf("%s: rules in %s, but diffpal is not registered in %s (diffpal init --host %s)", h.Title, h.RulePath, h.MCPPath, h.Name), false
	}
	return "", false
}
