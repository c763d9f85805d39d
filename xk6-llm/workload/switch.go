package workload

import (
	"math/rand/v2"
	"sync/atomic"
)

// Switch is a Workload whose workload is replaced while a load runs (a
// game day's preset switch). Every session it draws carries its Class,
// whichever workload drew it, so that a run's thresholds, steady state and
// recovery keep judging one stream of requests; the run's events say when
// the shape changed. Set before the first Next; Next and Set are safe from
// any goroutine.
type Switch struct {
	class string
	cur   atomic.Pointer[switched]
}

type switched struct {
	w    Workload
	name string
}

var _ Workload = (*Switch)(nil)

// NewSwitch returns a Switch whose sessions carry class.
func NewSwitch(class string) *Switch { return &Switch{class: class} }

// Set makes w, called name, the workload the next sessions are drawn from.
func (s *Switch) Set(w Workload, name string) { s.cur.Store(&switched{w, name}) }

// Name is the name of the workload drawn from now.
func (s *Switch) Name() string {
	if c := s.cur.Load(); c != nil {
		return c.name
	}
	return ""
}

// Next draws a session of the current workload, with the Switch's class.
func (s *Switch) Next(rng *rand.Rand, a Arrival) *Session {
	sess := s.cur.Load().w.Next(rng, a)
	sess.Class = s.class
	return sess
}
