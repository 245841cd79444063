package mcpserver

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/google/jsonschema-go/jsonschema"
)

// fastSchema is an input schema compiled for fastValidate: the subset of
// JSON Schema the qa tools' inferred input schemas use (type, enum, const,
// minLength, maxLength, pattern, minimum, maximum, minItems, maxItems,
// items, properties, required, additionalProperties: false; description,
// title and format are annotations the SDK's validator does not check).
//
// fastValidate walks the raw JSON arguments against it in one pass and
// answers "valid" only when the SDK's own path (the arguments decoded to
// a map, then jsonschema-go's Resolved.Validate) would accept them too. Any
// doubt is "not valid", and the caller then runs the SDK's path, which
// decides and words the error; so an answer of the fast path can never
// differ from the SDK's, it can only skip work. Doubts include anything
// the compiled subset does not model: strings with surrogate escapes or
// invalid UTF-8, duplicate keys, numbers strconv cannot parse, nesting
// deeper than fastMaxDepth, and any JSON syntax error.
type fastSchema struct {
	types      uint8 // bit set of fastType values; 0 means any type
	enum       []string
	enumNull   bool // enum lists null
	hasEnum    bool
	constant   *fastConst
	minLength  int // -1: none
	maxLength  int
	pattern    func(string) bool
	minimum    *float64
	maximum    *float64
	minItems   int // -1: none
	maxItems   int
	items      *fastSchema
	properties map[string]*fastSchema
	required   []string
	closed     bool // additionalProperties: false
}

type fastConst struct {
	num     *float64
	boolean *bool
	str     *string
}

const (
	tNull uint8 = 1 << iota
	tBoolean
	tObject
	tArray
	tNumber
	tInteger
	tString
)

var fastTypeBits = map[string]uint8{"null": tNull, "boolean": tBoolean, "object": tObject, "array": tArray,
	"number": tNumber, "integer": tInteger, "string": tString}

// fastMaxDepth bounds nesting on the fast path (the SDK allows 1000).
const fastMaxDepth = 64

// compileFast compiles s, or returns nil when s uses anything outside the
// modelled subset (the tool then always takes the SDK's path). It reads
// the schema's JSON form, which is what the validator's fields marshal
// to, so a keyword added to jsonschema.Schema later is refused rather
// than ignored.
func compileFast(s *jsonschema.Schema) *fastSchema {
	b, err := json.Marshal(s)
	if err != nil {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil
	}
	fs, err := compileFastMap(m)
	if err != nil {
		return nil
	}
	return fs
}

func compileFastMap(m map[string]any) (*fastSchema, error) {
	fs := &fastSchema{minLength: -1, maxLength: -1, minItems: -1, maxItems: -1}
	for k, v := range m {
		switch k {
		case "description", "title", "format":
		case "type":
			switch t := v.(type) {
			case string:
				bit, ok := fastTypeBits[t]
				if !ok {
					return nil, fmt.Errorf("type %q", t)
				}
				fs.types |= bit
			case []any:
				if len(t) == 0 {
					return nil, fmt.Errorf("empty types")
				}
				for _, e := range t {
					name, _ := e.(string)
					bit, ok := fastTypeBits[name]
					if !ok {
						return nil, fmt.Errorf("type %v", e)
					}
					fs.types |= bit
				}
			default:
				return nil, fmt.Errorf("type %T", v)
			}
		case "enum":
			vals, ok := v.([]any)
			if !ok {
				return nil, fmt.Errorf("enum %T", v)
			}
			fs.hasEnum = true
			for _, e := range vals {
				switch e := e.(type) {
				case nil:
					fs.enumNull = true
				case string:
					fs.enum = append(fs.enum, e)
				default:
					return nil, fmt.Errorf("enum value %T", e)
				}
			}
		case "const":
			c := &fastConst{}
			switch e := v.(type) {
			case float64:
				c.num = &e
			case bool:
				c.boolean = &e
			case string:
				c.str = &e
			default:
				return nil, fmt.Errorf("const %T", v)
			}
			fs.constant = c
		case "minLength", "maxLength", "minItems", "maxItems":
			f, ok := v.(float64)
			if !ok || f < 0 || f != math.Trunc(f) || f > math.MaxInt32 {
				return nil, fmt.Errorf("%s %v", k, v)
			}
			n := int(f)
			switch k {
			case "minLength":
				fs.minLength = n
			case "maxLength":
				fs.maxLength = n
			case "minItems":
				fs.minItems = n
			default:
				fs.maxItems = n
			}
		case "pattern":
			p, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("pattern %T", v)
			}
			// Compiled as jsonschema-go's Resolve does, or the same
			// pattern written out (qa.PatternMatcher).
			m, err := qa.PatternMatcher(p)
			if err != nil {
				return nil, err
			}
			fs.pattern = m
		case "minimum", "maximum":
			f, ok := v.(float64)
			if !ok {
				return nil, fmt.Errorf("%s %T", k, v)
			}
			if k == "minimum" {
				fs.minimum = &f
			} else {
				fs.maximum = &f
			}
		case "items":
			sub, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("items %T", v)
			}
			s, err := compileFastMap(sub)
			if err != nil {
				return nil, err
			}
			fs.items = s
		case "properties":
			props, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("properties %T", v)
			}
			fs.properties = make(map[string]*fastSchema, len(props))
			for name, pv := range props {
				if pv == true {
					pv = map[string]any{} // the schema true: any value
				}
				sub, ok := pv.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("property %q %T", name, pv)
				}
				s, err := compileFastMap(sub)
				if err != nil {
					return nil, err
				}
				fs.properties[name] = s
			}
		case "required":
			req, ok := v.([]any)
			if !ok {
				return nil, fmt.Errorf("required %T", v)
			}
			for _, r := range req {
				name, ok := r.(string)
				if !ok {
					return nil, fmt.Errorf("required %T", r)
				}
				fs.required = append(fs.required, name)
			}
		case "additionalProperties":
			if b, ok := v.(bool); !ok || b {
				return nil, fmt.Errorf("additionalProperties %v", v)
			}
			fs.closed = true
		default:
			return nil, fmt.Errorf("keyword %q", k)
		}
	}
	return fs, nil
}

