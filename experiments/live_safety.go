package experiments

import (
	"errors"
	"fmt"

	"github.com/llmchaos/llmchaos/report"
)

// RefusedError is an action a live run's safety rules refused: the blast
// radius (blast_radius.max_concurrent_faults, min_available), a steady
// state not yet confirmed, a load change the load's shape cannot take.
// The refusal is recorded in the run's events.
type RefusedError struct {
	Reason string
}

func (e *RefusedError) Error() string { return "refused: " + e.Reason }

// refused records a refusal in the run's events and returns it as a
// *RefusedError.
func (l *Control) refused(r *run, err error, by string) error {
	var re *RefusedError
	if !errors.As(err, &re) {
		re = &RefusedError{Reason: err.Error()}
	}
	r.obs.eventBy(report.EventSourceGameDay, "refused", "", re.Reason, by)
	return re
}

// gateOpen refuses faults until the steady state was seen to hold.
func (l *Control) gateOpen() error {
	select {
	case <-l.gate:
		return nil
	default:
		return &RefusedError{Reason: fmt.Sprintf("the steady state is being checked over the first %v of load; inject once it holds (see the steady-state status)", l.r.p.spec.Recovery.Window.D())}
	}
}

// blastRadius checks that a fault acting on endpoints may be injected
// now.
func (l *Control) blastRadius(r *run, name string, endpoints []int) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.blastRadiusLocked(r, name, endpoints)
}

func (l *Control) blastRadiusLocked(r *run, name string, endpoints []int) error {
	br := r.p.spec.BlastRadius
	n := 0
	hit := map[int]bool{}
	for _, lf := range l.faults {
		if lf.at >= 0 && !r.faults.ledger.has(lf.index) {
			continue
		}
		n++
		for _, e := range lf.endpoints {
			hit[e] = true
		}
	}
	if m := br.MaxConcurrent(); m > 0 && n >= m {
		return &RefusedError{Reason: fmt.Sprintf("%q would make %d faults at once, more than blast_radius.max_concurrent_faults (%d): revert one first", name, n+1, m)}
	}
	if floor := br.Floor(); floor > 0 && len(endpoints) > 0 {
		for _, e := range endpoints {
			hit[e] = true
		}
		if left := len(r.endpoints) - len(hit); left < floor {
			return &RefusedError{Reason: fmt.Sprintf("%q would leave %d of the %d endpoints out of every fault's reach, fewer than blast_radius.min_available (%d): target fewer endpoints or revert a fault first", name, left, len(r.endpoints), floor)}
		}
	}
	return nil
}
