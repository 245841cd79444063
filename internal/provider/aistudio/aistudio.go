// Package aistudio is diffpal's transport for the Gemini API (Google AI
// Studio): POST {base}/models/{model}:generateContent with the key in
// x-goog-api-key, the instructions as systemInstruction, the conversation
// as contents, and structured output through generationConfig
// (responseMimeType application/json and responseSchema, the answer
// schema converted to the API's OpenAPI subset). It implements
// llm.Client.
//
// Failures are classified like the other HTTP transports (llm.ClassifyStatus,
// Retry-After honoured); a candidate stopped for safety or recitation, a
// prompt blocked, or text that is not JSON is Malformed, so the repair
// loop asks again.
package aistudio

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/diffpalhq/diffpal/internal/provider/llm"
)

// ProviderName is what Name returns and what errors carry as Provider.
const ProviderName = "aistudio"

// DefaultBaseURL is the Gemini API root.
const DefaultBaseURL = "https://generativelanguage.googleapis.com/v1beta"

// APIKeyEnv holds the key; BaseURLEnv overrides the API root (tests,
// gateways).
const (
	APIKeyEnv  = "GEMINI_API_KEY"
	BaseURLEnv = "GEMINI_BASE_URL"
)

// DefaultTimeout bounds one call when Config.Timeout is zero.
const DefaultTimeout = 5 * time.Minute

// Config configures a Client.
type Config struct {
	// BaseURL is the API root; empty means DefaultBaseURL.
	BaseURL string
	// APIKey is sent in x-goog-api-key; never logged.
	APIKey string
	// Model is the model name, e.g. gemini-2.5-flash (required).
	Model      string
	HTTPClient *http.Client
	// Timeout bounds one call; 0 means DefaultTimeout, negative means
	// only the caller's context bounds it.
	Timeout   time.Duration
	UserAgent string
}

// Client is an llm.Client for the Gemini API. It is safe for concurrent
// use.
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
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, fmt.Errorf("%s: no model configured", ProviderName)
	}
	ep, err := llm.NewHTTPEndpoint(ProviderName, cfg.BaseURL, "/models/"+url.PathEscape(cfg.Model)+":generateContent", cfg.HTTPClient, cfg.Timeout, cfg.UserAgent, cfg.APIKey)
	if err != nil {
		return nil, err
	}
	return &Client{cfg: cfg, ep: ep}, nil
}

// Name implements llm.Client.
func (c *Client) Name() string { return ProviderName }

type part struct {
	Text string `json:"text"`
}

type content struct {
	Role  string `json:"role,omitempty"`
	Parts []part `json:"parts"`
}

type generationConfig struct {
	ResponseMimeType string         `json:"responseMimeType"`
	ResponseSchema   map[string]any `json:"responseSchema,omitempty"`
	MaxOutputTokens  int            `json:"maxOutputTokens,omitempty"`
}

type generateRequest struct {
	SystemInstruction *content         `json:"systemInstruction,omitempty"`
	Contents          []content        `json:"contents"`
	GenerationConfig  generationConfig `json:"generationConfig"`
}

type generateResponse struct {
	Candidates []struct {
		Content      content `json:"content"`
		FinishReason string  `json:"finishReason"`
	} `json:"candidates"`
	PromptFeedback *struct {
		BlockReason string `json:"blockReason"`
	} `json:"promptFeedback"`
	UsageMetadata *struct {
		PromptTokenCount        int64 `json:"promptTokenCount"`
		CandidatesTokenCount    int64 `json:"candidatesTokenCount"`
		CachedContentTokenCount int64 `json:"cachedContentTokenCount"`
	} `json:"usageMetadata"`
	ModelVersion string `json:"modelVersion"`
}

// Body renders the request JSON (exported for tests of the wire format).
func (c *Client) Body(req llm.Request) ([]byte, error) {
	gr := generateRequest{GenerationConfig: generationConfig{ResponseMimeType: "application/json", MaxOutputTokens: req.MaxTokens}}
	if s := strings.TrimSpace(req.System); s != "" {
		gr.SystemInstruction = &content{Parts: []part{{Text: req.System}}}
	}
	for _, m := range req.Messages {
		role := "user"
		if m.Role == "assistant" {
			role = "model"
		}
		gr.Contents = append(gr.Contents, content{Role: role, Parts: []part{{Text: m.Content}}})
	}
	if len(req.Schema) > 0 {
		var s any
		if err := json.Unmarshal(req.Schema, &s); err != nil {
			return nil, fmt.Errorf("answer schema: %w", err)
		}
		m, _ := OpenAPISchema(s).(map[string]any)
		gr.GenerationConfig.ResponseSchema = m
	}
	return json.Marshal(gr)
}

