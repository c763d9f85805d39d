//go:build !linux

package experiments

import "os/exec"

// setHelperAttrs does nothing where the OS has no parent-death signal: the
// helper then ends through the journal (`llmchaos recover`) after a crash.
func setHelperAttrs(*exec.Cmd) {}

// setShardAttrs does nothing where the OS has no parent-death signal.
func setShardAttrs(*exec.Cmd) {}
