package mcpserver

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTPPath is where the streamable HTTP endpoint is served.
const HTTPPath = "/mcp"

// HTTPOptions configure NewHTTPHandler.
type HTTPOptions struct {
	// Token, when non-empty, is the bearer token every request must carry
	// ("Authorization: Bearer <token>"); others get 401.
	Token string
	// MaxBodyBytes bounds one request body (413 beyond it); 0 selects
	// DefaultMaxRequestBytes, and a negative value is an error.
	MaxBodyBytes int64
	// Logger receives transport diagnostics; nil discards them.
	Logger *slog.Logger
}

// NewHTTPHandler serves srv as MCP streamable HTTP at HTTPPath, stateless:
// no Mcp-Session-Id is issued or honoured and every request is answered on
// its own, so any replica sharing the session store can answer any call
// (run_id is the only handle). Protection, outermost first:
//   - cross-origin: browser requests from another origin are refused (403),
//     using Sec-Fetch-Site or, failing that, Origin against Host;
//   - bearer token, when opts.Token is set (401, constant-time compare);
//   - DNS rebinding: a request that reached a loopback address with a
//     non-loopback Host header is refused (403; the SDK's localhost
//     protection, left on);
//   - request body limit (413).
func NewHTTPHandler(srv *mcp.Server, opts HTTPOptions) (http.Handler, error) {
	if srv == nil {
		return nil, errors.New("mcpserver: nil server")
	}
	limit := opts.MaxBodyBytes
	if limit < 0 {
		return nil, fmt.Errorf("mcpserver: negative MaxBodyBytes %d", limit)
	}
	if limit == 0 {
		limit = DefaultMaxRequestBytes
	}
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{
			Stateless:           true,
			Logger:              opts.Logger,
			MaxRequestBodyBytes: limit,
		})
	if opts.Token != "" {
		h = requireBearer(opts.Token, h)
	}
	h = http.NewCrossOriginProtection().Handler(h)
	mux := http.NewServeMux()
	mux.Handle(HTTPPath, h)
	return mux, nil
}

// requireBearer admits requests carrying the token. Both sides are hashed
// first so the comparison takes the same time whatever the lengths.
func requireBearer(token string, next http.Handler) http.Handler {
	want := sha256.Sum256([]byte(token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, cred, ok := strings.Cut(r.Header.Get("Authorization"), " ")
		got := sha256.Sum256([]byte(strings.TrimSpace(cred)))
		if !ok || !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="diffpal mcp"`)
			http.Error(w, "unauthorized: missing or invalid bearer token", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// IsLoopbackAddr reports whether a HOST:PORT listen address binds only the
// loopback interface. An empty host, an unspecified address (0.0.0.0, ::)
// and any host name other than "localhost" count as non-loopback: host
// names are not resolved (no network at start-up), so they get the
// stricter treatment. The port must be numeric.
func IsLoopbackAddr(addr string) (bool, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("want HOST:PORT (for example 127.0.0.1:8080): %v", err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return false, fmt.Errorf("port %q is not a number from 0 to 65535", port)
	}
	if strings.EqualFold(host, "localhost") {
		return true, nil
	}
	host, _, _ = strings.Cut(host, "%") // zone of a link-local IPv6 address
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
}

// ServeHTTP serves h on ln until ctx is done, then shuts down gracefully
// (in-flight calls get a few seconds to finish).
func ServeHTTP(ctx context.Context, ln net.Listener, h http.Handler) error {
	hs := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := hs.Shutdown(sctx); err != nil {
			hs.Close()
		}
		<-errc
		return ctx.Err()
	}
}
