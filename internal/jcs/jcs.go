// Package jcs implements the JSON Canonicalization Scheme of RFC 8785.
//
// Hashes that two independent parties must reproduce (request hashes, review
// rules hashes, candidate hashes) are computed over JCS output, so the
// encoding here must be byte-exact: object keys sorted by UTF-16 code units,
// no insignificant whitespace, strings escaped exactly as ECMAScript's
// JSON.stringify does, and numbers formatted as ECMAScript's Number.toString.
package jcs

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Canonicalize re-encodes the JSON text data in canonical form. Duplicate
// object keys and numbers outside the IEEE 754 double range are rejected,
// as RFC 8785 requires.
//
// Valid JSON is re-encoded in one pass over its bytes (canonicalizer);
// anything else, and a document with a duplicate key, goes through
// encoding/json's tokenizer (canonicalizeTokens), which words the error.
// Request hashes canonicalize every mutating call's arguments, and the
// tokenizer's allocation per token made that most of a hash's cost.
// TestCanonicalizeSameAsTokens and FuzzCanonicalize compare the two.
func Canonicalize(data []byte) ([]byte, error) {
	if !json.Valid(data) {
		return canonicalizeTokens(data)
	}
	c := canonicalizer{data: data}
	var buf bytes.Buffer
	buf.Grow(len(data))
	if err := c.value(&buf); err != nil {
		if errors.Is(err, errDuplicate) {
			return canonicalizeTokens(data)
		}
		return nil, err
	}
	return buf.Bytes(), nil
}

// canonicalizeTokens is Canonicalize through encoding/json's tokenizer.
func canonicalizeTokens(data []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var buf bytes.Buffer
	if err := writeValue(&buf, dec); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("jcs: trailing data after JSON value")
	}
	return buf.Bytes(), nil
}

var errDuplicate = errors.New("jcs: duplicate object key")

// canonicalizer re-encodes JSON text that json.Valid accepted.
type canonicalizer struct {
	data []byte
	i    int
}

func (c *canonicalizer) space() {
	for c.i < len(c.data) {
		switch c.data[c.i] {
		case ' ', '\t', '\r', '\n':
			c.i++
		default:
			return
		}
	}
}

func (c *canonicalizer) value(buf *bytes.Buffer) error {
	c.space()
	switch c.data[c.i] {
	case '{':
		return c.object(buf)
	case '[':
		c.i++
		buf.WriteByte('[')
		c.space()
		if c.data[c.i] == ']' {
			c.i++
			buf.WriteByte(']')
			return nil
		}
		for {
			if err := c.value(buf); err != nil {
				return err
			}
			c.space()
			if c.data[c.i] == ']' {
				c.i++
				buf.WriteByte(']')
				return nil
			}
			c.i++ // ','
			buf.WriteByte(',')
		}
	case '"':
		s, err := c.str()
		if err != nil {
			return err
		}
		writeString(buf, s)
	case 't':
		c.i += 4
		buf.WriteString("true")
	case 'f':
		c.i += 5
		buf.WriteString("false")
	case 'n':
		c.i += 4
		buf.WriteString("null")
	default:
		start := c.i
		for c.i < len(c.data) && strings.IndexByte("+-0123456789.eE", c.data[c.i]) >= 0 {
			c.i++
		}
		return writeNumber(buf, string(c.data[start:c.i]))
	}
	return nil
}

// str decodes the string at c.i as encoding/json does: a string without
// escapes that is valid UTF-8 is its bytes; any other is decoded by
// encoding/json itself (escapes, surrogates, invalid UTF-8).
func (c *canonicalizer) str() (string, error) {
	start := c.i
	escaped := false
	for c.i++; c.data[c.i] != '"'; c.i++ {
		if c.data[c.i] == '\\' {
			escaped = true
			c.i++
		}
	}
	c.i++
	raw := c.data[start:c.i]
	if inner := raw[1 : len(raw)-1]; !escaped && utf8.Valid(inner) {
		return string(inner), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("jcs: %w", err)
	}
	return s, nil
}

// span is one member of an object being canonicalized: its key and where
// its canonical "key":value was written.
type span struct {
	key        string
	start, end int
}

func (c *canonicalizer) object(buf *bytes.Buffer) error {
	c.i++ // '{'
	buf.WriteByte('{')
	base := buf.Len()
	var members []span
	c.space()
	if c.data[c.i] != '}' {
		for {
			if len(members) > 0 {
				buf.WriteByte(',')
			}
			c.space()
			key, err := c.str()
			if err != nil {
				return err
			}
			start := buf.Len()
			writeString(buf, key)
			buf.WriteByte(':')
			c.space()
			c.i++ // ':'
			if err := c.value(buf); err != nil {
				return err
			}
			members = append(members, span{key: key, start: start, end: buf.Len()})
			c.space()
			if c.data[c.i] == '}' {
				break
			}
			c.i++ // ','
		}
	}
	c.i++ // '}'
	if !slices.IsSortedFunc(members, compareSpans) {
		slices.SortStableFunc(members, compareSpans)
		// Written in document order: write them again in key order.
		written := bytes.Clone(buf.Bytes()[base:])
		buf.Truncate(base)
		for k, m := range members {
			if k > 0 {
				buf.WriteByte(',')
			}
			buf.Write(written[m.start-base : m.end-base])
		}
	}
	for k := 1; k < len(members); k++ {
		if members[k].key == members[k-1].key {
			return errDuplicate
		}
	}
	buf.WriteByte('}')
	return nil
}

