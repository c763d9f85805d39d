// Command pause is the test node's pod sandbox (what the upstream pause image
// is to a real cluster): it holds the pod's namespaces and does nothing
// until it is told to stop, reaping any orphan the pod's pid namespace
// hands it. Built static and packed FROM scratch by scripts/k8s-node.sh.
//go:build linux

package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			return
		}
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
