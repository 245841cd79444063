package secrets

import (
	"slices"
	"strings"

	"github.com/diffpalhq/diffpal/internal/needle"

	"github.com/diffpalhq/diffpal/internal/par"
)

// knownSet holds secrets learned from other texts, found again by exact
// match: an 8-byte window of the text is hashed into a bit filter, and
// only filter hits are compared.
type knownSet struct {
	vals   []string
	byHead map[uint64][]string // first 8 bytes -> values, longest first
	filter []uint64
	heads  []needle.Finder // the distinct first 8 bytes, when few (findFew)
}

// maxFewHeads is how many distinct heads findFew searches for one by
// one: an IndexByte skip runs at memory speed, where the rolling filter
// hashes every byte, so a text is cheaper to search a few times over
// (a review learns a handful of secrets; its packet searches every
// changed file and hunk for them).
const maxFewHeads = 8

// minKnown is the shortest value worth remembering: shorter ones are too
// likely to be ordinary text elsewhere.
const minKnown = 8

const filterBits = 1 << 16

func head(v string) uint64 { return load8(v, 0) }

func hashHead(x uint64) uint32 { return uint32((x * 0x9E3779B97F4A7C15) >> (64 - 16)) }

// Learn returns a copy of r that also knows every secret found in texts.
func (r *Redactor) Learn(texts ...string) *Redactor {
	nr, _ := r.learn(texts, false, nil, nil)
	return nr
}

// LearnAndRedact is Learn that also returns texts redacted with what was
// learned from all of them (a secret found in one is redacted in every
// one), at the cost of one detection pass per text.
func (r *Redactor) LearnAndRedact(texts []string) (*Redactor, []string) {
	return r.learn(texts, true, nil, nil)
}

// Prefind is the detection pass Learn and LearnAndRedact run over each
// text on its own (r without what it has learned): a caller that has a
// text long before the others (a file of a patch still streaming) can
// run it then and hand it to LearnAndRedactFound.
func (r *Redactor) Prefind(text string) []Span {
	plain := Redactor{}
	if r != nil {
		plain = *r
	}
	plain.known = nil
	return plain.Find(text)
}

// RedactFound is r.Redact(s) given plain, r.Prefind(s) run ahead (before
// r learned what it knows now): the secrets r has learned are found here
// and joined with plain as Find joins its detectors' (merge is the union
// of the spans, and a span's public prefix the widest one's where it
// starts, so joining in two steps is joining at once;
// TestRedactFoundIsRedact).
func (r *Redactor) RedactFound(s string, plain []Span) string {
	if len(s) < 6 {
		return s
	}
	spans := slices.Clone(plain)
	if r != nil && r.known != nil {
		f := &finder{s: s, r: r}
		r.known.find(f)
		spans = append(spans, f.spans...)
	}
	return r.apply(s, merge(spans))
}

// LearnAndRedactFound is LearnAndRedact given some texts' detection pass
// already: found[i], where done[i], must be r.Prefind(texts[i]); the
// others are found here. The result is LearnAndRedact's.
func (r *Redactor) LearnAndRedactFound(texts []string, found [][]Span, done []bool) (*Redactor, []string) {
	return r.learn(texts, true, found, done)
}

func (r *Redactor) learn(texts []string, redact bool, pre [][]Span, done []bool) (*Redactor, []string) {
	nr := &Redactor{}
	if r != nil {
		*nr = *r
	}
	seen := map[string]bool{}
	var vals []string
	if nr.known != nil {
		for _, v := range nr.known.vals {
			seen[v] = true
			vals = append(vals, v)
		}
	}
	plain := *nr
	plain.known = nil
	var out []string
	if redact {
		out = make([]string, len(texts))
	}
	// Each text's own detection pass is independent of the others': run
	// them on every core; what they find is learned in text order.
	found := make([][]Span, len(texts))
	par.For(len(texts), 1, func(i int) {
		if i < len(done) && done[i] {
			found[i] = pre[i]
			return
		}
		found[i] = plain.Find(texts[i])
	})
	for i, t := range texts {
		spans := found[i]
		for _, sp := range spans {
			v := t[sp.Start+sp.Keep : sp.End]
			if len(v) < minKnown || strings.ContainsAny(v, "\n") || seen[v] {
				continue
			}
			seen[v] = true
			vals = append(vals, strings.Clone(v))
		}
		if redact {
			out[i] = nr.apply(t, spans)
		}
	}
	if len(vals) == 0 {
		return nr, out
	}
	k := newKnownSet(vals)
	nr.known = k
	par.For(len(out), 1, func(i int) {
		f := &finder{s: out[i], r: nr}
		k.find(f)
		if len(f.spans) > 0 {
			out[i] = nr.apply(out[i], merge(f.spans))
		}
	})
	return nr, out
}

