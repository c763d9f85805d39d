//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/llmchaos/llmchaos/internal/exitcode"
)

// TestReplicaSignalKillsTheContainersProcesses: `llmchaos replica-signal`
// (what replica.kill's pod runs on a node) sends SIGKILL to the processes
// whose cgroup names the pod and container, here a real child process
// listed in a /proc tree whose cgroup file says it is the container's; a
// process of another container is left alone; none found is an error.
func TestReplicaSignalKillsTheContainersProcesses(t *testing.T) {
	t.Parallel()
	const uid = "0b7c5f0e-2a61-4f5e-9d2c-6f1e2d3c4b5a"
	const ctr = "9f8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a39281706f5e4d3c2b1a0"
	victim := exec.Command("sleep", "60")
	bystander := exec.Command("sleep", "60")
	for _, c := range []*exec.Cmd{victim, bystander} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	}
	proc := t.TempDir()
	for pid, cg := range map[int]string{
		victim.Process.Pid:    "11:memory:/kubepods/besteffort/pod" + uid + "/" + ctr + "\n",
		bystander.Process.Pid: "11:memory:/kubepods/besteffort/pod" + uid + "/other\n",
	} {
		dir := filepath.Join(proc, strconv.Itoa(pid))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "cgroup"), []byte(cg), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, stdout, stderr := run(t, "replica-signal", "--proc", proc, "--pod-uid", uid, "--container", "containerd://"+ctr, "--within", "100ms")
	if code != exitcode.OK {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	err := victim.Wait()
	ws, _ := victim.ProcessState.Sys().(syscall.WaitStatus)
	if err == nil || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the container's process ended with %v, want SIGKILL", err)
	}
	if !strings.Contains(stdout, "sent SIGKILL to 1 process(es)") || !strings.Contains(stdout, strconv.Itoa(victim.Process.Pid)) {
		t.Errorf("stdout %q", stdout)
	}
	if err := bystander.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("another container's process was signalled: %v", err)
	}
	code, _, stderr = run(t, "replica-signal", "--proc", proc, "--pod-uid", uid, "--container", "nothere")
	if code != exitcode.Internal || !strings.Contains(stderr, "not running on this node") {
		t.Errorf("no process: exit %d, stderr:\n%s", code, stderr)
	}
}
