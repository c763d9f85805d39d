package gpu

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/testutil"
	"github.com/llmchaos/llmchaos/simcontract/vgpu"
)

// llmchaosBin is the llmchaos binary built once by TestMain (static, as
// `make build` makes it): the balloon and the replicas of these tests.
var llmchaosBin string

// helperEnv makes the test binary act as a helper process (helperMain).
const helperEnv = "GPU_TEST_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helperMain(mode))
	}
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	// Orphans (a balloon whose parent was killed) are re-parented here, so
	// that the tests can reap them and see how they ended.
	if err := testutil.BecomeSubreaper(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return testutil.RunWithLLMChaos(m, "llmchaos-gputest-*", func(dir string) { llmchaosBin = testutil.BinPath(dir) })
}

// helperMain runs in a child process. Mode "monitor" opens the GPU monitor
// and reports whether the process survived it. Mode "inject" (arguments from the
// environment: GPU_TEST_VGPU, GPU_TEST_RUN, GPU_TEST_BIN) injects a 2 GiB
// balloon through a real journal in GPU_TEST_RUN, prints "balloon PID",
// and waits to be killed.
func helperMain(mode string) int {
	switch mode {
	case "monitor":
		// Open the GPU monitor on the default library, use every entry
		// point, and say so if the process survived.
		m := OpenMonitor(MonitorOptions{Notice: func(s string) { fmt.Println(s) }})
		if m.Err() == nil {
			fmt.Printf("devices %d\n", m.Devices())
		}
		m.Sample()
		m.Run(context.Background())
		m.Close()
		fmt.Println("still alive")
		return 0
	case "inject":
	default:
		return 2
	}
	j, err := faults.Open(os.Getenv("GPU_TEST_RUN"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	e, err := j.Begin("pressure", TypeMemoryPressure, "vgpu 0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	f, err := NewMemoryPressure("pressure", PressureParams{GiB: ptr(2.0), VGPUDir: os.Getenv("GPU_TEST_VGPU")},
		BalloonOptions{Binary: os.Getenv("GPU_TEST_BIN")})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	b, err := f.Start(context.Background(), e)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := e.Injected(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("balloon %d\n", b.PID())
	// Hold until the test kills this process (bounded, should it not).
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	<-ctx.Done()
	return 0
}

func ptr[T any](v T) *T { return &v }

// recLog is a RevertLog that keeps the specs; failAt > 0 makes the
// failAt-th Will fail (a journal that cannot write).
type recLog struct {
	mu     sync.Mutex
	specs  []faults.RevertSpec
	failAt int
	calls  int
}

func (l *recLog) Will(s faults.RevertSpec) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls++
	if l.calls == l.failAt {
		return fmt.Errorf("journal: disk full (test)")
	}
	l.specs = append(l.specs, s)
	return nil
}

func (l *recLog) kinds() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var ks []string
	for _, s := range l.specs {
		ks = append(ks, s.Kind)
	}
	return ks
}

// spec returns the recorded spec of kind.
func (l *recLog) spec(t *testing.T, kind string) faults.RevertSpec {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.specs {
		if s.Kind == kind {
			return s
		}
	}
	t.Fatalf("no %s spec recorded (have %v)", kind, l.specs)
	return faults.RevertSpec{}
}

// newVGPU makes a vGPU ledger of size total in a fresh directory and
// returns the directory and a handle on device 0.
func newVGPU(t *testing.T, total int64) (string, *vgpu.Device) {
	t.Helper()
	dir := t.TempDir()
	d, err := vgpu.Open(dir, 0, total)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return dir, d
}

func free(t *testing.T, d *vgpu.Device) int64 {
	t.Helper()
	f, err := d.Free()
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// alive reports whether pid is a running (not zombie) process.
func alive(t *testing.T, pid int) bool {
	t.Helper()
	_, ok, err := faults.ProcessStartTime(pid)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// processSpec decodes a KindProcess spec.
func processSpec(t *testing.T, s faults.RevertSpec) faults.ProcessSpec {
	t.Helper()
	var ps faults.ProcessSpec
	if err := json.Unmarshal(s.Data, &ps); err != nil {
		t.Fatal(err)
	}
	return ps
}

// ppid returns the parent of pid.
func ppid(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.LastIndexByte(b, ')')
	f := bytes.Fields(b[i+1:])
	n, err := strconv.Atoi(string(f[1]))
	if err != nil {
		t.Fatal(err)
	}
	return n
}
