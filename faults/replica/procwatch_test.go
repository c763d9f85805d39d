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
	"syscall"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/testutil"
)

// simRestartLoop runs `llmchaos sim` on port under a bash restart loop, as
// a systemd unit with Restart=always would, writing the server's pid to a
// pid file; it returns the pid file once the server answers /health.
func simRestartLoop(t *testing.T, port int) string {
	t.Helper()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "sim.pid")
	script := `bin=$1; port=$2; pidfile=$3
while :; do
  "$bin" sim --listen 127.0.0.1:$port --startup-time 300ms --latency constant --ttft 5ms --itl 1ms &
  echo $! > "$pidfile.tmp" && mv "$pidfile.tmp" "$pidfile"
  wait $!
  sleep 0.5
done`
	cmd := exec.Command("bash", "-c", script, "loop", llmchaosBin(), strconv.Itoa(port), pidFile)
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
	testutil.WaitFor(t, 20*time.Second, "the simulator under its restart loop to serve", func() bool {
		return len(readPIDs(pidFile)) == 1 && testutil.HealthCode(addr, time.Second) == 200
	})
	return pidFile
}

// A server under a restart loop, killed by replica.kill: the watcher of its
// pid file reports the exit of the old pid, the start of the new one as the
// same replica, and the new one's first healthy answer on the port, in that
// order; the kill's Undo returns once the loop has it up again.
func TestWatchProcessRestartLoop(t *testing.T) {
	t.Parallel()
	needBinary(t)
	port := testutil.FreePorts(t, 1)
	pidFile := simRestartLoop(t, port)
	old := readPIDs(pidFile)[0]
	target := TargetParams{PIDFile: pidFile}

	w, err := OpenWatcher(target.WithDefaults())
	if err != nil {
		t.Fatal(err)
	}
	// Its first look, before ready, reads the port the server listens on.
	evs := startWatch(t, w)

	k, err := NewKill("k", KillParams{Params: Params{Target: target}}, testRand(1))
	if err != nil {
		t.Fatal(err)
	}
	undo, err := k.Inject(context.Background(), &recLog{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := undo(ctx); err != nil {
		t.Fatalf("kill's Undo = %v, want nil (the loop starts the server again)", err)
	}
	id := "pid-" + strconv.Itoa(old)
	got := testutil.WaitValue(t, 20*time.Second, "exit, start and healthy of "+id,
		func() ([]Event, error) { return evs.events(), nil },
		func(evs []Event) bool { return slices.Contains(kinds(evs, id), EventHealthy) })
	var now int
	if pids := readPIDs(pidFile); len(pids) == 1 {
		now = pids[0]
	}
	if now == 0 || now == old {
		t.Fatalf("pid file = %v after the restart, want a new pid (was %d)", readPIDs(pidFile), old)
	}
	want := []Event{
		{Replica: id, Kind: EventExit, Detail: fmt.Sprintf("pid %d", old)},
		{Replica: id, Kind: EventStart, Detail: fmt.Sprintf("pid %d, replaces pid %d", now, old)},
		{Replica: id, Kind: EventHealthy, Detail: fmt.Sprintf("pid %d answers on port %d", now, port)},
	}
	checkObjects(t, got)
	for i := range got {
		got[i].At = time.Time{}
	}
	if !slices.Equal(got, want) {
		t.Errorf("events =\n%v\nwant\n%v", got, want)
	}
}
