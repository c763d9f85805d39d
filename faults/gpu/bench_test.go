package gpu

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/simcontract/vgpu"
)

// BenchmarkMemoryPressureInjectUndo measures one whole fault cycle on the
// vGPU backend: journal the token, start the balloon process, wait for its
// holding line, journal its pid, then terminate it and wait for its exit.
// inject_ms is what a fault's start lags its plan by; undo_ms is the revert.
func BenchmarkMemoryPressureInjectUndo(b *testing.B) {
	dir := b.TempDir()
	d, err := vgpu.Open(dir, 0, 80*vgpu.GiB)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	f, err := NewMemoryPressure("bench", PressureParams{LeaveFreeGiB: ptr(1.0), VGPUDir: dir}, BalloonOptions{Binary: llmchaosBin})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var inject, undo time.Duration
	for b.Loop() {
		t0 := time.Now()
		u, err := f.Inject(ctx, &recLog{})
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := u(ctx); err != nil {
			b.Fatal(err)
		}
		inject += t1.Sub(t0)
		undo += time.Since(t1)
	}
	b.ReportMetric(float64(inject.Microseconds())/1e3/float64(b.N), "inject_ms")
	b.ReportMetric(float64(undo.Microseconds())/1e3/float64(b.N), "undo_ms")
}

// BenchmarkTokenScan measures RevertBalloonToken's /proc scan when no
// process carries the token (the common case in `llmchaos recover`).
func BenchmarkTokenScan(b *testing.B) {
	tok, err := newToken()
	if err != nil {
		b.Fatal(err)
	}
	ents, _ := os.ReadDir("/proc")
	for b.Loop() {
		found, err := processesWithArg(FaultTokenFlag + "=" + tok)
		if err != nil || len(found) != 0 {
			b.Fatalf("scan: %v, %v", found, err)
		}
	}
	b.ReportMetric(float64(len(ents)), "proc_entries")
}
