// Command diffpal reviews git changes for CI and AI agents. All logic lives
// in internal/cli; main only wires signals and the exit code.
//
// default.pgo, beside this file, is the CPU profile `go build` optimises
// the binary with (profile-guided optimisation; bench/pgo.sh remakes it
// from the reviews bench/review.sh times; `go build -pgo=off` ignores it).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/diffpalhq/diffpal/internal/cli"
	"github.com/diffpalhq/diffpal/internal/mcpserver"
	"github.com/diffpalhq/diffpal/internal/safefile"
)

// graceAfterSignal is how long a command may take to wind down after
// SIGINT/SIGTERM (context-aware work stops at once; files are written
// atomically, so stopping never leaves a truncated artifact). A second
// signal exits immediately. Either way safefile.Cleanup removes every
// temporary file and staging directory still live before the process
// exits (waiting for a set's renames in progress, which are short).
const graceAfterSignal = 3 * time.Second

// drainAfterSignal replaces graceAfterSignal for `diffpal mcp`: its HTTP
// server answers every in-flight call (mcpserver.Serve waits up to
// mcpserver.DefaultShutdownTimeout) and then closes the store, and cli.Run
// returns as soon as that is done; this is only the backstop.
const drainAfterSignal = mcpserver.DefaultShutdownTimeout + 5*time.Second

// graceFor picks the wind-down time for a command line. The root command
// has no flag that takes a value, so the first argument that is not a
// flag names the command.
func graceFor(args []string) time.Duration {
	for _, a := range args {
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") {
			if a == "mcp" {
				return drainAfterSignal
			}
			break
		}
	}
	return graceAfterSignal
}

func main() {
	pauseGC()
	stopProfiles := startProfiles()
	ctx, cancel := context.WithCancel(context.Background())
	grace := graceFor(os.Args[1:])
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		cancel()
		select {
		case <-sigs:
		case <-time.After(grace):
		}
		safefile.Cleanup()
		stopProfiles()
		fmt.Fprintln(os.Stderr, "diffpal: interrupted")
		os.Exit(cli.ExitInterrupted)
	}()
	code := cli.Run(ctx, os.Args[1:], cli.System())
	safefile.Cleanup()
	stopProfiles()
	if ctx.Err() != nil && code != cli.ExitOK {
		code = cli.ExitInterrupted
	}
	os.Exit(code)
}
