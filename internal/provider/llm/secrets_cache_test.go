package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/diffpalhq/diffpal/internal/provider"
	"github.com/diffpalhq/diffpal/internal/qa"
)

// planted secrets: the part after the prefix is what must never leave.
var planted = []struct{ line, secret string }{
	{`aws_access_key_id = AKIAQ3EGUMJ7LKQ2X4PZ`, "Q3EGUMJ7LKQ2X4PZ"},
	{`aws_secret_access_key = "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"`, "wJalrXUtnFEMI/K7MDENGbPxRfiCY9q2Lm8Tz4Hd"},
	{`const token = "ghp_R8d2kLq9Zt4Vb7Nw1Xc5Hy3Pm6Sj0Fa2Ge8u"`, "R8d2kLq9Zt4Vb7Nw1Xc5Hy3Pm6Sj0Fa2Ge8u"},
	{`OPENAI_API_KEY=sk-proj-Vq8Zr2Lm5Tx9Kc3Nw7Bd1Hf6Jg4Ps0Ya2Qe8Ru1Ti5`, "Vq8Zr2Lm5Tx9Kc3Nw7Bd1Hf6Jg4Ps0Ya2Qe8Ru1Ti5"},
	{`client = Anthropic(api_key="sk-ant-api03-Xk9Qm2Vr7Lp4Tz8Nc1Bw6Hd3Jf5Gs0Ya_Ue2Ri-Ko9")`, "Xk9Qm2Vr7Lp4Tz8Nc1Bw6Hd3Jf5Gs0Ya_Ue2Ri-Ko9"},
	{`stripe.api_key = 'sk_live_51HqT9xK2mV8pL4rN7cW3zY6b'`, "51HqT9xK2mV8pL4rN7cW3zY6b"},
	{`DATABASE_PASSWORD=Pr0d-S3cret-9911`, "Pr0d-S3cret-9911"},
	{`url: postgres://admin:Sup3rS3cretPw@db.internal:5432/app`, "Sup3rS3cretPw"},
	{`curl -H "Authorization: Bearer q7Vd9Lx2Kp8Zr4Tm1Nc6Bw3Hf5Jg0Ys"`, "q7Vd9Lx2Kp8Zr4Tm1Nc6Bw3Hf5Jg0Ys"},
	{`signing_key: Zq4Wm8Rt2Yp6Lk0Hs3Dn7Fb1Vc5`, "Zq4Wm8Rt2Yp6Lk0Hs3Dn7Fb1Vc5"},
	{`"private_key": "-----BEGIN RSA PRIVATE KEY-----`, "-----BEGIN RSA PRIVATE KEY"},
	{`MIIEowIBAAKCAQEA7x9Kq2Lm8Vr4Tz1Nc6Bw3Hd5Jf0Gs2Ya8Ue4Ri7Ko1`, "MIIEowIBAAKCAQEA7x9Kq2Lm8Vr4Tz1Nc6Bw3Hd5Jf0Gs2Ya8Ue4Ri7Ko1"},
	{`-----END RSA PRIVATE KEY-----"`, "-----END RSA PRIVATE KEY"},
}

