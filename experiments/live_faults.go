package experiments

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/faults/replica"
	"github.com/llmchaos/llmchaos/internal/field"
	"github.com/llmchaos/llmchaos/report"
)

// InvalidFaultError is a fault to inject by hand that is not valid: its
// problems name the key they are about (fault.params.latency).
type InvalidFaultError struct {
	Problems field.Problems
}

func (e *InvalidFaultError) Error() string {
	msgs := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		msgs[i] = p.Error()
	}
	return "invalid fault: " + strings.Join(msgs, "; ")
}

// ManualFault is a fault to inject by hand.
type ManualFault struct {
	// Name names it in the report and in thresholds' fault:NAME; empty:
	// the type's last word and a number ("latency-1").
	Name string `json:"name,omitempty"`
	// Type is a fault type (spec.FaultTypes).
	Type string `json:"type"`
	// Params are the type's params, as an experiment file writes them.
	Params map[string]any `json:"params,omitempty"`
	// Target selects where a proxy fault acts (default: every endpoint).
	Target *spec.FaultTarget `json:"target,omitempty"`
	// Duration reverts it that long after its injection (0: it stays
	// until reverted by hand, or the end).
	Duration time.Duration `json:"-"`
}

// ActiveFault is a fault injected and not yet reverted.
type ActiveFault struct {
	Name   string `json:"name"`
	Type   string `json:"type"`
	Target string `json:"target,omitempty"`
	// By is who injected it; Step is its timeline step + 1 (0: by hand).
	By   string `json:"by,omitempty"`
	Step int    `json:"step,omitempty"`
	// InjectedAtS is when, on the run clock; DurationS how long it stays
	// (0: until reverted), and RevertAtS when it will be reverted then.
	InjectedAtS float64 `json:"injected_at_s"`
	DurationS   float64 `json:"duration_s,omitempty"`
	RevertAtS   float64 `json:"revert_at_s,omitempty"`
}

// Inject injects a fault by hand for by (who asked), at once: it is
// checked (an *InvalidFaultError), kept within the blast radius (a
// *RefusedError, recorded), built, journalled and injected through the
// fault contract, and reverted after its Duration (if any). The error is
// the injection's when it failed.
func (l *Control) Inject(mf ManualFault, by string) (ActiveFault, error) {
	r, err := l.enter()
	if err != nil {
		return ActiveFault{}, err
	}
	defer l.busy.Done()
	if err := l.gateOpen(); err != nil {
		return ActiveFault{}, l.refused(r, err, by)
	}
	ft, known := spec.FaultTypes()[mf.Type]
	if mf.Name == "" && known {
		mf.Name = l.autoName(r, mf.Type)
	}
	sf := spec.Fault{Name: mf.Name, Type: mf.Type, Duration: spec.Duration(mf.Duration), Target: mf.Target, Params: mf.Params}
	if mf.Duration < 0 {
		return ActiveFault{}, &InvalidFaultError{Problems: field.Problems{field.Errorf("fault.duration", "%v is negative", mf.Duration)}}
	}
	if ps := r.p.spec.ValidateFault(sf); len(ps) > 0 {
		return ActiveFault{}, &InvalidFaultError{Problems: ps}
	}
	if r.faults.hasName(mf.Name) {
		return ActiveFault{}, &InvalidFaultError{Problems: field.Problems{field.Errorf("fault.name", "a fault named %q was already injected in this run: fault names must be unique", mf.Name)}}
	}
	floor := r.p.spec.BlastRadius.Floor()
	if floor > 0 && ft.Family == replica.Family {
		sf.Params = withMinAvailable(sf.Params, floor)
	}
	pf := &plannedFault{spec: sf, ft: ft, seed: r.p.seed ^ uint64(len(mf.Name))<<32 ^ hashName(mf.Name)}
	endpoints := r.faultEndpoints(pf)
	if err := l.blastRadius(r, mf.Name, endpoints); err != nil {
		return ActiveFault{}, l.refused(r, err, by)
	}
	now := r.now()
	i, ok := r.faults.addRecord(report.FaultRecord{
		Name: mf.Name, Type: mf.Type, PlannedAtS: now.Seconds(), PlannedDurationS: mf.Duration.Seconds(), RevertOK: true, By: by,
	})
	if !ok {
		return ActiveFault{}, &InvalidFaultError{Problems: field.Problems{field.Errorf("fault.name", "a fault named %q was already injected in this run", mf.Name)}}
	}
	pf.index = i
	f, target, err := r.build(pf, r.simEnv())
	if err != nil {
		r.notInjected(i, err.Error())
		r.obs.eventBy(report.EventSourceFault, "inject_failed", mf.Name, err.Error(), by)
		return ActiveFault{}, fmt.Errorf("fault %q: %w", mf.Name, err)
	}
	r.faults.setTarget(i, target)
	return l.injectLive(r, &liveFault{index: i, name: mf.Name, typ: mf.Type, target: target, by: by, duration: mf.Duration, endpoints: endpoints}, f)
}

