// Package mcpserver is the MCP adapter over internal/qa: it publishes the
// ten QA orchestration tools of qa.Tools() with the official Go SDK
// (github.com/modelcontextprotocol/go-sdk) and serves them over stdio or
// stateless streamable HTTP. With a LocalRepo it also publishes the
// read-only get_review_context (internal/reviewctx, the code path of
// `diffpal context`); it always lists the review_change and resume_review
// prompts, which render the canonical flow (the host rules in hosts/ say
// the same).
//
// What it owns:
//   - tool registration: typed tools whose input and output JSON Schemas
//     are inferred from the qa wire types and carry the library's own
//     constraint tables (qa.EnumValues, qa.FieldRules: enums, patterns,
//     lengths, item counts, ranges, const), the same ones the library
//     enforces; the SDK validates arguments (unknown properties are
//     rejected) and results, and returns structured content on success;
//   - the error surface: library errors become tool errors (isError) whose
//     text is the library's, so it starts with the fixed lower-case code;
//   - export_qa_findings: qa's findings export mapped onto findings.Bundle
//     and normalized, so the result is a bundle `diffpal validate` accepts;
//   - transports: the stdio transport (a line reader of its own in front
//     of the SDK: bad lines are answered with JSON-RPC errors instead of
//     ending the server, and calls read before end of input are answered),
//     the HTTP handler (stateless, cross-origin and DNS rebinding
//     protection, bearer token, body limit, JSON-RPC -32601 for unknown
//     methods) and the loopback test that decides whether a token is
//     mandatory;
//   - the model-policy file format (the anchor's plus "mode").
//
// What it must not do: decide anything the library decides (validation,
// state, error codes), keep state of its own (sessions live in the qa
// store, so any process sharing the store can answer any call), read flags
// or the environment, print, or touch the network beyond the listener it is
// handed. The command line lives in internal/cli/mcp.go.
package mcpserver
