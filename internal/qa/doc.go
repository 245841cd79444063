// Package qa owns diffpal's QA orchestration core: the fixed catalog of
// review profiles and bundles, the session state machine (triage → primary
// review → optional deep review → synthesis → host outcome), validation of
// everything a host submits (review context, profile reports, risk signals,
// final review report), revisions and transition receipts, and the export of
// a final review report into a findings-bundle-shaped value.
//
// The package is the library half of the `diffpal mcp` tools and is also
// driven in-process by the review engine. It must stay transport-free: it
// never speaks MCP, never prints, never reads configuration files or the
// environment, and never calls models. It is content-free as well: it keeps
// identifiers, hashes and the structured report fields a host submits, never
// raw diffs, evidence content, prompts or model outputs.
//
// State lives behind the Store interface (package store), so a session
// survives in whatever the adapter wires in; every state change is persisted
// before it is returned. Time comes from an injected clock and randomness
// from an injected reader, so behaviour is reproducible in tests.
//
// Domain errors are *Error values whose text starts with a fixed lower-case
// phrase (the Code); adapters forward that text as the tool error.
package qa
