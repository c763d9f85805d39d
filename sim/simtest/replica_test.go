package simtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/internal/testutil"
	"github.com/llmchaos/llmchaos/simcontract/replicastate"
	"github.com/llmchaos/llmchaos/simcontract/vgpu"
)

// A 40 GiB vGPU at the default 0.9 utilisation: a replica reserves about
// 36 GiB (weights + KV pool) and leaves 4 GiB of headroom for activations.
const gpuMemory = "40GiB"

func TestReplicaRefusesToStartWithTooLittleFreeMemory(t *testing.T) {
	dir := t.TempDir()
	b := startBalloon(t, "--vgpu-dir", dir, "--gpu-memory", gpuMemory, "--gib", "30")
	r := llmchaos(t, "sim", "--listen", "127.0.0.1:0", "--vgpu-dir", dir, "--gpu-memory", gpuMemory)
	if code := r.ExitCode(t, 20*time.Second); code != exitcode.NoGPUMemory {
		t.Fatalf("replica exit code = %d, want %d; stderr:\n%s", code, exitcode.NoGPUMemory, r.Err)
	}
	holder := fmt.Sprintf("held by pid %d (30.0 GiB: balloon 30.0 GiB)", b.PID())
	// stderr is folded at 120 columns when it is not a terminal: read
	// it unfolded.
	stderr := strings.Join(strings.Fields(r.Err.String()), " ")
	for _, want := range []string{"cannot start", "need 36.00 GiB", "only 10.00 GiB", "of 40.00 GiB", holder} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not mention %q:\n%s", want, r.Err)
		}
	}
	d, err := vgpu.Open(dir, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	hs, err := d.Holders()
	if err != nil {
		t.Fatal(err)
	}
	if len(hs) != 1 || hs[0].PID != b.PID() {
		t.Errorf("holders after the refused start = %+v, want only the balloon (pid %d)", hs, b.PID())
	}
}

// loadAndWait starts n long streams at addr and waits until each has a token.
func loadAndWait(t *testing.T, ctx context.Context, addr string, n int) (results []testutil.StreamResult, wait func()) {
	t.Helper()
	results = make([]testutil.StreamResult, n)
	var wg sync.WaitGroup
	firsts := make([]chan struct{}, n)
	for i := range n {
		firsts[i] = make(chan struct{})
		first := func(chunks int) {
			if chunks == 1 {
				close(firsts[i])
			}
		}
		wg.Go(func() { results[i] = testutil.Stream(ctx, addr, 4000, first) })
	}
	for i, f := range firsts {
		select {
		case <-f:
		case <-time.After(20 * time.Second):
			t.Fatalf("stream %d got no token within 20s", i)
		}
	}
	return results, wg.Wait
}

func TestBalloonTakingHeadroomKillsReplicaUnderLoad(t *testing.T) {
	dir := t.TempDir()
	r := llmchaos(t, "sim", "--listen", "127.0.0.1:0", "--vgpu-dir", dir, "--gpu-memory", gpuMemory,
		"--startup-time", "0s", "--latency", "constant", "--ttft", "10ms", "--itl", "10ms")
	addr := servingAddr(t, r)
	testutil.WaitFor(t, 10*time.Second, "/health 200", func() bool { return healthCode(addr) == 200 })

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	results, wait := loadAndWait(t, ctx, addr, 4)

	startBalloon(t, "--vgpu-dir", dir, "--leave-free-gib", "0")
	if code := r.ExitCode(t, 20*time.Second); code != exitcode.SimOOM {
		t.Fatalf("replica exit code = %d, want %d (out of memory); stderr:\n%s", code, exitcode.SimOOM, r.Err)
	}
	wait()
	if !strings.Contains(r.Err.String(), "out of memory") || !strings.Contains(r.Err.String(), "CUDA out of memory") {
		t.Errorf("stderr has no out-of-memory line naming the numbers:\n%s", r.Err)
	}
	for i, res := range results {
		if res.Done || res.Chunks >= 4000 {
			t.Errorf("stream %d finished (%d chunks, [DONE] %v); want it cut by the OOM", i, res.Chunks, res.Done)
		}
	}
}

