package config

import (
	"embed"
)

//go:embed schema/config.json
var schemaFS embed.FS

// Schema returns the config's JSON Schema (draft 2020-12).
func Schema() []byte {
	data, _ := schemaFS.ReadFile("schema/config.json")
	return data
}

// Starter is the commented configuration `diffpal init` writes. Every
// setting is at its default or commented out, so writing it changes
// nothing until the user edits it.
const Starter = `# diffpal configuration — https://github.com/diffpalhq/diffpal
# Flags win over DIFFPAL_* variables, which win over this file.
# Print the JSON Schema with: diffpal schema config
version: v1

# Default provider: builtin (offline rule packs) or a name under providers.
provider: builtin

# Model providers. Keys are never written here: api_key_env names the
# environment variable that holds the key (in CI: a repository secret).
# providers:
#   openai:
#     type: openai                  # any OpenAI-compatible endpoint
#     model: gpt-5.4-mini
#     # base_url: http://127.0.0.1:8080/v1   # llama.cpp, vLLM, Ollama …
#     api_key_env: OPENAI_API_KEY
#     reasoning: low
#     timeout: 120s
#     max_concurrency: 2
#   claude:
#     type: anthropic
#     model: claude-sonnet-4-5
#     api_key_env: ANTHROPIC_API_KEY
#   agent:
#     type: command
#     command: ["claude", "-p"]
#     timeout: 10m

# Route profiles or passes to providers (others use the default provider).
# stages:
#   security_reviewer: claude
#   deep_review: claude
#   synthesis: claude

review:
  filter_mode: added        # added | diff_context | file | nofilter
  block_on: high            # low | medium | high | critical
  # min_confidence: 0.7
  # include: ["src/**"]
  # exclude: ["**/*.snap"]
  # max_file_bytes: 1048576
  # default_skips: true     # skip lock files, vendored and generated files
  # formats: [json, session, markdown, sarif]   # outputs; json is always written; sarif=PATH moves one
  # instructions: |         # guidance for model providers
  #   We use context.Context everywhere; flag I/O without a timeout.

# rules:
#   packs: [.config/diffpal/team-rules.yaml]

# Suppressions need a reason.
# ignores:
#   - rule: correctness.go-defer-in-loop
#     path: "cmd/**"
#     reason: these loops run at most three times
`
