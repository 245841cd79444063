package cli

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/diffpalhq/diffpal/internal/git/gittest"
	"github.com/diffpalhq/diffpal/internal/safefile"
)

// The regression tests of the output-safety issue (docs/output-safety.md):
// no write through a symlink inside the repository, no replacing of
// devices, FIFOs, sockets or symlinks, in-place keeps mode and owner,
// review's artifacts as one set, bounded reads.

const v1Bundle = `{"version":"v1","review_id":"r","base_sha":"a","head_sha":"b","findings":[{"category":"security","severity":"high","confidence":0.9,"path":"a.go","start_line":1,"end_line":2,"title":"t","message":"m","evidence":"legacy text","impact":"legacy impact"}]}`

func safeRepo(t *testing.T) *gittest.Repo {
	t.Helper()
	repo := gittest.New(t)
	repo.Write("main.go", "package main\n\nfunc main() {}\n")
	repo.Commit("base")
	repo.Git("checkout", "-q", "-b", "feature")
	repo.Write("main.go", "package main\n\nimport \"crypto/tls\"\n\nvar c = &tls.Config{InsecureSkipVerify: true}\n\nfunc main() {}\n")
	repo.Commit("feature")
	return repo
}

func readString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeString(t *testing.T, path, content string, perm os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, perm); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// tree lists every path under dir with its content, for "nothing changed".
func tree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		b.WriteString(rel + " " + e.Type().String())
		if e.Type().IsRegular() {
			data, _ := os.ReadFile(p)
			b.WriteString(" " + string(data))
		}
		b.WriteString("\n")
		return nil
	})
	return b.String()
}

func tempLeftovers(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(e.Name(), ".") && strings.HasSuffix(e.Name(), ".tmp") {
			out = append(out, p)
		}
		return nil
	})
	return out
}

func wantRefusal(t *testing.T, code int, stderr string, mention ...string) {
	t.Helper()
	if code != ExitInternal {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, ExitInternal, stderr)
	}
	for _, m := range append([]string{"refusing to"}, mention...) {
		if !strings.Contains(stderr, m) {
			t.Fatalf("stderr does not mention %q:\n%s", m, stderr)
		}
	}
}

// A committed .artifacts (or .artifacts/diffpal) symlink must not make
// review write its artifacts where it points.
func TestReviewRefusesArtifactSymlinks(t *testing.T) {
	for _, link := range []string{".artifacts", ".artifacts/diffpal"} {
		t.Run(link, func(t *testing.T) {
			repo := safeRepo(t)
			elsewhere := t.TempDir()
			victim := filepath.Join(elsewhere, "summary.md")
			if link == ".artifacts" {
				victim = filepath.Join(elsewhere, "diffpal", "summary.md")
			}
			writeString(t, victim, "precious", 0o644)
			symlink(t, elsewhere, filepath.Join(repo.Dir, link))
			repo.Commit("hostile link")
			before := tree(t, elsewhere)
			code, _, stderr := runCLI(t, "review", "-C", repo.Dir)
			wantRefusal(t, code, stderr, filepath.Join(repo.Dir, link), "symlink")
			if after := tree(t, elsewhere); after != before {
				t.Fatalf("review wrote through the %s symlink:\n%s", link, after)
			}
		})
	}
}

// review writes its four artifacts as one set with manifest.json last;
// a set that cannot be completed changes none of the previous run's
// files, and the model-answer cache in the output directory survives.
func TestReviewWritesOneSet(t *testing.T) {
	repo := safeRepo(t)
	out := filepath.Join(repo.Dir, ".artifacts", "diffpal")
	if code, _, stderr := runCLI(t, "review", "-C", repo.Dir); code != 0 {
		t.Fatalf("review: exit %d\n%s", code, stderr)
	}
	cache := filepath.Join(out, "cache", "ab", "entry.json")
	writeString(t, cache, "cached answer", 0o600)
	first := tree(t, out)

	// A new change, and an artifact that cannot be replaced (a directory
	// where diffpal.sarif goes): nothing of the old set may change.
	repo.Write("main.go", "package main\n\nimport \"crypto/tls\"\n\nvar c = &tls.Config{InsecureSkipVerify: true}\n\nfunc main() { println(1) }\n")
	repo.Commit("more")
	sarifPath := filepath.Join(out, "diffpal.sarif")
	saved := readString(t, sarifPath)
	os.Remove(sarifPath)
	os.Mkdir(sarifPath, 0o755)
	code, _, stderr := runCLI(t, "review", "-C", repo.Dir)
	os.Remove(sarifPath)
	writeString(t, sarifPath, saved, 0o644)
	if now := tree(t, out); now != first {
		t.Fatalf("a failed review changed the previous set:\nbefore:\n%s\nafter:\n%s", first, now)
	}
	wantRefusal(t, code, stderr, sarifPath, "directory")

	if code, _, stderr := runCLI(t, "review", "-C", repo.Dir); code != 0 {
		t.Fatalf("review: exit %d\n%s", code, stderr)
	}
	m := checkManifest(t, out)
	if m.HeadSHA != repo.Git("rev-parse", "HEAD") {
		t.Errorf("manifest head %s, want HEAD", m.HeadSHA)
	}
	if readString(t, cache) != "cached answer" {
		t.Fatal("the model-answer cache did not survive the set swap")
	}
	if l := tempLeftovers(t, repo.Dir); len(l) != 0 {
		t.Fatalf("left behind: %v", l)
	}
}

