package gpu

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// cudaBuild is llmchaos built with -tags cuda and the fake CUDA driver
// (cuda/testdata/fakecuda.c) as libcuda.so.1 in its own directory; made
// once, by the first test that needs them.
var cudaBuild struct {
	once     sync.Once
	bin, lib string // lib: the directory holding libcuda.so.1
	skip     string
	err      error
}

func cudaBalloonBuild(t *testing.T) (bin, libDir string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds llmchaos with -tags cuda; skipped under -short")
	}
	cudaBuild.once.Do(func() {
		dir := filepath.Dir(llmchaosBin)
		cc, err := exec.LookPath("gcc")
		if err != nil {
			cudaBuild.skip = "no C compiler for the fake CUDA driver: " + err.Error()
			return
		}
		cudaBuild.lib = filepath.Join(dir, "fakecuda")
		if err := os.MkdirAll(cudaBuild.lib, 0o755); err != nil {
			cudaBuild.err = err
			return
		}
		if out, err := exec.Command(cc, "-shared", "-fPIC", "-O1", "-o", filepath.Join(cudaBuild.lib, "libcuda.so.1"),
			filepath.Join("cuda", "testdata", "fakecuda.c"), "-lpthread").CombinedOutput(); err != nil {
			cudaBuild.err = &buildError{"fake CUDA driver", err, out}
			return
		}
		goTool, err := exec.LookPath("go")
		if err != nil {
			goTool = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
		}
		cudaBuild.bin = filepath.Join(dir, "llmchaos-cuda")
		build := exec.Command(goTool, "build", "-tags", "cuda", "-trimpath", "-o", cudaBuild.bin, "github.com/llmchaos/llmchaos/cmd/llmchaos")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			cudaBuild.err = &buildError{"llmchaos -tags cuda", err, out}
		}
	})
	if cudaBuild.skip != "" {
		t.Skip(cudaBuild.skip)
	}
	if cudaBuild.err != nil {
		t.Fatal(cudaBuild.err)
	}
	return cudaBuild.bin, cudaBuild.lib
}

type buildError struct {
	what string
	err  error
	out  []byte
}

func (e *buildError) Error() string {
	return "build " + e.what + ": " + e.err.Error() + "\n" + string(e.out)
}

// TestMemoryPressureCUDA runs the fault's cuda backend end to end: a real
// balloon process of an llmchaos built with -tags cuda, loading the fake
// driver through LD_LIBRARY_PATH (each balloon process sees its own fake
// 8 GiB device), or no driver at all.
func TestMemoryPressureCUDA(t *testing.T) {
	bin, lib := cudaBalloonBuild(t)
	// Unset (t.Setenv restores it after): the fault must set it itself.
	t.Setenv("CUDA_DEVICE_ORDER", "")
	os.Unsetenv("CUDA_DEVICE_ORDER")
	ctx := context.Background()

	t.Run("holds and frees", func(t *testing.T) {
		t.Setenv("LD_LIBRARY_PATH", lib)
		log := &recLog{}
		b, err := newPressure(t, PressureParams{GiB: ptr(3.0), Backend: BackendCUDA}, BalloonOptions{Binary: bin}).Start(ctx, log)
		if err != nil {
			t.Fatal(err)
		}
		// 8 GiB less a 256 MiB context and the 3 GiB held.
		if got, want := b.Holding(), "holding 3.0 GiB on cuda 0 (free now 4.8 GiB)"; got != want {
			t.Errorf("Holding() = %q, want %q", got, want)
		}
		env, err := os.ReadFile("/proc/" + strconv.Itoa(b.PID()) + "/environ")
		if err != nil {
			t.Fatal(err)
		}
		if !hasArg(env, []byte("CUDA_DEVICE_ORDER=PCI_BUS_ID")) {
			t.Error("balloon runs without CUDA_DEVICE_ORDER=PCI_BUS_ID: its --gpu would not be nvidia-smi's index")
		}
		if err := b.Stop(ctx); err != nil {
			t.Fatalf("Stop: %v (the balloon must release and exit 0 on SIGTERM)", err)
		}
	})
	t.Run("leave free, growing", func(t *testing.T) {
		t.Setenv("LD_LIBRARY_PATH", lib)
		b, err := newPressure(t, PressureParams{LeaveFreeGiB: ptr(1.0), Backend: BackendCUDA}, BalloonOptions{Binary: bin}).Start(ctx, &recLog{})
		if err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`^holding 6\.[78] GiB on cuda 0 \(free now 1\.0 GiB\)$`).MatchString(b.Holding()) {
			t.Errorf("Holding() = %q, want about 6.75 GiB held and 1.0 GiB free", b.Holding())
		}
		if err := b.Stop(ctx); err != nil {
			t.Fatal(err)
		}
	})
	tests := []struct {
		name string
		env  []string
		gib  float64
		want []string
	}{
		{name: "too little free", env: []string{"LD_LIBRARY_PATH", lib}, gib: 20,
			want: []string{"exit status 4", "cuda device 0: cannot hold 20.0 GiB", "the driver reports 7.8 GiB free of 8.0 GiB"}},
		{name: "no device", env: []string{"LD_LIBRARY_PATH", lib, "FAKECUDA_INIT_RESULT", "100"}, gib: 1,
			want: []string{"exit status 5", "no GPU: cuda: no CUDA device", "CUDA_ERROR_NO_DEVICE"}},
		{name: "no driver", env: []string{"LD_LIBRARY_PATH", t.TempDir()}, gib: 1,
			want: []string{"exit status 5", "no GPU: no CUDA driver (libcuda.so.1 not found)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i := 0; i < len(tt.env); i += 2 {
				t.Setenv(tt.env[i], tt.env[i+1])
			}
			_, err := newPressure(t, PressureParams{GiB: ptr(tt.gib), Backend: BackendCUDA}, BalloonOptions{Binary: bin}).Start(ctx, &recLog{})
			if err == nil {
				t.Fatalf("Start succeeded, want an error mentioning %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nwant it to mention %q", err, w)
				}
			}
		})
	}
}
