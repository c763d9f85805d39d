package observe

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/internal/promexpo"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/telemetry"
	"github.com/llmchaos/llmchaos/telemetry/remotewrite"
	"github.com/llmchaos/llmchaos/telemetry/scrape"
	"github.com/llmchaos/llmchaos/telemetry/tracing"
	"github.com/llmchaos/llmchaos/xk6-llm/metrics"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// Defaults applied by Start to zero Options fields.
const (
	// DefaultInFlightInterval is how often Options.InFlight is read into
	// llmchaos_in_flight: once a second, as the live line.
	DefaultInFlightInterval = time.Second
	// DefaultJob is the job label remote write adds to every series unless
	// Options.ExternalLabels names another.
	DefaultJob = "llmchaos"
	// MaxLinger bounds Options.Linger.
	MaxLinger = 5 * time.Minute
	// DefaultLinger is the CLI's --metrics-linger: Prometheus's default
	// scrape interval.
	DefaultLinger = time.Minute
)

// Options says which observers to start. Every field is optional; a zero
// value starts nothing. Start applies the defaults named beside the fields.
type Options struct {
	// MetricsListen is the address of the live /metrics endpoint; "" for
	// none. An address without a host (":9464") binds 127.0.0.1, port 0
	// picks a free one (see telemetry.ListenAddr); MetricsURL says where
	// it ended up.
	MetricsListen string
	// Linger keeps the metrics endpoint up after the run, in Close, until
	// a scraper has read the final values (llmchaos_threshold_ok): until a
	// scrape that begins in Close is answered, for at most Linger and at
	// most twice the interval seen between the last two scrapes. Skipped
	// when nothing scraped the endpoint during the run. 0: no wait; at
	// most MaxLinger.
	Linger time.Duration
	// Run and Experiment label every live series (run="…",
	// experiment="…"), pushed or scraped, so that runs stay apart in one
	// Prometheus. Run "" is the run clock's start in UTC
	// (20060102T150405Z); Experiment "" leaves the label out.
	Run        string
	Experiment string
	// RemoteWriteURL is a Prometheus remote write (v1) receiver, e.g.
	// http://127.0.0.1:9090/api/v1/write; "" for none.
	RemoteWriteURL string
	// RemoteWriteInterval is the time between pushes
	// (remotewrite.DefaultInterval).
	RemoteWriteInterval time.Duration
	// ExternalLabels are added to every pushed series that lacks them;
	// job="llmchaos" (DefaultJob) unless they name a job.
	ExternalLabels map[string]string

	// OTLPEndpoint is an OTLP/HTTP collector (http://host:4318); "" for
	// no tracing.
	OTLPEndpoint string
	// TraceAttributes are more resource attributes of the spans (the run's
	// name, its seed).
	TraceAttributes map[string]string

	// ScrapeTargets are the targets' base URLs (or metrics URLs) the
	// server-side monitor scrapes; none: no monitor. Duplicates are
	// scraped once.
	ScrapeTargets []string
	// ScrapeInterval is the time between scrapes (scrape.DefaultInterval).
	ScrapeInterval time.Duration

	// Clock is the run clock, the time since RunStart, that stamps the
	// monitor's samples (nil: the time since Start).
	Clock func() time.Duration
	// RunStart is the wall-clock instant of the run clock's zero, which
	// places spans in time (zero: derived from Clock at Start).
	RunStart time.Time

	// InFlight, when set, is read every InFlightInterval into
	// llmchaos_in_flight, and once more by Close. It must be cheap and
	// safe to call from another goroutine.
	InFlight func() int64
	// InFlightInterval is how often InFlight is read
	// (DefaultInFlightInterval).
	InFlightInterval time.Duration

	// Metrics, when set, is the run's metric table: its custom metrics (a
	// script's checks, Trends, Rates, Counters and Gauges), all registered
	// before Start, are exported as llmchaos_<name> series fed by
	// AddSample.
	Metrics *metrics.Registry

	// Warn receives the problems that do not stop a run, at most once per
	// cause (see the package documentation), from the observers'
	// goroutines. Nil: they are dropped, and only Close reports.
	Warn func(error)
}

