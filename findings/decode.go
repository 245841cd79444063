package findings

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// maxDepth bounds nesting so that hostile input (say, a million '[' in an
// unknown field) is an error rather than a runaway recursion.
const maxDepth = 1000

// SyntaxError reports input that is not a JSON document, or not a JSON
// object. Offset is in bytes; Line and Column are 1-based.
type SyntaxError struct {
	Msg     string
	Offset  int64
	Line    int
	Column  int
	Pointer string // where in the document the decoder was
}

func (e *SyntaxError) Error() string {
	where := fmt.Sprintf("line %d, column %d", e.Line, e.Column)
	if e.Pointer != "" {
		where += " (at " + e.Pointer + ")"
	}
	return "not valid JSON: " + e.Msg + " at " + where
}

// ReadInfo describes what a decode found.
type ReadInfo struct {
	// Version is the version string as found in the input, "" when absent.
	Version string `json:"version"`
	// Effective is the version whose rules were applied (v1 when absent).
	Effective string `json:"effective_version"`
	// Findings is the number of elements of the findings array.
	Findings int `json:"findings"`
	// Legacy counts v1 string evidence/impact values upgraded to objects.
	Legacy int `json:"legacy_upgraded"`
	// Warnings are values the decoder accepted in a non-canonical form and
	// normalized, in document order. Today that is a severity (a finding's
	// severity or gate.block_on) that is not lower-case, such as "HIGH" or
	// "Medium": it is read as the lower-case value, the way DiffPal's own
	// reader does, instead of being a problem. A warning never makes a
	// bundle invalid; callers that want canonical bundles only (`diffpal
	// validate --strict`) treat warnings as problems. Rewriting the bundle
	// (Normalize, `diffpal upgrade`) removes them.
	Warnings []Problem `json:"warnings,omitempty"`
}

// DecodeOptions tune Decode.
type DecodeOptions struct {
	// OnFinding, when set, receives each finding once it is decoded and
	// validated, together with whether it was valid; the finding is then
	// not kept in the returned bundle (Bundle.Findings stays empty), which
	// keeps memory flat for very large bundles. The pointer is only valid
	// during the call.
	OnFinding func(f *Finding, valid bool)
	// OnFindingAt, when set, is OnFinding with where the element lies in
	// the input: bytes [start, end) hold it (white space before it
	// included). It takes the place of OnFinding.
	OnFindingAt func(f *Finding, valid bool, start, end int64)
}

// Decode parses and validates a bundle in one pass. It returns the decoded
// bundle (with legacy forms upgraded in memory, severities lower-cased and
// Version set to the effective version), every validation problem, and a
// non-nil error only when data is not a JSON object (a *SyntaxError); then
// the bundle is nil. What was normalized on the way is in info.Warnings.
func Decode(data []byte, opts DecodeOptions) (b *Bundle, info ReadInfo, problems Problems, err error) {
	d := &decoder{data: data, opts: opts}
	defer func() {
		if r := recover(); r != nil {
			se, ok := r.(*SyntaxError)
			if !ok {
				panic(r)
			}
			b, problems, err = nil, nil, se
		}
	}()
	b = d.document()
	return b, d.info, d.v.problems, nil
}

type pathSeg struct {
	key string
	idx int // -1 for keys
}

type decoder struct {
	data  []byte
	pos   int
	depth int
	path  []pathSeg
	v     validator
	info  ReadInfo
	opts  DecodeOptions

	// slabs hand out nested objects in blocks, which cuts allocations per
	// finding from four to almost none on large bundles.
	spans []Span
	evs   []Evidence
	imps  []Impact

	// In streaming mode findings are not kept, so their nested objects are
	// carved from these fixed arrays, reset per finding: no garbage at all
	// for the common shape.
	spanBuf [2]Span
	evBuf   [1]Evidence
	impBuf  [1]Impact
	// strBuf holds the unescaped strings of the finding being streamed
	// (reset per finding, like the arrays above): strings with escapes
	// make no garbage either.
	strBuf []byte

	// st, when set, is the reader data is a window of (stream.go).
	st *stream
	// streamNext marks the next object or array as one whose members are
	// read through the window (the bundle object and its findings array).
	streamNext bool
}