// OpenAPISchema converts a JSON Schema to the subset responseSchema
// accepts: a ["T", "null"] type becomes type T with nullable, and
// keywords it does not know (additionalProperties, $schema, …) are
// dropped.
func OpenAPISchema(v any) any {
	switch s := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, x := range s {
			switch k {
			case "type":
				if ts, ok := x.([]any); ok {
					for _, t := range ts {
						if t == "null" {
							out["nullable"] = true
						} else {
							out["type"] = t
						}
					}
				} else {
					out["type"] = x
				}
			case "properties":
				props := map[string]any{}
				if pm, ok := x.(map[string]any); ok {
					for name, p := range pm {
						props[name] = OpenAPISchema(p)
					}
				}
				out["properties"] = props
			case "items":
				out["items"] = OpenAPISchema(x)
			case "description", "enum", "required", "format", "minimum", "maximum", "minItems", "maxItems", "nullable", "propertyOrdering":
				out[k] = x
			}
		}
		return out
	case []any:
		out := make([]any, len(s))
		for i, x := range s {
			out[i] = OpenAPISchema(x)
		}
		return out
	}
	return v
}

// Complete implements llm.Client.
func (c *Client) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	if c.cfg.APIKey == "" {
		return llm.Response{}, c.ep.Fail(llm.Auth, 0, "no API key (set "+APIKeyEnv+")", nil)
	}
	body, err := c.Body(req)
	if err != nil {
		return llm.Response{}, c.ep.Fail(llm.Invalid, 0, err.Error(), err)
	}
	h := http.Header{}
	h.Set("x-goog-api-key", c.cfg.APIKey)
	resp, raw, err := c.ep.Post(ctx, body, h)
	if err != nil {
		return llm.Response{}, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return llm.Response{}, c.ep.StatusError(resp, llm.ClassifyStatus(resp.StatusCode), errorMessage(raw), "X-Request-Id")
	}
	var gr generateResponse
	if err := json.Unmarshal(raw, &gr); err != nil {
		return llm.Response{}, c.ep.Fail(llm.Invalid, resp.StatusCode, "response is not a generateContent response: "+llm.Excerpt(string(raw)), err)
	}
	out := llm.Response{Model: gr.ModelVersion}
	if out.Model == "" {
		out.Model = c.cfg.Model
	}
	if u := gr.UsageMetadata; u != nil {
		out.Usage = llm.Usage{InputTokens: u.PromptTokenCount, OutputTokens: u.CandidatesTokenCount, CachedInputTokens: u.CachedContentTokenCount}
	}
	if len(gr.Candidates) == 0 {
		msg := "response has no candidates"
		if gr.PromptFeedback != nil && gr.PromptFeedback.BlockReason != "" {
			msg = "the prompt was blocked (" + gr.PromptFeedback.BlockReason + ")"
		}
		return out, c.ep.Fail(llm.Malformed, resp.StatusCode, msg, nil)
	}
	cand := gr.Candidates[0]
	var text strings.Builder
	for _, p := range cand.Content.Parts {
		text.WriteString(p.Text)
	}
	js, ok := llm.ExtractJSON([]byte(text.String()))
	if !ok {
		msg := "model output is not valid JSON: " + llm.Excerpt(text.String())
		switch cand.FinishReason {
		case "MAX_TOKENS":
			msg = "model output was cut off at the token limit (finishReason=MAX_TOKENS)"
		case "SAFETY", "RECITATION", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII":
			msg = "model output was withheld (finishReason=" + cand.FinishReason + ")"
		}
		return out, c.ep.Fail(llm.Malformed, resp.StatusCode, msg, nil)
	}
	out.JSON = js
	return out, nil
}

// errorMessage reads the API's error body: {"error":{"code","message","status"}}.
func errorMessage(raw []byte) string {
	var b struct {
		Error struct {
			Message string `json:"message"`
			Status  string `json:"status"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &b) != nil || b.Error.Message == "" {
		return llm.Excerpt(string(raw))
	}
	msg := b.Error.Message
	if b.Error.Status != "" {
		msg = b.Error.Status + ": " + msg
	}
	return llm.Excerpt(msg)
}
