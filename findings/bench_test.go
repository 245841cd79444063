package findings

import (
	"bytes"
	"encoding/json"
	"testing"
)

func benchData(b *testing.B, n int) []byte {
	b.Helper()
	bundle := sampleBundle(n)
	if err := Normalize(bundle, Options{}); err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	Encode(&buf, bundle)
	return buf.Bytes()
}

// BenchmarkGate and BenchmarkDecodeStdlib run on the same bytes, so their
// ratio is the speed-up of the schema-driven decoder over decoding the
// same bundle with encoding/json (which validates nothing).
func BenchmarkGate(b *testing.B) {
	data := benchData(b, 10_000)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, _, ps, err := Gate(data, nil); err != nil || len(ps) > 0 {
			b.Fatal(err, ps)
		}
	}
}

func BenchmarkParse(b *testing.B) {
	data := benchData(b, 10_000)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, _, err := Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeStdlib(b *testing.B) {
	data := benchData(b, 10_000)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		var v Bundle
		if err := json.Unmarshal(data, &v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNormalize(b *testing.B) {
	bundle := sampleBundle(10_000)
	for b.Loop() {
		if err := Normalize(bundle, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncode(b *testing.B) {
	bundle := sampleBundle(10_000)
	Normalize(bundle, Options{})
	for b.Loop() {
		var buf bytes.Buffer
		Encode(&buf, bundle)
	}
}
