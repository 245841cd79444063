package llm

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

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