// fastValidate reports whether data is one JSON object that fs accepts;
// false also means "not sure" (see fastSchema).
func (fs *fastSchema) fastValidate(data []byte) bool {
	p := fastParser{data: data}
	p.skipSpace()
	if p.pos >= len(p.data) || p.data[p.pos] != '{' {
		return false
	}
	if !p.value(fs, 0) {
		return false
	}
	p.skipSpace()
	return p.pos == len(p.data)
}

type fastParser struct {
	data []byte
	pos  int
	buf  []byte // scratch for strings with escapes
}

func (p *fastParser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (fs *fastSchema) allows(bit uint8) bool { return fs == nil || fs.types == 0 || fs.types&bit != 0 }

// value parses one value at p.pos and checks it against fs (nil: any
// value, which is still parsed strictly).
func (p *fastParser) value(fs *fastSchema, depth int) bool {
	if depth > fastMaxDepth {
		return false
	}
	p.skipSpace()
	if p.pos >= len(p.data) {
		return false
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(fs, depth)
	case c == '[':
		return p.array(fs, depth)
	case c == '"':
		s, ok := p.str()
		return ok && fs.checkString(s)
	case c == 't':
		return p.literal("true") && fs.checkBool(true)
	case c == 'f':
		return p.literal("false") && fs.checkBool(false)
	case c == 'n':
		return p.literal("null") && fs.checkNull()
	case c == '-' || c >= '0' && c <= '9':
		f, ok := p.number()
		return ok && fs.checkNumber(f)
	}
	return false
}

func (p *fastParser) literal(lit string) bool {
	if len(p.data)-p.pos < len(lit) || string(p.data[p.pos:p.pos+len(lit)]) != lit {
		return false
	}
	p.pos += len(lit)
	return true
}

// number parses a JSON number (strict grammar) and converts it as the
// SDK's decoder does (strconv.ParseFloat of the literal).
func (p *fastParser) number() (float64, bool) {
	start := p.pos
	d := p.data
	i := p.pos
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	default:
		return 0, false
	}
	if i < len(d) && d[i] == '.' {
		i++
		j := i
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		if i == j {
			return 0, false
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		j := i
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		if i == j {
			return 0, false
		}
	}
	f, err := strconv.ParseFloat(string(d[start:i]), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	p.pos = i
	return f, true
}

// str parses a JSON string. Escapes are decoded exactly (\uXXXX outside
// the surrogate range only); raw bytes must be valid UTF-8 without
// control characters. Anything else is "not sure".
func (p *fastParser) str() (string, bool) {
	d := p.data
	i := p.pos + 1
	start := i
	for i < len(d) {
		c := d[i]
		if c == '"' {
			s := string(d[start:i])
			p.pos = i + 1
			return s, utf8.ValidString(s)
		}
		if c == '\\' {
			return p.escaped(start)
		}
		if c < 0x20 {
			return "", false
		}
		i++
	}
	return "", false
}

func (p *fastParser) escaped(start int) (string, bool) {
	d := p.data
	buf := p.buf[:0]
	i := start
	for i < len(d) {
		c := d[i]
		switch {
		case c == '"':
			p.pos = i + 1
			p.buf = buf
			if !utf8.Valid(buf) {
				return "", false
			}
			return string(buf), true
		case c < 0x20:
			return "", false
		case c != '\\':
			buf = append(buf, c)
			i++
			continue
		}
		if i+1 >= len(d) {
			return "", false
		}
		switch e := d[i+1]; e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			if i+6 > len(d) {
				return "", false
			}
			v, err := strconv.ParseUint(string(d[i+2:i+6]), 16, 16)
			if err != nil || utf16.IsSurrogate(rune(v)) {
				return "", false
			}
			buf = utf8.AppendRune(buf, rune(v))
			i += 6
			continue
		default:
			return "", false
		}
		i += 2
	}
	return "", false
}

func (p *fastParser) object(fs *fastSchema, depth int) bool {
	if !fs.allows(tObject) || fs != nil && (fs.hasEnum || fs.constant != nil) {
		return false
	}
	p.pos++ // '{'
	var seen []string
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return fs.checkRequired(seen)
	}
	for {
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return false
		}
		key, ok := p.str()
		if !ok || slices.Contains(seen, key) {
			return false // duplicate keys: the SDK's map keeps the last one
		}
		seen = append(seen, key)
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return false
		}
		p.pos++
		var sub *fastSchema
		if fs != nil {
			s, declared := fs.properties[key]
			if !declared && fs.closed {
				return false
			}
			sub = s // nil for an undeclared key of an open object: any value
		}
		if !p.value(sub, depth+1) {
			return false
		}
		p.skipSpace()
		if p.pos >= len(p.data) {
			return false
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			return fs.checkRequired(seen)
		default:
			return false
		}
	}
}

