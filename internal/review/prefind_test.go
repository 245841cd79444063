package review

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/diffpalhq/diffpal/internal/diff"
	"github.com/diffpalhq/diffpal/internal/evidence"
)

// TestPrefinderStopsWhereItIs: files added while the prefinder runs are
// detected in order until stop, each exactly as evidence.Prefind finds
// it; files added after stop, or without a joined text, are left to the
// packet; a prefinder never given a file never starts.
func TestPrefinderStopsWhereItIs(t *testing.T) {
	var idle prefinder
	if got := idle.stop(); got != nil {
		t.Errorf("an idle prefinder found %v", got)
	}
	token := "ghp_" + strings.Repeat("aB3dE5fG7h", 3) + "k9L2mN"
	var files []*ChangedFile
	for i := range 400 {
		text := fmt.Sprintf("package p%d\n\nvar x = %d\n", i, i)
		if i%7 == 0 {
			text += "const tok = \"" + token + "\"\n"
		}
		content, joined := splitText([]byte(text))
		files = append(files, &ChangedFile{Diff: &diff.File{NewPath: fmt.Sprintf("f%03d.go", i)}, Content: content, Text: joined})
	}
	noText := &ChangedFile{Diff: &diff.File{NewPath: "crlf.txt"}, Content: []string{"a", "b"}}
	var p prefinder
	p.add(noText)
	for _, f := range files[:300] {
		p.add(f)
	}
	// Let it work through some (no clock bound: it waits as long as it
	// takes), then stop it midway.
	for {
		p.mu.Lock()
		k := len(p.found)
		p.mu.Unlock()
		if k >= 100 {
			break
		}
		runtime.Gosched()
	}
	found := p.stop()
	for _, f := range files[300:] {
		p.add(f)
	}
	if _, ok := found[noText]; ok {
		t.Error("a file without a joined text was prefound")
	}
	n := 0
	for i, f := range files {
		pf, ok := found[f]
		if !ok {
			continue
		}
		n++
		if i >= 300 {
			t.Fatalf("%s, added after stop, was prefound", f.Path())
		}
		if want := evidence.Prefind(f.Text); !slices.Equal(pf.text, want) {
			t.Errorf("%s: prefound %v, want %v", f.Path(), pf.text, want)
		}
		if len(pf.hunks) != len(f.Diff.Hunks) {
			t.Errorf("%s: %d hunks prefound of %d", f.Path(), len(pf.hunks), len(f.Diff.Hunks))
		}
	}
	// In order: the prefound files are a prefix of those added.
	for i := range n {
		if _, ok := found[files[i]]; !ok {
			t.Errorf("%d files prefound, not the first %d: %s is missing", n, n, files[i].Path())
			break
		}
	}
	withSecret := 0
	for _, pf := range found {
		if len(pf.text) > 0 {
			withSecret++
		}
	}
	if n < 100 || withSecret == 0 {
		t.Errorf("%d files prefound, %d with a secret: want at least 100, some with one", n, withSecret)
	}
	t.Logf("%d of 300 files prefound before stop, %d with a secret", n, withSecret)
}
