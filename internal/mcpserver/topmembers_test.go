package mcpserver

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

var topMembersSeeds = []string{
	`{}`, ` { } `, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":[1,2,{"b":"}]"}]}}}`,
	`{"id":"a\"b","result":{"x":"\\"},"error":null}`, `{"i\u0064":7,"id":8}`, `{"id":-1.5e3 , "method" : "m" }`,
	"{\"k\xff\":1,\"id\":true}", `{"a":false,"b":null,"c":[],"d":{},"e":"","f":0}`, `[1,2]`, `"str"`, `17`, `null`,
	`{"a":{"b":{"c":[[[["deep"]]]]}},"z":"}"}`, `{"id":"\u00e9\ud83d\ude00"}`, "{\t\"a\"\r\n:\n1\t}",
}

// TestTopMembers checks topMembers against json.Unmarshal into a map of raw
// members on lines json.Valid accepts.
func TestTopMembers(t *testing.T) {
	for _, s := range topMembersSeeds {
		checkTopMembers(t, []byte(s))
	}
}

func FuzzTopMembers(f *testing.F) {
	for _, s := range topMembersSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) { checkTopMembers(t, line) })
}

func checkTopMembers(t *testing.T, line []byte) {
	t.Helper()
	if !json.Valid(line) {
		return
	}
	got, ok := topMembers(line)
	if trimmed := bytes.TrimLeft(line, " \t\r\n"); trimmed[0] != '{' {
		if ok {
			t.Fatalf("%q: topMembers accepted a value that is not an object", line)
		}
		return
	}
	var want map[string]json.RawMessage
	wantErr := json.Unmarshal(line, &want)
	if ok != (wantErr == nil) {
		t.Fatalf("%q: topMembers ok=%v, json.Unmarshal err=%v", line, ok, wantErr)
	}
	if ok && !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
		t.Fatalf("%q:\n got %q\nwant %q", line, got, want)
	}
}
