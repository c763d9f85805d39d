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
	// seen are the recoveries the live check announced: fault → the
	// moment of recovery it found and its event's index.
	seen map[string]liveRecovery
}

// liveRecovery is a recovery the live check announced.
type liveRecovery struct {
	at    time.Duration // the moment of recovery
	event int           // the index of its `recovered` event
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
				idx := j.obs.eventIndexed(report.EventSourceRunner, "recovered", cur.fault, recoveredDetail(t, judge, scan.heldLast()))
				j.mu.Lock()
				if j.seen == nil {
					j.seen = map[string]liveRecovery{}
				}
				j.seen[cur.fault] = liveRecovery{at: t, event: idx}
				j.mu.Unlock()
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
			// what it holds is all the run has. The search never runs past
			// the next fault (see recoverySearchEnd).
			end, cutBy := recoverySearchEnd(recs, i, from, ceilSecond(sum.Duration))
			sc := newRecoveryScan(from)
			if end <= from {
				fr.cutBy = cutBy // another fault held the service when this one ended
			} else if t, ok := judge.advance(sum.Window, &sc, end); ok {
				fr.recovered, fr.time, fr.heldLast, fr.at = true, max(t-inj, 0), sc.heldLast(), t
				fr.sinceRevert = max(t-from, 0)
			} else if cutBy != "" {
				fr.cutBy = cutBy // the next fault came first, whatever the traffic until then
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

// recoveredDetail is the detail of a `recovered` event: from when the
// service was healthy, and by which criteria.
func recoveredDetail(t time.Duration, judge recoveryJudge, heldLast string) string {
	return fmt.Sprintf("healthy from %s: every %v window held for %v%s", fmtClock(t), judge.window, judge.hold, heldLastNote(heldLast))
}

// settleRecoveries makes the run's `recovered` events say what its
// recovery table says, the judgement of the whole record being the source
// of both: the live check announces a recovery as soon as it sees one,
// with the windows it had then; the record, complete at the run's end,
// decides. A recovery the live check did not see (it was found in the
// run's last second, or in windows complete only later) gets its event
// now, at the moment the hold was complete, and a line; one the live check
// announced that the record does not bear out has its event turned into
// `recovery_withdrawn`, saying why, and a line.
func (j *judge) settleRecoveries(recs []faultRecovery, runEnd time.Duration) {
	judge := j.p.judge
	j.mu.Lock()
	seen := j.seen
	j.mu.Unlock()
	for _, fr := range recs {
		live, announced := seen[fr.fault]
		switch {
		case fr.recovered && !announced:
			at := min(fr.at+judge.hold.Truncate(time.Second), runEnd)
			j.obs.eventAt(at, report.EventSourceRunner, "recovered", fr.fault,
				recoveredDetail(fr.at, judge, fr.heldLast)+" (judged once the run's record was complete)", "")
		case fr.recovered && live.at != fr.at:
			j.obs.amendEvent(live.event, "recovered", recoveredDetail(fr.at, judge, fr.heldLast)+
				fmt.Sprintf(" (the live check saw it from %s; the complete record says %s)", fmtClock(live.at), fmtClock(fr.at)))
		case !fr.recovered && announced:
			why := "the complete record does not hold for the hold time"
			if fr.cutBy != "" {
				why = "the next fault, " + fr.cutBy + ", came first"
			}
			j.obs.amendEvent(live.event, "recovery_withdrawn", fmt.Sprintf("the live check saw it healthy from %s; %s", fmtClock(live.at), why))
		}
	}
}
