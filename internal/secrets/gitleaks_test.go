package secrets

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"
	"github.com/zricethezav/gitleaks/v8/detect"
	"github.com/zricethezav/gitleaks/v8/logging"

	st "github.com/diffpalhq/diffpal/internal/secrets/secretstest"
)

func TestScanFindsGitleaksRules(t *testing.T) {
	aws := "AKIA" + st.Gen("scan-aws", "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)
	ghp := "ghp_" + st.Gen("scan-ghp", st.Alnum, 36)
	generic := st.Gen("scan-generic", st.Alnum, 32)
	body := st.PEMBody("scan-pem", "MIIEowIBAAKCAQEA", 6, 64, false)
	text := strings.Join([]string{
		"package main",
		`const accessKey = "` + aws + `"`,
		`var token = "` + ghp + `"`,
		`api_key = "` + generic + `"`,
		"-----BEGIN RSA PRIVATE KEY-----",
		strings.Join(body, "\n"),
		"-----END RSA PRIVATE KEY-----",
	}, "\n")
	ms := Scan(text)
	got := map[string]Match{}
	for _, m := range ms {
		got[m.RuleID] = m
	}
	want := map[string]struct {
		line int
		sev  string
	}{
		"aws-access-token": {2, "critical"}, "github-pat": {3, "critical"},
		"generic-api-key": {4, "high"}, "private-key": {5, "critical"},
	}
	for id, w := range want {
		m, ok := got[id]
		if !ok {
			t.Errorf("%s not found; got %+v", id, ms)
			continue
		}
		if m.Line != w.line || m.Severity != w.sev {
			t.Errorf("%s: line %d severity %s, want %d %s", id, m.Line, m.Severity, w.line, w.sev)
		}
		if m.Start < 0 || m.End > len(text) || m.Start >= m.End {
			t.Errorf("%s: bad span %d..%d", id, m.Start, m.End)
		}
	}
	if m := got["private-key"]; m.EndLine != 5+len(body)+1 {
		t.Errorf("private key lines %d-%d, want 5-%d", m.Line, m.EndLine, 5+len(body)+1)
	}
	if m := got["aws-access-token"]; text[m.Start:m.End] != aws || m.Column != strings.Index(`const accessKey = "`+aws, aws)+1 {
		t.Errorf("aws span %q column %d", text[m.Start:m.End], m.Column)
	}
	for _, m := range ms {
		secret := text[m.Start:m.End]
		for _, field := range []string{m.Snippet, m.Redacted} {
			for i := 0; i+10 <= len(secret); i++ {
				if strings.Contains(field, secret[i:i+10]) {
					t.Fatalf("%s: secret in %q", m.RuleID, field)
				}
			}
		}
		if !strings.Contains(m.Snippet, Mask) {
			t.Errorf("%s: snippet %q not redacted", m.RuleID, m.Snippet)
		}
	}
	if r := got["github-pat"].Redacted; r != "ghp_"+Mask {
		t.Errorf("github redacted = %q, want the public prefix and the mask", r)
	}
}

// Public example keys (AWS' and Google's documentation keys), placeholders
// and computed values are no findings.
func TestScanSkipsExamplesAndComputedValues(t *testing.T) {
	for _, text := range []string{
		`aws_access_key_id = AKIAIOSFODNN7EXAMPLE`,
		`aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY`,
		`NSS_WRAPPER_PASSWD="$(mktemp)"`,
		`password = os.environ["DB_PASSWORD"]`,
		`api_key: ${API_KEY}`,
		`token := os.Getenv("GITHUB_TOKEN")`,
		`GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}`,
		`secret_key = get_secret("app-secret-key")`,
		`key_1056: value-484`,
	} {
		if ms := Scan(text); len(ms) != 0 {
			t.Errorf("%s: %+v", text, ms)
		}
	}
}

// Find (and so Redact, everywhere) has what gitleaks finds, also in
// shapes the package's own formats do not know.
func TestFindIncludesGitleaks(t *testing.T) {
	tok := "pnu_" + st.Gen("prefect", st.Alnum, 36) // prefect-api-token: gitleaks only
	text := "PREFECT_API_KEY=" + tok + "\n"
	spans := Find(text)
	if len(spans) != 1 || text[spans[0].Start:spans[0].End] != tok {
		t.Fatalf("spans = %+v", spans)
	}
	if got := Redact(text); strings.Contains(got, tok[4:14]) {
		t.Errorf("Redact = %q", got)
	}
	var ids []string
	for _, sp := range (&Redactor{}).Find("x = " + tok) {
		ids = append(ids, sp.Rule)
	}
	if !slices.Contains(ids, "gitleaks:prefect-api-token") && !slices.Contains(ids, "assignment") {
		t.Errorf("rules = %v", ids)
	}
}

// The windows handed to gitleaks find what gitleaks finds in the whole
// text: a keyword on one line and its value on the next, a key whose BEGIN
// is far above its END, many keywords on one line.
func TestWindowsLoseNothing(t *testing.T) {
	d, err := fullDetector()
	if err != nil {
		t.Fatal(err)
	}
	body := st.PEMBody("win-pem", "MIIEowIBAAKCAQEA", 30, 64, false)
	var sb strings.Builder
	for i := range 300 {
		fmt.Fprintf(&sb, "key_%d: value-%d // the key of the monkey\n", i, i)
		if i%50 == 7 {
			fmt.Fprintf(&sb, "const apiKey =\n  \"%s\"\n", st.Gen(fmt.Sprint("win", i), st.Alnum, 32))
			fmt.Fprintf(&sb, "slack: xoxb-%s-%s-%s\n", st.Gen(fmt.Sprint("s1", i), st.Digits, 12), st.Gen(fmt.Sprint("s2", i), st.Digits, 12), st.Gen(fmt.Sprint("s3", i), st.Alnum, 24))
		}
		if i == 100 {
			sb.WriteString("-----BEGIN RSA PRIVATE KEY-----\n" + strings.Join(body, "\n") + "\n-----END RSA PRIVATE KEY-----\n")
		}
	}
	text := sb.String()
	var want []string
	for _, f := range d.DetectString(text) {
		want = append(want, f.RuleID+" "+f.Secret)
	}
	var got []string
	for _, m := range Scan(text) {
		got = append(got, m.RuleID+" "+text[m.Start:m.End])
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) || len(want) < 8 {
		t.Errorf("windows found\n%v\nwhole text\n%v", got, want)
	}
}

func TestRulesList(t *testing.T) {
	rs := Rules()
	if len(rs) < 150 {
		t.Fatalf("%d rules", len(rs))
	}
	sev := map[string]string{}
	for i, r := range rs {
		if i > 0 && rs[i-1].ID >= r.ID {
			t.Errorf("not sorted at %s", r.ID)
		}
		if r.Description == "" || (r.Severity != "critical" && r.Severity != "high") || r.Fixed != (r.Severity == "critical") {
			t.Errorf("rule %+v", r)
		}
		sev[r.ID] = r.Severity
	}
	for id, want := range map[string]string{
		"aws-access-token": "critical", "github-pat": "critical", "slack-bot-token": "critical",
		"stripe-access-token": "critical", "private-key": "critical", "gcp-api-key": "critical",
		"generic-api-key": "high", "adafruit-api-key": "high", "jwt": "high", "curl-auth-user": "high",
	} {
		if sev[id] != want {
			t.Errorf("%s = %q, want %q", id, sev[id], want)
		}
	}
}

// gitleaks logs through a global zerolog logger; diffpal silences it.
func TestGitleaksIsSilent(t *testing.T) {
	Scan("x")
	if l := logging.Logger.GetLevel(); l != zerolog.Disabled {
		t.Errorf("gitleaks log level %v", l)
	}
}

func TestScanConcurrent(t *testing.T) {
	tok := "ghp_" + st.Gen("conc", st.Alnum, 36)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				if ms := Scan(fmt.Sprintf("t%d = %q\n", i, tok)); len(ms) != 1 {
					t.Errorf("found %d", len(ms))
					return
				}
			}
		}()
	}
	wg.Wait()
}

