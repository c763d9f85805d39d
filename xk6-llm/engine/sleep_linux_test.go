//go:build linux

package engine

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
	"golang.org/x/sys/unix"
)

func timerSlack(t *testing.T) int {
	t.Helper()
	v, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil {
		t.Fatalf("PR_GET_TIMERSLACK: %v", err)
	}
	return v
}

func TestPacerTimerSlack(t *testing.T) {
	skipShort(t)
	// Lock first so that Run's lock nests and the thread is the same
	// before, during and after.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before := timerSlack(t)
	if before <= 1 {
		if err := unix.Prctl(unix.PR_SET_TIMERSLACK, 50000, 0, 0, 0); err != nil {
			t.Skipf("cannot set timer slack: %v", err)
		}
		defer unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(before), 0, 0, 0)
		before = 50000
	}
	arr, err := workload.NewArrivals(workload.ArrivalConfig{Rate: 1000, Arrival: workload.ArrivalConstant, Requests: 3}.WithDefaults(), testRand(1))
	if err != nil {
		t.Fatal(err)
	}
	during := -1
	err = NewPacer(recording.NewRunClock(), PacerOptions{}).Run(context.Background(), arr, func(uint64, workload.Arrival, time.Duration) bool {
		during = timerSlack(t)
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if during != 1 {
		t.Errorf("timer slack on the pacer thread = %d ns, want 1", during)
	}
	if after := timerSlack(t); after != before {
		t.Errorf("timer slack after Run = %d ns, want it restored to %d", after, before)
	}
}

func TestMonoMappingCalibrates(t *testing.T) {
	clock := recording.NewRunClock()
	var m monoMapping
	if !m.calibrate(clock) {
		t.Fatal("calibrate failed")
	}
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		t.Fatal(err)
	}
	// Go's monotonic clock is CLOCK_MONOTONIC: base + Now() must match a
	// fresh CLOCK_MONOTONIC read to within the read gap (1 ms is lavish).
	if d := time.Duration(m.base.Load() + int64(clock.Now()) - ts.Nano()); d < -time.Millisecond || d > time.Millisecond {
		t.Errorf("mapping off by %v", d)
	}
}
