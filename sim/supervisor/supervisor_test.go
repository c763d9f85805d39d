package supervisor

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/testutil"
	"github.com/llmchaos/llmchaos/simcontract/replicastate"
)

func TestOptionsValidate(t *testing.T) {
	cmd := func(Slot) *exec.Cmd { return nil }
	tests := []struct {
		name string
		opts Options
		want []string // substrings of the error; none → valid
	}{
		{name: "valid", opts: Options{Replicas: 2, BasePort: 8000, Command: cmd}},
		{name: "no replicas", opts: Options{BasePort: 8000, Command: cmd}, want: []string{"replicas: 0"}},
		{name: "port overflow", opts: Options{Replicas: 3, BasePort: 65534, Command: cmd}, want: []string{"base port: 65534"}},
		{name: "port zero: the system picks", opts: Options{Replicas: 3, Command: cmd}},
		{name: "negative port", opts: Options{Replicas: 1, BasePort: -1, Command: cmd}, want: []string{"base port: -1"}},
		{name: "everything", opts: Options{BasePort: -1, RestartDelay: -1, GPU: -1}, want: []string{"replicas", "base port", "gpu: -1", "command", "durations"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want an error mentioning %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, want it to mention %q", err, w)
				}
			}
		})
	}
}

func TestSlots(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		i    int
		want Slot
	}{
		{name: "own gpu", opts: Options{Host: "127.0.0.1", BasePort: 9000}, i: 2, want: Slot{Index: 2, Addr: "127.0.0.1:9002", Port: 9002, GPU: 2}},
		{name: "offset gpu", opts: Options{Host: "127.0.0.1", BasePort: 9000, GPU: 4}, i: 1, want: Slot{Index: 1, Addr: "127.0.0.1:9001", Port: 9001, GPU: 5}},
		{name: "shared gpu", opts: Options{Host: "0.0.0.0", BasePort: 9000, GPU: 3, ShareGPU: true}, i: 1, want: Slot{Index: 1, Addr: "0.0.0.0:9001", Port: 9001, GPU: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.opts.slot(tt.i); got != tt.want {
				t.Errorf("slot(%d) = %+v, want %+v", tt.i, got, tt.want)
			}
		})
	}
	if got, want := (Options{Host: "0.0.0.0"}).probeAddr(Slot{Port: 7}), "127.0.0.1:7"; got != want {
		t.Errorf("probeAddr for a wildcard host = %q, want %q", got, want)
	}
}

// runSupervisor runs Run in the background; the returned stop cancels it and
// waits for it to return.
func runSupervisor(t *testing.T, opts Options) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var (
		wg  sync.WaitGroup
		err error
	)
	wg.Go(func() { err = Run(ctx, opts) })
	var once sync.Once
	stop = func() error {
		once.Do(func() { cancel(); wg.Wait() })
		return err
	}
	t.Cleanup(func() { stop() })
	return stop
}

// replicaCmd runs a helper replica on its slot: on the inherited socket
// when the supervisor bound the port, else on the slot's address.
func replicaCmd(s Slot, env []string) *exec.Cmd {
	if s.ListenFD != 0 {
		return helperCmd("replica", "fd:"+strconv.Itoa(s.ListenFD), env)
	}
	return helperCmd("replica", s.Addr, env)
}

