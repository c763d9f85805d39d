package experiments

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/experiments/loadrun"
	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/faults/replica"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/xk6-llm/client"
	"github.com/llmchaos/llmchaos/xk6-llm/engine"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// load runs the load (through the load pipeline shared with `llmchaos
// load`) with the faults on its clock and returns when the load has ended
// and every fault's goroutine has returned (each reverts its fault when
// its time is up or when ctx ends).
func (r *run) load(ctx context.Context) (engine.RunStats, error) {
	p := r.p
	live, err := assertions.NewLive(p.stops)
	if err != nil {
		return engine.RunStats{}, err
	}
	copts := client.ClientOptions{}
	p.spec.Workload.clientTimeouts(&copts)
	if t := p.spec.Target.LLM; t != nil {
		copts.APIKeyEnv, copts.Headers = t.APIKeyEnv, headerOf(t.Headers)
	} else {
		copts.Getenv = func(string) string { return "" } // the simulator takes no key: send none
	}
	targets := make([]string, len(r.endpoints))
	for i, e := range r.endpoints {
		targets[i] = e.load
	}
	l, err := loadrun.Run(ctx, loadrun.Config{
		Targets: targets, Model: r.model, Arrival: p.ac, Workload: p.wc, Seed: p.seed, Grace: p.spec.Workload.grace(),
		Client: copts, Recorder: recording.RecorderOptions{SLO: p.slo, SaveRequests: r.opts.SaveRequests}, Observe: r.observeOptions(),
		Tagger: r.tag, NoPreflight: r.opts.NoPreflight || p.spec.Workload.PreflightOff(), Warn: func(w string) { r.out.println("warning: " + w) },
		Alongside: func(l *loadrun.Load) func(engine.RunStats, error) {
			return r.alongside(ctx, l, live)
		},
	})
	if err != nil && l == nil {
		return engine.RunStats{}, err
	}
	stats := l.Stats
	stats.End = max(stats.End, r.now())
	if err != nil {
		return stats, fmt.Errorf("load: %w", err)
	}
	return stats, nil
}

// alongside starts what runs with the load once it is built: the steady
// state check before the faults, the faults on their timeline, the stop
// conditions, the live loop and the monitors. It returns the function
// that stops them all once the load ended and waits for them.
func (r *run) alongside(ctx context.Context, l *loadrun.Load, live *assertions.Live) func(engine.RunStats, error) {
	p := r.p
	r.rec = l.Recorder
	r.setObservers(l.Observers)
	r.clock.Store(l.Clock)
	r.event(report.EventSourceRunner, "load_started", "", describeArrival(p.ac))

	faultCtx, stopFaults := context.WithCancel(ctx)
	var wg sync.WaitGroup
	gate := make(chan struct{})
	wg.Go(func() {
		defer r.guard("checking the steady state before the faults")
		r.checkBefore(faultCtx, gate)
	})
	for i, pf := range p.faults {
		wg.Go(func() {
			defer r.guard("running fault " + pf.spec.Name)
			r.runFault(faultCtx, pf, r.built[i], r.targets[i], gate)
		})
	}
	wg.Go(func() {
		defer r.guard("checking the promql stop conditions")
		r.promQLStops(faultCtx)
	})
	done := make(chan struct{})
	wg.Go(func() {
		defer r.guard("checking the run live")
		r.liveLoop(done, live)
	})
	if r.sim != nil {
		w, err := replica.NewProcess(replica.TargetParams{StateFile: r.sim.env.StateFile}.WithDefaults())
		if err == nil {
			wg.Go(func() {
				defer r.guard("watching the replicas")
				r.monitorEnded(faultCtx, "replica events", w.Watch(faultCtx, func() {}, r.replicaEvent))
			})
		}
		if gs, err := openVGPUSampler(r.sim.env.VGPUDir, r.sim.n); err == nil {
			r.gpuSamples = gs
			wg.Go(func() {
				defer r.guard("sampling GPU memory")
				r.monitorEnded(faultCtx, "GPU memory samples", gs.run(faultCtx, r.now))
			})
		} else {
			r.out.printf("no GPU memory samples: %v", err)
		}
	}
	if r.sim == nil {
		if ns := openNVMLSampler(r.now, func(msg string) { r.out.println(msg + "; no GPU samples") }); ns != nil {
			r.nvml = ns
			wg.Go(func() {
				defer r.guard("sampling GPUs through NVML")
				r.monitorEnded(faultCtx, "NVML GPU samples", ns.mon.Run(faultCtx))
			})
		}
	}
	for _, tp := range r.watchedTargets() {
		what, emit := "Docker events", r.dockerEvent
		if tp.Driver == replica.DriverProcess {
			what, emit = "process events ("+tp.String()+")", r.replicaEvent
		}
		w, err := replica.OpenWatcher(tp)
		if err != nil {
			r.out.printf("no %s: %v", what, err)
			continue
		}
		wg.Go(func() {
			defer r.guard("watching " + what)
			r.monitorEnded(faultCtx, what, w.Watch(faultCtx, func() {}, emit))
		})
	}
	return func(stats engine.RunStats, err error) {
		if err == nil {
			r.event(report.EventSourceRunner, "load_ended", "", fmt.Sprintf("%d requests scheduled", stats.Scheduled))
		}
		stopFaults()
		close(done)
		wg.Wait()
		if r.nvml != nil {
			if err := r.nvml.mon.Close(); err != nil {
				r.out.printf("NVML monitor: %v", err)
			}
		}
	}
}

