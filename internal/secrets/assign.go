package secrets

import (
	"bytes"
	"strings"
)

// Names: a value assigned to a password-like name is a secret unless it
// is code or a placeholder; one assigned to another secret-like name only
// when it also looks generated (credentialLike).
const (
	kindNone = iota
	kindPassword
	kindSecret
)

var (
	passwordWords = set("password", "passwd", "pwd", "pass", "pw", "passphrase", "passcode", "pword", "pswd", "passwords")
	secretWords   = set("secret", "secrets", "token", "apikey", "credential", "credentials", "creds", "auth", "authorization",
		"bearer", "sig", "signature", "privatekey", "accesskey", "secretkey", "clientsecret", "authtoken", "accesstoken",
		"apitoken", "refreshtoken", "sessiontoken", "authkey", "signingkey", "encryptionkey", "masterkey", "xapikey")
	// A "key" is a secret after these words (api_key, signing-key); cache_key
	// or sort_key are not.
	keyQualifiers = set("api", "access", "secret", "private", "signing", "sign", "encryption", "encrypt", "master", "auth",
		"session", "license", "licence", "app", "application", "client", "service", "account", "admin", "deploy", "root",
		"webhook", "hmac", "jwt", "aes", "cipher", "crypto", "storage", "shared", "subscription", "consumer", "write", "read",
		"ingest", "ingestion", "dd", "datadog", "sendgrid", "stripe", "twilio", "openai", "anthropic", "mailgun", "algolia")
	// A name ending in one of these names something about a secret, not
	// the secret: its id, its length, where it is read from.
	notSecretLast = set("id", "ids", "name", "names", "url", "uri", "urls", "endpoint", "host", "hostname", "file", "files",
		"path", "paths", "dir", "directory", "length", "len", "size", "type", "types", "count", "ttl", "expiry", "expires",
		"expiration", "exp", "timeout", "header", "headers", "prefix", "suffix", "field", "fields", "param", "params", "env",
		"var", "variable", "label", "hint", "placeholder", "regex", "regexp", "pattern", "format", "validator", "validation",
		"policy", "rotation", "required", "enabled", "enable", "disabled", "mode", "method", "provider", "scheme", "strategy",
		"version", "max", "min", "limit", "location", "store", "manager", "service", "class", "factory", "source", "ref",
		"reference", "arn", "region", "user", "username", "email", "owner", "issuer", "audience", "scope", "scopes",
		"algorithm", "alg", "kind", "usage", "status", "state", "error", "errors", "message", "msg", "text", "title",
		"description", "desc", "prompt", "input", "button", "link", "route", "page", "view", "form", "schema", "column",
		"table", "index", "idx", "offset", "start", "end", "created", "updated", "at", "time", "date", "reset", "changed",
		"strength", "complexity", "rule", "rules", "fn", "func", "function", "callback", "handler", "cb", "hook", "key_id",
		"bytes", "bits", "chars", "tokens", "budget", "estimate", "estimator", "counter", "cache", "filename", "module", "pkg",
		"option", "options", "config", "settings", "flag", "flags", "level", "kind", "visible", "shown", "hidden", "mask",
		"masked", "redacted", "check", "checker", "policy", "generator", "gen", "len", "rotate", "refresh_url", "test", "spec")
	notSecretFirst = set("public", "publishable", "pub", "is", "has", "use", "uses", "enable", "show", "allow", "require",
		"requires", "max", "min", "num", "no", "skip", "validate", "check", "get", "set", "on", "handle", "handler", "new",
		"create", "make", "parse", "read", "load", "fetch", "generate", "gen", "hash", "verify", "encode", "decode", "mock",
		"fake", "test", "expect", "expected", "want", "got", "dummy", "sample", "example", "default")
)

func set(ws ...string) map[string]bool {
	m := make(map[string]bool, len(ws))
	for _, w := range ws {
		m[w] = true
	}
	return m
}

