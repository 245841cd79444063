package secrets

import (
	"math"
	"regexp"
	"strings"
	"sync"
)

// Entropy is the Shannon entropy of s in bits per byte.
func Entropy(s string) float64 {
	if s == "" {
		return 0
	}
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	h, n := 0.0, float64(len(s))
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}

const (
	clsUpper = 1 << iota
	clsLower
	clsDigit
	clsOther
)

func classes(s string) int {
	c := 0
	for i := 0; i < len(s); i++ {
		switch b := s[i]; {
		case b >= 'A' && b <= 'Z':
			c |= clsUpper
		case b >= 'a' && b <= 'z':
			c |= clsLower
		case b >= '0' && b <= '9':
			c |= clsDigit
		default:
			c |= clsOther
		}
	}
	return c
}

// credentialLike: long enough, random enough, and mixing character
// classes the way generated keys do (never a word, a path or a sentence).
func credentialLike(v string, minEntropy float64) bool {
	if len(v) < 10 || strings.ContainsAny(v, " \t") {
		return false
	}
	minE := minEntropy
	if len(v) < 16 {
		// A short value cannot reach a long value's entropy.
		minE = min(minE, 0.8*math.Log2(float64(len(v))))
	}
	if Entropy(v) < minE {
		return false
	}
	c := classes(v)
	letters := c & (clsUpper | clsLower)
	switch {
	case c&clsDigit != 0 && letters != 0:
		return true
	case letters == clsUpper|clsLower && c&clsOther != 0 && len(v) >= 20:
		return true
	case letters == clsUpper|clsLower && len(v) >= 32:
		return Entropy(v) >= 4.0
	}
	return false
}

// placeholder matches values that stand for a secret without being one.
var placeholder = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)^(?:` +
		`x{3,}|\*+|\.+|-+|_+|#+|\?+|0+|1234(?:5678?)?|` +
		`\[?redacted\]?.*|.*\*\*\*\*|.*\[redacted\].*|` +
		`changeme|change_?me|changeit|password\d*|passwd|secret|token|api_?key|key|pass|value|string|str|text|bytes|\[\]byte|` +
		`int|bool|boolean|number|any|object|optional|required|none|null|nil|undefined|true|false|yes|no|on|off|empty|unset|default|` +
		`example.*|.*example\.(?:com|org|net).*|dummy.*|placeholder.*|todo.*|fixme.*|fake.*|sample.*|test(?:ing)?|mock.*|demo|` +
		`your.*|my[_-]?(?:secret|password|token|key).*|insert.*|enter.*|replace.*|secret[_-]?here|<.*>|` +
		`\$\{.*|\$\(.*|\$[A-Za-z_][\w]*|\{\{.*|\{[\w.]*\}|%\(?\w*\)?s|%[sdvqw]|#\{.*|@\w+@|!\w+.*|&\w+|\*\w+` +
		`)$`)
})

// template reports a string literal that is built at run time.
func template(v string) bool {
	return strings.Contains(v, "${") || strings.Contains(v, "{{") || strings.Contains(v, "#{") ||
		strings.Contains(v, "%s") || strings.Contains(v, "%v") || strings.Contains(v, "%(") ||
		(strings.Contains(v, "{") && strings.Contains(v, "}"))
}

func isIdentByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_'
}

// identPath reports dotted or scoped identifiers such as
// process.env.API_KEY, settings.SECRET_KEY or Config::Token.
func identPath(v string) bool {
	if !strings.Contains(v, ".") && !strings.Contains(v, "::") && !strings.Contains(v, "->") {
		return false
	}
	for _, part := range strings.FieldsFunc(v, func(r rune) bool { return r == '.' || r == ':' || r == '-' || r == '>' }) {
		if part == "" || part[0] >= '0' && part[0] <= '9' {
			return false
		}
		for i := 0; i < len(part); i++ {
			if !isIdentByte(part[i]) && part[i] != '$' {
				return false
			}
		}
	}
	return true
}

// bareWord is an identifier without digits: in code, a variable.
func bareWord(v string) bool {
	if v == "" {
		return false
	}
	for i := 0; i < len(v); i++ {
		b := v[i]
		if !(b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b == '_' || b == '$') {
			return false
		}
	}
	return true
}

// codeLike reports an unquoted value that is an expression: a call, an
// index, member access, a path.
func codeLike(v string) bool {
	if strings.ContainsAny(v, "()[]{}") || identPath(v) {
		return true
	}
	if strings.HasPrefix(v, "/") || strings.HasPrefix(v, "./") || strings.HasPrefix(v, "../") || strings.HasPrefix(v, "~/") {
		return true
	}
	return false
}

// masked reports a value some redactor already replaced.
func masked(v, mask string) bool {
	return strings.Contains(v, mask) || strings.Contains(v, Mask) || strings.HasSuffix(v, "****")
}
