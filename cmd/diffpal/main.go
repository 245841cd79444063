// Command diffpal reviews git changes for CI and AI agents. All logic lives
// in internal/cli; main only wires signals and the exit code.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/diffpalhq/diffpal/internal/cli"
	"github.com/diffpalhq/diffpal/internal/safefile"
)

// graceAfterSignal is how long a command may take to wind down after
// SIGINT/SIGTERM (context-aware work stops at once; files are written
// atomically, so stopping never leaves a truncated artifact). A second
// signal exits immediately. Either way safefile.Cleanup removes every
// temporary file and staging directory still live before the process
// exits (waiting for a set's renames in progress, which are short).
const graceAfterSignal = 3 * time.Second

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		cancel()
		select {
		case <-sigs:
		case <-time.After(graceAfterSignal):
		}
		safefile.Cleanup()
		fmt.Fprintln(os.Stderr, "diffpal: interrupted")
		os.Exit(cli.ExitInterrupted)
	}()
	code := cli.Run(ctx, os.Args[1:], cli.System())
	safefile.Cleanup()
	if ctx.Err() != nil && code != cli.ExitOK {
		code = cli.ExitInterrupted
	}
	os.Exit(code)
}
