package gpu

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/testutil"
	"github.com/llmchaos/llmchaos/simcontract/vgpu"
)

func newPressure(t *testing.T, p PressureParams, o BalloonOptions) *MemoryPressure {
	t.Helper()
	if o.Binary == "" {
		o.Binary = llmchaosBin
	}
	f, err := NewMemoryPressure("pressure", p, o)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// holders returns the live reservations of d by pid.
func holders(t *testing.T, d *vgpu.Device) map[int]int64 {
	t.Helper()
	hs, err := d.Holders()
	if err != nil {
		t.Fatal(err)
	}
	m := map[int]int64{}
	for _, h := range hs {
		m[h.PID] += h.Bytes
	}
	return m
}

func TestMemoryPressureHoldsUntilUndo(t *testing.T) {
	dir, d := newVGPU(t, 10*vgpu.GiB)
	f := newPressure(t, PressureParams{GiB: ptr(4.0), VGPUDir: dir}, BalloonOptions{})
	log := &recLog{}
	undo, err := f.Inject(context.Background(), log)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := log.kinds(), []string{KindBalloonToken, faults.KindProcess}; !slices.Equal(got, want) {
		t.Fatalf("revert specs recorded = %v, want %v (the token before the start, the pid after)", got, want)
	}
	ps := processSpec(t, log.spec(t, faults.KindProcess))
	if got, want := holders(t, d), map[int]int64{ps.PID: 4 * vgpu.GiB}; !maps.Equal(got, want) {
		t.Errorf("ledger holders = %v, want only the balloon child (pid %d) with 4 GiB", got, ps.PID)
	}
	if got := ppid(t, ps.PID); got != os.Getpid() {
		t.Errorf("balloon's parent = %d, want this process (%d)", got, os.Getpid())
	}
	if got := free(t, d); got != 6*vgpu.GiB {
		t.Errorf("free while the balloon holds = %d, want %d", got, 6*vgpu.GiB)
	}
	var tok TokenSpec
	if err := json.Unmarshal(log.spec(t, KindBalloonToken).Data, &tok); err != nil {
		t.Fatal(err)
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(ps.PID) + "/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	if !hasArg(cmdline, []byte("--fault-token="+tok.Token)) {
		t.Errorf("balloon argv %q does not carry the recorded token %s", cmdline, tok.Token)
	}

	if err := undo(context.Background()); err != nil {
		t.Fatalf("Undo: %v", err)
	}
	if alive(t, ps.PID) {
		t.Errorf("balloon pid %d still running after Undo", ps.PID)
	}
	if got := free(t, d); got != 10*vgpu.GiB {
		t.Errorf("free after Undo = %d, want %d", got, 10*vgpu.GiB)
	}
	if err := undo(context.Background()); err != nil {
		t.Errorf("second Undo: %v, want nil", err)
	}
}

func TestMemoryPressureInjectFailsCleanly(t *testing.T) {
	script := filepath.Join(t.TempDir(), "silent-balloon")
	// A "balloon" that never says it holds.
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexec sleep 30\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		p    func(dir string) PressureParams
		o    BalloonOptions
		log  *recLog
		want []string
	}{
		{
			name: "too little free",
			p:    func(dir string) PressureParams { return PressureParams{GiB: ptr(20.0), VGPUDir: dir} },
			want: []string{"exited before it held memory", "exit status 4", "need 20.0 GiB, free 10.0 GiB of 10.0 GiB"},
		},
		{
			name: "no capacity on record",
			p:    func(string) PressureParams { return PressureParams{GiB: ptr(1.0), VGPUDir: t.TempDir()} },
			want: []string{"exited before it held memory", "no capacity on record"},
		},
		{
			name: "never says it holds",
			p:    func(dir string) PressureParams { return PressureParams{GiB: ptr(1.0), VGPUDir: dir} },
			o:    BalloonOptions{Binary: script, ReadyTimeout: 300 * time.Millisecond, StopGrace: 200 * time.Millisecond},
			want: []string{"did not say it holds within 300ms"},
		},
		{
			name: "journal fails after the start",
			p:    func(dir string) PressureParams { return PressureParams{GiB: ptr(1.0), VGPUDir: dir} },
			log:  &recLog{failAt: 2},
			want: []string{"disk full"},
		},
		{
			name: "journal fails before the start",
			p:    func(dir string) PressureParams { return PressureParams{GiB: ptr(1.0), VGPUDir: dir} },
			log:  &recLog{failAt: 1},
			want: []string{"disk full"},
		},
		{
			// The static llmchaos of these tests has no cuda backend.
			name: "cuda backend not built in",
			p:    func(string) PressureParams { return PressureParams{GiB: ptr(1.0), Backend: BackendCUDA} },
			want: []string{"exited before it held memory", "exit status 2", "built without the cuda balloon backend", "-tags cuda"},
		},
		{
			name: "no such binary",
			p:    func(dir string) PressureParams { return PressureParams{GiB: ptr(1.0), VGPUDir: dir} },
			o:    BalloonOptions{Binary: filepath.Join(t.TempDir(), "nope")},
			want: []string{"start balloon", "no such file"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, d := newVGPU(t, 10*vgpu.GiB)
			log := tt.log
			if log == nil {
				log = &recLog{}
			}
			f := newPressure(t, tt.p(dir), tt.o)
			undo, err := f.Inject(context.Background(), log)
			if err == nil {
				undo(context.Background())
				t.Fatalf("Inject succeeded, want an error mentioning %q", tt.want)
			}
			for _, w := range append(tt.want, `fault "pressure" (gpu.memory_pressure`) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nwant it to mention %q", err, w)
				}
			}
			// All or nothing: no balloon left, nothing held.
			if got := free(t, d); got != 10*vgpu.GiB {
				t.Errorf("free after a failed Inject = %d, want %d", got, 10*vgpu.GiB)
			}
			for _, s := range log.specs {
				if s.Kind != KindBalloonToken {
					continue
				}
				var tok TokenSpec
				json.Unmarshal(s.Data, &tok)
				left, err := processesWithArg(FaultTokenFlag + "=" + tok.Token)
				if err != nil || len(left) != 0 {
					t.Errorf("processes carrying the token after a failed Inject: %v (%v), want none", left, err)
				}
			}
		})
	}
}