func TestPickedPortsArePublishedAndKeptAcrossRestarts(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state.json")
	var (
		mu    sync.Mutex
		slots []Slot
	)
	runSupervisor(t, Options{
		Replicas: 3, StateFile: state,
		RestartDelay: 100 * time.Millisecond, HealthInterval: 20 * time.Millisecond,
		Command: func(s Slot) *exec.Cmd {
			mu.Lock()
			slots = append(slots, s)
			mu.Unlock()
			return replicaCmd(s, []string{"STARTUP=50ms"})
		},
	})
	before := waitState(t, state, 20*time.Second, "all replicas serving", func(rs []replicastate.Replica) bool {
		for _, r := range rs {
			if r.State != replicastate.StateServing {
				return false
			}
		}
		return true
	})
	seen := map[int]bool{}
	for _, r := range before {
		if r.Port == 0 || seen[r.Port] {
			t.Fatalf("replica %d published port %d; want a distinct picked port (state %+v)", r.Index, r.Port, before)
		}
		seen[r.Port] = true
		if got := healthPID(r.Port); got != r.PID {
			t.Errorf("replica %d's port %d is served by pid %d, want %d", r.Index, r.Port, got, r.PID)
		}
	}
	if err := syscall.Kill(before[0].PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	after := waitState(t, state, 20*time.Second, "replica 0 restarted and serving", func(rs []replicastate.Replica) bool {
		return rs[0].State == replicastate.StateServing && rs[0].PID != before[0].PID
	})
	if after[0].Port != before[0].Port || after[0].Restarts != 1 {
		t.Errorf("replica 0 after kill -9 = %+v, want port %d kept and restarts 1", after[0], before[0].Port)
	}
	if got := healthPID(after[0].Port); got != after[0].PID {
		t.Errorf("replica 0's port is served by pid %d, want the new pid %d", got, after[0].PID)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, s := range slots {
		if s.ListenFD != ListenFD || s.Addr != "127.0.0.1:"+strconv.Itoa(s.Port) {
			t.Errorf("slot %+v: want ListenFD %d and the picked port in Addr", s, ListenFD)
		}
	}
}

func TestKilledReplicaRestartsOnSamePort(t *testing.T) {
	base := testutil.FreePorts(t, 2)
	state := filepath.Join(t.TempDir(), "state.json")
	runSupervisor(t, Options{
		Replicas: 2, BasePort: base, StateFile: state,
		RestartDelay: 100 * time.Millisecond, HealthInterval: 20 * time.Millisecond,
		Command: func(s Slot) *exec.Cmd { return helperCmd("replica", s.Addr, []string{"STARTUP=150ms"}) },
	})
	before := waitState(t, state, 20*time.Second, "both replicas serving", func(rs []replicastate.Replica) bool {
		return rs[0].State == replicastate.StateServing && rs[1].State == replicastate.StateServing
	})
	if got := healthPID(base); got != before[0].PID {
		t.Fatalf("replica 0's port is served by pid %d, want %d", got, before[0].PID)
	}
	if err := syscall.Kill(before[0].PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	after := waitState(t, state, 20*time.Second, "replica 0 restarted and serving", func(rs []replicastate.Replica) bool {
		return rs[0].State == replicastate.StateServing && rs[0].PID != before[0].PID
	})
	if after[0].Restarts != 1 || after[0].LastExit != "signal: killed" || after[0].Port != base {
		t.Errorf("replica 0 after kill -9 = %+v, want restarts 1, last_exit %q, port %d", after[0], "signal: killed", base)
	}
	if got := healthPID(base); got != after[0].PID {
		t.Errorf("replica 0's port is served by pid %d, want the new pid %d", got, after[0].PID)
	}
	if after[1] != before[1] {
		t.Errorf("replica 1 changed: %+v, want %+v", after[1], before[1])
	}
}

func TestCrashLoopThenRecovers(t *testing.T) {
	base := testutil.FreePorts(t, 1)
	dir := t.TempDir()
	state, block := filepath.Join(dir, "state.json"), filepath.Join(dir, "block")
	if err := os.WriteFile(block, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	runSupervisor(t, Options{
		Replicas: 1, BasePort: base, StateFile: state,
		RestartDelay: 50 * time.Millisecond, HealthInterval: 20 * time.Millisecond,
		Command: func(s Slot) *exec.Cmd { return helperCmd("replica", s.Addr, []string{"BLOCK_FILE=" + block}) },
	})
	looping := waitState(t, state, 20*time.Second, "restarts climbing while blocked", func(rs []replicastate.Replica) bool {
		return rs[0].Restarts >= 3 && rs[0].LastExit == "exit status 3"
	})
	if looping[0].State == replicastate.StateServing {
		t.Fatalf("replica serving while blocked: %+v", looping[0])
	}
	if err := os.Remove(block); err != nil {
		t.Fatal(err)
	}
	got := waitState(t, state, 20*time.Second, "replica serving once unblocked", func(rs []replicastate.Replica) bool {
		return rs[0].State == replicastate.StateServing
	})
	if got[0].Restarts < looping[0].Restarts {
		t.Errorf("restarts went down: %d after %d", got[0].Restarts, looping[0].Restarts)
	}
	if healthPID(base) != got[0].PID {
		t.Errorf("port %d not served by the replica's pid %d", base, got[0].PID)
	}
}

func TestStopTermsThenKills(t *testing.T) {
	base := testutil.FreePorts(t, 2)
	state := filepath.Join(t.TempDir(), "state.json")
	stubborn := func(s Slot) *exec.Cmd {
		env := []string{}
		if s.Index == 1 {
			env = append(env, "IGNORE_TERM=1")
		}
		return helperCmd("replica", s.Addr, env)
	}
	stop := runSupervisor(t, Options{
		Replicas: 2, BasePort: base, StateFile: state, StopGrace: 300 * time.Millisecond,
		HealthInterval: 20 * time.Millisecond, Command: stubborn,
	})
	rs := waitState(t, state, 20*time.Second, "both serving", func(rs []replicastate.Replica) bool {
		return rs[0].State == replicastate.StateServing && rs[1].State == replicastate.StateServing
	})
	if err := stop(); err != nil {
		t.Fatalf("Run returned %v, want nil after cancel", err)
	}
	final, err := replicastate.Read(state)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"exit status 0", "signal: killed"}
	for i, r := range final {
		if r.State != replicastate.StateExited || r.LastExit != want[i] {
			t.Errorf("replica %d final = %+v, want state exited, last_exit %q", i, r, want[i])
		}
		if !processGone(rs[i].PID) {
			t.Errorf("replica %d (pid %d) still running after Run returned", i, rs[i].PID)
		}
	}
}

func TestStartFailureIsRetried(t *testing.T) {
	base := testutil.FreePorts(t, 1)
	state := filepath.Join(t.TempDir(), "state.json")
	runSupervisor(t, Options{
		Replicas: 1, BasePort: base, StateFile: state, RestartDelay: 20 * time.Millisecond,
		Command: func(Slot) *exec.Cmd { return exec.Command(filepath.Join(t.TempDir(), "no-such-binary")) },
	})
	rs := waitState(t, state, 10*time.Second, "start failures counted", func(rs []replicastate.Replica) bool {
		return rs[0].Restarts >= 2
	})
	if !strings.HasPrefix(rs[0].LastExit, "start failed:") || rs[0].PID != 0 {
		t.Errorf("replica = %+v, want last_exit starting %q and pid 0", rs[0], "start failed:")
	}
}

func TestRunFailsOnUnwritableStateFile(t *testing.T) {
	err := Run(context.Background(), Options{
		Replicas: 1, BasePort: 9000, StateFile: filepath.Join(t.TempDir(), "missing", "state.json"),
		Command: func(Slot) *exec.Cmd { t.Error("a child was started"); return exec.Command("true") },
	})
	if err == nil || !strings.Contains(err.Error(), "state file") {
		t.Errorf("Run = %v, want a state file error before any child starts", err)
	}
}

func TestChildrenDieWithKilledSupervisor(t *testing.T) {
	base := testutil.FreePorts(t, 2)
	state := filepath.Join(t.TempDir(), "state.json")
	sup := helperCmd("supervise", state, []string{"BASE_PORT=" + strconv.Itoa(base)})
	if err := sup.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sup.Process.Kill(); sup.Wait() })
	rs := waitState(t, state, 20*time.Second, "both serving", func(rs []replicastate.Replica) bool {
		return rs[0].State == replicastate.StateServing && rs[1].State == replicastate.StateServing
	})
	if err := sup.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	sup.Wait()
	for _, r := range rs {
		ws := testutil.ReapOrGone(t, r.PID, 30*time.Second)
		if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Errorf("replica %d (pid %d) ended with %v, want killed by its parent-death signal", r.Index, r.PID, ws)
		}
	}
}

