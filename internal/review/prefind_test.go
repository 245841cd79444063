package review

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/diffpalhq/diffpal/internal/diff"
	"github.com/diffpalhq/diffpal/internal/evidence"
)

// TestPrefinderFindsWhatThePacketWould: the prefinder's detection of a
// file is the packet's own (evidence.Prefind of its text, PrefindHunks of
// its hunks), files without a joined text are not prefindable, and what
// a prefinder stopped midway returns is a prefix of the files added.
// (par.TestAheadStopsWhereItIs covers the stopping itself.)
func TestPrefinderFindsWhatThePacketWould(t *testing.T) {
	token := "ghp_" + strings.Repeat("aB3dE5fG7h", 3) + "k9L2mN"
	var files []*ChangedFile
	for i := range 200 {
		text := fmt.Sprintf("package p%d\n\nvar x = %d\n", i, i)
		if i%7 == 0 {
			text += "const tok = \"" + token + "\"\n"
		}
		content, joined := splitText([]byte(text))
		d := &diff.File{NewPath: fmt.Sprintf("f%03d.go", i), OldPath: fmt.Sprintf("f%03d.go", i), Status: diff.Modified,
			Hunks: []diff.Hunk{{OldStart: 3, OldLines: 1, NewStart: 3, NewLines: 1, Lines: []diff.Line{
				{Kind: '-', Text: "var x = \"" + token + "\"", OldNo: 3}, {Kind: '+', Text: content[2], NewNo: 3}}}}}
		files = append(files, &ChangedFile{Diff: d, Content: content, Text: joined})
	}
	if prefindable(&ChangedFile{Diff: &diff.File{NewPath: "crlf.txt"}, Content: []string{"a", "b"}}) {
		t.Error("a file without a joined text is prefindable")
	}
	withSecret := 0
	for _, f := range files {
		if !prefindable(f) {
			t.Fatalf("%s is not prefindable", f.Path())
		}
		pf := prefind(f)
		if want := evidence.Prefind(f.Text); !slices.Equal(pf.text, want) {
			t.Errorf("%s: text %v, want %v", f.Path(), pf.text, want)
		}
		want := evidence.PrefindHunks(evidence.File{Diff: f.Diff, Content: f.Content, Text: f.Text})
		if len(pf.hunks) != 1 || pf.hunks[0].Raw != want[0].Raw || !slices.Equal(pf.hunks[0].Found, want[0].Found) || len(want[0].Found) == 0 {
			t.Errorf("%s: hunks %v, want %v (the removed token)", f.Path(), pf.hunks, want)
		}
		if len(pf.text) > 0 {
			withSecret++
		}
	}
	if withSecret != 29 {
		t.Errorf("%d files with a secret in their text, want 29", withSecret)
	}
	p := newPrefinder(context.Background())
	for _, f := range files {
		p.Add(f)
	}
	found := p.Stop()
	n := len(found)
	for i := range n {
		if _, ok := found[files[i]]; !ok {
			t.Fatalf("%d files prefound, not the first %d: %s is missing", n, n, files[i].Path())
		}
	}
}