// words splits an identifier, lower-cased into buf, at separators and
// camelCase boundaries (APIKey -> api, key); it returns the lower-cased
// name and the bounds of up to len(bounds) words in it.
func words(name string, buf []byte, bounds [][2]int) ([]byte, int) {
	lw := buf[:0]
	n, start := 0, -1
	end := func(i int) {
		if start >= 0 && n < len(bounds) {
			bounds[n] = [2]int{start, i}
			n++
		}
		start = -1
	}
	for i := 0; i < len(name); i++ {
		b := name[i]
		isUp, isLow := b >= 'A' && b <= 'Z', b >= 'a' && b <= 'z'
		if isUp {
			lw = append(lw, b+'a'-'A')
		} else {
			lw = append(lw, b)
		}
		if !(isUp || isLow || b >= '0' && b <= '9') {
			end(i)
			continue
		}
		if isUp && start >= 0 {
			prev := name[i-1]
			nextLow := i+1 < len(name) && name[i+1] >= 'a' && name[i+1] <= 'z'
			if prev >= 'a' && prev <= 'z' || prev >= 'A' && prev <= 'Z' && nextLow {
				end(i)
			}
		}
		if start < 0 {
			start = i
		}
	}
	end(len(name))
	return lw, n
}

// splitWords returns the lower-case words of an identifier.
func splitWords(name string) []string {
	var buf [128]byte
	var bounds [16][2]int
	lw, n := words(name, buf[:], bounds[:])
	out := make([]string, n)
	for i := range n {
		out[i] = string(lw[bounds[i][0]:bounds[i][1]])
	}
	return out
}

// nameKind classifies an identifier.
func nameKind(name string) int {
	if len(name) > 128 {
		return kindNone
	}
	var buf [128]byte
	var bounds [16][2]int
	lw, n := words(name, buf[:], bounds[:])
	if n == 0 {
		return kindNone
	}
	w := func(i int) []byte { return lw[bounds[i][0]:bounds[i][1]] }
	if notSecretLast[string(w(n-1))] || n > 1 && notSecretFirst[string(w(0))] {
		return kindNone
	}
	kind := kindNone
	for i := range n {
		wi := w(i)
		switch {
		case passwordWords[string(wi)] || bytes.Contains(wi, []byte("password")) || bytes.Contains(wi, []byte("passwd")):
			return kindPassword
		case secretWords[string(wi)] || bytes.Contains(wi, []byte("secret")) || bytes.HasSuffix(wi, []byte("token")) || bytes.HasSuffix(wi, []byte("apikey")):
			kind = kindSecret
		case string(wi) == "key" && (n == 1 || i > 0 && keyQualifiers[string(w(i-1))]):
			kind = kindSecret
		}
	}
	return kind
}

// Keywords that start the scan for a name (case-insensitive).
var nameKeywords = []string{"pass", "pw", "secret", "token", "key", "auth", "cred", "sig", "bearer"}

// nameKwAt[a<<8|b] numbers (from 1) the group of nameKeywords starting
// with the bytes a, b (either case): nameKwGroups[n]. A pair of a text
// then asks only its own keywords, not all of them (code's "se" of set,
// "to" of total, "cr" of create).
var (
	nameKwAt     [1 << 16]uint8
	nameKwGroups = [][]string{nil}
)

func init() {
	for _, k := range nameKeywords {
		g := nameKwAt[uint16(k[0])<<8|uint16(k[1])]
		if g == 0 {
			nameKwGroups = append(nameKwGroups, nil)
			g = uint8(len(nameKwGroups) - 1)
		}
		nameKwGroups[g] = append(nameKwGroups[g], k)
		for _, a := range []byte{k[0], k[0] - 32} {
			for _, b := range []byte{k[1], k[1] - 32} {
				nameKwAt[uint16(a)<<8|uint16(b)] = g
			}
		}
	}
}

func isNameByte(b byte) bool { return isIdentByte(b) || b == '.' || b == '-' }

