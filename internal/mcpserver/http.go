package mcpserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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
	// Ready, when set, is the readiness check behind ReadyPath: the
	// session store answering (a PostgreSQL ping). It is called with a
	// context bounded by ReadyTimeout. Nil means always ready.
	Ready func(context.Context) error
	// ReadyLogger, when set, is told when readiness changes (at Warn when
	// it is lost, with the cause; at Info when it is back). Probes
	// themselves are not logged.
	ReadyLogger *slog.Logger
}

// Health endpoints, served beside HTTPPath without authentication: they
// answer only "ok" or "unavailable" and reveal nothing else.
const (
	// HealthPath is liveness: 200 whenever the process is serving.
	HealthPath = "/healthz"
	// ReadyPath is readiness: 200 when the session store answered within
	// ReadyTimeout, else 503.
	ReadyPath = "/readyz"
	// ReadyTimeout bounds one readiness check.
	ReadyTimeout = 2 * time.Second
)

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
//
// A call of a method the server does not have is answered as over stdio:
// a JSON-RPC error response (-32601, HTTP 200), not the SDK's plain-text
// HTTP 400; an unknown notification is accepted (202) and ignored.
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
	h = methodNotFound(h)
	if opts.Token != "" {
		h = requireBearer(opts.Token, h)
	}
	h = http.NewCrossOriginProtection().Handler(h)
	mux := http.NewServeMux()
	mux.Handle(HTTPPath, h)
	mux.Handle(HealthPath, probe(func(context.Context) error { return nil }, nil))
	mux.Handle(ReadyPath, probe(opts.Ready, opts.ReadyLogger))
	return mux, nil
}

// probe answers GET and HEAD with 200 "ok" when check passes within
// ReadyTimeout and 503 "unavailable" otherwise; the cause goes to the log
// (on a change of state only), never into the answer.
func probe(check func(context.Context) error, logger *slog.Logger) http.Handler {
	var mu sync.Mutex
	lastOK := true
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		var err error
		if check != nil {
			ctx, cancel := context.WithTimeout(r.Context(), ReadyTimeout)
			err = check(ctx)
			cancel()
		}
		if logger != nil {
			mu.Lock()
			if ok := err == nil; ok != lastOK {
				lastOK = ok
				if ok {
					logger.Info("ready: the session store answers again")
				} else {
					logger.Warn("not ready: the session store does not answer", "err", err)
				}
			}
			mu.Unlock()
		}
		if err != nil {
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
	})
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

// DefaultShutdownTimeout bounds how long a graceful shutdown waits for
// in-flight calls.
const DefaultShutdownTimeout = 30 * time.Second

// ServeOptions configure Serve.
type ServeOptions struct {
	// ShutdownTimeout bounds the wait for in-flight calls once ctx is
	// done (0: DefaultShutdownTimeout); calls still running then are cut.
	ShutdownTimeout time.Duration
	// Logger, when set, is told when shutdown starts and ends.
	Logger *slog.Logger
}

// ServeHTTP is Serve with the default options.
func ServeHTTP(ctx context.Context, ln net.Listener, h http.Handler) error {
	return Serve(ctx, ln, h, ServeOptions{})
}

// Serve serves h on ln until ctx is done (SIGTERM or SIGINT, in the
// command), then shuts down gracefully: the listener closes at once (no new
// connections; idle keep-alive connections are closed), and in-flight calls
// run to completion, their contexts not cancelled, for up to
// ShutdownTimeout. It returns ctx.Err() after a shutdown, or the serve
// error.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, opts ServeOptions) error {
	timeout := opts.ShutdownTimeout
	if timeout <= 0 {
		timeout = DefaultShutdownTimeout
	}
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
		if opts.Logger != nil {
			opts.Logger.Info("shutting down: no new connections; finishing in-flight calls", "timeout", timeout.String())
		}
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		defer cancel()
		err := hs.Shutdown(sctx)
		if err != nil {
			hs.Close()
		}
		<-errc
		if opts.Logger != nil {
			if err != nil {
				opts.Logger.Warn("shutdown: in-flight calls cut off", "err", err)
			} else {
				opts.Logger.Info("shutdown complete: every in-flight call answered")
			}
		}
		return ctx.Err()
	}
}

