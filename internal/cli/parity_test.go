package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The seed's consumer examples (findings-schema.txt). diffpal gate must give
// the same answer as the first on every valid bundle, and its --json report
// the same high+critical count as the second.
const (
	jqGate      = `[.findings[] | select(.blocking == true)] | length == 0`
	jqHighCrit  = `[.findings[] | select(.severity == "high" or .severity == "critical")] | length`
	jqBlockings = `[.findings[] | select(.blocking == true)] | length`
	// jqHighCritAnyCase is the seed's count read as DiffPal's reader reads
	// severities, case-insensitively: the seed's own query counts "HIGH"
	// as neither high nor critical.
	jqHighCritAnyCase = `[.findings[] | select(.severity | ascii_downcase | . == "high" or . == "critical")] | length`
)

// pf builds one finding as JSON-ready data. blocking is true, false or nil
// (no blocking field at all).
func pf(path, sev string, line int, blocking any) map[string]any {
	f := map[string]any{
		"category":   "security",
		"severity":   sev,
		"confidence": 0.9,
		"path":       path,
		"start_line": line,
		"end_line":   line + 2,
		"changed_span": map[string]any{
			"path": path, "start_line": line, "end_line": line + 2,
		},
		"title":    "Query built from request input",
		"message":  "The handler interpolates the id into SQL. Use a parameter.",
		"evidence": map[string]any{"anchor": "db.Query(fmt.Sprintf(...))", "reasoning_basis": "unsanitized input reaches the sink", "source": "changed_line"},
		"impact":   map[string]any{"summary": "data exposure", "scope": "request handling path"},
	}
	if blocking != nil {
		f["blocking"] = blocking
	}
	return f
}

func pbundle(version string, fs ...map[string]any) map[string]any {
	b := map[string]any{
		"review_id": "rev-parity",
		"base_sha":  "1111111111111111111111111111111111111111",
		"head_sha":  "2222222222222222222222222222222222222222",
		"findings":  fs,
	}
	if fs == nil {
		b["findings"] = []any{}
	}
	if version != "" {
		b["version"] = version
	}
	return b
}

// with applies changes to a finding and returns it.
func with(f map[string]any, kv ...any) map[string]any {
	for i := 0; i < len(kv); i += 2 {
		k := kv[i].(string)
		if kv[i+1] == nil {
			delete(f, k)
		} else {
			f[k] = kv[i+1]
		}
	}
	return f
}

func mixed(n int, withBlocking bool) map[string]any {
	sevs := []string{"low", "medium", "high", "critical", "medium", "low", "high"}
	paths := []string{"cmd/main.go", "internal/auth/session.go", "web/src/App.tsx", "docs/über/naïve.md", "src/日本語/main.go"}
	fs := make([]map[string]any, 0, n)
	for i := range n {
		var blocking any
		switch {
		case i%11 == 3:
			blocking = nil // no field
		case withBlocking && i%97 == 13:
			blocking = true
		default:
			blocking = false
		}
		f := pf(paths[i%len(paths)], sevs[i%len(sevs)], 1+i*3, blocking)
		f["confidence"] = float64(i%101) / 100
		f["message"] = fmt.Sprintf("Finding %d: \"quoted\", tab\there, back\\slash, 東京 🚀.\nSecond line.", i)
		if i%5 == 0 {
			f["suggestion"] = "Use a parameterized query."
		}
		fs = append(fs, f)
	}
	return pbundle("v3", fs...)
}

type parityCase struct {
	name    string
	bundle  any // marshaled to JSON, or a string used verbatim
	blocked bool
	// warnings is the number of severities that are not lower-case:
	// readable, reported by validate as warnings (errors with --strict).
	warnings int
}

