package telemetry

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/llmchaos/llmchaos/internal/promexpo"
	"github.com/llmchaos/llmchaos/xk6-llm/metrics"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// Metric names, as exported. They are part of the project's contract with
// its users (DESIGN §3: the metric name with an llmchaos_ prefix and base
// units).
const (
	NameTTFT         = "llmchaos_ttft_seconds"
	NameITL          = "llmchaos_itl_seconds"
	NameTPOT         = "llmchaos_tpot_seconds"
	NameE2E          = "llmchaos_e2e_seconds"
	NameRequests     = "llmchaos_requests_total"
	NameScheduled    = "llmchaos_requests_scheduled_total"
	NameLost         = "llmchaos_requests_lost"
	NameSendLag      = "llmchaos_send_lag_seconds"
	NameInFlight     = "llmchaos_in_flight"
	NameOutputTokens = "llmchaos_output_tokens_total"
	NameFaultActive  = "llmchaos_fault_active"
	NameThresholdOK  = "llmchaos_threshold_ok"
)

// MetricNames lists every metric family the Exporter registers, in the order
// of the package documentation.
func MetricNames() []string {
	return []string{NameTTFT, NameITL, NameTPOT, NameE2E, NameSendLag, NameRequests, NameScheduled,
		NameLost, NameInFlight, NameOutputTokens, NameFaultActive, NameThresholdOK}
}

// Classic histogram buckets, in seconds; see the package documentation.
var (
	// TTFTBuckets are llmchaos_ttft_seconds' classic buckets: dense from
	// 50 ms to 1 s, where interactive TTFT SLOs sit, then out to two minutes
	// for queues under overload.
	TTFTBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5,
		0.75, 1, 1.5, 2, 3, 5, 10, 20, 30, 60, 120}
	// ITLBuckets are the classic buckets of llmchaos_itl_seconds and
	// llmchaos_tpot_seconds: a decode step of a busy GPU takes 10–100 ms;
	// stalls during faults reach seconds.
	ITLBuckets = []float64{0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04,
		0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 1, 2.5, 5}
	// E2EBuckets are llmchaos_e2e_seconds' classic buckets: generations of a
	// few hundred tokens take seconds, long ones minutes.
	E2EBuckets = []float64{0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 7.5, 10, 15, 20, 30, 45, 60,
		90, 120, 180, 300, 600}
	// SendLagBuckets are llmchaos_send_lag_seconds' classic buckets: a
	// client that keeps up sends within a millisecond of the schedule; one
	// that does not falls behind by seconds.
	SendLagBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
		0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}
)

// Native histogram settings shared by the four latency histograms.
const (
	// NativeBucketFactor bounds the growth from one native bucket to the
	// next (schema 3: 2^(1/8) ≈ 1.09).
	NativeBucketFactor = 1.1
	// NativeMaxBuckets caps the native buckets of one histogram; past it
	// the resolution is halved instead of growing further.
	NativeMaxBuckets = 160
)

// Options configures an Exporter, which always has a registry of its own.
type Options struct {
	// Metrics is the run's metric table: its custom metrics are exported
	// (AddSample) as llmchaos_<name> series. Nil: built-ins only.
	Metrics *metrics.Registry
	// RunLabels are constant labels of every series, naming the run
	// (LabelRun, LabelExperiment), so that the series of several runs in
	// one Prometheus stay apart. A label with an empty value is left out.
	RunLabels map[string]string
}

// Label names of the live series. LabelClass is the workload's request
// class and LabelErrorClass the error class of DESIGN §3, as the JSON run
// report spells them (tags' "class", requests.errors_by_class).
const (
	LabelRun        = "run"         // the run (constant, Options.RunLabels)
	LabelExperiment = "experiment"  // the experiment's name (constant, Options.RunLabels)
	LabelEndpoint   = "endpoint"    // the target's base URL, password redacted
	LabelPhase      = "phase"       // baseline, fault, recovery, after; "" outside experiments
	LabelClass      = "class"       // the request class of the workload ("" for none)
	LabelOutcome    = "outcome"     // ok, failed, cancelled, dropped
	LabelErrorClass = "error_class" // connect, reset, …; "" for ok and dropped requests
)

// requestLabels are the labels of every per-request series: a bounded set
// (targets × phases × request classes), never a per-request value.
var requestLabels = []string{LabelEndpoint, LabelPhase, LabelClass}

