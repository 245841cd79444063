package findings_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/findings/findingstest"
)

// streamCases are the bundles the streaming tests run over: the repo's
// testdata bundles and generated ones of every shape findingstest makes.
func streamCases(t *testing.T) map[string][]byte {
	t.Helper()
	cases := map[string][]byte{}
	for _, glob := range []string{"testdata/corpus/*.json", "testdata/upgrade/*.json"} {
		files, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			cases[f] = data
		}
	}
	for _, o := range GeneratedOptions() {
		cases[fmt.Sprintf("gen-%+v", o)] = findingstest.Generate(o)
	}
	return cases
}

// GeneratedOptions are the generated bundles' shapes.
func GeneratedOptions() []findingstest.Options {
	var out []findingstest.Options
	for _, v := range []string{"", "v1", "v2", "v3", "v4"} {
		for _, n := range []int{0, 1, 7, 300} {
			out = append(out, findingstest.Options{N: n, Seed: uint64(n) + 1, Version: v})
		}
		out = append(out, findingstest.Options{N: 150, Seed: 9, Version: v, FindingsFirst: true})
		out = append(out, findingstest.Options{N: 150, Seed: 10, Version: v, NoIDs: true})
		out = append(out, findingstest.Options{N: 90, Seed: 12, Version: v, VersionLast: true, FindingsFirst: true})
	}
	out = append(out, findingstest.Options{N: 120, Seed: 11, Version: "v1", Legacy: true})
	return out
}

