package provider_test

import (
	"context"
	"sync"
	"testing"

	"github.com/diffpalhq/diffpal/internal/diff"
	"github.com/diffpalhq/diffpal/internal/provider"
	"github.com/diffpalhq/diffpal/internal/qa"
)

// named answers with its name and counts Prepare calls.
type named struct {
	name     string
	prepared *int
}

func (n named) Name() string { return n.name }

func (n named) ReviewProfile(_ context.Context, req provider.ProfileRequest) (provider.ProfileResult, error) {
	return provider.ProfileResult{Gaps: []string{n.name + ":" + string(req.Profile)}}, nil
}

func (n named) Prepare(context.Context, []*provider.ChangedFile) { *n.prepared++ }

func TestRouter(t *testing.T) {
	var nd, nm int
	def, model := named{"builtin", &nd}, named{"openai", &nm}
	r := &provider.Router{Default: def, Profiles: map[qa.Profile]provider.Provider{
		qa.ProfileSecurityReviewer: model, qa.ProfileCodeReviewer: model, qa.ProfilePythonReviewer: named{"anthropic", new(int)}}}
	if got := r.Name(); got != "builtin+anthropic+openai" {
		t.Errorf("Name = %q", got)
	}
	for p, want := range map[qa.Profile]string{qa.ProfileSecurityReviewer: "openai:security_reviewer", qa.ProfileRubyReviewer: "builtin:ruby_reviewer"} {
		res, err := r.ReviewProfile(context.Background(), provider.ProfileRequest{Profile: p})
		if err != nil || len(res.Gaps) != 1 || res.Gaps[0] != want {
			t.Errorf("%s: %v %v, want %s", p, res.Gaps, err, want)
		}
	}
	r.Prepare(context.Background(), nil)
	if nd != 1 || nm != 1 {
		t.Errorf("Prepare ran %d and %d times, want once per provider", nd, nm)
	}
}

// Rules is built once and shared, whoever asks first and however many ask
// at once: the rule engine's masks are cached on it.
func TestChangedFileRulesShared(t *testing.T) {
	f := &provider.ChangedFile{Diff: &diff.File{OldPath: "a.go", NewPath: "a.go", Status: diff.Modified,
		Hunks: []diff.Hunk{{OldStart: 1, OldLines: 1, NewStart: 1, NewLines: 2, Lines: []diff.Line{
			{Kind: '-', Text: "package b", OldNo: 1}, {Kind: '+', Text: "package a", NewNo: 1}, {Kind: '+', Text: "var x = 1", NewNo: 2}}}}},
		Content: []string{"package a", "var x = 1"}}
	var wg sync.WaitGroup
	got := make([]any, 8)
	for i := range got {
		wg.Add(1)
		go func() { defer wg.Done(); got[i] = f.Rules() }()
	}
	wg.Wait()
	rf := f.Rules()
	for _, g := range got {
		if g != any(rf) {
			t.Fatal("Rules built more than once")
		}
	}
	if rf.Path != "a.go" || rf.Language != "go" || len(rf.Added) != 2 || rf.Added[1].No != 2 || len(rf.Removed) != 1 || rf.Removed[0].Text != "package b" {
		t.Errorf("rules view = %+v", rf)
	}
	if fs := provider.RuleFiles([]*provider.ChangedFile{f}); len(fs) != 1 || fs[0] != rf {
		t.Error("RuleFiles does not share the view")
	}
}
