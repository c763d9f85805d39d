package replica

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/k8stest"
	"github.com/llmchaos/llmchaos/internal/testutil"
	"github.com/llmchaos/llmchaos/simcontract/replicastate"
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
		return k8stest.Run(m)
	}
	return testutil.RunWithLLMChaos(&k8sRunner{m}, "llmchaos-replica-*", func(dir string) { binDir = dir })
}

// k8sRunner runs the tests with the shared Kubernetes control plane, which
// k8stest.Run stops after them (the Kubernetes driver's tests start it).
type k8sRunner struct{ m *testing.M }

func (r *k8sRunner) Run() int { return k8stest.Run(r.m) }

// needBinary skips tests of real replicas under -short.
func needBinary(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs real simulator replicas; skipped under -short")
	}
}

func llmchaosBin() string { return testutil.BinPath(binDir) }

func testRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x7265706c696361)) }

// startChild starts name with args and a private TMPDIR; the test's
// cleanup kills what is left.
func startChild(t *testing.T, name string, args ...string) *testutil.Proc {
	t.Helper()
	return testutil.StartProc(t, []string{"TMPDIR=" + t.TempDir()}, name, args...)
}

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

// waitState polls a supervisor's state file until cond holds.
func waitState(t *testing.T, path string, limit time.Duration, what string, cond func([]replicastate.Replica) bool) []replicastate.Replica {
	t.Helper()
	return testutil.WaitValue(t, limit, what, func() ([]replicastate.Replica, error) { return replicastate.Read(path) }, cond)
}

func allServing(rs []replicastate.Replica) bool {
	for _, r := range rs {
		if r.State != replicastate.StateServing {
			return false
		}
	}
	return len(rs) > 0
}

// startSim runs `llmchaos sim --replicas n` under its supervisor and waits
// until every replica serves; it returns the state file and the replicas.
func startSim(t *testing.T, n int) (string, []replicastate.Replica) {
	t.Helper()
	needBinary(t)
	state := filepath.Join(t.TempDir(), "state.json")
	base := testutil.FreePorts(t, n)
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
		r := testutil.Stream(ctx, addr, 4000, func(n int) {
			s.chunks.Add(1)
			if n == 1 {
				close(s.first)
			}
		})
		s.err = r.Err
		if r.Err == nil && r.Status != http.StatusOK {
			s.err = fmt.Errorf("status %d", r.Status)
		}
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
