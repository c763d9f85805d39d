package experiments

import (
	"context"
	"fmt"
	"time"

	"github.com/llmchaos/llmchaos/experiments/spec"
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

// observeOptions are the run's observers for the load pipeline, which
// starts them on the load's clock; nil when nothing is asked for. The
// observers outlive the load's context (observe.Start keeps only its
// values): closeObservers closes them.
func (r *run) observeOptions() *observe.Options {
	o := r.opts.Observe
	if !o.enabled() {
		return nil
	}
	opts := &observe.Options{
		MetricsListen: o.MetricsListen, RemoteWriteURL: o.RemoteWriteURL, RemoteWriteInterval: o.RemoteWriteInterval,
		OTLPEndpoint: o.OTLPEndpoint, ScrapeInterval: o.ScrapeInterval, Linger: o.MetricsLinger,
		Experiment:      r.p.spec.Metadata.Name,
		TraceAttributes: map[string]string{"llmchaos.experiment": r.p.spec.Metadata.Name, "llmchaos.seed": fmt.Sprint(r.p.seed)},
		Warn:            o.Warn,
	}
	if opts.Warn == nil {
		opts.Warn = func(err error) { r.out.printf("warning: %v", err) }
	}
	if o.Scrape {
		for _, e := range r.endpoints {
			opts.ScrapeTargets = append(opts.ScrapeTargets, rootURL(e.url))
		}
	}
	return opts
}

// setObservers takes the observers the load pipeline started (nil: none)
// and says where the live metrics are.
func (r *run) setObservers(obs *observe.Observers) {
	r.obs = obs
	if obs == nil {
		return
	}
	if u := obs.MetricsURL(); u != "" {
		r.out.printf("live metrics at %s", u)
	}
}

// faultActive publishes llmchaos_fault_active for a fault injected or
// reverted.
func (r *run) faultActive(name, typ string, active bool) {
	if r.obs != nil {
		r.obs.FaultActive(name, typ, active)
	}
}

// observeDoc puts the server series into doc and publishes its
// thresholds' verdicts, before the caller writes run.json and the HTML.
func (r *run) observeDoc(doc *report.Document, end time.Duration) {
	if r.obs == nil {
		return
	}
	doc.Server = r.obs.ServerSeries(end)
	r.obs.SetThresholds(doc.Thresholds)
	r.obs.SetLost(doc.Requests.Lost)
}

// closeObservers closes the observers once (the last remote write push,
// the spans flushed), under context.WithoutCancel with its own timeout so
// that an aborted run still gets them. A problem is a warning: the run's
// result does not depend on its live outputs.
func (r *run) closeObservers(ctx context.Context) {
	if r.obs == nil || r.obsClosed {
		return
	}
	r.obsClosed = true
	c, cancel := context.WithTimeout(context.WithoutCancel(ctx), observeCloseTimeout+r.opts.Observe.MetricsLinger)
	defer cancel()
	if err := r.obs.Close(c); err != nil {
		warn := r.opts.Observe.Warn
		if warn == nil {
			warn = func(err error) { r.out.printf("warning: %v", err) }
		}
		warn(err)
	}
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
		params, err := spec.DecodeParams(pf.index, pf.spec, pf.ft, nil)
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