func writeTemp(t *testing.T, data []byte) *os.File {
	t.Helper()
	p := filepath.Join(t.TempDir(), "bundle.json")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestGeneratedBundlesValid(t *testing.T) {
	for _, o := range GeneratedOptions() {
		_, _, problems, err := findings.Decode(findingstest.Generate(o), findings.DecodeOptions{})
		if err != nil || len(problems) > 0 {
			t.Errorf("%+v: %v %v", o, err, problems)
		}
	}
}

// TestBundleFileAgrees: ScanFile, Each and Finding hand over exactly the
// findings Decode keeps, with the same header, info and problems.
func TestBundleFileAgrees(t *testing.T) {
	for name, data := range streamCases(t) {
		t.Run(name, func(t *testing.T) {
			want, winfo, wprobs, werr := findings.Decode(data, findings.DecodeOptions{})
			f := writeTemp(t, data)
			var scanned []findings.Finding
			bf, probs, err := findings.ScanFile(f, int64(len(data)), 0, func(f *findings.Finding) { scanned = append(scanned, f.Clone()) })
			if (err != nil) != (werr != nil) {
				t.Fatalf("err %v, Decode's %v", err, werr)
			}
			if err != nil {
				if err.Error() != werr.Error() {
					t.Fatalf("err %q, Decode's %q", err, werr)
				}
				return
			}
			if !reflect.DeepEqual(probs, wprobs) {
				t.Fatalf("problems %v, Decode's %v", probs, wprobs)
			}
			if !reflect.DeepEqual(bf.Info, winfo) {
				t.Fatalf("info %+v, Decode's %+v", bf.Info, winfo)
			}
			hdr := *want
			hdr.Findings = nil
			got := *bf.Header
			got.Findings = nil
			if !reflect.DeepEqual(got, hdr) {
				t.Fatalf("header %+v, Decode's %+v", got, hdr)
			}
			if bf.Len() != len(want.Findings) || !reflect.DeepEqual(scanned, want.Findings) && len(want.Findings) > 0 {
				t.Fatalf("scan: %d findings, Decode %d (or different)", bf.Len(), len(want.Findings))
			}
			n := 0
			if err := bf.Each(func(i int, f *findings.Finding) error {
				if i != n || !reflect.DeepEqual(*f, want.Findings[i]) {
					return fmt.Errorf("Each: finding %d differs", i)
				}
				n++
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			for i := range want.Findings {
				f, err := bf.Finding(i)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(*f, want.Findings[i]) {
					t.Fatalf("Finding(%d) = %+v, want %+v", i, *f, want.Findings[i])
				}
			}
			// Reader: in order, backwards, and every other one.
			for _, order := range [][]int{seq(n, false), seq(n, true), evensThenOdds(n)} {
				rd := bf.Reader()
				for _, i := range order {
					f, err := rd.Get(i)
					if err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(*f, want.Findings[i]) {
						t.Fatalf("Reader.Get(%d) differs", i)
					}
				}
				rd.Close()
			}
			stop := errors.New("stop")
			if n > 0 {
				if err := bf.Each(func(int, *findings.Finding) error { return stop }); err != stop {
					t.Fatalf("Each's error %v, want fn's", err)
				}
			}
		})
	}
}

// TestNormalizeFileSameBytes: the streaming Normalize+Encode writes what
// Normalize and Encode write in memory, and returns the same problems.
func TestNormalizeFileSameBytes(t *testing.T) {
	for name, data := range streamCases(t) {
		for _, opts := range []findings.Options{{}, {Repo: "other/repo", Policy: findings.Policy{BlockOn: findings.Medium}}} {
			t.Run(name, func(t *testing.T) {
				b, _, problems, err := findings.Decode(data, findings.DecodeOptions{})
				if err != nil || len(problems) > 0 {
					t.Skip("not a valid bundle")
				}
				b.Version = findings.CurrentVersion
				var want bytes.Buffer
				werr := findings.Normalize(b, opts)
				if werr == nil {
					if err := findings.Encode(&want, b); err != nil {
						t.Fatal(err)
					}
				}
				f := writeTemp(t, data)
				bf, _, err := findings.ScanFile(f, int64(len(data)), 0, nil)
				if err != nil {
					t.Fatal(err)
				}
				hdr := *bf.Header
				hdr.Version = findings.CurrentVersion
				for _, w := range []*bytes.Buffer{nil, {}} {
					var out *bytes.Buffer
					var n int
					if w == nil {
						n, err = findings.NormalizeFile(bf, &hdr, opts, nil)
					} else {
						out = w
						n, err = findings.NormalizeFile(bf, &hdr, opts, w)
					}
					if (err != nil) != (werr != nil) || err != nil && err.Error() != werr.Error() {
						t.Fatalf("err %v, Normalize's %v", err, werr)
					}
					if err != nil {
						continue
					}
					if n != len(b.Findings) {
						t.Fatalf("n %d, want %d", n, len(b.Findings))
					}
					if out != nil && !bytes.Equal(out.Bytes(), want.Bytes()) {
						t.Fatalf("bytes differ:\n%s\nwant:\n%s", out, &want)
					}
				}
			})
		}
	}
}

// TestIDFillerIsFillIDs: FillIDs over a copy equals IDFiller's two passes
// (FillIDs is IDFiller; this pins that the passes see what FillIDs did
// before it was split: ids of findings in Normalize's order).
func TestIDFillerMatchesNormalize(t *testing.T) {
	for _, o := range GeneratedOptions() {
		if !o.NoIDs || o.N == 0 {
			continue
		}
		data := findingstest.Generate(o)
		b, _, _, _ := findings.Decode(data, findings.DecodeOptions{})
		filled, _, _, _ := findings.Decode(data, findings.DecodeOptions{})
		findings.FillIDs(filled, "")
		if err := findings.Normalize(b, findings.Options{}); err != nil {
			t.Fatal(err)
		}
		ids := map[string]string{}
		for _, f := range b.Findings {
			ids[f.ID] = f.StableID
		}
		for _, f := range filled.Findings {
			if ids[f.ID] != f.StableID {
				t.Fatalf("%+v: finding %s: stable id %s, Normalize's %s", o, f.ID, f.StableID, ids[f.ID])
			}
		}
	}
}

// TestOpenFileSniff: OpenFile and Spool refuse what ReadBytesLimit and
// ReadAll refuse, with the same messages.
func TestOpenFileSniff(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string][]byte{"array": []byte("  [1,2]"), "nul": bytes.Repeat([]byte{0}, 10000), "ok": []byte(" {}"), "empty": nil, "big": []byte("{" + strings.Repeat(" ", 200) + "}")} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, werr := findings.ReadBytesLimit(p, 100)
		_, _, closeF, err := findings.OpenFile(p, 100)
		if err == nil {
			closeF()
		}
		if fmt.Sprint(err) != fmt.Sprint(werr) {
			t.Errorf("%s: OpenFile %v, ReadBytesLimit %v", name, err, werr)
		}
		_, werr = findings.ReadAll(bytes.NewReader(data), 100)
		_, _, closeS, err := findings.Spool(bytes.NewReader(data), 100)
		if err == nil {
			closeS()
		}
		if fmt.Sprint(err) != fmt.Sprint(werr) {
			t.Errorf("%s: Spool %v, ReadAll %v", name, err, werr)
		}
	}
}

// TestNormalizeFileProblems: a header the upgraded bundle's rules refuse
// gives Normalize's problems, with its pointers, and nothing is claimed
// written.
func TestNormalizeFileProblems(t *testing.T) {
	data := findingstest.Generate(findingstest.Options{N: 30, Seed: 2, Version: "v2"})
	b, _, _, _ := findings.Decode(data, findings.DecodeOptions{})
	b.Version = "v9"
	b.ReviewID = ""
	werr := findings.Normalize(b, findings.Options{})
	if werr == nil {
		t.Fatal("fixture normalizes")
	}
	f := writeTemp(t, data)
	bf, _, err := findings.ScanFile(f, int64(len(data)), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	hdr := *bf.Header
	hdr.Version, hdr.ReviewID = "v9", ""
	var out bytes.Buffer
	n, err := findings.NormalizeFile(bf, &hdr, findings.Options{}, &out)
	if n != 0 || err == nil || err.Error() != werr.Error() {
		t.Fatalf("NormalizeFile: %d, %v; Normalize: %v", n, err, werr)
	}
}

func seq(n int, backwards bool) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
		if backwards {
			out[i] = n - 1 - i
		}
	}
	return out
}

func evensThenOdds(n int) []int {
	var out []int
	for i := 0; i < n; i += 2 {
		out = append(out, i)
	}
	for i := 1; i < n; i += 2 {
		out = append(out, i)
	}
	return out
}

// TestFindingBeforeEach: random access works before any Each (it indexes
// the bundle first).
func TestFindingBeforeEach(t *testing.T) {
	data := findingstest.Generate(findingstest.Options{N: 50, Seed: 3, Version: "v3"})
	want, _, _, _ := findings.Decode(data, findings.DecodeOptions{})
	bf, _, err := findings.ScanFile(bytes.NewReader(data), int64(len(data)), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := bf.Finding(49)
	if err != nil || !reflect.DeepEqual(*f, want.Findings[49]) {
		t.Fatalf("Finding(49): %v", err)
	}
	if _, err := bf.Finding(50); err == nil {
		t.Fatal("Finding(50) of 50: no error")
	}
}