// Exporter holds a run's live Prometheus series. Create it with New.
type Exporter struct {
	reg          *promexpo.Registry
	ttft, itl    *promexpo.HistogramVec
	tpot, e2e    *promexpo.HistogramVec
	sendLag      *promexpo.HistogramVec
	requests     *promexpo.CounterVec
	scheduled    *promexpo.CounterVec
	lost         *promexpo.Gauge
	inFlight     *promexpo.Gauge
	outputTokens *promexpo.CounterVec
	faultActive  *promexpo.GaugeVec
	thresholdOK  *promexpo.GaugeVec
	custom       map[string]customSeries // by metric name; read-only after New

	// tuples holds the series of each (endpoint, phase, class) seen, as an
	// immutable map replaced under tuplesMu when a tuple is new, so that
	// Observe reads it with one atomic load and no lock.
	tuples   atomic.Pointer[map[tupleKey]*tupleSeries]
	tuplesMu sync.Mutex
}

// tupleKey is one (endpoint, phase, request class) label tuple.
type tupleKey struct{ endpoint, phase, class string }

// tupleSeries are the series of one tuple, resolved once.
type tupleSeries struct {
	ttft, itl, tpot, e2e, sendLag *promexpo.Histogram
	scheduled, outputTokens       *promexpo.Counter
	byOutcome                     [nOutcomes][nClasses]*promexpo.Counter
}

// customSeries is one custom metric's series: a histogram for a trend
// (seconds for durations), counters for a counter and for a rate (its
// samples, and those that passed, labelled ok="true"/"false"), a gauge for
// a gauge.
type customSeries struct {
	m     metrics.Metric
	hist  *promexpo.HistogramVec
	count *promexpo.CounterVec
	gauge *promexpo.GaugeVec
}

// classes indexes recording.ErrorClass for the pre-created request counters;
// index 0 is recording.ClassNone.
var classes = [...]recording.ErrorClass{recording.ClassNone, recording.ClassConnect, recording.ClassReset, recording.ClassTimeout,
	recording.ClassHTTP4xx, recording.ClassHTTP429, recording.ClassHTTP5xx, recording.ClassProtocol, recording.ClassCancelled}

const (
	nClasses  = len(classes)
	nOutcomes = int(recording.OutcomeDropped) + 1
)

// classIndex returns c's index in classes, or -1 for a class this package
// does not know (it is then counted through the CounterVec's map).
func classIndex(c recording.ErrorClass) int {
	switch c {
	case recording.ClassNone:
		return 0
	case recording.ClassConnect:
		return 1
	case recording.ClassReset:
		return 2
	case recording.ClassTimeout:
		return 3
	case recording.ClassHTTP4xx:
		return 4
	case recording.ClassHTTP429:
		return 5
	case recording.ClassHTTP5xx:
		return 6
	case recording.ClassProtocol:
		return 7
	case recording.ClassCancelled:
		return 8
	}
	return -1
}

// validPair reports whether a result with outcome o can carry class c; those
// pairs are created at zero with their tuple.
func validPair(o recording.Outcome, c recording.ErrorClass) bool {
	switch o {
	case recording.OutcomeOK, recording.OutcomeDropped:
		return c == recording.ClassNone
	case recording.OutcomeFailed:
		return c != recording.ClassNone && c != recording.ClassCancelled
	case recording.OutcomeCancelled:
		return c == recording.ClassCancelled
	}
	return false
}

// New creates the series on a registry of the Exporter's own; see
// Options.
func New(opts Options) (*Exporter, error) {
	reg := promexpo.NewRegistry(opts.RunLabels)
	table := metrics.NewRegistry()
	row := func(name string) metrics.Metric { m, _ := table.Lookup(name); return m }
	var errs []error
	keep := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	hist := func(name string, buckets []float64) *promexpo.HistogramVec {
		m := row(name)
		h, err := reg.HistogramVec(promexpo.HistogramOpts{
			Opts:               promexpo.Opts{Name: m.PromName, Help: m.PromHelp},
			Buckets:            buckets,
			NativeBucketFactor: NativeBucketFactor,
			NativeMaxBuckets:   NativeMaxBuckets,
		}, requestLabels...)
		keep(err)
		return h
	}
	counterVec := func(name, help string, labels ...string) *promexpo.CounterVec {
		c, err := reg.CounterVec(promexpo.Opts{Name: name, Help: help}, labels...)
		keep(err)
		return c
	}
	gaugeVec := func(name, help string, labels ...string) *promexpo.GaugeVec {
		g, err := reg.GaugeVec(promexpo.Opts{Name: name, Help: help}, labels...)
		keep(err)
		return g
	}
	gauge := func(name, help string) *promexpo.Gauge {
		g, err := reg.Gauge(promexpo.Opts{Name: name, Help: help})
		keep(err)
		return g
	}
	e := &Exporter{
		reg:     reg,
		ttft:    hist("ttft", TTFTBuckets),
		itl:     hist("itl", ITLBuckets),
		tpot:    hist("tpot", ITLBuckets),
		e2e:     hist("e2e", E2EBuckets),
		sendLag: hist("send_lag", SendLagBuckets),
		requests: counterVec(row("requests").PromName, row("requests").PromHelp,
			append(slices.Clone(requestLabels), LabelOutcome, LabelErrorClass)...),
		scheduled: counterVec(NameScheduled,
			"Requests the schedule made due (sent, dropped or still waiting for a slot).", requestLabels...),
		lost:     gauge(row("requests_lost").PromName, row("requests_lost").PromHelp),
		inFlight: gauge(NameInFlight, "Requests sent and not yet ended."),
		outputTokens: counterVec(NameOutputTokens,
			"Output tokens of ok requests (usage.completion_tokens, else content chunks).", requestLabels...),
		faultActive: gaugeVec(NameFaultActive, "1 while the fault is applied, 0 after it was reverted.", "fault", "type"),
		thresholdOK: gaugeVec(NameThresholdOK, "1 while the threshold on the metric holds, 0 while it fails.", "metric"),
	}
	e.tuples.Store(&map[tupleKey]*tupleSeries{})
	e.custom = make(map[string]customSeries)
	for _, m := range opts.Metrics.Custom() {
		cs, err := newCustomSeries(reg, m)
		keep(err)
		e.custom[m.Name] = cs
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("telemetry: register metrics: %w", err)
	}
	return e, nil
}

