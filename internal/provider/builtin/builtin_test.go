package builtin

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/diffpalhq/diffpal/internal/diff"
	"github.com/diffpalhq/diffpal/internal/provider"
	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/diffpalhq/diffpal/internal/rules"
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

// Security findings in test code are advisory; committed secrets are not.
func TestSecurityInTestCodeIsAdvisory(t *testing.T) {
	b, err := New()
	if err != nil {
		t.Fatal(err)
	}
	tlsOff := []string{"package main", "", "import \"crypto/tls\"", "", "var c = &tls.Config{InsecureSkipVerify: true}"}
	token := "ghp_" + "R8vZ2kLmQ4xN7pT1wY6sB3dF9hJ0cV5gE2aK"
	ch := &provider.Change{Files: []*provider.ChangedFile{
		newFile("client.go", tlsOff...),
		newFile("client_test.go", tlsOff...),
		newFile("testdata/fixture_test.go", "package main", "", "var tok = \""+token+"\""),
	}}
	res, err := b.ReviewProfile(context.Background(), provider.ProfileRequest{Profile: qa.ProfileSecurityReviewer, Change: ch, RuleProfiles: []string{"security_reviewer"}})
	if err != nil {
		t.Fatal(err)
	}
	sev := map[string]string{}
	for _, c := range res.Candidates {
		sev[c.Path+" "+c.RuleID] = c.Severity
	}
	// (the production severity is the pack's, capped by the measured
	// precision: rules.GateSeverity)
	if s := sev["client.go sec.tls-insecure-skip-verify"]; s == "" || s == "low" {
		t.Errorf("production TLS finding = %q, want its own severity (all: %v)", s, sev)
	}
	if s := sev["client_test.go sec.tls-insecure-skip-verify"]; s != "low" {
		t.Errorf("test TLS finding = %q, want low (all: %v)", s, sev)
	}
	found := false
	for k, s := range sev {
		if strings.HasPrefix(k, "testdata/fixture_test.go ") {
			found = true
			id := strings.TrimPrefix(k, "testdata/fixture_test.go ")
			if want := rules.GateSeverity(id, "critical"); s != want {
				t.Errorf("committed secret in a test fixture = %q, want its own severity %q", s, want)
			}
		}
	}
	if !found {
		t.Errorf("no secret finding in the fixture: %v", sev)
	}
}

func TestBuiltinIsEvidenceBlind(t *testing.T) {
	if provider.ReadsEvidence(&Builtin{}) {
		t.Error("the builtin provider reads no evidence contents, but ReadsEvidence says it does")
	}
	if provider.ReadsEvidence(nil) {
		t.Error("no verifier reads nothing")
	}
	if !provider.ReadsEvidence(struct{ provider.Provider }{}) {
		t.Error("a provider that does not say otherwise must be assumed to read the contents")
	}
}
