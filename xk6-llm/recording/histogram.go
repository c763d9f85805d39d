package recording

import (
	"fmt"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/llmchaos/llmchaos/xk6-llm/metrics"
)

// Metric names a recorded distribution. The String values are DESIGN §3's
// names, used verbatim in thresholds, reports and Prometheus.
type Metric uint8

// Metrics with an HDR histogram per tag tuple, in the order of their rows
// in the metric table (the built-in trends with a JSON key), which names
// them. Latencies are recorded in microseconds, token counts in tokens; the
// latencies come first, before MetricInputTokens, so a new latency is a
// constant above it (and a row above input_tokens in the table).
const (
	MetricTTFT         Metric = iota // send → first content chunk (any outcome that got one)
	MetricITL                        // gaps between content chunks, pooled (any outcome)
	MetricTPOT                       // (e2e − ttft) / (output_tokens − 1), ok requests with > 1 token
	MetricE2E                        // send → end of stream, ok requests
	MetricSendLag                    // actual − scheduled send, every sent request
	MetricClientQueue                // wait for an in-flight slot, every sent request
	MetricConnect                    // new connection set-up, requests that opened one
	MetricInputTokens                // prompt tokens of ok requests
	MetricOutputTokens               // output tokens of ok requests
	// NumMetrics is the number of metrics: valid metrics are 0 … NumMetrics−1.
	NumMetrics
)

// String returns the metric's DESIGN §3 name ("ttft", "itl", …), from the
// metric table (metrics.Builtin).
func (m Metric) String() string {
	if m < NumMetrics {
		return recordedNames()[m]
	}
	return fmt.Sprintf("metric(%d)", uint8(m))
}

// recordedNames names the metrics the recorder keeps histograms of, in
// Metric order: the built-in trends the JSON report carries
// (metrics.Builtin, in table order).
func recordedNames() [NumMetrics]string {
	var out [NumMetrics]string
	i := 0
	for _, m := range metrics.Builtin() {
		if m.Kind == metrics.Trend && m.JSONKey != "" && i < len(out) {
			out[i] = m.Name
			i++
		}
	}
	return out
}

// ParseMetric returns the metric named name (a DESIGN §3 name).
func ParseMetric(name string) (Metric, error) {
	names := recordedNames()
	for m, n := range names {
		if n == name {
			return Metric(m), nil
		}
	}
	return 0, fmt.Errorf("unknown metric %q: want one of %s", name, strings.Join(names[:], ", "))
}

// IsLatency reports whether m is a duration recorded in microseconds; the
// others are token counts. It agrees with the table's metrics.Metric.IsTime
// (a test checks) and is a comparison because the recorder calls it per
// value: the latencies are the metrics before MetricInputTokens.
func (m Metric) IsLatency() bool { return m < MetricInputTokens }

// Histogram geometry. Latencies cover 1 µs … 1 h and token counts 1 … 10⁷,
// both with 3 significant digits (values below 2048 are exact); values
// outside the range are clamped to it, so a record is never lost.
const (
	LatencyMaxMicros  = int64(time.Hour / time.Microsecond)
	TokensMax         = int64(10_000_000)
	HistogramSigFigs  = 3
	histogramMinValue = 1
)

// NewHistogram returns an empty HDR histogram with the geometry used for m.
// Histograms of the same metric merge exactly.
func NewHistogram(m Metric) *hdrhistogram.Histogram {
	return hdrhistogram.New(histogramMinValue, histogramMax(m), HistogramSigFigs)
}

func histogramMax(m Metric) int64 {
	if m.IsLatency() {
		return LatencyMaxMicros
	}
	return TokensMax
}

// clampRecord records v into h after clamping it into [0, max]; HDR rejects
// values out of range, and a lost record would break the accounting.
func clampRecord(h *hdrhistogram.Histogram, v, limit int64) {
	if v < 0 {
		v = 0
	} else if v > limit {
		v = limit
	}
	_ = h.RecordValue(v) // cannot fail: v is within the histogram's range
}

// micros converts a duration to whole microseconds, the unit of latency
// histograms.
func micros(d time.Duration) int64 { return int64(d / time.Microsecond) }

// Sample returns the value of res that feeds trend m, in the metric's
// unit (µs for latencies, tokens for token counts), and whether res has
// one. It is the one definition of which Result value feeds each trend and
// of which results: the recorder's histograms and the Prometheus
// exporter (telemetry) both read it, so a new trend is a row of the metric
// table, a Metric constant and a case here. itl, several values per result
// (Result.ITLMicros), has no single sample (ok false).
func (m Metric) Sample(res *Result) (int64, bool) {
	sent := res.Outcome != OutcomeDropped && res.Sent > 0
	ok := res.Outcome == OutcomeOK
	switch m {
	case MetricTTFT:
		if d, got := res.TTFT(); got && sent {
			return micros(d), true
		}
	case MetricSendLag:
		if sent {
			return micros(res.SendLag()), true
		}
	case MetricClientQueue:
		if sent {
			return micros(res.ClientQueue()), true
		}
	case MetricConnect:
		if sent && res.Connect > 0 {
			return micros(res.Connect), true
		}
	case MetricE2E:
		if d, got := res.E2E(); got && ok {
			return micros(d), true
		}
	case MetricTPOT:
		if d, got := res.TPOT(); got && ok {
			return micros(d), true
		}
	case MetricInputTokens:
		if ok {
			return int64(inputTokenCount(res)), true
		}
	case MetricOutputTokens:
		if ok {
			return int64(res.OutputTokenCount()), true
		}
	}
	return 0, false
}

// sampled are the trends with one Sample per result, in the order the
// recorder records them.
var sampled = [...]Metric{MetricSendLag, MetricClientQueue, MetricConnect, MetricTTFT, MetricE2E, MetricTPOT, MetricInputTokens, MetricOutputTokens}

// Distribution summarises one histogram in the metric's unit (µs for
// latencies, tokens for token counts). Quantiles follow HDR's rules: the
// nearest rank, reported as the highest value equivalent to the bucket it
// falls in (exact below 2048, within 0.1% above).
type Distribution struct {
	Count  int64
	Mean   float64
	StdDev float64
	Min    int64
	P50    int64
	P90    int64
	P95    int64
	P99    int64
	P999   int64
	Max    int64
}

// Summarize computes the Distribution of h; an empty or nil histogram gives
// the zero Distribution.
func Summarize(h *hdrhistogram.Histogram) Distribution {
	if h == nil || h.TotalCount() == 0 {
		return Distribution{}
	}
	return Distribution{
		Count:  h.TotalCount(),
		Mean:   h.Mean(),
		StdDev: h.StdDev(),
		Min:    h.Min(),
		P50:    h.ValueAtPercentile(50),
		P90:    h.ValueAtPercentile(90),
		P95:    h.ValueAtPercentile(95),
		P99:    h.ValueAtPercentile(99),
		P999:   h.ValueAtPercentile(99.9),
		Max:    h.Max(),
	}
}