// offset is the input offset of d.pos (d.data is a window of a stream).
func (d *decoder) offset() int64 {
	if d.st != nil {
		return d.st.base + int64(d.pos)
	}
	return int64(d.pos)
}

func (d *decoder) pointer() string {
	var b strings.Builder
	for _, s := range d.path {
		b.WriteByte('/')
		if s.idx >= 0 {
			b.WriteString(strconv.Itoa(s.idx))
		} else {
			b.WriteString(escapePointer(s.key))
		}
	}
	return b.String()
}

func escapePointer(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

func (d *decoder) push(key string) { d.path = append(d.path, pathSeg{key: key, idx: -1}) }
func (d *decoder) pushIdx(i int)   { d.path = append(d.path, pathSeg{idx: i}) }
func (d *decoder) pop()            { d.path = d.path[:len(d.path)-1] }

func (d *decoder) problem(reason string) { d.v.add(d.pointer(), reason) }

func (d *decoder) warn(reason string) {
	d.info.Warnings = append(d.info.Warnings, Problem{Pointer: d.pointer(), Reason: reason})
}

// severity reads a severity value (a finding's severity, gate.block_on).
// One that matches an allowed value except for ASCII letter case is read
// as that value with a warning: the seed contract says DiffPal normalizes
// severity to lower case, and its reader accepts "HIGH" or "Medium".
// Anything else is returned as found, for the enum rule to report.
func (d *decoder) severity(p *prop) Severity {
	s := d.str()
	if p.enum == nil || contains(p.enum, s) {
		return Severity(s)
	}
	if low := asciiLower(s); low != s && contains(p.enum, low) {
		d.warn(fmt.Sprintf("%q is not lower-case; read as %q (`diffpal upgrade` rewrites it)", s, low))
		return Severity(low)
	}
	return Severity(s)
}

// asciiLower lower-cases ASCII letters only, so that no non-ASCII letter
// (the Kelvin sign, a dotted capital I) can fold into a severity.
func asciiLower(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'A' && r <= 'Z' {
			return r + ('a' - 'A')
		}
		return r
	}, s)
}

