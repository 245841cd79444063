package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/findings/findingstest"
	"github.com/diffpalhq/diffpal/internal/output"
	"github.com/diffpalhq/diffpal/internal/output/html"
	"github.com/diffpalhq/diffpal/internal/output/markdown"
	"github.com/diffpalhq/diffpal/internal/output/sarif"
)

// streamedBundles are the testdata bundles and generated ones (unsorted,
// without ids, older versions, findings before the header).
func streamedBundles(t *testing.T) map[string][]byte {
	t.Helper()
	cases := map[string][]byte{}
	files, _ := filepath.Glob("../../findings/testdata/*/*.json")
	more, _ := filepath.Glob("../output/sarif/testdata/*.json")
	for _, f := range append(files, more...) {
		if strings.Contains(f, "schema") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cases[filepath.Base(f)] = data
	}
	for _, v := range []string{"", "v1", "v2", "v3", "v4"} {
		for _, o := range []findingstest.Options{{N: 0}, {N: 3}, {N: 260, Seed: 3}, {N: 120, Seed: 4, NoIDs: true}, {N: 120, Seed: 5, FindingsFirst: true}, {N: 60, Seed: 6, FindingsFirst: true, VersionLast: true}} {
			o.Version = v
			cases[fmt.Sprintf("gen-%s-%d-%d-%v-%v-%v", v, o.N, o.Seed, o.NoIDs, o.FindingsFirst, o.VersionLast)] = findingstest.Generate(o)
		}
	}
	return cases
}

func runCLIIn(t *testing.T, in []byte, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = Run(t.Context(), args, &IOStreams{In: bytes.NewReader(in), Out: &out, ErrOut: &errOut})
	return code, out.String(), errOut.String()
}

// TestStreamedOutputsSameBytes: sarif, render (html, markdown, sarif) and
// upgrade, which read the bundle through a window, write what the
// in-memory printers write for the bundle parsed whole, from a file, from
// standard input and to a file.
func TestStreamedOutputsSameBytes(t *testing.T) {
	compared := 0
	for name, data := range streamedBundles(t) {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			in := filepath.Join(dir, "findings.json")
			if err := os.WriteFile(in, data, 0o644); err != nil {
				t.Fatal(err)
			}
			b, _, err := findings.Parse(data)
			if err != nil {
				// Invalid bundles: refused alike from a file and stdin.
				c1, o1, e1 := runCLI(t, "sarif", "--input", in, "--out", "-")
				c2, o2, e2 := runCLIIn(t, data, "sarif", "--input", "-", "--out", "-")
				if c1 != ExitUsage || c2 != ExitUsage || o1 != "" || o2 != "" || !strings.Contains(e1, "run `diffpal validate") ||
					strings.ReplaceAll(e1, in, "<stdin>") != strings.ReplaceAll(e2, "validate -", "validate <stdin>") {
					t.Errorf("invalid bundle: %d %q %q / %d %q %q", c1, o1, e1, c2, o2, e2)
				}
				return
			}
			compared++
			var wantSARIF, wantHTML, wantMD bytes.Buffer
			if err := sarif.Encode(&wantSARIF, sarif.Convert(b, output.SARIFTool())); err != nil {
				t.Fatal(err)
			}
			if err := html.Write(&wantHTML, output.BuildReport(b, nil, nil, nil, nil)); err != nil {
				t.Fatal(err)
			}
			if err := markdown.Write(&wantMD, b, output.SummaryInfoOf(b, nil)); err != nil {
				t.Fatal(err)
			}
			check := func(what string, code int, got, stderr string, want []byte) {
				t.Helper()
				if code != 0 || got != string(want) {
					t.Errorf("%s: exit %d, %d bytes, want %d (stderr %s)", what, code, len(got), len(want), stderr)
				}
			}
			code, out, stderr := runCLI(t, "sarif", "--input", in, "--out", "-")
			check("sarif", code, out, stderr, wantSARIF.Bytes())
			code, out, stderr = runCLIIn(t, data, "sarif", "--input", "-", "--out", "-")
			check("sarif stdin", code, out, stderr, wantSARIF.Bytes())
			dst := filepath.Join(dir, "out.sarif")
			code, out, stderr = runCLI(t, "sarif", "--input", in, "--out", dst)
			written, _ := os.ReadFile(dst)
			check("sarif --out", code, string(written), stderr, wantSARIF.Bytes())
			if want := fmt.Sprintf("sarif=%s findings=%d version=", dst, len(b.Findings)); !strings.HasPrefix(out, want) {
				t.Errorf("sarif said %q, want %q…", out, want)
			}
			for format, want := range map[string][]byte{"sarif": wantSARIF.Bytes(), "html": wantHTML.Bytes(), "markdown": wantMD.Bytes()} {
				code, out, stderr = runCLI(t, "render", "--format", format, "--input", in)
				check("render "+format, code, out, stderr, want)
				code, out, stderr = runCLIIn(t, data, "render", "--format", format, "--input", "-")
				check("render stdin "+format, code, out, stderr, want)
			}

			// upgrade: Normalize+Encode in memory.
			ub, _, _, _ := findings.Decode(data, findings.DecodeOptions{})
			ub.Version = findings.CurrentVersion
			var wantUp bytes.Buffer
			nerr := findings.Normalize(ub, findings.Options{Policy: findings.Policy{BlockOn: findings.High}})
			if nerr == nil {
				if err := findings.Encode(&wantUp, ub); err != nil {
					t.Fatal(err)
				}
			}
			code, out, stderr = runCLI(t, "upgrade", in)
			if nerr != nil {
				if code != ExitUsage || out != "" || !strings.Contains(stderr, "nothing was written") {
					t.Errorf("upgrade of a bundle that stays invalid: %d %q %q", code, out, stderr)
				}
				return
			}
			check("upgrade", code, out, stderr, wantUp.Bytes())
			code, out, stderr = runCLIIn(t, data, "upgrade", "-")
			check("upgrade stdin", code, out, stderr, wantUp.Bytes())
			up := filepath.Join(dir, "up.json")
			code, _, stderr = runCLI(t, "upgrade", in, "-o", up)
			written, _ = os.ReadFile(up)
			check("upgrade -o", code, string(written), stderr, wantUp.Bytes())
			code, _, stderr = runCLI(t, "upgrade", "--in-place", in)
			written, _ = os.ReadFile(in)
			check("upgrade --in-place", code, string(written), stderr, wantUp.Bytes())
		})
	}
	if compared < 20 {
		t.Fatalf("only %d valid bundles compared", compared)
	}
}
