// Package llm is the machinery shared by diffpal's model providers: it
// turns a profile's review request into a fenced, redacted, budgeted
// prompt, calls a Client (OpenAI-compatible, Anthropic or an agent CLI),
// validates the structured answer with a bounded repair loop, retries only
// transient failures, caches answers by content, and reports what really
// happened (attempts, tokens, seconds). Transports live in sibling
// packages (provider/openai, provider/anthropic, provider/command) and
// implement Client.
//
// It implements the engine's seam (package provider: Provider and
// Verifier) and is the one package the model transports share: it
// imports neither the engine (internal/review) nor any provider, and the
// transports import it, never each other.
package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/diffpalhq/diffpal/internal/provider"
)

// Message is one chat message.
type Message struct {
	Role    string // "user" or "assistant"
	Content string
}

// Request is one model call.
type Request struct {
	Model string
	// System carries diffpal's instructions only; data never goes here.
	System   string
	Messages []Message
	// Schema is the JSON Schema the answer must satisfy; Name names it
	// (OpenAI json_schema name, Anthropic tool name).
	Schema     json.RawMessage
	SchemaName string
	// Reasoning is an optional effort hint ("low", "medium", "high").
	Reasoning string
	MaxTokens int
}

// Usage is what a call consumed, as the API reported it.
type Usage struct {
	InputTokens       int64
	OutputTokens      int64
	CachedInputTokens int64
}

// Response is one model answer.
type Response struct {
	// JSON is the structured answer (the tool input for Anthropic, the
	// message content for OpenAI, stdout for agent CLIs).
	JSON  json.RawMessage
	Usage Usage
	// Model is the model that answered, when the API says.
	Model string
	// Inspection is what an agent transport saw the agent do during the
	// call (tool calls, files read, requests refused); nil otherwise. It
	// may accompany an error (a malformed answer still inspected code).
	Inspection *provider.Inspection
}

// Client performs one call. Implementations classify their failures with
// *Error so that the caller knows what may be retried.
type Client interface {
	Name() string
	Complete(ctx context.Context, req Request) (Response, error)
}

// Kind classifies a failed call.
type Kind int

const (
	// Transient failures may succeed on retry: timeouts, 429, 5xx,
	// connection resets.
	Transient Kind = iota + 1
	// Auth failures (401/403, missing key) never succeed on retry.
	Auth
	// Invalid requests (400, 404, 422, a reply that is not the API's
	// format at all) never succeed on retry either.
	Invalid
	// Malformed answers (not JSON, cut off, no tool call, a refusal) came
	// back from a working API: the caller's repair loop asks again with
	// the problem stated, rather than retrying blindly or giving up.
	Malformed
)

func (k Kind) String() string {
	switch k {
	case Transient:
		return "transient"
	case Auth:
		return "auth"
	case Invalid:
		return "invalid request"
	case Malformed:
		return "malformed answer"
	}
	return "unknown"
}

// Error is a classified call failure.
type Error struct {
	Kind   Kind
	Status int // HTTP status, 0 if none
	// RetryAfter is the server's requested wait (429/503 Retry-After).
	RetryAfter time.Duration
	Provider   string
	Msg        string
	Err        error
}

func (e *Error) Error() string {
	s := fmt.Sprintf("%s: %s error", e.Provider, e.Kind)
	if e.Status != 0 {
		s += fmt.Sprintf(" (HTTP %d)", e.Status)
	}
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// KindOf returns the classification of err (Transient for context
// deadline errors, 0 when unknown).
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return Transient
	}
	return 0
}
