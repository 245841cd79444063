package findings

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/quick"
)

var update = flag.Bool("update", false, "rewrite golden files")

// idReference is DiffPal's id recipe written the obvious way, with
// encoding/json, to pin the fast implementation to it.
func idReference(repo, head string, f *Finding) string {
	type input struct {
		Platform    string `json:"platform"`
		Repo        string `json:"repo"`
		ReviewID    string `json:"review_id"`
		HeadSHA     string `json:"head_sha"`
		Path        string `json:"path"`
		LineStart   int    `json:"line_start"`
		LineEnd     int    `json:"line_end"`
		Category    string `json:"category"`
		MessageNorm string `json:"message_norm"`
		Evidence    string `json:"evidence"`
		Side        string `json:"side,omitempty"`
	}
	side := ""
	if f.ChangedSpan != nil && f.ChangedSpan.Side == "LEFT" {
		side = "LEFT"
	}
	in := input{"diffpal", repo, f.ReviewID, head, strings.TrimSpace(f.Path), f.StartLine, f.EndLine,
		strings.ToLower(strings.TrimSpace(f.Category)), strings.ToLower(strings.TrimSpace(f.Message)),
		sha256hex(f.Evidence.Text()), side}
	data, _ := json.Marshal(in)
	return sha256hex(string(data))
}

func TestIDMatchesDiffPalRecipe(t *testing.T) {
	f := &Finding{
		ReviewID: "local", Category: " Security ", Path: "cmd/x <y>.go", StartLine: 3, EndLine: 4,
		Message: "  Uses <exec> & \"sh\"\u2028 ", Evidence: &Evidence{Anchor: " a ", ReasoningBasis: "", Source: "changed_line"},
	}
	if got, want := ID("local", "abc", f), idReference("local", "abc", f); got != want {
		t.Fatalf("ID = %s, want %s", got, want)
	}
	// A pinned vector: changing it breaks agreement with every bundle
	// already written, by DiffPal or by us.
	if got, want := ID("local", "abc", f), "8eb366450e10c5266e8e03179064d687306e6441fbd56693a396f933dee570e6"; got != want {
		t.Errorf("pinned id vector = %s, want %s", got, want)
	}
	left := *f
	left.ChangedSpan = &Span{Path: f.Path, StartLine: 3, EndLine: 4, Side: "LEFT"}
	right := *f
	right.ChangedSpan = &Span{Path: f.Path, StartLine: 3, EndLine: 4, Side: "RIGHT"}
	if ID("local", "abc", &left) == ID("local", "abc", f) {
		t.Error("LEFT side must change the id")
	}
	if ID("local", "abc", &right) != ID("local", "abc", f) {
		t.Error("RIGHT side must keep the pre-v4 id")
	}
	if ID("local", "abc", &left) != idReference("local", "abc", &left) {
		t.Error("LEFT id differs from the reference recipe")
	}
}