func (d *decoder) fail(format string, args ...any) {
	line, col := 1, 1
	var base int64
	if d.st != nil {
		line, col, base = d.st.line, d.st.col, d.st.base
	}
	end := d.pos
	if end > len(d.data) {
		end = len(d.data)
	}
	for _, c := range d.data[:end] {
		if c == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	panic(&SyntaxError{Msg: fmt.Sprintf(format, args...), Offset: base + int64(d.pos), Line: line, Column: col, Pointer: d.pointer()})
}

func (d *decoder) ws() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// peek returns the next non-space byte, failing at end of input.
func (d *decoder) peek() byte {
	d.ws()
	if d.pos >= len(d.data) {
		d.fail("unexpected end of input (is the file truncated?)")
	}
	return d.data[d.pos]
}

func typeOf(c byte) jsonType {
	switch c {
	case '"':
		return tString
	case '{':
		return tObject
	case '[':
		return tArray
	case 't', 'f':
		return tBoolean
	case 'n':
		return tNull
	}
	return tNumber
}

func (d *decoder) document() *Bundle {
	d.fillByte()
	d.ws()
	if d.pos >= len(d.data) {
		d.fail("empty input; expected a findings bundle (a JSON object)")
	}
	if c := d.data[d.pos]; c != '{' {
		if c == '[' || c == '"' || c == 't' || c == 'f' || c == 'n' || c == '-' || (c >= '0' && c <= '9') {
			d.fail("a findings bundle must be a JSON object, got %s", typeOf(c))
		}
		d.fail("invalid character %s looking for the start of a JSON object", quoteByte(c))
	}
	version, found := d.prescanVersion()
	// Copied: info outlives data, which callers may unmap or reuse.
	d.info.Version = strings.Clone(version)
	switch {
	case !found:
		d.info.Effective = V1
	case rulesFor(version) != nil:
		d.info.Effective = version
	default:
		// The version itself is reported as a problem below; check the rest
		// against the current rules so the report is still useful.
		d.info.Effective = CurrentVersion
	}
	d.v.rules = rulesFor(d.info.Effective)
	b := d.bundle()
	d.fillByte()
	d.ws()
	if d.pos != len(d.data) {
		d.fail("unexpected %s after the end of the bundle", quoteByte(d.data[d.pos]))
	}
	if !found {
		b.Version = V1
	}
	return b
}

// prescanVersion finds the top-level "version" without decoding anything
// else. Writers put it first, so this normally reads one key.
func (d *decoder) prescanVersion() (string, bool) {
	save := d.pos
	if d.st != nil {
		// Nothing is discarded until the version is known: a bundle that
		// does not start with it is read in whole.
		d.st.pin++
		defer func() { d.st.pin-- }()
	}
	defer func() { d.pos = save }()
	d.pos++ // '{'
	d.fill(false)
	if d.peek() == '}' {
		return "", false
	}
	for {
		key := d.key()
		if key == "version" && d.peek() == '"' {
			return d.str(), true
		}
		if key == "version" {
			return "", true // wrong type: reported when decoded
		}
		d.skip()
		if d.peek() == ',' {
			d.pos++
			d.fill(false)
			continue
		}
		return "", false
	}
}

// key reads an object key and the colon after it.
func (d *decoder) key() string {
	if d.peek() != '"' {
		d.fail("invalid character %s looking for an object key", quoteByte(d.data[d.pos]))
	}
	k := d.str()
	if d.peek() != ':' {
		d.fail("invalid character %s after object key %q", quoteByte(d.data[d.pos]), k)
	}
	d.pos++
	return k
}

// object iterates over an object's members; the caller has checked that the
// next value is '{'. fn must consume the value.
func (d *decoder) object(fn func(key string)) {
	streamed := d.takeStreamed()
	d.enter()
	d.pos++
	if streamed {
		d.fill(true)
	}
	if d.peek() == '}' {
		d.pos++
		d.depth--
		return
	}
	for {
		k := d.key()
		d.push(k)
		fn(k)
		d.pop()
		if streamed {
			d.fillByte() // the findings array ends where its last fill stopped
		}
		switch d.peek() {
		case ',':
			d.pos++
			if streamed {
				d.fill(true)
			}
		case '}':
			d.pos++
			d.depth--
			return
		default:
			d.fail("invalid character %s after object member %q (missing comma or '}'?)", quoteByte(d.data[d.pos]), k)
		}
	}
}

// array iterates over an array's elements; fn must consume each value.
func (d *decoder) array(fn func(i int)) {
	streamed := d.takeStreamed()
	d.enter()
	d.pos++
	if streamed {
		d.fill(false)
	}
	if d.peek() == ']' {
		d.pos++
		d.depth--
		return
	}
	for i := 0; ; i++ {
		d.pushIdx(i)
		fn(i)
		d.pop()
		switch d.peek() {
		case ',':
			d.pos++
			if streamed {
				d.fill(false)
			}
		case ']':
			d.pos++
			d.depth--
			return
		default:
			d.fail("invalid character %s after array element (missing comma or ']'?)", quoteByte(d.data[d.pos]))
		}
	}
}

func (d *decoder) enter() {
	d.depth++
	if d.depth > maxDepth {
		d.fail("nesting deeper than %d levels", maxDepth)
	}
}

// accept checks the next value's JSON type against a property's schema.
// On a mismatch it reports the problem, skips the value, marks the field bad
// and returns false.
func (d *decoder) accept(p *prop, id int, bad *fieldSet) bool {
	c := d.peek()
	t := typeOf(c)
	allowed := p.types
	if allowed&tInteger != 0 {
		allowed |= tNumber // integrality is a value check
	}
	if allowed&t != 0 {
		return true
	}
	d.skip() // also proves the value is well-formed JSON
	d.problem(fmt.Sprintf("must be %s, got %s", article(p.types), t))
	bad.add(id)
	return false
}

func article(t jsonType) string {
	parts := strings.Split(t.String(), " or ")
	for i, s := range parts {
		switch s[0] {
		case 'a', 'i', 'o':
			parts[i] = "an " + s
		default:
			parts[i] = "a " + s
		}
	}
	return strings.Join(parts, " or ")
}

// str reads a string. Strings without escapes alias the input buffer
// instead of being copied; the buffer is never modified, so this is safe
// and it removes most allocations from large decodes.
func (d *decoder) str() string {
	d.pos++ // opening quote
	start := d.pos
	data := d.data
	for i := start; i < len(data); i++ {
		c := data[i]
		if c == '"' {
			d.pos = i + 1
			if i == start {
				return ""
			}
			if d.st != nil && d.st.inFinding == 0 {
				// Kept after the window moves on: copied.
				return string(data[start:i])
			}
			return unsafe.String(&data[start], i-start)
		}
		if c == '\\' {
			d.pos = i
			return d.strSlow(start)
		}
		if c < 0x20 {
			d.pos = i
			d.controlChar(c)
		}
	}
	d.pos = len(data)
	d.fail("unexpected end of input inside a string (is the file truncated?)")
	return ""
}

// controlChar fails on a raw control character in a string. A file cut
// inside a string usually ends with a newline, which deserves the
// truncation message rather than a lecture on escaping.
func (d *decoder) controlChar(c byte) {
	rest := d.data[d.pos:]
	if len(bytes.TrimSpace(rest)) == 0 {
		d.fail("unexpected end of input inside a string (is the file truncated?)")
	}
	d.fail("invalid control character %s in string (must be escaped)", quoteByte(c))
}

func (d *decoder) strSlow(start int) string {
	var buf []byte
	scratch := d.st != nil && d.st.inFinding > 0
	if scratch {
		// Only needed during OnFinding: appended to strBuf, whose bytes
		// are not rewritten before the next finding (a grown strBuf
		// leaves the old array to the strings already made from it).
		buf = d.strBuf[len(d.strBuf):]
	} else {
		buf = make([]byte, 0, d.pos-start+16)
	}
	buf = append(buf, d.data[start:d.pos]...)
	data := d.data
	for d.pos < len(data) {
		c := data[d.pos]
		switch {
		case c == '"':
			d.pos++
			if scratch {
				if cap(buf) == cap(d.strBuf[len(d.strBuf):]) {
					d.strBuf = d.strBuf[:len(d.strBuf)+len(buf)]
				} else {
					// buf outgrew strBuf: it is the new strBuf.
					d.strBuf = buf
				}
				if len(buf) == 0 {
					return ""
				}
				return unsafe.String(&buf[0], len(buf))
			}
			return string(buf)
		case c < 0x20:
			d.controlChar(c)
		case c != '\\':
			buf = append(buf, c)
			d.pos++
			continue
		}
		d.pos++
		if d.pos >= len(data) {
			break
		}
		e := data[d.pos]
		d.pos++
		switch e {
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
			r := d.hex4()
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if d.pos+1 < len(data) && data[d.pos] == '\\' && data[d.pos+1] == 'u' {
					save := d.pos
					d.pos += 2
					r2 = d.hex4()
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						r = dec
					} else {
						d.pos = save
						r = utf8.RuneError
					}
				} else {
					r = utf8.RuneError
				}
			}
			buf = utf8.AppendRune(buf, r)
		default:
			d.pos -= 2
			d.fail("invalid escape %s in string", strconv.Quote(string([]byte{'\\', e})))
		}
	}
	d.fail("unexpected end of input inside a string (is the file truncated?)")
	return ""
}

