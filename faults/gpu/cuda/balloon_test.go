package cuda

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/simcontract/vgpu"
)

// fakeDriver is testdata/fakecuda.c built as a shared library by TestMain,
// or "" when no C compiler is here (the tests that need it then skip).
var fakeDriver, fakeSkip string

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "llmchaos-fakecuda-*")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	cc, err := exec.LookPath("gcc")
	if err != nil {
		if cc, err = exec.LookPath("cc"); err != nil {
			fakeSkip = "no C compiler to build the fake CUDA driver: " + err.Error()
		}
	}
	if fakeSkip == "" {
		out := filepath.Join(dir, "libcuda.so.1")
		b, err := exec.Command(cc, "-shared", "-fPIC", "-O1", "-o", out, filepath.Join("testdata", "fakecuda.c"), "-lpthread").CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "build fake CUDA driver: %v\n%s", err, b)
			return 1
		}
		fakeDriver = out
	}
	return m.Run()
}

// newFake copies the fake driver to a fresh path, so that this test's
// process-wide driver state (loaded once per path) starts empty, after
// setting the fake's knobs in the environment.
func newFake(t *testing.T, env ...string) string {
	t.Helper()
	if fakeDriver == "" {
		t.Skip(fakeSkip)
	}
	for i := 0; i+1 < len(env); i += 2 {
		t.Setenv(env[i], env[i+1])
	}
	p := filepath.Join(t.TempDir(), "libcuda.so.1")
	copyFile(t, fakeDriver, p)
	return p
}

