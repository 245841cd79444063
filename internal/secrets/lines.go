package secrets

import (
	"regexp"
	"strings"
	"sync"

	"github.com/diffpalhq/diffpal/internal/needle"
)

// Line rules: PEM private keys, CSV/TSV cells, and AWS secret keys on a
// line with an access key id. They look at a line's payload: the line
// without a hunk header ("@@ -1,3 +1,4 @@ ", whose function context git
// fills with a line from above the hunk) and without a diff marker.

type line struct{ start, end int }

// splitLines splits f.s into lines, into a pooled list that the caller
// gives back with releaseLines once f's line rules are done with it (the
// packet's detection splits every changed file and hunk into lines).
func (f *finder) splitLines() []line {
	s := f.s
	n := strings.Count(s, "\n") + 1
	f.linesBuf = linesPool.Get().(*[]line)
	ls := (*f.linesBuf)[:0]
	if cap(ls) < n {
		ls = make([]line, 0, n)
	}
	for start := 0; start <= len(s); {
		k := strings.IndexByte(s[start:], '\n')
		end := len(s)
		if k >= 0 {
			end = start + k
		}
		e := end
		if e > start && s[e-1] == '\r' {
			e--
		}
		ls = append(ls, line{start, e})
		if k < 0 {
			break
		}
		start = end + 1
	}
	*f.linesBuf = ls
	return ls
}

var linesPool = sync.Pool{New: func() any { return new([]line) }}

// releaseLines gives f's line list back to the pool.
func (f *finder) releaseLines() {
	if f.linesBuf != nil {
		linesPool.Put(f.linesBuf)
		f.linesBuf = nil
	}
}

var hunkHeader = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@ ?`) })

// payload returns where a line's content starts, after a hunk header and
// a diff marker.
func (f *finder) payload(l line) int {
	s := f.s
	p := l.start
	if strings.HasPrefix(s[p:l.end], "@@ ") {
		if m := hunkHeader().FindStringIndex(s[p:l.end]); m != nil {
			return p + m[1]
		}
	}
	if p < l.end && (s[p] == '+' || s[p] == '-' || s[p] == ' ') {
		p++
	}
	return p
}

// beginLine is looked for from its "B": "-" is a patch's commonest byte
// (a third of lineRules' time on the bench change went to stopping at
// each with strings.Contains).
var beginLine = needle.New("-----BEGIN ")

func (f *finder) lineRules() {
	s := f.s
	pem := beginLine.Contains(s) || strings.Contains(s, "PRIVATE KEY")
	csv := strings.IndexByte(s, ',') >= 0 || strings.IndexByte(s, '\t') >= 0
	long := hasLongRun(s, 60)
	if !pem && !csv && !long && len(f.aws) == 0 {
		return
	}
	ls := f.splitLines()
	defer f.releaseLines()
	covered := make([]bool, len(ls))
	if pem {
		f.pemBlocks(ls, covered)
	}
	if long {
		f.pemBodies(ls, covered)
	}
	if len(f.aws) > 0 {
		f.awsLines(ls)
	}
	if csv {
		f.csvCells(ls)
	}
}

var b64Table = func() (t [256]bool) {
	for _, b := range []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/") {
		t[b] = true
	}
	return t
}()

func isB64(b byte) bool { return b64Table[b] }

// hasLongRun reports a base64 run of at least n bytes. It probes the last
// byte of each candidate window first, so ordinary text, with a space or
// a dot every few bytes, is skipped n bytes at a time.
func hasLongRun(s string, n int) bool {
	for i := n - 1; i < len(s); {
		if !b64Table[s[i]] {
			i += n
			continue
		}
		k := i
		for k > i-n+1 && b64Table[s[k-1]] {
			k--
		}
		if k == i-n+1 {
			return true
		}
		i = k + n - 1
	}
	return false
}

// body describes a line as a PEM body line: its longest base64 run, and
// whether that run is strong (long and random: key material for sure),
// and whether the line is nothing but the run (give or take quotes,
// commas, a "\n" escape and white space).
type body struct {
	rs, re       int
	strong, only bool
}

func (f *finder) body(l line) body {
	s := f.s
	p := f.payload(l)
	best := body{rs: -1}
	for i := p; i < l.end; {
		if !isB64(s[i]) {
			i++
			continue
		}
		j := i
		for j < l.end && isB64(s[j]) {
			j++
		}
		for k := 0; k < 2 && j < l.end && s[j] == '='; k++ {
			j++
		}
		if j-i > best.re-best.rs {
			best.rs, best.re = i, j
		}
		i = j
	}
	if best.rs < 0 {
		return best
	}
	run := s[best.rs:best.re]
	c := classes(strings.TrimRight(run, "="))
	best.strong = len(run) >= 40 && c&(clsUpper|clsLower|clsDigit) == clsUpper|clsLower|clsDigit && Entropy(run) >= 4.0
	only := true
	for _, part := range []string{s[p:best.rs], s[best.re:l.end]} {
		part = strings.ReplaceAll(part, `\n`, "")
		part = strings.ReplaceAll(part, `\r`, "")
		if strings.Trim(part, " \t\"'`,;+()") != "" {
			only = false
		}
	}
	best.only = only
	return best
}

