package publish

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Markers are HTML comments on the first line of every body diffpal posts;
// they are how a later run finds its own threads and summary. They render
// as nothing. Only the first line counts, and hosts only read markers of
// comments written by the token's own identity when they can tell it, so
// text quoted in a reviewer's reply or a marker typed by the pull
// request's author does not hide a finding.
//
//	<!-- diffpal:finding channel=CH stable_id=ID digest=D -->
//	<!-- diffpal:summary channel=CH -->
//	<!-- diffpal:review channel=CH head=SHA -->
const markerPrefix = "<!-- diffpal:"

// Marker is a parsed marker.
type Marker struct {
	Kind     string // finding, summary, review, resolved
	Channel  string
	StableID string
	Digest   string
	Head     string
}

// String renders the marker.
func (m Marker) String() string {
	var b strings.Builder
	b.WriteString(markerPrefix)
	b.WriteString(m.Kind)
	field := func(k, v string) {
		if v != "" {
			b.WriteString(" " + k + "=" + markerValue(v))
		}
	}
	field("channel", m.Channel)
	field("stable_id", m.StableID)
	field("digest", m.Digest)
	field("head", m.Head)
	b.WriteString(" -->")
	return b.String()
}

// ParseMarker reads the marker on the first line of body; ok is false when
// the body has none.
func ParseMarker(body string) (Marker, bool) {
	first, _, _ := strings.Cut(strings.TrimLeft(body, " \r\n"), "\n")
	first = strings.TrimSpace(first)
	if !strings.HasPrefix(first, markerPrefix) || !strings.HasSuffix(first, "-->") {
		return Marker{}, false
	}
	fields := strings.Fields(strings.TrimSuffix(strings.TrimPrefix(first, markerPrefix), "-->"))
	if len(fields) == 0 {
		return Marker{}, false
	}
	m := Marker{Kind: fields[0]}
	for _, f := range fields[1:] {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "channel":
			m.Channel = v
		case "stable_id":
			m.StableID = v
		case "digest":
			m.Digest = v
		case "head":
			m.Head = v
		}
	}
	return m, true
}

// markerValue keeps a marker value to [A-Za-z0-9._:-]: values come from a
// bundle, which publish --input reads from anywhere, and must not end the
// HTML comment or add a field.
func markerValue(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if !markerByte(s[i]) {
			clean = false
			break
		}
	}
	if clean && len(s) <= 128 {
		return s
	}
	// Anything else is replaced by its hash, so equal ids still match.
	sum := sha256.Sum256([]byte(s))
	return "h" + hex.EncodeToString(sum[:12])
}

func markerByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-'
}

// MarkerID is the form of a stable id in markers (and so in State).
func MarkerID(stableID string) string { return markerValue(stableID) }

// digest is a short hash of a body without its marker line, so a change of
// text (not of marker) is what makes an update.
func digest(body string) string {
	if _, rest, ok := strings.Cut(body, "\n"); ok && strings.HasPrefix(body, markerPrefix) {
		body = rest
	}
	sum := sha256.Sum256([]byte(body))
	return hex.EncodeToString(sum[:6])
}