// TestBalloonDiesWithItsParent starts the fault from a helper process with
// a real journal, kills the helper with SIGKILL, and sees the balloon exit
// by itself, freeing the memory; recovering the helper's journal then has
// nothing left to do.
func TestBalloonDiesWithItsParent(t *testing.T) {
	dir, d := newVGPU(t, 8*vgpu.GiB)
	run := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	h := testutil.StartProc(t, []string{helperEnv + "=inject", "GPU_TEST_VGPU=" + dir, "GPU_TEST_RUN=" + run, "GPU_TEST_BIN=" + llmchaosBin},
		self, "-test.run=^$")
	m := h.WaitOutput(t, h.Out, regexp.MustCompile(`balloon (\d+)`))
	balloon, _ := strconv.Atoi(m[1])
	if got := holders(t, d); got[balloon] != 2*vgpu.GiB {
		t.Fatalf("holders = %v, want the balloon (pid %d) holding 2 GiB", got, balloon)
	}
	if err := h.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-h.Done()
	ws := testutil.Reap(t, balloon, 10*time.Second)
	if !ws.Exited() || ws.ExitStatus() != 0 {
		t.Errorf("balloon ended with %v, want exit 0 after releasing on its parent's death", ws)
	}
	if got := free(t, d); got != 8*vgpu.GiB {
		t.Errorf("free after the balloon's parent died = %d, want %d", got, 8*vgpu.GiB)
	}
	rep, err := faults.Recover(context.Background(), run, allReverters())
	if err != nil {
		t.Fatalf("Recover: %v", err)
	}
	if len(rep.Faults) != 1 || rep.Faults[0].Err != nil || len(rep.Faults[0].Specs) != 2 {
		t.Errorf("Recover report = %+v, want the one fault, its 2 specs replayed without error", rep.Faults)
	}
}

// allReverters is what the runner's recover would use.
func allReverters() map[string]faults.Reverter {
	m := faults.BuiltinReverters()
	maps.Copy(m, Reverters())
	return m
}

