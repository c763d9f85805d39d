package engine

import (
	"context"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// PacerOptions tune a Pacer. The zero value gives the documented defaults.
type PacerOptions struct {
	// CoarseMargin is how long before a send time the pacer stops waiting
	// on a Go timer (millisecond-grained, and late by up to about a
	// millisecond under load) and sleeps precisely instead. It also bounds
	// how late a sleep notices ctx ending. Default 2ms.
	CoarseMargin time.Duration
	// Spin, when > 0, busy-waits the last Spin before each send time
	// instead of sleeping it: wake-ups within a few microseconds, for the
	// price of a core busy Spin×rate of the time (50µs at 5,000 req/s is
	// a quarter of a core). Default 0 (off). At most CoarseMargin.
	Spin time.Duration
	// Lead makes Run call fire Lead before each send time instead of at
	// it, so that the engine can hand the arrival to a worker that then
	// waits the last stretch itself with SleepUntil(ctx, a.At) and sends
	// at once on waking: no goroutine hand-off between the wake-up and the
	// send (see FireFunc). Default 0: fire at the send time. At most
	// CoarseMargin.
	Lead time.Duration
}

func (o PacerOptions) withDefaults() PacerOptions {
	if o.CoarseMargin <= 0 {
		o.CoarseMargin = 2 * time.Millisecond
	}
	o.Spin = min(max(o.Spin, 0), o.CoarseMargin)
	o.Lead = min(max(o.Lead, 0), o.CoarseMargin)
	return o
}

// FireFunc is called by Pacer.Run for each arrival, in schedule order, on
// the pacer's own OS thread, once the clock reaches a.At − Lead: seq is the
// arrival's position in the schedule (from 0), a the arrival, and woke the
// clock reading at wake-up (woke ≥ a.At − Lead). Returning false stops Run.
//
// fire runs on the pacing thread, so it must be quick and must never block:
// the next arrival waits for it. Two engine shapes, measured by
// BenchmarkPacerSendLag:
//
//   - Lead 0: fire hands the arrival to an already-waiting worker goroutine
//     (a send on a buffered channel the workers receive from), or records
//     it as dropped under --on-saturation drop. The hand-off wakes another
//     thread, which adds tens of microseconds to send lag.
//   - Lead ≈ 1ms (recommended): fire hands the arrival over early; the
//     worker calls Pacer.SleepUntil(ctx, a.At), which wakes its own thread
//     precisely, and stamps Sent right away, so the wake-up is the last
//     thing between schedule and send.
//
// Either way the worker stamps Sent just before writing the request, so
// send_lag = Sent − Scheduled includes the hand-off honestly.
type FireFunc func(seq uint64, a workload.Arrival, woke time.Duration) bool

// Pacer turns an open-loop schedule into wake-ups at the scheduled times on
// one clock. Send times come from the schedule (Arrival.At), never from
// "now plus an interval", so a late wake-up delays only its own arrival:
// the next one is still aimed at its scheduled time, and arrivals already
// due are fired at once, in order, never skipped or merged.
//
// A Pacer is safe for concurrent use: Run and SleepUntil may be called from
// many goroutines at once (each locks its own thread while it sleeps). It
// holds its options and the clock's mapping onto CLOCK_MONOTONIC, measured
// once.
type Pacer struct {
	clock PaceClock
	opts  PacerOptions
	mono  monoMapping
}

// NewPacer returns a Pacer on clock with opts (zero fields take their
// defaults).
func NewPacer(clock PaceClock, opts PacerOptions) *Pacer {
	return &Pacer{clock: clock, opts: opts.withDefaults()}
}

// SleepUntil blocks until the clock reads at or later, or until ctx ends
// (it then returns ctx.Err()); it never returns early. It waits on a Go
// timer until CoarseMargin before at and sleeps the last stretch precisely:
// on Linux with clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME) on the
// calling OS thread, locked for the call with its timer slack set to 1 ns
// (restored after), so the wake-up lands within tens of microseconds rather
// than the millisecond grain of Go timers. ctx is looked at at least every
// CoarseMargin. Elsewhere the last stretch uses a Go timer (and Spin).
func (p *Pacer) SleepUntil(ctx context.Context, at time.Duration) error {
	if at-p.clock.Now() <= 0 {
		return nil
	}
	defer lockThread()()
	s := p.newSleeper()
	defer s.close()
	return s.sleepUntil(ctx, at)
}

// Run drives arr on the calling goroutine, which it locks to its OS thread
// for the duration (timer slack 1 ns on Linux, restored on return): for
// each arrival it sleeps until the clock reads a.At − Lead and calls fire.
// It returns nil when arr is exhausted or fire returns false, and ctx.Err()
// when ctx ends first (noticed within CoarseMargin; nothing fires after).
func (p *Pacer) Run(ctx context.Context, arr workload.Arrivals, fire FireFunc) error {
	defer lockThread()()
	s := p.newSleeper()
	defer s.close()
	done := ctx.Done()
	for seq := uint64(0); ; seq++ {
		a, ok := arr.Next()
		if !ok {
			return nil
		}
		if err := s.sleepUntil(ctx, a.At-p.opts.Lead); err != nil {
			return err
		}
		// Arrivals already due skip the sleep's own ctx check: look here
		// so that nothing fires after ctx has ended.
		select {
		case <-done:
			return ctx.Err()
		default:
		}
		if !fire(seq, a, p.clock.Now()) {
			return nil
		}
	}
}
