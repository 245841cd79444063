// Package diff parses the unified diffs that package git produces (fixed
// a/ b/ prefixes, full index, renames, binary, mode and submodule changes,
// C-quoted paths) into files, hunks and changed-line spans, and answers the
// scope questions of the filter modes. It does not run git.
package diff

import (
	"fmt"
	"iter"
	"strconv"
	"strings"
	"unsafe"

	"github.com/diffpalhq/diffpal/internal/clip"
)

// Status of a changed file.
const (
	Added    = "added"
	Modified = "modified"
	Deleted  = "deleted"
	Renamed  = "renamed"
	Copied   = "copied"
)

// File is one file of a diff.
type File struct {
	OldPath, NewPath string
	Status           string
	OldMode, NewMode string
	OldBlob, NewBlob string // full object ids ("" when absent)
	Similarity       int    // rename/copy similarity, percent
	Binary           bool
	Submodule        bool
	Hunks            []Hunk
}

// Path is the path a review talks about: the new path, or the old one for
// deleted files.
func (f *File) Path() string {
	if f.Status == Deleted {
		return f.OldPath
	}
	return f.NewPath
}

// ModeOnly reports a change of file mode with no content change.
func (f *File) ModeOnly() bool {
	return f.OldMode != "" && f.NewMode != "" && f.OldMode != f.NewMode && len(f.Hunks) == 0 && !f.Binary
}

// Hunk is one @@ section.
type Hunk struct {
	OldStart, OldLines int
	NewStart, NewLines int
	Section            string // text after the second @@ (enclosing function)
	Lines              []Line
}

// Line is one line of a hunk. (Its fields are ordered to pack into 40
// bytes: a large change holds one per line.)
type Line struct {
	Text  string
	OldNo int  // 0 for added lines
	NewNo int  // 0 for removed lines
	Kind  byte // ' ', '+' or '-'
	// NoEOL marks a line not followed by a newline in its file.
	NoEOL bool
}

// Added returns the file's added lines in order.
func (f *File) Added() []Line { return f.lines('+') }

// AddedLines yields the file's added lines in order, without building a
// list of them.
func (f *File) AddedLines() iter.Seq[Line] {
	return func(yield func(Line) bool) {
		for _, h := range f.Hunks {
			for _, l := range h.Lines {
				if l.Kind == '+' && !yield(l) {
					return
				}
			}
		}
	}
}

// Removed returns the file's removed lines in order.
func (f *File) Removed() []Line { return f.lines('-') }

func (f *File) lines(kind byte) []Line {
	var out []Line
	for _, h := range f.Hunks {
		for _, l := range h.Lines {
			if l.Kind == kind {
				out = append(out, l)
			}
		}
	}
	return out
}

// Stats counts added and removed lines.
func (f *File) Stats() (added, removed int) {
	for _, h := range f.Hunks {
		for _, l := range h.Lines {
			switch l.Kind {
			case '+':
				added++
			case '-':
				removed++
			}
		}
	}
	return
}

// ParseError is malformed diff input.
type ParseError struct {
	Line int
	Msg  string
}

func (e *ParseError) Error() string { return fmt.Sprintf("diff line %d: %s", e.Line, e.Msg) }

// Parse parses git's unified diff output. The files' strings (paths,
// line texts) share data's memory instead of copying it — a large
// change's patch would otherwise be held twice — so data must not be
// modified afterwards (appending past its length is fine).
func Parse(data []byte) ([]*File, error) {
	p := &parser{data: unsafe.String(unsafe.SliceData(data), len(data))}
	return p.parse()
}

// ParseFrom is Parse for a part of a patch that starts at line first
// (1-based) of the whole patch, such as one file's part of a streamed
// patch: errors name lines of the whole patch. A patch split at its
// "diff --git" lines parses, part by part, to the same files as whole.
func ParseFrom(data []byte, first int) ([]*File, error) {
	p := &parser{data: unsafe.String(unsafe.SliceData(data), len(data)), no: first - 1}
	return p.parse()
}

type parser struct {
	data string
	pos  int
	no   int
}

