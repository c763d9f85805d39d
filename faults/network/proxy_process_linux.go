package network

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal asks the kernel to send the child SIGTERM when the
// thread that starts it exits (the caller keeps that thread for the child's
// life).
func setParentDeathSignal(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGTERM
}
