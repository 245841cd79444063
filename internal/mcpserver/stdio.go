package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// StdioOptions configure NewStdioTransport. Zero values select the
// defaults.
type StdioOptions struct {
	// MaxLineBytes bounds one input line (one JSON-RPC message, without its
	// newline); 0 selects mcp.DefaultMaxLineLength (16 MiB). A longer line
	// is discarded up to its newline and answered with an error; the
	// stream goes on.
	MaxLineBytes int
	// Logger receives one Warn line per rejected input line (its number,
	// size and reason, never its content); nil discards them.
	Logger *slog.Logger
}

// NewStdioTransport serves newline-delimited JSON-RPC on r and w, as the
// MCP stdio transport does, but with a line reader of its own in front of
// the SDK, so that bad input cannot end the server:
//
//   - every line is checked before the SDK sees it; one that is not a
//     single JSON-RPC 2.0 request or response is answered with a JSON-RPC
//     error (-32700 parse error for bad JSON, -32600 invalid request for
//     the rest: not an object, a batch, a wrong or missing "jsonrpc", an id
//     that is neither a string nor an integer, a non-string method, a
//     response without a result or error) and logged, and reading goes on.
//     The error carries the message's id when it has a readable one, and
//     null otherwise (JSON-RPC 2.0 §5). Batches are refused: MCP 2025-06-18
//     removed them. Blank lines are skipped;
//   - a line longer than MaxLineBytes is discarded, answered with -32600
//     (id null) and logged; the next line is read normally;
//   - at end of input the transport reports EOF to the SDK only after every
//     call it has handed over has been answered, so calls piped in just
//     before the input closes still get their responses.
//
// The SDK's own stdio transport ends the connection on the first line it
// cannot decode (and with it the process, and every session of the memory
// store), and drops the answers of calls still running at end of input.
func NewStdioTransport(r io.Reader, w io.Writer, opts StdioOptions) mcp.Transport {
	limit := opts.MaxLineBytes
	if limit <= 0 {
		limit = mcp.DefaultMaxLineLength
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &stdioTransport{r: r, w: w, limit: limit, logger: logger}
}

type stdioTransport struct {
	r      io.Reader
	w      io.Writer
	limit  int
	logger *slog.Logger
}

// Connect implements mcp.Transport. It starts the line reader.
func (t *stdioTransport) Connect(context.Context) (mcp.Connection, error) {
	c := &stdioConn{w: t.w, logger: t.logger, msgs: make(chan jsonrpc.Message), closed: make(chan struct{}),
		pending: map[jsonrpc.ID]struct{}{}, changed: make(chan struct{})}
	go c.readLines(t.r, t.limit)
	return c, nil
}

// stdioConn is the mcp.Connection of NewStdioTransport.
type stdioConn struct {
	wmu    sync.Mutex // one line at a time on w
	w      io.Writer
	logger *slog.Logger

	// msgs carries the valid messages of the line reader; it is closed at
	// the end of input, after readErr is set.
	msgs    chan jsonrpc.Message
	readErr error

	closeOnce sync.Once
	closed    chan struct{}

	// pending holds the ids of the calls handed to the SDK and not yet
	// answered; changed is closed (and replaced) whenever an id leaves it.
	mu      sync.Mutex
	pending map[jsonrpc.ID]struct{}
	changed chan struct{}
}

// SessionID implements mcp.Connection: stdio has no transport session.
func (c *stdioConn) SessionID() string { return "" }

// Read implements mcp.Connection.
func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.closed:
		return nil, io.EOF
	case msg, ok := <-c.msgs:
		if ok {
			if req, isReq := msg.(*jsonrpc.Request); isReq && req.IsCall() {
				c.mu.Lock()
				c.pending[req.ID] = struct{}{}
				c.mu.Unlock()
			}
			return msg, nil
		}
	}
	// End of input. Telling the SDK now would make it drop the answers of
	// calls still being handled, so first wait for them.
	c.waitAnswered(ctx)
	if c.readErr != nil && !errors.Is(c.readErr, io.EOF) {
		return nil, c.readErr
	}
	return nil, io.EOF
}

// waitAnswered returns once no call is pending, or the connection is
// closed, or ctx is done.
func (c *stdioConn) waitAnswered(ctx context.Context) {
	for {
		c.mu.Lock()
		n, changed := len(c.pending), c.changed
		c.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-changed:
		case <-c.closed:
			return
		case <-ctx.Done():
			return
		}
	}
}