func (p *parser) next() (string, bool) {
	if p.pos >= len(p.data) {
		return "", false
	}
	end := strings.IndexByte(p.data[p.pos:], '\n')
	var line string
	if end < 0 {
		line = p.data[p.pos:]
		p.pos = len(p.data)
	} else {
		line = p.data[p.pos : p.pos+end]
		p.pos += end + 1
	}
	p.no++
	return line, true
}

func (p *parser) peek() (string, bool) {
	save, no := p.pos, p.no
	l, ok := p.next()
	p.pos, p.no = save, no
	return l, ok
}

func (p *parser) parse() ([]*File, error) {
	var files []*File
	var f *File
	for {
		line, ok := p.next()
		if !ok {
			break
		}
		switch {
		case strings.HasPrefix(line, "diff --git "):
			var err error
			if f, err = p.header(line); err != nil {
				return nil, err
			}
			files = append(files, f)
		case f == nil:
			// Preamble (e.g. from format-patch); ignore.
		case strings.HasPrefix(line, "@@ "):
			h, err := p.hunk(line)
			if err != nil {
				return nil, err
			}
			f.Hunks = append(f.Hunks, h)
		default:
			return nil, &ParseError{Line: p.no, Msg: fmt.Sprintf("unexpected line %q", trunc(line))}
		}
	}
	for _, f := range files {
		if f.Submodule && len(f.Hunks) > 0 {
			// "Subproject commit" lines are not source lines.
			f.Hunks = nil
		}
	}
	return files, nil
}

// header reads the extended header lines up to the first hunk.
func (p *parser) header(first string) (*File, error) {
	f := &File{Status: Modified}
	a, b, err := gitHeaderPaths(strings.TrimPrefix(first, "diff --git "))
	if err != nil {
		return nil, &ParseError{Line: p.no, Msg: err.Error()}
	}
	f.OldPath, f.NewPath = a, b
	for {
		line, ok := p.peek()
		if !ok || strings.HasPrefix(line, "diff --git ") || strings.HasPrefix(line, "@@ ") {
			break
		}
		p.next()
		switch {
		case strings.HasPrefix(line, "old mode "):
			f.OldMode = line[len("old mode "):]
		case strings.HasPrefix(line, "new mode "):
			f.NewMode = line[len("new mode "):]
		case strings.HasPrefix(line, "deleted file mode "):
			f.Status, f.OldMode = Deleted, line[len("deleted file mode "):]
		case strings.HasPrefix(line, "new file mode "):
			f.Status, f.NewMode = Added, line[len("new file mode "):]
		case strings.HasPrefix(line, "similarity index "):
			f.Similarity, _ = strconv.Atoi(strings.TrimSuffix(line[len("similarity index "):], "%"))
		case strings.HasPrefix(line, "dissimilarity index "):
		case strings.HasPrefix(line, "rename from "):
			f.Status = Renamed
			if f.OldPath, err = unquote(line[len("rename from "):]); err != nil {
				return nil, &ParseError{Line: p.no, Msg: err.Error()}
			}
		case strings.HasPrefix(line, "rename to "):
			if f.NewPath, err = unquote(line[len("rename to "):]); err != nil {
				return nil, &ParseError{Line: p.no, Msg: err.Error()}
			}
		case strings.HasPrefix(line, "copy from "):
			f.Status = Copied
			if f.OldPath, err = unquote(line[len("copy from "):]); err != nil {
				return nil, &ParseError{Line: p.no, Msg: err.Error()}
			}
		case strings.HasPrefix(line, "copy to "):
			if f.NewPath, err = unquote(line[len("copy to "):]); err != nil {
				return nil, &ParseError{Line: p.no, Msg: err.Error()}
			}
		case strings.HasPrefix(line, "index "):
			ids, mode, _ := strings.Cut(line[len("index "):], " ")
			old, nw, _ := strings.Cut(ids, "..")
			f.OldBlob, f.NewBlob = zeroToEmpty(old), zeroToEmpty(nw)
			if mode != "" {
				f.OldMode, f.NewMode = mode, mode
			}
		case strings.HasPrefix(line, "Binary files ") || line == "GIT binary patch":
			f.Binary = true
		case strings.HasPrefix(line, "--- "):
			if path, ok, err := sidePath(line[4:], "a/"); err != nil {
				return nil, &ParseError{Line: p.no, Msg: err.Error()}
			} else if ok {
				f.OldPath = path
			}
		case strings.HasPrefix(line, "+++ "):
			if path, ok, err := sidePath(line[4:], "b/"); err != nil {
				return nil, &ParseError{Line: p.no, Msg: err.Error()}
			} else if ok {
				f.NewPath = path
			}
		}
	}
	if f.OldMode == "160000" || f.NewMode == "160000" {
		f.Submodule = true
	}
	return f, nil
}

