package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// spliceTransport connects an SDK client to a server's stdin and stdout
// and lets a test write raw lines into the same stdin between the
// client's calls. Replies addressed to the raw lines (id null, or a string
// id starting with "inj-") are handed to the test on stray instead of the
// client, which would not know them.
type spliceTransport struct {
	wmu   sync.Mutex
	w     io.WriteCloser // closed by Close: the server sees end of input
	r     *bufio.Reader
	stray chan []byte
}

func (s *spliceTransport) Connect(context.Context) (mcp.Connection, error) { return s, nil }
func (s *spliceTransport) SessionID() string                               { return "" }
func (s *spliceTransport) Close() error                                    { return s.w.Close() }

func (s *spliceTransport) Read(context.Context) (jsonrpc.Message, error) {
	for {
		line, err := s.r.ReadBytes('\n')
		if err != nil {
			return nil, err
		}
		var probe struct {
			ID     json.RawMessage `json:"id"`
			Method *string         `json:"method"`
		}
		_ = json.Unmarshal(line, &probe)
		if probe.Method == nil && (string(probe.ID) == "null" || strings.HasPrefix(string(probe.ID), `"inj-`)) {
			s.stray <- line
			continue
		}
		return jsonrpc.DecodeMessage(bytes.TrimSpace(line))
	}
}

func (s *spliceTransport) Write(_ context.Context, msg jsonrpc.Message) error {
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	return s.inject(data)
}

func (s *spliceTransport) inject(line []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_, err := s.w.Write(append(line, '\n'))
	return err
}

// rpcReply is a JSON-RPC response as read off the wire.
type rpcReply struct {
	ID    json.RawMessage `json:"id"`
	Error *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Result json.RawMessage `json:"result"`
}