// series returns the series of tags' tuple, creating them (every valid
// outcome and error class pair at zero, so that rate() and error-ratio
// queries see a series from the first scrape) the first time the tuple is
// seen.
func (e *Exporter) series(tags *recording.Tags) *tupleSeries {
	k := tupleKey{tags.Endpoint, tags.Phase, tags.Class}
	if ts, ok := (*e.tuples.Load())[k]; ok {
		return ts
	}
	e.tuplesMu.Lock()
	defer e.tuplesMu.Unlock()
	old := *e.tuples.Load()
	if ts, ok := old[k]; ok {
		return ts
	}
	lv := []string{k.endpoint, k.phase, k.class}
	ts := &tupleSeries{
		ttft: e.ttft.WithLabelValues(lv...), itl: e.itl.WithLabelValues(lv...),
		tpot: e.tpot.WithLabelValues(lv...), e2e: e.e2e.WithLabelValues(lv...),
		sendLag:      e.sendLag.WithLabelValues(lv...),
		scheduled:    e.scheduled.WithLabelValues(lv...),
		outputTokens: e.outputTokens.WithLabelValues(lv...),
	}
	for o := recording.OutcomeOK; o <= recording.OutcomeDropped; o++ {
		for i, c := range classes {
			if validPair(o, c) {
				ts.byOutcome[o][i] = e.requests.WithLabelValues(k.endpoint, k.phase, k.class, o.String(), string(c))
			}
		}
	}
	m := make(map[tupleKey]*tupleSeries, len(old)+1)
	maps.Copy(m, old)
	m[k] = ts
	e.tuples.Store(&m)
	return ts
}

// customLabels are the tags of a custom metric's series.
var customLabels = []string{LabelEndpoint, LabelPhase, "fault", LabelClass}

func newCustomSeries(reg *promexpo.Registry, m metrics.Metric) (customSeries, error) {
	cs := customSeries{m: m}
	o := promexpo.Opts{Name: m.PromName, Help: m.PromHelp}
	var err error
	switch m.Kind {
	case metrics.Trend:
		cs.hist, err = reg.HistogramVec(promexpo.HistogramOpts{Opts: o, Buckets: promexpo.DefBuckets,
			NativeBucketFactor: NativeBucketFactor, NativeMaxBuckets: NativeMaxBuckets}, customLabels...)
	case metrics.Rate:
		cs.count, err = reg.CounterVec(o, append([]string{"ok"}, customLabels...)...)
	case metrics.Counter:
		cs.count, err = reg.CounterVec(o, customLabels...)
	default:
		cs.gauge, err = reg.GaugeVec(o, customLabels...)
	}
	return cs, err
}

// AddSample exports value v of custom metric name under tags, as the
// recorder's AddSample records it: a duration trend in seconds (v is in
// ms), a rate as one more sample labelled ok="true" when v is non-zero, a
// counter adds v, a gauge is set to v. A metric that was not in
// Options.Metrics when New ran is refused. Safe for concurrent use.
func (e *Exporter) AddSample(name string, tags recording.Tags, v float64) error {
	cs, ok := e.custom[name]
	if !ok {
		return fmt.Errorf("telemetry: metric %q is not a custom metric of this exporter", name)
	}
	lv := []string{tags.Endpoint, tags.Phase, tags.Fault, tags.Class}
	switch cs.m.Kind {
	case metrics.Trend:
		if cs.m.IsTime() {
			v /= 1000
		}
		cs.hist.WithLabelValues(lv...).Observe(v)
	case metrics.Rate:
		cs.count.WithLabelValues(append([]string{strconv.FormatBool(v != 0)}, lv...)...).Inc()
	case metrics.Counter:
		if v < 0 {
			return fmt.Errorf("telemetry: counter %q: negative sample %v", name, v)
		}
		cs.count.WithLabelValues(lv...).Add(v)
	default:
		cs.gauge.WithLabelValues(lv...).Set(v)
	}
	return nil
}

