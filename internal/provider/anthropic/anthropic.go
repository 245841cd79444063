// Package anthropic is diffpal's transport for the Anthropic Messages API
// (POST {base}/v1/messages). It implements llm.Client with a small
// net/http client. The output contract is enforced with a single tool
// whose input_schema is the request's JSON Schema and a tool_choice that
// forces that tool; the tool_use block's input is the answer.
//
// Request.Reasoning is ignored: the API rejects extended thinking together
// with a forced tool_choice ("Thinking may not be enabled when
// tool_choice forces tool use"; only tool_choice auto/none allow
// thinking), and diffpal prefers the guaranteed structured answer over
// thinking. Retries, repair and caching belong to package llm.
//
// The API key is sent only in the x-api-key header and is redacted from
// every error message.
package anthropic

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
const ProviderName = "anthropic"

// DefaultBaseURL is the API root; "/v1/messages" is appended.
const DefaultBaseURL = "https://api.anthropic.com"

// APIKeyEnv is the variable the official SDKs, and FromEnv, read the key from.
const APIKeyEnv = "ANTHROPIC_API_KEY"

// APIVersion is the anthropic-version header value.
const APIVersion = "2023-06-01"

// DefaultMaxTokens is max_tokens when neither the request nor the config
// sets one (the API requires it).
const DefaultMaxTokens = 4096

// DefaultTimeout bounds one call when Config.Timeout is zero.
const DefaultTimeout = 5 * time.Minute

// toolDescription tells the model what the forced tool is for.
const toolDescription = "Submit your complete answer. The input must be the answer itself and must satisfy this tool's input schema."

// Config configures a Client.
type Config struct {
	// BaseURL is the API root, e.g. "https://api.anthropic.com" or a
	// gateway; "/v1/messages" is appended. Empty means DefaultBaseURL.
	BaseURL string
	// APIKey is sent as x-api-key. With the default base URL an empty key
	// fails fast with an Auth error; a gateway may need none. Never logged.
	APIKey string
	// Model is used when Request.Model is empty.
	Model string
	// MaxTokens is max_tokens when Request.MaxTokens is 0; 0 means
	// DefaultMaxTokens.
	MaxTokens int
	// HTTPClient defaults to a client with no overall timeout (the
	// per-call Timeout applies through the request context).
	HTTPClient *http.Client
	// Timeout bounds one call; 0 means DefaultTimeout, negative means
	// only the caller's context bounds it.
	Timeout time.Duration
	// UserAgent overrides the default "diffpal/VERSION".
	UserAgent string
}

// FromEnv returns a Config with APIKey from ANTHROPIC_API_KEY and BaseURL
// from ANTHROPIC_BASE_URL (empty means DefaultBaseURL), as the official
// SDKs read them. Callers fill in Model and the rest.
func FromEnv() Config {
	return Config{
		APIKey:  os.Getenv(APIKeyEnv),
		BaseURL: strings.TrimSpace(os.Getenv("ANTHROPIC_BASE_URL")),
	}
}

// Client is an llm.Client for the Messages API. It is safe for concurrent
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
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = DefaultMaxTokens
	}
	ep, err := llm.NewHTTPEndpoint(ProviderName, cfg.BaseURL, "/v1/messages", cfg.HTTPClient, cfg.Timeout, cfg.UserAgent, cfg.APIKey)
	if err != nil {
		return nil, err
	}
	return &Client{cfg: cfg, ep: ep}, nil
}

// Name implements llm.Client.
func (c *Client) Name() string { return ProviderName }

// Endpoint is the URL requests are posted to (for diagnostics).
func (c *Client) Endpoint() string { return llm.RedactURL(c.ep.URL.String()) }

type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type toolChoice struct {
	Type string `json:"type"`
	Name string `json:"name"`
}

type messagesRequest struct {
	Model      string     `json:"model"`
	MaxTokens  int        `json:"max_tokens"`
	System     string     `json:"system,omitempty"`
	Messages   []message  `json:"messages"`
	Tools      []tool     `json:"tools"`
	ToolChoice toolChoice `json:"tool_choice"`
}

