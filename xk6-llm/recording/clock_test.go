package recording

import (
	"testing"
	"time"
)

func TestRunClock(t *testing.T) {
	t.Parallel()
	start := time.Now()
	c := NewRunClockAt(start)
	a := c.Now()
	b := c.Now()
	if a <= 0 || b < a {
		t.Errorf("Now() = %v then %v: want positive and non-decreasing", a, b)
	}
	if got := c.Time(a); !got.Equal(start.Add(a)) {
		t.Errorf("Time(%v) = %v, want %v", a, got, start.Add(a))
	}
	if got := c.Start(); !got.Equal(start) {
		t.Errorf("Start() = %v, want %v", got, start)
	}
	// A clock whose zero is in the future still never reports 0 or less,
	// since a zero offset in a Result means "did not happen".
	future := NewRunClockAt(time.Now().Add(time.Hour))
	if got := future.Now(); got != 1 {
		t.Errorf("Now() before the clock's zero = %v, want 1ns", got)
	}
	// The monotonic reading is used: a wall-clock-only start (no monotonic
	// reading) still yields a sane offset.
	wall := NewRunClockAt(start.Round(0))
	if got := wall.Now(); got <= 0 || got > time.Hour {
		t.Errorf("Now() with a wall-clock start = %v", got)
	}
}