// Validate reports every problem of o at once. It fills in nothing.
func (o Options) Validate() error {
	var errs []error
	if o.MetricsListen != "" {
		if _, err := telemetry.ListenAddr(o.MetricsListen); err != nil {
			errs = append(errs, err)
		}
	}
	if o.RemoteWriteURL != "" {
		rw := remotewrite.Options{URL: o.RemoteWriteURL, Gatherer: promexpo.NewRegistry(nil),
			Interval: o.RemoteWriteInterval, ExternalLabels: o.ExternalLabels}
		if err := rw.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if o.OTLPEndpoint != "" {
		if _, err := tracing.TracesURL(o.OTLPEndpoint); err != nil {
			errs = append(errs, err)
		}
	}
	for _, t := range o.ScrapeTargets {
		if _, err := scrape.MetricsURL(t); err != nil {
			errs = append(errs, fmt.Errorf("server monitor: %w", err))
		}
	}
	if o.Linger > MaxLinger {
		errs = append(errs, fmt.Errorf("metrics linger %v is longer than %v", o.Linger, MaxLinger))
	}
	for name, d := range map[string]time.Duration{"metrics linger": o.Linger, "remote write interval": o.RemoteWriteInterval,
		"scrape interval": o.ScrapeInterval, "in-flight interval": o.InFlightInterval} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("%s %v must not be negative", name, d))
		}
	}
	return errors.Join(errs...)
}

// withDefaults returns o with its zero fields set, start being Start's
// moment.
func (o Options) withDefaults(start time.Time) Options {
	if o.Clock == nil {
		o.Clock = func() time.Duration { return time.Since(start) }
	}
	if o.RunStart.IsZero() {
		o.RunStart = start.Add(-o.Clock())
	}
	if o.InFlightInterval == 0 {
		o.InFlightInterval = DefaultInFlightInterval
	}
	if o.ScrapeInterval == 0 {
		o.ScrapeInterval = scrape.DefaultInterval
	}
	if o.Run == "" {
		o.Run = o.RunStart.UTC().Format("20060102T150405Z")
	}
	labels := map[string]string{"job": DefaultJob}
	maps.Copy(labels, o.ExternalLabels)
	o.ExternalLabels = labels
	return o
}

// Observers are the running observers of one run. Create them with Start
// and end them with Close.
type Observers struct {
	// lingerEnd, once closed (EndLinger), ends the linger at once.
	lingerEnd     chan struct{}
	lingerEndOnce sync.Once

	exporter *telemetry.Exporter // nil without MetricsListen and RemoteWriteURL
	server   *telemetry.Server   // nil without MetricsListen
	writer   *remotewrite.Writer // nil without RemoteWriteURL
	tracer   *tracing.Tracer     // nil without OTLPEndpoint
	monitor  *scrape.Monitor     // nil without ScrapeTargets
	targets  []string            // the monitor's endpoints, deduplicated
	inFlight func() int64
	linger   time.Duration
	rwURL    string // as given, to redact from errors
	otlpURL  string

	stop  context.CancelFunc // ends the monitor, the in-flight poller and the writer
	wg    sync.WaitGroup     // those goroutines
	rwErr error              // the writer's Run result, written before wg.Done

	closeOnce sync.Once
	closeErr  error
}