// Observe records one Result. It is called once per result, from any
// goroutine; it does not retain res. A Result with LiveEvents had its ttft
// and itl observed by ObserveEvents as they arrived; they are not observed
// again.
func (e *Exporter) Observe(res *recording.Result) {
	ts := e.series(&res.Tags)
	e.countRequest(ts, res)
	// Which value of res feeds each trend, and of which results, is
	// recording's definition (Metric.Sample), as the recorder's.
	if v, ok := recording.MetricSendLag.Sample(res); ok {
		ts.sendLag.Observe(seconds(max(v, 0)))
	}
	if !res.LiveEvents {
		if v, ok := recording.MetricTTFT.Sample(res); ok {
			ts.ttft.Observe(seconds(v))
		}
		for _, g := range res.ITLMicros {
			ts.itl.Observe(float64(g) / 1e6)
		}
	}
	if v, ok := recording.MetricE2E.Sample(res); ok {
		ts.e2e.Observe(seconds(v))
	}
	if v, ok := recording.MetricTPOT.Sample(res); ok {
		ts.tpot.Observe(seconds(v))
	}
	if v, ok := recording.MetricOutputTokens.Sample(res); ok && v > 0 {
		ts.outputTokens.Add(float64(v))
	}
}

// seconds is a sample in microseconds (Metric.Sample) in seconds.
func seconds(micros int64) float64 { return float64(micros) / 1e6 }

// ObserveEvents records a running request's first token (ttft) and
// chunk gaps (itl) as they arrive (see recording.StreamEvents), so that a
// long stream shows in llmchaos_ttft_seconds and llmchaos_itl_seconds
// while it runs. Safe for concurrent use; it does not retain ev. It fits
// engine.Config.ObserveEvents.
func (e *Exporter) ObserveEvents(ev *recording.StreamEvents) {
	ts := e.series(ev.Tags)
	if ev.FirstToken {
		ts.ttft.Observe(ev.TTFT.Seconds())
	}
	for _, g := range ev.ITLMicros {
		ts.itl.Observe(float64(g) / 1e6)
	}
}

// Scheduled counts one request the schedule made due, under its tags
// (endpoint, phase, request class): llmchaos_requests_scheduled_total.
// Against llmchaos_requests_total it shows a client that cannot keep up.
// Safe for concurrent use; it does not retain tags.
func (e *Exporter) Scheduled(tags *recording.Tags) { e.series(tags).scheduled.Inc() }

// SetLost sets llmchaos_requests_lost, the run's sent requests that never
// ended as a Result (the report's requests.lost; it must be 0).
func (e *Exporter) SetLost(n int64) { e.lost.Set(float64(n)) }

// countRequest adds one to llmchaos_requests_total{..., outcome,
// error_class}, through the tuple's pre-created counters when the pair is a
// known one.
func (e *Exporter) countRequest(ts *tupleSeries, res *recording.Result) {
	o, c := res.Outcome, res.Class
	if int(o) < nOutcomes {
		if i := classIndex(c); i >= 0 {
			if ctr := ts.byOutcome[o][i]; ctr != nil {
				ctr.Inc()
				return
			}
		}
	}
	e.requests.WithLabelValues(res.Tags.Endpoint, res.Tags.Phase, res.Tags.Class, o.String(), string(c)).Inc()
}

// SetInFlight sets llmchaos_in_flight, the requests sent and not yet ended
// (the recorder's Live.InFlight).
func (e *Exporter) SetInFlight(n int64) { e.inFlight.Set(float64(n)) }

// FaultActive sets llmchaos_fault_active{fault=name, type=typ} to 1 when
// active, else 0. The runner calls it when it has injected a fault and again
// when it has reverted it, so dashboards can draw the fault window.
func (e *Exporter) FaultActive(name, typ string, active bool) {
	e.faultActive.WithLabelValues(name, typ).Set(b2f(active))
}

// ThresholdOK sets llmchaos_threshold_ok{metric} to 1 when the threshold on
// metric holds, else 0. metric is the threshold's key as written
// ("ttft{phase:fault}").
func (e *Exporter) ThresholdOK(metric string, ok bool) {
	e.thresholdOK.WithLabelValues(metric).Set(b2f(ok))
}

// Gatherer returns what Handler serves, for remote write.
func (e *Exporter) Gatherer() promexpo.Gatherer { return e.reg }

// Handler serves the gathered series in the format the scraper asks for
// (protobuf, with native histograms, for Prometheus; text otherwise).
func (e *Exporter) Handler() http.Handler { return promexpo.Handler(e.reg) }

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
