// Package mcpserver is the MCP adapter over internal/qa: it publishes the
// ten QA orchestration tools of qa.Tools() with the official Go SDK
// (github.com/modelcontextprotocol/go-sdk) and serves them over stdio or
// stateless streamable HTTP.
//
// What it owns:
//   - tool registration: typed tools whose input and output JSON Schemas
//     are inferred from the qa wire types, with enums for every fixed-value
//     string type; the SDK validates arguments (unknown properties are
//     rejected) and results, and returns structured content on success;
//   - the error surface: library errors become tool errors (isError) whose
//     text is the library's, so it starts with the fixed lower-case code;
//   - export_qa_findings: qa's findings export mapped onto findings.Bundle
//     and normalized, so the result is a bundle `diffpal validate` accepts;
//   - transports: the HTTP handler (stateless, cross-origin and DNS
//     rebinding protection, bearer token, body limit) and the loopback test
//     that decides whether a token is mandatory;
//   - the model-policy file format (the anchor's plus "mode").
//
// What it must not do: decide anything the library decides (validation,
// state, error codes), keep state of its own (sessions live in the qa
// store, so any process sharing the store can answer any call), read flags
// or the environment, print, or touch the network beyond the listener it is
// handed. The command line lives in internal/cli/mcp.go.
package mcpserver
