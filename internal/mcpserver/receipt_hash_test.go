package mcpserver

import (
	"encoding/json"
	"testing"

	"github.com/diffpalhq/diffpal/internal/jcs"
	"github.com/diffpalhq/diffpal/internal/qa"
)

// TestRequestHashOverArgumentsAsSent: request_sha256 is the JCS hash of
// {tool, arguments without request_id} exactly as the host sent them, so a
// host can compute it too; nested objects with keys left out must not be
// hashed in the server's filled-in form.
func TestRequestHashOverArgumentsAsSent(t *testing.T) {
	e := newEnv(t, envOptions{})
	var s qa.Session
	e.ok(qa.ToolStart, map[string]any{"task_type": "ordinary_review"}, &s)
	e.ok(qa.ToolAdvance, map[string]any{"run_id": s.RunID, "completed_step": "triage", "status": "completed",
		"selected_profile": "code_reviewer"}, &s)
	args := map[string]any{"run_id": s.RunID, "completed_step": "primary_review", "status": "completed",
		"completed_profile": "code_reviewer", "risk_signals": map[string]any{}}
	withID := map[string]any{"request_id": "r-2"}
	for k, v := range args {
		withID[k] = v
	}
	e.ok(qa.ToolAdvance, withID, &s)
	want, err := jcs.SHA256Hex(map[string]any{"tool": qa.ToolAdvance, "arguments": args})
	if err != nil {
		t.Fatal(err)
	}
	var got string
	for _, r := range s.TransitionReceipts {
		if r.RequestID == "r-2" {
			got = r.RequestSHA256
		}
	}
	if got != want {
		raw, _ := json.Marshal(s.TransitionReceipts)
		t.Errorf("request_sha256 = %s, want %s (receipts %s)", got, want, raw)
	}
	// A retry with the same arguments is a replay, not a conflict.
	e.ok(qa.ToolAdvance, withID, nil)
}
