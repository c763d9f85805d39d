package replica

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/sim/supervisor"
)

// binDir holds bin/llmchaos, built once by TestMain (not under -short); it
// doubles as the Docker build context of the docker driver's tests.
var binDir string

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	if testing.Short() {
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "llmchaos-replica-*")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binDir = dir
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(os.Getenv("GOROOT"), "bin", "go") // go test passes GOROOT on
	}
	// Static, as `make build` makes it, so that it runs FROM scratch too.
	build := exec.Command(goTool, "build", "-trimpath", "-o", filepath.Join(dir, "bin", "llmchaos"), "github.com/llmchaos/llmchaos/cmd/llmchaos")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build llmchaos:", err)
		return 1
	}
	return m.Run()
}

// needBinary skips tests of real replicas under -short.
func needBinary(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs real simulator replicas; skipped under -short")
	}
}

func llmchaosBin() string { return filepath.Join(binDir, "bin", "llmchaos") }

func testRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x7265706c696361)) }

// child is a process a test started; cleanup kills what is left.
type child struct {
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan struct{} // closed once waited for
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func startChild(t *testing.T, name string, args ...string) *child {
	t.Helper()
	c := &child{cmd: exec.Command(name, args...), out: &lockedBuffer{}, done: make(chan struct{})}
	c.cmd.Stdout, c.cmd.Stderr = c.out, c.out
	c.cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		c.cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(func() {
		c.cmd.Process.Kill()
		<-c.done
		if t.Failed() {
			t.Logf("%s %v output:\n%s", filepath.Base(name), args, c.out)
		}
	})
	return c
}

// wait waits (bounded) for the child to exit and returns how it ended.
func (c *child) wait(t *testing.T, limit time.Duration) *os.ProcessState {
	t.Helper()
	select {
	case <-c.done:
		return c.cmd.ProcessState
	case <-time.After(limit):
		t.Fatalf("%v still running after %v", c.cmd.Args, limit)
		return nil
	}
}

func (c *child) pid() int { return c.cmd.Process.Pid }

// procState returns the state letter of pid (R, S, T ...), 0 if it is gone.
func procState(t *testing.T, pid int) byte {
	t.Helper()
	info, ok, err := readProc(pid)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return 0
	}
	return info.state
}

// waitFor polls cond every 10 ms until it holds or limit passes.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", limit, what)
		}
		<-tick.C
	}
}

// waitState polls a supervisor's state file until cond holds.
func waitState(t *testing.T, path string, limit time.Duration, what string, cond func([]supervisor.Replica) bool) []supervisor.Replica {
	t.Helper()
	var last []supervisor.Replica
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if rs, err := supervisor.ReadState(path); err == nil {
			last = rs
			if cond(rs) {
				return rs
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s; last state %+v", limit, what, last)
		}
		<-tick.C
	}
}

func allServing(rs []supervisor.Replica) bool {
	for _, r := range rs {
		if r.State != supervisor.StateServing {
			return false
		}
	}
	return len(rs) > 0
}

// freePorts returns the first of n consecutive ports free a moment ago.
func freePorts(t *testing.T, n int) int {
	t.Helper()
	for range 50 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		base := ln.Addr().(*net.TCPAddr).Port
		lns := []net.Listener{ln}
		ok := base+n-1 <= 65535
		for p := base + 1; ok && p < base+n; p++ {
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
			if err != nil {
				ok = false
				break
			}
			lns = append(lns, l)
		}
		for _, l := range lns {
			l.Close()
		}
		if ok {
			return base
		}
	}
	t.Fatalf("no %d consecutive free ports found", n)
	return 0
}

// startSim runs `llmchaos sim --replicas n` under its supervisor and waits
// until every replica serves; it returns the state file and the replicas.
func startSim(t *testing.T, n int) (string, []supervisor.Replica) {
	t.Helper()
	needBinary(t)
	state := filepath.Join(t.TempDir(), "state.json")
	base := freePorts(t, n)
	startChild(t, llmchaosBin(), "sim", "--replicas", strconv.Itoa(n), "--base-port", strconv.Itoa(base),
		"--gpu-memory", "40GiB", "--state-file", state, "--restart-delay", "200ms", "--startup-time", "200ms",
		"--stop-grace", "2s", "--latency", "constant", "--ttft", "10ms", "--itl", "10ms")
	rs := waitState(t, state, 30*time.Second, "every replica serving", allServing)
	return state, rs
}

