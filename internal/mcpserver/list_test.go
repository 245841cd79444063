package mcpserver

import (
	"strings"
	"testing"

	"github.com/diffpalhq/diffpal/internal/qa"
)

// TestListPagesOverMCP: list_qa_orchestrations pages through the MCP
// tool (results checked against the published output schema by mustOK's
// server), limit out of range and foreign cursors are tool errors that
// name the field, and unknown properties are still rejected.
func TestListPagesOverMCP(t *testing.T) {
	e := newEnv(t, envOptions{})
	var ids []string
	for range 5 {
		var s qa.Session
		e.ok(qa.ToolStart, qa.StartInput{TaskType: qa.TaskOther}, &s)
		ids = append(ids, s.RunID)
	}
	var first qa.ListOutput
	e.ok(qa.ToolList, map[string]any{}, &first)
	if len(first.Sessions) != 5 || first.NextCursor != nil {
		t.Fatalf("default page: %d sessions, cursor %v", len(first.Sessions), first.NextCursor)
	}
	seen := map[string]bool{}
	args := map[string]any{"limit": 2}
	pages := 0
	for {
		var l qa.ListOutput
		e.ok(qa.ToolList, args, &l)
		pages++
		if len(l.Sessions) > 2 {
			t.Fatalf("page of %d with limit 2", len(l.Sessions))
		}
		for _, s := range l.Sessions {
			if seen[s.RunID] {
				t.Fatalf("%s listed twice", s.RunID)
			}
			seen[s.RunID] = true
		}
		if l.NextCursor == nil {
			break
		}
		args = map[string]any{"limit": 2, "cursor": *l.NextCursor}
	}
	if len(seen) != 5 || pages != 3 {
		t.Fatalf("pages saw %d sessions in %d pages, want 5 in 3", len(seen), pages)
	}
	e.ok(qa.ToolList, map[string]any{"limit": nil, "cursor": nil}, &first) // null is "omitted"
	for _, bad := range []any{0, 1001, -3, 2.5, "10"} {
		txt := e.fail(qa.ToolList, map[string]any{"limit": bad}, `validating "arguments"`)
		if !strings.Contains(txt, "limit") {
			t.Errorf("limit %v: error does not name limit: %s", bad, txt)
		}
	}
	for _, bad := range []string{"nope", ids[0]} {
		e.fail(qa.ToolList, map[string]any{"cursor": bad}, "invalid argument: cursor")
	}
	txt := e.fail(qa.ToolList, map[string]any{"cursor": ""}, `validating "arguments"`)
	if !strings.Contains(txt, "cursor") {
		t.Errorf("empty cursor: error does not name cursor: %s", txt)
	}
	e.fail(qa.ToolList, map[string]any{"limit": 10, "page": 2}, `validating "arguments"`)
}
