package findings

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// caseBundle is a valid bundle of version v whose severities are written
// in other letter cases ("HIGH", "Medium", "CriTical") and whose
// gate.block_on is "High". The findings array comes last, so warnings are
// expected in the order gate, then findings.
func caseBundle(t *testing.T, v string) []byte {
	t.Helper()
	side := ""
	if v == V4 {
		side = `,"side":"RIGHT"`
	}
	var fs []string
	for i, sev := range []string{"HIGH", "Medium", "low", "CriTical"} {
		fs = append(fs, fmt.Sprintf(`{"category":"security","severity":%q,"confidence":0.9,"path":"a.go","start_line":%d,"end_line":%d,`+
			`"changed_span":{"path":"a.go","start_line":%d,"end_line":%d%s},"title":"t","message":"m",`+
			`"evidence":{"anchor":"a%d","reasoning_basis":"r","source":"s"},"impact":{"summary":"s","scope":"c"},"blocking":%v}`,
			sev, i+1, i+1, i+1, i+1, side, i, i == 0))
	}
	return []byte(`{"version":"` + v + `","review_id":"r","base_sha":"a","head_sha":"b","gate":{"block_on":"High"},"findings":[` + strings.Join(fs, ",") + `]}`)
}

var wantCaseWarnings = []string{
	`/gate/block_on: "High" is not lower-case; read as "high"`,
	`/findings/0/severity: "HIGH" is not lower-case; read as "high"`,
	`/findings/1/severity: "Medium" is not lower-case; read as "medium"`,
	`/findings/3/severity: "CriTical" is not lower-case; read as "critical"`,
}

func checkWarnings(t *testing.T, got []Problem) {
	t.Helper()
	if len(got) != len(wantCaseWarnings) {
		t.Fatalf("warnings = %v, want %d: %v", got, len(wantCaseWarnings), wantCaseWarnings)
	}
	for i, w := range wantCaseWarnings {
		if !strings.HasPrefix(got[i].String(), w) {
			t.Errorf("warning %d = %q, want prefix %q", i, got[i], w)
		}
	}
}

func severitiesOf(fs []Finding) []Severity {
	var out []Severity
	for _, f := range fs {
		out = append(out, f.Severity)
	}
	return out
}

var wantCanonical = []Severity{High, Medium, Low, Critical}

// TestSeverityCaseIsAWarning: a severity that is not lower-case is read,
// lower-cased and reported as a warning by every read path (Decode
// retaining and streaming, Parse, Read, ReadFile, Gate) in every version,
// and the bundle is valid. Today's code reports it as a problem.
func TestSeverityCaseIsAWarning(t *testing.T) {
	refs := referenceValidators(t)
	for _, v := range []string{V1, V2, V3, V4} {
		t.Run(v, func(t *testing.T) {
			data := caseBundle(t, v)

			b, info, problems, err := Decode(data, DecodeOptions{})
			if err != nil || len(problems) > 0 {
				t.Fatalf("Decode: err %v, problems:\n%s", err, problemList(problems))
			}
			checkWarnings(t, info.Warnings)
			if got := severitiesOf(b.Findings); !slices.Equal(got, wantCanonical) {
				t.Errorf("severities = %v, want %v", got, wantCanonical)
			}
			if b.Gate == nil || b.Gate.BlockOn != High {
				t.Errorf("gate = %+v, want block_on high", b.Gate)
			}

			var streamed []Severity
			_, sinfo, sp, err := Decode(data, DecodeOptions{OnFinding: func(f *Finding, valid bool) {
				if !valid {
					t.Errorf("streamed finding %s marked invalid", f.Severity)
				}
				streamed = append(streamed, f.Severity)
			}})
			if err != nil || len(sp) > 0 || !slices.Equal(streamed, wantCanonical) {
				t.Errorf("streaming Decode: err %v, problems %v, severities %v", err, sp, streamed)
			}
			if !reflect.DeepEqual(sinfo.Warnings, info.Warnings) {
				t.Errorf("streaming warnings %v, retaining %v", sinfo.Warnings, info.Warnings)
			}

			file := filepath.Join(t.TempDir(), "findings.json")
			if err := os.WriteFile(file, data, 0o644); err != nil {
				t.Fatal(err)
			}
			readers := map[string]func() (*Bundle, ReadInfo, error){
				"Parse":    func() (*Bundle, ReadInfo, error) { return Parse(data) },
				"Read":     func() (*Bundle, ReadInfo, error) { return Read(bytes.NewReader(data)) },
				"ReadFile": func() (*Bundle, ReadInfo, error) { return ReadFile(file) },
			}
			for name, read := range readers {
				rb, ri, err := read()
				if err != nil {
					t.Errorf("%s: %v", name, err)
					continue
				}
				if !reflect.DeepEqual(ri.Warnings, info.Warnings) {
					t.Errorf("%s warnings = %v", name, ri.Warnings)
				}
				if got := severitiesOf(rb.Findings); !slices.Equal(got, wantCanonical) {
					t.Errorf("%s severities = %v", name, got)
				}
			}

			// Gate with the stored flags: one stored blocking finding,
			// counted under its lower-case severity.
			res, ginfo, gp, err := Gate(data, nil)
			if err != nil || len(gp) > 0 {
				t.Fatalf("Gate: err %v, problems %v", err, gp)
			}
			checkWarnings(t, ginfo.Warnings)
			for _, s := range Severities {
				if res.BySeverity[s] != 1 {
					t.Errorf("Gate by_severity = %v, want one of each", res.BySeverity)
					break
				}
			}
			if res.Blocking != 1 || res.BlockingBySeverity[High] != 1 {
				t.Errorf("Gate stored = %+v, want the HIGH finding blocking", res)
			}
			// Recomputed: "HIGH" and "CriTical" rank as high and critical.
			res, _, _, _ = Gate(data, &Policy{BlockOn: High})
			if res.Blocking != 2 || res.BlockingBySeverity[High] != 1 || res.BlockingBySeverity[Critical] != 1 {
				t.Errorf("Gate --block-on high = %+v, want high and critical blocking", res)
			}

			// Rewriting removes the warnings.
			if err := Normalize(b, Options{}); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := Encode(&out, b); err != nil {
				t.Fatal(err)
			}
			if _, ri, err := Parse(out.Bytes()); err != nil || len(ri.Warnings) > 0 {
				t.Errorf("re-read of the normalized bundle: err %v, warnings %v", err, ri.Warnings)
			}

			// The schema (canonical form) accepts the document as read.
			checkAgainstReference(t, refs, data)
		})
	}
}

