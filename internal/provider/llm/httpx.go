package llm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/diffpalhq/diffpal/internal/buildinfo"
	"github.com/diffpalhq/diffpal/internal/clip"
)

// The helpers below are shared by the HTTP transports (provider/openai,
// provider/anthropic), which classify and report failures the same way.

// ClassifyStatus maps an HTTP status to a Kind: 401/403 are Auth;
// 408, 409, 429 and 5xx Transient; everything else Invalid.
func ClassifyStatus(code int) Kind {
	switch {
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return Auth
	case code == http.StatusRequestTimeout || code == http.StatusConflict ||
		code == http.StatusTooManyRequests || code >= 500:
		return Transient
	}
	return Invalid
}

// maxRetryAfterSecs bounds what is believed of a Retry-After value (a
// week); larger or non-finite values are ignored.
const maxRetryAfterSecs = 7 * 24 * 3600

// RetryAfter reads retry-after-ms (milliseconds) and then Retry-After
// (delay-seconds or an HTTP date). Zero when absent, unparseable or in the
// past.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < maxRetryAfterSecs*1000 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs > 0 && secs < maxRetryAfterSecs {
			return time.Duration(secs * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// Excerpt trims s to at most 300 bytes (on a rune boundary) for messages.
func Excerpt(s string) string {
	return clip.Text(strings.TrimSpace(s), 300)
}

// RedactKey removes key from s.
func RedactKey(s, key string) string {
	if len(key) < 4 {
		return s
	}
	return strings.ReplaceAll(s, key, "[REDACTED]")
}

// RedactURL hides userinfo and query values (except api-version, which
// says nothing secret and helps debugging) in a URL meant for messages.
func RedactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparseable URL)"
	}
	if u.User != nil {
		u.User = url.User("REDACTED")
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			if k != "api-version" {
				q.Set(k, "REDACTED")
			}
		}
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// MaxResponseBody caps how much of a provider's response body is read.
const MaxResponseBody = 16 << 20

// HTTPEndpoint is what the HTTP transports share whatever their wire
// format: where requests go and with which client, user agent and per-call
// timeout, and how failures to get an answer are classified and worded
// (always with the key redacted). The transports add their headers, body
// and the parsing of their responses and error bodies.
type HTTPEndpoint struct {
	Provider  string
	URL       *url.URL
	Client    *http.Client
	Timeout   time.Duration // bounds one call; <= 0: only the caller's context
	UserAgent string
	Key       string           // redacted from every message
	Now       func() time.Time // for Retry-After dates; tests replace it
}

// NewHTTPEndpoint checks that baseURL is an absolute http(s) URL and
// appends path to it. hc nil means a client with no overall timeout (the
// per-call timeout applies through the request context); userAgent ""
// means "diffpal/VERSION".
func NewHTTPEndpoint(provider, baseURL, path string, hc *http.Client, timeout time.Duration, userAgent, key string) (*HTTPEndpoint, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s: base URL %q: want an absolute http(s) URL", provider, RedactURL(baseURL))
	}
	u.Path = strings.TrimRight(u.Path, "/") + path
	u.RawPath = ""
	u.Fragment = ""
	if hc == nil {
		hc = &http.Client{}
	}
	if userAgent == "" {
		userAgent = "diffpal/" + buildinfo.Get().Version + " (+https://github.com/diffpalhq/diffpal)"
	}
	return &HTTPEndpoint{Provider: provider, URL: u, Client: hc, Timeout: timeout, UserAgent: userAgent, Key: key, Now: time.Now}, nil
}

// Post sends body as JSON with header added and returns the response and
// its body whatever the status; the caller checks the status, since error
// bodies differ by provider. Failing to get a response at all, or one over
// MaxResponseBody, is a classified *Error.
func (e *HTTPEndpoint) Post(ctx context.Context, body []byte, header http.Header) (*http.Response, []byte, error) {
	callCtx := ctx
	if e.Timeout > 0 {
		var cancel context.CancelFunc
		callCtx, cancel = context.WithTimeout(ctx, e.Timeout)
		defer cancel()
	}
	hreq, err := http.NewRequestWithContext(callCtx, http.MethodPost, e.URL.String(), bytes.NewReader(body))
	if err != nil {
		return nil, nil, e.Fail(Invalid, 0, "building request: "+err.Error(), err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	hreq.Header.Set("User-Agent", e.UserAgent)
	for k, vs := range header {
		hreq.Header[k] = vs
	}
	resp, err := e.Client.Do(hreq)
	if err != nil {
		return nil, nil, e.transportError(ctx, callCtx, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBody+1))
	if err != nil {
		return nil, nil, e.transportError(ctx, callCtx, err)
	}
	if len(raw) > MaxResponseBody {
		return nil, nil, e.Fail(Invalid, resp.StatusCode, fmt.Sprintf("response body exceeds %d bytes", MaxResponseBody), nil)
	}
	return resp, raw, nil
}

// StatusError reports a non-2xx response as kind, with msg taken from the
// body by the caller (the status text when empty), the request id from
// idHeader, and, when kind is Transient, the server's Retry-After.
func (e *HTTPEndpoint) StatusError(resp *http.Response, kind Kind, msg, idHeader string) *Error {
	code := resp.StatusCode
	if msg == "" {
		msg = http.StatusText(code)
		if msg == "" {
			msg = "unexpected status"
		}
	}
	if id := resp.Header.Get(idHeader); id != "" {
		msg += " (request id " + id + ")"
	}
	err := e.Fail(kind, code, msg, nil)
	if kind == Transient {
		err.RetryAfter = RetryAfter(resp.Header, e.Now())
	}
	return err
}

// transportError classifies a failure to get a response: the caller's
// context ending, the per-call timeout and connection errors are all
// Transient (the caller's retry loop stops on its own context anyway).
func (e *HTTPEndpoint) transportError(parent, call context.Context, err error) *Error {
	switch {
	case parent.Err() != nil:
		return e.Fail(Transient, 0, "request cancelled: "+parent.Err().Error(), parent.Err())
	case call.Err() != nil:
		return e.Fail(Transient, 0, fmt.Sprintf("request timed out after %s", e.Timeout), context.DeadlineExceeded)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // drop the method and URL
	}
	return e.Fail(Transient, 0, "connection error: "+err.Error(), err)
}

// Fail builds a classified error with the key redacted from msg.
func (e *HTTPEndpoint) Fail(kind Kind, status int, msg string, err error) *Error {
	return &Error{Kind: kind, Status: status, Provider: e.Provider, Msg: RedactKey(msg, e.Key), Err: err}
}
