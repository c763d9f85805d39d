package replica

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A pod's containers cannot be sent a SIGKILL through the Kubernetes API:
// deleting a pod, even with grace 0, makes the kubelet send SIGTERM and
// wait its minimum grace (2 s) before SIGKILL, and pods/exec needs a kill
// program inside the container, which a FROM-scratch image (llmchaos's,
// many engines') does not have. What the API does allow is a pod on the
// target's node: replica.kill on a pod creates a short-lived pod there
// (hostPID, only CAP_KILL, the llmchaos image) running the hidden `llmchaos
// replica-signal`, which finds the processes of the target's containers
// through /proc (SignalContainers) and sends them SIGKILL, as the kernel's
// OOM killer or a crash would leave them. The kubelet then restarts the
// containers by the pod's restartPolicy.

// ContainerProcs returns the pids under procRoot (a /proc of the host's pid
// namespace) whose cgroup path names the pod podUID (as the cgroupfs
// driver writes it, "pod<uid>", or the systemd one, "pod<uid with
// underscores>") and one of the containers ids (bare ids, without the
// runtime's "containerd://" prefix), sorted. A process that ends while
// it is read is skipped.
func ContainerProcs(procRoot, podUID string, ids []string) ([]int, error) {
	if podUID == "" || len(ids) == 0 {
		return nil, errors.New("a pod uid and at least one container id are needed")
	}
	pods := []string{"pod" + podUID, "pod" + strings.ReplaceAll(podUID, "-", "_")}
	ents, err := os.ReadDir(procRoot)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", procRoot, err)
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		b, err := os.ReadFile(filepath.Join(procRoot, e.Name(), "cgroup"))
		if err != nil {
			continue // gone, or not a process
		}
		if inContainer(b, pods, ids) {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	return pids, nil
}

// inContainer reports whether one line of a /proc/PID/cgroup file names
// one of pods and one of ids as components of its path.
func inContainer(cgroup []byte, pods, ids []string) bool {
	for line := range bytes.Lines(cgroup) {
		// hierarchy-ID:controllers:path
		parts := bytes.SplitN(bytes.TrimRight(line, "\n"), []byte(":"), 3)
		if len(parts) != 3 {
			continue
		}
		var pod, ctr bool
		for _, comp := range strings.Split(string(parts[2]), "/") {
			for _, p := range pods {
				// cgroupfs: "pod<uid>"; systemd: "kubepods-besteffort-pod<uid>.slice"
				if comp == p || strings.HasSuffix(comp, "-"+p+".slice") {
					pod = true
				}
			}
			for _, id := range ids {
				// cgroupfs: "<id>"; systemd: "cri-containerd-<id>.scope", "docker-<id>.scope", "crio-<id>.scope"
				if comp == id || strings.HasSuffix(comp, "-"+id+".scope") {
					ctr = true
				}
			}
		}
		if pod && ctr {
			return true
		}
	}
	return false
}

// ContainerID returns the bare id of a container status's containerID
// ("containerd://ID" → "ID").
func ContainerID(runtimeID string) string {
	if _, id, ok := strings.Cut(runtimeID, "://"); ok {
		return id
	}
	return runtimeID
}

// SignalContainers sends sig (through send, syscall.Kill in production)
// to every process of the containers ids of pod podUID found under
// procRoot, and again to any found after (a process forked meanwhile)
// until none is left or within is up; it returns the pids it signalled.
// None found at first is an error: the containers are not running on this
// node.
func SignalContainers(procRoot, podUID string, ids []string, send func(pid int) error, within time.Duration) ([]int, error) {
	deadline := time.Now().Add(within)
	var signalled []int
	for round := 0; ; round++ {
		pids, err := ContainerProcs(procRoot, podUID, ids)
		if err != nil {
			return signalled, err
		}
		if round == 0 && len(pids) == 0 {
			return nil, fmt.Errorf("no process of container(s) %s of pod %s under %s: not running on this node", strings.Join(ids, ", "), podUID, procRoot)
		}
		fresh := 0
		for _, pid := range pids {
			if !slices.Contains(signalled, pid) {
				if err := send(pid); err != nil && !errors.Is(err, os.ErrProcessDone) {
					return signalled, fmt.Errorf("signal pid %d: %w", pid, err)
				}
				signalled = append(signalled, pid)
				fresh++
			}
		}
		if len(pids) == 0 || (fresh == 0 && round > 0 && time.Now().After(deadline)) {
			return signalled, nil
		}
		if time.Now().After(deadline) {
			return signalled, fmt.Errorf("processes of the containers still there after %v: %v", within, pids)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