func (d *decoder) hex4() rune {
	if d.pos+4 > len(d.data) {
		d.pos = len(d.data)
		d.fail("unexpected end of input in \\u escape (is the file truncated?)")
	}
	var r rune
	for _, c := range d.data[d.pos : d.pos+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			d.fail("invalid \\u escape: %s is not a hex digit", quoteByte(c))
		}
	}
	d.pos += 4
	return r
}

// number scans a JSON number and returns its value. Integers of up to 15
// digits, the common case, skip strconv.
func (d *decoder) number() float64 {
	data := d.data
	start := d.pos
	i := start
	if i < len(data) && data[i] == '-' {
		i++
	}
	digits := i
	var n int64
	for i < len(data) && data[i] >= '0' && data[i] <= '9' {
		n = n*10 + int64(data[i]-'0')
		i++
	}
	if i == digits {
		d.pos = i
		if i < len(data) {
			d.fail("invalid character %s in number", quoteByte(data[i]))
		}
		d.fail("unexpected end of input in number (is the file truncated?)")
	}
	if data[digits] == '0' && i-digits > 1 {
		d.pos = digits + 1
		d.fail("invalid number: leading zero")
	}
	simple := true
	if i < len(data) && data[i] == '.' {
		simple = false
		i++
		f := i
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
		}
		if i == f {
			d.pos = i
			d.fail("invalid number: no digits after the decimal point")
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		simple = false
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		f := i
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
		}
		if i == f {
			d.pos = i
			d.fail("invalid number: no digits in the exponent")
		}
	}
	d.pos = i
	if simple && i-digits <= 15 {
		if data[start] == '-' {
			return float64(-n)
		}
		return float64(n)
	}
	f, err := strconv.ParseFloat(unsafe.String(&data[start], i-start), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		d.pos = start
		d.fail("invalid number")
	}
	return f // ±Inf on overflow; the bounds check reports it
}

