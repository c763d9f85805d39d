package replica

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
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
	"github.com/llmchaos/llmchaos/simcontract/replicastate"
)

// A kill makes the supervisor restart the replica; the watcher sees the
// exit, the restart and the replica healthy again, in that order.
func TestProcessKillIsRestartedAndWatched(t *testing.T) {
	t.Parallel()
	state, before := startSim(t, 3)
	target := TargetParams{StateFile: state}
	w, err := OpenWatcher(target)
	if err != nil {
		t.Fatal(err)
	}
	evs := startWatch(t, w)

	var hit []Target
	var mu sync.Mutex
	k, err := NewKill("kill-one", KillParams{Params: Params{Target: target, Select: faults.Selection{MinAvailable: 2}}},
		testRand(3), OnApplied(func(t Target) { mu.Lock(); hit = append(hit, t); mu.Unlock() }))
	if err != nil {
		t.Fatal(err)
	}
	log := &recLog{}
	undo, err := k.Inject(context.Background(), log)
	if err != nil {
		t.Fatal(err)
	}
	if len(hit) != 1 {
		t.Fatalf("kill hit %v, want one replica", hit)
	}
	i := hit[0].Index
	old := before[i]
	// Undo returns once the supervisor has the replica serving again.
	if err := undo(context.Background()); err != nil {
		t.Errorf("kill's Undo = %v, want nil once the replica is back", err)
	}
	if rs, err := replicastate.Read(state); err != nil || rs[i].State != replicastate.StateServing || rs[i].PID == old.PID {
		t.Errorf("replica %d after Undo = %+v (%v), want serving with a new pid", i, rs[i], err)
	}
	after := waitState(t, state, 20*time.Second, "the killed replica restarted and serving", func(rs []replicastate.Replica) bool {
		return rs[i].State == replicastate.StateServing && rs[i].PID != old.PID
	})
	if after[i].Restarts != old.Restarts+1 || after[i].LastExit != "signal: killed" {
		t.Errorf("replica %d after the kill = %+v, want restarts %d and last_exit %q", i, after[i], old.Restarts+1, "signal: killed")
	}
	for j := range after {
		if j != i && (after[j].PID != before[j].PID || after[j].Restarts != 0) {
			t.Errorf("replica %d = %+v, want it untouched (pid %d)", j, after[j], before[j].PID)
		}
	}
	id := replicaID(i)
	want := []EventKind{EventExit, EventRestart, EventHealthy}
	testutil.WaitFor(t, 10*time.Second, "exit, restart and healthy events", func() bool { return len(kinds(evs.events(), id)) >= 3 })
	got := evs.events()
	if k := kinds(got, id); !slices.Equal(k, want) {
		t.Errorf("events of %s = %v, want %v; all: %v", id, k, want, got)
	}
	for _, e := range got {
		if e.Replica != id {
			t.Errorf("event of a replica not killed: %v", e)
		}
	}
	if e := got[0]; e.Detail != fmt.Sprintf("pid %d: signal: killed", old.PID) {
		t.Errorf("exit event detail = %q, want the old pid and how it ended", e.Detail)
	}
	specs := log.all()
	if len(specs) != 1 || specs[0].Kind != KindAwaitBack {
		t.Fatalf("journal specs = %v, want one %s", specs, KindAwaitBack)
	}
	if err := Reverters()[KindAwaitBack](context.Background(), specs[0].Data); err != nil {
		t.Errorf("the journal's reverter, with the replica back = %v, want nil", err)
	}
	var done DoneSpec
	if err := json.Unmarshal(specs[0].Data, &done); err != nil {
		t.Fatal(err)
	}
	if done.PID != old.PID || done.Signal != "SIGKILL" || done.Action != "kill" || done.Target != id {
		t.Errorf("done spec = %+v, want kill of %s (pid %d) with SIGKILL", done, id, old.PID)
	}
}

