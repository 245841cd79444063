package rules

import (
	"strings"
	"testing"

	st "github.com/diffpalhq/diffpal/internal/secrets/secretstest"
)

// Redact is internal/secrets' detector with a "****" mask: the shapes the
// rule packs' own patterns never knew are masked in built-in findings too.
func TestRedactIsTheOneDetector(t *testing.T) {
	pw := st.Gen("rpw", st.Alnum, 20)
	sk := st.Gen("rsk", st.Base64, 40)
	for _, c := range []struct{ in, want string }{
		{"REDIS_URL=redis://:" + pw + "@cache:6379/0", "REDIS_URL=redis://:****@cache:6379/0"},
		{"mysql://shop:ab@" + pw + "@db/shop", "mysql://shop:****@db/shop"},
		{"ci,AKIA" + st.Gen("rid", st.UpperNum, 16) + "," + sk, "ci,AKIA****,****"},
		{`token = "ghp_` + st.Gen("rgh", st.Alnum, 36) + `"`, `token = "ghp_****"`},
	} {
		if got := Redact(c.in); got != c.want {
			t.Errorf("Redact(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := redactValue("s3cr3t-Pr0d!"); got != "****" || strings.Contains(got, "s3cr") {
		t.Errorf("redactValue keeps part of a password: %q", got)
	}
	if got := redactValue("AKIA" + st.Gen("rv", st.UpperNum, 16)); got != "AKIA****" {
		t.Errorf("redactValue(AWS id) = %q", got)
	}
}
