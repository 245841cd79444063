package findings

import (
	"bytes"
	"testing"
)

// FuzzDecode checks that no input panics the decoder, that the retaining
// and streaming decoders agree, and that every valid bundle normalizes,
// encodes and reads back valid with the same findings. The seed corpus
// (testdata bundles plus testdata/fuzz/FuzzDecode) runs in every plain
// `go test`; `go test -fuzz FuzzDecode ./findings` explores further.
func FuzzDecode(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Add([]byte(`{"findings":[{"evidence":"\ud800"}]}`))
	f.Add([]byte(`{"version":"v4","findings":[{"changed_span":{"side":"LEFT"}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, info, problems, err := Decode(data, DecodeOptions{})
		streamed := 0
		_, _, sp, serr := Decode(data, DecodeOptions{OnFinding: func(*Finding, bool) { streamed++ }})
		if (err == nil) != (serr == nil) || len(sp) != len(problems) {
			t.Fatalf("streaming decode disagrees: %v/%d vs %v/%d", err, len(problems), serr, len(sp))
		}
		if err != nil {
			if b != nil {
				t.Fatal("bundle returned with a syntax error")
			}
			return
		}
		if streamed > info.Findings {
			t.Fatalf("streamed %d findings of %d", streamed, info.Findings)
		}
		for _, p := range problems {
			if p.Reason == "" || (p.Pointer != "" && p.Pointer[0] != '/') {
				t.Fatalf("malformed problem %+v", p)
			}
		}
		if len(problems) > 0 {
			return
		}
		n := len(b.Findings)
		if err := Normalize(b, Options{}); err != nil {
			t.Fatalf("valid bundle failed to normalize: %v", err)
		}
		var out bytes.Buffer
		if err := Encode(&out, b); err != nil {
			t.Fatal(err)
		}
		b2, _, err := Parse(out.Bytes())
		if err != nil {
			t.Fatalf("re-read of a normalized bundle failed: %v\n%s", err, out.Bytes())
		}
		if len(b2.Findings) != n {
			t.Fatalf("findings %d -> %d", n, len(b2.Findings))
		}
	})
}

// FuzzValidate checks the struct validator on decoded values that were
// then edited the way callers edit them (Normalize), which must never
// panic whatever the input.
func FuzzValidate(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s, uint8(0))
	}
	f.Fuzz(func(t *testing.T, data []byte, blockOn uint8) {
		b, _, _, err := Decode(data, DecodeOptions{})
		if err != nil {
			return
		}
		_ = Validate(b)
		sev := Severities[int(blockOn)%len(Severities)]
		_ = Normalize(b, Options{Policy: Policy{BlockOn: sev}})
		_ = Validate(b)
	})
}
