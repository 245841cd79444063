package cli

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/diffpalhq/diffpal/internal/git/gittest"
	"github.com/diffpalhq/diffpal/internal/provider/llm"
	st "github.com/diffpalhq/diffpal/internal/secrets/secretstest"
)

// A planted secret: prefix is its public format prefix (ghp_, AKIA), which
// may be shown; value is what must never leave in full.
type plantedSecret struct {
	shape, prefix, value string
}

func (p plantedSecret) full() string { return p.prefix + p.value }

// secretCorpus is a change that plants realistic secrets in every shape
// the detector covers, across several file types.
type secretCorpus struct {
	plants   []plantedSecret
	base     map[string]string
	head     map[string]string
	newFiles []string
	subject  string
	// echo are lines with secrets the fake model quotes in its answers;
	// bare are the secrets alone, which it repeats where its text is not
	// sent back to a model (a model can only repeat what it was sent, and
	// a bare value carries no context a detector could see: only what the
	// review learned from the change redacts it).
	echo, bare []string
	// headers are hunk-header function contexts the diff must show.
	headers []string
}

func (c *secretCorpus) add(shape, prefix, value string) string {
	c.plants = append(c.plants, plantedSecret{shape, prefix, value})
	return prefix + value
}

// password builds a human-made password with symbols, fixed by label.
func password(label, sep string) string {
	return st.Gen(label+"a", st.Letters, 5) + sep + st.Gen(label+"b", st.Digits, 3) + "!" + st.Gen(label+"c", st.Alnum, 6)
}

func pemBlock(lines []string, indent string) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(indent + l + "\n")
	}
	return b.String()
}