// Write implements mcp.Connection.
func (c *stdioConn) Write(_ context.Context, msg jsonrpc.Message) error {
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("mcp stdio: encoding message: %w", err)
	}
	err = c.writeLine(data)
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		if _, ok := c.pending[resp.ID]; ok {
			delete(c.pending, resp.ID)
			close(c.changed)
			c.changed = make(chan struct{})
		}
		c.mu.Unlock()
	}
	return err
}

func (c *stdioConn) writeLine(data []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	line := make([]byte, 0, len(data)+1)
	line = append(append(line, data...), '\n')
	_, err := c.w.Write(line)
	return err
}

// Close implements mcp.Connection. The underlying reader and writer belong
// to the caller and stay open; a line reader blocked in a read of the
// input ends with the input.
func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

// readLines reads r line by line until it ends, hands valid messages to
// Read and answers invalid ones itself.
func (c *stdioConn) readLines(r io.Reader, limit int) {
	br := bufio.NewReaderSize(r, 64<<10)
	var (
		line      []byte
		oversized bool
		size      int
		n         int
	)
	for {
		chunk, err := br.ReadSlice('\n')
		size += len(chunk)
		if !oversized {
			if len(line)+len(chunk) > limit+2 { // +2: the line end itself
				oversized, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if size > 0 {
			n++
			if oversized || len(bytes.TrimRight(line, "\r\n")) > limit {
				c.reject(n, size, nil, jsonrpc.CodeInvalidRequest,
					fmt.Sprintf("invalid request: message is longer than %d bytes", limit))
			} else if !c.handleLine(n, bytes.TrimRight(line, "\r\n")) {
				return
			}
		}
		// A fresh buffer per line: decoded messages may keep slices of it.
		line, oversized, size = nil, false, 0
		if err != nil {
			c.readErr = err
			close(c.msgs)
			return
		}
	}
}

// handleLine validates one line and either passes its message on or
// answers it; it reports false once the connection is closed.
func (c *stdioConn) handleLine(n int, line []byte) bool {
	if len(bytes.TrimSpace(line)) == 0 {
		return true
	}
	msg, id, code, reason := decodeLine(line)
	if msg == nil {
		c.reject(n, len(line), id, code, reason)
		return true
	}
	select {
	case c.msgs <- msg:
		return true
	case <-c.closed:
		return false
	}
}

// reject answers an invalid line with a JSON-RPC error (id null when the
// line has no readable id) and logs it.
func (c *stdioConn) reject(n, size int, id json.RawMessage, code int64, reason string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	c.logger.Warn("diffpal mcp: rejected input line", "line", n, "bytes", size, "code", code, "reason", reason)
	resp, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: code, Message: reason}})
	if err != nil {
		return
	}
	select {
	case <-c.closed:
		return
	default:
	}
	if err := c.writeLine(resp); err != nil {
		c.logger.Warn("diffpal mcp: cannot answer a rejected input line", "line", n, "err", err)
	}
}

// maxExactID is the largest integer id that survives the SDK's decoding
// (JSON numbers become float64 there) unchanged.
const maxExactID = 1 << 53

// decodeLine checks that line is one JSON-RPC 2.0 request or response the
// SDK will accept and returns it decoded; otherwise it returns a nil
// message with the error to answer: its code, text and the id to address
// it to (nil: null).
func decodeLine(line []byte) (msg jsonrpc.Message, id json.RawMessage, code int64, reason string) {
	invalid := func(why string) (jsonrpc.Message, json.RawMessage, int64, string) {
		return nil, id, jsonrpc.CodeInvalidRequest, "invalid request: " + why
	}
	if !json.Valid(line) {
		return nil, nil, jsonrpc.CodeParseError, "parse error: the line is not one JSON value"
	}
	switch bytes.TrimLeft(line, " \t\r\n")[0] {
	case '{':
	case '[':
		return invalid("batches are not supported (MCP 2025-06-18); send one message per line")
	default:
		return invalid("a message must be a JSON object")
	}
	fields, ok := topMembers(line)
	if !ok {
		return invalid("a message must be a JSON object")
	}
	rawID, hasID := fields["id"]
	if hasID {
		switch v := idValue(rawID); {
		case v == "string" || v == "integer":
			id = rawID
		case v == "number":
			id = rawID // readable, so answered with it, but refused below
		}
	}
	if string(fields["jsonrpc"]) != `"2.0"` {
		return invalid(`"jsonrpc" must be "2.0"`)
	}
	if hasID {
		switch idValue(rawID) {
		case "string", "integer":
		case "null":
			return invalid("id must not be null")
		case "number":
			return invalid(fmt.Sprintf("a numeric id must be an integer of magnitude at most %d", int64(maxExactID)))
		default:
			return invalid("id must be a string or an integer")
		}
	}
	if rawMethod, ok := fields["method"]; ok {
		var method string
		if json.Unmarshal(rawMethod, &method) != nil {
			return invalid(`"method" must be a string`)
		}
		if p, ok := fields["params"]; ok {
			if t := bytes.TrimLeft(p, " \t\r\n"); len(t) > 0 && t[0] != '{' && t[0] != '[' && string(t) != "null" {
				return invalid(`"params" must be an object`)
			}
		}
	} else {
		_, hasResult := fields["result"]
		_, hasError := fields["error"]
		switch {
		case !hasID:
			return invalid(`a message needs a "method" (request) or an "id" with a "result" or "error" (response)`)
		case hasResult == hasError:
			return invalid(`a response needs exactly one of "result" and "error"`)
		}
	}
	m, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		return invalid(err.Error())
	}
	return m, nil, 0, ""
}

