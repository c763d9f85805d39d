package replica

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakeProc writes a /proc tree: each pid's cgroup file.
func fakeProc(t *testing.T, procs map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for pid, cgroup := range procs {
		dir := filepath.Join(root, pid)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "cgroup"), []byte(cgroup), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Not processes: skipped.
	for _, name := range []string{"self", "sys", "cpuinfo"} {
		if err := os.MkdirAll(filepath.Join(root, name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

const (
	testUID   = "6f1c9a0e-1b2c-4d3e-8f90-a1b2c3d4e5f6"
	testCtr   = "3b0e4f6a9d8c7b6a5f4e3d2c1b0a99887766554433221100ffeeddccbbaa9988"
	otherCtr  = "aa0e4f6a9d8c7b6a5f4e3d2c1b0a99887766554433221100ffeeddccbbaa9988"
	sandboxID = "bb0e4f6a9d8c7b6a5f4e3d2c1b0a99887766554433221100ffeeddccbbaa9988"
)

// TestContainerProcsMatchesTheContainersCgroups: the processes of the
// pod's named containers are found by their cgroup paths, as the cgroupfs
// (v1, several hierarchies) and systemd (v2 unified) drivers write them;
// the pod's sandbox (pause), another container of the pod, a container of
// the same id prefix in another pod, and the host's processes are not.
func TestContainerProcsMatchesTheContainersCgroups(t *testing.T) {
	t.Parallel()
	sysUID := strings.ReplaceAll(testUID, "-", "_")
	root := fakeProc(t, map[string]string{
		// cgroup v1, cgroupfs driver (the test node): the engine and a child.
		"4101": "12:pids:/kubepods/besteffort/pod" + testUID + "/" + testCtr + "\n11:memory:/kubepods/besteffort/pod" + testUID + "/" + testCtr + "\n0::/\n",
		"4102": "12:pids:/kubepods/besteffort/pod" + testUID + "/" + testCtr + "\n",
		// cgroup v2, systemd driver.
		"5200": "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + sysUID + ".slice/cri-containerd-" + testCtr + ".scope\n",
		// The sandbox, another container of the pod.
		"4100": "12:pids:/kubepods/besteffort/pod" + testUID + "/" + sandboxID + "\n",
		"4200": "12:pids:/kubepods/besteffort/pod" + testUID + "/" + otherCtr + "\n",
		// The same container id under another pod (never, but not this pod's).
		"6000": "12:pids:/kubepods/besteffort/pod00000000-0000-0000-0000-000000000000/" + testCtr + "\n",
		// A prefix of the id is not the id.
		"6001": "12:pids:/kubepods/besteffort/pod" + testUID + "/" + testCtr[:12] + "\n",
		// Host processes.
		"1":   "0::/init.scope\n",
		"777": "12:pids:/docker/" + testCtr + "\n",
	})
	got, err := ContainerProcs(root, testUID, []string{testCtr})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{4101, 4102, 5200}; !slices.Equal(got, want) {
		t.Errorf("pids %v, want %v", got, want)
	}
	got, err = ContainerProcs(root, testUID, []string{testCtr, otherCtr})
	if err != nil || !slices.Equal(got, []int{4101, 4102, 4200, 5200}) {
		t.Errorf("two containers: %v, %v", got, err)
	}
	if _, err := ContainerProcs(root, "", []string{testCtr}); err == nil {
		t.Error("no pod uid: no error")
	}
	if id := ContainerID("containerd://" + testCtr); id != testCtr {
		t.Errorf("ContainerID = %q", id)
	}
}

// TestSignalContainersSignalsEachProcessOnce: every process found is sent
// the signal once, one forked after the first round too; none found is an
// error (not on this node).
func TestSignalContainersSignalsEachProcessOnce(t *testing.T) {
	t.Parallel()
	cg := "12:pids:/kubepods/pod" + testUID + "/" + testCtr + "\n"
	root := fakeProc(t, map[string]string{"10": cg, "11": cg, "99": "0::/\n"})
	var sent []int
	got, err := SignalContainers(root, testUID, []string{testCtr}, func(pid int) error {
		sent = append(sent, pid)
		// Each signalled process dies; 10 forks 12 as it does.
		if err := os.RemoveAll(filepath.Join(root, strconv.Itoa(pid))); err != nil {
			t.Fatal(err)
		}
		if pid == 10 {
			if err := os.MkdirAll(filepath.Join(root, "12"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, "12", "cgroup"), []byte(cg), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return nil
	}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []int{10, 11, 12}) || !slices.Equal(sent, []int{10, 11, 12}) {
		t.Errorf("signalled %v (sent %v), want 10 11 12 once each", got, sent)
	}
	if _, err := SignalContainers(root, testUID, []string{otherCtr}, func(int) error { return nil }, time.Second); err == nil || !strings.Contains(err.Error(), "not running on this node") {
		t.Errorf("no process: %v", err)
	}
}
