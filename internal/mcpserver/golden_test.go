package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/tools/txtar"
)

var update = flag.Bool("update", false, "rewrite the -- server -- sections of testdata/*.txtar")

// TestGolden replays the JSON-RPC exchanges in testdata/*.txtar against a
// server over the in-memory transport and compares the server's messages.
//
// File format: prose, then "-- client --" with the client's JSON-RPC
// messages (a JSON stream) and "-- server --" with the expected responses,
// indented, keys sorted. Run with -update to rewrite "-- server --".
//
// Normalization keeps the files independent of run ids and time: each new
// run id the server returns becomes $RUN1, $RUN2, … in order of first
// appearance (and client messages may use those placeholders), RFC 3339
// timestamps become $TIME, and hash-valued request_sha256, finding id and
// finding_id values become $HASH. A text content block that repeats the
// structured content is checked to be equal and then shown as
// $STRUCTURED_CONTENT.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no golden files")
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) { runGolden(t, path) })
	}
}

func section(ar *txtar.Archive, name string) (int, []byte) {
	for i, f := range ar.Files {
		if f.Name == name {
			return i, f.Data
		}
	}
	return -1, nil
}

var (
	runIDRE     = regexp.MustCompile(`qar-[0-9a-f]{32}`)
	timeRE      = regexp.MustCompile(`"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})"`)
	hashKeys    = map[string]bool{"request_sha256": true, "id": true, "finding_id": true}
	hashValueRE = regexp.MustCompile(`^[0-9a-f]{16,}$`)
)

func runGolden(t *testing.T, path string) {
	ar, err := txtar.ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, clientData := section(ar, "client")
	serverIdx, want := section(ar, "server")
	if clientData == nil || serverIdx < 0 {
		t.Fatalf("%s: needs -- client -- and -- server -- sections", path)
	}
	clk := newFakeClock()
	orch, err := qa.New(qa.Config{Clock: clk.Now, Random: rand.NewChaCha8([32]byte{9})})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(orch, Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	conn, err := ct.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	runIDs := map[string]string{} // real → placeholder
	placeholders := map[string]string{}
	var got bytes.Buffer
	dec := json.NewDecoder(bytes.NewReader(clientData))
	for n := 1; ; n++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("client message %d: %v", n, err)
		}
		text := string(raw)
		for ph, real := range placeholders {
			text = strings.ReplaceAll(text, ph, real)
		}
		if strings.Contains(text, "$RUN") {
			t.Fatalf("client message %d uses a run id placeholder not returned yet: %s", n, raw)
		}
		msg, err := jsonrpc.DecodeMessage([]byte(text))
		if err != nil {
			t.Fatalf("client message %d: %v", n, err)
		}
		if err := conn.Write(ctx, msg); err != nil {
			t.Fatal(err)
		}
		if req, ok := msg.(*jsonrpc.Request); !ok || !req.IsCall() {
			continue // notifications get no answer
		}
		for {
			in, err := conn.Read(ctx)
			if err != nil {
				t.Fatalf("reading the answer to client message %d: %v", n, err)
			}
			data, err := jsonrpc.EncodeMessage(in)
			if err != nil {
				t.Fatal(err)
			}
			data = collapseContent(t, data)
			out := runIDRE.ReplaceAllStringFunc(string(data), func(id string) string {
				if ph, ok := runIDs[id]; ok {
					return ph
				}
				ph := fmt.Sprintf("$RUN%d", len(runIDs)+1)
				runIDs[id], placeholders[ph] = ph, id
				return ph
			})
			out = timeRE.ReplaceAllString(out, `"$$TIME"`)
			got.Write(normalizeMessage(t, []byte(out)))
			got.WriteByte('\n')
			if _, isResp := in.(*jsonrpc.Response); isResp {
				break
			}
		}
	}
	if *update {
		ar.Files[serverIdx].Data = got.Bytes()
		if err := os.WriteFile(path, txtar.Format(ar), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Errorf("%s: server messages differ (run go test -run Golden -update to accept):\n%s",
			path, lineDiff(string(want), got.String()))
	}
}

// collapseContent checks that a text block repeating the structured
// content says the same thing, and replaces it with $STRUCTURED_CONTENT.
// It runs on the raw message, before any rewriting of values.
func collapseContent(t *testing.T, data []byte) []byte {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	res, ok := v["result"].(map[string]any)
	if !ok {
		return data
	}
	sc, ok := res["structuredContent"]
	content, _ := res["content"].([]any)
	if !ok || len(content) != 1 {
		return data
	}
	block := content[0].(map[string]any)
	scJSON, _ := json.Marshal(sc)
	text, _ := block["text"].(string)
	if !jsonSame(t, scJSON, []byte(text)) {
		t.Errorf("text content does not repeat the structured content: %s", text)
		return data
	}
	block["text"] = "$STRUCTURED_CONTENT"
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// normalizeMessage indents one message, replaces hash values and, in a
// tools/list result, shows a schema identical to an earlier tool's as a
// reference to it (the session schema is shared by four tools).
func normalizeMessage(t *testing.T, data []byte) []byte {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	if res, ok := v.(map[string]any)["result"].(map[string]any); ok {
		if tools, ok := res["tools"].([]any); ok {
			seen := map[string]string{}
			for _, tl := range tools {
				tool := tl.(map[string]any)
				for _, key := range []string{"inputSchema", "outputSchema"} {
					js, _ := json.Marshal(tool[key])
					if first, ok := seen[string(js)]; ok {
						tool[key] = "$SAME_AS " + first
					} else {
						seen[string(js)] = fmt.Sprintf("%s.%s", tool["name"], key)
					}
				}
			}
		}
	}
	var walk func(v any) any
	walk = func(v any) any {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if s, ok := x.(string); ok && hashKeys[k] && hashValueRE.MatchString(s) {
					v[k] = "$HASH"
					continue
				}
				v[k] = walk(x)
			}
		case []any:
			for i := range v {
				v[i] = walk(v[i])
			}
		}
		return v
	}
	v = walk(v)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// lineDiff shows the first differing lines with a little context.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			lo := max(0, i-3)
			var b strings.Builder
			fmt.Fprintf(&b, "first difference at line %d\n", i+1)
			for j := lo; j < i; j++ {
				fmt.Fprintf(&b, "  %s\n", w[j])
			}
			fmt.Fprintf(&b, "- %s\n+ %s\n", wl, gl)
			return b.String()
		}
	}
	return "(identical lines; trailing newline differs)"
}
