package secrets

import (
	"regexp"
	"strings"
	"sync"
)

// A format is a provider-specific credential shape, after gitleaks'
// config/gitleaks.toml. Its regexp is tried only where one of its
// keywords occurs (a literal scan decides, so a long text costs one pass,
// not one pass per format). The regexp is anchored at the keyword's
// position; group 1 is the public prefix that may be shown (it may be
// empty), group 2 the secret. The regexp is compiled on first use (most
// processes never meet most formats' keywords; compiling all of them in
// the package's init took ~3 ms of every command's start-up).
type format struct {
	id       string
	keywords []string
	expr     string // the anchored regexp, compiled by regexp()
	reOnce   sync.Once
	re       *regexp.Regexp
	// back is how far before the keyword the match may start, over bytes
	// of backClass (a format whose keyword is not its first byte, such as
	// Azure AD's "8Q~").
	back      int
	backClass func(byte) bool
	// max bounds the match length.
	max int
	// word: the match must not continue a word on either side.
	word bool
	// check, when set, must accept the secret group.
	check func(string) bool
}

func fm(id string, keywords []string, re string, max int) *format {
	return &format{id: id, keywords: keywords, expr: `^(?:` + re + `)`, max: max, word: true}
}

// regexp returns the format's compiled regexp; safe for concurrent use.
func (f *format) regexp() *regexp.Regexp {
	f.reOnce.Do(func() { f.re = regexp.MustCompile(f.expr) })
	return f.re
}

func random(v string) bool { return credentialLike(v, 3.0) }

