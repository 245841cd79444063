package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestInterruptExits130 runs the real binary, blocks it on standard input
// and interrupts it: the exit code must be 130 (PRODUCT.md §5).
func TestInterruptExits130(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "diffpal")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	for _, sig := range []os.Signal{os.Interrupt, syscall.SIGTERM} {
		cmd := exec.Command(bin, "validate", "-")
		stdin, err := cmd.StdinPipe() // kept open: validate blocks reading it
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond) // let it reach the read
		cmd.Process.Signal(sig)
		cmd.Process.Signal(sig) // a second signal exits without the grace period
		err = cmd.Wait()
		stdin.Close()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 130 {
			t.Errorf("%v: exit = %v, want 130", sig, err)
		}
	}
}
