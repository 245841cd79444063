// Package provider is the seam between the review engine and whatever
// reviews a change: it owns the Provider interface (and its optional
// Preparer and Verifier capabilities), the request and response types the
// engine exchanges with providers, the view of the change they are given,
// and the Router that sends each profile to its provider.
//
// Providers live beside it, one package each: builtin (the offline rule
// packs), and the model transports openai, anthropic and command, which
// share the model machinery of package llm (budgets, fenced prompts,
// answer schema and repair, cache, redaction). No provider imports the
// engine (internal/review), and no provider imports another; llm is the
// one shared helper of the model providers and imports no provider.
//
// Redaction has one owner, internal/secrets: anything a provider sends out
// of the process goes through it (the model providers through
// llm.Redactor, its thin wrapper).
package provider