func buildSecretCorpus() *secretCorpus {
	c := &secretCorpus{base: map[string]string{}, head: map[string]string{}}
	g := st.Gen
	pw := func(label string) string { return c.add("password", "", password(label, "#")) }

	// .env: URL credentials (empty user, @ inside the password), shell
	// exports, key/value with secret-like names.
	c.head[".env"] = strings.Join([]string{
		"# local overrides, never commit",
		"DATABASE_URL=mysql://shop:" + c.add("url-password-with-@", "", g("my1", st.Alnum, 6)+"@"+g("my2", st.Alnum, 5)+"@"+g("my3", st.Alnum, 4)) + "@mysql.internal:3306/shop",
		"REDIS_URL=redis://:" + c.add("url-empty-user", "", g("redis", st.Alnum, 24)) + "@cache.internal:6379/0",
		"AMQP_URL=amqps://orders:" + c.add("url-password", "", password("amqp", "%")) + "@rabbit.internal:5671/orders",
		"export AWS_ACCESS_KEY_ID=" + c.add("aws-access-key-id", "AKIA", g("envaki", st.UpperNum, 16)),
		"export AWS_SECRET_ACCESS_KEY=" + c.add("aws-secret-key (export)", "", g("envask", st.Base64, 40)),
		"GITLAB_TOKEN=" + c.add("gitlab-pat", "glpat-", g("glpat", st.URLSafe, 20)),
		"DB_PASSWORD=" + pw("envdb"),
		"REDIS_PASS=" + pw("envredis"),
		"SECRET_KEY_BASE=" + c.add("hex secret (.env)", "", g("skb", st.Hex, 128)),
		`JWT_SECRET="` + c.add("quoted .env secret", "", g("jwtsecret", st.Alnum, 48)) + `"`,
		"AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountName=acmeshop;AccountKey=" + c.add("azure-storage-key", "", g("azkey", st.Base64, 86)+"==") + ";EndpointSuffix=core.windows.net",
		"ANTHROPIC_API_KEY=" + c.add("anthropic-api-key", "sk-ant-api03-", g("ant", st.URLSafe, 93)+"AA"),
		"LOG_LEVEL=debug",
		"",
	}, "\n")
	c.newFiles = append(c.newFiles, ".env")

	c.head[".npmrc"] = "registry=https://registry.npmjs.org/\n//registry.npmjs.org/:_authToken=" + c.add("npm-token", "npm_", g("npm", st.Alnum, 36)) + "\n"
	c.head[".pypirc"] = "[distutils]\nindex-servers = pypi\n\n[pypi]\nusername = __token__\npassword = " + c.add("pypi-token", "pypi-", "AgEIcHlwaS5vcmc"+g("pypi", st.URLSafe, 70)) + "\n"
	c.newFiles = append(c.newFiles, ".npmrc", ".pypirc")

	// Go: provider formats, URLs in strings, headers, struct literals.
	c.head["app/config.go"] = strings.Join([]string{
		"package app",
		"",
		`import (`,
		`	"net/http"`,
		`	"os"`,
		`)`,
		"",
		`const githubToken = "` + c.add("github-pat", "ghp_", g("ghp", st.Alnum, 36)) + `"`,
		`var stripeKey = "` + c.add("stripe-secret-key", "sk_live_", g("stripe", st.Alnum, 99)) + `"`,
		`var slackBot = "` + c.add("slack-bot-token", "xoxb-", g("sl1", st.Digits, 12)+"-"+g("sl2", st.Digits, 13)+"-"+g("sl3", st.Alnum, 24)) + `"`,
		`const slackWebhook = "https://hooks.slack.com/services/` + c.add("slack-webhook", "", "T"+g("wh1", st.UpperNum, 8)+"/B"+g("wh2", st.UpperNum, 10)+"/"+g("wh3", st.Alnum, 24)) + `"`,
		"",
		`func dsn() string { return "postgres://admin:` + c.add("url-password (Go string)", "", password("pg", "&")) + `@db.internal:5432/app?sslmode=require" }`,
		"",
		`var mongoURI = "mongodb+srv://svc-reporting:` + c.add("url-password-with-@-and-/", "", g("mg1", st.Alnum, 7)+"@"+g("mg2", st.Alnum, 4)+"/"+g("mg3", st.Alnum, 5)) + `@cluster0.ab1cd.mongodb.net/reports"`,
		"",
		`func authorize(req *http.Request) {`,
		`	req.Header.Set("Authorization", "Bearer ` + c.add("bearer-token", "", g("bearer", st.URLSafe, 40)) + `")`,
		`	req.Header.Set("X-Api-Key", os.Getenv("SERVICE_API_KEY"))`,
		`}`,
		"",
		`var sessionJWT = "` + c.add("jwt", "", "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."+base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"`+g("jwtsub", st.Alnum, 12)+`","role":"admin","iat":1767225600}`))+"."+g("jwtsig", st.URLSafe, 43)) + `"`,
		"",
		`type Config struct{ User, Password string }`,
		"",
		`var defaults = Config{User: "svc", Password: "` + pw("gostruct") + `"}`,
		"",
		`const twilioAuthToken = "` + c.add("twilio-auth-token", "", g("twilio", st.Hex, 32)) + `"`,
		`var sendgridKey = "` + c.add("sendgrid-key", "SG.", g("sg1", st.URLSafe, 22)+"."+g("sg2", st.URLSafe, 43)) + `"`,
		`var doToken = "` + c.add("digitalocean-pat", "dop_v1_", g("do", st.Hex, 64)) + `"`,
		`var token = os.Getenv("GITHUB_TOKEN")`,
		"",
	}, "\n")
	c.newFiles = append(c.newFiles, "app/config.go")

	// Python: provider formats in calls and assignments.
	c.head["scripts/deploy.py"] = strings.Join([]string{
		"import os",
		"",
		"import anthropic",
		"import openai",
		"import psycopg2",
		"",
		`OPENAI_API_KEY = "` + c.add("openai-project-key", "sk-proj-", g("oai", st.URLSafe, 74)+"T3BlbkFJ"+g("oai2", st.URLSafe, 74)) + `"`,
		`client = anthropic.Anthropic(api_key="` + c.add("anthropic-key (kwarg)", "sk-ant-api03-", g("ant2", st.URLSafe, 93)+"AA") + `")`,
		`GOOGLE_MAPS_KEY = "` + c.add("google-api-key", "AIza", g("gcp", st.URLSafe, 35)) + `"`,
		`HF_TOKEN = "` + c.add("huggingface-token", "hf_", g("hf", st.Letters, 34)) + `"`,
		`DD_API_KEY = "` + c.add("datadog-api-key", "", g("dd", st.Hex, 32)) + `"`,
		`HEROKU_API_KEY = "` + c.add("heroku-api-key", "", g("hk1", st.Hex, 8)+"-"+g("hk2", st.Hex, 4)+"-4"+g("hk3", st.Hex, 3)+"-a"+g("hk4", st.Hex, 3)+"-"+g("hk5", st.Hex, 12)) + `"`,
		`SHOPIFY_TOKEN = "` + c.add("shopify-token", "shpat_", g("shop", st.Hex, 32)) + `"`,
		`TWILIO_API_KEY = "` + c.add("twilio-api-key", "SK", g("twsk", st.Hex, 32)) + `"`,
		`DATABRICKS_TOKEN = "` + c.add("databricks-token", "dapi", g("dapi", st.Hex, 32)) + `"`,
		"",
		"",
		"def connect():",
		`    return psycopg2.connect(host="db.internal", user="app", password="` + pw("pykw") + `")`,
		"",
		"",
		"def upload(session):",
		`    session.headers["Authorization"] = "token ` + c.add("github-oauth (header)", "gho_", g("gho", st.Alnum, 36)) + `"`,
		`    return session.post(os.environ["UPLOAD_URL"])`,
		"",
	}, "\n")
	c.newFiles = append(c.newFiles, "scripts/deploy.py")

	// Shell: curl credentials.
	c.head["scripts/smoke.sh"] = strings.Join([]string{
		"#!/bin/sh",
		"set -eu",
		"curl -fsS -u deploy:" + c.add("curl -u password", "", password("curlu", "$")) + " https://ci.internal/api/health",
		`curl -fsS -H "Authorization: Basic ` + c.add("basic-auth header", "", base64.StdEncoding.EncodeToString([]byte("deploy:"+password("basic", "+")))) + `" https://ci.internal/api/jobs`,
		"export PGPASSWORD='" + pw("pgpass") + "'",
		"",
	}, "\n")
	c.newFiles = append(c.newFiles, "scripts/smoke.sh")

	// YAML: nested keys, quoted and plain values, a URL, a Kubernetes
	// secret.
	c.head["deploy/values.yaml"] = strings.Join([]string{
		"database:",
		"  host: db.internal",
		"  username: shop",
		"  password: " + pw("yamldb"),
		"  url: postgresql://shop:" + c.add("url-password (YAML)", "", password("yamlurl", "*")) + "@db.internal/shop",
		"redis:",
		`  password: "` + pw("yamlredis") + `"`,
		"github:",
		"  token: " + c.add("github-fine-grained-pat", "github_pat_", g("fg1", st.Alnum, 22)+"_"+g("fg2", st.Alnum, 59)),
		"oauth:",
		"  google:",
		"    client_id: 123456789012-abcdefghijklmnop.apps.googleusercontent.com",
		"    client_secret: " + c.add("google-oauth-secret", "GOCSPX-", g("gocspx", st.URLSafe, 28)),
		"  azure:",
		`    client_secret: "` + c.add("azure-ad-client-secret", "", g("az1", st.Alnum, 3)+"8Q~"+g("az2", st.Alnum, 34)) + `"`,
		"stripe:",
		"  webhookSecret: " + c.add("stripe-webhook-secret", "whsec_", g("whsec", st.Alnum, 32)),
		"mailgun:",
		"  apiKey: " + c.add("api key (YAML)", "", g("mgkey", st.Alnum, 32)),
		"---",
		"apiVersion: v1",
		"kind: Secret",
		"metadata:",
		"  name: app",
		"data:",
		"  password: " + c.add("k8s secret data", "", base64.StdEncoding.EncodeToString([]byte(password("k8s", "@")))),
		"",
	}, "\n")
	c.newFiles = append(c.newFiles, "deploy/values.yaml")

	// JSON: a GCP service account with its key on one escaped line.
	gcp := st.PEMBody("gcp", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC", 26, 64, false)
	for _, l := range gcp {
		c.add("pem body (JSON \\n-escaped)", "", l)
	}
	c.head["config/service-account.json"] = strings.Join([]string{
		"{",
		`  "type": "service_account",`,
		`  "project_id": "acme-prod",`,
		`  "private_key": "-----BEGIN PRIVATE KEY-----\n` + strings.Join(gcp, `\n`) + `\n-----END PRIVATE KEY-----\n",`,
		`  "client_email": "deploy@acme-prod.iam.gserviceaccount.com",`,
		`  "client_secret": "` + c.add("json client_secret", "", g("jsoncs", st.URLSafe, 40)) + `",`,
		`  "docker_auth": {"auths": {"registry.acme.io": {"auth": "` + c.add("docker auth", "", base64.StdEncoding.EncodeToString([]byte("ci:"+password("docker", "%")))) + `"}}}`,
		"}",
		"",
	}, "\n")
	c.newFiles = append(c.newFiles, "config/service-account.json")

	// CSV with a header naming its secret columns (AWS console export).
	c.head["data/iam-users.csv"] = strings.Join([]string{
		"User name,Password,Access key ID,Secret access key,Console login link",
		"deploy-bot," + pw("csv1") + ",AKIA" + c.add("aws-access-key-id (CSV)", "AKIA", g("csvaki1", st.UpperNum, 16))[4:] + "," + c.add("aws-secret-key (CSV)", "", g("csvask1", st.Base64, 40)) + ",https://acme.signin.aws.amazon.com/console",
		"report-bot," + pw("csv2") + ",AKIA" + c.add("aws-access-key-id (CSV)", "AKIA", g("csvaki2", st.UpperNum, 16))[4:] + "," + c.add("aws-secret-key (CSV)", "", g("csvask2", st.Base64, 40)) + ",https://acme.signin.aws.amazon.com/console",
		"",
	}, "\n")
	c.newFiles = append(c.newFiles, "data/iam-users.csv")

	// TSV with a header naming a token column.
	c.head["data/tokens.tsv"] = strings.Join([]string{
		"service\ttoken\towner",
		"internal-api\t" + c.add("tsv token cell", "", g("tsv1", st.Alnum, 40)) + "\tplatform",
		"billing\t" + c.add("tsv token cell", "", g("tsv2", st.URLSafe, 32)) + "\tpayments",
		"",
	}, "\n")
	c.newFiles = append(c.newFiles, "data/tokens.tsv")

	// CSV changed far below its header: the hunk has no header, and its
	// function context is the row above (a full credential row).
	var rot []string
	rot = append(rot, "name,access_key_id,secret_access_key,rotated")
	for i := range 12 {
		rot = append(rot, fmt.Sprintf("runner-%02d,AKIA%s,%s,2025-12-%02d", i, g(fmt.Sprintf("rotaki%d", i), st.UpperNum, 16), g(fmt.Sprintf("rotask%d", i), st.Base64, 40), i+1))
	}
	c.base["data/rotation.csv"] = strings.Join(rot, "\n") + "\n"
	for i := range 12 {
		c.add("aws-access-key-id (CSV row, no header in hunk)", "AKIA", g(fmt.Sprintf("rotaki%d", i), st.UpperNum, 16))
		c.add("aws-secret-key (CSV row, no header in hunk)", "", g(fmt.Sprintf("rotask%d", i), st.Base64, 40))
	}
	rot[9] = fmt.Sprintf("runner-08,AKIA%s,%s,2026-01-01", c.add("aws-access-key-id (CSV row, no header in hunk)", "AKIA", g("rotakiNEW", st.UpperNum, 16))[4:], c.add("aws-secret-key (CSV row, no header in hunk)", "", g("rotaskNEW", st.Base64, 40)))
	c.head["data/rotation.csv"] = strings.Join(rot, "\n") + "\n"
	c.headers = append(c.headers, "@@ "+rot[5][:70]) // git cuts the context at 80 bytes

	// PEM, BEGIN line above the hunk and carried by the hunk header's
	// function context: the indented body does not match git's default
	// funcname pattern, the BEGIN line (it starts with a letter) does.
	sigOld := st.PEMBody("sign-old", "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW", 14, 70, false)
	sigNew := slices.Clone(sigOld)
	for i := 7; i <= 9; i++ {
		sigNew[i] = st.Gen(fmt.Sprintf("sign-new-%d", i), st.Base64, 70)
	}
	for _, l := range append(slices.Clone(sigOld), sigNew[7:10]...) {
		c.add("pem body (BEGIN in hunk header)", "", l)
	}
	signing := func(body []string) string {
		return `"""Release signing for the updater."""` + "\n\nimport base64\n\n" +
			`SIGNING_KEY = """-----BEGIN OPENSSH PRIVATE KEY-----` + "\n" + pemBlock(body, "    ") +
			`    -----END OPENSSH PRIVATE KEY-----"""` + "\n\n\ndef sign(data):\n    return base64.b64encode(data)\n"
	}
	c.headers = append(c.headers, `@@ SIGNING_KEY = """-----BEGIN OPENSSH PRIVATE KEY-----`+"\n")
	c.base["deploy/signing.py"] = signing(sigOld)
	c.head["deploy/signing.py"] = signing(sigNew)

	// PEM file changed mid-key: the hunk has neither BEGIN nor END, and its
	// header carries a body line.
	srvOld := st.PEMBody("srv-old", "MIIEowIBAAKCAQEA", 25, 64, true)
	srvNew := slices.Clone(srvOld)
	srvNew[11] = st.GenLetterFirst("srv-new-11", st.Base64, 64)
	srvNew[12] = st.GenLetterFirst("srv-new-12", st.Base64, 64)
	for _, l := range append(slices.Clone(srvOld), srvNew[11:13]...) {
		c.add("pem body (hunk mid-key, no BEGIN/END)", "", l)
	}
	pemFile := func(kind string, body []string) string {
		return "-----BEGIN " + kind + " PRIVATE KEY-----\n" + pemBlock(body, "") + "-----END " + kind + " PRIVATE KEY-----\n"
	}
	c.headers = append(c.headers, "@@ "+srvOld[7]+"\n")
	c.base["deploy/tls/server.key"] = pemFile("RSA", srvOld)
	c.head["deploy/tls/server.key"] = pemFile("RSA", srvNew)

	// PEM file changed at its end: END in the hunk, BEGIN far above.
	cliOld := st.PEMBody("cli-old", "MHcCAQEEI", 20, 64, true)
	cliNew := slices.Clone(cliOld)
	cliNew[18] = st.GenLetterFirst("cli-new-18", st.Base64, 64)
	cliNew[19] = st.Gen("cli-new-19", st.Base64, 20) + "=="
	for _, l := range append(slices.Clone(cliOld), cliNew[18:]...) {
		c.add("pem body (END in hunk, no BEGIN)", "", l)
	}
	c.headers = append(c.headers, "@@ "+cliOld[14]+"\n")
	c.base["deploy/tls/client.key"] = pemFile("EC", cliOld)
	c.head["deploy/tls/client.key"] = pemFile("EC", cliNew)

	c.base["README.md"] = "# shop\n"
	c.head["README.md"] = "# shop\n\nDeployment notes live in deploy/.\n"
	c.subject = "deploy: rotate CI token " + c.add("github-pat (commit subject)", "ghp_", g("subject", st.Alnum, 36))
	env := strings.Split(c.head[".env"], "\n")
	c.echo = []string{env[1], env[2], env[4] + " " + env[5], env[8]}
	c.bare = []string{c.plants[0].full(), c.plants[1].full(), c.plants[4].full(), c.plants[5].full(), c.plants[7].full()}
	return c
}

func (c *secretCorpus) repo(t *testing.T) string {
	repo := gittest.New(t)
	for p, s := range c.base {
		repo.Write(p, s)
	}
	repo.Commit("base")
	repo.Git("checkout", "-q", "-b", "feature")
	for p, s := range c.head {
		repo.Write(p, s)
	}
	repo.Commit(c.subject)
	// The shapes this corpus is about must really be in the diff.
	d := repo.Git("diff", "main", "feature")
	for _, want := range c.headers {
		if !strings.Contains(d, want) {
			t.Fatalf("diff lacks hunk header %q:\n%s", want, d)
		}
	}
	return repo.Dir
}

// leakFake speaks the chat-completions wire format on loopback and
// records every request. Its answers repeat planted secrets in every
// free-text field, so the findings-side redaction is tested on its own
// (a model can only repeat what it saw, but the bundle must not trust
// that).
type leakFake struct {
	mu         sync.Mutex
	bodies     []string
	echo, bare []string
	newFiles   []string
}

var (
	verifyID  = regexp.MustCompile(`part=candidate id=(C\d+)`)
	diffBlock = regexp.MustCompile(`ref=(\S+) kind=diff lines=(\d+)-\d+>>>\n\| path: ("[^"\n]*")`)
)

func (f *leakFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.bodies = append(f.bodies, string(body))
	f.mu.Unlock()
	var req struct {
		Model          string `json:"model"`
		ResponseFormat struct {
			JSONSchema struct {
				Name string `json:"name"`
			} `json:"json_schema"`
		} `json:"response_format"`
		Messages []struct{ Role, Content string } `json:"messages"`
	}
	json.Unmarshal(body, &req)
	user := req.Messages[len(req.Messages)-1].Content
	e := func(i int) string { return f.echo[i%len(f.echo)] }
	b := func(i int) string { return f.bare[i%len(f.bare)] }
	var answer any
	if req.ResponseFormat.JSONSchema.Name == llm.VerifySchemaName {
		var vs []map[string]any
		for _, m := range verifyID.FindAllStringSubmatch(user, -1) {
			vs = append(vs, map[string]any{"candidate_id": m[1], "verdict": "confirmed", "rationale": "the hunk shows " + b(2) + " in clear", "evidence_refs": []string{"f1:h1"}})
		}
		answer = map[string]any{"verdicts": vs}
	} else {
		cands := []any{}
		for _, m := range diffBlock.FindAllStringSubmatch(user, -1) {
			var path string
			json.Unmarshal([]byte(m[3]), &path)
			if !slices.Contains(f.newFiles, path) {
				continue
			}
			var line int
			fmt.Sscan(m[2], &line)
			cands = append(cands, map[string]any{
				"title": "Hard-coded credential " + e(0), "description": "The file commits " + e(1) + " and " + e(2) + ".", "category": "security",
				"severity": "critical", "confidence": 0.95, "path": path, "start_line": line, "end_line": line, "evidence_refs": []string{m[1]},
				"impact": "anyone with the repository can use " + e(3), "impact_scope": "production " + b(0), "suggestion": "rotate " + b(1) + ", " + b(4) + " and load them from the environment",
				"anchor": e(2), "failure_condition": "the key " + e(3) + " is live", "flip_condition": nil,
			})
			if len(cands) == 2 {
				break
			}
		}
		answer = map[string]any{"candidates": cands, "coverage_gaps": []string{"did not check " + b(2)}, "unverified": []string{"whether " + b(3) + " is revoked"}}
	}
	content, _ := json.Marshal(answer)
	out, _ := json.Marshal(map[string]any{
		"id": "c1", "object": "chat.completion", "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": string(content)}}},
		"usage":   map[string]any{"prompt_tokens": 1000, "completion_tokens": 50},
	})
	w.Header().Set("Content-Type", "application/json")
	w.Write(out)
}

