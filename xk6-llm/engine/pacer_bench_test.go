package engine

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// sendLagRate and sendLagSpan are the target load: 5,000 req/s of
// short requests for about 3 s.
const (
	sendLagRate = 5000
	sendLagSpan = 3 * time.Second
)

// BenchmarkPacerSendLag drives a constant 5,000 req/s schedule for 3 s and
// reports how late each wake-up is against its scheduled time (p50, p99,
// max in µs). Variants:
//
//   - timer: a plain Go timer loop (time.Timer to each send time), the
//     baseline the issue measured at p50 0.55 ms / p99 1.1 ms.
//   - pacer: Pacer.Run (locked thread, clock_nanosleep TIMER_ABSTIME,
//     timer slack 1 ns), wake time as seen inside fire.
//   - pacer+handoff: Pacer.Run whose fire hands each arrival to one of 64
//     worker goroutines already waiting on a channel; the lag is taken by
//     the worker when it receives, i.e. what an engine that stamps Sent in
//     its worker would see before its own request-building cost.
//   - pacer+lead: Pacer.Run with Lead 1ms hands each arrival to a waiting
//     worker early; the worker waits the rest with Pacer.SleepUntil on its
//     own thread and takes the lag when it wakes: the recommended engine
//     shape (no hand-off between wake-up and send).
//   - pacer+spin: as pacer, with the last 50 µs busy-waited.
//
// Each variant runs the 3 s schedule once whatever b.N is (make bench uses
// -benchtime 1x); the figures are in the metrics and the log line.
func BenchmarkPacerSendLag(b *testing.B) {
	b.Run("timer", func(b *testing.B) {
		reportLag(b, runTimerLoop(b))
	})
	b.Run("pacer", func(b *testing.B) {
		reportLag(b, runPacerLoop(b, PacerOptions{}, false))
	})
	b.Run("pacer+handoff", func(b *testing.B) {
		reportLag(b, runPacerLoop(b, PacerOptions{}, true))
	})
	b.Run("pacer+lead", func(b *testing.B) {
		reportLag(b, runPacerLoop(b, PacerOptions{Lead: time.Millisecond}, true))
	})
	b.Run("pacer+spin", func(b *testing.B) {
		reportLag(b, runPacerLoop(b, PacerOptions{Spin: 50 * time.Microsecond}, false))
	})
}

func sendLagArrivals(b *testing.B) workload.Arrivals {
	b.Helper()
	cfg := workload.ArrivalConfig{Rate: sendLagRate, Arrival: workload.ArrivalConstant, Burstiness: 1,
		Duration: sendLagSpan, OnSaturation: workload.SaturationWait}
	arr, err := workload.NewArrivals(cfg, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		b.Fatal(err)
	}
	return arr
}

func runTimerLoop(b *testing.B) []time.Duration {
	arr := sendLagArrivals(b)
	lags := make([]time.Duration, 0, int(sendLagRate*sendLagSpan.Seconds()))
	b.ResetTimer()
	clock := recording.NewRunClock()
	t := time.NewTimer(time.Hour)
	for {
		a, ok := arr.Next()
		if !ok {
			break
		}
		if d := a.At - clock.Now(); d > 0 {
			t.Reset(d)
			<-t.C
		}
		lags = append(lags, clock.Now()-a.At)
	}
	b.StopTimer()
	return lags
}

func runPacerLoop(b *testing.B, opts PacerOptions, handoff bool) []time.Duration {
	arr := sendLagArrivals(b)
	lags := make([]time.Duration, int(sendLagRate*sendLagSpan.Seconds()))
	clock := recording.NewRunClock()
	p := NewPacer(clock, opts)
	fire := func(seq uint64, a workload.Arrival, woke time.Duration) bool {
		lags[seq] = woke - a.At
		return true
	}
	if handoff {
		type job struct {
			seq uint64
			at  time.Duration
		}
		jobs := make(chan job, 1024)
		var wg sync.WaitGroup
		for range 64 {
			wg.Go(func() {
				for j := range jobs {
					// With Lead the job comes early and the worker waits
					// the rest itself; without, SleepUntil returns at once.
					if err := p.SleepUntil(context.Background(), j.at); err != nil {
						b.Error(err)
					}
					lags[j.seq] = clock.Now() - j.at
				}
			})
		}
		fire = func(seq uint64, a workload.Arrival, _ time.Duration) bool {
			jobs <- job{seq, a.At}
			return true
		}
		// The workers are joined when this function returns, before the
		// caller reads lags.
		defer func() { close(jobs); wg.Wait() }()
	}
	b.ResetTimer()
	if err := p.Run(context.Background(), arr, fire); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	return lags
}

func reportLag(b *testing.B, lags []time.Duration) {
	b.Helper()
	s := slices.Clone(lags)
	slices.Sort(s)
	q := func(p float64) float64 {
		i := int(p * float64(len(s)-1))
		return float64(s[i]) / 1e3
	}
	b.ReportMetric(q(0.50), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
	b.ReportMetric(float64(s[len(s)-1])/1e3, "max-µs")
	b.ReportMetric(0, "ns/op")
	b.Logf("send lag at %d req/s over %v (%d arrivals): p50 %.1f µs, p99 %.1f µs, max %.1f µs",
		sendLagRate, sendLagSpan, len(s), q(0.50), q(0.99), float64(s[len(s)-1])/1e3)
}