var formats = []*format{
	// Cloud providers.
	fm("aws-access-key-id", []string{"A3T", "AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AROA", "AIPA", "ANPA", "ANVA", "APKA"},
		`(A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)([A-Z0-9]{16})`, 20),
	fm("aws-bedrock-key", []string{"ABSK"}, `(ABSK)([A-Za-z0-9+/]{109,269}={0,2})`, 280),
	fm("gcp-api-key", []string{"AIza"}, `(AIza)([\w-]{35})`, 39),
	fm("gcp-oauth-token", []string{"ya29."}, `(ya29\.)([\w-]{20,})`, 2048),
	fm("gcp-oauth-secret", []string{"GOCSPX-"}, `(GOCSPX-)([\w-]{24,40})`, 48),
	fm("azure-storage-key", []string{"AccountKey="}, `(AccountKey=)([A-Za-z0-9+/]{40,}={0,2})`, 200),
	fm("azure-shared-access-key", []string{"SharedAccessKey=", "SharedAccessSignature="}, `(SharedAccess(?:Key|Signature)=)([A-Za-z0-9+/%=&:.\-]{20,})`, 400),
	fm("azure-sas-signature", []string{"sig="}, `(sig=)([A-Za-z0-9%+/]{30,}(?:%3D|=)*)`, 200),
	fm("alibaba-access-key-id", []string{"LTAI"}, `(LTAI)([A-Za-z0-9]{20})`, 24),
	fm("digitalocean-token", []string{"dop_v1_", "doo_v1_", "dor_v1_"}, `(do[opr]_v1_)([a-f0-9]{64})`, 71),
	fm("heroku-api-key-v2", []string{"HRKU-"}, `(HRKU-)(AA[0-9A-Za-z_-]{58})`, 65),
	fm("flyio-token", []string{"fo1_", "fm1a_", "fm1r_", "fm2_"}, `(fo1_|fm1[ar]_|fm2_)([\w+/-]{43,}={0,3})`, 1024),
	fm("cloudflare-origin-ca-key", []string{"v1.0-"}, `(v1\.0-)([a-f0-9]{24}-[a-f0-9]{146})`, 176),
	fm("openshift-token", []string{"sha256~"}, `(sha256~)([\w-]{43})`, 50),
	fm("vault-token", []string{"hvs.", "hvb.", "hvr."}, `(hv[sbr]\.)([\w-]{24,})`, 400),
	fm("terraform-cloud-token", []string{".atlasv1."}, `()([a-z0-9]{14}\.atlasv1\.[a-z0-9_=-]{60,70})`, 100),
	fm("pulumi-token", []string{"pul-"}, `(pul-)([a-f0-9]{40})`, 44),
	fm("doppler-token", []string{"dp.pt.", "dp.st.", "dp.sa.", "dp.ct.", "dp.scim.", "dp.audit."}, `(dp\.(?:pt|st|sa|ct|scim|audit)\.)([A-Za-z0-9]{40,44})`, 56),
	fm("supabase-token", []string{"sbp_"}, `(sbp_)([a-f0-9]{40})`, 44),
	fm("databricks-token", []string{"dapi"}, `(dapi)([a-f0-9]{32}(?:-\d)?)`, 38),
	fm("planetscale-token", []string{"pscale_"}, `(pscale_(?:tkn|oauth|pw)_)([\w=.-]{32,64})`, 80),
	fm("age-secret-key", []string{"AGE-SECRET-KEY-1"}, `(AGE-SECRET-KEY-1)([QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58})`, 74),
	fm("1password-token", []string{"ops_eyJ"}, `(ops_)(eyJ[A-Za-z0-9+/]{250,}={0,3})`, 4096),

	// Source hosting, CI and package registries.
	fm("github-token", []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"}, `(gh[pousr]_)([A-Za-z0-9]{30,251})`, 255),
	fm("github-fine-grained-pat", []string{"github_pat_"}, `(github_pat_)([A-Za-z0-9_]{22,244})`, 255),
	fm("gitlab-token", []string{"glpat-", "gldt-", "glft-", "glrt-", "glsoat-", "glptt-", "glimt-", "glagent-", "gloas-", "glffct-", "glcbt-"},
		`(gl(?:pat|dt|ft|rt|soat|ptt|imt|agent|oas|ffct|cbt)-)([\w.-]{20,300})`, 320),
	fm("gitlab-runner-registration", []string{"GR1348941"}, `(GR1348941)([\w-]{20,})`, 80),
	fm("bitbucket-app-password", []string{"ATBB"}, `(ATBB)([A-Za-z0-9_=.-]{28,})`, 128),
	fm("atlassian-api-token", []string{"ATATT3"}, `(ATATT3)([\w=-]{100,})`, 512),
	fm("npm-token", []string{"npm_"}, `(npm_)([A-Za-z0-9]{36})`, 40),
	fm("pypi-token", []string{"pypi-"}, `(pypi-)(AgE[\w-]{50,})`, 1024),
	fm("rubygems-token", []string{"rubygems_"}, `(rubygems_)([a-f0-9]{48})`, 57),
	fm("clojars-token", []string{"CLOJARS_"}, `(CLOJARS_)([a-z0-9]{60})`, 68),
	fm("artifactory-key", []string{"AKCp"}, `(AKCp)([A-Za-z0-9]{69})`, 73),
	fm("postman-key", []string{"PMAK-"}, `(PMAK-)([a-f0-9]{24}-[a-f0-9]{34})`, 64),
	fm("sentry-token", []string{"sntrys_", "sntryu_"}, `(sntry[su]_)([\w+/=]{40,})`, 512),
	fm("grafana-token", []string{"glc_", "glsa_"}, `(glc_|glsa_)([A-Za-z0-9_+/]{32,}={0,3})`, 512),
	fm("linear-api-key", []string{"lin_api_"}, `(lin_api_)([A-Za-z0-9]{40})`, 48),
	fm("figma-token", []string{"figd_"}, `(figd_)([\w-]{40,})`, 64),
	fm("notion-token", []string{"ntn_"}, `(ntn_)([0-9]{11}[A-Za-z0-9]{35})`, 50),
	fm("newrelic-key", []string{"NRAK-", "NRII-", "NRJS-"}, `(NR(?:AK|II|JS)-)([\w-]{19,32})`, 40),
	fm("dynatrace-token", []string{"dt0c01."}, `(dt0c01\.)([A-Za-z0-9]{24}\.[A-Za-z0-9]{64})`, 96),

	// Chat, mail and payments.
	fm("slack-token", []string{"xoxb-", "xoxa-", "xoxp-", "xoxo-", "xoxs-", "xoxr-", "xoxe-", "xoxe."}, `(xox[abposre][.-])([A-Za-z0-9.-]{10,250})`, 256),
	fm("slack-app-token", []string{"xapp-"}, `(xapp-)(\d-[A-Za-z0-9]+-\d+-[A-Za-z0-9]+)`, 256),
	fm("slack-webhook", []string{"hooks.slack.com/"}, `(hooks\.slack\.com/(?:services|workflows|triggers)/)([A-Za-z0-9+/_-]{20,})`, 256),
	fm("discord-webhook", []string{"discord.com/api/webhooks/", "discordapp.com/api/webhooks/"}, `(discord(?:app)?\.com/api/webhooks/\d+/)([\w-]{60,})`, 256),
	fm("teams-webhook", []string{".webhook.office.com/"}, `([a-z0-9]+\.webhook\.office\.com/webhookb2/)([\w@/-]{60,})`, 512),
	fm("telegram-bot-token", []string{":AA"}, `()(\d{8,10}:AA[\w-]{33})`, 46),
	fm("stripe-key", []string{"sk_live_", "sk_test_", "sk_prod_", "rk_live_", "rk_test_", "rk_prod_", "pk_live_", "pk_test_"},
		`([srp]k_(?:live|test|prod)_)([A-Za-z0-9]{10,247})`, 255),
	fm("stripe-webhook-secret", []string{"whsec_"}, `(whsec_)([A-Za-z0-9+/=]{20,})`, 128),
	fm("square-token", []string{"sq0atp-", "sq0csp-", "EAAA"}, `(sq0atp-|sq0csp-|EAAA)([\w-]{22,60})`, 70),
	fm("shopify-token", []string{"shpat_", "shpca_", "shppa_", "shpss_"}, `(shp(?:at|ca|pa|ss)_)([a-fA-F0-9]{32})`, 38),
	fm("shippo-token", []string{"shippo_live_", "shippo_test_"}, `(shippo_(?:live|test)_)([a-fA-F0-9]{40})`, 52),
	fm("easypost-key", []string{"EZAK", "EZTK"}, `(EZ[AT]K)([A-Za-z0-9]{54})`, 58),
	fm("sendgrid-key", []string{"SG."}, `(SG\.)([\w-]{16,32}\.[\w-]{16,64})`, 100),
	fm("sendinblue-key", []string{"xkeysib-"}, `(xkeysib-)([a-f0-9]{64}-[A-Za-z0-9]{16})`, 90),
	fm("twilio-api-key", []string{"SK"}, `(SK)([0-9a-fA-F]{32})`, 34),
	fm("mailchimp-key", []string{"-us"}, `()([0-9a-f]{32}-us\d{1,2})`, 37),
	fm("facebook-token", []string{"EAAC", "EAAM"}, `(EAA[CM])([A-Za-z0-9]{100,})`, 1024),

	// Model providers.
	fm("anthropic-key", []string{"sk-ant-"}, `(sk-ant-(?:api|admin|oat|ort|sid)\d\d-|sk-ant-)([\w-]{20,})`, 256),
	fm("openai-key", []string{"sk-proj-", "sk-svcacct-", "sk-admin-"}, `(sk-(?:proj|svcacct|admin)-)([\w-]{20,})`, 256),
	fm("huggingface-token", []string{"hf_", "api_org_"}, `(hf_|api_org_)([A-Za-z0-9]{30,40})`, 48),
	fm("perplexity-key", []string{"pplx-"}, `(pplx-)([A-Za-z0-9]{40,})`, 64),
	fm("groq-key", []string{"gsk_"}, `(gsk_)([A-Za-z0-9]{48,})`, 64),
	fm("replicate-token", []string{"r8_"}, `(r8_)([A-Za-z0-9]{37})`, 40),
	fm("mapbox-secret-token", []string{"sk.eyJ"}, `(sk\.)(eyJ[\w-]{50,}\.[\w-]{20,})`, 512),

	// Generic shapes.
	fm("jwt", []string{"eyJ"}, `()(eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.)`, 8192),
}

func init() {
	// Formats whose keyword is not where the match starts, or whose check
	// is stricter than a shape.
	add := func(f *format) { formats = append(formats, f) }
	openai := fm("openai-legacy-key", []string{"sk-"}, `(sk-)([A-Za-z0-9_-]{32,})`, 256)
	openai.check = random
	add(openai)
	azure := fm("azure-ad-client-secret", []string{"Q~"}, `()([A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34})`, 40)
	azure.back, azure.backClass = 4, func(b byte) bool { return isIdentByte(b) || b == '~' || b == '.' }
	add(azure)
	for _, f := range formats {
		switch f.id {
		case "gcp-oauth-token", "vault-token", "grafana-token", "figma-token", "flyio-token", "sentry-token",
			"bitbucket-app-password", "gitlab-runner-registration", "planetscale-token", "slack-token":
			// Their character class spans identifiers (snake_case, dotted
			// names): the body must also look generated.
			f.check = random
		case "telegram-bot-token":
			f.back, f.backClass = 10, isDigit
		case "mailchimp-key":
			f.back, f.backClass = 32, isHex
		case "terraform-cloud-token":
			f.back, f.backClass = 14, func(b byte) bool { return isDigit(b) || b >= 'a' && b <= 'z' }
		}
	}
	// Authorization values: "Bearer <token>", "Basic <base64>", GitHub's
	// "token <token>".
	bearer := &format{id: "authorization", keywords: []string{"Bearer ", "bearer ", "BEARER ", "Basic ", "basic ", "Token ", "token "},
		expr: `^(?:[Bb]earer|BEARER|[Bb]asic|[Tt]oken)[ \t]+()([A-Za-z0-9._~+/\-]{16,}=*)`, max: 4096, word: true, check: random}
	add(bearer)
	// curl -u user:password, --user user:password.
	curl := &format{id: "curl-user", keywords: []string{"-u ", "-u=", "--user ", "--user="},
		expr: `^(?:-u|--user)[ =]+['"]?[^\s:'"]+:()([^\s'"]{3,})`, max: 512, check: func(v string) bool { return !placeholder().MatchString(v) }}
	add(curl)
	// NuGet's <add key="ClearTextPassword" value="..."/>.
	nuget := &format{id: "xml-password-attribute", keywords: []string{"<add key="},
		expr: `^<add key="[^"]*(?i:password|secret|token|apikey)[^"]*"\s+value="()([^"]{4,})"`, max: 512, check: func(v string) bool { return !placeholder().MatchString(v) && !template(v) }}
	add(nuget)
	buildKeywordIndex()
}

// The keyword scan: a 2-byte table selects the keywords to try at each
// position.
type kwEntry struct {
	kw  string
	fmt int
}

var (
	kwIndex  [1 << 16]uint16
	kwGroups [][]kwEntry
	// kwThird[g]: what group g knows of its keywords' third bytes. Code's
	// byte pairs start groups often (the "pu" of compute, the "v1" of
	// v1000), and their third byte then rules the group out.
	kwThird []thirdBytes
)

// thirdBytes is what a group of keywords sharing their first two bytes
// knows of the third: a text's pair that starts the group but not with
// one of its third bytes starts none of its keywords (code's "co" of
// compute, "te" of test), unless the group has a two-byte keyword.
type thirdBytes struct {
	set  [4]uint64
	pair bool // a keyword of two bytes: any third byte will do
}

// add notes keyword kw (two bytes or more), its third byte lower-cased
// when fold is set (the text's byte is then lower-cased too).
func (t *thirdBytes) add(kw string, fold bool) {
	if len(kw) == 2 {
		t.pair = true
		return
	}
	c := kw[2]
	if fold {
		c = lowerTable[c]
	}
	t.set[c>>6] |= 1 << (c & 63)
}

// rulesOut reports that no keyword of the group starts at a pair
// followed by c.
func (t *thirdBytes) rulesOut(c byte) bool {
	return !t.pair && t.set[c>>6]&(1<<(c&63)) == 0
}

func buildKeywordIndex() {
	kwGroups = [][]kwEntry{nil}
	kwThird = make([]thirdBytes, 1)
	for i, f := range formats {
		for _, kw := range f.keywords {
			k := uint16(kw[0])<<8 | uint16(kw[1])
			g := kwIndex[k]
			if g == 0 {
				kwGroups = append(kwGroups, nil)
				kwThird = append(kwThird, thirdBytes{})
				g = uint16(len(kwGroups) - 1)
				kwIndex[k] = g
			}
			kwGroups[g] = append(kwGroups[g], kwEntry{kw, i})
			kwThird[g].add(kw, false)
		}
	}
}

func isWordByte(b byte) bool { return isIdentByte(b) }

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

func isHex(b byte) bool { return isDigit(b) || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F' }

func (f *finder) formats() {
	s := f.s
	next := make([]int, len(formats)) // a format's matches do not overlap
	f.scanStarts()
	for _, i := range f.formatAt {
		g := kwIndex[uint16(s[i])<<8|uint16(s[i+1])]
		for _, e := range kwGroups[g] {
			if !strings.HasPrefix(s[i:], e.kw) {
				continue
			}
			ft := formats[e.fmt]
			from := i
			if ft.back > 0 {
				for from > 0 && i-from < ft.back && ft.backClass(s[from-1]) {
					from--
				}
			}
			if from < next[e.fmt] {
				continue
			}
			if ft.word && from > 0 && isWordByte(s[from-1]) && isWordByte(s[from]) {
				continue
			}
			m := ft.regexp().FindStringSubmatchIndex(s[from:min(len(s), from+ft.max)])
			if m == nil {
				continue
			}
			mEnd := from + m[1]
			if ft.word && mEnd < len(s) && isWordByte(s[mEnd]) && isWordByte(s[mEnd-1]) {
				continue // the shape continues: a longer word, not this format
			}
			sec := s[from+m[4] : from+m[5]]
			if ft.check != nil && !ft.check(sec) || masked(sec, f.r.mask()) {
				continue
			}
			f.add(from+m[2], from+m[5], m[3]-m[2], ft.id)
			next[e.fmt] = mEnd
			if ft.id == "aws-access-key-id" {
				f.aws = append(f.aws, from)
			}
		}
	}
}
