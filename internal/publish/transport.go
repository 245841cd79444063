package publish

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/diffpalhq/diffpal/internal/clip"
	"github.com/diffpalhq/diffpal/internal/secrets"
	"github.com/diffpalhq/diffpal/internal/textsafe"
)

// Transport retries what a host asks to be retried and nothing else:
// primary and secondary rate limits (429, or 403 with Retry-After or an
// exhausted x-ratelimit-remaining, waiting until Retry-After or
// x-ratelimit-reset) for every method, and 502/503/504 for requests that
// are safe to repeat (not POST: a 502 on a comment may have posted it). A
// wait longer than MaxWait is not slept: the response goes back to the
// caller, whose error names the call.
type Transport struct {
	Base       http.RoundTripper
	MaxRetries int           // default 4
	MaxWait    time.Duration // default 90 s
	// Sleep waits (tests replace it); it returns the context's error when
	// cancelled.
	Sleep func(ctx context.Context, d time.Duration) error
	Now   func() time.Time
	// Log gets one line per wait.
	Log io.Writer
}

func (t *Transport) base() http.RoundTripper {
	if t.Base != nil {
		return t.Base
	}
	return http.DefaultTransport
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	retries := t.MaxRetries
	if retries == 0 {
		retries = 4
	}
	maxWait := t.MaxWait
	if maxWait == 0 {
		maxWait = 90 * time.Second
	}
	sleep := t.Sleep
	if sleep == nil {
		sleep = sleepCtx
	}
	now := t.Now
	if now == nil {
		now = time.Now
	}
	for attempt := 0; ; attempt++ {
		r := req
		if attempt > 0 {
			if req.Body != nil && req.GetBody == nil {
				return nil, fmt.Errorf("%s %s: cannot retry a request whose body cannot be replayed", req.Method, req.URL.Path)
			}
			r = req.Clone(req.Context())
			if req.GetBody != nil {
				b, err := req.GetBody()
				if err != nil {
					return nil, err
				}
				r.Body = b
			}
		}
		resp, err := t.base().RoundTrip(r)
		if err != nil || attempt >= retries {
			return resp, err
		}
		wait, why := retryWait(req.Method, resp, attempt, now())
		if why == "" && resp.StatusCode == http.StatusForbidden {
			// GitHub's secondary rate limit may come without Retry-After:
			// its docs say to wait at least a minute then.
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
			resp.Body.Close()
			resp.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(bytes.ToLower(body), []byte("secondary rate limit")) {
				wait, why = time.Minute, "403 secondary rate limit without Retry-After"
			}
		}
		if why == "" {
			return resp, nil
		}
		if wait > maxWait {
			return resp, nil
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
		if t.Log != nil {
			fmt.Fprintf(t.Log, "publish: %s %s: %s; retrying in %s\n", req.Method, req.URL.Path, why, wait.Round(time.Second))
		}
		if err := sleep(req.Context(), wait); err != nil {
			return nil, err
		}
	}
}

// retryWait says how long to wait before retrying, and why; why is empty
// when the response is final.
func retryWait(method string, resp *http.Response, attempt int, now time.Time) (time.Duration, string) {
	h := resp.Header
	backoff := time.Duration(1<<attempt) * time.Second
	after := func() (time.Duration, bool) {
		if v := h.Get("Retry-After"); v != "" {
			if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && s >= 0 {
				return time.Duration(s) * time.Second, true
			}
			if at, err := http.ParseTime(v); err == nil {
				return max(at.Sub(now), 0), true
			}
		}
		return 0, false
	}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusForbidden:
		if d, ok := after(); ok {
			return d, fmt.Sprintf("%d with Retry-After (rate limit)", resp.StatusCode)
		}
		if h.Get("X-Ratelimit-Remaining") == "0" {
			if reset, err := strconv.ParseInt(h.Get("X-Ratelimit-Reset"), 10, 64); err == nil {
				return max(time.Unix(reset, 0).Sub(now), 0) + time.Second, fmt.Sprintf("%d, rate limit exhausted until x-ratelimit-reset", resp.StatusCode)
			}
			return backoff, fmt.Sprintf("%d, rate limit exhausted", resp.StatusCode)
		}
		if resp.StatusCode == http.StatusTooManyRequests {
			return backoff, "429 Too Many Requests"
		}
	case resp.StatusCode == http.StatusBadGateway || resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusGatewayTimeout:
		if method == http.MethodPost {
			return 0, ""
		}
		if d, ok := after(); ok {
			return d, fmt.Sprintf("%d with Retry-After", resp.StatusCode)
		}
		return backoff, strconv.Itoa(resp.StatusCode)
	}
	return 0, ""
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// APIError is a host's refusal: the call (method and path), the status and
// a clipped, redacted, visible excerpt of the body.
type APIError struct {
	Call   string
	Status int
	Body   string
}

func (e *APIError) Error() string {
	msg := fmt.Sprintf("%s: %d %s", e.Call, e.Status, http.StatusText(e.Status))
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}

// StatusOf returns the HTTP status of an *APIError in err's chain, 0 when
// there is none.
func StatusOf(err error) int {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Status
	}
	return 0
}