func parityCases() []parityCase {
	return []parityCase{
		{"empty findings", pbundle("v3"), false, 0},
		{"all non-blocking", pbundle("v3",
			pf("a.go", "low", 1, false), pf("b.go", "medium", 5, false),
			pf("c.go", "high", 9, false), pf("d.go", "critical", 12, false)), false, 0},
		{"one blocking", pbundle("v3",
			pf("a.go", "low", 1, false), pf("b.go", "high", 5, true), pf("c.go", "medium", 9, false)), true, 0},
		{"stored true on low is trusted", pbundle("v3",
			pf("a.go", "low", 1, true), pf("b.go", "medium", 4, false)), true, 0},
		{"stored false on critical is trusted", pbundle("v3",
			pf("a.go", "critical", 1, false), pf("b.go", "high", 4, false)), false, 0},
		{"missing blocking fields", pbundle("v3",
			pf("a.go", "critical", 1, nil), pf("b.go", "high", 4, nil), pf("c.go", "low", 7, nil)), false, 0},
		{"v1 legacy strings", pbundle("v1",
			with(pf("a.go", "high", 1, true), "changed_span", nil, "evidence", "calls exec with request input", "impact", "remote code execution"),
			with(pf("b.go", "low", 3, false), "changed_span", nil, "evidence", "legacy evidence", "impact", "minor")), true, 0},
		{"v1 without version field", pbundle("",
			with(pf("a.go", "critical", 1, false), "changed_span", nil, "evidence", "legacy", "impact", "legacy impact"),
			with(pf("b.go", "high", 2, nil), "changed_span", nil)), false, 0},
		{"v2", pbundle("v2",
			pf("a.go", "critical", 1, true), pf("b.go", "medium", 2, false)), true, 0},
		{"v4 with side", pbundle("v4",
			with(pf("a.go", "high", 1, true), "changed_span", map[string]any{"path": "a.go", "start_line": 1, "end_line": 3, "side": "LEFT"}),
			with(pf("b.go", "critical", 2, false), "changed_span", map[string]any{"path": "b.go", "start_line": 2, "end_line": 4, "side": "RIGHT"})), true, 0},
		{"unicode paths", pbundle("v3",
			with(pf("src/日本語/ファイル.go", "high", 1, true), "message", "Überprüfung fehlgeschlagen: \"naïve\" café — 🚀\u2028done"),
			pf("docs/über/naïve résumé.md", "medium", 2, false),
			pf("emoji/🚀/Ωmega.ts", "critical", 3, false)), true, 0},
		{"500 findings mixed", mixed(500, true), true, 0},
		{"500 findings none blocking", mixed(500, false), false, 0},
		{"blocking only inside unknown fields", `{"version":"v3","review_id":"r","base_sha":"","head_sha":"",
			"x-extra":{"blocking":true,"findings":[{"blocking":true}]},
			"findings":[{"category":"c","severity":"high","confidence":1,"path":"a.go","start_line":1,"end_line":1,
			"changed_span":{"path":"a.go","start_line":1,"end_line":1},"title":"t","message":"m",
			"evidence":{"anchor":"a","reasoning_basis":"r","source":"s"},"impact":{"summary":"s","scope":"s"},
			"blocking":false,"meta":{"blocking":true}}]}`, false, 0},
		{"severities not lower-case, one blocking", pbundle("v3",
			pf("a.go", "Medium", 1, false), pf("b.go", "HIGH", 5, true), pf("c.go", "Critical", 9, false), pf("d.go", "low", 12, false)), true, 3},
		{"severities not lower-case, none blocking", pbundle("v2",
			pf("a.go", "HIGH", 1, false), pf("b.go", "LOW", 5, nil)), false, 2},
		{"severities not lower-case, v1 and gate block_on", func() map[string]any {
			b := pbundle("v1", with(pf("a.go", "CRITICAL", 1, true), "changed_span", nil, "evidence", "legacy", "impact", "legacy impact"))
			b["gate"] = map[string]any{"block_on": "High"}
			return b
		}(), true, 2},
	}
}

// requireJQ fails (never skips) when jq is missing: parity with the seed's
// jq commands is the point of this test.
func requireJQ(t *testing.T) string {
	t.Helper()
	jq, err := exec.LookPath("jq")
	if err != nil {
		t.Fatalf("jq is not on PATH, so parity with the seed's jq gate cannot be checked: run scripts/test (it installs jq) or install jq (apt-get install jq): %v", err)
	}
	return jq
}

// runJQ returns jq's exit code and trimmed stdout.
func runJQ(t *testing.T, jq string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), jq, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, strings.TrimSpace(out.String())
	case errors.As(err, &ee):
		return ee.ExitCode(), strings.TrimSpace(out.String())
	}
	t.Fatalf("jq %q: %v (stderr: %s)", args, err, errOut.String())
	return 0, ""
}

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = Run(t.Context(), args, &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	return code, out.String(), errOut.String()
}

