package experiments

import (
	"context"
	"fmt"
	"time"

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