// stream is one streamed completion a test reads in the background.
type stream struct {
	chunks atomic.Int64
	first  chan struct{} // closed at the first content chunk
	done   chan struct{} // closed when the stream ended
	err    error         // set before done closes
}

// startStream posts a long streaming completion to addr and counts its
// content chunks until ctx ends or the stream does.
func startStream(ctx context.Context, addr string) *stream {
	s := &stream{first: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		body := `{"model":"llmchaos-sim","prompt":"tell me a long story","max_tokens":4000,"ignore_eos":true,"stream":true}`
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/v1/completions", strings.NewReader(body))
		if err != nil {
			s.err = err
			return
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			s.err = err
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			s.err = fmt.Errorf("status %d", resp.StatusCode)
			return
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "data: ") && strings.Contains(line, `"text":"`) && !strings.Contains(line, `"text":""`) {
				if s.chunks.Add(1) == 1 {
					close(s.first)
				}
			}
		}
		s.err = sc.Err()
	}()
	return s
}

// waitFirst waits for the stream's first token.
func (s *stream) waitFirst(t *testing.T) {
	t.Helper()
	select {
	case <-s.first:
	case <-s.done:
		t.Fatalf("stream ended before its first token: %v", s.err)
	case <-time.After(20 * time.Second):
		t.Fatal("stream got no token within 20s")
	}
}

// quietFor reports whether no chunk arrived on s during d.
func (s *stream) quietFor(d time.Duration) (bool, int64) {
	before := s.chunks.Load()
	timer := time.NewTimer(d)
	defer timer.Stop()
	<-timer.C
	after := s.chunks.Load()
	return after == before, after - before
}

// recLog is a RevertLog that keeps what it is given (a fake behind the
// narrow RevertLog interface).
type recLog struct {
	mu    sync.Mutex
	specs []faults.RevertSpec
}

func (l *recLog) Will(s faults.RevertSpec) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.specs = append(l.specs, s)
	return nil
}

func (l *recLog) all() []faults.RevertSpec {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]faults.RevertSpec(nil), l.specs...)
}

// processSpecs decodes every spec of kind as a faults.ProcessSpec.
func processSpecs(t *testing.T, specs []faults.RevertSpec, kind string) []faults.ProcessSpec {
	t.Helper()
	var out []faults.ProcessSpec
	for _, s := range specs {
		if s.Kind != kind {
			continue
		}
		var p faults.ProcessSpec
		if err := json.Unmarshal(s.Data, &p); err != nil {
			t.Fatalf("spec %s %s: %v", s.Kind, s.Data, err)
		}
		out = append(out, p)
	}
	return out
}

// collector gathers a watcher's events.
type collector struct {
	mu  sync.Mutex
	evs []Event
}

func (c *collector) emit(e Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.evs = append(c.evs, e)
}

func (c *collector) events() []Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Event(nil), c.evs...)
}

// startWatch runs w in the background until the test ends and returns once
// it is in place.
func startWatch(t *testing.T, w Watcher) *collector {
	t.Helper()
	c := &collector{}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	errc := make(chan error, 1)
	go func() { errc <- w.Watch(ctx, func() { close(ready) }, c.emit) }()
	select {
	case <-ready:
	case err := <-errc:
		cancel()
		t.Fatalf("watch ended before it was ready: %v", err)
	case <-time.After(20 * time.Second):
		cancel()
		t.Fatal("watch not ready within 20s")
	}
	t.Cleanup(func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("watch: %v", err)
		}
	})
	return c
}

// kinds returns the kinds of the events of replica id, in order.
func kinds(evs []Event, id string) []EventKind {
	var out []EventKind
	for _, e := range evs {
		if e.Replica == id {
			out = append(out, e.Kind)
		}
	}
	return out
}
