package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestProfilesWritten sets all three recorders at once, as a user chasing
// a slow review would, and reads back what each wrote.
func TestProfilesWritten(t *testing.T) {
	dir := t.TempDir()
	cpu, mem, tr := filepath.Join(dir, "cpu.prof"), filepath.Join(dir, "mem.prof"), filepath.Join(dir, "trace.out")
	t.Setenv(envCPUProfile, cpu)
	t.Setenv(envMemProfile, mem)
	t.Setenv(envTrace, tr)
	stop := startProfiles()
	sink := 0
	for i := range 1 << 16 {
		sink += len(make([]byte, i%512))
	}
	stop()
	stop() // the signal path may call it again
	for _, p := range []string{cpu, mem} {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		// A pprof profile is a gzipped protocol buffer.
		z, err := gzip.NewReader(f)
		if err != nil {
			t.Fatalf("%s: not a pprof profile: %v", p, err)
		}
		n, err := io.Copy(io.Discard, z)
		f.Close()
		if err != nil || n == 0 {
			t.Errorf("%s: %d bytes of profile, %v", p, n, err)
		}
	}
	data, err := os.ReadFile(tr)
	if err != nil {
		t.Fatal(err)
	}
	// An execution trace opens with its format's header, "go 1.NN trace".
	if !bytes.HasPrefix(data, []byte("go 1.")) || !bytes.Contains(data[:min(16, len(data))], []byte(" trace")) {
		t.Errorf("trace file starts %q, want a Go execution trace header", data[:min(16, len(data))])
	}
	_ = sink
}

// TestProfileBadPath: a recording that cannot be created is reported and
// skipped; the command still runs and the others are still written.
func TestProfileBadPath(t *testing.T) {
	dir := t.TempDir()
	mem := filepath.Join(dir, "mem.prof")
	t.Setenv(envCPUProfile, filepath.Join(dir, "missing", "cpu.prof"))
	t.Setenv(envTrace, filepath.Join(dir, "missing", "trace.out"))
	t.Setenv(envMemProfile, mem)
	startProfiles()()
	if _, err := os.Stat(mem); err != nil {
		t.Errorf("heap profile not written beside the failed ones: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "missing")); !os.IsNotExist(err) {
		t.Errorf("a directory was made for the failed recordings: %v", err)
	}
}
