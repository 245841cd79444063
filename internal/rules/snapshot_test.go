package rules

import (
	"bytes"
	"flag"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var updatePackSnapshot = flag.Bool("update-pack-snapshot", false, "rewrite snapshot_gen.go from packs/*.yaml (go generate ./internal/rules)")

// TestPackSnapshot: snapshot_gen.go was made from the embedded YAML as it
// is now, holds exactly what decoding the YAML gives, and is what
// generating it again writes.
func TestPackSnapshot(t *testing.T) {
	if *updatePackSnapshot {
		data, err := generateSnapshot()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("snapshot_gen.go", data, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	bp, err := BuiltinPacks()
	if err != nil {
		t.Fatal(err)
	}
	fromYAML, err := decodeYAMLPacks(bp)
	if err != nil {
		t.Fatal(err)
	}
	if len(packSnapshot) != len(fromYAML) {
		t.Fatalf("snapshot_gen.go has %d packs, packs/ %d: run go generate ./internal/rules", len(packSnapshot), len(fromYAML))
	}
	for i, snap := range packSnapshot {
		if snap.Name != fromYAML[i].Name || snap.YAMLLen != fromYAML[i].YAMLLen || snap.YAMLCRC != fromYAML[i].YAMLCRC {
			t.Errorf("snapshot_gen.go is stale for %s (the pack changed): run go generate ./internal/rules", fromYAML[i].Name)
		} else if !reflect.DeepEqual(snap, fromYAML[i]) {
			t.Errorf("snapshot_gen.go holds other rules for %s than its YAML", snap.Name)
		}
	}
	got, err := builtinDecoded()
	if err != nil || !reflect.DeepEqual(got, fromYAML) {
		t.Fatalf("builtinDecoded differs from the YAML (err %v)", err)
	}
	want, err := os.ReadFile("snapshot_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	regen, err := generateSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(regen, want) {
		t.Error("snapshot_gen.go is not what go generate ./internal/rules writes now: run it")
	}
}

// TestSnapshotUnchangedByLoad: compiling the built-in rules (lazily, as a
// review does, and eagerly, as the tests do) and matching with them
// leaves the static snapshot as the YAML decodes: Rule.fresh copies all
// that compiling writes.
func TestSnapshotUnchangedByLoad(t *testing.T) {
	for _, eager := range []bool{false, true} {
		packs, err := builtinDecoded()
		if err != nil {
			t.Fatal(err)
		}
		s := &Set{byID: map[string]*Rule{}}
		for _, np := range packs {
			if err := s.addPack("builtin:"+np.Name, np.Pack, eager); err != nil {
				t.Fatal(err)
			}
		}
		if err := gateSeverity(s.rules); err != nil {
			t.Fatal(err)
		}
	}
	set, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	hits := 0
	for _, r := range set.Rules() {
		for _, ex := range r.Positive {
			hits += len(runExample(set, r, ex))
		}
	}
	if hits == 0 {
		t.Fatal("the positive examples matched nothing")
	}
	bp, _ := BuiltinPacks()
	fromYAML, err := decodeYAMLPacks(bp)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(packSnapshot, fromYAML) {
		t.Fatal("loading the built-in rules changed the static snapshot")
	}
}

// TestRuleFreshCopiesPointers: every field of Rule (and of Flow) that
// points to a struct is copied by fresh, so a pointer field added later
// cannot leave compiled state written into the shared snapshot.
func TestRuleFreshCopiesPointers(t *testing.T) {
	check := func(name string, v reflect.Value, copyOf func(reflect.Value) reflect.Value) {
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if f.Type.Kind() != reflect.Pointer || !f.IsExported() {
				continue
			}
			orig := reflect.New(f.Type.Elem())
			v.Field(i).Set(orig)
			got := copyOf(v).Field(i)
			if got.Pointer() == orig.Pointer() {
				t.Errorf("fresh shares %s.%s with the snapshot", name, f.Name)
			}
		}
	}
	var r Rule
	check("Rule", reflect.ValueOf(&r).Elem(), func(v reflect.Value) reflect.Value {
		return reflect.ValueOf(v.Interface().(Rule).fresh())
	})
	var fl Flow
	check("Flow", reflect.ValueOf(&fl).Elem(), func(v reflect.Value) reflect.Value {
		return reflect.ValueOf(*Rule{Flow: new(v.Interface().(Flow))}.fresh().Flow)
	})
}

// TestDerivedSnapshot: every derivation in the table is what the code
// derives now, the table is sorted by key, and loading the built-in
// rules (and every language's definition patterns) finds each of its
// derivations there.
func TestDerivedSnapshot(t *testing.T) {
	table := derivedSnapshot
	if len(table) < 300 {
		t.Fatalf("snapshot_gen.go holds %d derivations: run go generate ./internal/rules", len(table))
	}
	if !slices.IsSortedFunc(table, func(a, b derivedEntry) int { return strings.Compare(a.Key, b.Key) }) {
		t.Fatal("derivedSnapshot is not sorted by key")
	}
	for _, e := range table {
		key, want := e.Key, e.Out
		var got derivedLits
		switch kind, rest := key[:1], key[1:]; kind {
		case derivedRequired:
			n, pattern, ok := strings.Cut(rest, "\x00")
			minLen, err := strconv.Atoi(n)
			if !ok || err != nil {
				t.Fatalf("derivedSnapshot: bad key %q", key)
			}
			got.Lits, got.Fold = deriveRequiredLiterals(pattern, minLen)
		case derivedQuery:
			got.Lits = deriveQueryLiterals(rest)
		default:
			t.Fatalf("derivedSnapshot: bad key %q", key)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("derivedSnapshot: %.80q: holds %+v, the code derives %+v: run go generate ./internal/rules", key, want, got)
		}
		if v, ok := lookupDerived(key); !ok || !reflect.DeepEqual(v, want) {
			t.Errorf("lookupDerived(%.80q) = %+v, %v", key, v, ok)
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
		t.Fatalf("loading the built-in rules derived %d literal sets, %d of them not in the table: run go generate ./internal/rules", len(rec), misses)
	}
}

// TestPackSnapshotStale: a pack whose snapshot entry does not match its
// YAML (length or checksum), or has none, is decoded from the YAML.
func TestPackSnapshotStale(t *testing.T) {
	saved := packSnapshot
	defer func() { packSnapshot = saved }()
	bp, _ := BuiltinPacks()
	want, err := decodeYAMLPacks(bp)
	if err != nil {
		t.Fatal(err)
	}
	// The first pack's entry holds other rules, under a wrong checksum,
	// a wrong length, or another name.
	bad := func(edit func(*namedPack)) []namedPack {
		s := slices.Clone(saved)
		s[0].Pack.Rules = s[0].Pack.Rules[:1]
		edit(&s[0])
		return s
	}
	for _, snap := range [][]namedPack{
		nil,
		bad(func(p *namedPack) { p.YAMLCRC++ }),
		bad(func(p *namedPack) { p.YAMLLen++ }),
		bad(func(p *namedPack) { p.Name += "x" }),
	} {
		packSnapshot = snap
		got, err := builtinDecoded()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatal("a stale snapshot was used")
		}
	}
}

// TestIndexSnapshot: each literal index in the snapshot is the automaton
// buildLiteralIndex builds for its literals now, and loading the built-in
// rules takes all three of its indexes from the snapshot.
func TestIndexSnapshot(t *testing.T) {
	if len(indexSnapshot) != 3 {
		t.Fatalf("indexSnapshot holds %d indexes: run go generate ./internal/rules", len(indexSnapshot))
	}
	for i, d := range indexSnapshot {
		if got := buildLiteralIndex(d.Lits).data(); !reflect.DeepEqual(got, d) {
			t.Errorf("index %d (%d literals) is not what buildLiteralIndex builds: run go generate ./internal/rules", i, len(d.Lits))
		}
	}
	s, err := loadNamed(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, x := range []*literalIndex{s.lits, s.syn, s.file} {
		if len(x.kidAt) == 0 || &x.kidAt[0] != &indexSnapshot[i].KidAt[0] {
			t.Errorf("index %d was built at load, not taken from the snapshot", i)
		}
	}
}