// A paused replica stalls its streams while the others flow; Undo resumes it.
func TestProcessPauseStallsThenResumes(t *testing.T) {
	t.Parallel()
	state, rs := startSim(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	streams := make([]*stream, len(rs))
	for i, r := range rs {
		streams[i] = startStream(ctx, "127.0.0.1:"+strconv.Itoa(r.Port))
	}
	for _, s := range streams {
		s.waitFirst(t)
	}
	var hit Target
	p, err := NewPause("freeze", PauseParams{Params: Params{Target: TargetParams{StateFile: state}}}, testRand(11),
		OnApplied(func(t Target) { hit = t }))
	if err != nil {
		t.Fatal(err)
	}
	log := &recLog{}
	undo, err := p.Inject(ctx, log)
	if err != nil {
		t.Fatal(err)
	}
	i := hit.Index
	if st := procState(t, rs[i].PID); st != 'T' {
		t.Fatalf("paused replica %d (pid %d) in state %c, want T (stopped)", i, rs[i].PID, st)
	}
	specs := processSpecs(t, log.all(), KindSignalCont)
	if len(specs) != 1 || specs[0].PID != rs[i].PID || specs[0].StartTime == 0 {
		t.Fatalf("signal-cont specs = %+v, want one naming pid %d with its start time", specs, rs[i].PID)
	}
	// Chunks sent just before SIGSTOP may still be in flight: let them land.
	streams[i].quietFor(100 * time.Millisecond)
	// At one token per 10 ms, 300 ms without one is a stall of 30 tokens.
	if quiet, n := streams[i].quietFor(300 * time.Millisecond); !quiet {
		t.Errorf("stream of the paused replica got %d tokens in 300ms, want none", n)
	}
	// A whole second without a token (100 due) on a replica that is not
	// paused is a stall; a shorter gap is what a busy machine (the race
	// detector, other tests' processes) leaves between two reads: 100 ms
	// once failed here under CI's load.
	for j, s := range streams {
		if j == i {
			continue
		}
		if quiet, _ := s.quietFor(time.Second); quiet {
			t.Errorf("stream of replica %d (not paused) stalled too: no token in 1s: %v", j, s.err)
		}
	}
	// The supervisor still says serving, but a frozen replica is not up.
	d, _ := NewProcess(TargetParams{StateFile: state})
	ts, err := d.Targets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ts[i].Up {
		t.Errorf("target %v is up while frozen", ts[i])
	}

	if err := undo(ctx); err != nil {
		t.Fatal(err)
	}
	if err := undo(ctx); err != nil {
		t.Errorf("second Undo = %v, want nil", err)
	}
	n := streams[i].chunks.Load()
	testutil.WaitFor(t, 5*time.Second, "tokens to flow again after Undo", func() bool { return streams[i].chunks.Load() > n+10 })
	if st := procState(t, rs[i].PID); st == 'T' {
		t.Errorf("replica %d still stopped after Undo", i)
	}
}

// Selection modes pick as many replicas as they say, the same ones for the
// same seed, and min_available refuses before anything is done.
func TestProcessSelection(t *testing.T) {
	t.Parallel()
	state, rs := startSim(t, 3)
	ctx := context.Background()
	stopped := func() []int {
		var out []int
		for _, r := range rs {
			if procState(t, r.PID) == 'T' {
				out = append(out, r.Index)
			}
		}
		return out
	}
	tests := []struct {
		name string
		sel  faults.Selection
		want int
	}{
		{"one", faults.Selection{Mode: faults.SelectOne}, 1},
		{"count 2", faults.Selection{Mode: faults.SelectCount, Value: 2}, 2},
		{"percent 67", faults.Selection{Mode: faults.SelectPercent, Value: 67}, 2},
		{"all", faults.Selection{Mode: faults.SelectAll}, 3},
		{"count 1 keeping 2", faults.Selection{Mode: faults.SelectCount, Value: 1, MinAvailable: 2}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var picks [][]int
			for range 2 { // the same seed twice
				p, err := NewPause("sel", PauseParams{Params: Params{Target: TargetParams{StateFile: state}, Select: tt.sel}}, testRand(5))
				if err != nil {
					t.Fatal(err)
				}
				undo, err := p.Inject(ctx, faults.NopLog{})
				if err != nil {
					t.Fatal(err)
				}
				got := stopped()
				if err := undo(ctx); err != nil {
					t.Fatal(err)
				}
				if len(got) != tt.want {
					t.Fatalf("stopped replicas %v, want %d", got, tt.want)
				}
				if left := stopped(); len(left) != 0 {
					t.Fatalf("replicas %v still stopped after Undo", left)
				}
				picks = append(picks, got)
			}
			if !slices.Equal(picks[0], picks[1]) {
				t.Errorf("seed 5 picked %v then %v, want the same replicas", picks[0], picks[1])
			}
		})
	}

	t.Run("min_available refuses", func(t *testing.T) {
		k, err := NewKill("too-many", KillParams{Params: Params{Target: TargetParams{StateFile: state},
			Select: faults.Selection{Mode: faults.SelectCount, Value: 2, MinAvailable: 2}}}, testRand(1))
		if err != nil {
			t.Fatal(err)
		}
		log := &recLog{}
		_, err = k.Inject(ctx, log)
		if !errors.Is(err, faults.ErrMinAvailable) {
			t.Fatalf("Inject() = %v, want ErrMinAvailable", err)
		}
		if len(log.all()) != 0 {
			t.Errorf("journal got %v for a refused fault, want nothing", log.all())
		}
		now, err := replicastate.Read(state)
		if err != nil {
			t.Fatal(err)
		}
		for i := range rs {
			if now[i].PID != rs[i].PID || now[i].Restarts != 0 || procState(t, rs[i].PID) == 0 {
				t.Errorf("replica %d = %+v after a refused kill, want it untouched", i, now[i])
			}
		}
	})

	t.Run("a frozen replica does not count as up", func(t *testing.T) {
		p, err := NewPause("one", PauseParams{Params: Params{Target: TargetParams{StateFile: state}}}, testRand(2))
		if err != nil {
			t.Fatal(err)
		}
		undo, err := p.Inject(ctx, faults.NopLog{})
		if err != nil {
			t.Fatal(err)
		}
		defer undo(ctx)
		k, err := NewKill("k", KillParams{Params: Params{Target: TargetParams{StateFile: state},
			Select: faults.Selection{Mode: faults.SelectOne, MinAvailable: 2}}}, testRand(1))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := k.Inject(ctx, faults.NopLog{}); !errors.Is(err, faults.ErrMinAvailable) {
			t.Errorf("kill with min_available 2 while one of 3 is frozen = %v, want ErrMinAvailable", err)
		}
	})
}