// Start validates opts and starts the observers it asks for: the metrics
// endpoint is bound when Start returns (MetricsURL has its address). On an
// error nothing is left running.
func Start(ctx context.Context, opts Options) (*Observers, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults(time.Now())
	o := &Observers{inFlight: opts.InFlight, linger: opts.Linger, lingerEnd: make(chan struct{})}
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	o.stop = stop
	ok := false
	defer func() {
		if !ok {
			stop()
			o.wg.Wait()
			if o.tracer != nil {
				_ = o.tracer.Shutdown(context.WithoutCancel(ctx)) // nothing was recorded
			}
			if o.server != nil {
				_ = o.server.Wait()
			}
		}
	}()

	if opts.MetricsListen != "" || opts.RemoteWriteURL != "" {
		exp, err := telemetry.New(telemetry.Options{ // a registry of its own
			Metrics:   opts.Metrics,
			RunLabels: map[string]string{telemetry.LabelRun: opts.Run, telemetry.LabelExperiment: opts.Experiment}})
		if err != nil {
			return nil, fmt.Errorf("live metrics: %w", err)
		}
		o.exporter = exp
	}
	o.rwURL, o.otlpURL = opts.RemoteWriteURL, opts.OTLPEndpoint
	if opts.OTLPEndpoint != "" {
		tr, err := tracing.New(ctx, tracing.Options{Endpoint: opts.OTLPEndpoint, RunStart: opts.RunStart,
			Attributes: opts.TraceAttributes})
		if err != nil {
			return nil, err
		}
		o.tracer = tr
	}
	if len(opts.ScrapeTargets) > 0 {
		for _, t := range opts.ScrapeTargets {
			if !slices.Contains(o.targets, t) {
				o.targets = append(o.targets, t)
			}
		}
		warned := make(map[string]bool)        // OnError runs on Run's goroutine only
		warnedUnknown := make(map[string]bool) // so does OnEngine
		mon, err := scrape.New(scrape.Options{
			Endpoints: o.targets, Interval: opts.ScrapeInterval, Now: opts.Clock,
			OnError: func(endpoint string, err error) {
				if opts.Warn == nil || warned[endpoint] {
					return
				}
				warned[endpoint] = true
				opts.Warn(fmt.Errorf("server monitor: %s: %s; the run goes on without this target's server metrics",
					redactURL(endpoint), redactText(err.Error(), endpoint)))
			},
			OnEngine: func(endpoint, engine string) {
				if engine != scrape.EngineUnknown || opts.Warn == nil || warnedUnknown[endpoint] {
					return
				}
				warnedUnknown[endpoint] = true
				opts.Warn(fmt.Errorf("server monitor: %s: its /metrics has no series of a known engine (%s); "+
					"the run goes on with only this target's up series", redactURL(endpoint), strings.Join(scrape.Engines(), ", ")))
			},
		})
		if err != nil {
			return nil, err
		}
		o.monitor = mon
	}
	if opts.RemoteWriteURL != "" {
		var warned atomic.Bool
		w, err := remotewrite.New(remotewrite.Options{
			URL: opts.RemoteWriteURL, Gatherer: o.exporter.Gatherer(), Interval: opts.RemoteWriteInterval,
			ExternalLabels: opts.ExternalLabels,
			OnError: func(err error) {
				if opts.Warn != nil && warned.CompareAndSwap(false, true) {
					opts.Warn(fmt.Errorf("%w; the run goes on and pushes again", redactErr(err, opts.RemoteWriteURL)))
				}
			},
		})
		if err != nil {
			return nil, err
		}
		o.writer = w
	}
	if opts.MetricsListen != "" {
		srv, err := o.exporter.Serve(runCtx, opts.MetricsListen)
		if err != nil {
			return nil, err
		}
		o.server = srv
	}

	if o.monitor != nil {
		o.wg.Go(func() { o.monitor.Run(runCtx) })
	}
	if o.exporter != nil && o.inFlight != nil {
		o.wg.Go(func() { o.pollInFlight(runCtx, opts.InFlightInterval) })
	}
	if o.writer != nil {
		o.wg.Go(func() { o.rwErr = o.writer.Run(runCtx) })
	}
	ok = true
	return o, nil
}

