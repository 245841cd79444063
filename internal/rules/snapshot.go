package rules

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/gob"
	"encoding/hex"
	"fmt"
	"sort"

	"github.com/goccy/go-yaml"
)

// The embedded packs, decoded at build time: decoding 600 KB of YAML took
// about half of a small review's start-up, decoding the same rules from
// gob takes a millisecond. packs.gob holds each pack exactly as
// yaml.Strict decodes it (before compileRule) with the SHA-256 of the
// YAML it was made from; a pack whose YAML no longer has that hash (it
// was edited and `go generate ./internal/rules` not run) is decoded from
// its YAML instead, so a stale snapshot costs time, never correctness.
// TestPackSnapshot fails while any pack's snapshot is stale.
//
//go:generate go test -run ^TestPackSnapshot$ -update-pack-snapshot .

//go:embed packs.gob
var packSnapshot []byte

// namedPack is one embedded pack file, decoded.
type namedPack struct {
	Name string
	// YAMLSHA256 is the hash of the file the pack was decoded from.
	YAMLSHA256 string
	Pack       pack
}

func yamlDigest(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func sortedNames(bp map[string][]byte) []string {
	names := make([]string, 0, len(bp))
	for n := range bp {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// builtinDecoded returns the embedded packs decoded, in file-name order:
// each from the snapshot when it was made from exactly that file, else
// from its YAML. Every call returns a fresh copy (compiling a rule changes
// it).
func builtinDecoded() ([]namedPack, error) {
	bp, err := BuiltinPacks()
	if err != nil {
		return nil, err
	}
	snap := map[string]namedPack{}
	if packs, err := decodeSnapshot(packSnapshot); err == nil {
		for _, p := range packs {
			snap[p.Name] = p
		}
	}
	var out []namedPack
	for _, n := range sortedNames(bp) {
		if p, ok := snap[n]; ok && p.YAMLSHA256 == yamlDigest(bp[n]) {
			out = append(out, p)
			continue
		}
		p, err := decodeYAMLPack(n, bp[n])
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// decodeYAMLPack decodes one embedded pack from its YAML.
func decodeYAMLPack(name string, data []byte) (namedPack, error) {
	var p pack
	if err := yaml.UnmarshalWithOptions(data, &p, yaml.Strict()); err != nil {
		return namedPack{}, fmt.Errorf("rules: pack builtin:%s: invalid YAML: %v", name, err)
	}
	return namedPack{Name: name, YAMLSHA256: yamlDigest(data), Pack: p}, nil
}

// decodeYAMLPacks decodes every embedded pack from its YAML.
func decodeYAMLPacks(bp map[string][]byte) ([]namedPack, error) {
	var out []namedPack
	for _, n := range sortedNames(bp) {
		p, err := decodeYAMLPack(n, bp[n])
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func decodeSnapshot(data []byte) ([]namedPack, error) {
	var packs []namedPack
	err := gob.NewDecoder(bytes.NewReader(data)).Decode(&packs)
	return packs, err
}

// encodeSnapshot makes packs.gob's content from the embedded YAML (gob
// writes maps in iteration order, so the bytes vary; what they decode
// to does not).
func encodeSnapshot() ([]byte, error) {
	bp, err := BuiltinPacks()
	if err != nil {
		return nil, err
	}
	packs, err := decodeYAMLPacks(bp)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(packs); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
