package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
)

// Profiling built in (docs/benchmarks.md): DIFFPAL_CPUPROFILE=FILE writes
// a CPU profile of the whole command, DIFFPAL_MEMPROFILE=FILE a heap
// profile (allocations since start, and what is live) taken when the
// command ends. Read them with `go tool pprof`. Nothing is profiled when
// neither is set.
const (
	envCPUProfile = "DIFFPAL_CPUPROFILE"
	envMemProfile = "DIFFPAL_MEMPROFILE"
)

// startProfiles starts what the environment asks for and returns the
// function that finishes it (writing the files; safe to call more than
// once, from the signal path too); it reports problems on stderr and never
// stops the command.
func startProfiles() (stop func()) {
	cpu, mem := os.Getenv(envCPUProfile), os.Getenv(envMemProfile)
	if cpu == "" && mem == "" {
		return func() {}
	}
	var cpuFile *os.File
	if cpu != "" {
		f, err := os.Create(cpu)
		if err == nil {
			err = pprof.StartCPUProfile(f)
			if err != nil {
				f.Close()
			}
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "diffpal: %s: %v\n", envCPUProfile, err)
		} else {
			cpuFile = f
		}
	}
	if mem != "" {
		runtime.MemProfileRate = 64 << 10 // finer than the default 512 KiB, still cheap
	}
	var once sync.Once
	return func() { once.Do(func() { finish(cpuFile, mem) }) }
}

// finish stops the CPU profile and writes the heap profile.
func finish(cpuFile *os.File, mem string) {
	if cpuFile != nil {
		pprof.StopCPUProfile()
		cpuFile.Close()
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