// textsOf returns what a reader could see in data: the text itself and,
// for JSON, every decoded string (JSON escaping must not hide a leak).
func textsOf(data string) []string {
	out := []string{data}
	var v any
	if json.Unmarshal([]byte(data), &v) == nil {
		var b strings.Builder
		var walk func(any)
		walk = func(v any) {
			switch x := v.(type) {
			case string:
				b.WriteString(x + "\n")
			case []any:
				for _, e := range x {
					walk(e)
				}
			case map[string]any:
				for k, e := range x {
					b.WriteString(k + "\n")
					walk(e)
				}
			}
		}
		walk(v)
		out = append(out, b.String())
	}
	return out
}

// leaks reports the planted secrets found in an output: the secret in
// full, or (for values of 10 characters or more) any 10-character window
// of the part after its public prefix, which catches half-redacted
// values such as the part of a password after an "@".
func leaks(c *secretCorpus, data string) []string {
	var out []string
	texts := textsOf(data)
	for _, p := range c.plants {
		for _, t := range texts {
			hit := strings.Contains(t, p.full())
			for i := 0; !hit && i+10 <= len(p.value); i++ {
				hit = strings.Contains(t, p.value[i:i+10])
			}
			if hit {
				out = append(out, p.shape+": "+p.full())
				break
			}
		}
	}
	return out
}