func (d *decoder) literal(word string) {
	if len(d.data)-d.pos < len(word) || string(d.data[d.pos:d.pos+len(word)]) != word {
		for i := 0; i < len(word) && d.pos < len(d.data); i++ {
			if d.data[d.pos] != word[i] {
				break
			}
			d.pos++
		}
		if d.pos >= len(d.data) {
			d.fail("unexpected end of input (is the file truncated?)")
		}
		d.fail("invalid character %s in literal %s", quoteByte(d.data[d.pos]), word)
	}
	d.pos += len(word)
}

func (d *decoder) boolean() bool {
	if d.data[d.pos] == 't' {
		d.literal("true")
		return true
	}
	d.literal("false")
	return false
}

// skip consumes any JSON value, checking its syntax.
func (d *decoder) skip() {
	switch c := d.peek(); c {
	case '{':
		d.object(func(string) { d.skip() })
	case '[':
		d.array(func(int) { d.skip() })
	case '"':
		d.skipString()
	case 't':
		d.literal("true")
	case 'f':
		d.literal("false")
	case 'n':
		d.literal("null")
	default:
		if c == '-' || (c >= '0' && c <= '9') {
			d.number()
			return
		}
		d.fail("invalid character %s looking for a value", quoteByte(c))
	}
}

func (d *decoder) skipString() {
	data := d.data
	for i := d.pos + 1; i < len(data); i++ {
		c := data[i]
		if c == '"' {
			d.pos = i + 1
			return
		}
		if c == '\\' || c < 0x20 {
			d.str() // slow path validates escapes and reports errors
			return
		}
	}
	d.pos = len(data)
	d.fail("unexpected end of input inside a string (is the file truncated?)")
}

