package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/diffpalhq/diffpal/findings"
)

// caseBundle has severities that are not lower-case ("Medium", "HIGH",
// "Critical") and gate.block_on "High"; the HIGH finding is stored as
// blocking. DiffPal's reader accepts it, and so does the seed's jq gate.
func caseBundle() map[string]any {
	b := pbundle("v3",
		pf("a.go", "Medium", 1, false), pf("b.go", "HIGH", 5, true), pf("c.go", "Critical", 9, false))
	b["gate"] = map[string]any{"block_on": "High"}
	return b
}

// Item 1: validate, gate, sarif and upgrade work on a bundle whose
// severities are not lower-case; validate reports warnings (exit 0) and
// --strict makes them errors. Today every one of these exits 2.
func TestSeverityCaseBundleCommands(t *testing.T) {
	file := writeBundle(t, "findings.json", caseBundle())

	code, out, errOut := runCLI(t, "validate", file)
	if code != ExitOK {
		t.Fatalf("validate exit %d:\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		file + `: warning: /gate/block_on: "High" is not lower-case; read as "high"`,
		file + `: warning: /findings/0/severity: "Medium" is not lower-case; read as "medium"`,
		file + `: warning: /findings/1/severity: "HIGH" is not lower-case; read as "high"`,
		file + `: warning: /findings/2/severity: "Critical" is not lower-case; read as "critical"`,
		file + ": valid v3 bundle, 3 findings, 4 warnings\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("validate output lacks %q:\n%s", want, out)
		}
	}
	// -q keeps the warnings, drops the "valid" line.
	if _, out, _ := runCLI(t, "validate", "-q", file); strings.Count(out, ": warning: ") != 4 || strings.Contains(out, "valid v3") {
		t.Errorf("validate -q output:\n%s", out)
	}
	code, out, _ = runCLI(t, "validate", "--json", file)
	var rep ValidateReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != ExitOK || !rep.Valid ||
		len(rep.Files) != 1 || len(rep.Files[0].Warnings) != 4 || len(rep.Files[0].Problems) != 0 {
		t.Errorf("validate --json exit %d, %v:\n%s", code, err, out)
	}
	// --strict: warnings are errors.
	code, out, _ = runCLI(t, "validate", "--strict", file)
	if code != ExitUsage || !strings.Contains(out, file+`: /findings/1/severity: "HIGH" is not lower-case`) || strings.Contains(out, "warning:") {
		t.Errorf("validate --strict exit %d:\n%s", code, out)
	}
	code, out, _ = runCLI(t, "validate", "--strict", "--json", file)
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != ExitUsage || rep.Valid || len(rep.Files[0].Problems) != 4 {
		t.Errorf("validate --strict --json exit %d, %v:\n%s", code, err, out)
	}

	// gate: the stored flag blocks (as jq says), warnings on stderr.
	code, out, errOut = runCLI(t, "gate", "--json", file)
	if code != ExitGateBlocked || !strings.Contains(errOut, file+`: warning: /findings/1/severity: "HIGH"`) ||
		!strings.Contains(errOut, "gate: blocked blocking=1 critical=0 high=1 medium=0 low=0 findings=3 policy=stored") {
		t.Errorf("gate exit %d, stderr:\n%s", code, errOut)
	}
	var grep GateReport
	if err := json.Unmarshal([]byte(out), &grep); err != nil || len(grep.Warnings) != 4 || grep.BySeverity[findings.Critical] != 1 {
		t.Errorf("gate --json: %v\n%s", err, out)
	}
	// Recomputed: Medium blocks at --block-on medium.
	if code, _, errOut := runCLI(t, "gate", "--block-on", "medium", file); code != ExitGateBlocked ||
		!strings.Contains(errOut, "blocked blocking=3 critical=1 high=1 medium=1") {
		t.Errorf("gate --block-on medium exit %d:\n%s", code, errOut)
	}

	// sarif: levels from the lower-cased severities.
	code, out, errOut = runCLI(t, "sarif", "--input", file, "--out", "-")
	if code != ExitOK || !strings.Contains(errOut, ": warning: ") {
		t.Fatalf("sarif exit %d:\n%s", code, errOut)
	}
	var log struct {
		Runs []struct {
			Results []struct {
				Level      string `json:"level"`
				Properties struct {
					Severity string `json:"severity"`
				} `json:"properties"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &log); err != nil {
		t.Fatal(err)
	}
	var levels []string
	for _, r := range log.Runs[0].Results {
		levels = append(levels, r.Properties.Severity+"="+r.Level)
	}
	if got := strings.Join(levels, " "); got != "medium=warning high=error critical=error" {
		t.Errorf("sarif severities/levels = %s", got)
	}

	// upgrade rewrites them; the result has no warnings.
	up := filepath.Join(t.TempDir(), "up.json")
	if code, _, errOut := runCLI(t, "upgrade", file, "-o", up); code != ExitOK {
		t.Fatalf("upgrade exit %d:\n%s", code, errOut)
	}
	code, out, _ = runCLI(t, "validate", "--strict", up)
	if code != ExitOK || strings.Contains(out, "warning") {
		t.Errorf("upgraded bundle: validate --strict exit %d:\n%s", code, out)
	}
	data, _ := os.ReadFile(up)
	if regexp.MustCompile(`"(HIGH|Medium|Critical|High)"`).Match(data) {
		t.Errorf("upgrade kept a non-canonical severity:\n%s", data)
	}
}

// Item 2: `diffpal sarif` on the seed's minimal bundle (no id, stable_id
// or blocking) gives every result partialFingerprints.
func TestSarifSeedMinimalBundleFingerprints(t *testing.T) {
	data, err := os.ReadFile("../output/sarif/testdata/seed-minimal.txtar")
	if err != nil {
		t.Fatal(err)
	}
	_, bundle, ok := strings.Cut(string(data), "-- findings.json --\n")
	if !ok {
		t.Fatal("no findings.json in seed-minimal.txtar")
	}
	file := writeBundle(t, "seed.json", bundle)
	code, out, errOut := runCLI(t, "sarif", "--input", file, "--out", "-")
	if code != ExitOK {
		t.Fatalf("sarif exit %d:\n%s", code, errOut)
	}
	var log struct {
		Runs []struct {
			Results []struct {
				PartialFingerprints map[string]string `json:"partialFingerprints"`
				Properties          struct {
					ID       string `json:"id"`
					StableID string `json:"stable_id"`
				} `json:"properties"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &log); err != nil {
		t.Fatal(err)
	}
	results := log.Runs[0].Results
	if len(results) == 0 {
		t.Fatal("no results")
	}
	hex32, hex64 := regexp.MustCompile(`^[0-9a-f]{32}$`), regexp.MustCompile(`^[0-9a-f]{64}$`)
	for i, r := range results {
		fp := r.PartialFingerprints["diffpalStableId/v1"]
		if !hex32.MatchString(fp) || r.Properties.StableID != fp || !hex64.MatchString(r.Properties.ID) {
			t.Errorf("result %d: partialFingerprints %v, id %q, stable_id %q", i, r.PartialFingerprints, r.Properties.ID, r.Properties.StableID)
		}
	}
	// The same stable id `diffpal upgrade` writes.
	up := filepath.Join(t.TempDir(), "up.json")
	if code, _, errOut := runCLI(t, "upgrade", file, "-o", up); code != ExitOK {
		t.Fatalf("upgrade exit %d:\n%s", code, errOut)
	}
	b, _, err := findings.ReadFile(up)
	if err != nil {
		t.Fatal(err)
	}
	if b.Findings[0].StableID != results[0].PartialFingerprints["diffpalStableId/v1"] {
		t.Errorf("sarif fingerprint %q, upgrade's stable_id %q", results[0].PartialFingerprints["diffpalStableId/v1"], b.Findings[0].StableID)
	}
}

// Item 9: after `diffpal review -C REPO`, the README's CI lines work with
// -C: gate, sarif, validate and upgrade find REPO's bundle by default,
// resolve relative paths from REPO, and -C a directory inside the
// repository finds the bundle review wrote at its top level.
func TestBundleCommandsDashCAfterReview(t *testing.T) {
	repo := policyRepo(t, map[string]string{"sub/keep.txt": "x\n"})
	if code, out, errOut := runCLI(t, "review", "-C", repo.Dir); code != ExitOK {
		t.Fatalf("review exit %d\n%s%s", code, out, errOut)
	}
	art := filepath.Join(repo.Dir, ".artifacts/diffpal")
	bundle := filepath.Join(art, "findings.json")
	if _, err := os.Stat(bundle); err != nil {
		t.Fatal(err)
	}

	for _, dir := range []string{repo.Dir, filepath.Join(repo.Dir, "sub")} {
		code, _, errOut := runCLI(t, "gate", "-C", dir)
		if code != ExitGateBlocked || !strings.Contains(errOut, "gate: blocked") {
			t.Errorf("gate -C %s: exit %d\n%s", dir, code, errOut)
		}
		code, out, errOut := runCLI(t, "validate", "-C", dir)
		if code != ExitOK || !strings.Contains(out, bundle+": valid v3 bundle") {
			t.Errorf("validate -C %s: exit %d\n%s%s", dir, code, out, errOut)
		}
		os.Remove(filepath.Join(art, "diffpal.sarif"))
		code, out, errOut = runCLI(t, "sarif", "-C", dir)
		if code != ExitOK || !strings.Contains(out, "sarif="+filepath.Join(art, "diffpal.sarif")+" ") {
			t.Errorf("sarif -C %s: exit %d\n%s%s", dir, code, out, errOut)
		}
		if _, err := os.Stat(filepath.Join(art, "diffpal.sarif")); err != nil {
			t.Errorf("sarif -C %s did not write the repository's diffpal.sarif: %v", dir, err)
		}
	}

	// Relative paths are relative to -C, never to the caller.
	code, _, errOut := runCLI(t, "sarif", "-C", repo.Dir, "--input", ".artifacts/diffpal/findings.json", "--out", "out/x.sarif")
	if _, err := os.Stat(filepath.Join(repo.Dir, "out/x.sarif")); code != ExitOK || err != nil {
		t.Errorf("sarif -C with relative paths: exit %d, %v\n%s", code, err, errOut)
	}
	if code, _, errOut := runCLI(t, "gate", "-C", repo.Dir, ".artifacts/diffpal/findings.json"); code != ExitGateBlocked {
		t.Errorf("gate -C REPO FILE: exit %d\n%s", code, errOut)
	}
	code, _, errOut = runCLI(t, "upgrade", "-C", repo.Dir, ".artifacts/diffpal/findings.json", "-o", "up/findings.json")
	if _, err := os.Stat(filepath.Join(repo.Dir, "up/findings.json")); code != ExitOK || err != nil {
		t.Errorf("upgrade -C with relative paths: exit %d, %v\n%s", code, err, errOut)
	}
	if _, err := os.Stat("up"); err == nil {
		t.Error("upgrade -C wrote into the caller's directory")
	}

	// A -C that is not a directory is a usage error.
	for _, cmd := range []string{"gate", "validate", "sarif"} {
		code, _, errOut := runCLI(t, cmd, "-C", filepath.Join(repo.Dir, "nowhere"))
		if code != ExitUsage || !strings.Contains(errOut, "nowhere: no such directory") {
			t.Errorf("%s -C nowhere: exit %d\n%s", cmd, code, errOut)
		}
	}
	if code, _, errOut := runCLI(t, "upgrade", "-C", bundle, "x.json"); code != ExitUsage || !strings.Contains(errOut, "not a directory") {
		t.Errorf("upgrade -C FILE: exit %d\n%s", code, errOut)
	}
}

// Every bundle command documents -C and how paths resolve under it.
func TestBundleCommandsDocumentDashC(t *testing.T) {
	for _, cmd := range []string{"gate", "sarif", "validate", "upgrade"} {
		_, out, _ := runCLI(t, cmd, "--help")
		if !strings.Contains(out, "-C, --dir string") || !strings.Contains(out, "-C DIR runs as if diffpal had been started in DIR") {
			t.Errorf("%s --help does not document -C:\n%s", cmd, out)
		}
	}
}
