// Command diffpal reviews git changes for CI and AI agents. All logic lives
// in internal/cli; main only wires signals and the exit code.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/diffpalhq/diffpal/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], cli.System())
	if ctx.Err() != nil && code != cli.ExitOK {
		code = cli.ExitInterrupted
	}
	stop()
	os.Exit(code)
}
