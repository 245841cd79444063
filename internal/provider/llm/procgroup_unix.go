//go:build unix

package llm

import (
	"os"
	"os/exec"
	"syscall"
)

// SetProcessGroup starts an agent CLI as the leader of a new process
// group, so the helpers it spawns share the group and die with it. The
// agent transports (command, acp) use it.
func SetProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// SignalProcessGroup sends SIGTERM (or SIGKILL when kill is set) to the
// whole process group that p leads. A group that is already gone is fine.
func SignalProcessGroup(p *os.Process, kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-p.Pid, sig)
}
