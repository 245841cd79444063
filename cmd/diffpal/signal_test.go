package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/diffpalhq/diffpal/internal/git/gittest"
	"github.com/diffpalhq/diffpal/internal/safefile"
)

const (
	envAsMain     = "DIFFPAL_TEST_AS_MAIN"
	envBlockWrite = "DIFFPAL_TEST_BLOCK_WRITE"
	writingMarker = "diffpal-test: writing "
)

// TestMain lets the test binary act as diffpal itself (re-executed with
// DIFFPAL_TEST_AS_MAIN=1), optionally blocking every write once its
// temporary file is written, so that a test can signal it mid-write.
func TestMain(m *testing.M) {
	if os.Getenv(envAsMain) == "1" {
		if os.Getenv(envBlockWrite) == "1" {
			safefile.TestHookAfterWrite = func(tmp string) {
				fmt.Fprintf(os.Stderr, "%s%s\n", writingMarker, tmp)
				for {
					time.Sleep(time.Hour)
				}
			}
		}
		main()
		return
	}
	os.Exit(m.Run())
}

// asMain runs the test binary as diffpal in dir.
func asMain(dir string, block bool, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), envAsMain+"=1", "NO_COLOR=1")
	if block {
		cmd.Env = append(cmd.Env, envBlockWrite+"=1")
	}
	return cmd
}

// interruptMidWrite starts diffpal with writes blocked, waits until a
// temporary file is written, signals it and returns the exit code and
// the temporary file's path.
func interruptMidWrite(t *testing.T, dir string, sigs []os.Signal, args ...string) (int, string) {
	t.Helper()
	cmd := asMain(dir, true, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	tmp := ""
	for sc.Scan() {
		if p, ok := strings.CutPrefix(sc.Text(), writingMarker); ok {
			tmp = p
			break
		}
	}
	if tmp == "" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("%v never reached a write", args)
	}
	if _, err := os.Stat(tmp); err != nil {
		t.Fatalf("the temporary file is not there mid-write: %v", err)
	}
	for _, s := range sigs {
		cmd.Process.Signal(s)
	}
	go io.Copy(io.Discard, stderr)
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("%v: %v, want an exit code", args, err)
	}
	return ee.ExitCode(), tmp
}

func leftovers(dir string) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(e.Name(), ".") && strings.HasSuffix(e.Name(), ".tmp") {
			out = append(out, p)
		}
		return nil
	})
	return out
}

func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		b.WriteString(p + " " + e.Type().String())
		if e.Type().IsRegular() {
			data, _ := os.ReadFile(p)
			b.Write(data)
		}
		b.WriteString("\n")
		return nil
	})
	return b.String()
}

var signalCases = []struct {
	name string
	sigs []os.Signal
}{
	// One signal each: the grace period runs out with the write still
	// blocked, and main exits 130 after safefile.Cleanup. (A second signal
	// sent at once is usually merged with the first by the kernel, so the
	// immediate-exit path is not what these exercise.)
	{"SIGTERM", []os.Signal{syscall.SIGTERM}},
	{"SIGINT", []os.Signal{os.Interrupt}},
}

// Interrupted mid-write, upgrade --in-place exits 130, leaves the file
// as it was and no temporary file behind.
func TestSignalMidWriteUpgradeInPlace(t *testing.T) {
	for _, tc := range signalCases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "findings.json")
			old := `{"version":"v1","review_id":"r","base_sha":"a","head_sha":"b","findings":[]}`
			os.WriteFile(file, []byte(old), 0o640)
			code, tmp := interruptMidWrite(t, dir, tc.sigs, "upgrade", "--in-place", "findings.json")
			if code != 130 {
				t.Errorf("exit %d, want 130", code)
			}
			if _, err := os.Lstat(tmp); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("temporary file %s survived the signal", tmp)
			}
			if l := leftovers(dir); len(l) != 0 {
				t.Errorf("left behind: %v", l)
			}
			if data, _ := os.ReadFile(file); string(data) != old {
				t.Error("the interrupted write changed the file")
			}
		})
	}
}

// Interrupted while staging its artifacts, review exits 130 and leaves the
// previous run's set exactly as it was: no temporary file or staging
// directory, no mix of old and new artifacts.
func TestSignalMidWriteReview(t *testing.T) {
	repo := gittest.New(t)
	repo.Write("main.go", "package main\n\nfunc main() {}\n")
	repo.Commit("base")
	repo.Git("checkout", "-q", "-b", "feature")
	repo.Write("main.go", "package main\n\nimport \"crypto/tls\"\n\nvar c = &tls.Config{InsecureSkipVerify: true}\n\nfunc main() {}\n")
	repo.Commit("feature")
	if out, err := asMain(repo.Dir, false, "review").CombinedOutput(); err != nil {
		t.Fatalf("first review: %v\n%s", err, out)
	}
	out := filepath.Join(repo.Dir, ".artifacts", "diffpal")
	for i, tc := range signalCases {
		t.Run(tc.name, func(t *testing.T) {
			// A new change, so the interrupted run's artifacts would differ.
			repo.Write("main.go", fmt.Sprintf("package main\n\nimport \"crypto/tls\"\n\nvar c = &tls.Config{InsecureSkipVerify: true}\n\nfunc main() { println(%d) }\n", i))
			repo.Commit("change")
			before := snapshot(t, out)
			code, tmp := interruptMidWrite(t, repo.Dir, tc.sigs, "review")
			if code != 130 {
				t.Errorf("exit %d, want 130", code)
			}
			if !strings.Contains(tmp, safefile.StagePrefix) {
				t.Errorf("review wrote %s outside a staging directory", tmp)
			}
			if l := leftovers(repo.Dir); len(l) != 0 {
				t.Errorf("left behind: %v", l)
			}
			if after := snapshot(t, out); after != before {
				t.Errorf("the interrupted review changed the published artifacts")
			}
		})
	}
}