func checkManifest(t *testing.T, dir string) Manifest {
	t.Helper()
	var m Manifest
	if err := json.Unmarshal([]byte(readString(t, filepath.Join(dir, ManifestName))), &m); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range m.Files {
		names[f.Name] = true
		data := readString(t, filepath.Join(dir, f.Name))
		sum := sha256.Sum256([]byte(data))
		if hex.EncodeToString(sum[:]) != f.SHA256 || int64(len(data)) != f.Bytes {
			t.Errorf("%s does not match the manifest", f.Name)
		}
	}
	for _, n := range []string{"findings.json", "qa-session.json", "summary.md", "diffpal.sarif"} {
		if !names[n] {
			t.Errorf("manifest does not list %s", n)
		}
	}
	return m
}

// init --force must not write through a .config or .config/diffpal
// symlink, nor replace a .diffpalignore symlink.
func TestInitRefusesSymlinks(t *testing.T) {
	for _, link := range []string{".config", ".config/diffpal", ".diffpalignore"} {
		t.Run(link, func(t *testing.T) {
			repo := gittest.New(t)
			elsewhere := t.TempDir()
			target := elsewhere
			switch link {
			case ".config":
				writeString(t, filepath.Join(elsewhere, "diffpal", "config.yaml"), "precious", 0o644)
			case ".config/diffpal":
				writeString(t, filepath.Join(elsewhere, "config.yaml"), "precious", 0o644)
			default:
				target = filepath.Join(elsewhere, "ignore")
				writeString(t, target, "precious", 0o644)
				writeString(t, filepath.Join(repo.Dir, ".config", "diffpal", "config.yaml"), "version: v1\n", 0o644)
			}
			symlink(t, target, filepath.Join(repo.Dir, link))
			before := tree(t, elsewhere)
			code, _, stderr := runCLI(t, "init", "--force", "-C", repo.Dir)
			wantRefusal(t, code, stderr, filepath.Join(repo.Dir, link), "symlink")
			if after := tree(t, elsewhere); after != before {
				t.Fatalf("init wrote through the %s symlink:\n%s", link, after)
			}
			if fi, err := os.Lstat(filepath.Join(repo.Dir, link)); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
				t.Fatalf("the %s symlink was replaced", link)
			}
		})
	}
}

// sarif --out and upgrade -o refuse a FIFO, a device, a socket or a
// symlink instead of replacing it with a regular file, and refuse a
// symlinked directory below the working directory.
func TestOutputsRefuseNonRegularTargets(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	writeString(t, "in.json", v1Bundle, 0o644)
	writeString(t, "target.json", "precious", 0o644)
	symlink(t, "target.json", "link.json")
	if err := syscall.Mkfifo("fifo", 0o600); err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{"link.json": "symlink", "fifo": "FIFO"}
	if os.Geteuid() == 0 && runtime.GOOS == "linux" {
		// A character device of our own, so that a regression cannot
		// replace the system's /dev/null (root could).
		if err := syscall.Mknod("null", syscall.S_IFCHR|0o666, 1<<8|3); err == nil {
			cases["null"] = "character device"
		}
	}
	// The real /dev/null too, once the same check has been seen to refuse
	// it without writing.
	if err := safefile.CheckTarget("/dev/null"); err == nil {
		t.Fatal("/dev/null passes the target check")
	}
	cases["/dev/null"] = "character device"

	for path, what := range cases {
		for _, args := range [][]string{
			{"sarif", "--input", "in.json", "--out", path},
			{"upgrade", "in.json", "-o", path},
		} {
			before, _ := os.Lstat(path)
			code, _, stderr := runCLI(t, args...)
			wantRefusal(t, code, stderr, path, what)
			after, err := os.Lstat(path)
			if err != nil || after.Mode().Type() != before.Mode().Type() {
				t.Fatalf("%v replaced the %s", args, what)
			}
		}
	}
	if readString(t, "target.json") != "precious" {
		t.Fatal("wrote through the symlink")
	}

	// The default sarif path through a .artifacts symlink.
	elsewhere := t.TempDir()
	symlink(t, elsewhere, ".artifacts")
	code, _, stderr := runCLI(t, "sarif", "--input", "in.json")
	wantRefusal(t, code, stderr, ".artifacts", "symlink")
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Fatalf("sarif wrote through .artifacts: %v", entries)
	}
	// --out - is standard output.
	if code, stdout, _ := runCLI(t, "sarif", "--input", "in.json", "--out", "-"); code != 0 || !strings.Contains(stdout, `"version": "2.1.0"`) {
		t.Fatalf("--out -: exit %d", code)
	}
	if l := tempLeftovers(t, dir); len(l) != 0 {
		t.Fatalf("left behind: %v", l)
	}
}

