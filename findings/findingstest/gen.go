// Package findingstest generates findings bundles for tests of the
// streaming readers and writers: valid bundles of any size whose findings
// are deliberately not in Normalize's order, some without ids or stable
// ids (with repeated anchors, so occurrence numbers matter), some on
// removed lines, with severities in other cases, escapes, non-ASCII and
// HTML metacharacters, optionally an older version and the findings
// array before the header's members.
package findingstest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
)

// Options shape a generated bundle.
type Options struct {
	N    int
	Seed uint64
	// Version is the bundle's version ("" writes none: v1).
	Version string
	// FindingsFirst puts the findings array before the other members.
	FindingsFirst bool
	// VersionLast puts the version member last (the streaming decoder
	// then holds the bundle whole until it has seen it).
	VersionLast bool
	// Legacy writes v1 string evidence and impact (v1 only).
	Legacy bool
	// NoIDs leaves every id and stable id out.
	NoIDs bool
}

var (
	paths = []string{"src/main.go", "src/util.py", "web/app.ts", "lib/ä/ünïcode.rb", "a b/c#d?.go", "docs/<x>&y.md", "z.go", "src/main_test.go"}
	cats  = []string{"security", "correctness", "reliability", "performance", "maintainability", "testing", "style", "Custom Cat"}
	sevs  = []string{"low", "medium", "high", "critical", "HIGH", "Medium"}
	words = []string{"quote \" inside", "back\\slash", "tab\there", "new\nline", "unicode — ü ✓", "<script>alert(1)</script>", "[x](javascript:1)", "a & b", "\u2028sep", "plain words"}
)

// Generate returns the bundle's bytes.
func Generate(o Options) []byte {
	r := rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15))
	pick := func(s []string) string { return s[r.IntN(len(s))] }
	var fs []string
	for i := 0; i < o.N; i++ {
		f := map[string]any{}
		var keys []string
		set := func(k string, v any) { f[k] = v; keys = append(keys, k) }
		if !o.NoIDs && r.IntN(5) != 0 {
			set("id", fmt.Sprintf("%064x", r.Uint64()))
		}
		set("review_id", "rev-1")
		if !o.NoIDs && r.IntN(4) != 0 {
			set("stable_id", fmt.Sprintf("%032x", r.Uint64()))
		}
		if r.IntN(3) == 0 {
			set("rule_id", "rule."+pick(cats))
		}
		cat := pick(cats)
		sev := pick(sevs)
		if o.Version == "v1" || o.Version == "" {
			sev = strings.ToLower(sev)
		}
		set("category", cat)
		set("severity", sev)
		set("confidence", float64(r.IntN(101))/100)
		path := pick(paths)
		start := 1 + r.IntN(30)
		end := start + r.IntN(4)
		set("path", path)
		set("start_line", start)
		set("end_line", end)
		switch o.Version {
		case "", "v1":
		default:
			cs := map[string]any{"path": path, "start_line": start, "end_line": end}
			if o.Version == "v4" || o.Version == "v3" && r.IntN(3) == 0 {
				cs["side"] = "RIGHT"
				if r.IntN(5) == 0 {
					cs["side"] = "LEFT"
				}
			}
			set("changed_span", cs)
		}
		title := "Finding " + pick(words)
		if r.IntN(4) == 0 {
			title = "Repeated title"
		}
		set("title", title)
		set("message", pick(words)+" "+pick(words))
		anchor := "anchor " + pick(words)
		if r.IntN(3) == 0 {
			anchor = "same anchor"
		}
		if o.Legacy {
			set("evidence", anchor)
			set("impact", "impact "+pick(words))
		} else {
			set("evidence", map[string]any{"anchor": anchor, "reasoning_basis": "rule x (code_reviewer): " + pick(words), "source": "diff"})
			set("impact", map[string]any{"summary": "impact " + pick(words), "scope": "local"})
		}
		if r.IntN(2) == 0 {
			set("suggestion", "do "+pick(words))
		}
		set("blocking", r.IntN(3) == 0)
		if r.IntN(2) == 0 {
			set("provider", "builtin")
		}
		fs = append(fs, object(keys, f))
	}
	findings := "[]"
	if len(fs) > 0 {
		findings = "[\n    " + strings.Join(fs, ",\n    ") + "\n  ]"
	}
	var members []string
	if o.Version != "" && !o.VersionLast {
		members = append(members, `"version": `+str(o.Version))
	}
	header := []string{
		`"review_id": "rev-1"`,
		`"base_sha": "1111111111111111111111111111111111111111"`,
		`"head_sha": "2222222222222222222222222222222222222222"`,
		`"repo": "github.com/example/repo"`,
		`"change_summary": ["first commit", "second <b>commit</b>"]`,
		`"files": [{"path": "src/main.go", "status": "modified"}, {"path": "web/app.ts", "status": "added"}, {"path": "z.go"}]`,
	}
	if o.Version == "v3" || o.Version == "v4" {
		header = append(header, `"gate": {"block_on": "high"}`)
	}
	if o.FindingsFirst {
		members = append(members, `"findings": `+findings)
		members = append(members, header...)
	} else {
		members = append(members, header...)
		members = append(members, `"findings": `+findings)
	}
	if o.Version != "" && o.VersionLast {
		members = append(members, `"version": `+str(o.Version))
	}
	return []byte("{\n  " + strings.Join(members, ",\n  ") + "\n}\n")
}

func object(keys []string, m map[string]any) string {
	parts := make([]string, len(keys))
	for i, k := range keys {
		v, _ := json.Marshal(m[k])
		parts[i] = str(k) + ": " + string(v)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func str(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