type messagesResponse struct {
	Type    string `json:"type"`
	Model   string `json:"model"`
	Content []struct {
		Type  string          `json:"type"`
		Text  string          `json:"text"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	} `json:"content"`
	StopReason string `json:"stop_reason"`
	Usage      *struct {
		InputTokens              int64 `json:"input_tokens"`
		OutputTokens             int64 `json:"output_tokens"`
		CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	} `json:"usage"`
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

var nameBad = regexp.MustCompile(`[^a-zA-Z0-9_-]`)

// ToolName makes name acceptable as a tool name (letters, digits, '_' and
// '-', at most 64), defaulting to "answer".
func ToolName(name string) string {
	name = nameBad.ReplaceAllString(name, "_")
	if len(name) > 64 {
		name = name[:64]
	}
	if name == "" {
		name = "answer"
	}
	return name
}

// buildBody renders the request JSON.
func (c *Client) buildBody(req llm.Request, model, name string) ([]byte, error) {
	schema := json.RawMessage(`{"type":"object"}`)
	if len(bytes.TrimSpace(req.Schema)) > 0 {
		if !json.Valid(req.Schema) {
			return nil, errors.New("request schema is not valid JSON")
		}
		schema = req.Schema
	}
	msgs := make([]message, 0, len(req.Messages))
	for _, m := range req.Messages {
		role := m.Role
		if role == "" {
			role = "user"
		}
		msgs = append(msgs, message{Role: role, Content: m.Content})
	}
	if len(msgs) == 0 {
		return nil, errors.New("request has no messages")
	}
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = c.cfg.MaxTokens
	}
	return json.Marshal(messagesRequest{
		Model:      model,
		MaxTokens:  maxTokens,
		System:     req.System,
		Messages:   msgs,
		Tools:      []tool{{Name: name, Description: toolDescription, InputSchema: schema}},
		ToolChoice: toolChoice{Type: "tool", Name: name},
	})
}

// Complete implements llm.Client. Failures are *llm.Error. When the
// model's output is unusable (no tool call, truncated, refused) the error
// is Invalid and the returned Response still carries Usage and Model.
//
// Usage.InputTokens is the whole prompt (input_tokens plus
// cache_creation_input_tokens plus cache_read_input_tokens, since the API
// reports them separately) so that it means the same as OpenAI's
// prompt_tokens; CachedInputTokens is cache_read_input_tokens.
func (c *Client) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	model := req.Model
	if model == "" {
		model = c.cfg.Model
	}
	if model == "" {
		return llm.Response{}, c.fail(llm.Invalid, 0, "no model configured", nil)
	}
	if c.cfg.APIKey == "" && c.ep.URL.Host == "api.anthropic.com" {
		return llm.Response{}, c.fail(llm.Auth, 0, "no API key (set ANTHROPIC_API_KEY)", nil)
	}
	name := ToolName(req.SchemaName)
	body, err := c.buildBody(req, model, name)
	if err != nil {
		return llm.Response{}, c.fail(llm.Invalid, 0, err.Error(), err)
	}

	h := http.Header{}
	h.Set("Anthropic-Version", APIVersion)
	if c.cfg.APIKey != "" {
		h.Set("X-Api-Key", c.cfg.APIKey)
	}

	resp, raw, err := c.ep.Post(ctx, body, h)
	if err != nil {
		return llm.Response{}, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return llm.Response{}, c.statusError(resp, raw)
	}
	return c.parse(raw, model, name, resp.StatusCode)
}

func (c *Client) parse(raw []byte, model, name string, status int) (llm.Response, error) {
	var mr messagesResponse
	if err := json.Unmarshal(raw, &mr); err != nil {
		return llm.Response{}, c.fail(llm.Invalid, status, "response is not a message: "+llm.Excerpt(string(raw)), err)
	}
	if mr.Type == "error" && mr.Error != nil {
		// A 200 that carries an error (seen through some gateways).
		return llm.Response{}, c.fail(classifyErrorType(mr.Error.Type), status, llm.Excerpt(mr.Error.Message), nil)
	}
	out := llm.Response{Model: mr.Model}
	if out.Model == "" {
		out.Model = model
	}
	if u := mr.Usage; u != nil {
		out.Usage = llm.Usage{
			InputTokens:       u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens,
			OutputTokens:      u.OutputTokens,
			CachedInputTokens: u.CacheReadInputTokens,
		}
	}
	switch mr.StopReason {
	case "max_tokens":
		return out, c.fail(llm.Malformed, status, "model output was cut off at max_tokens before the answer was complete (stop_reason=max_tokens)", nil)
	case "refusal":
		return out, c.fail(llm.Malformed, status, "model refused"+textOf(mr), nil)
	}
	var input json.RawMessage
	for _, b := range mr.Content {
		if b.Type != "tool_use" {
			continue
		}
		if b.Name == name {
			input = b.Input
			break
		}
		if input == nil {
			input = b.Input
		}
	}
	if input == nil {
		return out, c.fail(llm.Malformed, status, fmt.Sprintf("response has no %s tool call (stop_reason=%s)%s", name, mr.StopReason, textOf(mr)), nil)
	}
	input = bytes.TrimSpace(input)
	if len(input) == 0 || input[0] != '{' || !json.Valid(input) {
		return out, c.fail(llm.Malformed, status, "tool input is not a JSON object: "+llm.Excerpt(string(input)), nil)
	}
	out.JSON = input
	return out, nil
}

// textOf returns ": TEXT" from the response's text blocks, for messages.
func textOf(mr messagesResponse) string {
	var b strings.Builder
	for _, c := range mr.Content {
		if c.Type == "text" && c.Text != "" {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(c.Text)
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return ": " + llm.Excerpt(b.String())
}

// statusError classifies a non-2xx response.
func (c *Client) statusError(resp *http.Response, raw []byte) error {
	return c.ep.StatusError(resp, llm.ClassifyStatus(resp.StatusCode), errorBody(raw), "Request-Id")
}

// classifyErrorType maps an Anthropic error type to a Kind.
func classifyErrorType(t string) llm.Kind {
	switch t {
	case "authentication_error", "permission_error":
		return llm.Auth
	case "rate_limit_error", "api_error", "overloaded_error", "timeout_error":
		return llm.Transient
	}
	return llm.Invalid
}

// errorBody extracts the message from {"type":"error","error":{"type",
// "message"}} (with the error type as a prefix), or an excerpt of a body
// that is not JSON (a proxy's HTML, say).
func errorBody(raw []byte) string {
	var b struct {
		Error json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(raw, &b); err != nil || len(b.Error) == 0 {
		return llm.Excerpt(string(raw))
	}
	var obj struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	}
	if json.Unmarshal(b.Error, &obj) == nil && obj.Message != "" {
		if obj.Type != "" {
			return obj.Type + ": " + llm.Excerpt(obj.Message)
		}
		return llm.Excerpt(obj.Message)
	}
	var s string
	if json.Unmarshal(b.Error, &s) == nil {
		return llm.Excerpt(s)
	}
	return llm.Excerpt(string(raw))
}

func (c *Client) fail(kind llm.Kind, status int, msg string, err error) *llm.Error {
	return c.ep.Fail(kind, status, msg, err)
}
