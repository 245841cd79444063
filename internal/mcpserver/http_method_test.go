package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/diffpalhq/diffpal/internal/qa/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestHTTPUnknownMethod: over HTTP a call of a method the server does not
// have gets a JSON-RPC -32601 error, as over stdio (issue 9, item 7), and
// not the SDK's plain-text HTTP 400 "JSON RPC not handled". The SDK client
// sees a *jsonrpc.Error and its session keeps working; a raw POST gets the
// error object with the call's id; an unknown notification is accepted.
func TestHTTPUnknownMethod(t *testing.T) {
	ts := replica(t, store.NewMemory(), testToken)
	client := mcp.NewClient(&mcp.Implementation{Name: "http-test", Version: "1"}, nil)
	const method = "diffpal/no-such-method"
	if err := mcp.AddSendingCustomMethod[*mcp.PingParams, *mcp.CallToolResult](client, method); err != nil {
		t.Fatal(err)
	}
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL + HTTPPath,
		HTTPClient: &http.Client{Transport: bearer{testToken, http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	_, err = mcp.CallCustomMethod[*mcp.PingParams, *mcp.CallToolResult](context.Background(), cs, method, &mcp.PingParams{})
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeMethodNotFound {
		t.Fatalf("unknown method over HTTP: %v (%T), want a JSON-RPC -32601 error", err, err)
	}
	mustOK(t, callTool(t, cs, qa.ToolCatalog, nil), qa.ToolCatalog, nil)

	auth := map[string]string{"Authorization": "Bearer " + testToken}
	for _, id := range []string{`7`, `"req-7"`} {
		code, body := post(t, ts.URL, auth, `{"jsonrpc":"2.0","id":`+id+`,"method":"`+method+`","params":{}}`)
		var resp struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   *jsonrpc.Error  `json:"error"`
		}
		if code != http.StatusOK || json.Unmarshal([]byte(body), &resp) != nil || resp.JSONRPC != "2.0" ||
			string(resp.ID) != id || resp.Error == nil || resp.Error.Code != jsonrpc.CodeMethodNotFound ||
			!strings.Contains(resp.Error.Message, method) {
			t.Errorf("id %s: status %d body %q, want 200 and a -32601 error for that id", id, code, body)
		}
	}
	if code, body := post(t, ts.URL, auth, `{"jsonrpc":"2.0","method":"notifications/diffpal-nothing"}`); code != http.StatusAccepted || body != "" {
		t.Errorf("unknown notification: status %d body %q, want 202 and no body", code, body)
	}
	// Other 400s are the SDK's, untouched.
	if code, body := post(t, ts.URL, auth, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}`); code != http.StatusBadRequest ||
		!strings.Contains(body, "malformed") {
		t.Errorf("malformed body: status %d %q", code, body)
	}
}