// TestRevertSpecsAlone reverts a balloon from its recorded specs only, as
// `llmchaos recover` does after the runner died while its child lives on.
func TestRevertSpecsAlone(t *testing.T) {
	ctx := context.Background()
	t.Run("process spec, and a mismatched start time refused", func(t *testing.T) {
		dir, d := newVGPU(t, 8*vgpu.GiB)
		log := &recLog{}
		b, err := newPressure(t, PressureParams{GiB: ptr(3.0), VGPUDir: dir}, BalloonOptions{}).Start(ctx, log)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Stop(ctx)
		ps := processSpec(t, log.spec(t, faults.KindProcess))
		wrong := ps
		wrong.StartTime++
		data, _ := json.Marshal(wrong)
		if err := faults.RevertProcess(ctx, data); err != nil {
			t.Fatalf("revert with another start time: %v, want nil (another process, left alone)", err)
		}
		if !alive(t, ps.PID) || free(t, d) != 5*vgpu.GiB {
			t.Fatalf("a spec with a mismatched start time ended the balloon (alive %v, free %d)", alive(t, ps.PID), free(t, d))
		}
		if err := allReverters()[faults.KindProcess](ctx, log.spec(t, faults.KindProcess).Data); err != nil {
			t.Fatal(err)
		}
		<-b.Done()
		if got := free(t, d); got != 8*vgpu.GiB {
			t.Errorf("free after reverting the process spec = %d, want %d", got, 8*vgpu.GiB)
		}
	})
	t.Run("token spec alone", func(t *testing.T) {
		dir, d := newVGPU(t, 8*vgpu.GiB)
		log := &recLog{}
		b, err := newPressure(t, PressureParams{GiB: ptr(3.0), VGPUDir: dir}, BalloonOptions{}).Start(ctx, log)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Stop(ctx)
		// Another balloon with another token must survive.
		other, err := newPressure(t, PressureParams{GiB: ptr(1.0), VGPUDir: dir}, BalloonOptions{}).Start(ctx, &recLog{})
		if err != nil {
			t.Fatal(err)
		}
		defer other.Stop(ctx)
		if err := allReverters()[KindBalloonToken](ctx, log.spec(t, KindBalloonToken).Data); err != nil {
			t.Fatal(err)
		}
		<-b.Done()
		if got := holders(t, d); !maps.Equal(got, map[int]int64{other.PID(): vgpu.GiB}) {
			t.Errorf("holders after reverting one token = %v, want only the other balloon (pid %d)", got, other.PID())
		}
		if err := allReverters()[KindBalloonToken](ctx, log.spec(t, KindBalloonToken).Data); err != nil {
			t.Errorf("second revert of the token: %v, want nil", err)
		}
	})
	t.Run("bad token specs", func(t *testing.T) {
		for _, data := range []string{`{"token":""}`, `{"token":"../../x"}`, `{"token":"0123"}`, `[`} {
			if err := RevertBalloonToken(ctx, json.RawMessage(data)); err == nil {
				t.Errorf("RevertBalloonToken(%s) = nil, want an error (never a broad match)", data)
			}
		}
	})
	t.Run("recover a journal left by a dead runner", func(t *testing.T) {
		dir, d := newVGPU(t, 8*vgpu.GiB)
		run := t.TempDir()
		j, err := faults.Open(run)
		if err != nil {
			t.Fatal(err)
		}
		e, err := j.Begin("pressure", TypeMemoryPressure, "vgpu 0")
		if err != nil {
			t.Fatal(err)
		}
		b, err := newPressure(t, PressureParams{LeaveFreeGiB: ptr(1.0), VGPUDir: dir}, BalloonOptions{}).Start(ctx, e)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Stop(ctx)
		// The runner "dies": its journal is closed, the entry left pending;
		// the balloon (child of this live process) goes on holding.
		j.Close()
		if got := free(t, d); got != vgpu.GiB {
			t.Fatalf("free while the orphaned fault holds = %d, want %d", got, vgpu.GiB)
		}
		rep, err := faults.Recover(ctx, run, allReverters())
		if err != nil {
			t.Fatalf("Recover: %v", err)
		}
		if len(rep.Faults) != 1 || rep.Faults[0].Err != nil {
			t.Errorf("Recover report = %+v, want one fault reverted", rep.Faults)
		}
		<-b.Done()
		if got := free(t, d); got != 8*vgpu.GiB {
			t.Errorf("free after Recover = %d, want %d", got, 8*vgpu.GiB)
		}
	})
}

