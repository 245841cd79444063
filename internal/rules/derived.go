package rules

import (
	"slices"
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