// atLineStart reports whether only what may precede a name at the start
// of a config line is in p: a hunk header, a diff marker, indentation,
// export and friends, a YAML list dash, an opening quote.
func atLineStart(p string) bool {
	if strings.HasPrefix(p, "@@ ") {
		m := hunkHeader().FindStringIndex(p)
		if m == nil {
			return false
		}
		p = p[m[1]:]
	} else if p != "" && (p[0] == '+' || p[0] == '-') {
		p = p[1:]
	}
	p = strings.TrimLeft(p, " \t")
	for _, w := range []string{"export ", "set ", "setenv ", "declare -x ", "readonly ", "local ", "ENV ", "ARG "} {
		if strings.HasPrefix(p, w) {
			p = strings.TrimLeft(p[len(w):], " \t")
			break
		}
	}
	if strings.HasPrefix(p, "- ") {
		p = strings.TrimLeft(p[2:], " \t")
	}
	return p == "" || p == `"` || p == "'"
}

var typeWords = []string{"string", "String", "str", "&str", "&'static str", "[]byte", "bytes"}

func (f *finder) assignments() {
	s := f.s
	lastEnd := 0
	f.scanStarts()
	for _, i := range f.nameAt {
		if i < lastEnd {
			continue
		}
		g := nameKwAt[uint16(s[i])<<8|uint16(s[i+1])]
		hit := false
		for _, k := range nameKwGroups[g] {
			if len(s)-i >= len(k) && strings.EqualFold(s[i:i+len(k)], k) {
				hit = true
				break
			}
		}
		if !hit {
			continue
		}
		ns, ne := i, i
		for ns > 0 && isNameByte(s[ns-1]) {
			ns--
		}
		for ne < len(s) && isNameByte(s[ne]) {
			ne++
		}
		lastEnd = ne
		if ns >= 3 && s[ns-3:ns] == "://" || ns >= 1 && s[ns-1] == '@' {
			continue // user info or host of a URL, not a name (see urls)
		}
		raw := s[ns:ne]
		lead := len(raw) - len(strings.TrimLeft(raw, "-."))
		// A name ends with a letter or digit ("token." ends a sentence).
		name := strings.TrimRight(raw[lead:], "-.")
		kind := nameKind(name)
		if kind == kindNone {
			continue
		}
		f.assignment(kind, ns, ns+lead+len(name), strings.HasPrefix(raw, "--"))
	}
}

// assignment parses "name <op> value" after a secret-like name.
func (f *finder) assignment(kind, ns, p int, flag bool) {
	s := f.s
	// The closing quote or bracket of a key: "password": ..., ["token"] = ...
	if strings.HasPrefix(s[p:], `\"`) || strings.HasPrefix(s[p:], `\'`) {
		p += 2
	} else if p < len(s) && (s[p] == '"' || s[p] == '\'') {
		p++
	}
	if p < len(s) && s[p] == ']' {
		p++
	}
	sp := p
	p = skipBlank(s, p)
	spaceBefore := p > sp
	// A type between name and "=": Go's `key string = "..."`, TypeScript's
	// `key: string = "..."`.
	if q := skipType(s, p); q > p {
		p = skipBlank(s, q)
	}
	op := ""
	switch {
	case strings.HasPrefix(s[p:], ":="), strings.HasPrefix(s[p:], "=>"), strings.HasPrefix(s[p:], "?="), strings.HasPrefix(s[p:], "||="):
		op = s[p : p+2]
		if op == "||" {
			op = "||="
		}
	case strings.HasPrefix(s[p:], "="):
		op = "="
	case strings.HasPrefix(s[p:], ":"):
		op = ":"
	case flag && spaceBefore:
		op = " "
	default:
		return
	}
	p += len(op)
	if op == " " {
		p = sp + 1
		if p < len(s) && s[p] == '-' {
			return // the next flag
		}
	}
	if p < len(s) && (op == "=" && (s[p] == '=' || s[p] == '~') || op == ":" && s[p] == ':') {
		return // a comparison, a match or a scope, not an assignment
	}
	p = skipBlank(s, p)
	ls := strings.LastIndexByte(s[:ns], '\n') + 1
	lineStart := atLineStart(s[ls:ns])
	le := strings.IndexByte(s[p:], '\n')
	if le < 0 {
		le = len(s)
	} else {
		le += p
	}
	rest := strings.TrimRight(s[p:le], "\r")
	config := !flag && lineStart && (op == "=" && !spaceBefore || op == ":" && !strings.HasSuffix(strings.TrimSpace(rest), ",") && !strings.HasSuffix(strings.TrimSpace(rest), ";"))
	vs, ve, quoted := valueBounds(s, p, p+len(rest), config)
	if vs >= ve {
		return
	}
	v := s[vs:ve]
	if f.secretValue(kind, v, quoted, config) {
		f.add(vs, ve, 0, "assignment")
	}
}

