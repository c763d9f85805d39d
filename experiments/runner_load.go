package experiments

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/pipeline"
	"github.com/llmchaos/llmchaos/pipeline/load"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/xk6-llm/client"
	"github.com/llmchaos/llmchaos/xk6-llm/engine"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// load runs the load (through the load pipeline shared with `llmchaos
// load`) with the faults on its clock and returns when the load has ended
// and every fault's goroutine has returned (each reverts its fault when
// its time is up or when ctx ends).
func (r *run) load(ctx context.Context) (engine.RunStats, error) {
	p := r.p
	if p.script != nil {
		return r.loadScript(ctx)
	}
	if p.spec.Workload.Shards > 1 {
		return r.loadShards(ctx)
	}
	live, err := assertions.NewLive(p.stops)
	if err != nil {
		return engine.RunStats{}, err
	}
	copts := r.clientOptions()
	p.spec.Workload.ClientTimeouts(&copts)
	targets := make([]string, len(r.endpoints))
	for i, e := range r.endpoints {
		targets[i] = e.load
	}
	var route func(int) (string, string, error)
	if r.kube != nil && r.kube.t.URL == "" {
		route = r.kube.route
	}
	l, err := load.Run(ctx, load.Config{
		Targets: targets, Model: r.model, Arrival: p.ac, Workload: p.wc, Seed: p.seed, Grace: p.spec.Workload.Grace.D(),
		Client: copts, Recorder: recording.Options{SLO: p.slo, SaveRequests: r.opts.SaveRequests}, Observe: r.obs.observeOptions(p, r.endpoints),
		Tagger: r.tag, Route: route, Live: r.liveLoad(), Switch: r.liveSwitch(), NoPreflight: r.opts.NoPreflight || p.spec.Workload.PreflightOff(), Warn: func(w string) { r.out.println("warning: " + w) },
		Alongside: func(pr *pipeline.Run) func(engine.RunStats, error) {
			return r.alongside(ctx, pr, live)
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

// clientOptions are the load client's options for the target: its key
// and headers (the simulator takes no key: none is sent), and the run's
// dial hook.
func (r *run) clientOptions() client.Options {
	copts := client.Options{Dial: r.dialer()}
	if t := r.p.spec.Target.Client(); t != nil {
		copts.APIKeyEnv, copts.Headers = t.APIKeyEnv, headerOf(t.Headers)
	} else {
		copts.Getenv = func(string) string { return "" }
	}
	return copts
}

// alongside starts what runs with the load once it is built: the steady
// state check before the faults, the faults on their timeline, the stop
// conditions, the live loop and the monitors. It returns the function
// that stops them all once the load ended and waits for them.
func (r *run) alongside(ctx context.Context, l *pipeline.Run, live *assertions.Live) func(engine.RunStats, error) {
	p := r.p
	r.rec = l.Recorder
	r.obs.setObservers(l.Observers)
	r.clock.Store(l.Clock)
	r.obs.event(report.EventSourceRunner, "load_started", "", p.describeLoad())

	stopProbes := r.startProbes(ctx, l.Clock)
	faultCtx, stopFaults := context.WithCancel(ctx)
	var wg sync.WaitGroup
	gate := make(chan struct{})
	wg.Go(func() {
		defer r.judge.guard("checking the steady state before the faults")
		r.judge.checkBefore(faultCtx, r.rec, gate)
	})
	for i, pf := range p.faults {
		if p.live {
			break // the faults are the live timeline's steps
		}
		wg.Go(func() {
			defer r.judge.guard("running fault " + pf.spec.Name)
			r.runFault(faultCtx, pf, r.faults.built[i], r.faults.targets[i], gate)
		})
	}
	wg.Go(func() {
		defer r.judge.guard("checking the promql stop conditions")
		r.judge.promQLStops(faultCtx)
	})
	done := make(chan struct{})
	wg.Go(func() {
		defer r.judge.guard("checking the run live")
		r.judge.liveLoop(done, live, r.rec, r.progress())
	})
	r.startMonitors(faultCtx, &wg)
	if l := r.opts.Live; l != nil {
		l.start(faultCtx, r, gate)
	}
	return func(stats engine.RunStats, err error) {
		if err == nil {
			r.obs.event(report.EventSourceRunner, "load_ended", "", fmt.Sprintf("%d requests scheduled", stats.Scheduled))
		}
		stopProbes()
		stopFaults()
		if l := r.opts.Live; l != nil {
			l.close()
		}
		close(done)
		wg.Wait()
		r.obs.stopMonitors()
	}
}

// liveLoad is the live run's load control (nil: not a live run).
func (r *run) liveLoad() *engine.LiveLoad {
	if r.opts.Live == nil {
		return nil
	}
	return r.opts.Live.load
}

// liveSwitch is the live run's workload switch (nil: not a live run).
func (r *run) liveSwitch() *workload.Switch {
	if r.opts.Live == nil {
		return nil
	}
	return r.opts.Live.sw
}

// tag is the engine's Tagger: it labels each result with the phase and
// fault of the moment at which it was sent (scheduled, for one never
// sent), and with its endpoint's URL rather than its proxy's. It runs on
// the engine's goroutines; a panic in it stops the run (reverting every
// fault) instead of crashing the process.
func (r *run) tag(at time.Duration, tags *recording.Tags) {
	defer r.judge.guard("tagging a result of the load")
	tags.Phase, tags.Fault = r.tl.at(at)
	if u, ok := r.tagURL[tags.Endpoint]; ok {
		tags.Endpoint = u
	}
	if h := r.opts.hooks; h != nil && h.onTag != nil {
		h.onTag(at, tags)
	}
}

// progress returns the live loop's progress hook: it prints a line of
// load figures every Progress of the run clock.
func (r *run) progress() func(now time.Duration) {
	var last time.Duration
	return func(now time.Duration) {
		if r.p.spec.Workload.Shards > 1 {
			return // nothing is recorded until the shards end
		}
		if every := r.opts.Progress; every > 0 && now-last >= every-every/10 {
			last = now
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
