package rules

import (
	"bytes"
	"encoding/gob"
	"flag"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

var updatePackSnapshot = flag.Bool("update-pack-snapshot", false, "rewrite packs.gob and derived.gob from packs/*.yaml (go generate ./internal/rules)")

// TestPackSnapshot: packs.gob was made from the embedded YAML as it is
// now, and decodes to exactly what decoding the YAML gives.
func TestPackSnapshot(t *testing.T) {
	if *updatePackSnapshot {
		data, err := encodeSnapshot()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("packs.gob", data, 0o644); err != nil {
			t.Fatal(err)
		}
		if data, err = encodeDerived(); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("derived.gob", data, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	bp, err := BuiltinPacks()
	if err != nil {
		t.Fatal(err)
	}
	snap, err := decodeSnapshot(packSnapshot)
	if err != nil {
		t.Fatalf("packs.gob does not decode (%v): run go generate ./internal/rules", err)
	}
	fromYAML, err := decodeYAMLPacks(bp)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap) != len(fromYAML) {
		t.Fatalf("packs.gob has %d packs, packs/ %d: run go generate ./internal/rules", len(snap), len(fromYAML))
	}
	for i := range snap {
		if snap[i].Name != fromYAML[i].Name || snap[i].YAMLSHA256 != fromYAML[i].YAMLSHA256 {
			t.Errorf("packs.gob is stale for %s (the pack changed): run go generate ./internal/rules", fromYAML[i].Name)
		} else if !reflect.DeepEqual(snap[i], fromYAML[i]) {
			t.Errorf("packs.gob decodes %s to other rules than its YAML", snap[i].Name)
		}
	}
	got, err := builtinDecoded()
	if err != nil || !reflect.DeepEqual(got, fromYAML) {
		t.Fatalf("builtinDecoded differs from the YAML (err %v)", err)
	}
}

// TestDerivedSnapshot: every derivation in derived.gob is what the code
// derives now, and loading the built-in rules (and every language's
// definition patterns) finds each of its derivations there.
func TestDerivedSnapshot(t *testing.T) {
	table := derivedTable()
	if len(table) < 300 {
		t.Fatalf("derived.gob holds %d derivations: run go generate ./internal/rules", len(table))
	}
	for key, want := range table {
		var got derivedLits
		switch kind, rest := key[:1], key[1:]; kind {
		case derivedRequired:
			n, pattern, ok := strings.Cut(rest, "\x00")
			minLen, err := strconv.Atoi(n)
			if !ok || err != nil {
				t.Fatalf("derived.gob: bad key %q", key)
			}
			got.Lits, got.Fold = deriveRequiredLiterals(pattern, minLen)
		case derivedQuery:
			got.Lits = deriveQueryLiterals(rest)
		default:
			t.Fatalf("derived.gob: bad key %q", key)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("derived.gob: %.80q: holds %+v, the code derives %+v: run go generate ./internal/rules", key, want, got)
		}
	}
	stop := recordDerivations()
	_, err := loadNamed(nil, nil)
	for lang := range defPatterns {
		defPatternsOf(lang)
	}
	rec, misses := stop()
	if err != nil {
		t.Fatal(err)
	}
	// (definition patterns compiled by an earlier test are not asked again)
	if misses != 0 || len(rec) < 300 {
		t.Fatalf("loading the built-in rules derived %d literal sets, %d of them not in derived.gob: run go generate ./internal/rules", len(rec), misses)
	}
}

// TestPackSnapshotStale: a broken snapshot, or one pack's stale entry,
// is not used: the YAML is.
func TestPackSnapshotStale(t *testing.T) {
	saved := packSnapshot
	defer func() { packSnapshot = saved }()
	bp, _ := BuiltinPacks()
	want, err := decodeYAMLPacks(bp)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := decodeSnapshot(saved)
	if err != nil {
		t.Fatal(err)
	}
	// The first pack's entry claims its hash but holds other rules.
	snap[0].Pack.Rules = snap[0].Pack.Rules[:1]
	snap[0].YAMLSHA256 = "0000"
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(snap); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]byte{nil, []byte("not gob"), buf.Bytes()} {
		packSnapshot = bad
		got, err := builtinDecoded()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatal("a stale or broken snapshot was used")
		}
	}
}