func TestLeaveFreeGrowsIntoFreedMemory(t *testing.T) {
	dir, d := newVGPU(t, 10*vgpu.GiB)
	other, err := vgpu.Open(dir, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.Reserve(3*vgpu.GiB, "replica"); err != nil {
		t.Fatal(err)
	}
	log := &recLog{}
	undo, err := newPressure(t, PressureParams{LeaveFreeGiB: ptr(1.0), VGPUDir: dir}, BalloonOptions{}).Inject(context.Background(), log)
	if err != nil {
		t.Fatal(err)
	}
	pid := processSpec(t, log.spec(t, faults.KindProcess)).PID
	if got := holders(t, d)[pid]; got != 6*vgpu.GiB {
		t.Fatalf("balloon holds %d, want %d (all free but 1 GiB)", got, 6*vgpu.GiB)
	}
	if err := other.Release(); err != nil {
		t.Fatal(err)
	}
	// The balloon grows every 50 ms; give it ample time on a loaded machine.
	testutil.WaitFor(t, 10*time.Second, "the balloon to take the 3 GiB freed", func() bool { return holders(t, d)[pid] == 9*vgpu.GiB })
	if got := free(t, d); got != vgpu.GiB {
		t.Errorf("free after the balloon grew = %d, want %d", got, vgpu.GiB)
	}
	if err := undo(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := free(t, d); got != 10*vgpu.GiB {
		t.Errorf("free after Undo = %d, want %d", got, 10*vgpu.GiB)
	}
}

func TestOnExitReportsABalloonThatDied(t *testing.T) {
	dir, d := newVGPU(t, 8*vgpu.GiB)
	exits := make(chan error, 2)
	var logBuf testutil.SyncBuffer
	log := &recLog{}
	b, err := newPressure(t, PressureParams{GiB: ptr(2.0), VGPUDir: dir},
		BalloonOptions{OnExit: func(err error) { exits <- err }, Log: &logBuf}).Start(context.Background(), log)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^holding 2\.0 GiB on vgpu 0 \(free now 6\.0 GiB\)$`).MatchString(b.Holding()) {
		t.Errorf("Holding() = %q, want the balloon's holding line", b.Holding())
	}
	testutil.WaitFor(t, 10*time.Second, "the balloon's holding log line to be passed on", func() bool {
		return strings.Contains(logBuf.String(), "msg=holding")
	})
	if err := syscall.Kill(b.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exits:
		for _, w := range []string{"exited while the fault held", "signal: killed", strconv.Itoa(b.PID())} {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("OnExit error %v, want it to mention %q", err, w)
			}
		}
	case <-time.After(10 * time.Second):
		t.Fatal("OnExit not called within 10s of the balloon's death")
	}
	if err := b.Stop(context.Background()); err != nil {
		t.Errorf("Stop after the balloon died: %v, want nil (gone counts as reverted)", err)
	}
	if got := free(t, d); got != 8*vgpu.GiB {
		t.Errorf("free after the balloon died = %d, want %d", got, 8*vgpu.GiB)
	}
	// An ordinary Undo is no unexpected exit.
	b2, err := newPressure(t, PressureParams{GiB: ptr(2.0), VGPUDir: dir},
		BalloonOptions{OnExit: func(err error) { exits <- err }}).Start(context.Background(), &recLog{})
	if err != nil {
		t.Fatal(err)
	}
	if err := b2.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exits:
		t.Errorf("OnExit called after Undo: %v", err)
	default:
	}
}

// startReplica starts `llmchaos sim` on 127.0.0.1:0 with a 40 GiB vGPU in dir and
// returns it with its address once it serves. A replica reserves about
// 36 GiB (weights + KV pool at 0.9 utilisation) and leaves 4 GiB for
// activations.
func startReplica(t *testing.T, dir string) (*testutil.Proc, string) {
	t.Helper()
	r := testutil.StartProc(t, []string{"TMPDIR=" + t.TempDir()}, llmchaosBin, "sim", "--listen", "127.0.0.1:0", "--vgpu-dir", dir,
		"--gpu-memory", "40GiB", "--startup-time", "0s", "--latency", "constant", "--ttft", "10ms", "--itl", "10ms")
	addr := r.WaitOutput(t, r.Err, regexp.MustCompile(`msg=serving addr=(\S+)`))[1]
	testutil.WaitFor(t, 10*time.Second, "/health 200", func() bool { return testutil.HealthCode(addr, time.Second) == 200 })
	return r, addr
}

// stream posts a streaming completion of n tokens to addr and reads it to
// the end; first (if not nil) is closed at the first content chunk.
func stream(ctx context.Context, addr string, n int, first chan<- struct{}) (chunks int, done bool, err error) {
	body := fmt.Sprintf(`{"model":"llmchaos-sim","prompt":"tell me a long story","max_tokens":%d,"ignore_eos":true,"stream":true}`, n)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/v1/completions", strings.NewReader(body))
	if err != nil {
		return 0, false, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, false, fmt.Errorf("status %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "data: [DONE]":
			done = true
		case strings.HasPrefix(line, "data: ") && strings.Contains(line, `"text":"`) && !strings.Contains(line, `"text":""`):
			chunks++
			if chunks == 1 && first != nil {
				close(first)
			}
		}
	}
	return chunks, done, sc.Err()
}

