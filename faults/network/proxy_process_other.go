//go:build !linux

package network

import "os/exec"

// setParentDeathSignal is a no-op without PR_SET_PDEATHSIG; the child still
// ends when its stdin closes.
func setParentDeathSignal(*exec.Cmd) {}
