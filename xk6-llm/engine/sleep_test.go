package engine

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// These tests run in real time (a second or so in all) and are skipped
// under -short. They check correctness that holds on any machine (never
// early, order, cancellation); precision is BenchmarkPacerSendLag's job.

// testRand is a seeded generator for the tests' schedules.
func testRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)) }

func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("real-time test; skipped with -short")
	}
}

func TestSleepUntilNeverEarly(t *testing.T) {
	skipShort(t)
	clock := recording.NewRunClock()
	p := NewPacer(clock, PacerOptions{})
	rng := testRand(1)
	// Targets 0–3 ms ahead cover both the precise-only path and the
	// coarse timer + precise path (CoarseMargin 2 ms).
	for i := range 200 {
		at := clock.Now() + time.Duration(rng.IntN(3000))*time.Microsecond
		if err := p.SleepUntil(context.Background(), at); err != nil {
			t.Fatal(err)
		}
		if now := clock.Now(); now < at {
			t.Fatalf("sleep %d returned at %v, before its target %v", i, now, at)
		}
	}
	// A target in the past returns at once.
	if err := SleepUntil(context.Background(), clock, 0); err != nil {
		t.Fatal(err)
	}
}

func TestSleepUntilContext(t *testing.T) {
	skipShort(t)
	clock := recording.NewRunClock()
	p := NewPacer(clock, PacerOptions{})

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.SleepUntil(cancelled, clock.Now()+time.Second); !errors.Is(err, context.Canceled) {
		t.Errorf("SleepUntil with a cancelled ctx = %v, want context.Canceled", err)
	}
	if err := p.SleepUntil(cancelled, 0); err != nil {
		t.Errorf("SleepUntil(cancelled ctx, past target) = %v, want nil (the time has come)", err)
	}

	// A deadline during a long sleep wakes it: a 10 s target, a 30 ms
	// deadline. The bound of 1 s is generous for a loaded CI machine; a
	// sleep that ignored ctx would take 10 s.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	start := clock.Now()
	err := p.SleepUntil(ctx, start+10*time.Second)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("SleepUntil past its ctx deadline = %v, want context.DeadlineExceeded", err)
	}
	if took := clock.Now() - start; took > time.Second {
		t.Errorf("SleepUntil noticed the deadline after %v", took)
	}
}

