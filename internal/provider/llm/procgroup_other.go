//go:build !unix

package llm

import (
	"os"
	"os/exec"
)

// SetProcessGroup is a no-op where process groups are not available.
func SetProcessGroup(cmd *exec.Cmd) {}

// SignalProcessGroup kills the agent process itself where process groups
// are not available (its children may survive). Killing an already
// reaped process is a harmless error.
func SignalProcessGroup(p *os.Process, kill bool) {
	_ = p.Kill()
}
