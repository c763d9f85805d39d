package assertions

import (
	"fmt"
	"time"
)

// DefaultLiveWindow is the rolling window Live looks at unless WithWindow
// says otherwise.
const DefaultLiveWindow = 10 * time.Second

// Live decides, while a run goes on, whether an abortOnFail threshold
// fails now. The runner calls Check about once a second with the run time
// so far and a Source restricted to the last Window() of the run; a
// non-empty answer is a stop condition (the run aborts and rolls back,
// verdict "aborted").
//
// Unlike the final evaluation, a threshold with no data in the window does
// not abort: a quiet window (the run's first second, a phase not yet
// reached) is not evidence of failure. Live holds no mutable state and is
// safe for concurrent use.
type Live struct {
	ths    []Threshold
	window time.Duration
}

// LiveOption configures NewLive.
type LiveOption func(*Live)

// WithWindow sets the rolling window the runner should restrict the Source
// to (default DefaultLiveWindow). It must be positive.
func WithWindow(d time.Duration) LiveOption { return func(l *Live) { l.window = d } }

// NewLive keeps the AbortOnFail thresholds of ths. With none, Check never
// reports anything; callers may skip the live loop (see Enabled).
func NewLive(ths []Threshold, opts ...LiveOption) (*Live, error) {
	l := &Live{window: DefaultLiveWindow}
	for _, o := range opts {
		o(l)
	}
	if l.window <= 0 {
		return nil, fmt.Errorf("live threshold window %v: must be positive", l.window)
	}
	for _, t := range ths {
		if t.AbortOnFail {
			l.ths = append(l.ths, t)
		}
	}
	return l, nil
}

// Window returns the rolling window length.
func (l *Live) Window() time.Duration { return l.window }

// Enabled reports whether any threshold may abort the run.
func (l *Live) Enabled() bool { return len(l.ths) > 0 }

// Check evaluates the abortOnFail thresholds whose DelayAbortEval has
// passed (elapsed >= DelayAbortEval) over window and returns those that
// fail on data; none means the run goes on.
func (l *Live) Check(elapsed time.Duration, window Source) Outcomes {
	due := make([]Threshold, 0, len(l.ths))
	for _, t := range l.ths {
		if elapsed >= t.DelayAbortEval {
			due = append(due, t)
		}
	}
	var failed Outcomes
	for _, o := range Evaluate(window, due) {
		if !o.OK && !o.NoData {
			failed = append(failed, o)
		}
	}
	return failed
}
