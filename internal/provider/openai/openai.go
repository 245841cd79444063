// Package openai is diffpal's transport for OpenAI-compatible chat
// completion endpoints: OpenAI itself, Azure-style base URLs, vLLM,
// llama.cpp's server and Ollama. It implements llm.Client with a small
// net/http client (POST {base}/chat/completions) and JSON-schema
// structured output; retries, repair and caching belong to package llm.
//
// The API key is sent only in the Authorization header (or the header
// named by Config.APIKeyHeader) and is redacted from every error message.
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/diffpalhq/diffpal/internal/provider/llm"
)

// ProviderName is what Name returns and what errors carry as Provider.
const ProviderName = "openai"

// DefaultBaseURL is OpenAI's API root.
const DefaultBaseURL = "https://api.openai.com/v1"

// APIKeyEnv is the variable the official SDKs, and FromEnv, read the key from.
const APIKeyEnv = "OPENAI_API_KEY"

// DefaultTimeout bounds one call when Config.Timeout is zero. Reasoning
// models can think for minutes, so it is generous; the caller's context
// may be shorter.
const DefaultTimeout = 5 * time.Minute

// Config configures a Client.
type Config struct {
	// BaseURL is the API root the request path is appended to, e.g.
	// "https://api.openai.com/v1", "http://localhost:11434/v1" (Ollama),
	// "http://localhost:8000/v1" (vLLM) or an Azure-style
	// "https://RES.openai.azure.com/openai/v1". A query string (Azure's
	// "?api-version=…") is kept. Empty means DefaultBaseURL.
	BaseURL string
	// APIKey is sent as "Authorization: Bearer KEY". It may be empty for
	// local servers that need none; with the default OpenAI base URL an
	// empty key fails fast with an Auth error. Never logged.
	APIKey string
	// APIKeyHeader, when set (e.g. "api-key" for Azure key auth), sends
	// the key raw in that header instead of Authorization: Bearer.
	APIKeyHeader string
	// Model is used when Request.Model is empty.
	Model string
	// HTTPClient defaults to a client with no overall timeout (the
	// per-call Timeout applies through the request context).
	HTTPClient *http.Client
	// Timeout bounds one call; 0 means DefaultTimeout, negative means
	// only the caller's context bounds it.
	Timeout time.Duration
	// UserAgent overrides the default "diffpal/VERSION".
	UserAgent string
	// LegacyMaxTokens sends Request.MaxTokens as "max_tokens" instead of
	// "max_completion_tokens", for older OpenAI-compatible servers.
	LegacyMaxTokens bool
}

// FromEnv returns a Config with APIKey from OPENAI_API_KEY and BaseURL
// from OPENAI_BASE_URL (empty means DefaultBaseURL), as the official
// SDKs read them. Callers fill in Model and the rest.
func FromEnv() Config {
	return Config{
		APIKey:  os.Getenv(APIKeyEnv),
		BaseURL: strings.TrimSpace(os.Getenv("OPENAI_BASE_URL")),
	}
}

// Client is an llm.Client for one OpenAI-compatible endpoint. It is safe
// for concurrent use.
type Client struct {
	cfg Config
	ep  *llm.HTTPEndpoint
}

var _ llm.Client = (*Client)(nil)

// New validates cfg and returns a Client.
func New(cfg Config) (*Client, error) {
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	ep, err := llm.NewHTTPEndpoint(ProviderName, cfg.BaseURL, "/chat/completions", cfg.HTTPClient, cfg.Timeout, cfg.UserAgent, cfg.APIKey)
	if err != nil {
		return nil, err
	}
	return &Client{cfg: cfg, ep: ep}, nil
}

// Name implements llm.Client.
func (c *Client) Name() string { return ProviderName }

// Endpoint is the URL requests are posted to (for diagnostics; it never
// contains the key unless the caller put one in BaseURL).
func (c *Client) Endpoint() string { return llm.RedactURL(c.ep.URL.String()) }

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type jsonSchemaFormat struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
	Strict bool            `json:"strict"`
}

type responseFormat struct {
	Type       string            `json:"type"`
	JSONSchema *jsonSchemaFormat `json:"json_schema,omitempty"`
}

