//go:build !linux

package engine

import "time"

// monoMapping has no precise sleep outside Linux: sleepTo reports false
// and the sleeper uses a Go timer for the last stretch too
// (millisecond-grained; set PacerOptions.Spin for tighter wake-ups at the
// cost of a busy core).
type monoMapping struct{}

func (m *monoMapping) sleepTo(PaceClock, time.Duration) bool { return false }

// threadSlack does nothing outside Linux.
type threadSlack struct{}

func (t *threadSlack) begin() {}

func (t *threadSlack) end() {}
