//go:build linux

package experiments

import (
	"context"
	"errors"
	"fmt"
	"github.com/llmchaos/llmchaos/experiments/spec"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/testutil"
	"github.com/llmchaos/llmchaos/report"
)

// processLoop runs a copy of sleep, under a name no other process has,
// in a bash restart loop that writes its pid to a pid file, and returns the
// pid file once it names a running process. The name is the test
// process's, so the tests that use it (and those that match processes by
// a name made the same way) run serially.
func processLoop(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	bin := testutil.RenamedCopy(t, "sleep", dir, fmt.Sprintf("srv-%d", os.Getpid()))
	pidFile := filepath.Join(dir, "server.pid")
	script := `while :; do "$1" 600 & echo $! > "$2.tmp" && mv "$2.tmp" "$2"; wait $!; sleep 0.2; done`
	cmd := exec.Command("bash", "-c", script, "loop", bin, pidFile)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Skip("no bash: ", err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	testutil.WaitFor(t, 10*time.Second, "the pid file", func() bool { return readPID(pidFile) > 0 })
	return pidFile
}

// readPID returns the pid in a pid file, 0 while there is none.
func readPID(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// A replica.kill of a process under a restart loop: the run's events show
// the killed pid's exit and its replacement's start, as the same replica,
// and nothing else of the process.
func TestRunWatchesProcessTargets(t *testing.T) {
	skipShort(t)
	srv := newSSEServer(t)
	pidFile := processLoop(t)
	old := readPID(pidFile)
	exp := testSpec(srv.URL, 2500*time.Millisecond, spec.Fault{
		Name: "kill", Type: "replica.kill", At: spec.Duration(500 * time.Millisecond), Duration: spec.Duration(1500 * time.Millisecond),
		Params: map[string]any{"target": map[string]any{"pid_file": pidFile}},
	})
	o, err := runSpec(context.Background(), exp, Options{RunDir: t.TempDir()})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	now := readPID(pidFile)
	if now == old || now == 0 {
		t.Fatalf("pid file holds %d after the run, want a new pid (was %d)", now, old)
	}
	id := "pid-" + strconv.Itoa(old)
	var got []report.EventRecord
	for _, e := range o.Doc.Events {
		if e.Source == report.EventSourceReplica {
			got = append(got, report.EventRecord{Source: e.Source, Kind: e.Kind, Target: e.Target, Detail: e.Detail})
		}
	}
	want := []report.EventRecord{
		{Source: report.EventSourceReplica, Kind: "exit", Target: id, Detail: fmt.Sprintf("pid %d", old)},
		{Source: report.EventSourceReplica, Kind: "start", Target: id, Detail: fmt.Sprintf("pid %d, replaces pid %d", now, old)},
	}
	if !slices.Equal(got, want) {
		t.Errorf("replica events =\n%v\nwant\n%v\n(all events: %v)", got, want, o.Doc.Events)
	}
}

// --dry-run lists the processes each replica fault's target matches now,
// by pid and command line, says that min_available counts only those, and
// writes the params as YAML would, not as Go maps.
func TestDryRunListsReplicaTargets(t *testing.T) {
	pidFile := processLoop(t)
	pid := readPID(pidFile)
	name := fmt.Sprintf("srv-%d", os.Getpid())
	sel := map[string]any{"mode": "one", "min_available": 1}
	exp := testSpec("http://127.0.0.1:1", 10*time.Second,
		spec.Fault{Name: "by-file", Type: "replica.kill", At: spec.Duration(time.Second), Duration: spec.Duration(time.Second),
			Params: map[string]any{"target": map[string]any{"pid_file": pidFile}, "select": sel}},
		spec.Fault{Name: "by-name", Type: "replica.stop", At: spec.Duration(3 * time.Second), Duration: spec.Duration(time.Second),
			Params: map[string]any{"target": map[string]any{"cmdline": "^" + name + "$"}}},
	)
	var out strings.Builder
	if err := dryRunSpec(&out, exp, Options{}); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	proc := fmt.Sprintf("pid-%d (running, %s 600)", pid, filepath.Join(filepath.Dir(pidFile), name))
	for _, want := range []string{
		fmt.Sprintf("inject by-file (replica.kill {select: {min_available: 1, mode: one}, target: {pid_file: %s}}) on the replicas listed under \"replica targets\"", pidFile),
		"  by-file (replica.kill): pid file " + pidFile + "\n    " + proc + "\n    1 match, 1 up\n",
		"acts on one of the processes up, picked with the fault's seed; refused (exit 95) if that would leave fewer than 1 up (min_available)",
		"min_available 1 counts only the processes this target matches, not the service's 1 endpoint(s)",
		"  by-name (replica.stop): processes matching \"^" + name + "$\" (the executable's name; match: cmdline for the whole command line)\n    " + proc + "\n    1 match, 1 up\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("dry run lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "map[") {
		t.Errorf("dry run writes Go maps:\n%s", got)
	}
}

// A replica.restart of a process that nothing starts again: the restart is
// injected (its process stopped), its revert fails naming it, so the run
// ends with a *RevertError (exit 97) and the fault's phase lasts to the
// run's end, as a kill's would; it is not "not injected".
func TestRunRestartWithoutSupervisor(t *testing.T) {
	skipShort(t)
	srv := newSSEServer(t)
	dir := t.TempDir()
	bin := testutil.RenamedCopy(t, "sleep", dir, fmt.Sprintf("lone-%d", os.Getpid()))
	proc := exec.Command(bin, "600")
	if err := proc.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan struct{})
	go func() { _ = proc.Wait(); close(waited) }() // reap it once stopped; nothing starts it again
	t.Cleanup(func() {
		_ = proc.Process.Kill()
		<-waited
	})
	pidFile := filepath.Join(dir, "lone.pid")
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(proc.Process.Pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	exp := testSpec(srv.URL, 2500*time.Millisecond, spec.Fault{
		Name: "bounce", Type: "replica.restart", At: spec.Duration(500 * time.Millisecond), Duration: spec.Duration(500 * time.Millisecond),
		Params: map[string]any{"target": map[string]any{"pid_file": pidFile}, "grace": "1s", "timeout": "1s"},
	})
	o, err := runSpec(context.Background(), exp, Options{RunDir: t.TempDir(), RevertTimeout: 3 * time.Second})
	if _, ok := errors.AsType[*RevertError](err); !ok {
		t.Fatalf("Run = %v, want a *RevertError (exit 97)", err)
	}
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		t.Fatal("the process was not stopped")
	}
	f := o.Doc.Faults[0]
	if f.InjectedAtS == nil || f.RevertedAtS != nil || f.RevertOK || !strings.Contains(f.Error, "is not up again") {
		t.Errorf("fault record %+v, want injected, its revert failed saying the process is not up again", f)
	}
	if strings.Contains(f.Error, "not injected") {
		t.Errorf("fault record says %q", f.Error)
	}
	last := o.Doc.Phases[len(o.Doc.Phases)-1]
	if last.Name != PhaseFault || last.Fault != "bounce" {
		t.Errorf("last phase %+v, want bounce's fault phase to the run's end", last)
	}
}
