package sarif

// The SARIF conversion as it was before the streaming writer (commit
// 6b05ecc), kept as the reference the streaming writers are compared
// with byte for byte.

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/findings/findingstest"
	"github.com/diffpalhq/diffpal/internal/textsafe"
)

func legacyConvert(b *findings.Bundle, tool Tool) *Log {
	b = legacyWithIDs(b)
	worst := map[string]findings.Severity{}
	for i := range b.Findings {
		f := &b.Findings[i]
		if cur, ok := worst[f.Category]; !ok || f.Severity.Rank() > cur.Rank() {
			worst[f.Category] = f.Severity
		}
	}
	cats := make([]string, 0, len(worst))
	for c := range worst {
		cats = append(cats, c)
	}
	slices.Sort(cats)
	index := make(map[string]int, len(cats))
	rules := make([]Rule, len(cats))
	for i, c := range cats {
		index[c] = i
		rules[i] = Rule{
			ID:                   c,
			Name:                 ruleName(textsafe.Visible(c)),
			ShortDescription:     Text{Text: "diffpal " + PlainText(c) + " finding"},
			DefaultConfiguration: Configuration{Level: Level(worst[c])},
			Properties:           RuleProperties{Category: c, SecuritySeverity: SecuritySeverity(worst[c]), Tags: []string{textsafe.Visible(c)}},
		}
	}
	results := make([]Result, 0, len(b.Findings))
	for i := range b.Findings {
		f := &b.Findings[i]
		r := Result{
			RuleID:    f.Category,
			RuleIndex: index[f.Category],
			Level:     Level(f.Severity),
			Message:   Text{Text: messageText(f)},
			Locations: []Location{{PhysicalLocation: PhysicalLocation{
				ArtifactLocation: ArtifactLocation{URI: PathURI(f.Path), URIBaseID: "%SRCROOT%"},
			}}},
			Properties: ResultProperties{
				ID: f.ID, StableID: f.StableID, Severity: string(f.Severity),
				Confidence: f.Confidence, Blocking: f.Blocking, Provider: f.Provider,
			},
		}
		if f.ChangedSpan != nil && f.ChangedSpan.Side == "LEFT" {
			r.Properties.RemovedLines = fmt.Sprintf("%d-%d", f.StartLine, f.EndLine)
			r.Message.Text = fmt.Sprintf("(removed lines %d-%d) %s", f.StartLine, f.EndLine, r.Message.Text)
		} else {
			r.Locations[0].PhysicalLocation.Region = &Region{StartLine: f.StartLine, EndLine: f.EndLine}
		}
		if f.StableID != "" {
			r.PartialFingerprints = map[string]string{FingerprintKey: f.StableID}
		}
		results = append(results, r)
	}
	return &Log{
		Schema:  SchemaURI,
		Version: "2.1.0",
		Runs: []Run{{
			Tool: ToolComponent{Driver: Driver{
				Name: tool.Name, Version: tool.Version, SemanticVer: semver(tool.Version),
				InformationURI: tool.InformationURI, Rules: rules,
			}},
			Results: results,
		}},
	}
}

// withIDs returns b when every finding has an id and a stable id, else a
// copy (sharing everything but the findings slice) with the missing ones
// computed.
func legacyWithIDs(b *findings.Bundle) *findings.Bundle {
	for i := range b.Findings {
		if b.Findings[i].ID == "" || b.Findings[i].StableID == "" {
			c := *b
			c.Findings = slices.Clone(b.Findings)
			findings.FillIDs(&c, "")
			return &c
		}
	}
	return b
}

// legacyCases are the bundles compared: this package's testdata and
// generated bundles of every shape (unsorted, without ids, older
// versions, findings before the header).
func legacyCases(t *testing.T) map[string][]byte {
	t.Helper()
	cases := map[string][]byte{}
	files, _ := filepath.Glob("testdata/*.json")
	more, _ := filepath.Glob("../../../findings/testdata/*/*.json")
	for _, f := range append(files, more...) {
		if filepath.Base(f) == "sarif-schema-2.1.0.json" {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cases[f] = data
	}
	for _, v := range []string{"", "v2", "v3", "v4"} {
		for _, o := range []findingstest.Options{{N: 0}, {N: 1}, {N: 400, Seed: 3}, {N: 200, Seed: 4, NoIDs: true}, {N: 200, Seed: 5, FindingsFirst: true}, {N: 90, Seed: 6, FindingsFirst: true, VersionLast: true}} {
			o.Version = v
			cases[fmt.Sprintf("gen-%+v", o)] = findingstest.Generate(o)
		}
	}
	return cases
}

// TestStreamingSameBytes: Write (review's in-memory path) and WriteFile
// (diffpal sarif's and render's streaming path) write exactly the bytes
// the in-memory conversion wrote before them.
func TestStreamingSameBytes(t *testing.T) {
	n := 0
	for name, data := range legacyCases(t) {
		b, _, problems, err := findings.Decode(data, findings.DecodeOptions{})
		if err != nil || len(problems) > 0 {
			continue
		}
		n++
		var want, mem, stream bytes.Buffer
		if err := Encode(&want, legacyConvert(b, testTool)); err != nil {
			t.Fatal(err)
		}
		if err := Encode(&mem, Convert(b, testTool)); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(mem.Bytes(), want.Bytes()) {
			t.Errorf("%s: Convert differs from the legacy conversion", name)
		}
		mem.Reset()
		if err := Write(&mem, b, testTool); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(mem.Bytes(), want.Bytes()) {
			t.Errorf("%s: Write differs:\n%s\nwant:\n%s", name, mem.Bytes(), want.Bytes())
		}
		p := filepath.Join(t.TempDir(), "b.json")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		r, size, closeF, err := findings.OpenFile(p, 0)
		if err != nil {
			t.Fatal(err)
		}
		var rs Rules
		bf, _, err := findings.ScanFile(r, size, 0, rs.Add)
		if err != nil {
			t.Fatal(err)
		}
		if err := WriteFile(&stream, bf, &rs, testTool); err != nil {
			t.Fatal(err)
		}
		closeF()
		if !bytes.Equal(stream.Bytes(), want.Bytes()) {
			t.Errorf("%s: WriteFile differs:\n%s\nwant:\n%s", name, stream.Bytes(), want.Bytes())
		}
	}
	if n < 20 {
		t.Fatalf("only %d valid bundles compared", n)
	}
}
