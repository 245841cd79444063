package review

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

// EnvPhases, set to 1, makes a review print how long each of its phases
// took on standard error, one "diffpal: phase NAME SECONDS" line each
// (bench/review.sh prints the breakdown; docs/benchmarks.md). The first
// phase, startup, runs from the process's start (package initialisation)
// to the review's; phases that overlap others are named "(concurrent)".
const EnvPhases = "DIFFPAL_PHASES"

// StartupDone is called by the CLI when any command but a review starts,
// and ReviewStarted when a review does (Run): the process's start-up
// (rule packs, the secret detector's configuration) is over. cmd/diffpal
// sets them to turn garbage collection back on, a review's with a later
// first collection than any other command's (cmd/diffpal/gc.go); they
// must be safe to call more than once, the two together, and from any
// goroutine.
var (
	StartupDone   = func() {}
	ReviewStarted = func() {}
)

// ChangeLoaded is called by Run once the change is read, with the size of
// its patch: cmd/diffpal bounds the heap for the rest of the review by it
// (cmd/diffpal/gc.go). Safe to call from any goroutine.
var ChangeLoaded = func(patchBytes int) {}

// processStart is when this package was initialised: within a
// millisecond of the process's start.
var processStart = time.Now()

// phaseClock records the wall time of a review's phases. A nil clock
// records nothing; it is safe for concurrent use.
type phaseClock struct {
	mu     sync.Mutex
	last   time.Time
	phases []phaseTime
}

type phaseTime struct {
	name string
	d    time.Duration
}

// The process's clock: one per process, so the CLI's steps around Run
// (policy, providers, outputs) and Run's own phases are one timeline.
var process struct {
	once  sync.Once
	clock *phaseClock
}

// newPhaseClock returns the process's clock when EnvPhases asks for one,
// else nil.
func newPhaseClock() *phaseClock {
	process.once.Do(func() {
		if os.Getenv(EnvPhases) == "1" {
			process.clock = &phaseClock{last: processStart}
		}
	})
	return process.clock
}

// Phase ends the current phase of the process's timeline, naming it (a
// no-op unless EnvPhases is set): the CLI marks its steps with it.
func Phase(name string) { newPhaseClock().mark(name) }

// PrintPhases writes the process's phases on standard error (EnvPhases).
func PrintPhases() { newPhaseClock().print() }

// mark ends the current phase, naming it.
func (c *phaseClock) mark(name string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	c.phases = append(c.phases, phaseTime{name, now.Sub(c.last)})
	c.last = now
}

// record adds a phase measured elsewhere (one that ran concurrently with
// the current one), without ending the current phase.
func (c *phaseClock) record(name string, d time.Duration) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.phases = append(c.phases, phaseTime{name + " (concurrent)", d})
}

// print writes the phases on standard error.
func (c *phaseClock) print() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	for _, p := range c.phases {
		fmt.Fprintf(&b, "diffpal: phase %s %.4f\n", p.name, p.d.Seconds())
	}
	os.Stderr.WriteString(b.String())
}
