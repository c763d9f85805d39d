package network

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/llmchaos/llmchaos/faults"
)

// Roles the test binary plays when started by a proxy process test.
const (
	roleEnv     = "LLMCHAOS_NETWORK_TEST_ROLE"
	upstreamEnv = "LLMCHAOS_NETWORK_TEST_UPSTREAM"
	dirEnv      = "LLMCHAOS_NETWORK_TEST_DIR"
)

// helperCommand runs this test binary as the hidden `llmchaos proxy`.
func helperCommand() []string {
	return []string{os.Args[0], "-test.run=^TestProxyHelperProcess$"}
}

// helperEnv makes a started test binary play the proxy child; a race build
// skips its one-second sleep at exit, which would only slow the tests.
func helperEnv() []string {
	return []string{roleEnv + "=proxy", "GORACE=atexit_sleep_ms=0"}
}

// TestProxyHelperProcess is not a test: it is the body of the helper
// processes the tests below start (the proxy child, and a parent run).
func TestProxyHelperProcess(t *testing.T) {
	switch os.Getenv(roleEnv) {
	case "proxy":
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		err := RunProxyProcess(ctx, os.Stdin, os.Stdout, slog.New(slog.NewTextHandler(os.Stderr, nil)))
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	case upstreamRoleBench:
		if err := benchUpstreamServe(); err != nil {
			fmt.Fprintln(os.Stderr, "bench upstream:", err)
			os.Exit(1)
		}
		os.Exit(0)
	case relayRoleBench:
		if err := benchRelayServe(os.Getenv(upstreamEnv)); err != nil {
			fmt.Fprintln(os.Stderr, "bench relay:", err)
			os.Exit(1)
		}
		os.Exit(0)
	case "parent":
		if err := parentRun(); err != nil {
			fmt.Fprintln(os.Stderr, "parent:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// parentRun is a run that journals a proxy child and a toxic on it, says
// where the proxy is, and waits for stdin to close (or to be killed).
func parentRun() error {
	ctx := context.Background()
	dir, upstream := os.Getenv(dirEnv), os.Getenv(upstreamEnv)
	j, err := faults.Open(dir)
	if err != nil {
		return err
	}
	e1, err := j.Begin("front", "network.proxy", upstream)
	if err != nil {
		return err
	}
	pp, err := StartProxyProcess(ctx, e1, ProcessConfig{
		Proxy:   Config{Upstream: upstream},
		Control: filepath.Join(dir, "proxy.sock"),
	}, ProcessOptions{Command: helperCommand(), Env: helperEnv(), Stderr: os.Stderr})
	if err != nil {
		return err
	}
	if err := e1.Injected(); err != nil {
		return err
	}
	e2, err := j.Begin("lat", TypeProxyLatency, pp.Addr())
	if err != nil {
		return err
	}
	f, err := NewToxic("lat", pp, &LatencyParams{Latency: time.Millisecond}, 1)
	if err != nil {
		return err
	}
	if _, err := f.Inject(ctx, e2); err != nil {
		return err
	}
	if err := e2.Injected(); err != nil {
		return err
	}
	b, _ := json.Marshal(processReady{Addr: pp.Addr(), PID: pp.PID(), Control: pp.ControlPath()})
	fmt.Println(string(b))
	_, _ = io.Copy(io.Discard, os.Stdin)
	return pp.Stop(ctx)
}

// openPidfd pins pid, so that its exit can be waited for even when it is
// not our child.
func openPidfd(t *testing.T, pid int) int {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Skipf("pidfd_open: %v", err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

// waitExit waits (bounded) until the process of pidfd fd has exited.
func waitExit(t *testing.T, fd int, what string) {
	t.Helper()
	p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	deadline := time.Now().Add(testTimeout)
	for time.Now().Before(deadline) {
		n, err := unix.Poll(p, int(time.Until(deadline).Milliseconds())+1)
		if n > 0 {
			return
		}
		if err != nil && !errors.Is(err, unix.EINTR) {
			t.Fatalf("poll pidfd: %v", err)
		}
	}
	t.Fatalf("%s still running after %v", what, testTimeout)
}

// portFree reports whether addr can be listened on again.
func portFree(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return ln.Close()
}

func TestProxyProcessEndsWithParent(t *testing.T) {
	srv := startTCPServer(t, echo)
	dir := t.TempDir()
	parent := exec.Command(os.Args[0], "-test.run=^TestProxyHelperProcess$")
	parent.Env = append(os.Environ(), roleEnv+"=parent", upstreamEnv+"="+srv.addr(), dirEnv+"="+dir, "GORACE=atexit_sleep_ms=0")
	parent.Stderr = os.Stderr
	stdin, err := parent.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = parent.Process.Kill()
		_ = parent.Wait()
	}()
	line, err := bufio.NewReader(out).ReadBytes('\n')
	if err != nil {
		t.Fatalf("parent's line: %v", err)
	}
	var info processReady
	if err := json.Unmarshal(line, &info); err != nil {
		t.Fatalf("parent's line %q: %v", line, err)
	}
	child := openPidfd(t, info.PID)

	// The proxy works, with the toxic the parent added.
	c := dial(t, info.Addr)
	roundTrip(t, c, "hello")
	c.Close()
	cl := newControlClient(info.Control)
	defer cl.close()
	if ts, err := cl.list(context.Background()); err != nil || len(ts) != 1 || ts[0].Name != "lat" {
		t.Fatalf("toxics of the child: %+v, %v", ts, err)
	}
	if ci, err := cl.info(context.Background()); err != nil || ci.PID != info.PID || ci.Addr != info.Addr || ci.Mode != ModeTCP {
		t.Errorf("GET /proxy: %+v, %v; want pid %d addr %s mode tcp", ci, err, info.PID, info.Addr)
	}
	if _, err := faults.Recover(context.Background(), dir, nil); !errors.Is(err, faults.ErrJournalBusy) {
		t.Errorf("Recover while the parent lives: got %v, want ErrJournalBusy", err)
	}

	// kill -9 the parent: the child must end by itself and free its port.
	if err := parent.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = parent.Wait()
	waitExit(t, child, "proxy child")
	if err := portFree(info.Addr); err != nil {
		t.Errorf("proxy port after its parent was killed: %v", err)
	}
	if _, err := os.Stat(info.Control); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("control socket after a clean exit: %v, want it removed", err)
	}

	// The journal shows both faults pending; recover closes them.
	pend, err := faults.Pending(dir)
	if err != nil || len(pend) != 2 {
		t.Fatalf("pending: %+v, %v; want the proxy and its toxic", pend, err)
	}
	revs := faults.BuiltinReverters()
	maps.Copy(revs, ProxyReverters())
	rep, err := faults.Recover(context.Background(), dir, revs)
	if err != nil {
		t.Fatalf("Recover: %v", err)
	}
	if len(rep.Faults) != 2 || rep.Faults[0].Name != "lat" || rep.Faults[1].Name != "front" {
		t.Errorf("recovered: %+v, want lat then front", rep.Faults)
	}
	if pend, _ := faults.Pending(dir); len(pend) != 0 {
		t.Errorf("pending after Recover: %d", len(pend))
	}
}

func TestProxyProcessControlAndRevert(t *testing.T) {
	payload := strings.Repeat("x", 100)
	srv := startTCPServer(t, func(c net.Conn) { _, _ = io.WriteString(c, payload) })
	dir := t.TempDir()
	log := &recordLog{}
	limit, err := json.Marshal(&LimitDataParams{Bytes: 10, Stream: Downstream})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pp, err := StartProxyProcess(ctx, log, ProcessConfig{
		Proxy:   Config{Upstream: srv.addr()},
		Control: filepath.Join(dir, "p.sock"),
		Toxics:  []ToxicSpec{{Name: "start", Type: TypeProxyLimitData, Params: limit}},
	}, ProcessOptions{Command: helperCommand(), Env: helperEnv(), Stderr: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := pp.Stop(ctx); err != nil {
			t.Error(err)
		}
	})
	if len(log.specs) != 1 || log.specs[0].Kind != faults.KindProcess {
		t.Fatalf("journal: %+v, want one %s spec", log.specs, faults.KindProcess)
	}
	read := func() string {
		t.Helper()
		c := dial(t, pp.Addr())
		defer c.Close()
		b, err := io.ReadAll(c)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	// The toxic given at start is in force.
	if got := read(); got != payload[:10] {
		t.Errorf("with the start toxic: got %d bytes, want 10", len(got))
	}
	if err := pp.RemoveToxic(ctx, "start"); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != payload {
		t.Errorf("after removal: got %d bytes, want %d", len(got), len(payload))
	}
	// A toxic fault through the control API, reverted by its spec as
	// recover would, from the journal data alone.
	f, err := NewToxic("lim", pp, &LimitDataParams{Bytes: 5}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Inject(ctx, log); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != payload[:5] {
		t.Errorf("with the injected toxic: got %d bytes, want 5", len(got))
	}
	if _, err := f.Inject(ctx, log); err == nil || !strings.Contains(err.Error(), "409") {
		t.Errorf("same toxic twice through the control API: got %v, want 409", err)
	}
	toxicSpec := log.specs[1]
	if err := RevertToxic(ctx, toxicSpec.Data); err != nil {
		t.Fatalf("RevertToxic: %v", err)
	}
	if ts, err := pp.Toxics(ctx); err != nil || len(ts) != 0 {
		t.Errorf("toxics after RevertToxic: %+v, %v", ts, err)
	}

	// The process spec: a start time that differs is another process.
	var ps faults.ProcessSpec
	if err := json.Unmarshal(log.specs[0].Data, &ps); err != nil {
		t.Fatal(err)
	}
	if ps.PID != pp.PID() {
		t.Fatalf("spec pid %d, child pid %d", ps.PID, pp.PID())
	}
	other := ps
	other.StartTime++
	data, _ := json.Marshal(other)
	if err := faults.RevertProcess(ctx, data); err != nil {
		t.Fatalf("RevertProcess with a foreign start time: %v", err)
	}
	select {
	case <-pp.Done():
		t.Fatal("RevertProcess killed a process whose start time does not match")
	default:
	}
	if _, alive, _ := faults.ProcessStartTime(pp.PID()); !alive {
		t.Fatal("child not alive after a refused revert")
	}
	// The real spec ends it and frees its port.
	rctx, cancel := context.WithTimeout(ctx, testTimeout)
	defer cancel()
	if err := faults.RevertProcess(rctx, log.specs[0].Data); err != nil {
		t.Fatalf("RevertProcess: %v", err)
	}
	select {
	case <-pp.Done():
	case <-time.After(testTimeout):
		t.Fatal("child not reaped after RevertProcess")
	}
	if err := portFree(pp.Addr()); err != nil {
		t.Errorf("port after RevertProcess: %v", err)
	}
	// Its toxics went with it: reverting them is a no-op, not an error.
	if err := RevertToxic(ctx, toxicSpec.Data); err != nil {
		t.Errorf("RevertToxic of a gone proxy: %v", err)
	}
	if err := pp.RemoveToxic(ctx, "lim"); err != nil {
		t.Errorf("RemoveToxic of a gone proxy: %v", err)
	}
}

func TestProxyProcessReportsStartFailure(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	log := &recordLog{}
	_, err = StartProxyProcess(context.Background(), log, ProcessConfig{
		Proxy:   Config{Listen: busy.Addr().String(), Upstream: "127.0.0.1:9"},
		Control: filepath.Join(t.TempDir(), "p.sock"),
	}, ProcessOptions{Command: helperCommand(), Env: helperEnv()})
	if err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("start on a busy port: got %v, want the child's bind error", err)
	}
	var ps faults.ProcessSpec
	if len(log.specs) != 1 || json.Unmarshal(log.specs[0].Data, &ps) != nil {
		t.Fatalf("journal: %+v", log.specs)
	}
	if _, alive, _ := faults.ProcessStartTime(ps.PID); alive {
		t.Error("failed child still running")
	}

	// A journal that cannot record the child: nothing is left running.
	log = &recordLog{err: errors.New("disk full")}
	_, err = StartProxyProcess(context.Background(), log, ProcessConfig{
		Proxy:   Config{Upstream: "127.0.0.1:9"},
		Control: filepath.Join(t.TempDir(), "p.sock"),
	}, ProcessOptions{Command: helperCommand(), Env: helperEnv()})
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("start with a failing journal: got %v", err)
	}

	// Invalid configs fail before any process starts, all problems at once.
	err = ProcessConfig{Proxy: Config{Upstream: "nohost"}, Control: ""}.Validate()
	if err == nil || !strings.Contains(err.Error(), "upstream") || !strings.Contains(err.Error(), "control") {
		t.Errorf("Validate: got %v, want upstream and control problems", err)
	}
}
