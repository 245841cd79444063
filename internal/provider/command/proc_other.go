//go:build !unix

package command

import (
	"os"
	"os/exec"
)

// setGroup is a no-op where process groups are not available.
func setGroup(cmd *exec.Cmd) {}

// signalGroup kills the agent process itself where process groups are not
// available (its children may survive). Killing an already reaped process
// is a harmless error.
func signalGroup(p *os.Process, kill bool) {
	_ = p.Kill()
}
