package experiments

import (
	"os/exec"
	"syscall"
)

// setHelperAttrs gives a helper child a process group of its own and
// SIGTERM when the thread that started it exits (startHelper keeps that
// thread for the child's life, so the signal comes when the runner dies).
func setHelperAttrs(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}

// setShardAttrs is setHelperAttrs for a local load shard, whose parent-death
// signal is SIGKILL: with its runner gone nobody reads its report, and
// every request it would still send is load nobody asked for.
func setShardAttrs(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