// TestBinaryStdioSurvivesBadInput runs the real `diffpal mcp` over stdio
// with the SDK client and writes bad lines into its stdin between calls
// (issue 9, item 3). Each gets a JSON-RPC error (-32700 for bad JSON,
// -32600 for the rest; the id when it is readable, else null) and a log
// line, and the server keeps serving: the memory-store session started
// first is still there after every one of them, including a 16 MiB+ line.
func TestBinaryStdioSurvivesBadInput(t *testing.T) {
	bin := diffpalBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "mcp", "--model-mode", "host_default")
	cmd.Env = os.Environ()
	var stderr syncBuffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	sp := &spliceTransport{w: stdin, r: bufio.NewReaderSize(stdout, 1<<20), stray: make(chan []byte, 4)}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "stdio-test", Version: "1"}, nil).Connect(ctx, sp, nil)
	if err != nil {
		t.Fatalf("connect: %v\nstderr: %s", err, stderr.String())
	}
	var s qa.Session
	mustOK(t, callTool(t, cs, qa.ToolStart, qa.StartInput{TaskType: qa.TaskOther}), "start", &s)

	huge := `{"jsonrpc":"2.0","id":"inj-huge","method":"tools/call","params":{"name":"get_qa_orchestration_catalog","arguments":{"x":"` +
		strings.Repeat("a", mcp.DefaultMaxLineLength) + `"}}}`
	cases := []struct {
		name, line string
		code       int64
		id         string
	}{
		{"not json", `not json`, jsonrpc.CodeParseError, "null"},
		{"open brace", `{`, jsonrpc.CodeParseError, "null"},
		{"null", `null`, jsonrpc.CodeInvalidRequest, "null"},
		{"empty array", `[]`, jsonrpc.CodeInvalidRequest, "null"},
		{"empty object", `{}`, jsonrpc.CodeInvalidRequest, "null"},
		{"wrong version", `{"jsonrpc":"1.0","id":"inj-v","method":"tools/list"}`, jsonrpc.CodeInvalidRequest, `"inj-v"`},
		{"no version", `{"id":"inj-nov","method":"tools/list"}`, jsonrpc.CodeInvalidRequest, `"inj-nov"`},
		{"array id", `{"jsonrpc":"2.0","id":[1],"method":"tools/list"}`, jsonrpc.CodeInvalidRequest, "null"},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"tools/list"}`, jsonrpc.CodeInvalidRequest, "null"},
		{"batch", `[{"jsonrpc":"2.0","id":"inj-b1","method":"tools/list"},{"jsonrpc":"2.0","id":"inj-b2","method":"tools/list"}]`,
			jsonrpc.CodeInvalidRequest, "null"},
		{"method not a string", `{"jsonrpc":"2.0","id":"inj-m","method":7}`, jsonrpc.CodeInvalidRequest, `"inj-m"`},
		{"frame over 16 MiB", huge, jsonrpc.CodeInvalidRequest, "null"},
		{"unknown method", `{"jsonrpc":"2.0","id":"inj-u","method":"diffpal/none"}`, jsonrpc.CodeMethodNotFound, `"inj-u"`},
	}
	for _, c := range cases {
		if err := sp.inject([]byte(c.line)); err != nil {
			t.Fatalf("%s: writing the line: %v (server exited? %s)", c.name, err, stderr.String())
		}
		select {
		case raw := <-sp.stray:
			var r rpcReply
			if err := json.Unmarshal(raw, &r); err != nil || r.Error == nil || r.Error.Code != c.code || string(r.ID) != c.id {
				t.Errorf("%s: reply %s, want error %d with id %s", c.name, raw, c.code, c.id)
			}
		case err := <-done:
			t.Fatalf("%s: the server exited (%v)\nstderr: %s", c.name, err, stderr.String())
		case <-ctx.Done():
			t.Fatalf("%s: no reply", c.name)
		}
		// Still serving, and the session is still there.
		var g qa.Session
		mustOK(t, callTool(t, cs, qa.ToolGet, qa.GetInput{RunID: s.RunID}), c.name+": get", &g)
	}
	if n := strings.Count(stderr.String(), "rejected input line"); n != len(cases)-1 {
		t.Errorf("%d log lines for %d rejected lines:\n%s", n, len(cases)-1, stderr.String())
	}
	if strings.Contains(stderr.String(), "not json") {
		t.Error("the log quotes input content")
	}
	cs.Close() // closes stdin
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after end of input: %v\nstderr: %s", err, stderr.String())
		}
	case <-ctx.Done():
		t.Fatal("the server did not exit at end of input")
	}
}

// TestBinaryStdioAnswersCallsBeforeEOF pipes initialize and three tool
// calls into the real binary and closes its stdin at once (issue 9, item
// 3): every call read before end of input is answered, then the process
// exits 0.
func TestBinaryStdioAnswersCallsBeforeEOF(t *testing.T) {
	bin := diffpalBinary(t)
	for round := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, bin, "mcp")
		var in bytes.Buffer
		in.WriteString(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}` + "\n")
		in.WriteString(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
		for i := 2; i <= 4; i++ {
			fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"start_qa_orchestration","arguments":{"task_type":"other"}}}`+"\n", i)
		}
		cmd.Stdin = &in
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		cancel()
		if err != nil {
			t.Fatalf("round %d: %v\nstderr: %s", round, err, stderr.String())
		}
		got := map[string]bool{}
		for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
			var r rpcReply
			if err := json.Unmarshal(line, &r); err != nil || r.Error != nil || r.Result == nil {
				t.Fatalf("round %d: bad reply %s", round, line)
			}
			if string(r.ID) != "1" && !bytes.Contains(r.Result, []byte(`"run_id":"qar-`)) {
				t.Errorf("round %d: call %s did not start a session: %s", round, r.ID, r.Result)
			}
			got[string(r.ID)] = true
		}
		var missing []string
		for _, id := range []string{"1", "2", "3", "4"} {
			if !got[id] {
				missing = append(missing, id)
			}
		}
		if len(missing) > 0 {
			t.Fatalf("round %d: no answer to ids %v; %d answers", round, missing, len(got))
		}
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
