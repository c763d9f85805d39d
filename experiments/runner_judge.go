package experiments

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/telemetry/promql"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// judge is the run's judge: it checks the steady state before and after
// the faults, checks the stop conditions live (the load's thresholds and
// the promql conditions), sees the service recover, computes each fault's
// recovery, and stops the run early when it must, keeping why (the abort
// record) and the run's internal failures. It reads the plan, the phase
// timeline, the faults' records and the replica events; what it records
// is guarded by mu.
type judge struct {
	p      *plan
	tl     *timeline
	faults *faultTimeline
	obs    *observers
	clock  *runClock
	out    *lineWriter
	// cancel ends the run's context; execute sets it before any of the
	// run's goroutines start (nil: stopping records the abort only).
	cancel context.CancelCauseFunc
	// lag is how far behind the run clock the live checks look (a
	// sharded load's results arrive that late); set before the load.
	lag time.Duration

	mu          sync.Mutex
	before      []report.ProbeRecord
	after       []report.ProbeRecord
	abortRecord *report.Abort // why the run was stopped early (nil: it was not)
	failure     []error       // panics and internal errors of the run's goroutines
}

// newJudge returns the judge of plan p, nothing judged yet.
func newJudge(p *plan, tl *timeline, ft *faultTimeline, obs *observers, clock *runClock, out *lineWriter) *judge {
	return &judge{p: p, tl: tl, faults: ft, obs: obs, clock: clock, out: out}
}

// errStopped is the cause of a run stopped by the runner itself.
var errStopped = errors.New("experiment stopped")

// stop stops the run early, for reason; the first reason wins.
func (j *judge) stop(reason, detail string) {
	j.stopFor(&report.Abort{Cause: reason, Detail: detail})
}

// stopFor stops the run early, for a; the first abort wins.
func (j *judge) stopFor(a *report.Abort) {
	j.mu.Lock()
	first := j.abortRecord == nil
	if first {
		j.abortRecord = a
	}
	j.mu.Unlock()
	if first {
		j.obs.event(report.EventSourceRunner, a.Cause, "", a.Reason())
	}
	if j.cancel != nil {
		j.cancel(fmt.Errorf("%w: %s", errStopped, a.Cause))
	}
}

// interrupted stops the run when ctx, the caller's context, has ended (a
// signal, Ctrl-C), naming its cause, and reports whether it had.
func (j *judge) interrupted(ctx context.Context) bool {
	if ctx.Err() == nil {
		return false
	}
	j.stopFor(report.InterruptAbort(context.Cause(ctx)))
	return true
}

// fail records an internal failure (a panic) and stops the run.
func (j *judge) fail(err error) {
	j.addFailure(err)
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	j.stop(AbortError, msg)
}

// addFailure records an internal failure that does not stop the run (a
// journal write that failed after a revert).
func (j *judge) addFailure(err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.failure = append(j.failure, err)
}

// failures returns a copy of the run's internal failures.
func (j *judge) failures() []error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.failure)
}

// guard turns a panic of the calling goroutine into a failure of the run
// (which stops it and reverts every fault). Call it deferred.
func (j *judge) guard(where string) {
	if v := recover(); v != nil {
		j.fail(&PanicError{Where: where, Value: v, Stack: debug.Stack()})
	}
}

// aborted returns why the run was stopped early, nil when it was not.
func (j *judge) aborted() *report.Abort {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.abortRecord
}

// addBefore records probes of the steady state before the faults.
func (j *judge) addBefore(recs []report.ProbeRecord) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.before = append(j.before, recs...)
}

// addAfter records probes of the steady state after the load.
func (j *judge) addAfter(recs []report.ProbeRecord) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.after = append(j.after, recs...)
}

// steadyState returns a copy of the steady state's probes, before (never
// nil) and after.
func (j *judge) steadyState() *report.SteadyState {
	j.mu.Lock()
	defer j.mu.Unlock()
	ss := &report.SteadyState{Before: slices.Clone(j.before), After: slices.Clone(j.after)}
	if ss.Before == nil {
		ss.Before = []report.ProbeRecord{}
	}
	return ss
}

// checkBefore checks the steady state's threshold probes over the window
// of rec before the first fault, at its time; it opens gate when they
// hold, and stops the run (not steady) when they do not, so that no fault
// is injected.
func (j *judge) checkBefore(ctx context.Context, rec *recording.Recorder, gate chan struct{}) {
	p := j.p
	if len(p.steady.ths) == 0 {
		close(gate)
		return
	}
	at := p.beforeCheckAt()
	if !j.clock.sleepUntil(ctx, at+j.lag) {
		return
	}
	ws := rec.Window(at-p.spec.Recovery.Window.D(), at)
	recs := p.steady.checkThresholds(ws, p.judge.within, p.slo)
	j.addBefore(recs)
	if !allOK(recs) {
		j.stop(AbortNotSteady, "steady state does not hold before the faults: "+failedProbes(recs))
		return
	}
	close(gate)
}