func TestWatchParent(t *testing.T) {
	for _, mode := range []string{"pidfd", "poll"} {
		t.Run(mode, func(t *testing.T) {
			middle := helperCmd("middle", mode, nil)
			out, err := middle.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := middle.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { middle.Process.Kill(); middle.Wait() })
			line, err := bufio.NewReader(out).ReadString('\n')
			if err != nil {
				t.Fatalf("middle's output: %v", err)
			}
			leaf, err := strconv.Atoi(strings.TrimSpace(line))
			if err != nil {
				t.Fatal(err)
			}
			if processGone(leaf) {
				t.Fatalf("leaf %d exited while its parent lives", leaf)
			}
			if err := middle.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			middle.Wait()
			ws := testutil.Reap(t, leaf, 10*time.Second)
			if !ws.Exited() || ws.ExitStatus() != 0 {
				t.Errorf("leaf ended with %v, want exit 0 after seeing ErrParentDied", ws)
			}
		})
	}
}

func TestWatchParentStop(t *testing.T) {
	ctx, stop := WatchParent(context.Background())
	stop()
	if ctx.Err() == nil {
		t.Fatal("context alive after stop")
	}
	if cause := context.Cause(ctx); cause != context.Canceled {
		t.Errorf("cause = %v, want context.Canceled (the parent lives)", cause)
	}
}

