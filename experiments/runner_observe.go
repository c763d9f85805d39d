package experiments

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/llmchaos/llmchaos/faults/replica"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/telemetry/observe"
)

// observeCloseTimeout bounds the end of a run's observers: the last remote
// write push and the spans still queued.
const observeCloseTimeout = 20 * time.Second

// ObserveOptions are the observability of a run: the live /metrics
// endpoint, remote write, tracing and the server-side monitor, as
// `llmchaos run`'s flags set them. The zero value observes nothing.
type ObserveOptions struct {
	// MetricsListen, RemoteWriteURL, RemoteWriteInterval, OTLPEndpoint and
	// ScrapeInterval are observe.Options' fields of the same names.
	MetricsListen       string
	RemoteWriteURL      string
	RemoteWriteInterval time.Duration
	OTLPEndpoint        string
	ScrapeInterval      time.Duration
	// MetricsLinger is observe.Options.Linger: how long the endpoint may
	// stay up after the run for a scraper to read the verdicts.
	MetricsLinger time.Duration
	// Scrape turns the server-side monitor on: it scrapes each endpoint's
	// /metrics (the service's, not its fault proxy's) into the report's
	// server series.
	Scrape bool
	// Warn receives the problems that do not stop the run (a failed
	// scrape, a failed push), from the observers' goroutines. Nil: they
	// are printed on Options.Out.
	Warn func(error)
}

// enabled reports whether any observer is asked for.
func (o ObserveOptions) enabled() bool {
	return o.MetricsListen != "" || o.RemoteWriteURL != "" || o.OTLPEndpoint != "" || o.Scrape
}

// observers is what watches the run: the live observers (metrics
// endpoint, remote write, tracing, server monitor), the monitors of the
// replicas, containers and processes, the GPU samplers, and the run's
// event log. live, gpuSamples and nvml are set when the load starts,
// before the run's goroutines, and only read afterwards; the replica
// events and the event log, written from the run's goroutines, are
// guarded by mu.
type observers struct {
	out   *lineWriter
	opts  ObserveOptions
	clock *runClock

	// live are the run's live observers, started with the load (nil:
	// none); closed once, by teardown.
	live       *observe.Observers
	liveClosed bool
	// gpuSamples samples the simulator's virtual GPUs (nil: none).
	gpuSamples *vgpuSampler
	// nvml samples real GPUs for runs against real servers (nil: none).
	nvml *nvmlSampler

	// dedup passes once what several watchers of one replica report: the
	// faults of a run may name one process, container or pod in several
	// ways, and each has its watcher.
	dedup replica.Deduper

	mu         sync.Mutex
	events     []report.EventRecord
	replicaEvs []replica.Event
}

// newObservers returns the observers of a run, none started, printing on
// out.
func newObservers(out *lineWriter, opts ObserveOptions, clock *runClock) *observers {
	return &observers{out: out, opts: opts, clock: clock}
}

// event records one event at the current run-clock time and prints it.
func (o *observers) event(source, kind, target, detail string) {
	o.eventBy(source, kind, target, detail, "")
}

// eventBy records one event that by did (a person in a game day; "" for
// the run itself) at the current run-clock time, prints it and returns
// it.
func (o *observers) eventBy(source, kind, target, detail, by string) report.EventRecord {
	return o.eventAt(o.clock.now(), source, kind, target, detail, by)
}

// eventAt records one event that happened at at on the run clock (by: a
// person in a game day; "" for the run itself), prints it and returns it.
func (o *observers) eventAt(at time.Duration, source, kind, target, detail, by string) report.EventRecord {
	e := report.EventRecord{AtS: at.Seconds(), Source: source, Kind: kind, Target: target, Detail: detail, By: by}
	o.mu.Lock()
	o.events = append(o.events, e)
	o.mu.Unlock()
	line := fmt.Sprintf("%9s  %s", fmtClock(at), kind)
	if target != "" {
		line += " " + target
	}
	if detail != "" {
		line += ": " + detail
	}
	if by != "" {
		line += " (by " + by + ")"
	}
	o.out.println(report.ShortTarget(line)) // the proxies' addresses are on the run's first lines
	return e
}

