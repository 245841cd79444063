package secrets

import "strings"

// urls finds the password of scheme://[user]:password@host. The user may
// be empty (redis://:pw@host) and the password may hold "@" and "/": it
// runs from the first ":" of the user info to the last "@" before the
// host (an "@" right after a "/" starts a path segment such as npm's
// /@scope, not a host).
func (f *finder) urls() {
	s := f.s
	for off := 0; ; {
		k := strings.Index(s[off:], "://")
		if k < 0 {
			return
		}
		i := off + k
		off = i + 3
		// A scheme: a letter, then letters, digits, + . -
		j := i
		for j > 0 && (isIdentByte(s[j-1]) || s[j-1] == '+' || s[j-1] == '.' || s[j-1] == '-') && s[j-1] != '_' {
			j--
		}
		for j < i && !(s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z') {
			j++
		}
		if j == i {
			continue
		}
		start := i + 3
		limit := start
		for limit < len(s) && !urlStop(s[limit]) {
			limit++
		}
		region := s[start:limit]
		colon := strings.IndexByte(region, ':')
		if colon < 0 || strings.IndexByte(region, '@') < 0 {
			continue
		}
		user := region[:colon]
		if strings.ContainsAny(user, "/?#") {
			continue
		}
		at := -1
		for p := len(region) - 1; p > colon; p-- {
			if region[p] != '@' || region[p-1] == '/' {
				continue
			}
			if hostAt(region[p+1:]) {
				at = p
				break
			}
		}
		if at < 0 {
			continue
		}
		pass := region[colon+1 : at]
		if pass == "" || portPath(pass) || placeholder().MatchString(pass) || template(pass) || masked(pass, f.r.mask()) {
			off = start + at
			continue
		}
		f.add(start+colon+1, start+at, 0, "url-credentials")
		off = start + at
	}
}

// urlStop ends the part of a URL that may hold credentials: white space,
// quotes, angle brackets, and a backslash (an escape in a string).
func urlStop(b byte) bool {
	switch b {
	case ' ', '\t', '\n', '\r', '"', '\'', '`', '<', '>', '\\':
		return true
	}
	return false
}

// hostAt reports whether a URL host starts s: a name or an IPv6 literal,
// then a port, a path, a query, the end, or a delimiter.
func hostAt(s string) bool {
	n := 0
	for n < len(s) {
		b := s[n]
		if isIdentByte(b) || b == '.' || b == '-' || b == '%' || b == '[' || b == ']' || (b == ':' && n > 0 && strings.HasPrefix(s, "[")) {
			n++
			continue
		}
		break
	}
	if n == 0 {
		return false
	}
	if n == len(s) {
		return true
	}
	switch s[n] {
	case ':', '/', '?', '#', ',', ';', ')', ']', '}', '|':
		return true
	}
	return false
}

// portPath: "localhost:8080/x?u=a@b" has no password, only a port.
func portPath(p string) bool {
	d := 0
	for d < len(p) && p[d] >= '0' && p[d] <= '9' {
		d++
	}
	return d > 0 && d <= 5 && d < len(p) && (p[d] == '/' || p[d] == '?' || p[d] == '#')
}