func copyFile(t testing.TB, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

func mustOpen(t *testing.T, o Options) *Balloon {
	t.Helper()
	b, err := Open(context.Background(), o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func mustFree(t *testing.T, b *Balloon) int64 {
	t.Helper()
	f, err := b.Free(context.Background())
	if err != nil {
		t.Fatalf("Free: %v", err)
	}
	return f
}

const (
	fakeTotal    = 8192 * vgpu.MiB
	fakeCtxCost  = 256 * vgpu.MiB
	fakeFreeOpen = fakeTotal - fakeCtxCost
)

func TestOpenWithoutDriver(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "libcuda.so.1")
	_, err := Open(context.Background(), Options{Library: missing})
	if !errors.Is(err, ErrNoDriver) {
		t.Fatalf("Open with no library: err = %v, want ErrNoDriver", err)
	}
	if want := "no CUDA driver (" + missing + " not found)"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q, want it to say %q", err, want)
	}

	// The default library: on a machine without an NVIDIA driver (this
	// one) the message names libcuda.so.1.
	b, err := Open(context.Background(), Options{})
	if err == nil {
		b.Close()
		t.Skip("this machine has a CUDA driver and device; the no-driver message cannot be seen here")
	}
	if errors.Is(err, ErrNoDriver) {
		if want := "no CUDA driver (libcuda.so.1 not found)"; !strings.HasPrefix(err.Error(), want) {
			t.Errorf("error %q, want it to start with %q", err, want)
		}
	}
}

func TestOpenRefusesALibraryThatIsNotADriver(t *testing.T) {
	// libm is on every glibc system and has no cuInit.
	_, err := Open(context.Background(), Options{Library: "libm.so.6"})
	if err == nil || !strings.Contains(err.Error(), "libm.so.6 lacks cuInit") {
		t.Fatalf("Open(libm.so.6): err = %v, want a clean 'lacks cuInit' error", err)
	}
	if errors.Is(err, ErrNoDriver) {
		t.Errorf("a library without the symbols is not ErrNoDriver: %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		o    Options
		want []string
	}{
		{name: "no device", env: []string{"FAKECUDA_INIT_RESULT", "100"}, want: []string{"no CUDA device", "cuInit: CUDA_ERROR_NO_DEVICE (100)"}},
		{name: "init fails", env: []string{"FAKECUDA_INIT_RESULT", "3"}, want: []string{"initialise driver", "CUDA_ERROR_NOT_INITIALIZED (3)"}},
		{name: "unknown result", env: []string{"FAKECUDA_INIT_RESULT", "777"}, want: []string{"cuInit: CUresult 777"}},
		{name: "device out of range", o: Options{Device: 3}, want: []string{"device 3: this machine has 1 CUDA device(s)"}},
		{name: "negative device", o: Options{Device: -1}, want: []string{"device -1: must be 0 or more"}},
		{name: "chunks inverted", o: Options{Chunk: vgpu.MiB, MinChunk: 2 * vgpu.MiB}, want: []string{"min chunk"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.o.Library = newFake(t, tt.env...)
			b, err := Open(context.Background(), tt.o)
			if err == nil {
				b.Close()
				t.Fatalf("Open succeeded, want an error mentioning %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q, want it to mention %q", err, w)
				}
			}
		})
	}
}

func TestHoldRelease(t *testing.T) {
	b := mustOpen(t, Options{Library: newFake(t)})
	if got, want := b.Name(), "Fake GPU"; got != want {
		t.Errorf("Name() = %q, want %q", got, want)
	}
	if got := b.Total(); got != fakeTotal {
		t.Errorf("Total() = %d, want %d", got, fakeTotal)
	}
	if got := mustFree(t, b); got != fakeFreeOpen {
		t.Fatalf("Free() after Open = %d, want %d (total less the context)", got, fakeFreeOpen)
	}
	ctx := context.Background()
	if err := b.Hold(ctx, 3*vgpu.GiB+vgpu.MiB); err != nil {
		t.Fatal(err)
	}
	if got, want := b.Held(), 3*vgpu.GiB+vgpu.MiB; got != want {
		t.Errorf("Held() = %d, want %d", got, want)
	}
	// The odd MiB is booked as a 2 MiB page, as a driver does.
	if got, want := mustFree(t, b), fakeFreeOpen-3*vgpu.GiB-2*vgpu.MiB; got != want {
		t.Errorf("Free() while holding = %d, want %d", got, want)
	}
	before := mustFree(t, b)
	err := b.Hold(ctx, 5*vgpu.GiB)
	re, ok := errors.AsType[*vgpu.ReserveError](err)
	if !ok {
		t.Fatalf("Hold beyond free: err = %v, want *vgpu.ReserveError", err)
	}
	if re.Need != 5*vgpu.GiB || re.Free != before || re.Total != fakeTotal {
		t.Errorf("ReserveError = need %d free %d total %d, want %d %d %d", re.Need, re.Free, re.Total, 5*vgpu.GiB, before, fakeTotal)
	}
	if want := "cuda device 0: cannot hold 5.0 GiB: need 5.0 GiB, the driver reports 4.7 GiB free of 8.0 GiB"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	if got := mustFree(t, b); got != before {
		t.Errorf("Free() after a refused Hold = %d, want %d (a refusal keeps nothing)", got, before)
	}
	if err := b.Release(); err != nil {
		t.Fatal(err)
	}
	if err := b.Release(); err != nil {
		t.Errorf("second Release: %v, want nil", err)
	}
	if got := mustFree(t, b); got != fakeFreeOpen {
		t.Errorf("Free() after Release = %d, want %d", got, fakeFreeOpen)
	}
	if err := b.Hold(ctx, 0); err == nil {
		t.Error("Hold(0) succeeded, want an error")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := b.Hold(cctx, vgpu.GiB); !errors.Is(err, context.Canceled) {
		t.Errorf("Hold with a cancelled ctx: err = %v, want context.Canceled", err)
	}
	if got := mustFree(t, b); got != fakeFreeOpen {
		t.Errorf("Free() after a cancelled Hold = %d, want %d", got, fakeFreeOpen)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Errorf("second Close: %v, want nil", err)
	}
	if err := b.Release(); err != nil {
		t.Errorf("Release after Close: %v, want nil", err)
	}
	if err := b.Hold(ctx, vgpu.MiB); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Hold after Close: err = %v, want a closed error", err)
	}
}

func TestHoldAllBut(t *testing.T) {
	tests := []struct {
		name     string
		maxAlloc string // FAKECUDA_MAX_ALLOC_MIB: refuse larger single allocations
		leave    int64
	}{
		{name: "leave 1 GiB", leave: vgpu.GiB},
		{name: "leave nothing", leave: 0},
		{name: "fragmented: 300 MiB at most per allocation", maxAlloc: "300", leave: 512 * vgpu.MiB},
		{name: "odd leave", leave: 777 * vgpu.MiB},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := mustOpen(t, Options{Library: newFake(t, "FAKECUDA_MAX_ALLOC_MIB", tt.maxAlloc)})
			took, err := b.HoldAllBut(context.Background(), tt.leave)
			if err != nil {
				t.Fatal(err)
			}
			free := mustFree(t, b)
			if free < tt.leave || free >= tt.leave+DefaultMinChunk {
				t.Errorf("Free() after HoldAllBut(%d) = %d, want in [leave, leave+2 MiB)", tt.leave, free)
			}
			if took != b.Held() || took < fakeFreeOpen-tt.leave-DefaultMinChunk {
				t.Errorf("took %d (held %d), want about %d", took, b.Held(), fakeFreeOpen-tt.leave)
			}
			_, err = b.HoldAllBut(context.Background(), tt.leave)
			if _, ok := errors.AsType[*vgpu.ReserveError](err); !ok {
				t.Errorf("HoldAllBut with only the leave free: err = %v, want *vgpu.ReserveError", err)
			}
			if err := b.Release(); err != nil {
				t.Fatal(err)
			}
			if got := mustFree(t, b); got != fakeFreeOpen {
				t.Errorf("Free() after Release = %d, want %d", got, fakeFreeOpen)
			}
		})
	}
	b := mustOpen(t, Options{Library: newFake(t)})
	if _, err := b.HoldAllBut(context.Background(), -1); err == nil {
		t.Error("HoldAllBut(-1) succeeded, want an error")
	}
}