// detect is the package gitleaks' detector comes from; it must be the
// default configuration.
var _ = detect.NewDetectorDefaultConfig

// gitleaks' generic rule wants a random value: names and phrases assigned
// to key-like names are not secrets (formerly sec.high-entropy-secret).
func TestGenericRuleOnlyForRandomValues(t *testing.T) {
	text := strings.Join([]string{
		`const apiKey = "9fK2xQ7mLp4Zr8Vb1Nw6Tc3Hy5Pj0Sd2"`,
		`const apiKey2 = "my-service-api-key-name-value"`,
		`const apiKeyHeader = "X-Api-Key-Header-Value-Name"`,
	}, "\n")
	var lines []int
	for _, m := range Scan(text) {
		lines = append(lines, m.Line)
	}
	if !slices.Equal(lines, []int{1}) {
		t.Errorf("lines %v, want [1]", lines)
	}
}

// TestKwFold: the folded keyword index answers every byte pair as the
// index of the lowered pair does.
func TestKwFold(t *testing.T) {
	st := detector()
	if st.err != nil {
		t.Fatal(st.err)
	}
	hits := 0
	for a := range 256 {
		for b := range 256 {
			want := st.kwIndex[uint16(lowerTable[a])<<8|uint16(lowerTable[b])]
			if got := st.kwFold[uint16(a)<<8|uint16(b)]; got != want {
				t.Fatalf("pair %q: folded index %d, lowered index %d", []byte{byte(a), byte(b)}, got, want)
			}
			if want != 0 {
				hits++
			}
		}
	}
	if hits == 0 {
		t.Fatal("no keyword pairs: the test is not testing")
	}
}