// weak: a line that is only a base64 run and random enough to be the end
// of a key ("kF3x0Q==") once a key is known to be around.
func (b body) weak(s string) bool {
	if b.rs < 0 || !b.only || b.re-b.rs < 8 {
		return false
	}
	run := s[b.rs:b.re]
	if strings.HasSuffix(run, "=") || strings.ContainsAny(run, "+/") {
		return true
	}
	c := classes(run)
	n := 0
	for _, k := range []int{clsUpper, clsLower, clsDigit} {
		if c&k != 0 {
			n++
		}
	}
	return n >= 2 && c&clsDigit != 0 || n == 3
}

var (
	// pemPublic opens a block of public material (a certificate, a public
	// key): its base64 lines are not secrets.
	pemPublic = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`-----BEGIN (?:CERTIFICATE|TRUSTED CERTIFICATE|X509 CRL|CERTIFICATE REQUEST|NEW CERTIFICATE REQUEST|PUBLIC KEY|RSA PUBLIC KEY|PGP PUBLIC KEY BLOCK|PGP SIGNATURE|SSH2 PUBLIC KEY|PKCS7|CMS|DH PARAMETERS|EC PARAMETERS)-----`)
	})
	pemBegin = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----`)
	})
	pemEnd = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----`)
	})
)

// pemBlocks: BEGIN...END on one line (a JSON string with \n escapes), a
// BEGIN and the body lines after it (with or without an END), an END and
// the body lines before it (a hunk or window that starts mid-key).
func (f *finder) pemBlocks(ls []line, covered []bool) {
	s := f.s
	inKey, public := false, false
	for i, l := range ls {
		text := s[l.start:l.end]
		if !inKey && !public && !strings.Contains(text, "-----") {
			continue
		}
		if public {
			covered[i] = true
			public = !strings.Contains(text, "-----END ")
			continue
		}
		if pemPublic().MatchString(text) {
			covered[i] = true
			public, inKey = !strings.Contains(text, "-----END "), false
			continue
		}
		if m := pemBegin().FindStringIndex(text); m != nil {
			if e := pemEnd().FindStringIndex(text[m[1]:]); e != nil {
				f.add(l.start+m[0], l.start+m[1]+e[1], 0, "private-key")
				inKey = false
			} else {
				end := l.end
				for end > l.start+m[1] && strings.IndexByte(" \t\"'`,;", s[end-1]) >= 0 {
					end--
				}
				f.add(l.start+m[0], end, 0, "private-key")
				inKey = true
				// Everything up to the END is key material, whatever it
				// looks like.
				if j := f.pemEndAfter(ls, i); j > 0 {
					for k := i + 1; k < j; k++ {
						ps := f.payload(ls[k])
						for ps < ls[k].end && (s[ps] == ' ' || s[ps] == '\t') {
							ps++
						}
						f.add(ps, trimEnd(s, ps, ls[k].end), 0, "private-key")
						covered[k] = true
					}
				}
			}
			covered[i] = true
			continue
		}
		if m := pemEnd().FindStringIndex(text); m != nil {
			start := m[0]
			// Key text right before the END on the same line (\n-escaped).
			k := start
			for k > 0 && (isB64(text[k-1]) || text[k-1] == '\\' || text[k-1] == '=') {
				k--
			}
			if start-k >= 16 {
				start = k
			}
			f.add(l.start+start, l.start+m[1], 0, "private-key")
			covered[i] = true
			if !inKey {
				for j := i - 1; j >= 0 && !covered[j]; j-- {
					b := f.body(ls[j])
					if !b.strong && !b.weak(s) {
						break
					}
					f.add(b.rs, b.re, 0, "private-key")
					covered[j] = true
				}
			}
			inKey = false
			continue
		}
		if !inKey {
			continue
		}
		b := f.body(l)
		switch {
		case b.strong || b.weak(s):
			f.add(b.rs, b.re, 0, "private-key")
			covered[i] = true
		case pemHeaderLine(strings.TrimSpace(s[f.payload(l):l.end])):
		default:
			inKey = false
		}
	}
}