// eventIndexed is event, returning the index of the event recorded.
func (o *observers) eventIndexed(source, kind, target, detail string) int {
	e := o.eventBy(source, kind, target, detail, "")
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := len(o.events) - 1; i >= 0; i-- {
		if o.events[i] == e {
			return i
		}
	}
	return -1
}

// amendEvent changes the kind and detail of the i-th event recorded, and
// prints what it says now, at its time.
func (o *observers) amendEvent(i int, kind, detail string) {
	o.mu.Lock()
	if i < 0 || i >= len(o.events) {
		o.mu.Unlock()
		return
	}
	e := &o.events[i]
	e.Kind, e.Detail = kind, detail
	line := fmt.Sprintf("%9s  %s %s: %s", fmtClock(durationOf(e.AtS)), kind, e.Target, detail)
	o.mu.Unlock()
	o.out.println(line)
}

// eventsFrom returns a copy of the events recorded from the i-th on, and
// the number recorded so far (the next call's i).
func (o *observers) eventsFrom(i int) ([]report.EventRecord, int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	i = min(max(i, 0), len(o.events))
	return slices.Clone(o.events[i:]), len(o.events)
}

// eventLog returns a copy of the run's events, in the order recorded.
func (o *observers) eventLog() []report.EventRecord {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.events)
}

// replicaEvents returns a copy of what the replicas did.
func (o *observers) replicaEvents() []replica.Event {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.replicaEvs)
}

// gpuRecords returns the GPU samples: the simulator's virtual GPUs, then
// the real ones.
func (o *observers) gpuRecords() []report.SeriesRecord {
	return append(o.gpuSamples.records(), o.nvml.records()...)
}

// observeOptions are the live observers of plan p's run against
// endpoints for the load pipeline, which starts them on the load's clock;
// nil when nothing is asked for. The observers outlive the load's context
// (observe.Start keeps only its values): closeObservers closes them.
func (ob *observers) observeOptions(p *plan, endpoints []*endpoint) *observe.Options {
	o := ob.opts
	if !o.enabled() {
		return nil
	}
	opts := &observe.Options{
		MetricsListen: o.MetricsListen, RemoteWriteURL: o.RemoteWriteURL, RemoteWriteInterval: o.RemoteWriteInterval,
		OTLPEndpoint: o.OTLPEndpoint, ScrapeInterval: o.ScrapeInterval, Linger: o.MetricsLinger,
		Experiment:      p.spec.Metadata.Name,
		TraceAttributes: map[string]string{"llmchaos.experiment": p.spec.Metadata.Name, "llmchaos.seed": fmt.Sprint(p.seed)},
		Warn:            o.Warn,
	}
	if opts.Warn == nil {
		opts.Warn = func(err error) { ob.out.printf("warning: %v", err) }
	}
	if o.Scrape {
		for _, e := range endpoints {
			opts.ScrapeTargets = append(opts.ScrapeTargets, rootURL(e.url))
		}
	}
	return opts
}

// setObservers takes the observers the load pipeline started (nil: none)
// and says where the live metrics are.
func (o *observers) setObservers(obs *observe.Observers) {
	o.live = obs
	if obs == nil {
		return
	}
	if u := obs.MetricsURL(); u != "" {
		o.out.printf("live metrics at %s", u)
	}
}

// faultActive publishes llmchaos_fault_active for a fault injected or
// reverted.
func (o *observers) faultActive(name, typ string, active bool) {
	if o.live != nil {
		o.live.FaultActive(name, typ, active)
	}
}

// observeDoc puts the server series into doc and publishes its
// thresholds' verdicts, before the caller writes run.json and the HTML.
func (o *observers) observeDoc(doc *report.Document, end time.Duration) {
	if o.live == nil {
		return
	}
	doc.Server = o.live.ServerSeries(end)
	o.live.SetThresholds(doc.Thresholds)
	o.live.SetLost(doc.Requests.Lost)
}

