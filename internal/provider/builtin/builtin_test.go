package builtin

import (
	"context"
	"testing"
	"time"

	"github.com/diffpalhq/diffpal/internal/diff"
	"github.com/diffpalhq/diffpal/internal/provider"
	"github.com/diffpalhq/diffpal/internal/qa"
)

func newFile(path string, lines ...string) *provider.ChangedFile {
	h := diff.Hunk{NewStart: 1, NewLines: len(lines)}
	for i, l := range lines {
		h.Lines = append(h.Lines, diff.Line{Kind: '+', Text: l, NewNo: i + 1})
	}
	return &provider.ChangedFile{Diff: &diff.File{NewPath: path, OldPath: path, Status: diff.Added, NewMode: "100644", Hunks: []diff.Hunk{h}}, Content: lines}
}

// The rules run once per change; each profile gets the hits of the
// checklists it answers for, as candidates on the lines they matched.
func TestBuiltinHandsEachProfileItsChecklists(t *testing.T) {
	b, err := New()
	if err != nil {
		t.Fatal(err)
	}
	b.Now = func() time.Time { return time.Unix(0, 0) }
	ch := &provider.Change{Files: []*provider.ChangedFile{
		newFile("main.go", "package main", "", "import \"crypto/tls\"", "", "var c = &tls.Config{InsecureSkipVerify: true}"),
	}}
	b.Prepare(context.Background(), ch.Files)
	hits := len(b.hits)
	if hits == 0 {
		t.Fatal("no rule matched")
	}
	sec, err := b.ReviewProfile(context.Background(), provider.ProfileRequest{Profile: qa.ProfileSecurityReviewer, Change: ch, RuleProfiles: []string{"security_reviewer"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.hits) != hits {
		t.Error("the rules ran again")
	}
	found := false
	for _, c := range sec.Candidates {
		if c.RuleProfile != "security_reviewer" || c.Path != "main.go" {
			t.Errorf("candidate %+v", c)
		}
		found = found || (c.Category == "security" && c.StartLine == 5)
	}
	if !found || sec.Attempts != 1 || sec.Started.IsZero() {
		t.Errorf("security result = %+v", sec)
	}
	none, _ := b.ReviewProfile(context.Background(), provider.ProfileRequest{Profile: qa.ProfileCodeReviewer, Change: ch, RuleProfiles: nil})
	if len(none.Candidates) != 0 {
		t.Errorf("a profile answering for no checklist got %d candidates", len(none.Candidates))
	}
	if f := b.Fresh(); f.Rules != b.Rules || len(f.hits) != 0 {
		t.Error("Fresh did not start over with the same rules")
	}
}