func TestSecretsNeverReachTheClient(t *testing.T) {
	var content []string
	for i, p := range planted {
		content = append(content, fmt.Sprintf("setting%d := 1", i), p.line)
	}
	content = append(content, "after_pem := 1")
	pathSecret := "config/ghp_Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2.txt"
	ch := mkChange(t,
		tfile{path: "deploy/settings.py", content: content},
		tfile{path: "app/main.go", content: append(lines(30, "code %d"), content...), added: []int{31, 33, 35, 37, 39, 41, 43, 45, 47, 49, 51, 53, 55}},
		tfile{path: pathSecret, content: []string{"x"}},
	)
	ch.Subjects = []string{"add deploy key ghp_Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8 for CI"}
	dir := t.TempDir()
	// The model answers invalidly once, so the repair messages (which
	// echo the answer) are covered too.
	fc := &fakeClient{script: []step{{json: `{"candidates": 7}`}}}
	p, _ := newProvider(t, fc, func(c *Config) {
		c.CacheDir = dir
		c.CommitSubjects = true
		c.Instructions = "Never accept the key sk-ant-api03-Instr9Qm2Vr7Lp4Tz8Nc1Bw6Hd3Jf5Gs0Ya in code."
	})
	res, err := p.ReviewProfile(context.Background(), profileReq(t, ch, qa.ProfileSecurityReviewer))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.VerifyCandidates(context.Background(), VerifyRequest{Change: ch, Candidates: []provider.Candidate{{
		Title: "key", Message: "leaks ghp_R8d2kLq9Zt4Vb7Nw1Xc5Hy3Pm6Sj0Fa2Ge8u", Path: "deploy/settings.py", StartLine: 6, EndLine: 6,
		Anchor: planted[1].line, EvidenceRefs: []string{"f2:h1"}}}}); err != nil {
		t.Fatal(err)
	}
	sent := allBytes(fc.requests())
	var onDisk strings.Builder
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			onDisk.Write(b)
		}
		return nil
	})
	secrets := []string{"Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2", "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8", "Instr9Qm2Vr7Lp4Tz8Nc1Bw6Hd3Jf5Gs0Ya"}
	for _, pl := range planted {
		secrets = append(secrets, pl.secret)
	}
	for _, where := range []struct{ name, text string }{{"requests", sent}, {"cache", onDisk.String()}} {
		for _, s := range secrets {
			// The secret, and every 10-byte window of it.
			for i := 0; i+10 <= len(s); i++ {
				if strings.Contains(where.text, s[i:i+10]) {
					t.Errorf("%s contain %q (from secret %q)", where.name, s[i:i+10], s)
					break
				}
			}
		}
	}
	if !strings.Contains(sent, Redacted) {
		t.Error("nothing was redacted?")
	}
	// Redaction keeps line numbers: code after the PEM block is still
	// numbered as in the file.
	if !strings.Contains(sent, fmt.Sprintf("%5d  +after_pem := 1", 2*len(planted)+1)) {
		t.Error("line numbering shifted by redaction")
	}
	// The local snippet is redacted as well.
	for _, c := range res.Candidates {
		for _, s := range secrets {
			if strings.Contains(c.Snippet+c.Anchor, s) {
				t.Errorf("candidate carries secret %q", s)
			}
		}
	}
}

func TestRedactorKeepsCode(t *testing.T) {
	r := &Redactor{}
	for _, s := range []string{
		`token := os.Getenv("GITHUB_TOKEN")`,
		`apiKey = process.env.API_KEY`,
		`password: ${DB_PASSWORD}`,
		`SECRET_KEY = settings.SECRET_KEY`,
		`token_count: 12345`,
		`if token == "" {`,
		`sha = "3f786850e387550fdab836ed7e6dc881de23001b"`,
	} {
		if got := r.Redact(s); got != s {
			t.Errorf("Redact(%q) = %q", s, got)
		}
	}
}