func TestGoJSONStringMatchesEncodingJSON(t *testing.T) {
	check := func(s string) bool {
		want, _ := json.Marshal(s)
		return string(appendGoJSONString(nil, s)) == string(want)
	}
	for _, s := range []string{"", "plain", "<>&", "\u2028\u2029", "\x00\x1f\t\n\r\b\f", "\xff\xfe", "é漢字🙂", `"\`, "\x7f"} {
		if !check(s) {
			t.Errorf("mismatch for %q", s)
		}
	}
	if err := quick.Check(check, &quick.Config{MaxCount: 5000}); err != nil {
		t.Error(err)
	}
}

func TestStableID(t *testing.T) {
	a := StableID("Security", "a.go", "exec.Command( name )", 0)
	if len(a) != 32 {
		t.Fatalf("len = %d", len(a))
	}
	if b := StableID(" security", "a.go", "exec.Command(name)\r\n", 0); b != a {
		t.Error("white space and category case must not change the stable id")
	}
	for _, other := range []string{
		StableID("security", "b.go", "exec.Command(name)", 0),
		StableID("correctness", "a.go", "exec.Command(name)", 0),
		StableID("security", "a.go", "exec.Command(cmd)", 0),
		StableID("security", "a.go", "exec.Command(name)", 1),
	} {
		if other == a {
			t.Error("category, path, anchor and occurrence must each change the stable id")
		}
	}
}

func TestStableIDSurvivesLineShiftsAndPushes(t *testing.T) {
	mk := func(head string, shift int, msg string) *Bundle {
		return &Bundle{ReviewID: "r", HeadSHA: head, Findings: []Finding{
			{Category: "security", Severity: "high", Confidence: 1, Path: "a.go", StartLine: 10 + shift, EndLine: 10 + shift,
				Title: "t", Message: msg, Evidence: &Evidence{Anchor: "exec(x)", ReasoningBasis: "r", Source: "s"}, Impact: &Impact{Summary: "s", Scope: "s"}},
			{Category: "security", Severity: "high", Confidence: 1, Path: "a.go", StartLine: 30 + shift, EndLine: 30 + shift,
				Title: "t", Message: msg, Evidence: &Evidence{Anchor: "exec(x)", ReasoningBasis: "r", Source: "s"}, Impact: &Impact{Summary: "s", Scope: "s"}},
		}}
	}
	a, b := mk("h1", 0, "first wording"), mk("h2", 7, "other wording")
	for _, x := range []*Bundle{a, b} {
		if err := Normalize(x, Options{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range a.Findings {
		if a.Findings[i].StableID != b.Findings[i].StableID {
			t.Errorf("finding %d: stable id changed across push/shift", i)
		}
		if a.Findings[i].ID == b.Findings[i].ID {
			t.Errorf("finding %d: DiffPal id should change with head and lines", i)
		}
	}
	if a.Findings[0].StableID == a.Findings[1].StableID {
		t.Error("two occurrences of the same anchor need distinct stable ids")
	}
}

func TestNormalize(t *testing.T) {
	conf := 0.8
	b := &Bundle{ReviewID: "rev", HeadSHA: "h", Findings: []Finding{
		{Category: "b", Severity: "Medium", Confidence: 0.9, Path: "z.go", StartLine: 1, EndLine: 1, Title: "t", Message: "m",
			Evidence: &Evidence{Anchor: "a", ReasoningBasis: "r", Source: "s"}, Impact: &Impact{Summary: "s", Scope: "s"}},
		{Category: "a", Severity: " CRITICAL", Confidence: 0.5, ChangedSpan: &Span{Path: "a.go", StartLine: 5, EndLine: 6}, Title: "t", Message: "m",
			Evidence: &Evidence{Anchor: "a", ReasoningBasis: "r", Source: "s"}, Impact: &Impact{Summary: "s", Scope: "s"}},
		{Category: "c", Severity: "high", Confidence: 0.9, Path: "a.go", StartLine: 5, EndLine: 6, Title: "t", Message: "m", ReviewID: "own",
			Evidence: &Evidence{Anchor: "a", ReasoningBasis: "r", Source: "s"}, Impact: &Impact{Summary: "s", Scope: "s"}},
	}}
	if err := Normalize(b, Options{Policy: Policy{BlockOn: High, MinConfidence: &conf}}); err != nil {
		t.Fatal(err)
	}
	if b.Version != V3 {
		t.Errorf("version = %q, want v3 for new writes", b.Version)
	}
	got := []string{}
	for _, f := range b.Findings {
		got = append(got, f.Path+":"+string(f.Severity)+":"+f.ReviewID)
	}
	want := []string{"a.go:critical:rev", "a.go:high:own", "z.go:medium:rev"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("order/severity/review_id = %v, want %v", got, want)
	}
	f := b.Findings[0]
	if f.Path != "a.go" || f.StartLine != 5 || f.EndLine != 6 {
		t.Errorf("path/lines not back-filled from changed_span: %+v", f)
	}
	if cs := b.Findings[2].ChangedSpan; cs == nil || cs.Path != "z.go" || cs.StartLine != 1 {
		t.Errorf("changed_span not back-filled: %+v", cs)
	}
	// critical at 0.5 is under min_confidence 0.8; high at 0.9 blocks.
	if b.Findings[0].Blocking || !b.Findings[1].Blocking || b.Findings[2].Blocking {
		t.Errorf("blocking = %v %v %v, want false true false", b.Findings[0].Blocking, b.Findings[1].Blocking, b.Findings[2].Blocking)
	}
	if b.Gate == nil || b.Gate.BlockOn != High || *b.Gate.MinConfidence != 0.8 || b.FingerprintVersion != FingerprintVersion {
		t.Errorf("gate/fingerprint_version not recorded: %+v %q", b.Gate, b.FingerprintVersion)
	}
	// Idempotent: normalizing again changes nothing.
	var first, second bytes.Buffer
	Encode(&first, b)
	if err := Normalize(b, Options{Policy: Policy{BlockOn: High, MinConfidence: &conf}}); err != nil {
		t.Fatal(err)
	}
	Encode(&second, b)
	if first.String() != second.String() {
		t.Error("Normalize is not idempotent")
	}
	// An explicit version is kept.
	v2 := &Bundle{Version: V2, ReviewID: "r", Findings: []Finding{}}
	if err := Normalize(v2, Options{}); err != nil || v2.Version != V2 {
		t.Errorf("caller's version not kept: %q %v", v2.Version, err)
	}
	// Invalid results are refused with every problem.
	bad := &Bundle{ReviewID: "r", Findings: []Finding{{Category: "x"}}}
	if err := Normalize(bad, Options{}); err == nil {
		t.Error("Normalize accepted an invalid finding")
	} else if ps, ok := err.(Problems); !ok || len(ps) < 5 {
		t.Errorf("want all problems, got %v", err)
	}
	if err := Normalize(&Bundle{ReviewID: "r"}, Options{Policy: Policy{BlockOn: "severe"}}); err == nil {
		t.Error("invalid block_on accepted")
	}
}

func TestPolicyBlocks(t *testing.T) {
	c := 0.7
	cases := []struct {
		p    Policy
		sev  Severity
		conf float64
		want bool
	}{
		{Policy{}, High, 0, true},
		{Policy{}, Medium, 1, false},
		{Policy{BlockOn: Low}, Low, 0, true},
		{Policy{BlockOn: Critical}, High, 1, false},
		{Policy{BlockOn: Medium, MinConfidence: &c}, Critical, 0.69, false},
		{Policy{BlockOn: Medium, MinConfidence: &c}, Medium, 0.7, true},
		{Policy{}, "bogus", 1, false},
	}
	for _, tc := range cases {
		if got := tc.p.Blocks(&Finding{Severity: tc.sev, Confidence: tc.conf}); got != tc.want {
			t.Errorf("%+v blocks %s@%v = %v, want %v", tc.p, tc.sev, tc.conf, got, tc.want)
		}
	}
}

// TestUpgradeGolden reads each testdata/upgrade/*.in.json (v1, v2, v3, v4,
// no version), upgrades it to v3 as `diffpal upgrade` does, and compares
// with the .golden.json beside it (go test -run UpgradeGolden -update).
func TestUpgradeGolden(t *testing.T) {
	ins, _ := filepath.Glob("testdata/upgrade/*.in.json")
	if len(ins) == 0 {
		t.Fatal("no upgrade fixtures")
	}
	for _, in := range ins {
		t.Run(filepath.Base(in), func(t *testing.T) {
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			b, info, err := Parse(data)
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			wantVersion := strings.SplitN(filepath.Base(in), "-", 2)[0]
			if wantVersion == "none" {
				if info.Version != "" || info.Effective != V1 {
					t.Errorf("missing version read as %q/%q, want \"\"/v1", info.Version, info.Effective)
				}
			} else if info.Version != wantVersion {
				t.Errorf("original version reported as %q, want %q", info.Version, wantVersion)
			}
			b.Version = V3
			if err := Normalize(b, Options{}); err != nil {
				t.Fatalf("normalize: %v", err)
			}
			var out bytes.Buffer
			if err := Encode(&out, b); err != nil {
				t.Fatal(err)
			}
			golden := strings.TrimSuffix(in, ".in.json") + ".golden.json"
			if *update {
				os.WriteFile(golden, out.Bytes(), 0o644)
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update)", err)
			}
			if out.String() != string(want) {
				t.Errorf("upgrade output differs from %s (run with -update to accept):\n%s", golden, out.String())
			}
			// The upgraded bundle is valid v3 and round-trips unchanged.
			b2, info2, err := Parse(out.Bytes())
			if err != nil || info2.Version != V3 {
				t.Fatalf("upgraded bundle invalid: %v (%s)", err, info2.Version)
			}
			if err := Normalize(b2, Options{}); err != nil {
				t.Fatal(err)
			}
			var again bytes.Buffer
			Encode(&again, b2)
			if again.String() != out.String() {
				t.Error("upgraded bundle is not a fixed point of read+normalize")
			}
		})
	}
}
