package weblink

import "testing"

func TestLinks(t *testing.T) {
	gh, ok := FromID("github.com/o/r")
	if !ok {
		t.Fatal("github.com not recognised")
	}
	if got := gh.Lines("abc", "dir/a b#c.go", 3, 5); got != "https://github.com/o/r/blob/abc/dir/a%20b%23c.go#L3-L5" {
		t.Errorf("github: %s", got)
	}
	gl, _ := FromID("gitlab.com/group/sub/proj")
	if got := gl.Lines("abc", "x.go", 7, 7); got != "https://gitlab.com/group/sub/proj/-/blob/abc/x.go#L7" {
		t.Errorf("gitlab: %s", got)
	}
	for _, id := range []string{"git.example.com/o/r", "github.com/o", "github.com/o/r/extra", "github.com/o/r?x=1", "repo", "github.com/../r"} {
		if _, ok := FromID(id); ok {
			t.Errorf("%q recognised", id)
		}
	}
	for _, p := range []string{"/etc/passwd", "../x", "a/../../x", ""} {
		if got := gh.Lines("abc", p, 1, 1); got != "" {
			t.Errorf("%q linked: %s", p, got)
		}
	}
}
