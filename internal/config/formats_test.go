package config

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TestReviewFormats checks review.formats in the Go validation and in the
// published JSON Schema alike: names are well-formed, a path is
// repository-relative and inside the repository, a name is listed once.
// Whether a name is a known format is the output registry's to say.
func TestReviewFormats(t *testing.T) {
	c := jsonschema.NewCompiler()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(Schema()))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddResource("mem://config.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("mem://config.json")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		formats string
		valid   bool
		schema  bool // what the schema says, where it cannot say as much as Go
		want    string
	}{
		{`[json, session, markdown, sarif]`, true, true, ""},
		{`[sarif=reports/diffpal.sarif, markdown]`, true, true, ""},
		{`[html]`, true, true, ""}, // unknown names are the registry's to refuse
		{`[Sarif]`, false, false, "review.formats[0]: want a format name"},
		{`["=x.sarif"]`, false, false, "review.formats[0]: want a format name"},
		{`["sarif="]`, false, false, "review.formats[0]: sarif=: the path must be relative"},
		{`["sarif=/tmp/x.sarif"]`, false, false, "absolute path"},
		{`["sarif=../x.sarif"]`, false, true, `path contains ".."`},
		{`[sarif, "sarif=x.sarif"]`, false, true, "review.formats[1]: format sarif is listed twice"},
		{`["session=.git/config"]`, false, true, "review.formats[0]: session=.git/config: the path must not be inside .git"},
		{`["markdown=sub/.GIT/hooks/post-checkout"]`, false, true, "must not be inside .git"},
	}
	for _, tc := range cases {
		y := "version: v1\nreview:\n  formats: " + tc.formats + "\n"
		cfg, err := Parse([]byte(y))
		if (err == nil) != tc.valid {
			t.Errorf("%s: err = %v, want valid=%v", tc.formats, err, tc.valid)
			continue
		}
		if err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.formats, err, tc.want)
		}
		if err == nil && len(cfg.Review.Formats) == 0 {
			t.Errorf("%s: no formats parsed", tc.formats)
		}
		var v any
		if err := yaml.Unmarshal([]byte(y), &v); err != nil {
			t.Fatal(err)
		}
		data, _ := json.Marshal(v)
		inst, _ := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if schemaErr := sch.Validate(inst); (schemaErr == nil) != tc.schema {
			t.Errorf("%s: schema says %v, want valid=%v", tc.formats, schemaErr, tc.schema)
		}
	}
	// The starter config mentions the key (commented out).
	if !strings.Contains(Starter, "# formats: [json, session, markdown, sarif]") {
		t.Error("the starter config does not show review.formats")
	}
}