// closeObservers closes the observers once (the last remote write push,
// the spans flushed), under context.WithoutCancel with its own timeout so
// that an aborted run still gets them. A problem is a warning: the run's
// result does not depend on its live outputs.
func (o *observers) closeObservers(ctx context.Context) {
	if o.live == nil || o.liveClosed {
		return
	}
	o.liveClosed = true
	c, cancel := context.WithTimeout(context.WithoutCancel(ctx), observeCloseTimeout+o.opts.MetricsLinger)
	defer cancel()
	if err := o.live.Close(c); err != nil {
		warn := o.opts.Warn
		if warn == nil {
			warn = func(err error) { o.out.printf("warning: %v", err) }
		}
		warn(err)
	}
}

// monitorEnded reports a run-long monitor (events, GPU samples) that
// stopped with an error before the run's end: what it records is then
// incomplete, which the run's output must say rather than hide.
func (o *observers) monitorEnded(ctx context.Context, what string, err error) {
	if err != nil && ctx.Err() == nil {
		o.out.printf("%s stopped early, run.json will miss the rest: %v", what, err)
		o.event(report.EventSourceRunner, "monitor_failed", "", what+": "+err.Error())
	}
}

// startMonitors starts, on wg, the monitors that watch the run until ctx
// ends: the simulator's replicas and virtual GPUs, the real GPUs through
// NVML for a run against real servers, and the containers and processes
// of the replica faults' targets. A monitor that cannot start is said and
// skipped.
func (r *run) startMonitors(ctx context.Context, wg *sync.WaitGroup) {
	if r.sim != nil {
		w, err := replica.NewProcess(replica.TargetParams{Driver: replica.DriverProcess, StateFile: r.sim.env.StateFile})
		if err == nil {
			wg.Go(func() {
				defer r.judge.guard("watching the replicas")
				r.obs.monitorEnded(ctx, "replica events", w.Watch(ctx, func() {}, r.obs.replicaEvent))
			})
		}
		if gs, err := openVGPUSampler(r.sim.env.VGPUDir, r.sim.n); err == nil {
			r.obs.gpuSamples = gs
			wg.Go(func() {
				defer r.judge.guard("sampling GPU memory")
				r.obs.monitorEnded(ctx, "GPU memory samples", gs.run(ctx, r.now))
			})
		} else {
			r.out.printf("no GPU memory samples: %v", err)
		}
	}
	if r.sim == nil {
		// "no GPU: ..." (no driver, no device) is an alarm that
		// `run --quiet` keeps; a build without NVML ("GPU monitor off:
		// built without NVML support ...") is a notice it leaves out.
		if ns := openNVMLSampler(r.now, r.out.println); ns != nil {
			r.obs.nvml = ns
			wg.Go(func() {
				defer r.judge.guard("sampling GPUs through NVML")
				r.obs.monitorEnded(ctx, "NVML GPU samples", ns.mon.Run(ctx))
			})
		}
	}
	for _, tp := range r.watchedTargets() {
		what, emit := "Docker events", r.obs.dockerEvent
		switch tp.Driver {
		case replica.DriverProcess:
			what, emit = "process events ("+tp.String()+")", r.obs.replicaEvent
		case replica.DriverKubernetes:
			what, emit = "Kubernetes events of "+tp.String(), r.obs.kubernetesEvent
		}
		w, err := replica.OpenWatcher(tp)
		if err != nil {
			r.out.printf("no %s: %v", what, err)
			continue
		}
		wg.Go(func() {
			defer r.judge.guard("watching " + what)
			r.obs.monitorEnded(ctx, what, w.Watch(ctx, func() {}, emit))
		})
	}
}

// stopMonitors releases what the monitors held, once they have returned.
func (o *observers) stopMonitors() {
	if o.nvml != nil {
		if err := o.nvml.mon.Close(); err != nil {
			o.out.printf("NVML monitor: %v", err)
		}
	}
}