func (fs *fastSchema) checkRequired(seen []string) bool {
	if fs == nil {
		return true
	}
	for _, r := range fs.required {
		if !slices.Contains(seen, r) {
			return false
		}
	}
	return true
}

func (p *fastParser) array(fs *fastSchema, depth int) bool {
	if !fs.allows(tArray) || fs != nil && (fs.hasEnum || fs.constant != nil) {
		return false
	}
	var items *fastSchema
	if fs != nil {
		items = fs.items
	}
	p.pos++ // '['
	n := 0
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return fs.checkItems(0)
	}
	for {
		if !p.value(items, depth+1) {
			return false
		}
		n++
		p.skipSpace()
		if p.pos >= len(p.data) {
			return false
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			return fs.checkItems(n)
		default:
			return false
		}
	}
}

func (fs *fastSchema) checkItems(n int) bool {
	return fs == nil || (fs.minItems < 0 || n >= fs.minItems) && (fs.maxItems < 0 || n <= fs.maxItems)
}

func (fs *fastSchema) checkString(s string) bool {
	if fs == nil {
		return true
	}
	if !fs.allows(tString) {
		return false
	}
	if fs.hasEnum && !slices.Contains(fs.enum, s) {
		return false
	}
	if c := fs.constant; c != nil && (c.str == nil || *c.str != s) {
		return false
	}
	if fs.minLength >= 0 || fs.maxLength >= 0 {
		n := utf8.RuneCountInString(s)
		if fs.minLength >= 0 && n < fs.minLength || fs.maxLength >= 0 && n > fs.maxLength {
			return false
		}
	}
	return fs.pattern == nil || fs.pattern(s)
}

func (fs *fastSchema) checkBool(b bool) bool {
	if fs == nil {
		return true
	}
	if !fs.allows(tBoolean) || fs.hasEnum {
		return false
	}
	c := fs.constant
	return c == nil || c.boolean != nil && *c.boolean == b
}

func (fs *fastSchema) checkNull() bool {
	if fs == nil {
		return true
	}
	if !fs.allows(tNull) || fs.hasEnum && !fs.enumNull {
		return false
	}
	return fs.constant == nil
}

func (fs *fastSchema) checkNumber(f float64) bool {
	if fs == nil {
		return true
	}
	// jsonschema-go's type of a float64: "integer" when it has no
	// fractional part, and "number" subsumes "integer".
	if _, frac := math.Modf(f); frac == 0 {
		if !fs.allows(tInteger) && !fs.allows(tNumber) {
			return false
		}
	} else if !fs.allows(tNumber) {
		return false
	}
	if fs.hasEnum {
		return false
	}
	if c := fs.constant; c != nil && (c.num == nil || *c.num != f) {
		return false
	}
	return (fs.minimum == nil || f >= *fs.minimum) && (fs.maximum == nil || f <= *fs.maximum)
}