func TestCacheReasksOnlyChangedChunks(t *testing.T) {
	var files []tfile
	for i := 0; i < 8; i++ {
		files = append(files, tfile{path: fmt.Sprintf("pkg%d/file.go", i), content: lines(60, fmt.Sprintf("pkg%d body %%d", i)), added: []int{10, 40}})
	}
	dir := t.TempDir()
	profiles := []qa.Profile{qa.ProfileCodeReviewer, qa.ProfileSecurityReviewer, qa.ProfileSilentFailureHunter}
	review3 := func(ch *provider.Change, model string) (*Provider, *fakeClient, map[qa.Profile]provider.ProfileResult) {
		fc := &fakeClient{}
		p, _ := newProvider(t, fc, func(c *Config) { c.CacheDir = dir; c.ChunkBytes = 4000; c.Model = model })
		out := map[qa.Profile]provider.ProfileResult{}
		for _, pr := range profiles {
			res, err := p.ReviewProfile(context.Background(), profileReq(t, ch, pr))
			if err != nil {
				t.Fatal(err)
			}
			out[pr] = res
		}
		return p, fc, out
	}
	ch1 := mkChange(t, files...)
	p1, fc1, r1 := review3(ch1, "m1")
	first := len(fc1.requests())
	chunks := len(chunkBlocks(mustSelect(t, p1, ch1).blocks, 4000))
	if chunks < 4 || first != chunks*len(profiles) {
		t.Fatalf("first review: %d calls for %d chunks", first, chunks)
	}
	// Same change: everything from the cache, same answers, no tokens.
	p2, fc2, r2 := review3(ch1, "m1")
	if n := len(fc2.requests()); n != 0 {
		t.Errorf("unchanged re-review made %d calls", n)
	}
	if st := p2.Stats(); st.CacheHits != int64(first) || st.RequestBytes != 0 {
		t.Errorf("stats = %+v", st)
	}
	for _, pr := range profiles {
		if !slices.EqualFunc(r1[pr].Candidates, r2[pr].Candidates, func(a, b provider.Candidate) bool { return a.Title == b.Title && a.StartLine == b.StartLine }) {
			t.Errorf("%s: cached answers differ", pr)
		}
		if r2[pr].Attempts != 0 || *r2[pr].InputTokens != 0 {
			t.Errorf("%s: cached review reports attempts %d tokens %d", pr, r2[pr].Attempts, *r2[pr].InputTokens)
		}
	}
	// A one-line push to one file: only its chunk is asked again.
	files[3].content = slices.Clone(files[3].content)
	files[3].content[39] = "pkg3 body 40 (changed)"
	ch3 := mkChange(t, files...)
	p3, fc3, _ := review3(ch3, "m1")
	if n := len(fc3.requests()); n != len(profiles) {
		t.Errorf("one-line push re-asked %d chunks, want %d (one per profile)", n, len(profiles))
	}
	naive := 0
	for _, pr := range profiles {
		naive += NaiveRequestBytes(profileReq(t, ch3, pr))
	}
	st := p3.Stats()
	t.Logf("one-line push: sent %d bytes (~%d tokens) vs naive whole-diff-per-profile %d bytes (~%d tokens)",
		st.RequestBytes, st.EstimatedTokens, naive, (naive+3)/4)
	if st.RequestBytes >= int64(naive) {
		t.Errorf("cached re-review sent %d bytes, naive %d", st.RequestBytes, naive)
	}
	// Another model is another key.
	_, fc4, _ := review3(ch1, "m2")
	if len(fc4.requests()) != first {
		t.Errorf("model change reused the cache")
	}
	// Files 0600, directories 0700, no evidence content and no prompt.
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := d.Info()
		if p == dir {
			return nil
		}
		if d.IsDir() && fi.Mode().Perm() != 0o700 || !d.IsDir() && fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v", p, fi.Mode())
		}
		if !d.IsDir() {
			b, _ := os.ReadFile(p)
			if bytes.Contains(b, []byte("body")) || bytes.Contains(b, []byte("fence token")) {
				t.Errorf("%s holds prompt or evidence text", p)
			}
			if strings.HasPrefix(d.Name(), ".tmp-") {
				t.Errorf("temp file left: %s", p)
			}
		}
		return nil
	})
}

