package qa

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Wire patterns, spelled out for error messages. The matchers below are
// hand-written so the package needs no package-level compiled regexps.
const (
	patternRunID       = "^qar-[0-9a-f]{32}$"
	patternRequestID   = "^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$"
	patternEvidenceRef = "^[A-Za-z0-9][A-Za-z0-9._:/-]*$ (at most 128 characters)"
	patternRuleID      = "^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"
	patternCandidateID = "^F-[0-9]{2,}$"
)

func isAlnum(b byte) bool {
	return b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// isIdent matches ^[A-Za-z0-9][A-Za-z0-9<extra>]*$ with at most max bytes.
func isIdent(s string, max int, extra string) bool {
	if s == "" || len(s) > max || !isAlnum(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isAlnum(s[i]) && strings.IndexByte(extra, s[i]) < 0 {
			return false
		}
	}
	return true
}

func isHex(s string, lowerOnly bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || !lowerOnly && c >= 'A' && c <= 'F') {
			return false
		}
	}
	return s != ""
}

func isSHA256(s string) bool { return len(s) == 64 && isHex(s, false) }
func isGitSHA(s string) bool { return (len(s) == 40 || len(s) == 64) && isHex(s, false) }
func isRunID(s string) bool {
	return len(s) == 36 && strings.HasPrefix(s, "qar-") && isHex(s[4:], true)
}
func isRef(s string) bool       { return isIdent(s, 128, "._:/-") }
func isRuleID(s string) bool    { return isIdent(s, 128, "._-") }
func isRequestID(s string) bool { return isIdent(s, 128, "._:-") }

func isCandidateID(s string) bool {
	if len(s) < 4 || !strings.HasPrefix(s, "F-") {
		return false
	}
	for i := 2; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// decodeStrict decodes exactly one JSON value and rejects unknown fields,
// mirroring the closed objects of the wire schemas.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("trailing data after JSON value")
	}
	return nil
}

// DecodeInput decodes tool arguments into one of the *Input types with the
// wire rules the schemas publish: one JSON object, unknown properties
// rejected. Adapters that do not validate against the schema use it.
func DecodeInput(data []byte, v any) error {
	if err := decodeStrict(data, v); err != nil {
		return newError(CodeInvalidArgument, "", err.Error())
	}
	return nil
}

// checker records the first validation failure under one error code, so
// validators read as a flat list of rules.
type checker struct {
	code Code
	err  *Error
}

func (c *checker) failf(field, format string, args ...any) {
	if c.err == nil {
		c.err = newError(c.code, field, fmt.Sprintf(format, args...))
	}
}

func (c *checker) result() error {
	if c.err == nil {
		return nil
	}
	return c.err
}

func (c *checker) text(field, v string, min, max int) {
	if n := utf8.RuneCountInString(v); n < min || n > max {
		c.failf(field, "must be %d-%d characters (got %d)", min, max, n)
	}
}

func (c *checker) optText(field string, v *string, min, max int) {
	if v != nil {
		c.text(field, *v, min, max)
	}
}

func (c *checker) count(field string, n, min, max int) {
	if n < min || n > max {
		if min == 0 {
			c.failf(field, "must have at most %d items (got %d)", max, n)
		} else {
			c.failf(field, "must have %d-%d items (got %d)", min, max, n)
		}
	}
}

// ref checks one evidence ref; known == nil means the session is unbound and
// only the pattern applies.
func (c *checker) ref(field, v string, known map[string]bool) {
	switch {
	case !isRef(v):
		c.failf(field, "must match %s", patternEvidenceRef)
	case known != nil && !known[v]:
		c.failf(field, "%q is not an evidence ref of this session's review_context", v)
	}
}

func (c *checker) refs(field string, vs []string, min, max int, known map[string]bool) {
	c.count(field, len(vs), min, max)
	for i, v := range vs {
		c.ref(fmt.Sprintf("%s[%d]", field, i), v, known)
	}
}

func (c *checker) sha256(field, v string) {
	if !isSHA256(v) {
		c.failf(field, "must be 64 hex characters")
	}
}

func lowerPtr(p *string) *string {
	if p == nil {
		return nil
	}
	s := strings.ToLower(*p)
	return &s
}

func ptr[T any](v T) *T { return &v }
