package rules

import (
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// The literals derived from the built-in rules' expressions and queries,
// computed at build time. Deriving them (parsing each regular expression
// with regexp/syntax and walking it; reading each query's predicates) was
// the largest part of loading the built-in rules, ~8 of ~20 ms of CPU
// (go test ./internal/rules -bench Load), paid by every review before it
// could match a line. derivedSnapshot (snapshot_gen.go, static data)
// holds each derivation's input and output, sorted by input; a derivation
// whose input is not there (a user pack's pattern, or a built-in one
// edited since `go generate ./internal/rules`) is computed as before, so
// a stale table costs time, never correctness. TestDerivedSnapshot fails
// while any entry differs from what the code computes now, or a load of
// the built-in rules misses the table.

// derivedLits is one derivation's output: literals and whether they are
// case-folded.
type derivedLits struct {
	Lits []string
	Fold bool
}

// derivedEntry is one derivation: its key and its output.
type derivedEntry struct {
	Key string
	Out derivedLits
}

// Derivations are keyed by kind and input: derivedRequired+minLen+"\x00"+
// pattern for requiredLiteralsMin, derivedQuery+query for queryLiterals.
const (
	derivedRequired = "r"
	derivedQuery    = "q"
)

var derived struct {
	// off, while generating snapshot_gen.go, makes every derivation
	// computed and every literal index built (snapshotIndex).
	off atomic.Bool
	// record, when set (while generating the table, or a test), gets
	// every derivation computed or looked up.
	recording atomic.Bool
	mu        sync.Mutex
	record    map[string]derivedLits
	misses    int
}

// lookupDerived finds key in the build-time table.
func lookupDerived(key string) (derivedLits, bool) {
	if derived.off.Load() {
		return derivedLits{}, false
	}
	i, ok := slices.BinarySearchFunc(derivedSnapshot, key, func(e derivedEntry, k string) int {
		return strings.Compare(e.Key, k)
	})
	if !ok {
		return derivedLits{}, false
	}
	return derivedSnapshot[i].Out, true
}

// derive returns the derivation of key, from the table when it holds it,
// else from compute. The caller gets its own copy of the literals.
func derive(key string, compute func() derivedLits) derivedLits {
	v, ok := lookupDerived(key)
	if !ok {
		v = compute()
	}
	if derived.recording.Load() {
		derived.mu.Lock()
		if derived.record != nil {
			derived.record[key] = v
			if !ok {
				derived.misses++
			}
		}
		derived.mu.Unlock()
	}
	return derivedLits{Lits: slices.Clone(v.Lits), Fold: v.Fold}
}

// recordDerivations starts recording every derivation; the returned
// function stops and returns them with the number not in the table.
func recordDerivations() func() (map[string]derivedLits, int) {
	derived.mu.Lock()
	derived.record, derived.misses = map[string]derivedLits{}, 0
	derived.recording.Store(true)
	derived.mu.Unlock()
	return func() (map[string]derivedLits, int) {
		derived.mu.Lock()
		defer derived.mu.Unlock()
		r, n := derived.record, derived.misses
		derived.record = nil
		derived.recording.Store(false)
		return r, n
	}
}

// encodeDerived makes the table's content: every derivation a load of
// the built-in rules (with its prefilter index and every language's
// definition patterns) asks for, computed afresh, sorted by key.
func encodeDerived() ([]derivedEntry, error) {
	derived.off.Store(true) // compute everything
	defer derived.off.Store(false)
	stop := recordDerivations()
	_, err := loadNamed(nil, nil) // finish builds the prefilter index
	langs := make([]string, 0, len(defPatterns))
	for lang := range defPatterns {
		langs = append(langs, lang)
	}
	sort.Strings(langs)
	for _, lang := range langs {
		for _, d := range defPatterns[lang] {
			requiredLiterals(d.re)
		}
	}
	rec, _ := stop()
	if err != nil {
		return nil, err
	}
	out := make([]derivedEntry, 0, len(rec))
	for k, v := range rec {
		out = append(out, derivedEntry{k, v})
	}
	slices.SortFunc(out, func(a, b derivedEntry) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// encodeIndexes makes indexSnapshot's content: the literal indexes a load
// of the built-in rules builds, built afresh.
func encodeIndexes() ([]indexData, error) {
	derived.off.Store(true) // build everything
	defer derived.off.Store(false)
	s, err := loadNamed(nil, nil)
	if err != nil {
		return nil, err
	}
	return []indexData{s.lits.data(), s.syn.data(), s.file.data()}, nil
}