// TestCallsFromOtherThreads opens the balloon on a thread that then exits
// (a goroutine that ends while locked takes its thread with it), so every
// later call runs on another thread. The fake driver refuses calls without
// a context current on the calling thread, as the real one does.
func TestCallsFromOtherThreads(t *testing.T) {
	lib := newFake(t)
	var b *Balloon
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		b, err = Open(context.Background(), Options{Library: lib})
	}()
	<-done
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			if err := b.Hold(context.Background(), 100*vgpu.MiB); err != nil {
				errs[i] = err
				return
			}
			_, errs[i] = b.Free(context.Background())
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("goroutine %d: %v", i, err)
		}
	}
	if got, want := b.Held(), 800*vgpu.MiB; got != want {
		t.Errorf("Held() = %d, want %d", got, want)
	}
}

// TestKeepFreeTakesFreedMemory runs vgpu.KeepFree, as `gpu-balloon --grow`
// does, over a CUDA balloon while another context on the same device frees
// memory.
func TestKeepFreeTakesFreedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the grow loop's ticks; skipped under -short")
	}
	lib := newFake(t)
	other := mustOpen(t, Options{Library: lib})
	if err := other.Hold(context.Background(), 2*vgpu.GiB); err != nil {
		t.Fatal(err)
	}
	b := mustOpen(t, Options{Library: lib})
	leave := 512 * vgpu.MiB
	if _, err := b.HoldAllBut(context.Background(), leave); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	took := make(chan int64, 16)
	errc := make(chan error, 1)
	go func() { errc <- vgpu.KeepFree(ctx, b, leave, 5*time.Millisecond, func(n int64) { took <- n }) }()
	if err := other.Release(); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-took:
		if n < 2*vgpu.GiB-DefaultMinChunk || n > 2*vgpu.GiB {
			t.Errorf("KeepFree took %d, want about the 2 GiB the other context freed", n)
		}
	case err := <-errc:
		t.Fatalf("KeepFree ended: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("KeepFree took nothing within 10s of the other context freeing 2 GiB")
	}
	if free := mustFree(t, b); free < leave || free >= leave+DefaultMinChunk {
		t.Errorf("Free() after the balloon grew = %d, want about %d", free, leave)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Errorf("KeepFree: %v, want nil once ctx ends", err)
	}
}

func TestErrorFormat(t *testing.T) {
	tests := []struct {
		e    Error
		want string
	}{
		{Error{Call: "cuMemAlloc_v2", Code: 2, Name: "CUDA_ERROR_OUT_OF_MEMORY"}, "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2)"},
		{Error{Call: "cuInit", Code: 999}, "cuInit: CUresult 999"},
	}
	for _, tt := range tests {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
	if !(&Error{Code: 2}).OutOfMemory() || (&Error{Code: 1}).OutOfMemory() {
		t.Error("OutOfMemory() wrong for codes 2 and 1")
	}
}