// topMembers is json.Unmarshal(line, &map[string]json.RawMessage{}) for a
// line json.Valid accepted, in one pass that copies nothing: a message's
// members are only looked at (the SDK decodes the message itself), and a
// start's arguments are ten or more kilobytes. Keys with escapes are
// decoded by encoding/json; a repeated key keeps its last value, as there.
// ok is false when line is not an object. TestTopMembers compares it with
// json.Unmarshal.
func topMembers(line []byte) (fields map[string]json.RawMessage, ok bool) {
	p := &fastParser{data: line}
	at := func(c byte) bool {
		p.skipSpace()
		return p.pos < len(line) && line[p.pos] == c
	}
	if !at('{') {
		return nil, false
	}
	p.pos++
	fields = map[string]json.RawMessage{}
	if at('}') {
		return fields, true
	}
	for at('"') {
		start := p.pos
		p.skip()
		rawKey := line[start:p.pos]
		key := string(rawKey[1 : len(rawKey)-1])
		if bytes.IndexByte(rawKey, '\\') >= 0 || !utf8.Valid(rawKey) {
			if json.Unmarshal(rawKey, &key) != nil {
				return nil, false
			}
		}
		if !at(':') {
			return nil, false
		}
		p.pos++
		p.skipSpace()
		start = p.pos
		p.skip()
		fields[key] = json.RawMessage(line[start:p.pos:p.pos])
		if !at(',') {
			return fields, at('}')
		}
		p.pos++
	}
	return nil, false
}

// skip moves past the JSON value at p.pos (p.data is valid JSON, as
// json.Valid checked), without looking into it.
func (p *fastParser) skip() {
	b := p.data
	switch {
	case p.pos >= len(b):
	case b[p.pos] == '"':
		p.skipString()
	case b[p.pos] == '{' || b[p.pos] == '[':
		depth := 0
		for p.pos < len(b) {
			switch b[p.pos] {
			case '"':
				p.skipString()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					p.pos++
					return
				}
			}
			p.pos++
		}
	default: // a number, true, false or null
		for ; p.pos < len(b); p.pos++ {
			switch b[p.pos] {
			case ',', '}', ']', ' ', '\t', '\r', '\n':
				return
			}
		}
	}
}

// skipString moves past the JSON string at p.pos.
func (p *fastParser) skipString() {
	b := p.data
	for p.pos++; p.pos < len(b); p.pos++ {
		switch b[p.pos] {
		case '\\':
			p.pos++
		case '"':
			p.pos++
			return
		}
	}
}

// idValue classifies a raw JSON id: "string", "integer" (exactly
// representable), "number" (fractional, exponent or too large), "null" or
// "other".
func idValue(raw json.RawMessage) string {
	t := bytes.TrimSpace(raw)
	switch {
	case len(t) == 0:
		return "other"
	case t[0] == '"':
		return "string"
	case string(t) == "null":
		return "null"
	case t[0] == '-' || t[0] >= '0' && t[0] <= '9':
		if n, err := strconv.ParseInt(string(t), 10, 64); err == nil && n >= -maxExactID && n <= maxExactID {
			return "integer"
		}
		if f, err := strconv.ParseFloat(string(t), 64); err == nil && !math.IsInf(f, 0) {
			return "number"
		}
	}
	return "other"
}
