package network

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal asks the kernel to send the child SIGTERM when the
// thread that starts it exits (the caller keeps that thread for the child's
// life), and puts the child in a process group of its own: a terminal's
// Ctrl-C (SIGINT to the whole foreground group) then reaches only the
// runner, which reverts through its live proxies and stops them in order,
// instead of the proxies dying first under it.
func setParentDeathSignal(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGTERM
	cmd.SysProcAttr.Setpgid = true
}
