// Package secrets is diffpal's one secret detector. Every text that
// leaves the process — model prompts, the evidence packet (`diffpal
// context --packet`), findings and their notes, summary.md, SARIF,
// qa-session.json, logs and error messages — goes through it.
//
// It finds everything gitleaks' default rules find (gitleaks.go: the
// library's detector with its keywords, entropy thresholds and allowlists,
// run around the lines that hold a keyword), and besides, in shapes
// gitleaks leaves alone or that outputs cut apart:
//   - provider-format credentials (AWS, GitHub, GitLab, Slack, Stripe,
//     Google, OpenAI, Anthropic, npm, PyPI, SendGrid, Twilio, Azure,
//     Heroku, Shopify, Datadog, JWT and more; see formats.go);
//   - URL credentials, scheme://[user]:password@host, where the password
//     may be empty-user (redis://:pw@host) and may contain "@" (it runs to
//     the last "@" before the host);
//   - values assigned to secret-like names: name=value, name: value,
//     JSON "name": "value", .env, shell export, --flag=value, YAML;
//   - CSV/TSV cells under a header naming a secret column, and 40-char
//     high-entropy cells on a line with an AWS access key id;
//   - PEM private keys: a BEGIN...END block, a BEGIN with no END, base64
//     body lines and an END with no BEGIN (a hunk that starts mid-key),
//     including body text carried by a hunk header's function context
//     ("@@ -1,3 +1,4 @@ ...");
//   - bearer/basic authorization values and curl -u credentials.
//
// Ordinary code is left alone: function calls, environment lookups,
// member access, template placeholders and type names are not values.
//
// A replacement keeps the line structure (a replaced multi-line span keeps
// its newline count) and may keep a format's public prefix (ghp_, AKIA,
// sk_live_), never the secret itself.
package secrets

import (
	"slices"
	"strings"
)

// Mask is what Redact puts in place of a secret.
const Mask = "[REDACTED]"

// Span is one secret in a text: s[Start:End]. Its first Keep bytes are a
// public format prefix (ghp_, AKIA) that may be shown.
type Span struct {
	Start, End int
	Keep       int
	Rule       string
}

// Redactor finds and replaces secrets. The zero value is ready to use and
// safe for concurrent use; Learn returns a new Redactor.
type Redactor struct {
	// Mask replaces each secret (default Mask).
	Mask string
	// MinEntropy is the Shannon entropy (bits per character) above which
	// an unrecognised value assigned to a secret-like name is a secret
	// (default 3.0). Password-like names need no entropy.
	MinEntropy float64

	known *knownSet
}

var std = &Redactor{}

// Redact returns s with every secret replaced by Mask.
func Redact(s string) string { return std.Redact(s) }

// Find returns the secrets in s, sorted and non-overlapping.
func Find(s string) []Span { return std.Find(s) }

// Learn returns a default Redactor that also knows every secret found in
// texts, and replaces it wherever it occurs later, with or without the
// context that gave it away (a CSV cell without its header, a key line
// without its BEGIN, a value a model repeats).
func Learn(texts ...string) *Redactor { return std.Learn(texts...) }

func (r *Redactor) mask() string {
	if r == nil || r.Mask == "" {
		return Mask
	}
	return r.Mask
}

func (r *Redactor) minEntropy() float64 {
	if r == nil || r.MinEntropy == 0 {
		return 3.0
	}
	return r.MinEntropy
}

// Redact returns s with every secret replaced.
func (r *Redactor) Redact(s string) string { return r.apply(s, r.Find(s)) }

// apply replaces spans (sorted, non-overlapping) of s.
func (r *Redactor) apply(s string, spans []Span) string {
	if len(spans) == 0 {
		return s
	}
	mask := r.mask()
	var b strings.Builder
	b.Grow(len(s))
	last := 0
	for _, sp := range spans {
		b.WriteString(s[last:sp.Start])
		b.WriteString(s[sp.Start : sp.Start+sp.Keep])
		b.WriteString(mask)
		for range strings.Count(s[sp.Start+sp.Keep:sp.End], "\n") {
			b.WriteByte('\n')
		}
		last = sp.End
	}
	b.WriteString(s[last:])
	return b.String()
}

// Find returns the secrets in s, sorted by position and non-overlapping.
func (r *Redactor) Find(s string) []Span {
	if len(s) < 6 {
		return nil
	}
	f := &finder{s: s, r: r}
	f.formats()
	f.urls()
	f.assignments()
	f.lineRules()
	f.gitleaks()
	f.releaseStarts()
	if r != nil && r.known != nil {
		r.known.find(f)
	}
	return merge(f.spans)
}

// PublicPrefix is the public format prefix of a secret value (ghp_ for a
// GitHub token, AKIA for an AWS access key id), or "" when v has none.
func PublicPrefix(v string) string {
	for _, sp := range Find(v) {
		if sp.Start == 0 {
			return v[:sp.Keep]
		}
	}
	return ""
}

// finder collects the spans of one text.
type finder struct {
	s        string
	r        *Redactor
	spans    []Span
	linesBuf *[]line // the pooled line list of splitLines, until releaseLines
	aws      []int   // starts of the lines holding an AWS access key id

	// Where the keyword scans look (scanStarts): formats, secret-like
	// names, gitleaks keywords; pooled, where the lists go back
	// (releaseStarts), is nil until they are listed.
	formatAt, nameAt, leakAt []int
	pooled                   *startLists
}

func (f *finder) add(start, end, keep int, rule string) {
	if start < 0 || end > len(f.s) || start >= end {
		return
	}
	if keep < 0 || keep > (end-start)/2 {
		keep = 0
	}
	f.spans = append(f.spans, Span{Start: start, End: end, Keep: keep, Rule: rule})
}

// merge sorts spans and joins overlapping ones; a joined span keeps the
// public prefix of the widest span starting where it starts.
func merge(spans []Span) []Span {
	if len(spans) <= 1 {
		return spans
	}
	slices.SortFunc(spans, func(a, b Span) int {
		if a.Start != b.Start {
			return a.Start - b.Start
		}
		if a.End != b.End {
			return b.End - a.End
		}
		return b.Keep - a.Keep
	})
	out := spans[:1]
	for _, sp := range spans[1:] {
		cur := &out[len(out)-1]
		if sp.Start < cur.End {
			if sp.End > cur.End {
				cur.End = sp.End
			}
			if sp.Start == cur.Start && sp.Keep > cur.Keep {
				cur.Keep = sp.Keep
			}
			continue
		}
		out = append(out, sp)
	}
	for i := range out {
		if out[i].Keep > (out[i].End-out[i].Start)/2 {
			out[i].Keep = 0
		}
	}
	return out
}

// CodeHostTokenVars are the environment variables that carry a code
// host's write token in CI (GitHub Actions, GitLab CI, Azure Pipelines).
// diffpal publish reads them; nothing else needs them, so a provider's
// agent process — which reads the untrusted change — never inherits them.
var CodeHostTokenVars = []string{"GITHUB_TOKEN", "GH_TOKEN", "GITLAB_TOKEN", "CI_JOB_TOKEN", "SYSTEM_ACCESSTOKEN", "AZURE_DEVOPS_EXT_PAT"}

// WithoutCodeHostTokens returns env (KEY=VALUE entries) without the
// CodeHostTokenVars.
func WithoutCodeHostTokens(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(CodeHostTokenVars, k) {
			out = append(out, kv)
		}
	}
	return out
}