func zeroToEmpty(id string) string {
	if strings.Trim(id, "0") == "" {
		return ""
	}
	return id
}

// sidePath decodes a ---/+++ path; /dev/null reports ok == false.
func sidePath(s, prefix string) (string, bool, error) {
	// git ends the name with a tab when it contains a space, for patch(1).
	s = strings.TrimSuffix(s, "\t")
	if s == "/dev/null" {
		return "", false, nil
	}
	path, err := unquote(s)
	if err != nil {
		return "", false, err
	}
	if !strings.HasPrefix(path, prefix) {
		return "", false, fmt.Errorf("path %q lacks the %q prefix", path, prefix)
	}
	return path[len(prefix):], true, nil
}

// gitHeaderPaths splits "a/X b/Y" where either side may be C-quoted. When
// neither is quoted and the names contain spaces, the split is ambiguous;
// the name is then taken to be the same on both sides (renames, where it
// may differ, carry "rename from/to" lines that override it).
func gitHeaderPaths(s string) (string, string, error) {
	var a, b string
	if strings.HasPrefix(s, `"`) {
		var rest string
		var err error
		if a, rest, err = cUnquote(s); err != nil {
			return "", "", err
		}
		if b, err = unquote(strings.TrimPrefix(rest, " ")); err != nil {
			return "", "", err
		}
	} else if strings.HasSuffix(s, `"`) {
		i := strings.LastIndex(s[:len(s)-1], ` "`)
		if i < 0 {
			return "", "", fmt.Errorf("bad header %q", trunc(s))
		}
		a = s[:i]
		var err error
		if b, err = unquote(s[i+1:]); err != nil {
			return "", "", err
		}
	} else {
		// Same name on both sides: "a/" + X + " b/" + X.
		if n := len(s); n%2 == 1 {
			half := (n - 1) / 2
			if half >= 2 && s[half] == ' ' && s[2:half] == s[half+3:] {
				a, b = s[:half], s[half+1:]
			}
		}
		if a == "" {
			i := strings.Index(s, " b/")
			if i < 0 {
				return "", "", fmt.Errorf("cannot split paths in %q", trunc(s))
			}
			a, b = s[:i], s[i+1:]
		}
	}
	if !strings.HasPrefix(a, "a/") || !strings.HasPrefix(b, "b/") {
		return "", "", fmt.Errorf("paths %q and %q lack the a/ and b/ prefixes", a, b)
	}
	return a[2:], b[2:], nil
}

// unquote decodes git's C-style quoting when present; the quoted name
// must be all of s.
func unquote(s string) (string, error) {
	if !strings.HasPrefix(s, `"`) {
		return s, nil
	}
	name, rest, err := cUnquote(s)
	if err != nil {
		return "", err
	}
	if rest != "" {
		return "", fmt.Errorf("bad quoted path %q", trunc(s))
	}
	return name, nil
}