// watchedTargets are the distinct targets the run watches besides the
// simulator it started: a Kubernetes target's pods (their status changes
// and Events), and those of the run's replica faults: containers (their
// engine events: die, start, health), pods, and processes of a pid file, a
// command-line pattern or another supervisor's state file (exit, start of
// the replacement, healthy again).
func (r *run) watchedTargets() []replica.TargetParams {
	var out []replica.TargetParams
	seen := map[string]bool{}
	kubeKey := func(t replica.TargetParams) string {
		return strings.Join([]string{t.Namespace, t.Selector, t.Kubeconfig, t.Context}, "\x00")
	}
	if r.kube != nil {
		t := r.kube.podTarget()
		seen[kubeKey(t)] = true
		out = append(out, t)
	}
	for _, pf := range r.p.faults {
		params, err := pf.params(r.p.spec.EnvOf(nil))
		if err != nil {
			continue // build reports it when the fault is due
		}
		tp, ok := params.(interface{ Targets() *replica.TargetParams })
		if !ok {
			continue
		}
		t := *tp.Targets() // resolved: its defaults are in
		var key string
		switch {
		case t.Driver == replica.DriverDocker:
			key = fmt.Sprint(t.Labels, t.Containers)
		case t.Driver == replica.DriverKubernetes && t.Validate() == nil:
			if t.Namespace == "" && r.kube != nil && t.Kubeconfig == r.kube.t.Kubeconfig && t.Context == r.kube.t.Context {
				t.Namespace = r.kube.ns
			}
			key = kubeKey(t)
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
func (o *observers) dockerEvent(e replica.Event) {
	o.recordReplicaEvent(e, report.EventSourceDocker)
}

// kubernetesEvent records what a pod of the target did, or what the
// control plane said of it, as replicaEvent does for the simulator's
// replicas.
func (o *observers) kubernetesEvent(e replica.Event) {
	o.recordReplicaEvent(e, report.EventSourceKubernetes)
}

// replicaEvent records what a replica of the simulator, or a process of a
// replica fault's target, did.
func (o *observers) replicaEvent(e replica.Event) {
	o.recordReplicaEvent(e, report.EventSourceReplica)
}

// recordReplicaEvent records e in the run's events under source and prints
// it, unless another watcher reported the same happening already.
func (o *observers) recordReplicaEvent(e replica.Event, source string) {
	if !o.dedup.First(e) {
		return
	}
	at := time.Duration(0)
	if c := o.clock.Load(); c != nil {
		at = max(e.At.Sub(c.Start()), 0)
	}
	rec := report.EventRecord{AtS: at.Seconds(), Source: source, Kind: string(e.Kind), Target: e.Replica, Detail: e.Detail}
	if !e.SourceTime.IsZero() {
		rec.SourceTime = e.SourceTime.UTC().Format(time.RFC3339Nano)
	}
	o.mu.Lock()
	o.replicaEvs = append(o.replicaEvs, e)
	o.events = append(o.events, rec)
	// A simulator replica's OOM shows as its exit status: say it.
	oom := e.Kind != replica.EventOOM && oomExit(e)
	if oom {
		o.events = append(o.events, report.EventRecord{
			AtS: at.Seconds(), Source: source, Kind: string(replica.EventOOM), Target: e.Replica, Detail: "out of GPU memory: " + e.Detail,
		})
	}
	o.mu.Unlock()
	who := "replica"
	if source == report.EventSourceKubernetes {
		who = "kubernetes"
	}
	line := fmt.Sprintf("%9s  %s %s %s", fmtClock(at), who, e.Replica, e.Kind)
	if e.Detail != "" {
		line += ": " + e.Detail
	}
	o.out.println(line)
	if oom {
		o.out.println(fmt.Sprintf("%9s  replica %s %s: out of GPU memory", fmtClock(at), e.Replica, replica.EventOOM))
	}
}