// pemEndAfter is the line of the END that closes the BEGIN on line i
// (within a key's size), or -1.
func (f *finder) pemEndAfter(ls []line, i int) int {
	for j := i + 1; j < len(ls) && j <= i+400; j++ {
		text := f.s[ls[j].start:ls[j].end]
		if pemBegin().MatchString(text) {
			return -1
		}
		if pemEnd().MatchString(text) {
			return j
		}
	}
	return -1
}

// pemHeaderLine: RFC 1421 headers, PGP armor headers and blank lines may
// sit between BEGIN and the body.
func pemHeaderLine(t string) bool {
	return t == "" || strings.HasPrefix(t, "Proc-Type:") || strings.HasPrefix(t, "DEK-Info:") ||
		strings.HasPrefix(t, "Version:") || strings.HasPrefix(t, "Comment:")
}

// pemBodies: key material with neither BEGIN nor END in sight: two or
// more consecutive long random base64 lines, or one such line that is
// nothing else (a hunk header's function context, a finding's snippet).
func (f *finder) pemBodies(ls []line, covered []bool) {
	s := f.s
	long := func(i int) (body, bool) {
		l := ls[i]
		if covered[i] || l.end-l.start < 60 || !hasLongRun(s[l.start:l.end], 60) {
			return body{}, false
		}
		b := f.body(l)
		return b, b.strong && b.re-b.rs >= 60
	}
	for i := 0; i < len(ls); i++ {
		b, ok := long(i)
		if !ok {
			continue
		}
		group := []body{b}
		j := i + 1
		for ; j < len(ls); j++ {
			bj, ok := long(j)
			if !ok {
				break
			}
			group = append(group, bj)
		}
		if len(group) >= 2 || b.only {
			for k, g := range group {
				f.add(g.rs, g.re, 0, "private-key-body")
				covered[i+k] = true
			}
			if len(group) >= 2 && j < len(ls) && !covered[j] {
				if bj := f.body(ls[j]); bj.weak(s) {
					f.add(bj.rs, bj.re, 0, "private-key-body")
					covered[j] = true
				}
			}
		}
		i = j - 1
	}
}

// awsLines: on a line holding an AWS access key id, a 40-character random
// base64 run is its secret access key (CSV exports, aws configure output,
// one-line exports).
func (f *finder) awsLines(ls []line) {
	s := f.s
	done := -1
	for _, pos := range f.aws {
		li := lineOf(ls, pos)
		if li == done {
			continue
		}
		done = li
		l := ls[li]
		for i := f.payload(l); i < l.end; {
			if !isB64(s[i]) {
				i++
				continue
			}
			j := i
			for j < l.end && isB64(s[j]) {
				j++
			}
			if j-i == 40 {
				run := s[i:j]
				c := classes(run)
				n := 0
				for _, k := range []int{clsUpper, clsLower, clsDigit} {
					if c&k != 0 {
						n++
					}
				}
				if n == 3 || n == 2 && strings.ContainsAny(run, "+/") {
					if Entropy(run) >= 3.8 {
						f.add(i, j, 0, "aws-secret-access-key")
					}
				}
			}
			i = j
		}
	}
}