func quoteByte(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return "'" + string(c) + "'"
	}
	return fmt.Sprintf("byte 0x%02x", c)
}

// ---- bundle shapes -------------------------------------------------------

func (d *decoder) bundle() *Bundle {
	b := &Bundle{}
	r := d.v.rules.objs[kBundle]
	var seen, bad fieldSet
	findingsSeen := false
	d.streamNext = d.st != nil
	d.object(func(key string) {
		id := r.lookup(key)
		if id < 0 {
			d.skip()
			return
		}
		p := r.props[id]
		seen.add(id)
		if !d.accept(p, id, &bad) {
			return
		}
		switch id {
		case bVersion:
			b.Version = d.str()
			if rulesFor(b.Version) == nil {
				d.problem(fmt.Sprintf("unsupported version %q: want v1, v2, v3 or v4", b.Version))
				bad.add(id)
			}
		case bReviewID:
			b.ReviewID = d.str()
		case bBaseSHA:
			b.BaseSHA = d.str()
		case bHeadSHA:
			b.HeadSHA = d.str()
		case bRepo:
			b.Repo = d.str()
		case bLanguage:
			b.Language = d.str()
		case bReviewResult:
			b.ReviewResult = d.str()
		case bFingerprintVersion:
			b.FingerprintVersion = d.str()
		case bPrompt:
			b.Prompt = d.prompt()
		case bInspection:
			b.Inspection = d.inspection()
		case bGate:
			b.Gate = d.gate()
		case bChangeSummary:
			b.ChangeSummary = d.strings(p)
		case bFiles:
			b.Files = d.files(p)
		case bFindings:
			if findingsSeen {
				d.problem("duplicate \"findings\" key: the bundle is ambiguous")
				d.skip()
				return
			}
			findingsSeen = true
			d.findings(b)
		default:
			d.skip()
		}
	})
	// Header rules run after the findings, but their problems belong first.
	n := len(d.v.problems)
	d.v.bundleHeader(b, seen|decoded, bad)
	if len(d.v.problems) > n && n > 0 {
		head := append(Problems(nil), d.v.problems[n:]...)
		d.v.problems = append(head, d.v.problems[:n]...)
	}
	// Header problems: those not under /findings/N, in field order.
	h := 0
	for h < len(d.v.problems) && !strings.HasPrefix(d.v.problems[h].Pointer, "/findings/") {
		h++
	}
	sortProblems(d.v.problems[:h], "", kBundle)
	return b
}

// decoded marks a seen set as coming from JSON even when no field was there.
const decoded fieldSet = 1 << 31

func (d *decoder) strings(p *prop) []string {
	var out []string
	d.array(func(int) {
		if typeOf(d.peek()) != tString {
			d.problem(fmt.Sprintf("must be a string, got %s", typeOf(d.peek())))
			d.skip()
			return
		}
		out = append(out, d.str())
	})
	return out
}

// smallObject decodes an object of kind k, checking each known member's
// JSON type before set decodes it.
func (d *decoder) smallObject(k kind, set func(id int, p *prop, bad *fieldSet)) (seen, bad fieldSet) {
	r := d.v.rules.objs[k]
	seen = decoded
	d.object(func(key string) {
		id := r.lookup(key)
		if id < 0 {
			d.skip()
			return
		}
		p := r.props[id]
		seen.add(id)
		if !d.accept(p, id, &bad) {
			return
		}
		set(id, p, &bad)
	})
	return seen, bad
}

func (d *decoder) prompt() *Prompt {
	out := &Prompt{}
	d.smallObject(kPrompt, func(id int, p *prop, bad *fieldSet) {
		s := d.str()
		switch id {
		case pPromptID:
			out.PromptID = s
		case pPromptVersion:
			out.PromptVersion = s
		case pPurpose:
			out.Purpose = s
		case pSchemaVersion:
			out.SchemaVersion = s
		}
	})
	return out
}