// injectLive injects lf's fault f now, and schedules its revert when it
// has a duration. It holds no lock: blast-radius checks and injections
// of two actions at once are serialised by inj.
func (l *Control) injectLive(r *run, lf *liveFault, f faults.Fault) (ActiveFault, error) {
	l.mu.Lock()
	if err := l.blastRadiusLocked(r, lf.name, lf.endpoints); err != nil {
		l.mu.Unlock()
		r.notInjected(lf.index, err.Error())
		return ActiveFault{}, l.refused(r, err, lf.by)
	}
	// Reserve its place in the blast radius while it is injected.
	lf.at = -1
	l.faults[lf.name] = lf
	ctx := l.ctx
	l.mu.Unlock()
	err := r.injectFault(ctx, lf.index, lf.name, lf.typ, lf.target, f, r.now(), lf.by)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		delete(l.faults, lf.name)
		return ActiveFault{}, fmt.Errorf("fault %q: %w", lf.name, err)
	}
	lf.at = r.now()
	if rec := r.faults.records(); lf.index < len(rec) && rec[lf.index].InjectedAtS != nil {
		lf.at = durationOf(*rec[lf.index].InjectedAtS)
	}
	if lf.duration > 0 && !l.closed {
		l.busy.Go(func() {
			defer r.judge.guard("reverting a game day fault on time")
			if r.clock.sleepUntil(ctx, lf.at+lf.duration) {
				r.revertFault(ctx, lf.index, "")
			}
		})
	}
	return lf.active(), nil
}

// active describes lf as injected.
func (lf *liveFault) active() ActiveFault {
	a := ActiveFault{Name: lf.name, Type: lf.typ, Target: lf.target, By: lf.by, Step: lf.step, InjectedAtS: max(lf.at, 0).Seconds(), DurationS: lf.duration.Seconds()}
	if lf.duration > 0 {
		a.RevertAtS = (lf.at + lf.duration).Seconds()
	}
	return a
}

// Revert reverts the injected fault name for by, at once.
func (l *Control) Revert(name, by string) error {
	r, err := l.enter()
	if err != nil {
		return err
	}
	defer l.busy.Done()
	l.mu.Lock()
	lf := l.faults[name]
	l.mu.Unlock()
	if lf == nil || !r.faults.ledger.has(lf.index) {
		return fmt.Errorf("%w: %q", ErrNoSuchFault, name)
	}
	if !r.revertFault(l.ctx, lf.index, by) {
		if r.faults.ledger.has(lf.index) {
			return fmt.Errorf("fault %q: revert failed; see the run's events", name)
		}
		if recs := r.faults.records(); lf.index < len(recs) && !recs[lf.index].RevertOK {
			return fmt.Errorf("fault %q: revert failed: %s; it may still be applied (llmchaos recover)", name, recs[lf.index].Error)
		}
	}
	return nil
}

// RevertAll reverts every injected fault for by, last injected first, and
// pauses the timeline so that it injects nothing more.
func (l *Control) RevertAll(by string) error {
	r, err := l.enter()
	if err != nil {
		return err
	}
	defer l.busy.Done()
	l.mu.Lock()
	if l.tlState.playing {
		l.pauseTimelineLocked(r)
	}
	l.mu.Unlock()
	r.obs.eventBy(report.EventSourceGameDay, "revert_all", "", "", by)
	var errs []error
	for _, i := range r.faults.ledger.indexes() {
		r.revertFault(l.ctx, i, by)
		if r.faults.ledger.has(i) {
			errs = append(errs, fmt.Errorf("fault %d could not be reverted", i))
		}
	}
	for _, rec := range r.faults.records() {
		if rec.InjectedAtS != nil && rec.RevertedAtS == nil && !rec.RevertOK {
			errs = append(errs, fmt.Errorf("fault %q: %s", rec.Name, rec.Error))
		}
	}
	return errors.Join(errs...)
}

// Active returns the faults injected now, in the order they were.
func (l *Control) Active() []ActiveFault {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.r == nil {
		return []ActiveFault{}
	}
	var lfs []*liveFault
	for _, lf := range l.faults {
		if lf.at >= 0 && l.r.faults.ledger.has(lf.index) {
			lfs = append(lfs, lf)
		}
	}
	slices.SortFunc(lfs, func(a, b *liveFault) int { return int(a.at - b.at) })
	out := make([]ActiveFault, 0, len(lfs))
	for _, lf := range lfs {
		out = append(out, lf.active())
	}
	return out
}

// autoName names a fault injected by hand after its type: "latency-1".
func (l *Control) autoName(r *run, typ string) string {
	base := typ[strings.LastIndexByte(typ, '.')+1:]
	base = strings.ReplaceAll(base, "_", "-")
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		l.manual++
		name := fmt.Sprintf("%s-%d", base, l.manual)
		if !r.faults.hasName(name) {
			return name
		}
	}
}

// withMinAvailable returns params with select.min_available raised to at
// least floor.
func withMinAvailable(params map[string]any, floor int) map[string]any {
	out := make(map[string]any, len(params)+1)
	for k, v := range params {
		out[k] = v
	}
	sel := map[string]any{}
	if s, ok := out["select"].(map[string]any); ok {
		for k, v := range s {
			sel[k] = v
		}
	}
	cur := 0
	switch v := sel["min_available"].(type) {
	case int:
		cur = v
	case float64:
		cur = int(v)
	}
	sel["min_available"] = max(cur, floor)
	out["select"] = sel
	return out
}