func writeBundle(t *testing.T, name string, bundle any) string {
	t.Helper()
	var data []byte
	if s, ok := bundle.(string); ok {
		data = []byte(s)
	} else {
		var err error
		if data, err = json.MarshalIndent(bundle, "", "  "); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

func TestGateParityWithSeedJQ(t *testing.T) {
	jq := requireJQ(t)
	for i, tc := range parityCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			file := writeBundle(t, fmt.Sprintf("bundle-%02d.json", i), tc.bundle)

			// The fixtures are valid bundles: parity is only promised there.
			code, out, errOut := runCLI(t, "validate", file)
			if code != ExitOK {
				t.Fatalf("fixture is not a valid bundle (validate exit %d):\n%s%s", code, out, errOut)
			}
			if got := strings.Count(out, ": warning: "); got != tc.warnings {
				t.Errorf("validate printed %d warnings, want %d:\n%s", got, tc.warnings, out)
			}
			strictCode, _, _ := runCLI(t, "validate", "--strict", file)
			if want := map[bool]int{false: ExitOK, true: ExitUsage}[tc.warnings > 0]; strictCode != want {
				t.Errorf("validate --strict exit %d, want %d", strictCode, want)
			}

			jqCode, jqOut := runJQ(t, jq, "-e", jqGate, file)
			if jqCode != 0 && jqCode != 1 {
				t.Fatalf("jq -e %q exited %d (output %q); want 0 or 1", jqGate, jqCode, jqOut)
			}
			hcQuery := jqHighCrit
			if tc.warnings > 0 {
				hcQuery = jqHighCritAnyCase
			}
			_, hcOut := runJQ(t, jq, hcQuery, file)
			highCrit, err := strconv.Atoi(hcOut)
			if err != nil {
				t.Fatalf("jq %q printed %q, not a number", hcQuery, hcOut)
			}
			_, nbOut := runJQ(t, jq, jqBlockings, file)
			nBlocking, err := strconv.Atoi(nbOut)
			if err != nil {
				t.Fatalf("jq %q printed %q, not a number", jqBlockings, nbOut)
			}

			gateCode, _, gateErr := runCLI(t, "gate", file)
			switch {
			case jqCode == 0 && gateCode != ExitOK:
				t.Errorf("jq -e exit 0 (nothing blocks) but `diffpal gate` exit %d; stderr:\n%s", gateCode, gateErr)
			case jqCode == 1 && gateCode != ExitGateBlocked:
				t.Errorf("jq -e exit 1 (something blocks) but `diffpal gate` exit %d; stderr:\n%s", gateCode, gateErr)
			}
			if wantJQ := map[bool]int{false: 0, true: 1}[tc.blocked]; jqCode != wantJQ {
				t.Errorf("fixture meant blocked=%v, but jq -e exited %d", tc.blocked, jqCode)
			}

			jsonCode, jsonOut, jsonErr := runCLI(t, "gate", "--json", file)
			if jsonCode != gateCode {
				t.Errorf("`gate --json` exit %d, `gate` exit %d; stderr:\n%s", jsonCode, gateCode, jsonErr)
			}
			var rep struct {
				Blocked    bool           `json:"blocked"`
				Findings   int            `json:"findings"`
				Blocking   int            `json:"blocking"`
				BySeverity map[string]int `json:"by_severity"`
			}
			if err := json.Unmarshal([]byte(jsonOut), &rep); err != nil {
				t.Fatalf("`gate --json` printed no JSON report: %v\nstdout:\n%s\nstderr:\n%s", err, jsonOut, jsonErr)
			}
			if got := rep.BySeverity["high"] + rep.BySeverity["critical"]; got != highCrit {
				t.Errorf("--json by_severity high+critical = %d, jq %q = %d", got, hcQuery, highCrit)
			}
			if rep.Blocking != nBlocking {
				t.Errorf("--json blocking = %d, jq %q = %d", rep.Blocking, jqBlockings, nBlocking)
			}
			if rep.Blocked != (jqCode == 1) {
				t.Errorf("--json blocked = %v, jq -e exit %d", rep.Blocked, jqCode)
			}
		})
	}
}

// Where parity ends: bundles that break the schema. jq answers anyway (a
// null or string blocking is not == true); diffpal gate refuses with exit 2
// rather than pass a bundle it cannot trust.
func TestGateParityInvalidBundlesExit2(t *testing.T) {
	jq := requireJQ(t)
	cases := map[string]any{
		"blocking null":      pbundle("v3", pf("a.go", "high", 1, nil), with(pf("b.go", "low", 2, false), "blocking", json.RawMessage("null"))),
		"blocking as string": pbundle("v3", pf("a.go", "high", 1, "true")),
		// Letter case is forgiven (see parityCases); nothing else is.
		"severity padded":     pbundle("v3", pf("a.go", " high", 1, false)),
		"severity misspelled": pbundle("v3", pf("a.go", "HIGHH", 1, true)),
	}
	for name, bundle := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			file := writeBundle(t, "bundle.json", bundle)
			jqCode, _ := runJQ(t, jq, "-e", jqGate, file)
			code, _, errOut := runCLI(t, "gate", file)
			if code != ExitUsage {
				t.Errorf("`diffpal gate` on an invalid bundle exited %d, want %d (jq -e exited %d); stderr:\n%s", code, ExitUsage, jqCode, errOut)
			}
		})
	}
}
