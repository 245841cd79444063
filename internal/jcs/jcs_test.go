package jcs

import (
	"math"
	"strings"
	"testing"
)

func TestFormatNumber(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{0, "0"},
		{math.Copysign(0, -1), "0"},
		{1, "1"},
		{-1, "-1"},
		{4.5, "4.5"},
		{0.002, "0.002"},
		{1e30, "1e+30"},
		{1e-27, "1e-27"},
		{1e21, "1e+21"},
		{1e20, "100000000000000000000"},
		{333333333.33333329, "333333333.3333333"},
		{5e-324, "5e-324"},
		{math.MaxFloat64, "1.7976931348623157e+308"},
		{9007199254740992, "9007199254740992"},
		{295147905179352830000, "295147905179352830000"},
		{0.000001, "0.000001"},
		{1e-7, "1e-7"},
		{123456789012345680000, "123456789012345680000"},
		{-1.5e-10, "-1.5e-10"},
		{0.1, "0.1"},
		{100, "100"},
		{1.25e21, "1.25e+21"},
		{12.345, "12.345"},
	}
	for _, tt := range tests {
		got, err := FormatNumber(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("FormatNumber(%v) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if _, err := FormatNumber(bad); err == nil {
			t.Errorf("FormatNumber(%v) succeeded", bad)
		}
	}
}

func TestCanonicalize(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{
			name: "rfc8785 3.2.2 sample",
			in: `{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
			      "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
			      "literals": [null, true, false]}`,
			want: `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`,
		},
		{
			name: "rfc8785 3.2.3 utf-16 key order",
			in: `{"\u20ac": "Euro Sign", "\r": "Carriage Return", "\ufb33": "Hebrew Letter Dalet With Dagesh",
			      "1": "One", "\ud83d\ude00": "Emoji: Grinning Face", "\u0080": "Control",
			      "\u00f6": "Latin Small Letter O With Diaeresis"}`,
			want: "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"\u00f6\":\"Latin Small Letter O With Diaeresis\",\"\u20ac\":\"Euro Sign\",\"\U0001F600\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}",
		},
		{name: "nested and empty", in: ` { "b" : [ ] , "a" : { } } `, want: `{"a":{},"b":[]}`},
		{name: "html chars stay literal", in: `"\u003ca\u0026b\u003e"`, want: `"<a&b>"`},
		{name: "control escapes", in: `"\u0001\b\f\t\u001f"`, want: `"\u0001\b\f\t\u001f"`},
		{name: "integer as float", in: `[1.0, -0.0, 10e0, 1e2]`, want: `[1,0,10,100]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Canonicalize([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestCanonicalizeRejects(t *testing.T) {
	for _, in := range []string{`{"a":1,"a":2}`, `1e400`, `{"a":1} x`, `[1,`, ``} {
		if _, err := Canonicalize([]byte(in)); err == nil {
			t.Errorf("Canonicalize(%q) succeeded", in)
		}
	}
}

func TestSHA256HexOfStruct(t *testing.T) {
	v := struct {
		B string `json:"b"`
		A int    `json:"a"`
	}{B: "<x>", A: 2}
	b, err := Marshal(v)
	if err != nil || string(b) != `{"a":2,"b":"<x>"}` {
		t.Fatalf("Marshal = %s, %v", b, err)
	}
	h, err := SHA256Hex(v)
	if err != nil || len(h) != 64 || strings.ToLower(h) != h {
		t.Fatalf("SHA256Hex = %q, %v", h, err)
	}
	// sha256 of {"a":2,"b":"<x>"}
	h2, _ := SHA256Hex(map[string]any{"b": "<x>", "a": 2})
	if h != h2 {
		t.Errorf("struct and map hashes differ: %s vs %s", h, h2)
	}
}

// sameAsTokensInputs are documents for comparing Canonicalize with the
// tokenizer's canonical form.
var sameAsTokensInputs = []string{`{"b":1,"a":[true,null,"x"]}`, `1e21`, `"\u00e9\n"`, `{"\ud83d\ude00":0.1}`,
	`{"a":1,"a":2}`, `{"b":{"y":1,"x":2},"a":[{"d":0,"c":-0.0}]}`, "\"\xff\xfe\"", `"\ud800"`, `"\udc00\ud800x"`,
	"{\"\xe9\":1,\"e\":2,\"\xc3\xa9\":3}", `{"\ufb33":1,"\ud83d\ude00":2,"\u20ac":3}`, ` [ 1 , 2.50 , -3e-7 , 1E400 ] `,
	`{"x":{"a":1,"a":1}}`, `[]`, `{}`, ` "" `, `[[],[{}],{"":""}]`, `{"a":"\"\\\/\b\f\n\r\t\u0000\u001f\u007f"}`,
	`123456789012345678901234567890`, `-0`, `0.1e1`, `{"a" :1 , "b":2}`, `tru`, `{"a":1`, `[1] [2]`, ``}

// TestCanonicalizeSameAsTokens compares the one-pass canonicalizer with
// encoding/json's tokenizer: the same output, or the same error.
func TestCanonicalizeSameAsTokens(t *testing.T) {
	for _, in := range sameAsTokensInputs {
		out, err := Canonicalize([]byte(in))
		slow, slowErr := canonicalizeTokens([]byte(in))
		if (err == nil) != (slowErr == nil) || err != nil && err.Error() != slowErr.Error() || string(out) != string(slow) {
			t.Errorf("%q: Canonicalize = %q, %v; the tokenizer's = %q, %v", in, out, err, slow, slowErr)
		}
	}
}

func FuzzCanonicalize(f *testing.F) {
	for _, s := range sameAsTokensInputs {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := Canonicalize(data)
		slow, slowErr := canonicalizeTokens(data)
		if (err == nil) != (slowErr == nil) || err != nil && err.Error() != slowErr.Error() || string(out) != string(slow) {
			t.Fatalf("%q: Canonicalize = %q, %v; the tokenizer's = %q, %v", data, out, err, slow, slowErr)
		}
		if err != nil {
			return
		}
		again, err := Canonicalize(out)
		if err != nil || string(again) != string(out) {
			t.Fatalf("canonical form is not a fixed point: %q -> %q (%v)", out, again, err)
		}
	})
}
