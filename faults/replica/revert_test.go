//go:build linux

package replica

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/testutil"
	"github.com/llmchaos/llmchaos/simcontract/replicastate"
)

// A stopped replica is back after Undo: the supervisor started it again,
// and Undo returned only once it serves. The journal's spec alone does the
// same wait, as `llmchaos recover` would.
func TestProcessStopUndoneBySupervisor(t *testing.T) {
	t.Parallel()
	state, before := startSim(t, 2)
	var hit Target
	s, err := NewStop("halt", StopParams{Params: Params{Target: TargetParams{StateFile: state}}, Grace: 2 * time.Second},
		testRand(2), OnApplied(func(t Target) { hit = t }))
	if err != nil {
		t.Fatal(err)
	}
	log := &recLog{}
	undo, err := s.Inject(context.Background(), log)
	if err != nil {
		t.Fatal(err)
	}
	i := hit.Index
	if st := procState(t, before[i].PID); st != 0 && st != 'Z' {
		t.Errorf("replica %d's old process in state %c after stop, want gone", i, st)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := undo(ctx); err != nil {
		t.Fatalf("stop's Undo = %v, want nil once the supervisor has it serving again", err)
	}
	rs, err := replicastate.Read(state)
	if err != nil {
		t.Fatal(err)
	}
	if rs[i].State != replicastate.StateServing || rs[i].PID == before[i].PID {
		t.Errorf("replica %d after Undo = %+v, want serving with a new pid", i, rs[i])
	}
	specs := log.all()
	if len(specs) != 1 || specs[0].Kind != KindAwaitBack {
		t.Fatalf("journal specs = %v, want one %s", specs, KindAwaitBack)
	}
	var spec AwaitSpec
	if err := json.Unmarshal(specs[0].Data, &spec); err != nil {
		t.Fatal(err)
	}
	if spec.Index != i || spec.PID != before[i].PID || spec.Action != "stop" || spec.Source.StateFile != state {
		t.Errorf("spec = %+v, want stop of replica %d (pid %d) through %s", spec, i, before[i].PID, state)
	}
	if err := Reverters()[KindAwaitBack](ctx, specs[0].Data); err != nil {
		t.Errorf("the journal's reverter = %v, want nil (the replica serves)", err)
	}
}

// Nobody starts a stopped process that has no supervisor: Undo and the
// journal's reverter fail, saying so, instead of reporting it reverted.
func TestProcessStopUndoFailsWithoutSupervisor(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("signals real processes; skipped under -short")
	}
	c := sleeper(t, "exec sleep 60")
	s, err := NewStop("halt", StopParams{Params: Params{Target: TargetParams{PIDFile: writePIDFile(t, c.PID())}}, Grace: time.Second}, testRand(1))
	if err != nil {
		t.Fatal(err)
	}
	log := &recLog{}
	undo, err := s.Inject(context.Background(), log)
	if err != nil {
		t.Fatal(err)
	}
	c.Wait(t, 5*time.Second)
	specs := log.all()
	if len(specs) != 1 || specs[0].Kind != KindAwaitBack {
		t.Fatalf("journal specs = %v, want one %s", specs, KindAwaitBack)
	}
	for name, revert := range map[string]func(context.Context) error{
		"Undo":     undo,
		"reverter": func(ctx context.Context) error { return Reverters()[KindAwaitBack](ctx, specs[0].Data) },
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		err := revert(ctx)
		cancel()
		if err == nil || !strings.Contains(err.Error(), "is not up again") || !strings.Contains(err.Error(), "start it by hand") {
			t.Errorf("%s of a stop nobody restarts = %v, want an error saying it is not back", name, err)
		}
	}
}