// restart stops a replica gracefully and returns once the supervisor has
// started it again.
func TestProcessRestart(t *testing.T) {
	t.Parallel()
	state, before := startSim(t, 2)
	var hit Target
	r, err := NewRestart("bounce", RestartParams{Params: Params{Target: TargetParams{StateFile: state}}, Grace: 5 * time.Second},
		testRand(1), OnApplied(func(t Target) { hit = t }))
	if err != nil {
		t.Fatal(err)
	}
	undo, err := r.Inject(context.Background(), faults.NopLog{})
	if err != nil {
		t.Fatal(err)
	}
	i := hit.Index
	// Inject returns once the replica's process has exited (its
	// supervisor may not have said so in the state file yet).
	if st := procState(t, before[i].PID); st != 0 && st != 'Z' {
		t.Errorf("replica %d's process %d when restart returned: state %c, want it exited", i, before[i].PID, st)
	}
	// Undo returns once the supervisor has it serving again.
	if err := undo(context.Background()); err != nil {
		t.Fatalf("restart's Undo = %v, want nil (the supervisor starts it again)", err)
	}
	now, err := replicastate.Read(state)
	if err != nil {
		t.Fatal(err)
	}
	if now[i].PID == before[i].PID || now[i].PID == 0 || now[i].Restarts != 1 || now[i].State != replicastate.StateServing {
		t.Errorf("replica %d after the restart's Undo = %+v, want a new pid serving, restarts 1", i, now[i])
	}
	if now[i].LastExit != "exit status 0" {
		t.Errorf("replica %d last exit = %q, want a clean exit after SIGTERM", i, now[i].LastExit)
	}
}

