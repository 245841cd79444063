package builtin

import (
	"strings"

	"github.com/diffpalhq/diffpal/internal/clip"
	"github.com/diffpalhq/diffpal/internal/rules"
	"github.com/diffpalhq/diffpal/internal/secrets"
)

// Secrets committed in the change, by gitleaks' default rules (package
// secrets): every added line of every file in scope, whatever its type
// (Makefiles, PHP, XML, INI, .env, notebooks), runs of consecutive added
// lines scanned together so a multi-line private key is one finding.
// Findings carry rule id "secrets.<gitleaks rule id>", and never the
// secret: the snippet and anchor keep a public prefix (AKIA, ghp_) at
// most.

// SecretRulePrefix starts the rule id of every secret finding.
const SecretRulePrefix = "secrets."

const secretProfile = "security_reviewer"

// secretHits scans f's added lines.
func secretHits(set *rules.Set, f *rules.File) []rules.Hit {
	if len(f.Added) == 0 {
		return nil
	}
	test := rules.IsTestPath(f.Path)
	var out []rules.Hit
	var sb strings.Builder
	var at rules.TextCursor
	for start := 0; start < len(f.Added); {
		end := start + 1
		for end < len(f.Added) && f.Added[end].No == f.Added[end-1].No+1 {
			end++
		}
		block := f.Added[start:end]
		var text string
		if len(block) == 1 {
			text = block[0].Text
		} else if t, ok := blockText(&at, f, block); ok {
			text = t
		} else {
			sb.Reset()
			for i, l := range block {
				if i > 0 {
					sb.WriteByte('\n')
				}
				sb.WriteString(l.Text)
			}
			text = sb.String()
		}
		for _, m := range dedupeMatches(secrets.ScanPath(f.Path, text)) {
			if m.Line < 1 || m.Line > len(block) || !set.Enabled(SecretRulePrefix+m.RuleID) {
				continue
			}
			// Test code holds fake credentials by the thousand: a private
			// key under a test path is a fixture (tests/certs/server.key),
			// and so is a generic keyword-and-entropy match. Measured on
			// real repositories, every such finding was a deliberate
			// fixture, so they are not reported. A provider token with a
			// fixed format is real until revoked, test file or not.
			if test && (!m.Fixed || m.RuleID == "private-key") {
				continue
			}
			endLine := min(max(m.EndLine, m.Line), len(block))
			out = append(out, secretHit(f.Path, m, block[m.Line-1].No, block[endLine-1].No))
		}
		start = end
	}
	return out
}

func secretHit(path string, m secrets.Match, start, end int) rules.Hit {
	sev, conf := m.Severity, 0.9
	if !m.Fixed {
		conf = 0.75
	}
	if sev == "" {
		sev = "high"
	}
	msg := "gitleaks rule " + m.RuleID + ": " + strings.TrimSpace(m.Description)
	title := "Secret committed (" + m.RuleID + ")"
	// Precision decides severity, as for the pack rules: high and critical
	// need the rule's measured precision (internal/rules/precision.tsv).
	sev = rules.GateSeverity(SecretRulePrefix+m.RuleID, sev)
	return rules.Hit{
		RuleID: SecretRulePrefix + m.RuleID, Profile: secretProfile, Category: "security",
		Severity: sev, Confidence: conf, Title: title, Message: msg,
		Impact:      "Anyone who can read the repository or its history can use the credential until it is revoked.",
		ImpactScope: "service credentials",
		Suggestion:  "Revoke or rotate the credential, remove it from history, and load it from the environment or a secret store.",
		Path:        path, StartLine: start, EndLine: end, Source: "changed_line",
		Snippet: clip.Text(m.Snippet, 400), Anchor: clip.Text(m.Redacted, 120),
	}
}

// dedupeMatches keeps one finding per secret: of two rules that found
// overlapping text (curl-auth-header and github-pat on one curl command),
// the one with a fixed format, else the first.
func dedupeMatches(ms []secrets.Match) []secrets.Match {
	if len(ms) < 2 {
		return ms
	}
	out := ms[:1]
	for _, m := range ms[1:] {
		last := &out[len(out)-1]
		if m.Start < last.End {
			if m.Fixed && !last.Fixed {
				*last = m
			}
			continue
		}
		out = append(out, m)
	}
	return out
}

// blockText is the block's lines joined, as a slice of f.Text, when they
// are the file's own lines (a diff's lines could differ from the content,
// a CRLF file's for one).
func blockText(at *rules.TextCursor, f *rules.File, block []rules.Line) (string, bool) {
	start, end, ok := at.Span(f, block[0].No, block[len(block)-1].No)
	if !ok {
		return "", false
	}
	for _, l := range block {
		if f.Content[l.No-1] != l.Text {
			return "", false
		}
	}
	return f.Text[start:end], true
}