func TestSupervisorRestartsFailWhileBalloonHolds(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state.json")
	vdir := filepath.Join(dir, "vgpu")
	port := testutil.FreePorts(t, 1)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	sup := llmchaos(t, "sim", "--replicas", "1", "--base-port", strconv.Itoa(port), "--vgpu-dir", vdir,
		"--gpu-memory", gpuMemory, "--state-file", state, "--restart-delay", "500ms", "--startup-time", "200ms",
		"--latency", "constant", "--ttft", "10ms", "--itl", "10ms")
	first := waitState(t, state, 20*time.Second, "replica serving", func(rs []replicastate.Replica) bool {
		return rs[0].State == replicastate.StateServing
	})
	if code := healthCode(addr); code != 200 {
		t.Fatalf("/health = %d while the state file says serving, want 200", code)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, wait := loadAndWait(t, ctx, addr, 4)
	// A balloon that takes the headroom, and then whatever the dead replica frees.
	b := startBalloon(t, "--vgpu-dir", vdir, "--leave-free-gib", "0", "--grow")
	waitState(t, state, 20*time.Second, "the replica to die of OOM", func(rs []replicastate.Replica) bool {
		return rs[0].LastExit == fmt.Sprintf("exit status %d", exitcode.SimOOM)
	})
	wait()
	failing := waitState(t, state, 30*time.Second, "restarts failing while the balloon holds", func(rs []replicastate.Replica) bool {
		return rs[0].State == replicastate.StateRestarting && rs[0].Restarts >= 2 &&
			rs[0].LastExit == fmt.Sprintf("exit status %d", exitcode.NoGPUMemory)
	})
	if failing[0].State == replicastate.StateServing || healthCode(addr) == 200 {
		t.Fatalf("replica serving while the balloon holds: %+v", failing[0])
	}

	b.Cmd.Process.Kill() // a dead holder's memory no longer counts
	<-b.Done()
	back := waitState(t, state, 30*time.Second, "replica serving after the balloon died", func(rs []replicastate.Replica) bool {
		return rs[0].State == replicastate.StateServing
	})
	if back[0].Restarts <= failing[0].Restarts || back[0].PID == first[0].PID {
		t.Errorf("state after recovery = %+v, want a new pid and more restarts than %d", back[0], failing[0].Restarts)
	}
	if code := healthCode(addr); code != 200 {
		t.Errorf("/health after recovery = %d, want 200", code)
	}
	if res := testutil.Stream(ctx, addr, 5, nil); !res.Done || res.Chunks != 5 {
		t.Errorf("stream after recovery = %+v, want 5 chunks and [DONE]", res)
	}

	signal(t, sup.PID(), syscall.SIGTERM)
	if code := sup.ExitCode(t, 20*time.Second); code != 0 {
		t.Errorf("supervisor exit code after SIGTERM = %d, want 0", code)
	}
	final, err := replicastate.Read(state)
	if err != nil {
		t.Fatal(err)
	}
	if final[0].State != replicastate.StateExited {
		t.Errorf("final state = %+v, want exited", final[0])
	}
}

func TestKilledReplicaRestartsAndChildrenDieWithSupervisor(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state.json")
	base := testutil.FreePorts(t, 2)
	sup := llmchaos(t, "sim", "--replicas", "2", "--base-port", strconv.Itoa(base), "--gpu-memory", gpuMemory,
		"--state-file", state, "--restart-delay", "200ms", "--startup-time", "200ms")
	before := waitState(t, state, 20*time.Second, "both replicas serving", func(rs []replicastate.Replica) bool {
		return rs[0].State == replicastate.StateServing && rs[1].State == replicastate.StateServing
	})
	if before[0].GPU == before[1].GPU {
		t.Errorf("replicas share vGPU %d, want one each", before[0].GPU)
	}

	signal(t, before[0].PID, syscall.SIGKILL)
	after := waitState(t, state, 20*time.Second, "replica 0 restarted and serving", func(rs []replicastate.Replica) bool {
		return rs[0].State == replicastate.StateServing && rs[0].PID != before[0].PID
	})
	if after[0].Restarts != before[0].Restarts+1 || after[0].Port != base || after[0].LastExit != "signal: killed" {
		t.Errorf("replica 0 after kill -9 = %+v, want restarts %d, port %d, last_exit %q", after[0], before[0].Restarts+1, base, "signal: killed")
	}
	if code := healthCode("127.0.0.1:" + strconv.Itoa(base)); code != 200 {
		t.Errorf("/health on replica 0's port = %d, want 200", code)
	}
	if after[1].PID != before[1].PID || after[1].Restarts != 0 {
		t.Errorf("replica 1 = %+v, want it untouched (pid %d)", after[1], before[1].PID)
	}

	// The supervisor dies without a chance to stop its children: they must
	// end by themselves (parent-death signal), leaving no orphans.
	signal(t, sup.PID(), syscall.SIGKILL)
	<-sup.Done()
	for _, r := range after {
		ws := testutil.ReapOrGone(t, r.PID, 30*time.Second)
		if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Errorf("replica %d (pid %d) ended with %v, want killed by its parent-death signal", r.Index, r.PID, ws)
		}
	}
}

