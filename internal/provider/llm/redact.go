package llm

import "github.com/diffpalhq/diffpal/internal/secrets"

// Redacted replaces every secret the Redactor finds.
const Redacted = secrets.Mask

// Redactor removes secrets from text before it leaves the process. It is
// the one secret detector of internal/secrets (provider formats, PEM
// keys, URL credentials, bearer tokens, secret-like assignments, CSV
// cells), with its defaults.
type Redactor struct {
	// MinEntropy is the Shannon entropy (bits per character) above which
	// an unrecognised value assigned to a secret-like name is redacted
	// (default 3.0). Values assigned to password-like names are redacted
	// whatever their entropy unless they look like code or placeholders.
	MinEntropy float64
}

// Redact returns s with every secret replaced by Redacted (a format's
// public prefix, such as ghp_, may stay).
func (r *Redactor) Redact(s string) string {
	if s == "" {
		return s
	}
	d := secrets.Redactor{}
	if r != nil {
		d.MinEntropy = r.MinEntropy
	}
	return d.Redact(s)
}
