package main

import (
	"bytes"
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/faults/gpu"
	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/simcontract/vgpu"
)

func TestGPUMonitorWithoutGPU(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	code := execute(context.Background(), []string{"gpu-monitor", "--once"}, &out, &errb)
	if gpu.OpenMonitor(gpu.MonitorOptions{}).Err() == nil {
		t.Skip("this build and machine can read GPUs through NVML")
	}
	if code != exitcode.NoGPU {
		t.Fatalf("exit code = %d, want %d; stderr %q", code, exitcode.NoGPU, errb.String())
	}
	// Said once, and nothing on stdout.
	if n := strings.Count(errb.String(), "\n"); n != 1 {
		t.Errorf("stderr has %d lines, want the reason once:\n%s", n, errb.String())
	}
	if !strings.Contains(errb.String(), "built without NVML support") && !strings.Contains(errb.String(), "no GPU: ") {
		t.Errorf("stderr = %q, want the reason there is no GPU", errb.String())
	}
	if out.Len() != 0 {
		t.Errorf("stdout = %q, want nothing", out.String())
	}
}

func TestGPUMonitorFlagErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{name: "format", args: []string{"--format", "csv"}, want: []string{`--format "csv"`}},
		{name: "interval and duration", args: []string{"--interval", "0s", "--duration", "-1s"}, want: []string{"--interval 0s", "--duration -1s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := execute(context.Background(), append([]string{"gpu-monitor"}, tt.args...), &out, &errb)
			if code != exitcode.Usage {
				t.Fatalf("exit code = %d, want %d; stderr %q", code, exitcode.Usage, errb.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(errb.String(), w) {
					t.Errorf("stderr = %q, want it to mention %q", errb.String(), w)
				}
			}
		})
	}
}

func TestWriteSample(t *testing.T) {
	t.Parallel()
	s := gpu.Sample{
		Time: time.UnixMilli(1700000000123), GPU: 1, Name: "NVIDIA H200",
		MemoryUsed: 11 * uint64(vgpu.GiB), MemoryFree: 130 * uint64(vgpu.GiB), MemoryTotal: 141 * uint64(vgpu.GiB),
		UtilGPU: 37, UtilMemory: -1,
		Processes: []gpu.ProcessMemory{{PID: 42, UsedBytes: 10 * vgpu.GiB}, {PID: 43, UsedBytes: -1}},
	}
	tests := []struct {
		format string
		s      gpu.Sample
		want   string
	}{
		{"tsv", s, "1700000000123\t1\t11811160064\t139586437120\t151397597184\t37\t-1\t42:10737418240,43:-1\n"},
		{"tsv", gpu.Sample{Time: time.UnixMilli(5), UtilGPU: -1, UtilMemory: -1}, "5\t0\t0\t0\t0\t-1\t-1\t-\n"},
		{"jsonl", gpu.Sample{Time: time.UnixMilli(5).UTC(), GPU: 2, MemoryUsed: 7, UtilGPU: 1, UtilMemory: 2, Err: "utilisation: ERROR_UNKNOWN"},
			`{"time":"1970-01-01T00:00:00.005Z","gpu":2,"memory_used_bytes":7,"memory_free_bytes":0,"memory_total_bytes":0,"util_gpu_percent":1,"util_memory_percent":2,"error":"utilisation: ERROR_UNKNOWN"}` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.format, func(t *testing.T) {
			var b bytes.Buffer
			if err := writeSample(&b, tt.format, tt.s); err != nil {
				t.Fatal(err)
			}
			if got := b.String(); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestBalloonBackendFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{name: "unknown backend", args: []string{"--backend", "rocm", "--gib", "1"}, code: exitcode.Usage, want: []string{`--backend "rocm"`}},
		{name: "cuda with a vgpu dir", args: []string{"--backend", "cuda", "--vgpu-dir", "d", "--gib", "1"}, code: exitcode.Usage, want: []string{"only with --backend vgpu"}},
		{name: "cuda with a size", args: []string{"--backend", "cuda", "--gpu-memory", "8GiB", "--gib", "1"}, code: exitcode.Usage, want: []string{"only with --backend vgpu"}},
		{name: "vgpu needs its dir", args: []string{"--backend", "vgpu", "--gib", "1"}, code: exitcode.Usage, want: []string{"--vgpu-dir: required"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := execute(context.Background(), append([]string{"gpu-balloon"}, tt.args...), &out, &errb)
			if code != tt.code {
				t.Fatalf("exit code = %d, want %d; stderr %q", code, tt.code, errb.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(errb.String(), w) {
					t.Errorf("stderr = %q, want it to mention %q", errb.String(), w)
				}
			}
		})
	}
}

// TestBalloonCUDAWithoutDriver runs the cuda backend as this build has it:
// without the cuda tag a usage error naming the tag; with it, on a machine
// without a driver, exit 5 and "no CUDA driver".
func TestBalloonCUDAWithoutDriver(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	code := execute(context.Background(), []string{"gpu-balloon", "--backend", "cuda", "--gib", "1"}, &out, &errb)
	_, err := gpu.OpenCUDABalloon(context.Background(), 0)
	switch {
	case errors.Is(err, gpu.ErrNoCUDABuild):
		if code != exitcode.Usage || !strings.Contains(errb.String(), "-tags cuda") {
			t.Errorf("exit %d, stderr %q; want %d and a hint to build with -tags cuda", code, errb.String(), exitcode.Usage)
		}
	case errors.Is(err, gpu.ErrNoGPU):
		if code != exitcode.NoGPU || !strings.Contains(errb.String(), "no GPU: ") {
			t.Errorf("exit %d, stderr %q; want %d and the reason", code, errb.String(), exitcode.NoGPU)
		}
	default:
		t.Skipf("this machine has a CUDA GPU (or another problem: %v)", err)
	}
	if out.Len() != 0 {
		t.Errorf("stdout = %q, want nothing (no holding line when nothing is held)", out.String())
	}
}

func TestBalloonAcceptsFaultToken(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startCmd(t, "gpu-balloon", "--vgpu-dir", dir, "--gpu-memory", "8GiB", "--backend", "vgpu", "--gib", "2",
		"--fault-token=0123456789abcdef0123456789abcdef")
	waitOutput(t, s.out, regexp.MustCompile(`holding 2\.0 GiB on vgpu 0 \(free now 6\.0 GiB\)`), s.done)
	if code := s.stop(t); code != exitcode.OK {
		t.Errorf("exit code = %d, want %d; stderr:\n%s", code, exitcode.OK, s.err)
	}
	if !strings.Contains(s.err.String(), "fault_token=0123456789abcdef0123456789abcdef") {
		t.Errorf("log does not name the token:\n%s", s.err)
	}
}

func TestBalloonRefusesWhenItsStarterIsGone(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d, err := vgpu.Open(dir, 0, 8*vgpu.GiB)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var out, errb bytes.Buffer
	// pid 1 is not this process's parent: it stands for a starter that died
	// and left the balloon to be adopted.
	code := execute(context.Background(), []string{"gpu-balloon", "--vgpu-dir", dir, "--gib", "2", "--parent-pid", "1"}, &out, &errb)
	if code == exitcode.OK || !strings.Contains(errb.String(), "the process that started it (pid 1) is gone") {
		t.Fatalf("exit %d, stderr %q; want a refusal naming the starter", code, errb.String())
	}
	if out.Len() != 0 {
		t.Errorf("stdout = %q, want no holding line", out.String())
	}
	if f, _ := d.Free(); f != 8*vgpu.GiB {
		t.Errorf("free after the refusal = %d, want %d", f, 8*vgpu.GiB)
	}
}