// cUnquote decodes the C-quoted name at the start of s as git writes it
// (quote.c: quote_c_style) and returns the rest of s after the closing
// quote. It works on bytes: the escapes \a \b \t \n \v \f \r \" \\ and
// three octal digits (every byte >= 0x80 with core.quotePath=true) are
// decoded, and every other byte is kept as it is. strconv.Unquote is not
// the same: it replaces invalid UTF-8 (a Latin-1 name, which git leaves
// raw with core.quotePath=false) with U+FFFD, so two different names could
// decode to one path.
func cUnquote(s string) (name, rest string, err error) {
	bad := func() (string, string, error) {
		return "", "", fmt.Errorf("bad quoted path %q", trunc(s))
	}
	if !strings.HasPrefix(s, `"`) {
		return bad()
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			return b.String(), s[i+1:], nil
		case '\\':
			i++
			if i >= len(s) {
				return bad()
			}
			switch e := s[i]; e {
			case 'a':
				b.WriteByte('\a')
			case 'b':
				b.WriteByte('\b')
			case 't':
				b.WriteByte('\t')
			case 'n':
				b.WriteByte('\n')
			case 'v':
				b.WriteByte('\v')
			case 'f':
				b.WriteByte('\f')
			case 'r':
				b.WriteByte('\r')
			case '"', '\\':
				b.WriteByte(e)
			case '0', '1', '2', '3':
				if i+2 >= len(s) || !isOctal(s[i+1]) || !isOctal(s[i+2]) {
					return bad()
				}
				b.WriteByte((e-'0')<<6 | (s[i+1]-'0')<<3 | (s[i+2] - '0'))
				i += 2
			default:
				return bad()
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", "", fmt.Errorf("unterminated quoted path in %q", trunc(s))
}

func isOctal(c byte) bool { return '0' <= c && c <= '7' }

func (p *parser) hunk(header string) (Hunk, error) {
	var h Hunk
	rest := strings.TrimPrefix(header, "@@ ")
	ranges, section, ok := strings.Cut(rest, " @@")
	if !ok {
		return h, &ParseError{Line: p.no, Msg: fmt.Sprintf("bad hunk header %q", trunc(header))}
	}
	h.Section = strings.TrimPrefix(section, " ")
	old, nw, ok := strings.Cut(ranges, " ")
	if !ok || !strings.HasPrefix(old, "-") || !strings.HasPrefix(nw, "+") {
		return h, &ParseError{Line: p.no, Msg: fmt.Sprintf("bad hunk ranges %q", ranges)}
	}
	var err error
	if h.OldStart, h.OldLines, err = hunkRange(old[1:]); err != nil {
		return h, &ParseError{Line: p.no, Msg: err.Error()}
	}
	if h.NewStart, h.NewLines, err = hunkRange(nw[1:]); err != nil {
		return h, &ParseError{Line: p.no, Msg: err.Error()}
	}
	oldNo, newNo := h.OldStart, h.NewStart
	remOld, remNew := h.OldLines, h.NewLines
	h.Lines = make([]Line, 0, remOld+remNew)
	for remOld > 0 || remNew > 0 {
		line, ok := p.next()
		if !ok {
			return h, &ParseError{Line: p.no, Msg: "diff ends inside a hunk (truncated?)"}
		}
		if line == "" {
			line = " " // some tools strip the space of empty context lines
		}
		switch line[0] {
		case ' ':
			h.Lines = append(h.Lines, Line{Kind: ' ', Text: line[1:], OldNo: oldNo, NewNo: newNo})
			oldNo++
			newNo++
			remOld--
			remNew--
		case '+':
			h.Lines = append(h.Lines, Line{Kind: '+', Text: line[1:], NewNo: newNo})
			newNo++
			remNew--
		case '-':
			h.Lines = append(h.Lines, Line{Kind: '-', Text: line[1:], OldNo: oldNo})
			oldNo++
			remOld--
		case '\\':
			if n := len(h.Lines); n > 0 {
				h.Lines[n-1].NoEOL = true
			}
		default:
			return h, &ParseError{Line: p.no, Msg: fmt.Sprintf("unexpected line in hunk %q", trunc(line))}
		}
		if remOld < 0 || remNew < 0 {
			return h, &ParseError{Line: p.no, Msg: "hunk has more lines than its header says"}
		}
	}
	// A trailing "\ No newline at end of file" belongs to this hunk.
	if l, ok := p.peek(); ok && strings.HasPrefix(l, `\`) {
		p.next()
		if n := len(h.Lines); n > 0 {
			h.Lines[n-1].NoEOL = true
		}
	}
	return h, nil
}

func hunkRange(s string) (start, count int, err error) {
	a, b, has := strings.Cut(s, ",")
	if start, err = strconv.Atoi(a); err != nil || start < 0 {
		return 0, 0, fmt.Errorf("bad hunk start %q", s)
	}
	count = 1
	if has {
		if count, err = strconv.Atoi(b); err != nil || count < 0 {
			return 0, 0, fmt.Errorf("bad hunk length %q", s)
		}
	}
	return start, count, nil
}

func trunc(s string) string { return clip.Text(s, 80) }
