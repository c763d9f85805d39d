package recording

import "time"

// RunClock is a run's single monotonic clock: every Result time is an offset
// on it (time since run start). It reads the monotonic reading that
// time.Time carries, so wall-clock steps (NTP, DST) never move it. A RunClock
// is immutable after creation and safe for concurrent use.
type RunClock struct {
	start time.Time
}

// NewRunClock returns a clock whose zero is now.
func NewRunClock() *RunClock { return &RunClock{start: time.Now()} }

// NewRunClockAt returns a clock whose zero is start. start should carry a
// monotonic reading (come from time.Now) for the clock to be monotonic.
func NewRunClockAt(start time.Time) *RunClock { return &RunClock{start: start} }

// Now returns the time elapsed since the run started. It is never zero or
// negative, because a zero offset in a Result means "did not happen".
func (c *RunClock) Now() time.Duration {
	d := time.Since(c.start)
	if d <= 0 {
		return 1
	}
	return d
}

// Start returns the wall-clock instant of the run's zero (for reports).
func (c *RunClock) Start() time.Time { return c.start }

// Time returns the instant of offset d on this clock, with a monotonic
// reading, for use with timers and deadlines (time.Until(c.Time(d))).
func (c *RunClock) Time(d time.Duration) time.Time { return c.start.Add(d) }
