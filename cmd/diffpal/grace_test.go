package main

import "testing"

// diffpal mcp drains in-flight calls after SIGTERM; every other command
// winds down within graceAfterSignal.
func TestGraceFor(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"mcp", "--http", "127.0.0.1:0"}, "drain"},
		{[]string{"--version"}, "grace"},
		{[]string{"review", "mcp"}, "grace"},
		{[]string{"--", "mcp"}, "grace"},
		{nil, "grace"},
	} {
		got := "grace"
		if graceFor(c.args) == drainAfterSignal {
			got = "drain"
		}
		if got != c.want {
			t.Errorf("%q: %s, want %s", c.args, got, c.want)
		}
	}
	if drainAfterSignal <= graceAfterSignal {
		t.Error("the mcp drain is not longer than the default grace")
	}
}
