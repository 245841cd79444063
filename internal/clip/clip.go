// Package clip shortens text for messages and length-limited fields.
//
// One helper, used everywhere, so that no caller cuts a multi-byte rune in
// half (encoding/json would turn the stray bytes into U+FFFD in the bundle)
// and no caller overshoots a schema limit by the width of its ellipsis.
package clip

import "unicode/utf8"

// Ellipsis marks text that was cut.
const Ellipsis = "…"

// Text returns s when it is at most n bytes; otherwise the longest prefix
// that ends on a rune boundary and leaves room for Ellipsis, followed by
// Ellipsis, so the result is never longer than n bytes. Below the width of
// the ellipsis itself it cuts without one.
func Text(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n < len(Ellipsis) {
		return s[:runeStart(s, max(n, 0))]
	}
	return s[:runeStart(s, n-len(Ellipsis))] + Ellipsis
}

// runeStart moves i back to the start of the rune that contains it.
func runeStart(s string, i int) int {
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}
