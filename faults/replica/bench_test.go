package replica

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/faults"
)

// BenchmarkCmdlineTargets scans every process's command line, as a fault
// with a cmdline target does before it picks.
func BenchmarkCmdlineTargets(b *testing.B) {
	d, err := NewProcess(TargetParams{Cmdline: `^no-such-process-[0-9]+$`})
	if err != nil {
		b.Fatal(err)
	}
	pids, err := listPIDs()
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	for b.Loop() {
		if _, err := d.Targets(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(pids)), "processes")
	b.Logf("cmdline scan of %d processes: %v per scan", len(pids), time.Since(start)/time.Duration(b.N))
}

// BenchmarkPauseResume freezes a process (SIGSTOP, wait until the kernel
// says stopped) and resumes it: how long a replica.pause takes to hold, and
// how quickly Undo lets it go.
func BenchmarkPauseResume(b *testing.B) {
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		b.Skip("no sleep to pause: ", err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	ctx := context.Background()
	var pause, resume time.Duration
	for b.Loop() {
		t0 := time.Now()
		undo, err := PauseProcess(ctx, faults.NopLog{}, cmd.Process.Pid, "sleep")
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := undo(ctx); err != nil {
			b.Fatal(err)
		}
		// Resumed once the kernel no longer reports it stopped.
		for {
			info, ok, err := readProc(cmd.Process.Pid)
			if err != nil || !ok {
				b.Fatal("sleeper gone: ", err)
			}
			if !info.stopped() {
				break
			}
		}
		pause += t1.Sub(t0)
		resume += time.Since(t1)
	}
	b.ReportMetric(float64(pause.Microseconds())/float64(b.N), "µs-to-frozen")
	b.ReportMetric(float64(resume.Microseconds())/float64(b.N), "µs-to-resumed")
}
