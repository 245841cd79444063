package llm

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/diffpalhq/diffpal/internal/qa"
	st "github.com/diffpalhq/diffpal/internal/secrets/secretstest"
)

// The shapes that reached request bodies before the detector was one:
// a Redis URL with an empty user, a MySQL password holding "@", an AWS
// secret key in a CSV line, and key lines carried by a hunk header's
// function context with the BEGIN line outside the hunk.
func TestRedactorObservedLeaks(t *testing.T) {
	redisPW := st.Gen("redis", st.Alnum, 24)
	mysqlPW := st.Gen("my1", st.Alnum, 6) + "@" + st.Gen("my2", st.Alnum, 6)
	awsID, awsSecret := "AKIA"+st.Gen("aki", st.UpperNum, 16), st.Gen("ask", st.Base64, 40)
	body := st.PEMBody("leak", "", 20, 64, true)

	r := &Redactor{}
	for _, c := range []struct{ in, secret string }{
		{"REDIS_URL=redis://:" + redisPW + "@cache:6379/0", redisPW},
		{"dsn = mysql://shop:" + mysqlPW + "@db:3306/shop", st.Gen("my2", st.Alnum, 6)},
		{"ci," + awsID + "," + awsSecret + ",2026-01-01", awsSecret},
		{"@@ -1,3 +1,4 @@ " + body[3] + "\n " + body[4] + "\n+" + body[5], body[3]},
	} {
		if got := r.Redact(c.in); strings.Contains(got, c.secret) {
			t.Errorf("Redact(%q) = %q keeps %q", c.in, got, c.secret)
		}
	}

	// End to end through the provider: a key file changed mid-key, its
	// hunk header carrying a body line.
	key := append(append([]string{"-----BEGIN RSA PRIVATE KEY-----"}, body...), "-----END RSA PRIVATE KEY-----")
	csv := []string{"name,access_key_id,secret_access_key"}
	for i := range 8 {
		csv = append(csv, fmt.Sprintf("runner-%d,%s,%s", i, "AKIA"+st.Gen(fmt.Sprint("id", i), st.UpperNum, 16), st.Gen(fmt.Sprint("sk", i), st.Base64, 40)))
	}
	ch := mkChange(t,
		tfile{path: "deploy/server.key", content: key, added: []int{12}},
		tfile{path: "data/keys.csv", content: csv, added: []int{8}},
		tfile{path: ".env", content: []string{"REDIS_URL=redis://:" + redisPW + "@cache:6379/0", "DATABASE_URL=mysql://shop:" + mysqlPW + "@db:3306/shop"}},
	)
	for _, f := range ch.Files {
		if f.Path() == "deploy/server.key" {
			f.Diff.Hunks[0].Section = key[7] // what git puts there: the line above the hunk
		}
	}
	var err error
	if ch.Packet, err = buildPacket(ch); err != nil {
		t.Fatal(err)
	}
	fc := &fakeClient{}
	p, _ := newProvider(t, fc, nil)
	if _, err := p.ReviewProfile(context.Background(), profileReq(t, ch, qa.ProfileSecurityReviewer)); err != nil {
		t.Fatal(err)
	}
	sent := allBytes(fc.requests())
	secrets := append([]string{redisPW, mysqlPW, st.Gen("my2", st.Alnum, 6)}, body...)
	for _, l := range csv[1:] {
		secrets = append(secrets, strings.Split(l, ",")[2])
	}
	for _, s := range secrets {
		if strings.Contains(sent, s) {
			t.Errorf("request carries %q", s)
		}
	}
	if !strings.Contains(sent, "+9,7 @@ "+Redacted) {
		t.Errorf("the hunk header lost its shape:\n%s", sent)
	}
}