// TestProcessRestartWithoutSupervisor: a replica.restart of a process that
// nothing starts again is injected (the process is stopped) and its revert
// fails, naming the replica and what it waited for, as a kill's does: the
// run then exits 97 with the fault's phase kept, not "not injected".
func TestProcessRestartWithoutSupervisor(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("signals real processes; skipped under -short")
	}
	c := sleeper(t, "exec sleep 60")
	pidFile := writePIDFile(t, c.PID())
	r, err := NewRestart("bounce", RestartParams{Params: Params{Target: TargetParams{PIDFile: pidFile}}, Grace: 2 * time.Second, Timeout: time.Second},
		testRand(1))
	if err != nil {
		t.Fatal(err)
	}
	undo, err := r.Inject(context.Background(), faults.NopLog{})
	if err != nil {
		t.Fatalf("Inject = %v, want nil: the restart's stop happened", err)
	}
	if ws := c.Wait(t, 5*time.Second).Sys().(syscall.WaitStatus); ws.Signaled() && ws.Signal() == syscall.SIGKILL {
		t.Errorf("process ended with %v, want a graceful exit after SIGTERM", ws)
	}
	err = undo(context.Background())
	if err == nil || !strings.Contains(err.Error(), "is not up again within 1s") || !strings.Contains(err.Error(), "restarted") {
		t.Errorf("Undo = %v, want a failure saying the restarted process is not up again", err)
	}
}

// sleeper starts a process that sleeps; args are passed to sh after the
// sleep (for traps).
func sleeper(t *testing.T, script string) *testutil.Proc {
	t.Helper()
	c := startChild(t, "/bin/sh", "-c", script)
	// Wait until sh has exec'd sleep (the command line says so).
	testutil.WaitFor(t, 5*time.Second, "the sleeper to start", func() bool {
		return regexp.MustCompile(`^sleep `).MatchString(readCmdline(c.PID()))
	})
	return c
}

func writePIDFile(t *testing.T, pids ...int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "replica.pid")
	var b []byte
	for _, p := range pids {
		b = fmt.Appendf(b, "%d\n", p)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestProcessKillSignalFromPIDFile(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("signals real processes; skipped under -short")
	}
	c := sleeper(t, "exec sleep 60")
	k, err := NewKill("term", KillParams{Params: Params{Target: TargetParams{PIDFile: writePIDFile(t, c.PID())}}, Signal: "TERM"}, testRand(1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.Inject(context.Background(), faults.NopLog{}); err != nil {
		t.Fatal(err)
	}
	ws := c.Wait(t, 5*time.Second).Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Errorf("process ended with %v, want killed by SIGTERM", ws)
	}
}

func TestProcessStopEscalatesAfterGrace(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("signals real processes; skipped under -short")
	}
	tests := []struct {
		name   string
		script string
		want   syscall.Signal
	}{
		{"exits on SIGTERM", "exec sleep 60", syscall.SIGTERM},
		// An ignored signal stays ignored across exec.
		{"ignores SIGTERM", `trap "" TERM; exec sleep 60`, syscall.SIGKILL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := sleeper(t, tt.script)
			s, err := NewStop("stop", StopParams{Params: Params{Target: TargetParams{PIDFile: writePIDFile(t, c.PID())}}, Grace: 300 * time.Millisecond}, testRand(1))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Inject(context.Background(), faults.NopLog{}); err != nil {
				t.Fatal(err)
			}
			// Inject returns once the process has exited.
			select {
			case <-c.Done():
			case <-time.After(time.Second):
				t.Fatal("process still running a second after Stop returned")
			}
			ws := c.Cmd.ProcessState.Sys().(syscall.WaitStatus)
			if !ws.Signaled() || ws.Signal() != tt.want {
				t.Errorf("process ended with %v, want killed by %v", ws, tt.want)
			}
		})
	}
}