// maxErrBody bounds the body read for an error; errExcerpt bounds what is
// shown of it.
const (
	maxErrBody = 64 << 10
	errExcerpt = 300
)

// NewAPIError builds the error for a refused call. The token is removed
// from the body should a host echo it, then the secret detector runs and
// the result is clipped to one visible line.
func NewAPIError(method, path string, status int, body []byte, tok Secret) *APIError {
	s := string(body)
	if !tok.Empty() {
		s = strings.ReplaceAll(s, tok.Reveal(), "[REDACTED]")
	}
	s = strings.Join(strings.Fields(secrets.Redact(s)), " ")
	return &APIError{Call: method + " " + path, Status: status, Body: textsafe.Visible(clip.Text(s, errExcerpt))}
}

// JSONClient is a small JSON-over-HTTP client for hosts without a library
// (Azure) and for GitHub's GraphQL: bounded reads, errors as APIError, and
// Link pagination that stays on the API's scheme and host.
type JSONClient struct {
	HTTP      *http.Client
	Token     Secret
	Auth      func(*http.Request)
	UserAgent string
	// MaxBody bounds a response body (default 32 MiB).
	MaxBody int64
}

// Do sends in (JSON, unless nil) and decodes the response into out (unless
// nil). A status of 300 or more is an *APIError.
func (c *JSONClient) Do(ctx context.Context, method, rawURL string, in, out any) (*http.Response, error) {
	var body io.Reader
	var data []byte
	if in != nil {
		var err error
		if data, err = json.Marshal(in); err != nil {
			return nil, err
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, rawURL, body)
	if err != nil {
		return nil, err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.UserAgent != "" {
		req.Header.Set("User-Agent", c.UserAgent)
	}
	if c.Auth != nil {
		c.Auth(req)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		// net/http's errors carry the URL, never headers: no token here.
		return nil, fmt.Errorf("%s %s: %w", method, req.URL.Path, stripURL(err))
	}
	defer resp.Body.Close()
	limit := c.MaxBody
	if limit == 0 {
		limit = 32 << 20
	}
	if resp.StatusCode >= 300 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrBody))
		return resp, NewAPIError(method, req.URL.Path, resp.StatusCode, b, c.Token)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return resp, fmt.Errorf("%s %s: reading the response: %w", method, req.URL.Path, err)
	}
	if int64(len(b)) > limit {
		return resp, fmt.Errorf("%s %s: response larger than %d MiB", method, req.URL.Path, limit>>20)
	}
	if out != nil && len(bytes.TrimSpace(b)) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			return resp, fmt.Errorf("%s %s: response is not the expected JSON: %v", method, req.URL.Path, err)
		}
	}
	return resp, nil
}

// stripURL drops the query of a *url.Error's URL (a host could put a token
// there).
func stripURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil {
			u.RawQuery, u.User = "", nil
			return &url.Error{Op: ue.Op, URL: u.String(), Err: ue.Err}
		}
	}
	return err
}

// NextLink returns the rel="next" URL of a Link header, "" when there is
// none. A next link to another scheme or host than base is refused: the
// token would follow it.
func NextLink(resp *http.Response, base string) (string, error) {
	for _, part := range strings.Split(resp.Header.Get("Link"), ",") {
		u, params, ok := strings.Cut(part, ";")
		if !ok || !strings.Contains(params, `rel="next"`) {
			continue
		}
		u = strings.Trim(strings.TrimSpace(u), "<>")
		next, err := url.Parse(u)
		if err != nil {
			return "", fmt.Errorf("pagination link %q: %v", clip.Text(u, 100), err)
		}
		b, err := url.Parse(base)
		if err != nil {
			return "", err
		}
		if next.Scheme != b.Scheme || next.Host != b.Host {
			return "", fmt.Errorf("pagination link to %s://%s refused: the API is %s://%s", next.Scheme, next.Host, b.Scheme, b.Host)
		}
		return next.String(), nil
	}
	return "", nil
}
