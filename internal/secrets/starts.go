package secrets

import "sync"

// Three of Find's detectors start from keywords: the formats (ghp_,
// AKIA, -----BEGIN), the secret-like names of assignments (password,
// token) and the gitleaks rules' keywords. Each looks a text's byte pairs
// up in a table of its own and skips every offset whose pair starts none
// of its keywords, and on code that per-byte loop, not what follows a
// hit, was most of each detector's time (three passes of ~2.3 ns a byte
// over every text). So one pass over the text reads one table that
// marks, for each pair, which of the three it may start; the offsets
// each detector would have stopped at (its pair, and for formats and
// gitleaks its third byte, thirdBytes) are listed, in order, and each
// detector visits only those. A detector did nothing at any other offset,
// so what each finds is unchanged.

const (
	startFormat = 1 << iota
	startName
	startLeak
)

// startTable marks, for each byte pair as it is in a text, the keyword
// scans it may start (startFormat, startName, startLeak).
var startTable = sync.OnceValue(func() *[1 << 16]uint8 {
	t := new([1 << 16]uint8)
	st := detector()
	for k := range t {
		if kwIndex[k] != 0 {
			t[k] |= startFormat
		}
		if nameKwAt[k] != 0 {
			t[k] |= startName
		}
		if st.err == nil && st.kwFold[k] != 0 {
			t[k] |= startLeak
		}
	}
	return t
})

// startLists holds a finder's three lists of starts between texts: a
// review finds in thousands of texts, and the lists, grown anew for each,
// were 5% of its allocation.
type startLists struct{ formatAt, nameAt, leakAt []int }

var startsPool = sync.Pool{New: func() any { return new(startLists) }}

// scanStarts fills formatAt, nameAt and leakAt, once: the offsets of f.s
// the format scan, the name scan and the gitleaks windows look at.
func (f *finder) scanStarts() {
	if f.pooled != nil {
		return // listed
	}
	f.pooled = startsPool.Get().(*startLists)
	f.formatAt, f.nameAt, f.leakAt = f.pooled.formatAt[:0], f.pooled.nameAt[:0], f.pooled.leakAt[:0]
	t, st, s := startTable(), detector(), f.s
	for i := 0; i+1 < len(s); i++ {
		pair := uint16(s[i])<<8 | uint16(s[i+1])
		m := t[pair]
		if m == 0 {
			continue
		}
		third, last := byte(0), i+2 >= len(s)
		if !last {
			third = s[i+2]
		}
		if m&startFormat != 0 && (last || !kwThird[kwIndex[pair]].rulesOut(third)) {
			f.formatAt = append(f.formatAt, i)
		}
		if m&startName != 0 {
			f.nameAt = append(f.nameAt, i)
		}
		if m&startLeak != 0 && (last || !st.kwThird[st.kwFold[pair]].rulesOut(lowerTable[third])) {
			f.leakAt = append(f.leakAt, i)
		}
	}
}

// releaseStarts gives the lists back to the pool; f's detectors are done
// with them.
func (f *finder) releaseStarts() {
	if f.pooled == nil {
		return
	}
	*f.pooled = startLists{f.formatAt[:0], f.nameAt[:0], f.leakAt[:0]}
	startsPool.Put(f.pooled)
	f.pooled, f.formatAt, f.nameAt, f.leakAt = nil, nil, nil, nil
}