// tag is the engine's Tagger: it labels each result with the phase and
// fault of the moment at which it was sent (scheduled, for one never
// sent), and with its endpoint's URL rather than its proxy's. It runs on
// the engine's goroutines; a panic in it stops the run (reverting every
// fault) instead of crashing the process.
func (r *run) tag(at time.Duration, tags *recording.Tags) {
	defer r.guard("tagging a result of the load")
	tags.Phase, tags.Fault = r.tl.at(at)
	if u, ok := r.tagURL[tags.Endpoint]; ok {
		tags.Endpoint = u
	}
	if h := r.opts.hooks; h != nil && h.onTag != nil {
		h.onTag(at, tags)
	}
}

// sleepUntil waits until run-clock time d; false when ctx ended first.
func (r *run) sleepUntil(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(time.Until(r.clock.Load().Time(d)))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

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

// runFault injects one fault at its time, once the steady state was seen
// to hold, and reverts it when its duration is over or ctx ends.
func (r *run) runFault(ctx context.Context, pf *plannedFault, f faults.Fault, target string, gate <-chan struct{}) {
	at := pf.spec.At.D()
	name := pf.spec.Name
	if !r.sleepUntil(ctx, at) {
		r.notInjected(pf.index, "the run ended before its time")
		return
	}
	select {
	case <-gate:
	case <-ctx.Done():
		r.notInjected(pf.index, "the run ended before its time")
		return
	}
	clock := r.clock.Load()
	entry, err := r.jr.BeginAt(name, pf.spec.Type, target, clock.Time(at))
	if err != nil {
		r.notInjected(pf.index, err.Error())
		r.fail(fmt.Errorf("fault %q not injected: %w", name, err))
		return
	}
	prev := r.tl.injecting(clock.Now(), name)
	undo, err := f.Inject(ctx, entry)
	now := clock.Now()
	if err != nil {
		r.tl.injectFailed(now, name, prev)
		err = fmt.Errorf("inject: %w", err)
		if jerr := entry.Failed(err); jerr != nil {
			r.fail(jerr)
		}
		if _, refused := errors.AsType[*faults.SelectionError](err); refused {
			r.mu.Lock()
			r.refused = append(r.refused, name)
			r.mu.Unlock()
		}
		r.notInjected(pf.index, err.Error())
		r.event(report.EventSourceFault, "inject_failed", name, err.Error())
		return
	}
	r.ledger.add(&injection{index: pf.index, name: name, typ: pf.spec.Type, undo: undo, entry: entry})
	if jerr := entry.Injected(); jerr != nil {
		r.fail(jerr)
	}
	r.faultActive(name, pf.spec.Type, true)
	r.mu.Lock()
	r.faultRecs[pf.index].InjectedAtS = report.Seconds(now)
	r.mu.Unlock()
	r.event(report.EventSourceFault, "injected", name, fmt.Sprintf("%s %s (planned %s)", pf.spec.Type, target, fmtClock(at)))
	r.sleepUntil(ctx, at+pf.spec.Duration.D())
	r.revertFault(ctx, pf.index)
}

// notInjected records why fault i was not injected.
func (r *run) notInjected(i int, why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := &r.faultRecs[i]
	if rec.Error == "" {
		rec.Error = "not injected: " + why
	}
}

// revertFault reverts fault i if it is injected, under
// context.WithoutCancel with the run's revert timeout, and records when
// and how it went.
func (r *run) revertFault(ctx context.Context, i int) {
	inj := r.ledger.take(i)
	if inj == nil {
		return
	}
	c, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.opts.RevertTimeout)
	err := inj.revert(c)
	cancel()
	at := r.now()
	if jerr := inj.entry.Reverted(err); jerr != nil {
		r.mu.Lock()
		r.failure = append(r.failure, jerr)
		r.mu.Unlock()
	}
	r.mu.Lock()
	rec := &r.faultRecs[i]
	if err == nil {
		rec.RevertedAtS = report.Seconds(at)
	} else {
		rec.RevertOK = false
		rec.Error = "revert: " + err.Error()
		r.revertErrs = append(r.revertErrs, fmt.Errorf("fault %q (%s): %w", inj.name, inj.typ, err))
	}
	r.mu.Unlock()
	if err != nil {
		r.event(report.EventSourceFault, "revert_failed", inj.name, err.Error())
		return
	}
	if r.clock.Load() != nil {
		r.tl.reverted(at, inj.name)
	}
	r.faultActive(inj.name, inj.typ, false)
	r.event(report.EventSourceFault, "reverted", inj.name, "")
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

// progressLine is one line of load figures.
func (r *run) progressLine(now time.Duration) string {
	l := r.rec.Snapshot(now)
	ttft := "-"
	if l.TTFTP99 > 0 {
		ttft = fmt.Sprintf("%.0fms", float64(l.TTFTP99)/float64(time.Millisecond))
	}
	cur := r.tl.current()
	phase := cur.phase
	if cur.fault != "" {
		phase += "(" + cur.fault + ")"
	}
	return fmt.Sprintf("%9s  %-20s %12s  %4d in flight  ttft p99 %6s  %d errors",
		fmtClock(now), phase, l.RequestRate(), l.InFlight, ttft, l.Errors)
}

// describeFailures names failed thresholds and their observed values.
func describeFailures(outs assertions.Outcomes) string {
	parts := make([]string, len(outs))
	for i, o := range outs {
		parts[i] = fmt.Sprintf("%s%s: %s observed %s over the live window", o.Metric, o.Tags.String(), o.Expr, o.Observed())
	}
	return strings.Join(parts, "; ")
}

// monitorEnded reports a run-long monitor (events, GPU samples) that
// stopped with an error before the run's end: what it records is then
// incomplete, which the run's output must say rather than hide.
func (r *run) monitorEnded(ctx context.Context, what string, err error) {
	if err != nil && ctx.Err() == nil {
		r.out.printf("%s stopped early, run.json will miss the rest: %v", what, err)
		r.event(report.EventSourceRunner, "monitor_failed", "", what+": "+err.Error())
	}
}

// watchedTargets are the distinct targets of the run's replica faults
// that the run watches besides the simulator it started: containers (their
// engine events: die, start, health) and processes of a pid file, a
// command-line pattern or another supervisor's state file (exit, start of
// the replacement, healthy again).
func (r *run) watchedTargets() []replica.TargetParams {
	var out []replica.TargetParams
	seen := map[string]bool{}
	for _, pf := range r.p.faults {
		params, err := decodeParams(pf.index, pf.spec, pf.ft, nil)
		if err != nil {
			continue // build reports it when the fault is due
		}
		tp, ok := params.(interface{ Targets() *replica.TargetParams })
		if !ok {
			continue
		}
		t := tp.Targets().WithDefaults()
		var key string
		switch {
		case t.Driver == replica.DriverDocker:
			key = fmt.Sprint(t.Labels, t.Containers)
		case t.Driver != replica.DriverProcess || t.Validate() != nil:
			continue // the simulator's own replicas (no target), or invalid
		case r.sim != nil && t.StateFile == r.sim.env.StateFile:
			continue // watched as the simulator's
		default:
			key = t.String()
		}
		if !seen[key] {
			seen[key] = true
			out = append(out, t)
		}
	}
	return out
}

// dockerEvent records what a container did, as replicaEvent does for the
// simulator's replicas.
func (r *run) dockerEvent(e replica.Event) {
	r.recordReplicaEvent(e, report.EventSourceDocker)
}

// replicaEvent records what a replica of the simulator, or a process of a
// replica fault's target, did.
func (r *run) replicaEvent(e replica.Event) {
	r.recordReplicaEvent(e, report.EventSourceReplica)
}

// recordReplicaEvent records e in the run's events under source and prints it.
func (r *run) recordReplicaEvent(e replica.Event, source string) {
	at := time.Duration(0)
	if c := r.clock.Load(); c != nil {
		at = max(e.At.Sub(c.Start()), 0)
	}
	r.mu.Lock()
	r.replicaEvs = append(r.replicaEvs, e)
	r.events = append(r.events, report.EventRecord{
		AtS: at.Seconds(), Source: source, Kind: string(e.Kind), Target: e.Replica, Detail: e.Detail,
	})
	// A simulator replica's OOM shows as its exit status: say it.
	oom := e.Kind != replica.EventOOM && oomExit(e)
	if oom {
		r.events = append(r.events, report.EventRecord{
			AtS: at.Seconds(), Source: source, Kind: string(replica.EventOOM), Target: e.Replica, Detail: "out of GPU memory: " + e.Detail,
		})
	}
	r.mu.Unlock()
	line := fmt.Sprintf("%9s  replica %s %s", fmtClock(at), e.Replica, e.Kind)
	if e.Detail != "" {
		line += ": " + e.Detail
	}
	r.out.println(line)
	if oom {
		r.out.println(fmt.Sprintf("%9s  replica %s %s: out of GPU memory", fmtClock(at), e.Replica, replica.EventOOM))
	}
}

// lineWriter serialises the run's progress lines.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) println(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = io.WriteString(l.w, s+"\n")
}

func (l *lineWriter) printf(format string, args ...any) { l.println(fmt.Sprintf(format, args...)) }
