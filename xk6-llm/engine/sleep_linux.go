//go:build linux

package engine

import (
	"errors"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// monoMapping maps PaceClock offsets onto CLOCK_MONOTONIC (mono = base +
// offset) for clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME). base is
// measured by bracketing a clock read between two CLOCK_MONOTONIC reads;
// Go's own monotonic time is CLOCK_MONOTONIC on Linux, so the mapping holds
// for a RunClock for the whole run. Absolute targets make a sleep immune to
// delays between computing it and entering it, and EINTR is simply retried
// by the caller's loop. Safe for concurrent use.
type monoMapping struct {
	base   atomic.Int64 // CLOCK_MONOTONIC ns at PaceClock offset 0
	valid  atomic.Bool
	broken atomic.Bool // clock_nanosleep or clock_gettime failed: use timers
}

// calibrate measures base from the tightest of a few bracketed reads.
func (m *monoMapping) calibrate(clock PaceClock) bool {
	best, base := int64(-1), int64(0)
	for range 5 {
		var a, b unix.Timespec
		if unix.ClockGettime(unix.CLOCK_MONOTONIC, &a) != nil {
			return false
		}
		c := clock.Now()
		if unix.ClockGettime(unix.CLOCK_MONOTONIC, &b) != nil {
			return false
		}
		if w := b.Nano() - a.Nano(); best < 0 || w < best {
			best, base = w, a.Nano()+w/2-int64(c)
		}
	}
	m.base.Store(base)
	m.valid.Store(true)
	return true
}

// sleepTo sleeps until clock offset target. It returns false when precise
// sleeping is unavailable here and the caller must use a timer instead.
func (m *monoMapping) sleepTo(clock PaceClock, target time.Duration) bool {
	if m.broken.Load() {
		return false
	}
	if !m.valid.Load() && !m.calibrate(clock) {
		m.broken.Store(true)
		return false
	}
	ts := unix.NsecToTimespec(m.base.Load() + int64(target))
	err := unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &ts, nil)
	switch {
	case err == nil:
		// On time by CLOCK_MONOTONIC yet early by the clock: the two
		// disagree (not a RunClock); measure again before the next sleep.
		if clock.Now() < target-50*time.Microsecond {
			m.valid.Store(false)
		}
	case errors.Is(err, unix.EINTR):
	default:
		m.broken.Store(true)
		return false
	}
	return true
}

// threadSlack sets the calling thread's timer slack to 1 ns for the life
// of a sleeper: the kernel otherwise may defer a normal thread's wake-up by
// up to its slack (50 µs by default) to batch it with others. end restores
// the old value. The caller holds the OS thread locked between the two.
type threadSlack struct {
	old int
	set bool
}

func (t *threadSlack) begin() {
	old, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil || old <= 1 {
		return
	}
	if unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0) == nil {
		t.old, t.set = old, true
	}
}

func (t *threadSlack) end() {
	if t.set {
		// Best effort: a failure leaves a thread with a 1 ns slack, which
		// only makes its timers more precise.
		_ = unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(t.old), 0, 0, 0)
		t.set = false
	}
}
