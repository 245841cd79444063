// Package findings owns diffpal's canonical findings bundle
// (.artifacts/diffpal/findings.json): its types, reading every published
// version (v1–v3, tolerating v4), validation against the embedded JSON
// Schemas plus the semantic rules a schema cannot express, normalization
// (ids, stable ids, blocking flags, order) and atomic writing.
//
// The package is public and importable on purpose: CI jobs, bots and other
// tools read and write bundles through it. It therefore depends on nothing
// else in the diffpal module, never prints, and never exits.
//
// Reading is built for large bundles: a single-pass, schema-driven decoder
// validates while it decodes, so a million-finding bundle is checked without
// an intermediate generic JSON tree.
//
// Reading is tolerant where DiffPal's reader is: a severity that is not
// lower-case ("HIGH", "Medium", also in gate.block_on) is read as the
// lower-case value and reported in ReadInfo.Warnings rather than as a
// problem. Every other rule of the schema is a problem. Writing is strict:
// Normalize and WriteFile produce the canonical form, and Validate, the
// check of a bundle built in Go, requires it.
package findings