func TestBalloonExitsWhenParentDies(t *testing.T) {
	dir := t.TempDir()
	// A shell parent: the balloon must not rely on how its parent started it.
	parent := testutil.StartProc(t, nil, "/bin/sh", "-c", `"$0" gpu-balloon --vgpu-dir "$1" --gpu-memory 8GiB --gib 2 & echo "pid $!"; wait`,
		llmchaosBin(), dir)
	m := parent.WaitOutput(t, parent.Out, regexpMust(`pid (\d+)`))
	parent.WaitOutput(t, parent.Out, regexpMust(`holding 2\.0 GiB on vgpu 0`))
	balloon, _ := strconv.Atoi(m[1])

	d, err := vgpu.Open(dir, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if free, _ := d.Free(); free != 6*vgpu.GiB {
		t.Fatalf("free while the balloon holds = %d, want %d", free, 6*vgpu.GiB)
	}
	signal(t, parent.PID(), syscall.SIGKILL)
	<-parent.Done()
	ws := testutil.ReapOrGone(t, balloon, 10*time.Second)
	if !ws.Exited() || ws.ExitStatus() != 0 {
		t.Errorf("balloon ended with %v, want exit 0 after releasing", ws)
	}
	if free, _ := d.Free(); free != 8*vgpu.GiB {
		t.Errorf("free after the balloon's parent died = %d, want %d", free, 8*vgpu.GiB)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	}
}

func TestSupervisorSharedPrivateVGPU(t *testing.T) {
	tmp := t.TempDir()
	state := filepath.Join(tmp, "state.json")
	base := testutil.FreePorts(t, 2)
	sup := testutil.StartProc(t, []string{"TMPDIR=" + tmp}, llmchaosBin(), "sim", "--replicas", "2", "--share-gpu",
		"--base-port", strconv.Itoa(base), "--gpu-memory", "80GiB", "--gpu-memory-utilization", "0.45",
		"--state-file", state, "--startup-time", "0s")
	rs := waitState(t, state, 20*time.Second, "both replicas serving", func(rs []replicastate.Replica) bool {
		return rs[0].State == replicastate.StateServing && rs[1].State == replicastate.StateServing
	})
	if rs[0].GPU != 0 || rs[1].GPU != 0 {
		t.Errorf("GPUs = %d, %d, want both on 0 with --share-gpu", rs[0].GPU, rs[1].GPU)
	}
	dirs, _ := filepath.Glob(filepath.Join(tmp, "llmchaos-vgpu-*"))
	if len(dirs) != 1 {
		t.Fatalf("private vGPU dirs in TMPDIR = %v, want one", dirs)
	}
	d, err := vgpu.Open(dirs[0], 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	hs, err := d.Holders()
	d.Close()
	if err != nil {
		t.Fatal(err)
	}
	pids := map[int]bool{}
	for _, h := range hs {
		pids[h.PID] = true
	}
	if !pids[rs[0].PID] || !pids[rs[1].PID] || len(pids) != 2 {
		t.Errorf("vGPU 0 holders = %+v, want both replicas (pids %d, %d)", hs, rs[0].PID, rs[1].PID)
	}

	signal(t, sup.PID(), syscall.SIGINT)
	if code := sup.ExitCode(t, 20*time.Second); code != 0 {
		t.Errorf("supervisor exit code after Ctrl-C = %d, want 0", code)
	}
	for _, r := range rs {
		if _, err := os.Stat("/proc/" + strconv.Itoa(r.PID)); !os.IsNotExist(err) {
			t.Errorf("replica %d (pid %d) still there after the supervisor stopped", r.Index, r.PID)
		}
	}
	if _, err := os.Stat(dirs[0]); !os.IsNotExist(err) {
		t.Errorf("private vGPU dir %s still there after the supervisor stopped (stat: %v)", dirs[0], err)
	}
}
