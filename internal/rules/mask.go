package rules

import (
	"strings"
	"sync"
	"unsafe"
)

// lexSyntax describes how comments and string literals look in a language, for
// the masker.
type lexSyntax struct {
	lineComments   []string    // tokens that start a comment running to end of line
	hashWordStart  bool        // '#' starts a comment only at line start or after whitespace/;
	lineStartOnly  []string    // comment tokens valid only as the first non-blank text of a line
	blockComments  [][2]string // open/close pairs
	nestedBlock    bool        // block comments nest (Swift)
	quotes         string      // quote characters of single-line strings
	noEscapeQuote  byte        // quote char whose strings have no escapes (shell ')
	tripleQuotes   []string    // multi-line string delimiters (""" ''')
	goRaw          bool        // `raw` strings span lines, no escapes
	jsTemplate     bool        // `template ${expr}` literals
	jsRegex        bool        // /regex/ literals
	rubyHeredoc    bool        // <<~ID heredocs, =begin/=end
	shellHeredoc   bool        // <<EOF heredocs
	keepStrings    bool        // recognise strings (to protect comment tokens) but do not blank them
	yamlQuoteDoubl bool        // 'it''s' style escaping
}

var (
	syntaxCStyle = &lexSyntax{lineComments: []string{"//"}, blockComments: [][2]string{{"/*", "*/"}}, quotes: "\"'"}
	syntaxGo     = &lexSyntax{lineComments: []string{"//"}, blockComments: [][2]string{{"/*", "*/"}}, quotes: "\"'", goRaw: true}
	syntaxJS     = &lexSyntax{lineComments: []string{"//"}, blockComments: [][2]string{{"/*", "*/"}}, quotes: "\"'", jsTemplate: true, jsRegex: true}
	syntaxJVM    = &lexSyntax{lineComments: []string{"//"}, blockComments: [][2]string{{"/*", "*/"}}, quotes: "\"'", tripleQuotes: []string{`"""`}}
	syntaxGroovy = &lexSyntax{lineComments: []string{"//"}, blockComments: [][2]string{{"/*", "*/"}}, quotes: "\"'", tripleQuotes: []string{`"""`, `'''`}}
	syntaxSwift  = &lexSyntax{lineComments: []string{"//"}, blockComments: [][2]string{{"/*", "*/"}}, nestedBlock: true, quotes: "\"", tripleQuotes: []string{`"""`}}
	syntaxPython = &lexSyntax{lineComments: []string{"#"}, quotes: "\"'", tripleQuotes: []string{`"""`, `'''`}}
	syntaxRuby   = &lexSyntax{lineComments: []string{"#"}, quotes: "\"'`", rubyHeredoc: true}
	syntaxShell  = &lexSyntax{hashWordStart: true, quotes: "\"'", noEscapeQuote: '\'', shellHeredoc: true}
	syntaxYAML   = &lexSyntax{hashWordStart: true, quotes: "\"'", keepStrings: true, yamlQuoteDoubl: true}
	syntaxDocker = &lexSyntax{lineStartOnly: []string{"#"}}
	syntaxProps  = &lexSyntax{lineStartOnly: []string{"#", "!", ";"}}
	syntaxTOML   = &lexSyntax{lineComments: []string{"#"}, quotes: "\"'", keepStrings: true}
	syntaxXML    = &lexSyntax{blockComments: [][2]string{{"<!--", "-->"}}}
	syntaxSQL    = &lexSyntax{lineComments: []string{"--"}, blockComments: [][2]string{{"/*", "*/"}}, quotes: "'\""}
	syntaxHCL    = &lexSyntax{lineComments: []string{"#", "//"}, blockComments: [][2]string{{"/*", "*/"}}, quotes: "\""}
	syntaxMake   = &lexSyntax{hashWordStart: true}
	syntaxNone   = &lexSyntax{}
)

func syntaxFor(lang string) *lexSyntax {
	switch lang {
	case "go":
		return syntaxGo
	case "javascript", "typescript":
		return syntaxJS
	case "java", "kotlin", "scala", "csharp", "dart":
		return syntaxJVM
	case "groovy", "gradle":
		return syntaxGroovy
	case "c", "cpp", "objc", "rust", "php":
		return syntaxCStyle
	case "swift":
		return syntaxSwift
	case "python":
		return syntaxPython
	case "ruby":
		return syntaxRuby
	case "shell":
		return syntaxShell
	case "yaml":
		return syntaxYAML
	case "dockerfile":
		return syntaxDocker
	case "properties", "dotenv", "ini":
		return syntaxProps
	case "toml":
		return syntaxTOML
	case "xml", "plist", "html":
		return syntaxXML
	case "sql":
		return syntaxSQL
	case "hcl":
		return syntaxHCL
	case "makefile":
		return syntaxMake
	}
	return syntaxNone
}