// notHandledText starts the SDK's plain-text answer to a POST whose
// JSON-RPC method no handler serves (jsonrpc2.ErrNotHandled, from its
// pre-dispatch check): "JSON RPC not handled: "x" unsupported".
const notHandledText = "JSON RPC not handled"

// methodNotFound turns the SDK's HTTP 400 for an unknown method into what
// the stdio transport answers: a JSON-RPC error response with code -32601
// for a call (HTTP 200, application/json), nothing for a notification
// (202). Only that one answer is rewritten; every other response, streamed
// or not, passes through untouched. The request body is recorded as the
// SDK reads it (it is bounded by the SDK's body limit), so the call's id can
// be echoed.
func methodNotFound(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		body := &recordingBody{ReadCloser: r.Body}
		r.Body = body
		cw := &catch400{ResponseWriter: w}
		next.ServeHTTP(cw, r)
		if !cw.held {
			return
		}
		if bytes.HasPrefix(cw.buf.Bytes(), []byte(notHandledText)) {
			if id, method, ok := singleRequest(body.buf.Bytes()); ok {
				h := w.Header()
				h.Del("X-Content-Type-Options")
				h.Del("Content-Length")
				if id == nil {
					w.WriteHeader(http.StatusAccepted)
					return
				}
				resp, err := json.Marshal(struct {
					JSONRPC string          `json:"jsonrpc"`
					ID      json.RawMessage `json:"id"`
					Error   jsonrpc.Error   `json:"error"`
				}{"2.0", id, jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("method not found: %q", method)}})
				if err == nil {
					h.Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusOK)
					_, _ = w.Write(resp)
					return
				}
			}
		}
		w.WriteHeader(cw.status)
		_, _ = w.Write(cw.buf.Bytes())
	})
}

// singleRequest reads a body holding one JSON-RPC request and returns its
// raw id (nil for a notification) and method. Batches and anything else
// are not ok.
func singleRequest(body []byte) (id json.RawMessage, method string, ok bool) {
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method *string         `json:"method"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.Method == nil {
		return nil, "", false
	}
	if len(msg.ID) > 0 && string(msg.ID) != "null" {
		switch msg.ID[0] {
		case '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		default:
			return nil, "", false
		}
		return msg.ID, *msg.Method, true
	}
	return nil, *msg.Method, true
}

// recordingBody keeps a copy of what is read from a request body.
type recordingBody struct {
	io.ReadCloser
	buf bytes.Buffer
}

func (b *recordingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.buf.Write(p[:n])
	return n, err
}

// maxHeldBody bounds how much of a 400 answer catch400 holds back; the
// SDK's plain-text errors are one short line.
const maxHeldBody = 4 << 10

// catch400 holds back an HTTP 400 answer so methodNotFound can replace it;
// any other status is written through at once, and so is a 400 whose body
// outgrows maxHeldBody.
type catch400 struct {
	http.ResponseWriter
	status int
	held   bool
	wrote  bool
	buf    bytes.Buffer
}

func (c *catch400) WriteHeader(code int) {
	if c.wrote || c.held {
		return
	}
	if code == http.StatusBadRequest {
		c.held, c.status = true, code
		return
	}
	c.wrote = true
	c.ResponseWriter.WriteHeader(code)
}

func (c *catch400) Write(p []byte) (int, error) {
	if !c.wrote && !c.held {
		c.WriteHeader(http.StatusOK)
	}
	if !c.held {
		return c.ResponseWriter.Write(p)
	}
	if c.buf.Len()+len(p) <= maxHeldBody {
		return c.buf.Write(p)
	}
	// Not the short error being looked for: release it.
	c.held, c.wrote = false, true
	c.ResponseWriter.WriteHeader(c.status)
	if _, err := c.ResponseWriter.Write(c.buf.Bytes()); err != nil {
		return 0, err
	}
	return c.ResponseWriter.Write(p)
}

// Flush forwards to the underlying writer unless a 400 is being held.
func (c *catch400) Flush() {
	if c.held {
		return
	}
	if !c.wrote {
		c.WriteHeader(http.StatusOK)
	}
	_ = http.NewResponseController(c.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (c *catch400) Unwrap() http.ResponseWriter { return c.ResponseWriter }
