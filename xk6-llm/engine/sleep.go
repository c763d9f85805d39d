package engine

import (
	"context"
	"runtime"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// PaceClock is the clock a pacer sleeps against: offsets since run start
// that advance with the system's monotonic clock. RunClock is one; the
// precise sleep maps its offsets onto CLOCK_MONOTONIC once, so a clock that
// does not advance with real time costs a recalibration per sleep.
type PaceClock interface {
	Now() time.Duration
}

var _ PaceClock = (*recording.RunClock)(nil)

// SleepUntil blocks until clock.Now() ≥ at, or until ctx ends (it then
// returns ctx.Err()); it never returns early. It is Pacer.SleepUntil on a
// Pacer with default options made for the call; a Pacer kept for the run
// saves the clock calibration (a few system calls) on each call.
func SleepUntil(ctx context.Context, clock PaceClock, at time.Duration) error {
	return NewPacer(clock, PacerOptions{}).SleepUntil(ctx, at)
}

// sleeper is the per-call (or per-Run) state of precise sleeping: the
// thread's timer slack and a Go timer for the coarse phase, made on first
// use. It belongs to one goroutine locked to its OS thread.
type sleeper struct {
	p      *Pacer
	timer  *time.Timer
	thread threadSlack
}

func (p *Pacer) newSleeper() *sleeper {
	s := &sleeper{p: p}
	s.thread.begin()
	return s
}

func (s *sleeper) close() {
	if s.timer != nil {
		s.timer.Stop()
	}
	s.thread.end()
}

// sleepUntil waits on a Go timer until CoarseMargin before at, sleeps
// precisely to at − Spin, and busy-waits the rest.
func (s *sleeper) sleepUntil(ctx context.Context, at time.Duration) error {
	clock, opts := s.p.clock, s.p.opts
	done := ctx.Done()
	for {
		rem := at - clock.Now()
		if rem <= 0 {
			return nil
		}
		select {
		case <-done:
			return ctx.Err()
		default:
		}
		switch {
		case rem > opts.CoarseMargin:
			if err := s.timerSleep(ctx, rem-opts.CoarseMargin); err != nil {
				return err
			}
		case rem <= opts.Spin:
			return spinUntil(ctx, clock, at)
		default:
			// rem ≤ CoarseMargin: one precise sleep is bounded by it, so
			// ctx is looked at again within CoarseMargin.
			if !s.p.mono.sleepTo(clock, at-opts.Spin) {
				if err := s.timerSleep(ctx, rem-opts.Spin); err != nil {
					return err
				}
			}
		}
	}
}

func (s *sleeper) timerSleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	if s.timer == nil {
		s.timer = time.NewTimer(d)
	} else {
		s.timer.Reset(d)
	}
	select {
	case <-ctx.Done():
		s.timer.Stop()
		return ctx.Err()
	case <-s.timer.C:
		return nil
	}
}

// spinUntil busy-waits on clock until at, looking at ctx every 256 reads.
func spinUntil(ctx context.Context, clock PaceClock, at time.Duration) error {
	done := ctx.Done()
	for i := 0; clock.Now() < at; i++ {
		if i&255 == 255 {
			select {
			case <-done:
				return ctx.Err()
			default:
			}
		}
	}
	return nil
}

// lockThread pins the calling goroutine to its OS thread and returns the
// matching unlock; a helper so that both entry points read the same.
func lockThread() func() {
	runtime.LockOSThread()
	return runtime.UnlockOSThread
}
