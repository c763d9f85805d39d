package experiments

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/experiments/loadrun"
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
	p.spec.Workload.ClientTimeouts(&copts)
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
		Targets: targets, Model: r.model, Arrival: p.ac, Workload: p.wc, Seed: p.seed, Grace: p.spec.Workload.GraceOrDefault(),
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
			r.runFault(faultCtx, pf, r.faults.built[i], r.faults.targets[i], gate)
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