func TestPacerRun(t *testing.T) {
	skipShort(t)
	clock := recording.NewRunClock()
	arr, err := workload.NewArrivals(workload.ArrivalConfig{Rate: 2000, Arrival: workload.ArrivalConstant, Requests: 100}.WithDefaults(), testRand(1))
	if err != nil {
		t.Fatal(err)
	}
	var seqs []uint64
	err = NewPacer(clock, PacerOptions{}).Run(context.Background(), arr, func(seq uint64, a workload.Arrival, woke time.Duration) bool {
		if want := time.Duration(seq) * 500 * time.Microsecond; a.At != want {
			t.Errorf("arrival %d at %v, want %v", seq, a.At, want)
		}
		if woke < a.At {
			t.Errorf("arrival %d fired at %v, before its time %v", seq, woke, a.At)
		}
		if now := clock.Now(); now < woke {
			t.Errorf("woke %v is after now %v", woke, now)
		}
		seqs = append(seqs, seq)
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seqs) != 100 {
		t.Fatalf("fire called %d times, want 100", len(seqs))
	}
	for i, s := range seqs {
		if s != uint64(i) {
			t.Fatalf("fire %d got seq %d", i, s)
		}
	}
}

func TestPacerRunStops(t *testing.T) {
	skipShort(t)
	clock := recording.NewRunClock()
	newArr := func() workload.Arrivals {
		arr, err := workload.NewArrivals(workload.ArrivalConfig{Rate: 1000, Arrival: workload.ArrivalConstant, Duration: time.Hour}.WithDefaults(), testRand(1))
		if err != nil {
			t.Fatal(err)
		}
		return arr
	}
	p := NewPacer(clock, PacerOptions{})

	// fire returning false ends Run with nil.
	calls := 0
	if err := p.Run(context.Background(), newArr(), func(seq uint64, _ workload.Arrival, _ time.Duration) bool {
		calls++
		return seq < 9
	}); err != nil {
		t.Errorf("Run stopped by fire = %v, want nil", err)
	}
	if calls != 10 {
		t.Errorf("fire called %d times, want 10", calls)
	}

	// ctx ending ends Run with its error, between arrivals.
	ctx, cancel := context.WithCancel(context.Background())
	calls = 0
	err := p.Run(ctx, newArr(), func(seq uint64, _ workload.Arrival, _ time.Duration) bool {
		calls++
		if seq == 4 {
			cancel()
		}
		return true
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Run with ctx cancelled = %v, want context.Canceled", err)
	}
	if calls != 5 {
		t.Errorf("fire called %d times after cancel at the 5th, want 5", calls)
	}
}

func TestPacerRunLate(t *testing.T) {
	skipShort(t)
	// A fire that takes longer than the interval makes arrivals late, but
	// each is still aimed at its own scheduled time: none is skipped, and
	// once fire is quick again the pacer is back on schedule at once
	// rather than spreading the backlog out.
	clock := recording.NewRunClock()
	arr, err := workload.NewArrivals(workload.ArrivalConfig{Rate: 1000, Arrival: workload.ArrivalConstant, Requests: 40}.WithDefaults(), testRand(1))
	if err != nil {
		t.Fatal(err)
	}
	var woke []time.Duration
	var ats []time.Duration
	err = NewPacer(clock, PacerOptions{}).Run(context.Background(), arr, func(seq uint64, a workload.Arrival, w time.Duration) bool {
		woke, ats = append(woke, w), append(ats, a.At)
		if seq == 0 {
			// Block the pacer for 15 ms: arrivals 1..15 fall due meanwhile.
			deadline := clock.Now() + 15*time.Millisecond
			for clock.Now() < deadline {
			}
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(woke) != 40 {
		t.Fatalf("%d arrivals fired, want 40", len(woke))
	}
	// Arrivals 1..14 were due during the stall; they fire back to back
	// right after it, in order, at least 15 ms after the start.
	for i := 1; i < 15; i++ {
		if woke[i] < 15*time.Millisecond {
			t.Errorf("arrival %d fired at %v, during the stall", i, woke[i])
		}
		if ats[i] != time.Duration(i)*time.Millisecond {
			t.Errorf("arrival %d scheduled at %v, want %v (the schedule must not shift)", i, ats[i], time.Duration(i)*time.Millisecond)
		}
	}
}

func TestPacerLead(t *testing.T) {
	skipShort(t)
	// With Lead, fire comes before the send time (here 40 ms before, with
	// arrivals 100 ms apart, so only a 40 ms scheduling stall could hide
	// it), and never earlier than At − Lead.
	clock := recording.NewRunClock()
	arr, err := workload.NewArrivals(workload.ArrivalConfig{Rate: 10, Arrival: workload.ArrivalConstant, Requests: 4}.WithDefaults(), testRand(1))
	if err != nil {
		t.Fatal(err)
	}
	const lead = 40 * time.Millisecond
	p := NewPacer(clock, PacerOptions{CoarseMargin: 50 * time.Millisecond, Lead: lead})
	early := 0
	err = p.Run(context.Background(), arr, func(seq uint64, a workload.Arrival, woke time.Duration) bool {
		if woke < a.At-lead {
			t.Errorf("arrival %d fired at %v, more than Lead before %v", seq, woke, a.At)
		}
		if woke < a.At {
			early++
		}
		// The worker's side: wait the rest precisely.
		if err := p.SleepUntil(context.Background(), a.At); err != nil {
			t.Error(err)
		}
		if now := clock.Now(); now < a.At {
			t.Errorf("arrival %d: SleepUntil returned at %v, before %v", seq, now, a.At)
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if early == 0 {
		t.Error("no arrival fired before its send time: Lead had no effect")
	}
}

func TestPacerSpin(t *testing.T) {
	skipShort(t)
	clock := recording.NewRunClock()
	p := NewPacer(clock, PacerOptions{Spin: 100 * time.Microsecond})
	for range 50 {
		at := clock.Now() + 300*time.Microsecond
		if err := p.SleepUntil(context.Background(), at); err != nil {
			t.Fatal(err)
		}
		if now := clock.Now(); now < at {
			t.Fatalf("spin returned at %v, before %v", now, at)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := spinUntil(ctx, clock, clock.Now()+time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("spinUntil with cancelled ctx = %v, want context.Canceled", err)
	}
}

// offsetClock is a PaceClock that disagrees with CLOCK_MONOTONIC by a fixed
// offset; the pacer must still never wake early on it.
type offsetClock struct {
	base *recording.RunClock
	off  time.Duration
}

func (c offsetClock) Now() time.Duration { return c.base.Now() + c.off }

func TestPacerOtherClock(t *testing.T) {
	skipShort(t)
	clock := offsetClock{base: recording.NewRunClock(), off: time.Hour}
	p := NewPacer(clock, PacerOptions{})
	for range 20 {
		at := clock.Now() + time.Millisecond
		if err := p.SleepUntil(context.Background(), at); err != nil {
			t.Fatal(err)
		}
		if now := clock.Now(); now < at {
			t.Fatalf("returned at %v, before %v", now, at)
		}
	}
}

func TestPacerOptionsDefaults(t *testing.T) {
	got := PacerOptions{Spin: time.Second, Lead: -1}.withDefaults()
	want := PacerOptions{CoarseMargin: 2 * time.Millisecond, Spin: 2 * time.Millisecond, Lead: 0}
	if got != want {
		t.Errorf("withDefaults() = %+v, want %+v", got, want)
	}
}