func mustSelect(t *testing.T, p *Provider, ch *provider.Change) *selection {
	s, err := p.selectEvidence(ch, p.cfg.MaxBytes)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestCacheIgnoresBadEntries(t *testing.T) {
	dir := t.TempDir()
	c := &Cache{Dir: dir}
	key := strings.Repeat("ab", 32)
	if err := c.Put(key, "fake", "m", "profile", json.RawMessage(`{"a":1}`), Usage{InputTokens: 3}); err != nil {
		t.Fatal(err)
	}
	if raw, u, ok := c.Get(key); !ok || string(raw) != `{"a":1}` || u.InputTokens != 3 {
		t.Errorf("get = %s %v %v", raw, u, ok)
	}
	if _, _, ok := c.Get("../../etc/passwd"); ok {
		t.Error("bad key accepted")
	}
	if err := c.Put("nothex", "fake", "m", "profile", json.RawMessage(`{}`), Usage{}); err == nil {
		t.Error("bad key written")
	}
	// A corrupt entry is a miss.
	os.WriteFile(c.path(key), []byte("{"), 0o600)
	if _, _, ok := c.Get(key); ok {
		t.Error("corrupt entry served")
	}
	// A symlink is not followed.
	other := strings.Repeat("cd", 32)
	os.MkdirAll(filepath.Dir(c.path(other)), 0o700)
	os.Symlink(c.path(key), c.path(other))
	if _, _, ok := c.Get(other); ok {
		t.Error("symlink followed")
	}
	if err := c.Put(other, "fake", "m", "profile", json.RawMessage(`{}`), Usage{}); err == nil {
		t.Error("symlink overwritten")
	}
}

func TestChunkBoundariesStable(t *testing.T) {
	var files []tfile
	for i := 0; i < 20; i++ {
		files = append(files, tfile{path: fmt.Sprintf("d/f%02d.go", i), content: lines(30, "v%d"), added: []int{15}})
	}
	p, _ := newProvider(t, &fakeClient{}, nil)
	keysOf := func(fs []tfile) []string {
		ch := mkChange(t, fs...)
		var out []string
		for _, c := range chunkBlocks(mustSelect(t, p, ch).blocks, 6000) {
			var refs []string
			for _, b := range c.blocks {
				refs = append(refs, b.item.Ref+"@"+b.item.SHA256[:8])
			}
			out = append(out, strings.Join(refs, ","))
		}
		return out
	}
	before := keysOf(files)
	files[7].content = append(slices.Clone(files[7].content[:14]), append([]string{"new", "lines", "here"}, files[7].content[14:]...)...)
	files[7].added = []int{15, 16, 17, 18}
	after := keysOf(files)
	changed := 0
	for _, k := range after {
		if !slices.Contains(before, k) {
			changed++
		}
	}
	if changed > 2 || len(before) < 5 {
		t.Errorf("%d of %d chunks changed after editing one file:\n%q\n%q", changed, len(after), before, after)
	}
}

func TestSchemasCompileAndAcceptAnswers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		schema json.RawMessage
		ok     []string
		bad    []string
	}{
		{"answer", AnswerSchema,
			[]string{answerJSON(), answerJSON(candJSON("t", "f1:h1", "a.go", 1, 2))},
			[]string{`{"candidates":[]}`, answerJSON(strings.Replace(candJSON("t", "f1:h1", "a.go", 1, 2), `"high"`, `"blocker"`, 1))}},
		{"verify", VerifySchema,
			[]string{`{"verdicts":[{"candidate_id":"C1","verdict":"confirmed","rationale":"r","evidence_refs":["f1:h1"]}]}`},
			[]string{`{"verdicts":[{"candidate_id":"C1","verdict":"maybe","rationale":"r","evidence_refs":[]}]}`}},
	} {
		c := jsonschema.NewCompiler()
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(tc.schema))
		if err != nil {
			t.Fatal(err)
		}
		c.AddResource("mem://"+tc.name, doc)
		s, err := c.Compile("mem://" + tc.name)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for _, in := range tc.ok {
			v, _ := jsonschema.UnmarshalJSON(strings.NewReader(in))
			if err := s.Validate(v); err != nil {
				t.Errorf("%s rejects %s: %v", tc.name, in, err)
			}
		}
		for _, in := range tc.bad {
			v, _ := jsonschema.UnmarshalJSON(strings.NewReader(in))
			if err := s.Validate(v); err == nil {
				t.Errorf("%s accepts %s", tc.name, in)
			}
		}
	}
}