type chatRequest struct {
	Model               string         `json:"model"`
	Messages            []chatMessage  `json:"messages"`
	ResponseFormat      responseFormat `json:"response_format"`
	ReasoningEffort     string         `json:"reasoning_effort,omitempty"`
	MaxCompletionTokens int            `json:"max_completion_tokens,omitempty"`
	MaxTokens           int            `json:"max_tokens,omitempty"`
}

type chatResponse struct {
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Content *string `json:"content"`
			Refusal *string `json:"refusal"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int64 `json:"prompt_tokens"`
		CompletionTokens    int64 `json:"completion_tokens"`
		PromptTokensDetails *struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// buildBody renders the request JSON.
func (c *Client) buildBody(req llm.Request, model string) ([]byte, error) {
	msgs := make([]chatMessage, 0, len(req.Messages)+1)
	if req.System != "" {
		msgs = append(msgs, chatMessage{Role: "system", Content: req.System})
	}
	for _, m := range req.Messages {
		role := m.Role
		if role == "" {
			role = "user"
		}
		msgs = append(msgs, chatMessage{Role: role, Content: m.Content})
	}
	body := chatRequest{Model: model, Messages: msgs, ReasoningEffort: req.Reasoning}
	if len(bytes.TrimSpace(req.Schema)) > 0 {
		if !json.Valid(req.Schema) {
			return nil, errors.New("request schema is not valid JSON")
		}
		body.ResponseFormat = responseFormat{Type: "json_schema", JSONSchema: &jsonSchemaFormat{
			Name: SchemaName(req.SchemaName), Schema: req.Schema, Strict: true,
		}}
	} else {
		// No schema: still ask for a JSON object (JSON mode).
		body.ResponseFormat = responseFormat{Type: "json_object"}
	}
	if req.MaxTokens > 0 {
		if c.cfg.LegacyMaxTokens {
			body.MaxTokens = req.MaxTokens
		} else {
			body.MaxCompletionTokens = req.MaxTokens
		}
	}
	return json.Marshal(body)
}

var nameBad = regexp.MustCompile(`[^a-zA-Z0-9_-]`)

// SchemaName makes name acceptable as a json_schema name (letters, digits,
// '_' and '-', at most 64), defaulting to "answer".
func SchemaName(name string) string {
	name = nameBad.ReplaceAllString(name, "_")
	if len(name) > 64 {
		name = name[:64]
	}
	if name == "" {
		name = "answer"
	}
	return name
}

// Complete implements llm.Client. Failures are *llm.Error. When the
// model's output is unusable (not JSON, refused, truncated) the error is
// Invalid and the returned Response still carries Usage and Model, so the
// caller can account for the tokens spent.
func (c *Client) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	model := req.Model
	if model == "" {
		model = c.cfg.Model
	}
	if model == "" {
		return llm.Response{}, c.fail(llm.Invalid, 0, "no model configured", nil)
	}
	if c.cfg.APIKey == "" && c.ep.URL.Host == "api.openai.com" {
		return llm.Response{}, c.fail(llm.Auth, 0, "no API key (set OPENAI_API_KEY)", nil)
	}
	body, err := c.buildBody(req, model)
	if err != nil {
		return llm.Response{}, c.fail(llm.Invalid, 0, err.Error(), err)
	}

	h := http.Header{}
	if c.cfg.APIKey != "" {
		if c.cfg.APIKeyHeader != "" {
			h.Set(c.cfg.APIKeyHeader, c.cfg.APIKey)
		} else {
			h.Set("Authorization", "Bearer "+c.cfg.APIKey)
		}
	}

	resp, raw, err := c.ep.Post(ctx, body, h)
	if err != nil {
		return llm.Response{}, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return llm.Response{}, c.statusError(resp, raw)
	}
	return c.parse(raw, model, resp.StatusCode)
}

func (c *Client) parse(raw []byte, model string, status int) (llm.Response, error) {
	var cr chatResponse
	if err := json.Unmarshal(raw, &cr); err != nil {
		return llm.Response{}, c.fail(llm.Invalid, status, "response is not a chat completion: "+llm.Excerpt(string(raw)), err)
	}
	out := llm.Response{Model: cr.Model}
	if out.Model == "" {
		out.Model = model
	}
	if cr.Usage != nil {
		out.Usage.InputTokens = cr.Usage.PromptTokens
		out.Usage.OutputTokens = cr.Usage.CompletionTokens
		if d := cr.Usage.PromptTokensDetails; d != nil {
			out.Usage.CachedInputTokens = d.CachedTokens
		}
	}
	if len(cr.Choices) == 0 {
		msg := "response has no choices"
		if m := apiMessage(cr.Error); m != "" {
			msg += ": " + m
		}
		return out, c.fail(llm.Malformed, status, msg, nil)
	}
	ch := cr.Choices[0]
	if r := ch.Message.Refusal; r != nil && strings.TrimSpace(*r) != "" {
		return out, c.fail(llm.Malformed, status, "model refused: "+llm.Excerpt(*r), nil)
	}
	content := ""
	if ch.Message.Content != nil {
		content = *ch.Message.Content
	}
	js := unfence(content)
	if js == "" || !json.Valid([]byte(js)) {
		var msg string
		switch {
		case ch.FinishReason == "length":
			msg = "model output was cut off at the token limit (finish_reason=length) and is not valid JSON"
		case ch.FinishReason == "content_filter":
			msg = "model output was withheld by the content filter (finish_reason=content_filter)"
		case strings.TrimSpace(content) == "":
			msg = fmt.Sprintf("model returned empty content (finish_reason=%s)", ch.FinishReason)
		default:
			msg = "model output is not valid JSON: " + llm.Excerpt(content)
		}
		return out, c.fail(llm.Malformed, status, msg, nil)
	}
	out.JSON = json.RawMessage(js)
	return out, nil
}

// unfence trims whitespace and, when the whole content is one Markdown
// code fence (some compatible servers add one), returns what is inside.
func unfence(s string) string {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "```") || !strings.HasSuffix(s, "```") || len(s) < 6 {
		return s
	}
	inner := s[3 : len(s)-3]
	nl := strings.IndexByte(inner, '\n')
	if nl < 0 {
		return s
	}
	if lang := strings.TrimSpace(inner[:nl]); lang != "" && lang != "json" && lang != "JSON" {
		return s
	}
	return strings.TrimSpace(inner[nl+1:])
}

// statusError classifies a non-2xx response.
func (c *Client) statusError(resp *http.Response, raw []byte) error {
	msg, errCode := errorBody(raw)
	kind := llm.ClassifyStatus(resp.StatusCode)
	if resp.StatusCode == http.StatusTooManyRequests && errCode == "insufficient_quota" {
		// Out of credit: retrying will not help.
		kind = llm.Auth
	}
	return c.ep.StatusError(resp, kind, msg, "X-Request-Id")
}

// errorBody extracts the message and code from the error bodies that
// OpenAI-compatible servers send: {"error":{"message","code","type"}}
// (OpenAI, Azure, new vLLM), {"error":"…"} (Ollama, llama.cpp),
// {"message":"…"} (old vLLM) and {"detail":"…"} (FastAPI servers).
func errorBody(raw []byte) (msg, code string) {
	var b struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  json.RawMessage `json:"detail"`
	}
	if err := json.Unmarshal(raw, &b); err != nil {
		return llm.Excerpt(string(raw)), ""
	}
	if len(b.Error) > 0 {
		var obj struct {
			Message string          `json:"message"`
			Code    json.RawMessage `json:"code"`
			Type    string          `json:"type"`
		}
		if json.Unmarshal(b.Error, &obj) == nil && obj.Message != "" {
			code = strings.Trim(string(obj.Code), `"`)
			if code == "" || code == "null" {
				code = obj.Type
			}
			return llm.Excerpt(obj.Message), code
		}
		if m := apiMessage(b.Error); m != "" {
			return m, ""
		}
	}
	if b.Message != "" {
		return llm.Excerpt(b.Message), ""
	}
	if len(b.Detail) > 0 {
		var s string
		if json.Unmarshal(b.Detail, &s) == nil {
			return llm.Excerpt(s), ""
		}
		return llm.Excerpt(string(b.Detail)), ""
	}
	return llm.Excerpt(string(raw)), ""
}

// apiMessage reads an "error" value that is a string or {"message":…}.
func apiMessage(v json.RawMessage) string {
	if len(v) == 0 || string(v) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		return llm.Excerpt(s)
	}
	var o struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(v, &o) == nil && o.Message != "" {
		return llm.Excerpt(o.Message)
	}
	return llm.Excerpt(string(v))
}

func (c *Client) fail(kind llm.Kind, status int, msg string, err error) *llm.Error {
	return c.ep.Fail(kind, status, msg, err)
}