func (d *decoder) inspection() *Inspection {
	out := &Inspection{}
	d.smallObject(kInspection, func(id int, p *prop, bad *fieldSet) {
		switch id {
		case inProviderType:
			out.ProviderType = d.str()
		case inRequired:
			out.Required = d.boolean()
		case inDiffInspected:
			out.DiffInspected = d.boolean()
		case inContextInspected:
			out.ContextInspected = d.boolean()
		case inToolCalls:
			out.ToolCalls = d.strings(p)
		default:
			d.skip()
		}
	})
	return out
}

func (d *decoder) gate() *GatePolicy {
	out := &GatePolicy{}
	d.smallObject(kGate, func(id int, p *prop, bad *fieldSet) {
		switch id {
		case gBlockOn:
			out.BlockOn = d.severity(p)
		case gMinConfidence:
			f := d.number()
			out.MinConfidence = &f
		default:
			d.skip()
		}
	})
	return out
}

func (d *decoder) files(p *prop) []File {
	var out []File
	// Streamed like the findings (fill lets the bundle's first "files"
	// member through at its '['): each element is filled in turn, so a
	// long list does not grow the window. Its strings are copied.
	d.streamNext = d.st != nil
	d.array(func(int) {
		if c := d.peek(); c != '{' {
			d.problem(fmt.Sprintf("must be an object, got %s", typeOf(c)))
			d.skip()
			return
		}
		var f File
		f.seen, f.bad = d.smallObject(kFile, func(id int, p *prop, bad *fieldSet) {
			switch id {
			case flPath:
				f.Path = d.str()
			case flStatus:
				f.Status = d.str()
			}
		})
		out = append(out, f)
	})
	return out
}

func (d *decoder) findings(b *Bundle) {
	if d.opts.OnFindingAt != nil || d.opts.OnFinding != nil {
		var f Finding
		if d.st != nil {
			d.streamNext = true
			d.st.inFinding++
			defer func() { d.st.inFinding-- }()
		}
		d.array(func(i int) {
			f = Finding{}
			d.spanBuf, d.evBuf, d.impBuf = [2]Span{}, [1]Evidence{}, [1]Impact{}
			d.spans, d.evs, d.imps = d.spanBuf[:], d.evBuf[:], d.impBuf[:]
			d.strBuf = d.strBuf[:0]
			start := d.offset()
			if ok, valid := d.finding(&f, i); ok {
				if d.opts.OnFindingAt != nil {
					d.opts.OnFindingAt(&f, valid, start, d.offset())
				} else {
					d.opts.OnFinding(&f, valid)
				}
			}
			d.info.Findings++
		})
		return
	}
	b.Findings = []Finding{}
	d.array(func(i int) {
		b.Findings = append(b.Findings, Finding{})
		if ok, _ := d.finding(&b.Findings[len(b.Findings)-1], i); !ok {
			// Not an object: already reported, nothing to keep.
			b.Findings = b.Findings[:len(b.Findings)-1]
		}
		d.info.Findings++
	})
}