func TestProcessCmdline(t *testing.T) {
	if testing.Short() {
		t.Skip("signals real processes; skipped under -short")
	}
	tag := fmt.Sprintf("%d.%d", 3000+os.Getpid()%1000, time.Now().UnixNano()%1000)
	a := sleeper(t, "exec sleep "+tag)
	b := sleeper(t, "exec sleep "+tag)
	d, err := NewProcess(TargetParams{Cmdline: `^sleep ` + regexp.QuoteMeta(tag) + `$`, Match: MatchCmdline})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := d.Targets(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[int]bool{}
	for _, tg := range ts {
		got[tg.PID] = tg.Up
	}
	if want := map[int]bool{a.PID(): true, b.PID(): true}; !maps.Equal(got, want) {
		t.Fatalf("cmdline targets = %v, want %v", ts, want)
	}
	k, err := NewKill("k", KillParams{Params: Params{Target: TargetParams{Cmdline: `^sleep ` + regexp.QuoteMeta(tag) + `$`, Match: MatchCmdline},
		Select: faults.Selection{Mode: faults.SelectAll}}}, testRand(1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.Inject(context.Background(), faults.NopLog{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*testutil.Proc{a, b} {
		if ws := c.Wait(t, 5*time.Second).Sys().(syscall.WaitStatus); ws.Signal() != syscall.SIGKILL {
			t.Errorf("pid %d ended with %v, want SIGKILL", c.PID(), ws)
		}
	}
}

func TestProcessRefusesOwnProcess(t *testing.T) {
	tests := []struct {
		name string
		t    TargetParams
	}{
		{"cmdline matching the runner", TargetParams{Cmdline: "^" + regexp.QuoteMeta(os.Args[0]), Match: MatchCmdline}},
		{"name matching the runner", TargetParams{Cmdline: "^" + regexp.QuoteMeta(filepath.Base(os.Args[0])) + "$"}},
		{"pid file naming the runner", TargetParams{PIDFile: writePIDFile(t, os.Getpid())}},
		{"pid file naming its parent", TargetParams{PIDFile: writePIDFile(t, os.Getppid())}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := NewKill("suicide", KillParams{Params: Params{Target: tt.t}}, testRand(1))
			if err != nil {
				t.Fatal(err)
			}
			_, err = k.Inject(context.Background(), faults.NopLog{})
			if !errors.Is(err, ErrOwnProcess) {
				t.Errorf("Inject() = %v, want ErrOwnProcess", err)
			}
		})
	}
	if _, err := PauseProcess(context.Background(), faults.NopLog{}, os.Getpid(), "self"); !errors.Is(err, ErrOwnProcess) {
		t.Errorf("PauseProcess(own pid) = %v, want ErrOwnProcess", err)
	}
}

// A target whose pid now has another start time is another process: it is
// never signalled.
func TestProcessRefusesReusedPID(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("signals real processes; skipped under -short")
	}
	c := sleeper(t, "exec sleep 60")
	d, err := NewProcess(TargetParams{PIDFile: writePIDFile(t, c.PID())})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := d.Targets(context.Background())
	if err != nil || len(ts) != 1 || !ts[0].Up {
		t.Fatalf("Targets() = %v, %v; want the sleeper, up", ts, err)
	}
	reused := ts[0]
	reused.StartTime++ // as if the pid had been freed and taken again
	for _, a := range []Action{{Kind: ActionKill, Signal: "SIGKILL"}, {Kind: ActionPause}, {Kind: ActionStop, Grace: time.Second}} {
		log := &recLog{}
		if _, err := d.Apply(context.Background(), log, reused, a); !errors.Is(err, ErrPIDReused) {
			t.Errorf("%s of a reused pid = %v, want ErrPIDReused", a.Kind, err)
		}
		if len(log.all()) != 0 {
			t.Errorf("%s of a reused pid journaled %v, want nothing", a.Kind, log.all())
		}
	}
	if st := procState(t, c.PID()); st == 0 || st == 'T' || st == 'Z' {
		t.Errorf("sleeper in state %c after actions on a reused pid, want it untouched", st)
	}
}

// The pause's revert spec alone resumes the process, as `llmchaos recover`
// does after the runner was killed with the replica frozen.
func TestPauseRecoveredFromJournal(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("signals real processes; skipped under -short")
	}
	c := sleeper(t, "exec sleep 60")
	dir := t.TempDir()
	j, err := faults.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPause("freeze", PauseParams{Params: Params{Target: TargetParams{PIDFile: writePIDFile(t, c.PID())}}}, testRand(1))
	if err != nil {
		t.Fatal(err)
	}
	e, err := j.Begin("freeze", TypePause, p.Target())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Inject(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	if err := e.Injected(); err != nil {
		t.Fatal(err)
	}
	// The runner dies here: its Undo never runs, the journal stays.
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if st := procState(t, c.PID()); st != 'T' {
		t.Fatalf("paused process in state %c, want T", st)
	}
	reverters := faults.BuiltinReverters()
	maps.Copy(reverters, Reverters())
	rep, err := faults.Recover(context.Background(), dir, reverters)
	if err != nil {
		t.Fatalf("Recover() = %v", err)
	}
	if len(rep.Faults) != 1 || rep.Faults[0].Err != nil {
		t.Fatalf("Recover() report = %+v, want one fault reverted", rep)
	}
	if st := procState(t, c.PID()); st == 'T' || st == 0 {
		t.Errorf("process in state %c after recover, want it running", st)
	}
	if pend, err := faults.Pending(dir); err != nil || len(pend) != 0 {
		t.Errorf("pending after recover = %v, %v; want none", pend, err)
	}
}

func TestSignalContReverter(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("signals real processes; skipped under -short")
	}
	c := sleeper(t, "exec sleep 60")
	log := &recLog{}
	if _, err := PauseProcess(context.Background(), log, c.PID(), "sleeper"); err != nil {
		t.Fatal(err)
	}
	specs := log.all()
	if len(specs) != 1 || specs[0].Kind != KindSignalCont {
		t.Fatalf("specs = %v, want one %s", specs, KindSignalCont)
	}
	if _, err := PauseProcess(context.Background(), faults.NopLog{}, c.PID(), "sleeper"); err == nil {
		t.Error("PauseProcess of a stopped process = nil, want a refusal")
	}
	var ps faults.ProcessSpec
	if err := json.Unmarshal(specs[0].Data, &ps); err != nil {
		t.Fatal(err)
	}
	rev := Reverters()[KindSignalCont]

	// A spec naming another start time is another process: not resumed.
	wrong := ps
	wrong.StartTime++
	data, _ := json.Marshal(wrong)
	if err := rev(context.Background(), data); err != nil {
		t.Errorf("revert with a reused pid = %v, want nil (reverted: the process named is gone)", err)
	}
	if st := procState(t, c.PID()); st != 'T' {
		t.Errorf("state %c after a revert naming another process, want still T", st)
	}
	// The spec itself resumes it, idempotently.
	for range 2 {
		if err := rev(context.Background(), specs[0].Data); err != nil {
			t.Fatal(err)
		}
		if st := procState(t, c.PID()); st == 'T' {
			t.Errorf("state %c after revert, want running", st)
		}
	}
	// Gone: reverted.
	c.Cmd.Process.Kill()
	c.Wait(t, 5*time.Second)
	if err := rev(context.Background(), specs[0].Data); err != nil {
		t.Errorf("revert of a gone process = %v, want nil", err)
	}
}

func TestProcessWatchPIDFile(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("signals real processes; skipped under -short")
	}
	c := sleeper(t, "exec sleep 60")
	w, err := OpenWatcher(TargetParams{PIDFile: writePIDFile(t, c.PID())})
	if err != nil {
		t.Fatal(err)
	}
	evs := startWatch(t, w)
	c.Cmd.Process.Signal(syscall.SIGTERM)
	c.Wait(t, 5*time.Second)
	id := "pid-" + strconv.Itoa(c.PID())
	testutil.WaitFor(t, 5*time.Second, "an exit event", func() bool { return len(kinds(evs.events(), id)) > 0 })
	if got := kinds(evs.events(), id); !slices.Equal(got, []EventKind{EventExit}) {
		t.Errorf("events = %v, want one exit", evs.events())
	}
}