// TestSecretCorpusNeverLeaves plants realistic secrets in every shape in a
// real repository, runs review (built-in provider), review against a
// loopback OpenAI-compatible server and context --packet in process, and
// checks that no secret appears in stdout, stderr, any artifact or any
// request the server received.
func TestSecretCorpusNeverLeaves(t *testing.T) {
	c := buildSecretCorpus()
	shapes := map[string]int{}
	distinct := map[string]bool{}
	for _, p := range c.plants {
		shapes[p.shape]++
		distinct[p.full()] = true
	}
	var names []string
	for s := range shapes {
		names = append(names, s)
	}
	slices.Sort(names)
	nonPEM := 0
	for _, p := range c.plants {
		if !strings.HasPrefix(p.shape, "pem body") {
			nonPEM++
		}
	}
	t.Logf("planted %d secrets (%d distinct; %d outside PEM key bodies) in %d shapes across %d files", len(c.plants), len(distinct), nonPEM, len(shapes), len(c.head))
	for _, s := range names {
		t.Logf("  %3d  %s", shapes[s], s)
	}
	if nonPEM < 50 {
		t.Fatalf("only %d non-PEM secrets planted", nonPEM)
	}
	dir := c.repo(t)
	art := filepath.Join(dir, ".artifacts", "diffpal")

	type output struct{ name, data string }
	var outputs []output
	artifacts := func(run string) {
		for _, n := range []string{"findings.json", "qa-session.json", "summary.md", "diffpal.sarif"} {
			data, err := os.ReadFile(filepath.Join(art, n))
			if err != nil {
				t.Fatalf("%s: %v", run, err)
			}
			outputs = append(outputs, output{run + " " + n, string(data)})
		}
	}

	// The built-in provider.
	code, stdout, stderr := runReview(t, "review", "-C", dir, "--color", "never")
	if code != 0 {
		t.Fatalf("review: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "committed") {
		t.Errorf("the built-in review found no committed secret:\n%s", stdout)
	}
	outputs = append(outputs, output{"review stdout", stdout}, output{"review stderr", stderr})
	artifacts("review")
	code, stdout, stderr = runReview(t, "review", "-C", dir, "--json", "--color", "never")
	outputs = append(outputs, output{"review --json stdout", stdout}, output{"review --json stderr", stderr})
	if code != 0 {
		t.Fatalf("review --json: exit %d\n%s", code, stderr)
	}

	// A model provider on loopback.
	fake := &leakFake{echo: c.echo, bare: c.bare, newFiles: c.newFiles}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", "sk-test-key")
	code, stdout, stderr = runReview(t, "review", "-C", dir, "--provider", "openai", "--model", "gpt-test", "--no-cache", "--color", "never")
	if code != 0 {
		t.Fatalf("review --provider openai: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "Hard-coded credential") {
		t.Errorf("the model's findings are missing:\n%s", stdout)
	}
	outputs = append(outputs, output{"openai stdout", stdout}, output{"openai stderr", stderr})
	artifacts("openai")
	fake.mu.Lock()
	if len(fake.bodies) == 0 {
		t.Fatal("no model requests")
	}
	for i, b := range fake.bodies {
		outputs = append(outputs, output{fmt.Sprintf("request %d", i), b})
	}
	fake.mu.Unlock()

	// context --packet.
	packet := filepath.Join(t.TempDir(), "packet.json")
	code, stdout, stderr = runReview(t, "context", "-C", dir, "--packet", packet)
	if code != 0 {
		t.Fatalf("context: exit %d\n%s", code, stderr)
	}
	data, err := os.ReadFile(packet)
	if err != nil {
		t.Fatal(err)
	}
	outputs = append(outputs, output{"context stdout", stdout}, output{"context stderr", stderr}, output{"context --packet", string(data)})
	// Redaction takes the secrets, not the code around them.
	var pf PacketFile
	if err := json.Unmarshal(data, &pf); err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for _, it := range pf.Items {
		all.WriteString(it.Content + "\n")
	}
	for _, want := range []string{
		`SIGNING_KEY = """[REDACTED]`, "LOG_LEVEL=debug", "mysql://shop:[REDACTED]@mysql.internal:3306/shop",
		"redis://:[REDACTED]@cache.internal", "def sign(data):", `var token = os.Getenv("GITHUB_TOKEN")`,
		"+runner-08,AKIA[REDACTED],[REDACTED],2026-01-01", "deploy-bot,[REDACTED],AKIA[REDACTED],[REDACTED],https://acme.signin.aws.amazon.com/console",
	} {
		if !strings.Contains(all.String(), want) {
			t.Errorf("packet lacks %q", want)
		}
	}

	leaked := map[string][]string{}
	for _, o := range outputs {
		for _, l := range leaks(c, o.data) {
			leaked[l] = append(leaked[l], o.name)
		}
	}
	var ls []string
	for l := range leaked {
		ls = append(ls, l)
	}
	slices.Sort(ls)
	for _, l := range ls {
		where := leaked[l]
		if len(where) > 4 {
			where = append(where[:4:4], fmt.Sprintf("and %d more", len(leaked[l])-4))
		}
		t.Errorf("leaked %s\n    in %s", l, strings.Join(where, ", "))
	}
	t.Logf("checked %d outputs (%d model requests); %d of %d planted secrets leaked", len(outputs), len(fake.bodies), len(ls), len(distinct))
}