// finding decodes and validates one element of findings. ok is false when
// the element is not an object.
func (d *decoder) finding(f *Finding, i int) (ok, valid bool) {
	if c := d.peek(); c != '{' {
		d.problem(fmt.Sprintf("must be an object, got %s", typeOf(c)))
		d.skip()
		return false, false
	}
	before := len(d.v.problems)
	r := d.v.rules.objs[kFinding]
	f.seen = decoded
	bad := &f.bad
	d.object(func(key string) {
		id := r.lookup(key)
		if id < 0 {
			d.skip()
			return
		}
		p := r.props[id]
		f.seen.add(id)
		if !d.accept(p, id, bad) {
			return
		}
		switch id {
		case fID:
			f.ID = d.str()
		case fReviewID:
			f.ReviewID = d.str()
		case fStableID:
			f.StableID = d.str()
		case fCategory:
			f.Category = d.str()
		case fSeverity:
			f.Severity = d.severity(p)
		case fConfidence:
			f.Confidence = d.number()
		case fPath:
			f.Path = d.str()
		case fStartLine:
			f.StartLine = d.line(p, id, bad)
		case fEndLine:
			f.EndLine = d.line(p, id, bad)
		case fChangedSpan:
			f.ChangedSpan = d.span()
		case fSupportingSpan:
			f.SupportingSpan = d.span()
		case fTitle:
			f.Title = d.str()
		case fMessage:
			f.Message = d.str()
		case fEvidence:
			f.Evidence = d.evidence(p, id, bad)
		case fImpact:
			f.Impact = d.impact(p, id, bad)
		case fSuggestion:
			f.Suggestion = d.str()
		case fBlocking:
			f.Blocking = d.boolean()
		case fProvider:
			f.Provider = d.str()
		case fRuleID:
			f.RuleID = d.str()
		default:
			d.skip()
		}
	})
	d.v.finding(f, i)
	if len(d.v.problems) > before {
		sortProblems(d.v.problems[before:], "/findings/"+strconv.Itoa(i), kFinding)
	}
	return true, len(d.v.problems) == before
}

// line decodes an integer line number; values that do not fit an int are
// reported here because the struct field cannot hold them.
func (d *decoder) line(p *prop, id int, bad *fieldSet) int {
	v := d.number()
	if v != v || v < p.min || v > p.max || v != float64(int64(v)) {
		d.v.bounds(p, v, d.pointer())
		bad.add(id)
		return 0
	}
	return int(v)
}

func (d *decoder) span() *Span {
	if len(d.spans) == 0 {
		d.spans = make([]Span, 256)
	}
	s := &d.spans[0]
	d.spans = d.spans[1:]
	s.seen, s.bad = d.smallObject(kSpan, func(id int, p *prop, bad *fieldSet) {
		switch id {
		case sPath:
			s.Path = d.str()
		case sStartLine:
			s.StartLine = d.line(p, id, bad)
		case sEndLine:
			s.EndLine = d.line(p, id, bad)
		case sSide:
			s.Side = d.str()
		}
	})
	return s
}

func (d *decoder) evidence(p *prop, id int, bad *fieldSet) *Evidence {
	if len(d.evs) == 0 {
		d.evs = make([]Evidence, 256)
	}
	e := &d.evs[0]
	d.evs = d.evs[1:]
	if d.peek() == '"' {
		s := d.str()
		if len(s) < p.minLen {
			d.problem("must not be empty")
			bad.add(id)
		}
		d.info.Legacy++
		*e = Evidence{Anchor: s, ReasoningBasis: s, Source: "legacy", seen: decoded | 7}
		return e
	}
	e.seen, e.bad = d.smallObject(kEvidence, func(id int, p *prop, bad *fieldSet) {
		switch id {
		case eAnchor:
			e.Anchor = d.str()
		case eReasoningBasis:
			e.ReasoningBasis = d.str()
		case eSource:
			e.Source = d.str()
		}
	})
	return e
}

func (d *decoder) impact(p *prop, id int, bad *fieldSet) *Impact {
	if len(d.imps) == 0 {
		d.imps = make([]Impact, 256)
	}
	m := &d.imps[0]
	d.imps = d.imps[1:]
	if d.peek() == '"' {
		s := d.str()
		if len(s) < p.minLen {
			d.problem("must not be empty")
			bad.add(id)
		}
		d.info.Legacy++
		*m = Impact{Summary: s, Scope: "legacy", seen: decoded | 3}
		return m
	}
	m.seen, m.bad = d.smallObject(kImpact, func(id int, p *prop, bad *fieldSet) {
		switch id {
		case iSummary:
			m.Summary = d.str()
		case iScope:
			m.Scope = d.str()
		}
	})
	return m
}