// BenchmarkRestart measures how long a killed replica is away: kill -9 to
// /health 200 on the same port, with no restart delay or startup time, so
// the figure is the supervisor's own overhead (reap, exec, health probing).
func BenchmarkRestart(b *testing.B) {
	base := testutil.FreePorts(b, 1)
	state := filepath.Join(b.TempDir(), "state.json")
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		Run(ctx, Options{
			Replicas: 1, BasePort: base, StateFile: state, HealthInterval: 5 * time.Millisecond,
			Command: func(s Slot) *exec.Cmd { return helperCmd("replica", s.Addr, nil) },
		})
	})
	defer func() { cancel(); wg.Wait() }()
	serving := func(notPID int) []replicastate.Replica {
		for {
			if rs, err := replicastate.Read(state); err == nil && rs[0].State == replicastate.StateServing && rs[0].PID != notPID {
				return rs
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(time.Millisecond):
			}
		}
	}
	rs := serving(0)
	var total time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		syscall.Kill(rs[0].PID, syscall.SIGKILL)
		rs = serving(rs[0].PID)
		total += time.Since(start)
	}
	ms := float64(total.Microseconds()) / 1000 / float64(max(b.N, 1))
	b.ReportMetric(ms, "ms/restart")
	b.Logf("kill -9 → serving again on the same port: %.1f ms (restart delay 0, startup 0)", ms)
}

func TestWaitExitOnPidfd(t *testing.T) {
	child := helperCmd("replica", "127.0.0.1:0", nil)
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Process.Kill(); child.Wait() })
	f, err := openPidfd(child.Process.Pid)
	if err != nil {
		t.Fatalf("openPidfd: %v (this kernel should support pollable pidfds)", err)
	}
	defer f.Close()

	// ctx ends first: the wait returns promptly, reporting no exit.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	exited, err := waitExit(ctx, f)
	cancel()
	if err != nil || exited {
		t.Fatalf("waitExit with a live process and an ended ctx = %v, %v; want false, nil", exited, err)
	}

	// The process exits: the wait sees it without polling.
	res := make(chan error, 1)
	go func() {
		exited, err := waitExit(context.Background(), f)
		if err == nil && !exited {
			err = errors.New("returned without an exit")
		}
		res <- err
	}()
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-res:
		if err != nil {
			t.Fatalf("waitExit: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("waitExit did not return within 10s of the process dying")
	}
}