func lineOf(ls []line, pos int) int {
	lo, hi := 0, len(ls)-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if ls[mid].start <= pos {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

type cell struct{ start, end int }

// cells splits a line's payload at delim, honouring double quotes.
func (f *finder) cells(l line, delim byte) []cell {
	s := f.s
	var out []cell
	start, inQ := f.payload(l), false
	for i := start; i < l.end; i++ {
		switch s[i] {
		case '"':
			inQ = !inQ
		case delim:
			if !inQ {
				out = append(out, cell{start, i})
				start = i + 1
			}
		}
	}
	return append(out, cell{start, l.end})
}

// headerLine reports, without allocating, a line of two or more cells
// that can all be column names.
// nameByte marks the bytes a header line's cells may hold (headerLine);
// headerByte adds the delimiters, a comma and a tab.
var nameByte, headerByte = func() (n, h [256]bool) {
	for b := range 256 {
		c := byte(b)
		n[b] = isIdentByte(c) || c == ' ' || c == '-' || c == '.' || c == '"' || c == '\''
		h[b] = n[b] || c == ',' || c == '\t'
	}
	return n, h
}()

// headerBytes reports whether s[from:end] holds only headerByte bytes.
// Most lines of code hold another within a few bytes, and are ruled out
// as headers before their delimiters are looked for through the whole
// line (two IndexByte calls a line, most of csvCells' time on code).
func headerBytes(s string, from, end int) bool {
	for i := from; i < end; i++ {
		if !headerByte[s[i]] {
			return false
		}
	}
	return true
}

func (f *finder) headerLine(l line, delim byte) bool {
	s := f.s
	start, n := f.payload(l), 0
	for i := start; i <= l.end; i++ {
		if i < l.end && s[i] != delim {
			if !nameByte[s[i]] {
				return false
			}
			continue
		}
		if !headerName(s[start:i]) {
			return false
		}
		n++
		start = i + 1
	}
	return n >= 2
}

// headerName reports a cell that can be a column name.
func headerName(c string) bool {
	c = strings.Trim(strings.TrimSpace(c), `"'`)
	if c == "" || len(c) > 40 || strings.Count(c, " ") > 3 {
		return false
	}
	if !(c[0] >= 'a' && c[0] <= 'z' || c[0] >= 'A' && c[0] <= 'Z' || c[0] == '_') {
		return false
	}
	for i := 0; i < len(c); i++ {
		if !(isIdentByte(c[i]) || c[i] == ' ' || c[i] == '-' || c[i] == '.') {
			return false
		}
	}
	return true
}

// csvCells: under a CSV/TSV header that names secret columns, the cells
// of those columns in the rows that follow (same delimiter and width).
func (f *finder) csvCells(ls []line) {
	s := f.s
	for i := 0; i < len(ls); i++ {
		l := ls[i]
		if !headerBytes(s, f.payload(l), l.end) {
			continue // headerLine would say no, whichever the delimiter
		}
		text := s[l.start:l.end]
		delim := byte(',')
		if strings.IndexByte(text, '\t') >= 0 {
			delim = '\t'
		} else if strings.IndexByte(text, ',') < 0 {
			continue
		}
		if !f.headerLine(l, delim) {
			continue
		}
		hdr := f.cells(l, delim)
		var cols []int
		kinds := map[int]int{}
		isHeader := true
		for k, c := range hdr {
			name := s[c.start:c.end]
			if !headerName(name) {
				isHeader = false
				break
			}
			if kd := nameKind(strings.Join(strings.Fields(strings.Trim(strings.TrimSpace(name), `"'`)), "_")); kd != kindNone {
				cols = append(cols, k)
				kinds[k] = kd
			}
		}
		if !isHeader || len(cols) == 0 {
			continue
		}
		j := i + 1
		for ; j < len(ls); j++ {
			row := f.cells(ls[j], delim)
			if len(row) != len(hdr) {
				break
			}
			for _, k := range cols {
				c := row[k]
				vs, ve := c.start, c.end
				for vs < ve && (s[vs] == ' ' || s[vs] == '\t') {
					vs++
				}
				ve = trimEnd(s, vs, ve)
				quoted := ve-vs >= 2 && s[vs] == '"' && s[ve-1] == '"'
				if quoted {
					vs, ve = vs+1, ve-1
				}
				v := s[vs:ve]
				minLen := 6
				if kinds[k] == kindPassword {
					minLen = 4
				}
				if len(v) < minLen || placeholder().MatchString(v) || masked(v, f.r.mask()) || !quoted && (strings.ContainsAny(v, " \t") || codeLike(v)) {
					continue
				}
				f.add(vs, ve, 0, "csv-secret-column")
			}
		}
		i = j - 1
	}
}
