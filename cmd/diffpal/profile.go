package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"sync"
)

// Profiling built in (docs/benchmarks.md): DIFFPAL_CPUPROFILE=FILE writes
// a CPU profile of the whole command, DIFFPAL_MEMPROFILE=FILE a heap
// profile (allocations since start, and what is live) taken when the
// command ends, DIFFPAL_TRACE=FILE an execution trace (which goroutine ran
// on which core when, and what each waited on: what a CPU profile cannot
// show of a pipeline whose stages overlap). Read the first two with `go
// tool pprof`, the trace with `go tool trace`. Nothing is recorded when
// none is set.
const (
	envCPUProfile = "DIFFPAL_CPUPROFILE"
	envMemProfile = "DIFFPAL_MEMPROFILE"
	envTrace      = "DIFFPAL_TRACE"
)

// startProfiles starts what the environment asks for and returns the
// function that finishes it (writing the files; safe to call more than
// once, from the signal path too); it reports problems on stderr and never
// stops the command.
func startProfiles() (stop func()) {
	cpu, mem, tr := os.Getenv(envCPUProfile), os.Getenv(envMemProfile), os.Getenv(envTrace)
	if cpu == "" && mem == "" && tr == "" {
		return func() {}
	}
	cpuFile := startRecording(envCPUProfile, cpu, pprof.StartCPUProfile)
	traceFile := startRecording(envTrace, tr, trace.Start)
	if mem != "" {
		runtime.MemProfileRate = 64 << 10 // finer than the default 512 KiB, still cheap
	}
	var once sync.Once
	return func() { once.Do(func() { finish(cpuFile, traceFile, mem) }) }
}

// startRecording creates path and starts a recorder writing to it; it
// returns nil (and says why on stderr) when either fails.
func startRecording(env, path string, start func(io.Writer) error) *os.File {
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err == nil {
		if err = start(f); err != nil {
			f.Close()
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "diffpal: %s: %v\n", env, err)
		return nil
	}
	return f
}

// finish stops the CPU profile and the trace and writes the heap profile.
func finish(cpuFile, traceFile *os.File, mem string) {
	if cpuFile != nil {
		pprof.StopCPUProfile()
		closeReporting(envCPUProfile, cpuFile)
	}
	if traceFile != nil {
		trace.Stop()
		closeReporting(envTrace, traceFile)
	}
	if mem == "" {
		return
	}
	f, err := os.Create(mem)
	if err == nil {
		runtime.GC() // the live heap is up to date
		err = pprof.Lookup("allocs").WriteTo(f, 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "diffpal: %s: %v\n", envMemProfile, err)
	}
}

// closeReporting closes a recording's file; a failed close (a full disk)
// means a truncated recording, which the user should hear of.
func closeReporting(env string, f *os.File) {
	if err := f.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "diffpal: %s: %v\n", env, err)
	}
}
