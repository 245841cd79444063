// Package textsafe escapes text that comes from the reviewed repository —
// paths, commit subjects, titles, messages, code anchors, the repository's
// own name — for the places diffpal shows it: a terminal, a Markdown
// summary, a SARIF log.
//
// One rule underlies every form: a character that can move the cursor,
// recolour or clear a terminal, break a line, or reorder or hide the text
// around it is never written raw. It is shown as an escape a reader can
// see: "\n", "\t", "\x1b", "\u202e", "\U000e0041", and "\xff" for a byte
// that is not UTF-8. Those characters are
//
//   - C0 controls U+0000–U+001F, DEL U+007F and C1 controls U+0080–U+009F
//     (ESC, CSI, OSC and NEL among them);
//   - every format character (Unicode category Cf): the bidirectional
//     embeddings and overrides U+202A–U+202E, the isolates U+2066–U+2069,
//     the marks U+200E, U+200F and U+061C, zero-width characters such as
//     U+200B and U+FEFF, and the invisible tag characters U+E0000–U+E007F;
//   - the line and paragraph separators U+2028 and U+2029.
//
// A backslash is not itself escaped: "\n" in the output is either a line
// break made visible or the two characters of a name that contained them.
// The output is for people, not for recovering the input; the input is
// in findings.json.
package textsafe

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Hidden reports whether r is written as a visible escape: a control
// character, a format character (Cf, which holds every bidirectional
// control), or a line or paragraph separator.
func Hidden(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0:
		return true
	case r < 0xa0:
		return false
	case r == 0x2028, r == 0x2029:
		return true
	}
	return unicode.Is(unicode.Cf, r)
}

// Visible returns s with every hidden character (see Hidden) and every
// byte that is not UTF-8 replaced by a visible escape. It is the form for
// plain text: a terminal, a log line, SARIF's message.text.
func Visible(s string) string {
	if clean(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			writeByte(&b, s[i])
		case Hidden(r):
			writeRune(&b, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// Terminal returns s as it may be printed to a terminal: Visible, so no
// escape sequence, carriage return or bidirectional override in a path,
// title or directory name reaches the terminal raw.
func Terminal(s string) string { return Visible(s) }

// markdownMeta are the characters Inline escapes with a backslash wherever
// they stand: emphasis, code, links and images, raw HTML and entities,
// headings, tables, strikethrough and GitHub's math.
const markdownMeta = "\\`*_[]<>#|!()~&$"

// Inline returns s as Markdown inline text that renders as s and nothing
// else: Markdown and HTML metacharacters are backslash-escaped, hidden
// characters are shown as Visible shows them (so the text stays on one
// line), and a leading list, heading, quote or setext marker is escaped so
// the text is safe at the start of a line too. A "|" comes out as "\|",
// which is also right inside a GFM table cell.
func Inline(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 8)
	// The first non-space character may start a block: "-", "+", "=" and
	// "1." / "1)" are only special there ("#", ">", "*" always are).
	lead := len(s) - len(strings.TrimLeft(s, " "))
	digitsEnd := lead
	for digitsEnd < len(s) && s[digitsEnd] >= '0' && s[digitsEnd] <= '9' {
		digitsEnd++
	}
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			writeByte(&b, s[i])
		case Hidden(r):
			writeRune(&b, r)
		case r < utf8.RuneSelf && strings.IndexByte(markdownMeta, byte(r)) >= 0,
			i == lead && (r == '-' || r == '+' || r == '='),
			i == digitsEnd && digitsEnd > lead && r == '.':
			b.WriteByte('\\')
			b.WriteByte(byte(r))
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// Code returns s as a Markdown code span: Visible text between backtick
// fences one longer than the longest run of backticks inside, padded with
// a space when the text starts or ends with a backtick or a space (which
// CommonMark strips again). Inside a code span nothing else is special, so
// HTML, links and headings stay text. In a GFM table cell every "|" must
// additionally become "\|" (see the markdown package's cells).
func Code(s string) string {
	v := Visible(s)
	if v == "" {
		return "` `"
	}
	longest, run := 0, 0
	for i := 0; i < len(v); i++ {
		if v[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	pad := ""
	if strings.Trim(v, " ") != "" && (v[0] == '`' || v[0] == ' ' || v[len(v)-1] == '`' || v[len(v)-1] == ' ') {
		pad = " "
	}
	return fence + pad + v + pad + fence
}

// clean reports whether s is valid UTF-8 without hidden characters, the
// common case, which Visible returns as it is.
func clean(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || Hidden(r) {
			return false
		}
		i += n
	}
	return true
}

const hexDigits = "0123456789abcdef"

func writeByte(b *strings.Builder, c byte) {
	b.WriteString(`\x`)
	b.WriteByte(hexDigits[c>>4])
	b.WriteByte(hexDigits[c&0xf])
}

func writeRune(b *strings.Builder, r rune) {
	switch r {
	case '\n':
		b.WriteString(`\n`)
		return
	case '\r':
		b.WriteString(`\r`)
		return
	case '\t':
		b.WriteString(`\t`)
		return
	}
	var digits int
	switch {
	case r < 0x80:
		b.WriteString(`\x`)
		digits = 2
	case r <= 0xffff:
		b.WriteString(`\u`)
		digits = 4
	default:
		b.WriteString(`\U`)
		digits = 8
	}
	for shift := 4 * (digits - 1); shift >= 0; shift -= 4 {
		b.WriteByte(hexDigits[(r>>uint(shift))&0xf])
	}
}
