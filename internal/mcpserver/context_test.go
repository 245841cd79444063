package mcpserver

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/diffpalhq/diffpal/internal/git/gittest"
	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/diffpalhq/diffpal/internal/review"
)

// TestDiffpalContextStartsASession is the host's path end to end: the
// review_context that `diffpal context` prints for a real repository is
// sent unchanged as start_qa_orchestration's argument through the SDK
// client, and the server binds the session to it.
func TestDiffpalContextStartsASession(t *testing.T) {
	repo := gittest.New(t)
	repo.Write("svc/auth/session.py", "def login(user):\n    return user\n")
	repo.Commit("base")
	repo.Git("checkout", "-q", "-b", "feature")
	repo.Write("svc/auth/session.py", "import subprocess\n\ndef login(user):\n    subprocess.call('id ' + user, shell=True)\n    return user\n")
	repo.Write("svc/auth/test_session.py", "def test_login():\n    assert True\n")
	repo.Commit("feature")

	ch, err := review.LoadChange(context.Background(), review.ChangeOptions{Dir: repo.Dir})
	if err != nil {
		t.Fatal(err)
	}
	rc, err := ch.Packet.ReviewContext()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(rc) // exactly what `diffpal context` prints
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, envOptions{})
	var s qa.Session
	e.ok(qa.ToolStart, map[string]any{"task_type": "ordinary_review", "review_context": json.RawMessage(raw)}, &s)
	if s.ReviewContext == nil || s.ReviewContext.EvidencePacketSHA256 != ch.Packet.SHA256 ||
		s.ReviewContext.DiffSHA256 != ch.Packet.DiffSHA256 || len(s.ReviewContext.EvidenceRefs) != len(ch.Packet.Items) {
		t.Fatalf("session not bound to the packet: %+v", s.ReviewContext)
	}
	want := map[qa.Profile]bool{qa.ProfilePythonReviewer: true, qa.ProfilePRTestAnalyzer: true, qa.ProfileSecurityReviewer: true}
	for _, p := range s.RecommendedProfiles {
		delete(want, p)
	}
	if len(want) > 0 {
		t.Errorf("recommended_profiles %v lack %v", s.RecommendedProfiles, want)
	}
}
