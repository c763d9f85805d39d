package experiments

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// checkBefore checks the steady state's threshold probes over the window
// before the first fault, at its time; it opens gate when they hold, and
// stops the run (not steady) when they do not, so that no fault is
// injected.
func (r *run) checkBefore(ctx context.Context, gate chan struct{}) {
	p := r.p
	if len(p.steady.ths) == 0 {
		close(gate)
		return
	}
	at := p.beforeCheckAt()
	if !r.sleepUntil(ctx, at) {
		return
	}
	ws := r.rec.Window(at-p.spec.Recovery.Window.D(), at)
	recs := p.steady.checkThresholds(ws, p.judge.within, p.slo)
	r.mu.Lock()
	r.before = append(r.before, recs...)
	r.mu.Unlock()
	if !allOK(recs) {
		r.stop(AbortNotSteady, "steady state does not hold before the faults: "+failedProbes(recs))
		return
	}
	close(gate)
}

// liveLoop checks the stop conditions and the recovery of the service
// every second, and prints a line of load figures every Progress, until
// done is closed.
func (r *run) liveLoop(done <-chan struct{}, live *assertions.Live) {
	p := r.p
	tick := time.NewTicker(liveInterval)
	defer tick.Stop()
	var (
		lastProgress time.Duration
		scan         recoveryScan // the search for the current recovery phase's end
		judge        recoveryJudge
		scanFault    string
		scanAt       time.Duration
	)
	for {
		select {
		case <-done:
			return
		case <-tick.C:
		}
		now := r.now()
		if live.Enabled() {
			from := max(now-live.Window(), 0)
			within := p.judge.within
			if ph, f, ok := r.tl.within(from, now); ok {
				within.Phase, within.Fault = ph, f
			}
			ws := r.rec.Window(from, now)
			if failed := live.Check(now, assertions.WindowSource{Window: ws, Within: within, SLO: p.slo}); len(failed) > 0 {
				r.stopFor(&report.Abort{Cause: AbortStopCondition, Name: failed[0].Metric + failed[0].Tags.String() + ": " + failed[0].Expr, Detail: describeFailures(failed)})
			}
		}
		if cur := r.tl.current(); cur.phase == PhaseRecovery {
			if scanFault != cur.fault || scanAt != cur.at {
				scanFault, scanAt = cur.fault, cur.at
				judge, scan = r.liveRecoveryScan(cur.fault, cur.at)
			}
			if t, ok := judge.advance(r.rec.Window, &scan, now); ok && r.tl.recovered(now, cur.fault) {
				r.event(report.EventSourceRunner, "recovered", cur.fault,
					fmt.Sprintf("healthy from %s: every %v window held for %v%s", fmtClock(t), judge.window, judge.hold, heldLastNote(scan.heldLast())))
			}
		}
		if every := r.opts.Progress; every > 0 && now-lastProgress >= every-every/10 {
			lastProgress = now
			r.out.println(r.progressLine(now))
		}
	}
}

// describeFailures names failed thresholds and their observed values.
func describeFailures(outs assertions.Outcomes) string {
	parts := make([]string, len(outs))
	for i, o := range outs {
		parts[i] = fmt.Sprintf("%s%s: %s observed %s over the live window", o.Metric, o.Tags.String(), o.Expr, o.Observed())
	}
	return strings.Join(parts, "; ")
}

// liveRecoveryScan starts the live search for the recovery of fault, whose
// recovery phase began at phaseAt (its revert): from its injection for an
// InstantaneousFault, with the latency band of the baseline recorded so
// far.
func (r *run) liveRecoveryScan(fault string, phaseAt time.Duration) (recoveryJudge, recoveryScan) {
	recs := r.faults.records()
	from := phaseAt
	for _, rec := range recs {
		if rec.Name == fault && rec.InjectedAtS != nil && InstantaneousFault(rec.Type) {
			from = durationOf(*rec.InjectedAtS)
		}
	}
	return r.p.judge.withBaseline(baselineWindow(r.rec.Window, recs)), newRecoveryScan(from)
}

// recoveries computes recovery_time, time_to_recover (and
// oom_recovery_time) of every fault from the recorded series: from its
// injection to the first moment, at or after its revert (its injection for
// an InstantaneousFault), from which the service met the recovery criteria
// for the hold time. A fault never injected, or a sustained one never
// reverted, did not recover.
func (r *run) recoveries(sum *recording.Summary) []faultRecovery {
	recs := r.faults.records()
	r.mu.Lock()
	evs := slices.Clone(r.replicaEvs)
	r.mu.Unlock()
	var start time.Time
	if c := r.clock.Load(); c != nil {
		start = c.Start()
	}
	judge := r.p.judge.withBaseline(baselineWindow(sum.Window, recs))
	out := make([]faultRecovery, len(recs))
	for i, rec := range recs {
		fr := faultRecovery{fault: rec.Name, instantaneous: InstantaneousFault(rec.Type)}
		from, ok := recoverySearchFrom(rec)
		if ok {
			inj := durationOf(*rec.InjectedAtS)
			// The last, partial second of the run counts as a window end:
			// what it holds is all the run has.
			sc := newRecoveryScan(from)
			if t, ok := judge.advance(sum.Window, &sc, ceilSecond(sum.Duration)); ok {
				fr.recovered, fr.time, fr.heldLast = true, max(t-inj, 0), sc.heldLast()
				fr.sinceRevert = max(t-from, 0)
			} else {
				fr.insufficient = judge.insufficient(&sc)
			}
			next := sum.Duration
			for _, o := range recs {
				if o.InjectedAtS != nil && *o.InjectedAtS > *rec.InjectedAtS {
					next = min(next, durationOf(*o.InjectedAtS))
				}
			}
			fr.oom, fr.oomOK = oomRecovery(evs, start, inj, next)
		}
		out[i] = fr
	}
	return out
}