// liveLoop checks the stop conditions and the recovery of the service in
// rec every second, and calls progress with the run-clock time after each
// check, until done is closed.
func (j *judge) liveLoop(done <-chan struct{}, live *assertions.Live, rec *recording.Recorder, progress func(now time.Duration)) {
	p := j.p
	tick := time.NewTicker(liveInterval)
	defer tick.Stop()
	var (
		scan      recoveryScan // the search for the current recovery phase's end
		judge     recoveryJudge
		scanFault string
		scanAt    time.Duration
	)
	for {
		select {
		case <-done:
			return
		case <-tick.C:
		}
		now := max(j.clock.now()-j.lag, 0)
		if live.Enabled() {
			from := max(now-live.Window(), 0)
			within := p.judge.within
			if ph, f, ok := j.tl.within(from, now); ok {
				within.Phase, within.Fault = ph, f
			}
			ws := rec.Window(from, now)
			if failed := live.Check(now, assertions.WindowSource{Window: ws, Within: within, SLO: p.slo}); len(failed) > 0 {
				j.stopFor(&report.Abort{Cause: AbortStopCondition, Name: failed[0].Metric + failed[0].Tags.String() + ": " + failed[0].Expr, Detail: describeFailures(failed)})
			}
		}
		if cur := j.tl.current(); cur.phase == PhaseRecovery {
			if scanFault != cur.fault || scanAt != cur.at {
				scanFault, scanAt = cur.fault, cur.at
				judge, scan = j.liveRecoveryScan(rec, cur.fault, cur.at)
			}
			if t, ok := judge.advance(rec.Window, &scan, now); ok && j.tl.recovered(now, cur.fault) {
				j.obs.event(report.EventSourceRunner, "recovered", cur.fault,
					fmt.Sprintf("healthy from %s: every %v window held for %v%s", fmtClock(t), judge.window, judge.hold, heldLastNote(scan.heldLast())))
			}
		}
		progress(now)
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
// InstantaneousFault, with the latency band of the baseline rec recorded
// so far.
func (j *judge) liveRecoveryScan(rec *recording.Recorder, fault string, phaseAt time.Duration) (recoveryJudge, recoveryScan) {
	recs := j.faults.records()
	from := phaseAt
	for _, rec := range recs {
		if rec.Name == fault && rec.InjectedAtS != nil && InstantaneousFault(rec.Type) {
			from = durationOf(*rec.InjectedAtS)
		}
	}
	return j.p.judge.withBaseline(baselineWindow(rec.Window, recs)), newRecoveryScan(from)
}

// recoveries computes recovery_time, time_to_recover (and
// oom_recovery_time) of every fault from the recorded series: from its
// injection to the first moment, at or after its revert (its injection for
// an InstantaneousFault), from which the service met the recovery criteria
// for the hold time. A fault never injected, or a sustained one never
// reverted, did not recover.
func (j *judge) recoveries(sum *recording.Summary) []faultRecovery {
	recs := j.faults.records()
	evs := j.obs.replicaEvents()
	var start time.Time
	if c := j.clock.Load(); c != nil {
		start = c.Start()
	}
	judge := j.p.judge.withBaseline(baselineWindow(sum.Window, recs))
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

// promQLStops checks the promql stop conditions, each every its interval,
// until ctx ends, and stops the run (AbortStopCondition) at the first
// whose result does not satisfy its expect, once its delayAbortEval has
// passed. A query that cannot be decided is not judged; the first such
// problem of each condition is printed.
func (j *judge) promQLStops(ctx context.Context) {
	var wg sync.WaitGroup
	for i, c := range j.p.spec.StopConditions {
		if c.PromQL == nil {
			continue
		}
		pr, err := promql.New(c.PromQL.Spec(), promql.Options{Client: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}})
		if err != nil {
			j.fail(fmt.Errorf("stop_conditions[%d]: %w", i, err))
			return
		}
		every := c.Interval.D()
		if every <= 0 {
			every = spec.DefaultPromQLInterval
		}
		wg.Go(func() {
			defer j.guard("checking a promql stop condition")
			j.promQLStop(ctx, i, c, pr, every)
		})
	}
	wg.Wait()
}

// promQLStop checks one promql stop condition every interval.
func (j *judge) promQLStop(ctx context.Context, i int, c spec.StopCondition, pr *promql.Probe, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	warned := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if j.clock.now() < c.DelayAbortEval.D() {
			continue
		}
		res, err := pr.Check(ctx)
		switch {
		case err != nil && ctx.Err() != nil:
			return
		case err != nil:
			if !warned {
				warned = true
				how := "not judged"
				if errors.Is(err, promql.ErrNoData) {
					how = "not judged until the query returns data"
				}
				j.out.printf("warning: stop_conditions[%d] (%s): %v; %s", i, c.PromQL.Label(), err, how)
			}
		case !res.OK:
			j.stopFor(&report.Abort{Cause: AbortStopCondition, Name: fmt.Sprintf("stop_conditions[%d]", i), Detail: fmt.Sprintf("stop_conditions[%d]: %s", i, res)})
			return
		}
	}
}
