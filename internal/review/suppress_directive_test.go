package review

import "testing"

// A diffpal:ignore directive counts only right after a comment marker and
// as the rest of the comment: prose and string literals that mention the
// directive suppress nothing (and are not reported as policy edits).
func TestInlineIgnoreDirectiveShape(t *testing.T) {
	for _, tc := range []struct {
		line           string
		match          bool
		target, reason string
	}{
		{"x := 1 // diffpal:ignore sec.x -- because", true, "sec.x", "because"},
		{"# diffpal:ignore", true, "", ""},
		{"foo() // diffpal:ignore", true, "", ""},
		{"/* diffpal:ignore security -- why */", true, "security", "why"},
		{"<!-- diffpal:ignore -- docs -->", true, "", "docs"},
		{"  * diffpal:ignore rule.a,rule.b -- r", true, "rule.a,rule.b", "r"},
		{"-- diffpal:ignore sql.x -- legacy", true, "sql.x", "legacy"},
		{"// each diffpal:ignore the change adds, becomes", false, "", ""},
		{"// the policy record with the diffpal:ignore", false, "", ""},
		{`detail := "adds diffpal:ignore (" + target + ")"`, false, "", ""},
		{"s = 'diffpal:ignore'", false, "", ""},
		{"// diffpal:ignore the next line please", false, "", ""},
	} {
		m := matchIgnore(tc.line)
		if (m != nil) != tc.match {
			t.Errorf("%q: match = %v, want %v", tc.line, m != nil, tc.match)
			continue
		}
		if m != nil && (m[1] != tc.target || m[2] != tc.reason) {
			t.Errorf("%q: target %q reason %q, want %q %q", tc.line, m[1], m[2], tc.target, tc.reason)
		}
	}
}
