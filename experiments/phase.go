package experiments

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmchaos/llmchaos/report"
)

// Phase names (DESIGN §4), as the phase tag of results and run.json's
// phases write them.
const (
	PhaseBaseline = report.PhaseBaseline
	PhaseFault    = report.PhaseFault
	PhaseRecovery = report.PhaseRecovery
	PhaseAfter    = report.PhaseAfter
)

// phaseMark is a change of the run's phase at a time of the run clock.
type phaseMark struct {
	at    time.Duration
	phase string
	fault string
}

// timeline is the run's phase record: the phase changes on the run clock,
// appended as they happen by the fault scheduler and the live recovery
// check, and read by the engine's tag hook for every result.
//
// The phases follow the faults: baseline until the first fault is
// injected; fault while at least one is injected (the fault tag names the
// one injected last); recovery from the revert of the last injected fault
// until the service is seen recovered (every rolling window has held the
// steady-state thresholds for the hold time) or another fault is
// injected; after that, after. A timeline is safe for concurrent use.
type timeline struct {
	mu     sync.RWMutex
	marks  []phaseMark // in time order; marks[0] is baseline at 0
	active []string    // faults injected and not reverted, in injection order
	// last is the last mark, for the tag hook's fast path: a result sent
	// now is in the current phase, found with one atomic load.
	last atomic.Pointer[phaseMark]
}

func newTimeline() *timeline {
	t := &timeline{marks: []phaseMark{{at: 0, phase: PhaseBaseline}}}
	t.last.Store(&t.marks[0])
	return t
}

// set appends a phase change at at, unless it changes nothing. Changes
// come in time order; one stamped before the last is moved to it. t.mu is
// held.
func (t *timeline) set(at time.Duration, phase, fault string) {
	defer func() {
		m := t.marks[len(t.marks)-1]
		t.last.Store(&m)
	}()
	last := t.marks[len(t.marks)-1]
	if last.phase == phase && last.fault == fault {
		return
	}
	at = max(at, last.at)
	if at == last.at && len(t.marks) > 1 {
		t.marks[len(t.marks)-1] = phaseMark{at, phase, fault}
		if p := t.marks[len(t.marks)-2]; p.phase == phase && p.fault == fault {
			t.marks = t.marks[:len(t.marks)-1]
		}
		return
	}
	t.marks = append(t.marks, phaseMark{at, phase, fault})
}

// injected records that fault was injected at at: the fault phase.
func (t *timeline) injected(at time.Duration, fault string) {
	t.injecting(at, fault)
}

// injecting starts fault's phase at at, when its Inject begins: a request
// sent while the fault is being applied may meet it, so it belongs to the
// fault phase, never to the phase before. It returns that phase, for
// injectFailed.
func (t *timeline) injecting(at time.Duration, fault string) (prev phaseMark) {
	t.mu.Lock()
	defer t.mu.Unlock()
	prev = t.marks[len(t.marks)-1]
	t.active = append(t.active, fault)
	t.set(at, PhaseFault, fault)
	return prev
}

// injectFailed undoes injecting for a fault whose Inject failed (and
// rolled itself back): the run goes back to the fault phase of the fault
// injected last, or to prev.
func (t *timeline) injectFailed(at time.Duration, fault string, prev phaseMark) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if i := slices.Index(t.active, fault); i >= 0 {
		t.active = slices.Delete(t.active, i, i+1)
	}
	if n := len(t.active); n > 0 {
		t.set(at, PhaseFault, t.active[n-1])
		return
	}
	t.set(at, prev.phase, prev.fault)
}

// reverted records that fault was reverted at at: the fault phase of the
// fault injected last among those still injected, or, when none is left,
// the recovery phase of fault.
func (t *timeline) reverted(at time.Duration, fault string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if i := slices.Index(t.active, fault); i >= 0 {
		t.active = slices.Delete(t.active, i, i+1)
	}
	if n := len(t.active); n > 0 {
		t.set(at, PhaseFault, t.active[n-1])
		return
	}
	t.set(at, PhaseRecovery, fault)
}

// recovered records that the service was seen recovered from fault at at:
// the after phase, if the run is still in fault's recovery phase.
func (t *timeline) recovered(at time.Duration, fault string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	last := t.marks[len(t.marks)-1]
	if last.phase != PhaseRecovery || last.fault != fault {
		return false
	}
	t.set(at, PhaseAfter, "")
	return true
}

// current returns the phase now and, for recovery, when it began.
func (t *timeline) current() phaseMark {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.marks[len(t.marks)-1]
}

// at returns the phase and fault at run-clock time d.
func (t *timeline) at(d time.Duration) (phase, fault string) {
	if m := t.last.Load(); d >= m.at {
		return m.phase, m.fault
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.atLocked(d)
}

func (t *timeline) atLocked(d time.Duration) (phase, fault string) {
	// i is the first mark after d; the one before it holds at d.
	i, _ := slices.BinarySearchFunc(t.marks, d, func(m phaseMark, d time.Duration) int {
		if m.at <= d {
			return -1
		}
		return 1
	})
	m := t.marks[max(i-1, 0)]
	return m.phase, m.fault
}

// shaped returns the phase and fault of an answer that streamed from
// from to to (a consistency probe's): the last fault phase in force at
// any time of [from, to], for a fault in force while the answer streamed
// shaped it, whether it struck mid-stream or was reverted under it; else
// the phase at to.
func (t *timeline) shaped(from, to time.Duration) (phase, fault string) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	phase, fault = t.atLocked(to)
	if phase == PhaseFault {
		return phase, fault
	}
	first, _ := slices.BinarySearchFunc(t.marks, from, func(m phaseMark, d time.Duration) int {
		if m.at <= d {
			return -1
		}
		return 1
	})
	for i := max(first-1, 0); i < len(t.marks) && t.marks[i].at <= to; i++ {
		if m := t.marks[i]; m.phase == PhaseFault {
			phase, fault = m.phase, m.fault
		}
	}
	return phase, fault
}

// within returns the phase and fault that hold over all of [from, to),
// and whether one does (no change inside the span).
func (t *timeline) within(from, to time.Duration) (phase, fault string, ok bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	for _, m := range t.marks[1:] {
		if m.at > from && m.at < to {
			return "", "", false
		}
	}
	phase, fault = t.atLocked(from)
	return phase, fault, true
}

// records returns the phases as run.json writes them, tiling [0, end).
func (t *timeline) records(end time.Duration) []report.PhaseRecord {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]report.PhaseRecord, 0, len(t.marks))
	for i, m := range t.marks {
		stop := end
		if i+1 < len(t.marks) {
			stop = t.marks[i+1].at
		}
		if m.at >= end {
			break
		}
		stop = min(stop, end)
		if stop <= m.at {
			continue
		}
		out = append(out, report.PhaseRecord{Name: m.phase, Fault: m.fault, StartS: m.at.Seconds(), EndS: stop.Seconds()})
	}
	return out
}
