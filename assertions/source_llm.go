package assertions

import (
	"math"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/llmchaos/llmchaos/xk6-llm/metrics"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// SummarySource is the Source of a recorded run: a recording.Summary from
// Recorder.Finish, or one rebuilt from a saved JSON report. Thresholds are
// evaluated against it at the end of a run and when a saved run is
// re-evaluated.
//
// What each metric reads:
//
//   - durations ttft, itl, tpot, e2e, send_lag, client_queue and the token
//     distributions input_tokens, output_tokens: the run's HDR histograms
//     of the tag tuples the selection matches, merged; durations in
//     milliseconds, exactly the figures of the JSON report's metrics.
//     recovery_time and oom_recovery_time are not recorded by the load
//     engine: they have no data here (the experiment runner supplies them).
//   - rates: the summed counters of the matching tuples (recording.Counts.RateParts).
//   - requests: the requests the engine sent (recording.Summary.Sent) for the
//     whole run; under a tag selection, the finished requests (ok, failed,
//     cancelled) of the matching tuples, since a request that never came
//     back carries no tags.
//   - requests_lost: sent − finished over the whole run, whatever the
//     selection: a lost request has no Result and so no tags, and a
//     must-be-zero invariant is safer reported run-wide than as 0.
//   - goodput, requests_per_s, output_tokens_per_s: good requests (those
//     that met every recording.SLO the recorder was given), ok requests and
//     output tokens of ok requests, divided by the time the selection
//     covers. goodput has no data when the run had no SLO (no --goodput).
//
// The time a selection covers (for counters' rate and for per-second
// values) is the run's duration when the selection names no phase and no
// fault. A phase or a fault covers only part of the run, which the Summary
// does not record; unless WithSpan says how long it lasted, such a
// selection has no data for those aggregations rather than a wrong figure.
//
// A SummarySource is safe for concurrent use. It caches each merged
// histogram, so several expressions on one key merge it once.
type SummarySource struct {
	sum  *recording.Summary
	span func(sel Tags) (time.Duration, bool)

	mu    sync.Mutex
	dists map[distKey]Distribution
}

var _ Source = (*SummarySource)(nil)

type distKey struct {
	m   recording.Metric
	sel Tags
}

// SourceOption configures NewSummarySource.
type SourceOption func(*SummarySource)

// WithSpan sets how long the part of the run a selection covers lasted,
// for selections that name a phase or a fault (the experiment runner knows
// its timeline); ok false means not known. Selections that name neither
// always cover the whole run.
func WithSpan(fn func(sel Tags) (span time.Duration, ok bool)) SourceOption {
	return func(s *SummarySource) { s.span = fn }
}

// NewSummarySource returns the Source of sum. sum must not be nil.
func NewSummarySource(sum *recording.Summary, opts ...SourceOption) *SummarySource {
	s := &SummarySource{sum: sum, dists: make(map[distKey]Distribution)}
	for _, o := range opts {
		o(s)
	}
	return s
}

// filter converts a selection to the recorder's tag filter (same fields).
func filter(sel Tags) recording.TagFilter {
	return recording.TagFilter{Phase: sel.Phase, Fault: sel.Fault, Class: sel.Class, Endpoint: sel.Endpoint, Scenario: sel.Scenario, Extra: sel.Extra}
}

// spanOf is the time sel covers; ok is false when it is not known.
func (s *SummarySource) spanOf(sel Tags) (time.Duration, bool) {
	if sel.Phase == "" && sel.Fault == "" {
		return s.sum.Duration, s.sum.Duration > 0
	}
	if s.span == nil {
		return 0, false
	}
	d, ok := s.span(sel)
	return d, ok && d > 0
}

// Distribution returns the merged histogram of metric over the tuples sel
// matches, in milliseconds for durations; nil for metrics the recorder does
// not keep.
func (s *SummarySource) Distribution(metric string, sel Tags) Distribution {
	m, err := recording.ParseMetric(metric)
	if err != nil {
		if c := s.sum.Custom(metric, filter(sel)); c != nil && c.Hist != nil && c.Count > 0 {
			return sinkDist{c}
		}
		return nil
	}
	k := distKey{m, sel}
	s.mu.Lock()
	defer s.mu.Unlock()
	if d, ok := s.dists[k]; ok {
		return d
	}
	d := newHDRDist(s.sum.Histogram(m, filter(sel)), m)
	s.dists[k] = d
	return d
}

// Ratio returns the rate's numerator and denominator summed over the tuples
// sel matches.
func (s *SummarySource) Ratio(metric string, sel Tags) (hits, total int64) {
	c := s.sum.Counts(filter(sel))
	hits, total, err := c.RateParts(metric)
	if err != nil {
		if cs := s.sum.Custom(metric, filter(sel)); cs != nil && cs.Kind == metrics.Rate {
			return cs.Passes, cs.Count
		}
		return 0, 0
	}
	return hits, total
}

// Counter returns requests or requests_lost (see SummarySource), or a
// custom counter's sum rounded to an integer, and the time sel covers (0
// when not known).
func (s *SummarySource) Counter(metric string, sel Tags) (int64, time.Duration) {
	span, _ := s.spanOf(sel)
	switch metric {
	case "requests":
		if sel.IsZero() {
			return s.sum.Sent, span
		}
		c := s.sum.Counts(filter(sel))
		return c.Finished(), span
	case "requests_lost":
		c := s.sum.Counts(recording.TagFilter{})
		return s.sum.Sent - c.Finished(), span
	}
	if cs := s.sum.Custom(metric, filter(sel)); cs != nil && cs.Kind == metrics.Counter {
		return int64(math.Round(cs.Sum)), span
	}
	return 0, span
}

// Value returns goodput or a per-second throughput (requests_per_s,
// input_tokens_per_s, output_tokens_per_s, total_tokens_per_s) over the
// time sel covers, or a custom gauge's last value.
func (s *SummarySource) Value(metric string, sel Tags) (float64, bool) {
	if cs := s.sum.Custom(metric, filter(sel)); cs != nil && cs.Kind == metrics.Gauge {
		return cs.Last, cs.Count > 0
	}
	span, ok := s.spanOf(sel)
	if !ok {
		return 0, false
	}
	return perSecond(metric, s.sum.Counts(filter(sel)), s.sum.SLO, span)
}

// perSecond computes a KindValue metric from counters over span.
func perSecond(metric string, c recording.Counts, slo recording.SLO, span time.Duration) (float64, bool) {
	if span <= 0 {
		return 0, false
	}
	var n int64
	switch metric {
	case "goodput":
		if !slo.Given() {
			return 0, false
		}
		n = c.Good
	case "requests_per_s":
		n = c.OK
	case "input_tokens_per_s":
		n = c.InputTokens
	case "output_tokens_per_s":
		n = c.OutputTokens
	case "total_tokens_per_s":
		n = c.InputTokens + c.OutputTokens
	default:
		return 0, false
	}
	return float64(n) / span.Seconds(), true
}

// sinkDist is a Distribution over a custom trend, in the trend's unit.
type sinkDist struct{ s *metrics.Sink }

var _ Distribution = sinkDist{}

// Count is the number of samples.
func (d sinkDist) Count() int64 { return d.s.Count }

// Mean is HDR's mean.
func (d sinkDist) Mean() float64 { return d.s.Mean() }

// Min is the smallest sample.
func (d sinkDist) Min() float64 { return d.s.Min() }

// Max is the largest sample.
func (d sinkDist) Max() float64 { return d.s.Max() }

// Quantile is HDR's ValueAtQuantile.
func (d sinkDist) Quantile(q float64) float64 { return d.s.Quantile(q) }

// hdrDist is a Distribution over an HDR histogram, scaled to the metric's
// threshold unit (µs → ms for latencies).
type hdrDist struct {
	h   *hdrhistogram.Histogram
	div float64
}

var _ Distribution = hdrDist{}

func newHDRDist(h *hdrhistogram.Histogram, m recording.Metric) Distribution {
	if h == nil || h.TotalCount() == 0 {
		return nil
	}
	div := 1.0
	if m.IsLatency() {
		div = 1000
	}
	return hdrDist{h: h, div: div}
}

// Count is the number of samples.
func (d hdrDist) Count() int64 { return d.h.TotalCount() }

// Mean is HDR's mean (bucket midpoints).
func (d hdrDist) Mean() float64 { return d.h.Mean() / d.div }

// Min is the lowest value of the lowest bucket.
func (d hdrDist) Min() float64 { return float64(d.h.Min()) / d.div }

// Max is the highest value of the highest bucket.
func (d hdrDist) Max() float64 { return float64(d.h.Max()) / d.div }

// Quantile is HDR's ValueAtQuantile.
func (d hdrDist) Quantile(q float64) float64 { return float64(d.h.ValueAtQuantile(q)) / d.div }

// WindowSource is the Source of a rolling window of a running (or recorded)
// run, for Live: Recorder.Window or Summary.Window gives the window.
//
// A window keeps, per second, the counters summed over every tag tuple and
// low-precision histograms (within 1.6%) of ttft, e2e, itl and tpot only.
// It therefore answers:
//
//   - ttft, e2e, itl, tpot (milliseconds), every rate, requests (finished
//     requests in the window), and goodput, requests_per_s and
//     output_tokens_per_s over the window's length;
//   - requests_lost as 0: a request still in flight is not lost yet, so
//     lost requests are known only at the end of the run;
//   - nothing for the other distributions (send_lag, client_queue, token
//     counts, recovery times).
//
// A selection with tags is answered only when every request of the window
// carries them: Within says which tags those are (the runner knows the
// window lies in the fault phase of fault "oom", say). Any other selection
// has no data, which Live does not treat as a failure.
//
// WindowSource is a small value built for each check; it does not change
// Window and is safe for concurrent reads.
type WindowSource struct {
	// Window is the window's aggregate; nil has no data.
	Window *recording.WindowStats
	// Within holds the tags every request of the window carries.
	Within Tags
	// SLO is the run's goodput objectives; goodput has no data without.
	SLO recording.SLO
}

var _ Source = WindowSource{}

// covers reports whether the window can answer a selection.
func (w WindowSource) covers(sel Tags) bool { return w.Window != nil && sel.Matches(w.Within) }

// Distribution returns the window's histogram of ttft, e2e, itl or tpot in
// milliseconds; nil for other metrics and selections it cannot answer.
func (w WindowSource) Distribution(metric string, sel Tags) Distribution {
	if !w.covers(sel) {
		return nil
	}
	m, err := recording.ParseMetric(metric)
	if err != nil {
		return nil
	}
	h := w.Window.Histogram(m)
	if h == nil || h.Count() == 0 {
		return nil
	}
	return logDist{h}
}

// Ratio returns the rate's parts over the window.
func (w WindowSource) Ratio(metric string, sel Tags) (hits, total int64) {
	if !w.covers(sel) {
		return 0, 0
	}
	hits, total, err := w.Window.Counts.RateParts(metric)
	if err != nil {
		return 0, 0
	}
	return hits, total
}

// Counter returns the finished requests of the window (requests_lost: 0)
// and the window's length.
func (w WindowSource) Counter(metric string, sel Tags) (int64, time.Duration) {
	if !w.covers(sel) {
		return 0, 0
	}
	span := w.Window.To - w.Window.From
	if metric == "requests" {
		return w.Window.Counts.Finished(), span
	}
	return 0, span
}

// Value returns goodput or a per-second throughput (requests_per_s,
// input_tokens_per_s, output_tokens_per_s, total_tokens_per_s) over the
// window's length. Output tokens are those that streamed in the window,
// by event time (the metric table's Series column), so that a window
// inside a long stream sees its tokens.
func (w WindowSource) Value(metric string, sel Tags) (float64, bool) {
	if !w.covers(sel) {
		return 0, false
	}
	c := w.Window.Counts
	c.OutputTokens = c.StreamedTokens
	return perSecond(metric, c, w.SLO, w.Window.To-w.Window.From)
}

// logDist is a Distribution over a window's LogHistogram (µs), in ms.
type logDist struct{ h *recording.LogHistogram }

var _ Distribution = logDist{}

// Count is the number of samples.
func (d logDist) Count() int64 { return d.h.Count() }

// Mean is the mean of bucket midpoints.
func (d logDist) Mean() float64 { return d.h.Mean() / 1000 }

// Min is the midpoint of the lowest bucket.
func (d logDist) Min() float64 { return float64(d.h.Min()) / 1000 }

// Max is the midpoint of the highest bucket.
func (d logDist) Max() float64 { return float64(d.h.Max()) / 1000 }

// Quantile is the bucket midpoint at percentile q.
func (d logDist) Quantile(q float64) float64 { return float64(d.h.ValueAtPercentile(q)) / 1000 }