// TestOOMChainOnARealReplica: a replica serves under load; the fault takes
// the headroom (leave_free_gib 0, growing) and the replica's next large
// step dies of OOM (exit 3); while the fault holds, a restarted replica
// cannot even load (exit 4); after Undo a restart serves again.
func TestOOMChainOnARealReplica(t *testing.T) {
	if testing.Short() {
		t.Skip("runs replicas under load for seconds; skipped under -short")
	}
	dir := t.TempDir()
	r, addr := startReplica(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	firsts := make([]chan struct{}, 4)
	for i := range firsts {
		firsts[i] = make(chan struct{})
		wg.Go(func() { stream(ctx, addr, 4000, firsts[i]) })
	}
	for i, f := range firsts {
		select {
		case <-f:
		case <-time.After(20 * time.Second):
			t.Fatalf("stream %d got no token within 20s", i)
		}
	}
	undo, err := newPressure(t, PressureParams{LeaveFreeGiB: ptr(0.0), VGPUDir: dir}, BalloonOptions{}).Inject(ctx, &recLog{})
	if err != nil {
		t.Fatal(err)
	}
	defer undo(context.Background())
	if code := r.ExitCode(t, 20*time.Second); code != 3 {
		t.Fatalf("replica exit code = %d, want 3 (out of memory)", code)
	}
	wg.Wait()
	if !strings.Contains(r.Err.String(), "out of memory") {
		t.Errorf("replica stderr has no out-of-memory line:\n%s", r.Err)
	}

	// The balloon grows into what the dead replica freed: a restart fails.
	d, err := vgpu.Open(dir, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	testutil.WaitFor(t, 10*time.Second, "the balloon to take the dead replica's memory", func() bool { return free(t, d) == 0 })
	again := testutil.StartProc(t, []string{"TMPDIR=" + t.TempDir()}, llmchaosBin, "sim", "--listen", "127.0.0.1:0", "--vgpu-dir", dir,
		"--gpu-memory", "40GiB", "--startup-time", "0s")
	if code := again.ExitCode(t, 20*time.Second); code != 4 {
		t.Fatalf("restart while the fault holds: exit code %d, want 4 (too little free to load)", code)
	}

	if err := undo(context.Background()); err != nil {
		t.Fatalf("Undo: %v", err)
	}
	_, addr = startReplica(t, dir)
	if chunks, done, err := stream(ctx, addr, 5, nil); err != nil || !done || chunks != 5 {
		t.Errorf("stream after recovery: %d chunks, [DONE] %v, err %v; want 5 chunks and [DONE]", chunks, done, err)
	}
}

func TestUndoHonoursItsDeadline(t *testing.T) {
	// A balloon that ignores SIGTERM: Undo must kill it within its ctx.
	script := filepath.Join(t.TempDir(), "stubborn-balloon")
	body := "#!/bin/sh\ntrap '' TERM\necho 'holding 1.0 GiB on vgpu 0 (free now 0 B)'\nexec sleep 30\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	dir, _ := newVGPU(t, 8*vgpu.GiB)
	b, err := newPressure(t, PressureParams{GiB: ptr(1.0), VGPUDir: dir}, BalloonOptions{Binary: script, StopGrace: 10 * time.Second}).
		Start(context.Background(), &recLog{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	if err := b.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("Stop took %v, want it within its 2s deadline (SIGKILL at half of it)", el)
	}
	if alive(t, b.PID()) {
		t.Error("stubborn balloon still running after Stop")
	}
}
