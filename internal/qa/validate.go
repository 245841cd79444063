package qa

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// The wire constraints themselves (lengths, counts, patterns, ranges,
// value sets) are data in rules.go, shared with the published schemas; the
// validators here and in context.go, report.go and final.go run
// checkRules first and then check what a schema cannot say: duplicates,
// membership in the session's evidence refs, cross-field order, and the
// bindings to the session's state.

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

// known checks that every ref in vs is one of the session's evidence refs;
// known == nil means the session is unbound and only the pattern (a rule)
// applies.
func (c *checker) known(field string, vs []string, known map[string]bool) {
	for i, v := range vs {
		c.knownRef(fmt.Sprintf("%s[%d]", field, i), v, known)
	}
}

func (c *checker) knownRef(field, v string, known map[string]bool) {
	if known != nil && !known[v] {
		c.failf(field, "%q is not an evidence ref of this session's review_context", v)
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