// MaskLines blanks comments and string-literal contents of lines written in
// lang, preserving the number of lines and every column: masked bytes become
// spaces, string delimiters are kept (so `x == ""` stays visible as code).
// Multi-line constructs (block comments, raw strings, heredocs, templates)
// are handled across lines.
func MaskLines(lang string, lines []string) []string {
	if len(lines) == 0 {
		return nil
	}
	return maskJoined(lang, lines, strings.Join(lines, "\n"))
}

// maskJoined is MaskLines given src, the lines joined (a file's Text,
// which need not be joined again).
func maskJoined(lang string, lines []string, src string) []string {
	if len(lines) == 0 {
		return nil
	}
	out := maskText(syntaxFor(lang), src)
	res := strings.Split(out, "\n")
	if len(res) != len(lines) { // cannot happen: newlines are never masked
		return append([]string(nil), lines...)
	}
	return res
}

func isIdentByte(c byte) bool {
	return c == '_' || c == '$' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

// tokenStarts is, per syntax, the bytes that can begin something the
// masker acts on away from a line's start: a comment, a string, a raw
// string, a heredoc, a regex literal or a newline. Any other byte not at a
// line's start falls through every test of maskText's loop, so the loop
// skips runs of them with one table lookup each (masking was ~15% of a
// large review's CPU, most of it spent testing ordinary code bytes).
var tokenStarts sync.Map // *lexSyntax -> *[256]bool

func startsOf(sx *lexSyntax) *[256]bool {
	if t, ok := tokenStarts.Load(sx); ok {
		return t.(*[256]bool)
	}
	var t [256]bool
	t['\n'] = true
	for _, tok := range sx.lineComments {
		t[tok[0]] = true
	}
	for _, bc := range sx.blockComments {
		t[bc[0][0]] = true
	}
	for _, tq := range sx.tripleQuotes {
		t[tq[0]] = true
	}
	for i := 0; i < len(sx.quotes); i++ {
		t[sx.quotes[i]] = true
	}
	if sx.hashWordStart {
		t['#'] = true
	}
	if sx.rubyHeredoc || sx.shellHeredoc {
		t['<'] = true
	}
	if sx.goRaw || sx.jsTemplate {
		t['`'] = true
	}
	if sx.jsRegex {
		t['/'] = true
	}
	v, _ := tokenStarts.LoadOrStore(sx, &t)
	return v.(*[256]bool)
}

func maskText(sx *lexSyntax, s string) string { return maskWith(sx, s, true) }

// maskWith is maskText; skip=false tests every byte (the equivalence
// tests compare the two).
func maskWith(sx *lexSyntax, s string, skip bool) string {
	if sx == syntaxNone {
		return s
	}
	starts := startsOf(sx)
	var b []byte // a copy of s once something is blanked
	n := len(s)
	blank := func(i, j int) {
		if j > n {
			j = n
		}
		if b == nil && i < j {
			b = []byte(s)
		}
		for k := i; k < j; k++ {
			if b[k] != '\n' {
				b[k] = ' '
			}
		}
	}
	var heredocs []heredoc
	lineStart := true // only whitespace seen since the last newline
	i := 0
	for i < n {
		if skip && !lineStart {
			for i < n && !starts[s[i]] {
				i++
			}
			if i == n {
				break
			}
		}
		c := s[i]
		if c == '\n' {
			i++
			lineStart = true
			if len(heredocs) > 0 {
				i = consumeHeredocs(s, i, heredocs, blank)
				heredocs = nil
			}
			continue
		}
		if lineStart && (c == ' ' || c == '\t' || c == '\r') {
			i++
			continue
		}
		atLineStart := lineStart
		lineStart = false
		// line-start-only comments
		if atLineStart {
			matched := false
			for _, tok := range sx.lineStartOnly {
				if strings.HasPrefix(s[i:], tok) {
					j := indexFrom(s, i, "\n")
					blank(i, j)
					i = j
					matched = true
					break
				}
			}
			if matched {
				continue
			}
			if sx.rubyHeredoc && strings.HasPrefix(s[i:], "=begin") && (i == 0 || s[i-1] == '\n') {
				end := strings.Index(s[i:], "\n=end")
				j := n
				if end >= 0 {
					j = i + end + len("\n=end")
					j = indexFrom(s, j, "\n")
				}
				blank(i, j)
				i = j
				continue
			}
		}
		// block comments
		if bc, ok := hasPrefixPair(s[i:], sx.blockComments); ok {
			j := findBlockEnd(s, i+len(bc[0]), bc, sx.nestedBlock)
			blank(i, j)
			i = j
			continue
		}
		// line comments
		if hasAnyPrefix(s[i:], sx.lineComments) {
			j := indexFrom(s, i, "\n")
			blank(i, j)
			i = j
			continue
		}
		if sx.hashWordStart && c == '#' && (atLineStart || i == 0 || s[i-1] == ' ' || s[i-1] == '\t' || s[i-1] == ';') {
			j := indexFrom(s, i, "\n")
			blank(i, j)
			i = j
			continue
		}
		// heredocs
		if (sx.rubyHeredoc || sx.shellHeredoc) && c == '<' && strings.HasPrefix(s[i:], "<<") && !strings.HasPrefix(s[i:], "<<<") {
			if h, adv, ok := parseHeredoc(s[i:], sx.rubyHeredoc); ok {
				heredocs = append(heredocs, h)
				i += adv
				continue
			}
		}
		// triple-quoted strings
		if tq := prefixOf(s[i:], sx.tripleQuotes); tq != "" {
			j := strings.Index(s[i+3:], tq)
			end := n
			if j >= 0 {
				end = i + 3 + j
			}
			if !sx.keepStrings {
				blank(i+3, end)
			}
			i = end + 3
			if i > n {
				i = n
			}
			continue
		}
		if sx.goRaw && c == '`' {
			j := strings.IndexByte(s[i+1:], '`')
			end := n
			if j >= 0 {
				end = i + 1 + j
			}
			blank(i+1, end)
			i = end + 1
			continue
		}
		if sx.jsTemplate && c == '`' {
			i = maskTemplate(s, i, blank)
			continue
		}
		if sx.jsRegex && c == '/' && i+1 < n && s[i+1] != '/' && s[i+1] != '*' && regexAllowed(s, i) {
			if end, ok := scanRegex(s, i); ok {
				blank(i+1, end)
				i = end + 1
				continue
			}
		}
		if strings.IndexByte(sx.quotes, c) >= 0 {
			// Rust/Swift-like char quirks are ignored; strings end at end of line.
			if c == '\'' && sx == syntaxRuby && i > 0 && s[i-1] == '?' {
				i++
				continue
			}
			j := i + 1
			for j < n && s[j] != '\n' {
				if s[j] == '\\' && c != sx.noEscapeQuote {
					j += 2
					continue
				}
				if s[j] == c {
					if sx.yamlQuoteDoubl && c == '\'' && j+1 < n && s[j+1] == '\'' {
						j += 2
						continue
					}
					break
				}
				j++
			}
			if j > n {
				j = n
			}
			if !sx.keepStrings {
				blank(i+1, j)
			}
			if j < n && s[j] == c {
				i = j + 1
			} else {
				i = j
			}
			continue
		}
		i++
	}
	if b == nil {
		return s
	}
	// b is not written again: the string shares it instead of a copy.
	return unsafe.String(unsafe.SliceData(b), len(b))
}

type heredoc struct {
	id     string
	indent bool // terminator may be indented
}

func parseHeredoc(s string, ruby bool) (heredoc, int, bool) {
	// s starts with "<<"
	j := 2
	indent := false
	if j < len(s) && (s[j] == '~' || s[j] == '-') {
		indent = true
		j++
	}
	if !ruby {
		for j < len(s) && s[j] == ' ' {
			j++
		}
	}
	quote := byte(0)
	if j < len(s) && (s[j] == '\'' || s[j] == '"' || s[j] == '`') {
		quote = s[j]
		j++
	}
	k := j
	for k < len(s) && (isIdentByte(s[k]) && s[k] != '$') {
		k++
	}
	if k == j {
		return heredoc{}, 0, false
	}
	id := s[j:k]
	if ruby && quote == 0 {
		// Ruby heredoc ids are conventionally upper case; avoid `a << b` shifts.
		if strings.ToUpper(id) != id || (id[0] >= '0' && id[0] <= '9') {
			return heredoc{}, 0, false
		}
	}
	if quote != 0 {
		if k < len(s) && s[k] == quote {
			k++
		} else {
			return heredoc{}, 0, false
		}
	}
	return heredoc{id: id, indent: indent || !ruby}, k, true
}

func consumeHeredocs(s string, i int, hs []heredoc, blank func(int, int)) int {
	for _, h := range hs {
		for i < len(s) {
			j := indexFrom(s, i, "\n")
			line := s[i:j]
			t := line
			if h.indent {
				t = strings.TrimLeft(line, " \t")
			}
			if strings.TrimRight(t, " \r") == h.id {
				i = j
				if i < len(s) {
					i++
				}
				break
			}
			blank(i, j)
			i = j
			if i < len(s) {
				i++
			}
		}
	}
	if i > 0 && i <= len(s) && s[i-1] == '\n' {
		// leave the caller positioned at the start of the next line
		return i
	}
	return i
}

func maskTemplate(s string, i int, blank func(int, int)) int {
	n := len(s)
	j := i + 1
	segStart := j
	for j < n {
		switch s[j] {
		case '\\':
			j += 2
			continue
		case '`':
			blank(segStart, j)
			return j + 1
		case '$':
			if j+1 < n && s[j+1] == '{' {
				blank(segStart, j)
				// keep the expression as code
				depth := 0
				k := j + 1
				for k < n {
					if s[k] == '{' {
						depth++
					} else if s[k] == '}' {
						depth--
						if depth == 0 {
							break
						}
					} else if s[k] == '`' {
						k = maskTemplate(s, k, blank)
						continue
					} else if s[k] == '"' || s[k] == '\'' {
						q := s[k]
						e := k + 1
						for e < n && s[e] != q && s[e] != '\n' {
							if s[e] == '\\' {
								e++
							}
							e++
						}
						blank(k+1, e)
						k = e + 1
						continue
					}
					k++
				}
				j = k + 1
				segStart = j
				continue
			}
		}
		j++
	}
	blank(segStart, n)
	return n
}

func regexAllowed(s string, i int) bool {
	k := i - 1
	for k >= 0 && (s[k] == ' ' || s[k] == '\t') {
		k--
	}
	if k < 0 || s[k] == '\n' {
		return true
	}
	if strings.IndexByte("(,=:[!&|?{};+-*%<>~^", s[k]) >= 0 {
		return true
	}
	// keywords such as return/typeof
	e := k + 1
	for k >= 0 && isIdentByte(s[k]) {
		k--
	}
	w := s[k+1 : e]
	return w == "return" || w == "typeof" || w == "case" || w == "in" || w == "of"
}

func scanRegex(s string, i int) (int, bool) {
	inClass := false
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\n':
			return 0, false
		case '\\':
			j++
		case '[':
			inClass = true
		case ']':
			inClass = false
		case '/':
			if !inClass {
				return j, true
			}
		}
	}
	return 0, false
}

func indexFrom(s string, i int, sub string) int {
	j := strings.Index(s[i:], sub)
	if j < 0 {
		return len(s)
	}
	return i + j
}

func hasAnyPrefix(s string, toks []string) bool {
	for _, t := range toks {
		if strings.HasPrefix(s, t) {
			return true
		}
	}
	return false
}

func prefixOf(s string, toks []string) string {
	for _, t := range toks {
		if strings.HasPrefix(s, t) {
			return t
		}
	}
	return ""
}

func hasPrefixPair(s string, pairs [][2]string) ([2]string, bool) {
	for _, p := range pairs {
		if strings.HasPrefix(s, p[0]) {
			return p, true
		}
	}
	return [2]string{}, false
}

func findBlockEnd(s string, i int, bc [2]string, nested bool) int {
	depth := 1
	for i < len(s) {
		if nested && strings.HasPrefix(s[i:], bc[0]) {
			depth++
			i += len(bc[0])
			continue
		}
		if strings.HasPrefix(s[i:], bc[1]) {
			depth--
			i += len(bc[1])
			if depth == 0 {
				return i
			}
			continue
		}
		i++
	}
	return len(s)
}
