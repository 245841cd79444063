package llm

import (
	"regexp"
	"strings"
	"unicode"

	"github.com/diffpalhq/diffpal/internal/rules"
)

// Redacted replaces every secret the Redactor finds.
const Redacted = "[REDACTED]"

// secretFormats are provider-format credentials, replaced whole. They
// extend the builtin rule packs' formats (rules.Redact, applied after
// these) with the model-provider keys a diffpal user is most likely to
// hold, PEM private keys, URL credentials and bearer tokens.
var secretFormats = []*regexp.Regexp{
	// PEM private keys, also when a hunk cuts the END line off.
	regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----(?s:.*?)(?:-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|\z)`),
	regexp.MustCompile(`\bsk-ant-[A-Za-z0-9_\-]{20,}`),
	regexp.MustCompile(`\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}`),
	regexp.MustCompile(`\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b`),
	regexp.MustCompile(`\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}`),
	regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9_]{20,}`),
	regexp.MustCompile(`\bglpat-[A-Za-z0-9_\-]{20,}`),
	regexp.MustCompile(`\bxox[abposre]-[A-Za-z0-9-]{10,}`),
	regexp.MustCompile(`\bhooks\.slack\.com/services/[A-Za-z0-9/]{20,}`),
	regexp.MustCompile(`\b[srp]k_(?:live|test)_[A-Za-z0-9]{16,}`),
	regexp.MustCompile(`\bwhsec_[A-Za-z0-9]{20,}`),
	regexp.MustCompile(`\bAIza[0-9A-Za-z_\-]{35}`),
	regexp.MustCompile(`\bya29\.[0-9A-Za-z_\-]{20,}`),
	regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`),
	regexp.MustCompile(`\bnpm_[A-Za-z0-9]{36}`),
	regexp.MustCompile(`\bpypi-[A-Za-z0-9_\-]{50,}`),
	regexp.MustCompile(`\bSG\.[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,}`),
	regexp.MustCompile(`\bhf_[A-Za-z0-9]{30,}`),
	regexp.MustCompile(`\bdop_v1_[a-f0-9]{64}`),
	regexp.MustCompile(`\bAccountKey=[A-Za-z0-9+/=]{40,}`),
}

// urlCreds is user:password@ in a URL; the password is replaced.
var urlCreds = regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.\-]*://[^\s:/@'"]+:)([^\s@/'"]{3,})@`)

// bearer is an Authorization header value.
var bearer = regexp.MustCompile(`(?i)\b((?:bearer|basic|token)\s+)([A-Za-z0-9._~+/\-]{16,}=*)`)

// assignment is a secret-like name assigned a value, quoted or not
// (source code, YAML, .env files, shell). The value group is judged by
// secretValue before it is replaced.
var assignment = regexp.MustCompile(`(?i)([\w.\-]*(?:secret|token|passw(?:or)?d|passwd|pwd|passphrase|api_?key|apikey|access_?key|private_?key|signing_?key|client_?secret|credentials?|auth_?key|session_?key|encryption_?key)[\w.\-]*["']?\s*(?::=|=>|=|:)\s*[bru]?["'\x60]?)([^\s"'\x60,;)}\]]{6,})`)

// Redactor removes secrets from text before it leaves the process.
type Redactor struct {
	// MinEntropy is the Shannon entropy (bits per character) above which
	// an unrecognised value assigned to a secret-like name is redacted
	// (default 3.0). Values assigned to password-like names are redacted
	// whatever their entropy unless they look like code or placeholders.
	MinEntropy float64
}

// Redact returns s with provider-format secrets, private keys, URL
// credentials, bearer tokens and secret-looking assignments replaced.
func (r *Redactor) Redact(s string) string {
	if s == "" {
		return s
	}
	for _, re := range secretFormats {
		// Keep the line structure (a PEM block spans lines), so that line
		// numbers after a redaction stay right.
		s = re.ReplaceAllStringFunc(s, func(m string) string {
			return Redacted + strings.Repeat("\n", strings.Count(m, "\n"))
		})
	}
	s = urlCreds.ReplaceAllString(s, "${1}"+Redacted+"@")
	s = bearer.ReplaceAllStringFunc(s, func(m string) string {
		sm := bearer.FindStringSubmatch(m)
		if !credentialLike(sm[2], 3.0) {
			return m
		}
		return sm[1] + Redacted
	})
	s = assignment.ReplaceAllStringFunc(s, func(m string) string {
		sm := assignment.FindStringSubmatch(m)
		if !r.secretValue(sm[1], sm[2]) {
			return m
		}
		return sm[1] + Redacted
	})
	// The rule packs' own formats and quoted assignments, as defence in
	// depth (they keep four characters of a secret; ours are gone by now).
	return rules.Redact(s)
}

var placeholder = regexp.MustCompile(`(?i)^(?:x+|\*+|\.+|changeme|change_me|changeit|example.*|dummy.*|placeholder.*|redacted.*|todo|fake.*|sample.*|test|none|null|nil|undefined|true|false|your[_-].*|<.*>|\$\{.*\}?|\{\{.*|%\(.*|%s|\$[A-Za-z_]\w*|.*xxxx.*)$`)

// secretValue decides whether the value assigned to name is a secret.
func (r *Redactor) secretValue(name, v string) bool {
	v = strings.TrimRight(v, `"'`)
	if strings.Contains(v, Redacted) || strings.HasSuffix(v, "****") || placeholder.MatchString(v) {
		return false
	}
	// Code, not a literal: calls, member access, environment lookups.
	if strings.ContainsAny(v, "()[]{}") || looksLikeIdentifierPath(v) {
		return false
	}
	lname := strings.ToLower(name)
	if strings.Contains(lname, "pass") || strings.Contains(lname, "pwd") {
		return len(v) >= 6
	}
	minE := r.MinEntropy
	if minE == 0 {
		minE = 3.0
	}
	return credentialLike(v, minE)
}

// credentialLike: long enough, random enough, and mixing character
// classes the way generated keys do.
func credentialLike(v string, minEntropy float64) bool {
	if len(v) < 12 || rules.ShannonEntropy(v) < minEntropy {
		return false
	}
	var lower, upper, digit bool
	for _, c := range v {
		switch {
		case unicode.IsLower(c):
			lower = true
		case unicode.IsUpper(c):
			upper = true
		case unicode.IsDigit(c):
			digit = true
		}
	}
	n := 0
	for _, b := range []bool{lower, upper, digit} {
		if b {
			n++
		}
	}
	return n >= 2 && digit || n == 3
}

// looksLikeIdentifierPath reports dotted or scoped identifiers such as
// process.env.API_KEY, settings.SECRET_KEY or Config::Token.
func looksLikeIdentifierPath(v string) bool {
	if !strings.Contains(v, ".") && !strings.Contains(v, "::") {
		return false
	}
	for _, part := range strings.FieldsFunc(v, func(r rune) bool { return r == '.' || r == ':' }) {
		if part == "" || !(unicode.IsLetter(rune(part[0])) || part[0] == '_') {
			return false
		}
		for _, c := range part {
			if !(unicode.IsLetter(c) || unicode.IsDigit(c) || c == '_') {
				return false
			}
		}
	}
	return true
}