// upgrade --in-place keeps the file's mode and owner, and refuses a
// symlink.
func TestUpgradeInPlaceKeepsModeAndOwner(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, perm := range []os.FileMode{0o600, 0o640, 0o444} {
		name := "b" + perm.String() + ".json"
		writeString(t, name, v1Bundle, perm)
		if code, _, stderr := runCLI(t, "upgrade", "--in-place", name); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		fi, _ := os.Stat(name)
		if fi.Mode().Perm() != perm || !strings.Contains(readString(t, name), `"version": "v3"`) {
			t.Errorf("a %v file is %v after --in-place", perm, fi.Mode().Perm())
		}
	}
	if os.Geteuid() == 0 {
		writeString(t, "owned.json", v1Bundle, 0o640)
		if err := os.Chown("owned.json", 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if code, _, stderr := runCLI(t, "upgrade", "--in-place", "owned.json"); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		fi, _ := os.Stat("owned.json")
		if st := fi.Sys().(*syscall.Stat_t); st.Uid != 65534 || st.Gid != 65534 {
			t.Errorf("owner %d:%d after --in-place, want 65534:65534", st.Uid, st.Gid)
		}
	}
	writeString(t, "real.json", v1Bundle, 0o644)
	symlink(t, "real.json", "alias.json")
	code, _, stderr := runCLI(t, "upgrade", "--in-place", "alias.json")
	wantRefusal(t, code, stderr, "alias.json", "symlink")
	if readString(t, "real.json") != v1Bundle {
		t.Fatal("--in-place wrote through the symlink")
	}
}

// nulStream is standard input of n NUL bytes that counts what was read.
type nulStream struct{ n, taken int64 }

func (z *nulStream) Read(p []byte) (int, error) {
	if z.taken >= z.n {
		return 0, io.EOF
	}
	k := min(int64(len(p)), z.n-z.taken)
	clear(p[:k])
	z.taken += k
	return int(k), nil
}

// Standard input that cannot be a bundle is rejected after its first
// bytes instead of being read to its end (validate - on a pipe of NUL
// bytes used to hold it all in memory).
func TestStdinRejectedEarly(t *testing.T) {
	for _, args := range [][]string{{"validate", "-"}, {"gate", "-"}, {"sarif", "--input", "-", "--out", "-"}, {"upgrade", "-"}} {
		in := &nulStream{n: 256 << 20}
		var out, errOut bytes.Buffer
		code := Run(t.Context(), args, &IOStreams{In: in, Out: &out, ErrOut: &errOut})
		if code != ExitUsage || !strings.Contains(out.String()+errOut.String(), "<stdin>: not valid JSON: invalid character byte 0x00") {
			t.Errorf("%v: exit %d\n%s%s", args, code, out.String(), errOut.String())
		}
		if in.taken > 64<<10 {
			t.Errorf("%v read %d bytes of NULs before rejecting them", args, in.taken)
		}
	}
}

// DIFFPAL_MAX_BUNDLE_BYTES lowers (or raises) the 4 GiB input limit; the
// error names the input and the limit.
func TestBundleSizeLimit(t *testing.T) {
	file := filepath.Join(t.TempDir(), "b.json")
	writeString(t, file, v1Bundle, 0o644)
	t.Setenv(envMaxBundleBytes, "100")
	code, stdout, _ := runCLI(t, "validate", file)
	if code != ExitUsage || !strings.Contains(stdout, file+": larger than the 100 bytes size limit") || !strings.Contains(stdout, envMaxBundleBytes) {
		t.Fatalf("file over the limit: exit %d\n%s", code, stdout)
	}
	var out, errOut bytes.Buffer
	code = Run(t.Context(), []string{"gate", "-"}, &IOStreams{In: strings.NewReader(v1Bundle), Out: &out, ErrOut: &errOut})
	if code != ExitUsage || !strings.Contains(errOut.String(), "<stdin>: larger than the 100 bytes size limit") {
		t.Fatalf("stdin over the limit: exit %d\n%s", code, errOut.String())
	}
	t.Setenv(envMaxBundleBytes, "1KiB")
	if code, stdout, _ := runCLI(t, "validate", file); code != 0 {
		t.Fatalf("under a 1KiB limit: exit %d\n%s", code, stdout)
	}
	t.Setenv(envMaxBundleBytes, "lots")
	if code, stdout, _ := runCLI(t, "validate", file); code != ExitUsage || !strings.Contains(stdout, "invalid "+envMaxBundleBytes+` "lots"`) {
		t.Fatalf("bad limit: exit %d\n%s", code, stdout)
	}
}