// newKnownSet indexes vals (each at least minKnown bytes).
func newKnownSet(vals []string) *knownSet {
	k := &knownSet{vals: vals, byHead: map[uint64][]string{}, filter: make([]uint64, filterBits/64)}
	for _, v := range vals {
		x := head(v)
		k.byHead[x] = append(k.byHead[x], v)
		h := hashHead(x)
		k.filter[h/64] |= 1 << (h % 64)
	}
	for x, vs := range k.byHead {
		slices.SortFunc(vs, func(a, b string) int { return len(b) - len(a) })
		k.byHead[x] = vs
	}
	if len(k.byHead) <= maxFewHeads {
		for _, vs := range k.byHead {
			k.heads = append(k.heads, needle.New(vs[0][:8]))
		}
	}
	return k
}

// Known is how many secrets r has learned.
func (r *Redactor) Known() int {
	if r == nil || r.known == nil {
		return 0
	}
	return len(r.known.vals)
}

func (k *knownSet) find(f *finder) {
	s := f.s
	if len(s) < minKnown {
		return
	}
	if k.heads != nil {
		k.findFew(f)
		return
	}
	k.findRolling(f)
}

// findRolling is find for any number of values.
func (k *knownSet) findRolling(f *finder) {
	s := f.s
	// x is the little-endian load of s[i:i+8], rolled one byte a step.
	i, x := 0, load8(s, 0)
	for {
		if h := hashHead(x); k.filter[h/64]&(1<<(h%64)) != 0 {
			if v := k.match(s[i:], x); v != "" {
				f.add(i, i+len(v), 0, "known")
				if i += len(v); i+8 > len(s) {
					return
				}
				x = load8(s, i)
				continue
			}
		}
		if i+8 >= len(s) {
			return
		}
		x = x>>8 | uint64(s[i+8])<<56
		i++
	}
}

// findFew is find for a set of at most maxFewHeads heads: the same
// matches (at each position from the left, the longest value starting
// there; the search goes on after it), found by looking for each head
// (needle.Finder, which skips to its rarest byte: a hex value's "0" is
// everywhere in code) instead of hashing every 8-byte window
// (TestKnownFindFew compares the two).
func (k *knownSet) findFew(f *finder) {
	s := f.s
	// next[h] is where heads[h] next occurs at or after the cursor, -1
	// when it does not.
	var nextBuf [maxFewHeads]int
	next := nextBuf[:len(k.heads)]
	at := func(h, from int) int { return k.heads[h].Index(s, from) }
	for h := range next {
		next[h] = at(h, 0)
	}
	for i := 0; ; {
		// The leftmost head occurrence at or after i.
		p := -1
		for h, n := range next {
			if n >= 0 && n < i {
				n = at(h, i)
				next[h] = n
			}
			if n >= 0 && (p < 0 || n < p) {
				p = n
			}
		}
		if p < 0 {
			return
		}
		if v := k.match(s[p:], load8(s, p)); v != "" {
			f.add(p, p+len(v), 0, "known")
			i = p + len(v)
		} else {
			i = p + 1
		}
	}
}

func (k *knownSet) match(s string, x uint64) string {
	for _, v := range k.byHead[x] {
		if strings.HasPrefix(s, v) {
			return v
		}
	}
	return ""
}

func load8(s string, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}
