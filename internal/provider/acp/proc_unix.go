//go:build unix

package acp

import (
	"os"
	"os/exec"
	"syscall"
)

// setGroup starts the agent as the leader of a new process group (the
// approach of provider/command: helpers the agent spawns share the group
// and die with it).
func setGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup sends SIGTERM (or SIGKILL when kill is set) to the whole
// process group that p leads. A group that is already gone is fine.
func signalGroup(p *os.Process, kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-p.Pid, sig)
}
