package rules

import (
	"fmt"
	"hash/crc32"
	"io"

	"github.com/goccy/go-yaml"
)

// The embedded packs, decoded at build time: decoding 600 KB of YAML took
// about half of a small review's start-up, and decoding the same rules
// from gob still took 4–5 ms of every review. snapshot_gen.go holds each
// pack exactly as yaml.Strict decodes it (before compileRule) as Go
// composite literals, which the compiler lays out as static data: loading
// decodes nothing. Each pack is recorded with the length and CRC-32C of
// the YAML it was made from; a pack whose YAML no longer matches (it was
// edited and `go generate ./internal/rules` not run) is decoded from its
// YAML instead, so a stale snapshot costs time, never correctness.
// TestPackSnapshot fails while any pack's snapshot is stale.
//
//go:generate go test -run ^TestPackSnapshot$ -update-pack-snapshot .

// namedPack is one embedded pack file, decoded.
type namedPack struct {
	Name string
	// YAMLLen and YAMLCRC identify the file the pack was decoded from:
	// its length and CRC-32C (Castagnoli). They guard against a stale
	// snapshot (a build-time mistake), not against a forged one: the
	// snapshot and the YAML are both compiled into the binary.
	YAMLLen int
	YAMLCRC uint32
	Pack    pack
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func yamlID(data []byte) (int, uint32) {
	return len(data), crc32.Checksum(data, castagnoli)
}

// fileID is yamlID of an embedded pack file, read through a small buffer
// (embed.FS.ReadFile would copy the whole file first).
func fileID(path string) (int, uint32, error) {
	f, err := packFS.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	h := crc32.New(castagnoli)
	n, err := io.Copy(h, f)
	return int(n), h.Sum32(), err
}

// builtinDecoded returns the embedded packs decoded, in file-name order:
// each from the snapshot when it was made from exactly that file, else
// from its YAML. Every call returns a fresh copy that compiling may
// change (Rule.fresh); the snapshot itself is never written.
func builtinDecoded() ([]namedPack, error) {
	ents, err := packFS.ReadDir("packs")
	if err != nil {
		return nil, err
	}
	var out []namedPack
	for _, e := range ents { // (ReadDir sorts by name)
		n := e.Name()
		if e.IsDir() || !isPackFile(n) {
			continue
		}
		size, sum, err := fileID("packs/" + n)
		if err != nil {
			return nil, err
		}
		if p, ok := snapshotPack(n); ok && p.YAMLLen == size && p.YAMLCRC == sum {
			out = append(out, p.fresh())
			continue
		}
		data, err := packFS.ReadFile("packs/" + n)
		if err != nil {
			return nil, err
		}
		p, err := decodeYAMLPack(n, data)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// snapshotPack is the snapshot's entry for the pack file name.
func snapshotPack(name string) (namedPack, bool) {
	for _, p := range packSnapshot {
		if p.Name == name {
			return p, true
		}
	}
	return namedPack{}, false
}

// fresh returns a copy of a snapshot pack whose rules compiling may
// change.
func (p namedPack) fresh() namedPack {
	rules := make([]Rule, len(p.Pack.Rules))
	for i := range p.Pack.Rules {
		rules[i] = p.Pack.Rules[i].fresh()
	}
	p.Pack.Rules = rules
	return p
}

// fresh returns a copy of r that compiling may change: compileRule and
// gateSeverity write the rule's own fields and the unexported fields of
// the structs it points to, so those structs are copied; its slices and
// maps are only read, and shared (TestSnapshotUnchangedByLoad).
func (r Rule) fresh() Rule {
	r.Context, r.Block, r.Enclosing, r.Entropy = copyOf(r.Context), copyOf(r.Block), copyOf(r.Enclosing), copyOf(r.Entropy)
	if r.Flow = copyOf(r.Flow); r.Flow != nil {
		r.Flow.UnknownOrigin, r.Flow.ParamOrigin = copyOf(r.Flow.UnknownOrigin), copyOf(r.Flow.ParamOrigin)
	}
	return r
}

// copyOf is a pointer to a copy of *p, nil for nil.
func copyOf[T any](p *T) *T {
	if p == nil {
		return nil
	}
	c := *p
	return &c
}

// decodeYAMLPack decodes one embedded pack from its YAML.
func decodeYAMLPack(name string, data []byte) (namedPack, error) {
	var p pack
	if err := yaml.UnmarshalWithOptions(data, &p, yaml.Strict()); err != nil {
		return namedPack{}, fmt.Errorf("rules: pack builtin:%s: invalid YAML: %v", name, err)
	}
	size, sum := yamlID(data)
	return namedPack{Name: name, YAMLLen: size, YAMLCRC: sum, Pack: p}, nil
}
