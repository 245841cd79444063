package cli

import (
	"errors"
	"fmt"

	"github.com/diffpalhq/diffpal/internal/git"
	"github.com/diffpalhq/diffpal/internal/review"
)

// Exit codes (PRODUCT.md §5). They are the CLI's contract with CI scripts.
const (
	ExitOK          = 0
	ExitFailure     = 1   // unexpected failure
	ExitUsage       = 2   // usage, config or invalid input
	ExitProvider    = 3   // provider failed after retries
	ExitPublish     = 4   // publishing failed
	ExitInternal    = 5   // internal or I/O error
	ExitGateBlocked = 10  // the gate found blocking findings
	ExitInterrupted = 130 // SIGINT/SIGTERM
)

// ExitError carries an exit code. Msg is printed as "diffpal: <msg>" unless
// Silent, for codes whose output was already printed (a gate summary, a
// list of validation problems).
type ExitError struct {
	Code   int
	Err    error
	Silent bool
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

func usageErr(format string, args ...any) error {
	return &ExitError{Code: ExitUsage, Err: fmt.Errorf(format, args...)}
}

func ioErr(err error) error {
	return &ExitError{Code: ExitInternal, Err: err}
}

func silent(code int) error { return &ExitError{Code: code, Silent: true} }

// exitCode maps an error from a command to its code. ran reports whether a
// command's run function started: errors before that come from cobra's
// flag and argument parsing and are usage errors.
func exitCode(err error, ran bool) int {
	if err == nil {
		return ExitOK
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	if !ran {
		return ExitUsage
	}
	return ExitFailure
}

// changeErrOf maps an error from reading a change: bad input (a missing
// revision, a pathspec outside the repository, no repository at -C/--dir)
// is exit 2; anything else is internal (5).
func changeErrOf(err error) error {
	if errors.Is(err, git.ErrNotRepository) || errors.Is(err, review.ErrInput) {
		return &ExitError{Code: ExitUsage, Err: err}
	}
	return &ExitError{Code: ExitInternal, Err: err}
}