// compareSpans orders keys by their UTF-16 code units (RFC 8785 §3.2.3),
// which is byte order unless a key has a character outside the BMP and
// the other one at or above U+E000 there.
func compareSpans(a, b span) int {
	if isASCII(a.key) && isASCII(b.key) {
		return strings.Compare(a.key, b.key)
	}
	return slices.Compare(utf16.Encode([]rune(a.key)), utf16.Encode([]rune(b.key)))
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// Marshal encodes v with encoding/json and canonicalizes the result.
func Marshal(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("jcs: %w", err)
	}
	return Canonicalize(raw)
}

// SHA256Hex returns the lower-case hex SHA-256 of the canonical form of v.
func SHA256Hex(v any) (string, error) {
	b, err := Marshal(v)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

func writeValue(buf *bytes.Buffer, dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("jcs: %w", err)
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			return writeObject(buf, dec)
		case '[':
			return writeArray(buf, dec)
		}
		return fmt.Errorf("jcs: unexpected delimiter %q", t)
	case nil:
		buf.WriteString("null")
	case bool:
		buf.WriteString(strconv.FormatBool(t))
	case json.Number:
		return writeNumber(buf, string(t))
	case string:
		writeString(buf, t)
	default:
		return fmt.Errorf("jcs: unexpected token %v", tok)
	}
	return nil
}

type member struct {
	key   string
	sort  []uint16
	value []byte
}

func writeObject(buf *bytes.Buffer, dec *json.Decoder) error {
	var members []member
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("jcs: %w", err)
		}
		key, ok := tok.(string)
		if !ok {
			return fmt.Errorf("jcs: object key is %T", tok)
		}
		if seen[key] {
			return fmt.Errorf("jcs: duplicate object key %q", key)
		}
		seen[key] = true
		var vb bytes.Buffer
		if err := writeValue(&vb, dec); err != nil {
			return err
		}
		members = append(members, member{key: key, sort: utf16.Encode([]rune(key)), value: vb.Bytes()})
	}
	if _, err := dec.Token(); err != nil { // closing '}'
		return fmt.Errorf("jcs: %w", err)
	}
	// RFC 8785 §3.2.3: keys are ordered by their UTF-16 code units, which
	// differs from byte order for characters outside the BMP.
	slices.SortFunc(members, func(a, b member) int { return slices.Compare(a.sort, b.sort) })
	buf.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			buf.WriteByte(',')
		}
		writeString(buf, m.key)
		buf.WriteByte(':')
		buf.Write(m.value)
	}
	buf.WriteByte('}')
	return nil
}

func writeArray(buf *bytes.Buffer, dec *json.Decoder) error {
	buf.WriteByte('[')
	for i := 0; dec.More(); i++ {
		if i > 0 {
			buf.WriteByte(',')
		}
		if err := writeValue(buf, dec); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // closing ']'
		return fmt.Errorf("jcs: %w", err)
	}
	buf.WriteByte(']')
	return nil
}

// writeNumber writes the JSON number text t in canonical form.
func writeNumber(buf *bytes.Buffer, t string) error {
	f, err := strconv.ParseFloat(t, 64)
	if err != nil {
		return fmt.Errorf("jcs: number %s: %w", t, err)
	}
	n, err := FormatNumber(f)
	if err != nil {
		return err
	}
	buf.WriteString(n)
	return nil
}

const hexDigits = "0123456789abcdef"

// WriteString writes s as a canonical JSON string, as Marshal would write
// it (invalid UTF-8 becomes U+FFFD, byte by byte, as encoding/json does):
// for writers of canonical JSON that skip encoding/json.
func WriteString(buf *bytes.Buffer, s string) { writeString(buf, s) }

// writeString escapes like ECMAScript JSON.stringify: only the quote, the
// backslash and control characters are escaped; everything else, including
// '/', '<' and non-ASCII, is written as UTF-8.
func writeString(buf *bytes.Buffer, s string) {
	buf.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == '"':
			buf.WriteString(`\"`)
		case r == '\\':
			buf.WriteString(`\\`)
		case r == '\b':
			buf.WriteString(`\b`)
		case r == '\f':
			buf.WriteString(`\f`)
		case r == '\n':
			buf.WriteString(`\n`)
		case r == '\r':
			buf.WriteString(`\r`)
		case r == '\t':
			buf.WriteString(`\t`)
		case r < 0x20:
			buf.WriteString(`\u00`)
			buf.WriteByte(hexDigits[r>>4])
			buf.WriteByte(hexDigits[r&0xf])
		default:
			buf.WriteRune(r)
		}
	}
	buf.WriteByte('"')
}

// FormatNumber formats f as ECMAScript's Number.prototype.toString does
// (ECMA-262 §7.1.12.1), which is what RFC 8785 prescribes.
func FormatNumber(f float64) (string, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "", fmt.Errorf("jcs: %v is not representable in JSON", f)
	}
	if f == 0 {
		return "0", nil // covers -0 as well
	}
	var sign string
	if f < 0 {
		sign, f = "-", -f
	}
	// Go's shortest round-trip digits are the digits ECMAScript asks for.
	mant, exp, _ := strings.Cut(strconv.FormatFloat(f, 'e', -1, 64), "e")
	digits := strings.Replace(mant, ".", "", 1)
	e, err := strconv.Atoi(exp)
	if err != nil {
		return "", fmt.Errorf("jcs: format %v: %w", f, err)
	}
	k, n := len(digits), e+1
	var out string
	switch {
	case k <= n && n <= 21:
		out = digits + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		out = digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		out = "0." + strings.Repeat("0", -n) + digits
	default:
		out = digits[:1]
		if k > 1 {
			out += "." + digits[1:]
		}
		x := n - 1
		if x >= 0 {
			out += "e+" + strconv.Itoa(x)
		} else {
			out += "e-" + strconv.Itoa(-x)
		}
	}
	return sign + out, nil
}
