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
	f.Add([]byte(`{"version":"v3","review_id":"r","base_sha":"","head_sha":"","gate":{"block_on":"HIGH"},"findings":[{"category":"c","severity":"Medium","confidence":1,"path":"a","start_line":1,"end_line":1,"changed_span":{"path":"a","start_line":1,"end_line":1},"title":"t","message":"m","evidence":{"anchor":"a","reasoning_basis":"r","source":"s"},"impact":{"summary":"s","scope":"s"}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, info, problems, err := Decode(data, DecodeOptions{})
		streamed := 0
		_, sinfo, sp, serr := Decode(data, DecodeOptions{OnFinding: func(*Finding, bool) { streamed++ }})
		if (err == nil) != (serr == nil) || len(sp) != len(problems) || len(sinfo.Warnings) != len(info.Warnings) {
			t.Fatalf("streaming decode disagrees: %v/%d/%d vs %v/%d/%d", err, len(problems), len(info.Warnings), serr, len(sp), len(sinfo.Warnings))
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
		b2, info2, err := Parse(out.Bytes())
		if err != nil {
			t.Fatalf("re-read of a normalized bundle failed: %v\n%s", err, out.Bytes())
		}
		if len(info2.Warnings) > 0 {
			t.Fatalf("a normalized bundle reads with warnings: %v", info2.Warnings)
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