// restartLoops runs n replicas of a copy of sleep named name, each under a
// restart loop that starts it again a second after it exits (as a
// systemd-style supervisor or `while true; do server; sleep 1; done`
// would), and keeps their pids in one pid file, one per line. It returns
// the pid file and the pid of the loops' shell; the test's cleanup kills the
// whole process group.
func restartLoops(t *testing.T, name string, n int) (string, int) {
	t.Helper()
	dir := t.TempDir()
	bin := testutil.RenamedCopy(t, "sleep", dir, name)
	pids := filepath.Join(dir, "replicas.pid")
	script := `dir=$1; bin=$2; n=$3
loop() { while :; do "$bin" 600 & echo $! > "$dir/p$1"; wait $!; sleep 1; done; }
for i in $(seq 0 $((n-1))); do loop $i & done
while :; do
  files=""; for i in $(seq 0 $((n-1))); do files="$files $dir/p$i"; done
  cat $files > "$dir/pids.tmp" 2>/dev/null && [ $(wc -l < "$dir/pids.tmp") -eq $n ] && mv "$dir/pids.tmp" "$dir/replicas.pid"
  sleep 0.05
done`
	cmd := exec.Command("bash", "-c", script, "loops", dir, bin, strconv.Itoa(n))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Skip("no bash: ", err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	testutil.WaitFor(t, 10*time.Second, "the pid file listing every replica", func() bool { return len(readPIDs(pids)) == n })
	return pids, cmd.Process.Pid
}

// readPIDs returns the pids in a pid file (none while it is missing).
func readPIDs(path string) []int {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var out []int
	for f := range strings.FieldsSeq(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// replicaName is a name no other process on the machine has.
func replicaName() string {
	return fmt.Sprintf("llmc-%d-%d", os.Getpid()%100000, time.Now().UnixNano()%100000)
}

// With two replicas in one pid file, the Undo of restarting one returns
// once that one runs again (a new pid in the file), not as soon as it sees
// the other replica's live pid; kill's Undo and its journaled reverter
// wait the same way.
func TestProcessRestartMultiPIDFile(t *testing.T) {
	if testing.Short() {
		t.Skip("runs restart loops of real processes; skipped under -short")
	}
	pidFile, _ := restartLoops(t, replicaName(), 2)
	target := TargetParams{PIDFile: pidFile}

	t.Run("restart", func(t *testing.T) {
		before := readPIDs(pidFile)
		var hit Target
		r, err := NewRestart("bounce", RestartParams{Params: Params{Target: target}, Grace: time.Second, Timeout: 20 * time.Second},
			testRand(1), OnApplied(func(t Target) { hit = t }))
		if err != nil {
			t.Fatal(err)
		}
		undo, err := r.Inject(context.Background(), faults.NopLog{})
		if err != nil {
			t.Fatal(err)
		}
		if err := undo(context.Background()); err != nil {
			t.Fatalf("restart's Undo = %v, want nil (it runs)", err)
		}
		now := readPIDs(pidFile)
		other := before[0]
		if other == hit.PID {
			other = before[1]
		}
		if slices.Contains(now, hit.PID) || !slices.Contains(now, other) || len(now) != 2 {
			t.Errorf("pid file when the restart's Undo returned = %v (before %v, restarted %d): want the other replica's pid %d and a new one",
				now, before, hit.PID, other)
		}
		for _, pid := range now {
			if st := procState(t, pid); st == 0 || st == 'Z' {
				t.Errorf("pid %d of the file is not running when the restart's Undo returned", pid)
			}
		}
	})

	t.Run("kill, undone and replayed", func(t *testing.T) {
		for _, replay := range []bool{false, true} {
			before := readPIDs(pidFile)
			var hit Target
			k, err := NewKill("k", KillParams{Params: Params{Target: target}}, testRand(3), OnApplied(func(t Target) { hit = t }))
			if err != nil {
				t.Fatal(err)
			}
			log := &recLog{}
			undo, err := k.Inject(context.Background(), log)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			if replay {
				specs := log.all()
				if len(specs) != 1 || specs[0].Kind != KindAwaitBack {
					t.Fatalf("journal specs = %v, want one %s", specs, KindAwaitBack)
				}
				err = Reverters()[KindAwaitBack](ctx, specs[0].Data)
			} else {
				err = undo(ctx)
			}
			cancel()
			if err != nil {
				t.Fatalf("revert of the kill (replayed from the journal: %v) = %v", replay, err)
			}
			now := readPIDs(pidFile)
			fresh := slices.DeleteFunc(slices.Clone(now), func(p int) bool { return slices.Contains(before, p) })
			if slices.Contains(now, hit.PID) || len(fresh) != 1 {
				t.Errorf("pid file after the revert = %v (before %v, killed %d), want the killed replica replaced by a new pid", now, before, hit.PID)
			}
		}
	})
}

// A pattern is matched against the executable's name by default, so a
// restart loop whose command line names the server is never picked; the
// whole command line is matched only with match: cmdline. Preview shows
// what matches without acting.
func TestCmdlineMatchesExecutableName(t *testing.T) {
	if testing.Short() {
		t.Skip("runs restart loops of real processes; skipped under -short")
	}
	name := replicaName()
	pidFile, loops := restartLoops(t, name, 1)
	server := readPIDs(pidFile)[0]
	pids := func(tp TargetParams) []int {
		t.Helper()
		ts, err := Preview(context.Background(), tp)
		if err != nil {
			t.Fatalf("Preview(%v) = %v", tp, err)
		}
		var out []int
		for _, tg := range ts {
			out = append(out, tg.PID)
			if !strings.Contains(tg.Detail, name) {
				t.Errorf("target %v does not show the command line it matched", tg)
			}
		}
		slices.Sort(out)
		return out
	}
	// Unanchored, the pattern is in the loop shells' command line too.
	pattern := regexp.QuoteMeta(name)
	if got := pids(TargetParams{Cmdline: pattern}); !slices.Equal(got, []int{server}) {
		t.Errorf("processes named %q = %v, want only the server %d", pattern, got, server)
	}
	if got := pids(TargetParams{Cmdline: "^" + pattern + "$"}); !slices.Equal(got, []int{server}) {
		t.Errorf("processes named ^%s$ = %v, want only the server %d", pattern, got, server)
	}
	got := pids(TargetParams{Cmdline: pattern, Match: MatchCmdline})
	if !slices.Contains(got, server) || !slices.Contains(got, loops) {
		t.Errorf("processes whose command line matches %q = %v, want the server %d and the loops' shell %d", pattern, got, server, loops)
	}
	if _, err := Preview(context.Background(), TargetParams{Cmdline: pattern, Match: "argv"}); err == nil {
		t.Error("Preview with match: argv = nil error, want it refused")
	}
}

func TestMatchValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		t       TargetParams
		wantErr string
	}{
		{TargetParams{Cmdline: "x"}, ""},
		{TargetParams{Cmdline: "x", Match: MatchExe}, ""},
		{TargetParams{Cmdline: "x", Match: MatchCmdline}, ""},
		{TargetParams{Cmdline: "x", Match: "full"}, `target.match: "full", want exe or cmdline`},
		{TargetParams{PIDFile: "p", Match: MatchCmdline}, "target.match: is for a cmdline pattern"},
		{TargetParams{Driver: DriverDocker, Containers: []string{"c"}, Match: MatchCmdline}, "are for the process driver"},
	}
	for _, tt := range tests {
		err := tt.t.WithDefaults().Validate()
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("Validate(%+v) = %v, want nil", tt.t, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("Validate(%+v) = %v, want %q", tt.t, err, tt.wantErr)
		}
	}
	if got := (TargetParams{Cmdline: "x"}).WithDefaults().Match; got != MatchExe {
		t.Errorf("default match = %q, want %q", got, MatchExe)
	}
}

// A replay of await-back whose pid file or state file is gone (the
// service, or the run's simulator, went with the crash) counts as
// reverted at once, as a vanished target does for every Undo.
func TestAwaitBackReplayOfVanishedSource(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, src := range map[string]TargetParams{
		"pid file":   {PIDFile: filepath.Join(dir, "gone.pid")},
		"state file": {StateFile: filepath.Join(dir, "gone.json")},
	} {
		t.Run(name, func(t *testing.T) {
			data, err := json.Marshal(AwaitSpec{Source: src, Timeout: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			if err := Reverters()[KindAwaitBack](context.Background(), data); err != nil {
				t.Errorf("replay = %v, want nil for a vanished source", err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("replay took %v, want it at once", d)
			}
		})
	}
}