func skipBlank(s string, p int) int {
	for p < len(s) && (s[p] == ' ' || s[p] == '\t') {
		p++
	}
	return p
}

func skipType(s string, p int) int {
	q := p
	if q < len(s) && s[q] == ':' && !strings.HasPrefix(s[q:], ":=") {
		q = skipBlank(s, q+1)
	}
	for _, t := range typeWords {
		if strings.HasPrefix(s[q:], t) {
			r := skipBlank(s, q+len(t))
			if r < len(s) && s[r] == '=' && !strings.HasPrefix(s[r:], "==") {
				return r
			}
		}
	}
	return p
}

// valueBounds finds the value starting at p (the line ends at end).
func valueBounds(s string, p, end int, config bool) (int, int, bool) {
	if p >= end {
		return p, p, false
	}
	// Python string prefixes.
	q := p
	for q < end && q-p < 2 && strings.IndexByte("bBrRuUfF", s[q]) >= 0 {
		q++
	}
	if q < end && (s[q] == '"' || s[q] == '\'' || s[q] == '`') || strings.HasPrefix(s[q:end], `\"`) || strings.HasPrefix(s[q:end], `\'`) {
		p = q
	}
	if strings.HasPrefix(s[p:end], `\"`) || strings.HasPrefix(s[p:end], `\'`) {
		quote := s[p : p+2]
		vs := p + 2
		if k := strings.Index(s[vs:end], quote); k >= 0 {
			return vs, vs + k, true
		}
		return vs, trimEnd(s, vs, end), true
	}
	if c := s[p]; c == '"' || c == '\'' || c == '`' {
		vs := p + 1
		for k := vs; k < end; k++ {
			if s[k] == '\\' {
				k++
				continue
			}
			if s[k] == c {
				return vs, k, true
			}
		}
		return vs, trimEnd(s, vs, end), true
	}
	if config {
		ve := end
		if k := strings.Index(s[p:end], " #"); k >= 0 {
			ve = p + k
		}
		return p, trimEnd(s, p, ve), false
	}
	ve := p
	for ve < end && !codeStop(s[ve]) {
		ve++
	}
	return p, ve, false
}

func trimEnd(s string, start, end int) int {
	for end > start && (s[end-1] == ' ' || s[end-1] == '\t' || s[end-1] == '\r') {
		end--
	}
	return end
}

func codeStop(b byte) bool {
	switch b {
	case ' ', '\t', '\r', '\n', '"', '\'', '`', ',', ';', ')', '}', ']', '&', '<', '>', '|', '\\':
		return true
	}
	return false
}

// secretValue decides whether v, assigned to a name of kind, is a secret.
func (f *finder) secretValue(kind int, v string, quoted, config bool) bool {
	if v == "" {
		return false
	}
	if quoted {
		// A quote after "name: " may close the string the name is in
		// (print("token: ", t)): what follows is code, not a value.
		if template(v) || v[0] == ' ' || v[len(v)-1] == ' ' || strings.IndexByte(",;)]}+.", v[0]) >= 0 ||
			strings.Contains(v, "(") && strings.Contains(v, ")") {
			return false
		}
	} else {
		if codeLike(v) || !config && bareWord(v) || v[0] == '$' || v[0] == '%' {
			return false
		}
	}
	if kind == kindPassword {
		if len(v) < 5 {
			return false
		}
	} else if !credentialLike(v, f.r.minEntropy()) {
		return false
	}
	return !masked(v, f.r.mask()) && !placeholder().MatchString(v)
}