func TestVerifyCandidates(t *testing.T) {
	ch := mkChange(t, tfile{path: "svc/handler.go", content: lines(60, "handler %d"), added: []int{12, 45}})
	cands := []provider.Candidate{
		{Title: "nil deref", Path: "svc/handler.go", StartLine: 12, EndLine: 12, EvidenceRefs: []string{"f1:h1"}},
		{Title: "leak", Path: "svc/handler.go", StartLine: 45, EndLine: 45},
		{Title: "race", Path: "svc/handler.go", StartLine: 12, EndLine: 12},
	}
	partial := `{"verdicts":[
		{"candidate_id":"C1","verdict":"confirmed","rationale":"handler 12 dereferences p","evidence_refs":["f1:h1"]},
		{"candidate_id":"C2","verdict":"rejected","rationale":"closed on line 46","evidence_refs":["f1:h2"]},
		{"candidate_id":"C3","verdict":"confirmed","rationale":"guess","evidence_refs":["f7:h1"]}]}`
	cases := []struct {
		name     string
		script   []step
		want     []Verdict
		calls    int
		wantErr  error
		batch    int
		checkReq func(t *testing.T, reqs []Request)
	}{
		{name: "bad verdict repaired then unverified", script: []step{{json: partial}, {json: partial}, {json: partial}},
			want: []Verdict{VerdictConfirmed, VerdictRejected, VerdictUnverified}, calls: 3,
			checkReq: func(t *testing.T, reqs []Request) {
				r := reqs[0]
				if r.SchemaName != VerifySchemaName || !strings.Contains(r.Messages[0].Content, "part=candidate id=C3") ||
					!strings.Contains(r.Messages[0].Content, "ref=f1:h2") || strings.Contains(r.System, "nil deref") {
					t.Errorf("request = %+v", r)
				}
				if !strings.Contains(reqs[1].Messages[2].Content, "f7:h1") {
					t.Error("repair does not name the bad ref")
				}
			}},
		{name: "all good first time", script: []step{{json: strings.Replace(partial, `"f7:h1"`, `"f1:h1"`, 1)}},
			want: []Verdict{VerdictConfirmed, VerdictRejected, VerdictConfirmed}, calls: 1},
		{name: "batches", batch: 2, want: []Verdict{VerdictConfirmed, VerdictConfirmed, VerdictConfirmed}, calls: 2},
		{name: "unparseable", script: []step{{json: "no"}, {json: "no"}, {json: "no"}}, wantErr: ErrInvalidAnswer, calls: 3},
		{name: "auth", script: []step{{err: &Error{Kind: Auth, Provider: "fake"}}}, wantErr: ErrProviderAuth, calls: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fc := &fakeClient{script: tc.script, fallback: confirmAll}
			p, _ := newProvider(t, fc, func(c *Config) { c.Concurrency = 1 })
			res, err := p.VerifyCandidates(context.Background(), VerifyRequest{Change: ch, Candidates: cands, Reasons: []string{"high_risk_domain", "bad reason!"}, BatchSize: tc.batch})
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []Verdict
			for i, v := range res.Verifications {
				got = append(got, v.Verdict)
				if v.Index != i || v.Rationale == "" {
					t.Errorf("verification %d = %+v", i, v)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("verdicts = %v, want %v", got, tc.want)
			}
			reqs := fc.requests()
			if len(reqs) != tc.calls || res.Calls != tc.calls {
				t.Errorf("calls = %d (reported %d), want %d", len(reqs), res.Calls, tc.calls)
			}
			if !strings.Contains(reqs[0].System, "high_risk_domain") || strings.Contains(reqs[0].System, "bad reason!") {
				t.Error("reasons not filtered into the system message")
			}
			if tc.checkReq != nil {
				tc.checkReq(t, reqs)
			}
		})
	}
}

var candidateIDRE = regexp.MustCompile(`part=candidate id=(C\d+)>>>`)

// confirmAll confirms every candidate of a verification request, citing
// the first evidence block.
func confirmAll(req Request) (Response, error) {
	ref, _, _, _ := firstBlock(req)
	var vs []string
	for _, m := range candidateIDRE.FindAllStringSubmatch(req.Messages[0].Content, -1) {
		vs = append(vs, fmt.Sprintf(`{"candidate_id":%q,"verdict":"confirmed","rationale":"seen","evidence_refs":[%q]}`, m[1], ref))
	}
	return Response{JSON: []byte(`{"verdicts":[` + strings.Join(vs, ",") + `]}`)}, nil
}
