//go:build linux

package replica

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/testutil"
)

// TestEventsDedupedAcrossTargetStyles: three faults name one server in
// three ways (its own pid file, a command-line pattern, a pid file of
// several processes), so three watchers see everything it does. Each
// watcher reports its exit, the start and first healthy answer of its
// replacement, its pause and its resume; through a Deduper, as the runner
// records them, each of those is one event.
func TestEventsDedupedAcrossTargetStyles(t *testing.T) {
	t.Parallel()
	needBinary(t)
	port := testutil.FreePorts(t, 1)
	dir := t.TempDir()
	other := sleeper(t, "exec sleep 600") // the multi-pid file's other process
	script := `bin=$1; port=$2; dir=$3; other=$4
while :; do
  "$bin" sim --listen 127.0.0.1:$port --startup-time 300ms --latency constant --ttft 5ms --itl 1ms &
  echo $! > "$dir/one.tmp" && mv "$dir/one.tmp" "$dir/one.pid"
  printf '%s\n%s\n' $other $! > "$dir/multi.tmp" && mv "$dir/multi.tmp" "$dir/multi.pid"
  wait $!
  sleep 0.5
done`
	cmd := exec.Command("bash", "-c", script, "loop", llmchaosBin(), strconv.Itoa(port), dir, strconv.Itoa(other.PID()))
	cmd.Env = append(os.Environ(), "TMPDIR="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Skip("no bash: ", err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	one, multi := filepath.Join(dir, "one.pid"), filepath.Join(dir, "multi.pid")
	testutil.WaitFor(t, 20*time.Second, "the server under its restart loop to serve", func() bool {
		return len(readPIDs(one)) == 1 && len(readPIDs(multi)) == 2 && testutil.HealthCode(addr, time.Second) == 200
	})
	old := readPIDs(one)[0]

	styles := []TargetParams{
		{PIDFile: one},
		{Cmdline: `--listen 127\.0\.0\.1:` + strconv.Itoa(port) + `( |$)`, Match: MatchCmdline},
		{PIDFile: multi},
	}
	var cols []*collector
	for _, s := range styles {
		w, err := OpenWatcher(s.WithDefaults())
		if err != nil {
			t.Fatal(err)
		}
		cols = append(cols, startWatch(t, w))
	}

	// A kill the loop answers with a new server, then a pause of that one.
	k, err := NewKill("k", KillParams{Params: Params{Target: styles[0]}}, testRand(1))
	if err != nil {
		t.Fatal(err)
	}
	undo, err := k.Inject(context.Background(), faults.NopLog{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := undo(ctx); err != nil {
		t.Fatalf("kill's Undo = %v", err)
	}
	healthyEverywhere := func() bool {
		for _, c := range cols {
			if !slices.ContainsFunc(c.events(), func(e Event) bool { return e.Kind == EventHealthy }) {
				return false
			}
		}
		return true
	}
	testutil.WaitFor(t, 20*time.Second, "every watcher to see the new server healthy", healthyEverywhere)
	now := readPIDs(one)[0]
	p, err := NewPause("p", PauseParams{Params: Params{Target: styles[0]}}, testRand(2))
	if err != nil {
		t.Fatal(err)
	}
	resume, err := p.Inject(context.Background(), faults.NopLog{})
	if err != nil {
		t.Fatal(err)
	}
	seenBy := func(kind EventKind) func() bool {
		return func() bool {
			for _, c := range cols {
				if !slices.ContainsFunc(c.events(), func(e Event) bool { return e.Kind == kind }) {
					return false
				}
			}
			return true
		}
	}
	testutil.WaitFor(t, 10*time.Second, "every watcher to see the pause", seenBy(EventPause))
	if err := resume(context.Background()); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, "every watcher to see the resume", seenBy(EventUnpause))

	// Every watcher's events, in the order they happened, as the runner
	// gets them, through one Deduper.
	var all []Event
	for _, c := range cols {
		all = append(all, c.events()...)
	}
	slices.SortStableFunc(all, func(a, b Event) int { return a.At.Compare(b.At) })
	var d Deduper
	raw, kept := map[string]int{}, map[string]int{}
	for _, e := range all {
		key := fmt.Sprintf("%s %s", e.Kind, e.Object)
		raw[key]++
		if d.First(e) {
			kept[key]++
		}
	}
	oldObj, newObj := processObject(old, procStart(t, old, all)), processObject(now, procStart(t, now, all))
	for _, want := range []string{
		fmt.Sprintf("%s %s", EventExit, oldObj),
		fmt.Sprintf("%s %s", EventStart, newObj),
		fmt.Sprintf("%s %s", EventHealthy, newObj),
		fmt.Sprintf("%s %s", EventPause, newObj),
		fmt.Sprintf("%s %s", EventUnpause, newObj),
	} {
		if raw[want] != len(styles) || kept[want] != 1 {
			t.Errorf("%s: reported %d times by %d watchers, kept %d; want %d and 1", want, raw[want], len(styles), kept[want], len(styles))
		}
	}
	if len(kept) != 5 {
		t.Errorf("kept events %v, want the five above only", kept)
	}
}

// procStart returns the start time the events give process pid (the
// process may be gone by now).
func procStart(t *testing.T, pid int, evs []Event) uint64 {
	t.Helper()
	prefix := "pid " + strconv.Itoa(pid) + " started "
	for _, e := range evs {
		if s, ok := strings.CutPrefix(e.Object, prefix); ok {
			n, err := strconv.ParseUint(s, 10, 64)
			if err == nil {
				return n
			}
		}
	}
	t.Fatalf("no event names pid %d with its start time: %v", pid, evs)
	return 0
}
