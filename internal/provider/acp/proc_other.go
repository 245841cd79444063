//go:build !unix

package acp

import (
	"os"
	"os/exec"
)

// setGroup is a no-op where process groups are not available.
func setGroup(cmd *exec.Cmd) {}

// signalGroup kills the agent process itself where process groups are not
// available (its children may survive).
func signalGroup(p *os.Process, kill bool) {
	_ = p.Kill()
}