// TestSeverityCaseOnlyCase: only letter case is forgiven; every other
// departure from the enum stays a problem, and no non-ASCII letter folds
// into a severity.
func TestSeverityCaseOnlyCase(t *testing.T) {
	for _, sev := range []string{"severe", " high", "high ", "HIGH\n", "h\u0130gh", "\u212Aritical", "LOWER", ""} {
		b := validV3()
		f0(b)["severity"] = sev
		_, info, problems, err := Decode(mustJSON(t, b), DecodeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(problems) != 1 || problems[0].Pointer != "/findings/0/severity" {
			t.Errorf("severity %q: problems %v, want one at /findings/0/severity", sev, problems)
		}
		if len(info.Warnings) > 0 {
			t.Errorf("severity %q: warnings %v, want none", sev, info.Warnings)
		}
	}
	b := validV3()
	b["gate"] = map[string]any{"block_on": "Severe"}
	_, _, problems, _ := Decode(mustJSON(t, b), DecodeOptions{})
	checkProblems(t, problems, []string{`/gate/block_on: must be one of low, medium, high, critical, got "Severe"`})
	// A canonical bundle has no warnings.
	if _, info, err := Parse(mustJSON(t, validV3())); err != nil || info.Warnings != nil {
		t.Errorf("canonical bundle: err %v, warnings %v", err, info.Warnings)
	}
}

// TestValidateGoBuiltSeverityCaseIsStrict: writers must produce the
// canonical form, so Validate of a bundle built in Go still refuses "HIGH"
// (Normalize lower-cases it before validating).
func TestValidateGoBuiltSeverityCaseIsStrict(t *testing.T) {
	mk := func() *Bundle {
		return &Bundle{Version: V3, ReviewID: "r", Findings: []Finding{{
			Category: "bug", Severity: "HIGH", Confidence: 0.5, Path: "a.go", StartLine: 1, EndLine: 1,
			ChangedSpan: &Span{Path: "a.go", StartLine: 1, EndLine: 1}, Title: "t", Message: "m",
			Evidence: &Evidence{Anchor: "a", ReasoningBasis: "r", Source: "s"}, Impact: &Impact{Summary: "s", Scope: "s"},
		}}}
	}
	checkProblems(t, Validate(mk()), []string{`/findings/0/severity: must be one of low, medium, high, critical, got "HIGH" (lower-case required`})
	b := mk()
	if err := Normalize(b, Options{}); err != nil || b.Findings[0].Severity != High {
		t.Errorf("Normalize: %v, severity %q", err, b.Findings[0].Severity)
	}
}

// idFixture is a bundle as another producer writes it: no id, no
// stable_id, findings out of order, two occurrences of one anchor, a
// severity in upper case, one finding that already carries both ids, and
// a v1-style finding without changed_span. Provider tags each finding.
const idFixture = `{"version":"v1","review_id":"rev","base_sha":"a","head_sha":"h","findings":[
{"provider":"p0","category":"Security","severity":"low","confidence":0.9,"path":"z.go","start_line":9,"end_line":9,"title":"t","message":"m","evidence":{"anchor":"exec(x)","reasoning_basis":"r","source":"s"},"impact":{"summary":"s","scope":"c"}},
{"provider":"p1","category":"security","severity":"HIGH","confidence":0.9,"path":"a.go","start_line":5,"end_line":6,"changed_span":{"path":"a.go","start_line":5,"end_line":6},"title":"t","message":"m","evidence":{"anchor":"exec( x )","reasoning_basis":"r","source":"s"},"impact":{"summary":"s","scope":"c"}},
{"provider":"p2","category":"security","severity":"high","confidence":0.9,"path":"a.go","start_line":1,"end_line":1,"title":"t","message":"m","evidence":{"anchor":"exec(x)","reasoning_basis":"r","source":"s"},"impact":{"summary":"s","scope":"c"}},
{"provider":"p3","id":"kept-id","stable_id":"kept-stable","category":"security","severity":"high","confidence":0.9,"path":"a.go","start_line":2,"end_line":2,"title":"t","message":"m","evidence":{"anchor":"exec(x)","reasoning_basis":"r","source":"s"},"impact":{"summary":"s","scope":"c"}},
{"provider":"p4","category":"security","severity":"medium","confidence":0.9,"path":"a.go","start_line":5,"end_line":6,"title":"no anchor","message":"m","evidence":"legacy text","impact":"legacy"},
{"provider":"p5","category":"security","severity":"low","confidence":0.9,"path":"a.go","start_line":5,"end_line":6,"changed_span":{"path":"a.go","start_line":5,"end_line":6,"side":"LEFT"},"title":"t","message":"m","evidence":{"anchor":"exec(x)","reasoning_basis":"r","source":"s"},"impact":{"summary":"s","scope":"c"}}
]}`

func parseFixture(t *testing.T) *Bundle {
	t.Helper()
	b, _, err := Parse([]byte(idFixture))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFillIDsMatchesNormalize: FillIDs computes for each finding without
// ids exactly the id and stable id Normalize (and so `diffpal upgrade`)
// gives it, keeps ids that are there, keeps the order and every other
// field, and is idempotent.
func TestFillIDsMatchesNormalize(t *testing.T) {
	for _, repo := range []string{"", "acme/shop"} {
		filled := parseFixture(t)
		before, _ := json.Marshal(filled)
		FillIDs(filled, repo)

		norm := parseFixture(t)
		norm.Version = V3
		if err := Normalize(norm, Options{Repo: repo}); err != nil {
			t.Fatal(err)
		}
		want := map[string]Finding{}
		for _, f := range norm.Findings {
			want[f.Provider] = f
		}
		stable := map[string]bool{}
		for i, f := range filled.Findings {
			if f.Provider != fmt.Sprintf("p%d", i) {
				t.Fatalf("repo %q: FillIDs reordered the findings: %d is %s", repo, i, f.Provider)
			}
			w := want[f.Provider]
			if f.Provider == "p3" {
				if f.ID != "kept-id" || f.StableID != "kept-stable" {
					t.Errorf("repo %q: existing ids replaced: %q %q", repo, f.ID, f.StableID)
				}
				continue
			}
			if f.ID != w.ID || f.StableID != w.StableID || len(f.ID) != 64 || len(f.StableID) != 32 {
				t.Errorf("repo %q, %s: FillIDs id %q stable %q, Normalize id %q stable %q", repo, f.Provider, f.ID, f.StableID, w.ID, w.StableID)
			}
			if stable[f.StableID] {
				t.Errorf("repo %q, %s: stable id %s given twice", repo, f.Provider, f.StableID)
			}
			stable[f.StableID] = true
		}
		if filled.FingerprintVersion != FingerprintVersion {
			t.Errorf("fingerprint_version = %q", filled.FingerprintVersion)
		}

		// Nothing but the ids changed.
		var a, b map[string]any
		after, _ := json.Marshal(filled)
		json.Unmarshal(before, &a)
		json.Unmarshal(after, &b)
		delete(b, "fingerprint_version")
		for _, f := range b["findings"].([]any) {
			if m := f.(map[string]any); m["provider"] != "p3" {
				m["id"] = ""
				delete(m, "stable_id")
			}
		}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("repo %q: FillIDs changed more than the ids:\n%s\n%s", repo, before, after)
		}
		// What the decoder recorded for validation is untouched.
		if ps := Validate(filled); len(ps) > 0 {
			t.Errorf("repo %q: Validate after FillIDs:\n%s", repo, problemList(ps))
		}

		again, _ := json.Marshal(filled)
		FillIDs(filled, repo)
		if twice, _ := json.Marshal(filled); !bytes.Equal(again, twice) {
			t.Errorf("repo %q: FillIDs is not idempotent", repo)
		}
	}
	// A bundle with every id is left alone.
	b := &Bundle{Findings: []Finding{{ID: "i", StableID: "s"}}}
	FillIDs(b, "")
	if b.FingerprintVersion != "" || b.Findings[0].ID != "i" {
		t.Errorf("complete bundle changed: %+v", b)
	}
}