// pollInFlight copies InFlight into the gauge every interval until ctx
// ends.
func (o *Observers) pollInFlight(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		o.exporter.SetInFlight(o.inFlight())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// MetricsURL returns the live metrics page, http://127.0.0.1:PORT/metrics
// with the port actually bound, or "" when no endpoint was asked for.
func (o *Observers) MetricsURL() string {
	if o.server == nil {
		return ""
	}
	return o.server.URL()
}

// Observe records one Result in the live series and as a span. It is
// cheap, safe for concurrent use and does not keep res: it fits
// engine.Config.Observe.
func (o *Observers) Observe(res *recording.Result) {
	if o.exporter != nil {
		o.exporter.Observe(res)
	}
	if o.tracer != nil {
		o.tracer.Record(res)
	}
}

// ObserveEvents records a running request's first token and chunks in
// the live series as they arrive (telemetry.Exporter.ObserveEvents). Cheap,
// safe for concurrent use, does not keep ev: it fits
// engine.Config.ObserveEvents.
func (o *Observers) ObserveEvents(ev *recording.StreamEvents) {
	if o.exporter != nil {
		o.exporter.ObserveEvents(ev)
	}
}

// AddSample exports one sample of a custom metric of Options.Metrics in
// its live series (see telemetry.Exporter.AddSample); a metric registered
// after Start is not exported. Safe for concurrent use; it fits
// js.Hooks.Sample.
func (o *Observers) AddSample(name string, tags recording.Tags, v float64) {
	if o.exporter != nil {
		_ = o.exporter.AddSample(name, tags, v) // only an unknown metric fails: it has no series
	}
}

// Scheduled counts one request the schedule made due
// (llmchaos_requests_scheduled_total): it fits engine.Config.Scheduled.
func (o *Observers) Scheduled(tags *recording.Tags) {
	if o.exporter != nil {
		o.exporter.Scheduled(tags)
	}
}

// SetLost sets llmchaos_requests_lost to the run's lost requests (the
// report's requests.lost), once the run is over.
func (o *Observers) SetLost(n int64) {
	if o.exporter != nil {
		o.exporter.SetLost(n)
	}
}

// SetInFlight sets llmchaos_in_flight, for callers that track it
// themselves instead of giving Options.InFlight.
func (o *Observers) SetInFlight(n int64) {
	if o.exporter != nil {
		o.exporter.SetInFlight(n)
	}
}

// FaultActive sets llmchaos_fault_active{fault=name, type=typ}: the runner
// calls it with true once the fault is injected and with false once it is
// reverted, so dashboards can shade the fault's window.
func (o *Observers) FaultActive(name, typ string, active bool) {
	if o.exporter != nil {
		o.exporter.FaultActive(name, typ, active)
	}
}

// ThresholdOK sets llmchaos_threshold_ok{metric} for one threshold key
// ("ttft{phase:fault}").
func (o *Observers) ThresholdOK(metric string, ok bool) {
	if o.exporter != nil {
		o.exporter.ThresholdOK(metric, ok)
	}
}

// SetThresholds sets llmchaos_threshold_ok for every threshold key of an
// evaluated run (report.Document.Thresholds): 1 when every expression of
// the key held, else 0. Call it before Close, so that the last remote write
// push carries the verdicts.
func (o *Observers) SetThresholds(results []report.ThresholdResult) {
	ok := make(map[string]bool, len(results))
	var keys []string
	for _, r := range results {
		k := r.Key()
		if _, seen := ok[k]; !seen {
			keys = append(keys, k)
			ok[k] = true
		}
		ok[k] = ok[k] && r.OK
	}
	for _, k := range keys {
		o.ThresholdOK(k, ok[k])
	}
}

// SetLiveThresholds sets llmchaos_threshold_ok for the keys of the
// abortOnFail thresholds among ths after a live check that found failed
// failing (assertions.Live.Check): 0 for a key with a failed expression,
// else 1. A threshold the live check did not judge yet (before its
// DelayAbortEval, or no data in the window) counts as holding, as it does
// for the check. Thresholds without AbortOnFail are left alone: only the
// final evaluation (SetThresholds) judges them.
func (o *Observers) SetLiveThresholds(ths []assertions.Threshold, failed assertions.Outcomes) {
	if o.exporter == nil {
		return
	}
	bad := make(map[string]bool, len(failed))
	for _, f := range failed {
		bad[f.Threshold.Key()] = true
	}
	done := make(map[string]bool, len(ths))
	for _, th := range ths {
		k := th.Key()
		if !th.AbortOnFail || done[k] {
			continue
		}
		done[k] = true
		o.exporter.ThresholdOK(k, !bad[k])
	}
}

// Samples returns a copy of the server monitor's samples so far, oldest
// first (none without ScrapeTargets).
func (o *Observers) Samples() []scrape.Sample {
	if o.monitor == nil {
		return nil
	}
	return o.monitor.Samples()
}

// vllmNames maps a sample name to the name and unit of its series in the
// report: vLLM's, whichever engine the samples came from.
var vllmNames = map[string][2]string{
	scrape.KVCacheUsage:     {"vllm:kv_cache_usage_perc", "ratio"},
	scrape.RequestsRunning:  {"vllm:num_requests_running", "count"},
	scrape.RequestsWaiting:  {"vllm:num_requests_waiting", "count"},
	scrape.Preemptions:      {"vllm:num_preemptions_total", "count"},
	scrape.PromptTokens:     {"vllm:prompt_tokens_total", "count"},
	scrape.GenerationTokens: {"vllm:generation_tokens_total", "count"},
	scrape.Up:               {"up", ""},
}

// ServerSeries returns the monitor's samples taken up to end on the run
// clock (the run's end: later scrapes happen while the reports are
// written) as the report's server series; see the package documentation.
func (o *Observers) ServerSeries(end time.Duration) []report.SeriesRecord {
	samples := o.Samples()
	failed := make(map[string]bool)
	for _, s := range samples {
		if s.Name == scrape.Up && s.Value == 0 && s.At <= end {
			failed[s.Endpoint] = true
		}
	}
	var out []report.SeriesRecord
	for _, s := range samples {
		nu, known := vllmNames[s.Name]
		if s.At > end || !known || (s.Name == scrape.Up && !failed[s.Endpoint]) {
			continue
		}
		ep := ""
		if len(o.targets) > 1 {
			ep = redactURL(s.Endpoint)
		}
		out = report.AddPoint(out, ep, nu[0], s.At, s.Value)
	}
	engines := make(map[string]string) // by series endpoint as written
	for _, t := range o.targets {
		ep := ""
		if len(o.targets) > 1 {
			ep = redactURL(t)
		}
		engines[ep] = o.monitor.Engine(t)
	}
	for i := range out {
		for _, nu := range vllmNames {
			if nu[0] == out[i].Name {
				out[i].Unit = nu[1]
			}
		}
		out[i].Engine = engines[out[i].Endpoint]
	}
	return out
}

// Close ends the observers: it reads the in-flight gauge a last time,
// stops the monitor, makes the last remote write push, exports the spans
// still queued (within ctx) and stops the metrics endpoint, then returns
// what failed, joined (see the package documentation). Later calls return
// the same.
func (o *Observers) Close(ctx context.Context) error {
	o.closeOnce.Do(func() {
		if o.exporter != nil && o.inFlight != nil {
			o.exporter.SetInFlight(o.inFlight())
		}
		o.lingerForScrape(ctx)
		o.stop()
		o.wg.Wait()
		var errs []error
		if o.rwErr != nil {
			errs = append(errs, redactErr(o.rwErr, o.rwURL))
		}
		if o.tracer != nil {
			if err := o.tracer.Shutdown(ctx); err != nil {
				errs = append(errs, redactErr(err, o.otlpURL))
			}
		}
		if o.server != nil {
			if err := o.server.Wait(); err != nil {
				errs = append(errs, err)
			}
		}
		o.closeErr = errors.Join(errs...)
	})
	return o.closeErr
}

// minLingerWait is the least lingerForScrape waits for the scrape after the
// end when the scrapes came faster than every second (within Linger).
const minLingerWait = 2 * time.Second

// lingerForScrape keeps the endpoint up until a scrape that begins now is
// answered (see Options.Linger), so that the final values, the thresholds'
// verdicts above all, reach a scraper before the endpoint goes away.
func (o *Observers) lingerForScrape(ctx context.Context) {
	if o.server == nil || o.linger <= 0 {
		return
	}
	n := o.server.Scrapes()
	if n == 0 {
		return // nothing scrapes this endpoint
	}
	wait := o.linger
	if gap := o.server.ScrapeGap(); gap > 0 {
		// Two scrape intervals, but never less than minLingerWait: a
		// scraper polling fast on a busy machine can be late by more
		// than its own interval.
		wait = min(wait, max(2*gap, minLingerWait))
	}
	lctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if o.lingerEnd != nil {
		go func() {
			select {
			case <-o.lingerEnd:
				cancel()
			case <-lctx.Done():
			}
		}()
	}
	o.server.WaitScrape(lctx, n)
}

// EndLinger ends Close's linger (Options.Linger) at once, or keeps it from
// starting: a signal after the run's end, or one that ended the run, says
// that whoever sent it wants the process gone (an orchestrator's grace
// period, a terminal's Ctrl-C). Safe from any goroutine, idempotent; the
// rest of Close (flushing the outputs) is not cut short.
func (o *Observers) EndLinger() {
	if o.lingerEnd == nil {
		return
	}
	o.lingerEndOnce.Do(func() { close(o.lingerEnd) })
}

// redactURL returns u with any password replaced (url.URL.Redacted); u as
// given when it does not parse.
func redactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	return p.Redacted()
}

// redactedError is an error whose text lost a password; errors.As and
// errors.Is still see the error it wraps.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// redactErr returns err with rawURL's password, if it has one, removed from
// its text: the libraries quote the URLs they were given.
func redactErr(err error, rawURL string) error {
	if msg := redactText(err.Error(), rawURL); msg != err.Error() {
		return &redactedError{msg: msg, err: err}
	}
	return err
}

// redactText removes endpoint's password from msg, which may quote the
// endpoint's URL.
func redactText(msg, endpoint string) string {
	p, err := url.Parse(endpoint)
	if err != nil || p.User == nil {
		return msg
	}
	if pw, ok := p.User.Password(); ok && pw != "" {
		msg = strings.ReplaceAll(msg, pw, "xxxxx")
	}
	return msg
}
