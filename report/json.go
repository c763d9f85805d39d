package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/llmchaos/llmchaos/xk6-llm/metrics"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// hdrV2 selects hdrhistogram-go's V2 compressed encoding.
const hdrV2 = hdrhistogram.V2CompressedEncodingCookieBase

// SchemaVersion is the version of the JSON run report written by this
// package. Later versions only add fields.
const SchemaVersion = 1

// Document is the JSON run report (schema_version 1, see SCHEMA.md). Field
// names are a public contract: later issues add fields, never rename them.
type Document struct {
	SchemaVersion int    `json:"schema_version"`
	ToolVersion   string `json:"tool_version"`
	// Name is the run's or the experiment's name (JUnit's testsuite name);
	// empty when none was given.
	Name      string         `json:"name,omitempty"`
	StartedAt time.Time      `json:"started_at"`
	DurationS float64        `json:"duration_s"`
	Seed      int64          `json:"seed"`
	Config    map[string]any `json:"config"`
	SLO       *SLO           `json:"slo,omitempty"`
	// Experiment is the experiment file the run executed (llmchaos run);
	// absent for a plain load.
	Experiment *Experiment `json:"experiment,omitempty"`
	// Shard says which part of a sharded load the run was (--shard);
	// absent for a whole load and in a merged report.
	Shard *Shard `json:"shard,omitempty"`
	// Verdict is VerdictPass, VerdictFail, VerdictAborted or VerdictNone
	// (no thresholds; see Verdict). Build sets VerdictNone; SetThresholds
	// and Evaluate set it from the thresholds' outcomes.
	Verdict string `json:"verdict"`
	// Abort says why an aborted run ended early (its cause: a stop
	// condition, a signal, a steady state that did not hold, an error);
	// absent when the run was not aborted.
	Abort *Abort `json:"abort,omitempty"`
	// MarkedFailed is set when a k6-style script called exec.test.fail():
	// the run went on to its end and failed (k6's exit code 110). It holds
	// the reason the first call gave ("test marked as failed" when none).
	MarkedFailed string `json:"marked_failed,omitempty"`
	// Checks are a k6-style script's check() results by name, in the
	// order they first ran, each with its group's path ("" for the root,
	// "::outer::inner" inside groups); absent for a run without checks.
	Checks []Check `json:"checks,omitempty"`
	// Regressions are the figures that regressed against the run history
	// when the run was checked with --fail-on-regression: each fails the
	// run (MarkRegressed). Absent when there was none, or no such check.
	Regressions []Regression `json:"regressions,omitempty"`
	// Score is the run's resilience score (ComputeScore), set by the
	// command that ran the experiment; absent for a plain load and in
	// reports of earlier versions.
	Score *Score `json:"score,omitempty"`
	// Thresholds holds one entry per threshold expression evaluated, in
	// order; empty (never null) when none was given.
	Thresholds []ThresholdResult `json:"thresholds"`
	// Phases is the experiment's timeline (baseline, fault, recovery,
	// after), in order; absent for a plain load.
	Phases []PhaseRecord `json:"phases,omitempty"`
	// Faults holds one entry per fault of the experiment, in plan order.
	Faults []FaultRecord `json:"faults,omitempty"`
	// Recovery holds recovery_time per fault.
	Recovery []RecoveryRecord `json:"recovery,omitempty"`
	// Consistency is the consistency probes' record (an experiment with
	// probes:); absent otherwise.
	Consistency *Consistency `json:"consistency,omitempty"`
	// Events lists what happened during the run, in time order.
	Events []EventRecord `json:"events,omitempty"`
	// SteadyState holds the steady-state probes before and after the load.
	SteadyState *SteadyState `json:"steady_state,omitempty"`
	// MergedFrom lists the runs a merged document was made of (Merge);
	// absent for a single run.
	MergedFrom []MergedRun `json:"merged_from,omitempty"`
	// ShardsLost counts the shards of a sharded load whose report (or
	// request lines) did not come back whole: their requests are not in
	// the document, which merges the others. Absent when none was lost.
	ShardsLost  int         `json:"shards_lost,omitempty"`
	Requests    Requests    `json:"requests"`
	Metrics     Metrics     `json:"metrics"`
	Throughput  Throughput  `json:"throughput"`
	Quality     Quality     `json:"quality"`
	Concurrency Concurrency `json:"concurrency"`
	Timeseries  []SecondRow `json:"timeseries"`
	// Server holds the server-side monitor series scraped from the
	// targets' /metrics during the run.
	Server []SeriesRecord `json:"server,omitempty"`
	// GPU holds GPU memory samples taken during the run.
	GPU        []SeriesRecord `json:"gpu,omitempty"`
	Histograms Histograms     `json:"histograms"`
	// CustomMetrics lists the run's custom metrics (registered at run time)
	// with their run-wide figures; absent when there were none.
	CustomMetrics []CustomMetric `json:"custom_metrics,omitempty"`
	// ClientSaturated is true when the load generator itself could not keep
	// to its schedule (see Saturation): the figures then understate the load
	// asked for. ClientSaturatedReason says which bound was crossed.
	ClientSaturated       bool   `json:"client_saturated"`
	ClientSaturatedReason string `json:"client_saturated_reason,omitempty"`

	run *recording.Summary
}

// SLO is the per-request goodput objectives of the run, in milliseconds
// (0: not given).
type SLO struct {
	TTFTMs float64 `json:"ttft_ms,omitempty"`
	TPOTMs float64 `json:"tpot_ms,omitempty"`
	E2EMs  float64 `json:"e2e_ms,omitempty"`
}

// Requests is the request accounting. Lost must be 0.
type Requests struct {
	Scheduled     int64            `json:"scheduled"`
	Sent          int64            `json:"sent"`
	OK            int64            `json:"ok"`
	Failed        int64            `json:"failed"`
	Cancelled     int64            `json:"cancelled"`
	Dropped       int64            `json:"dropped"`
	Lost          int64            `json:"lost"`
	ErrorsByClass map[string]int64 `json:"errors_by_class"`
	// TopErrors holds, per error class, its most frequent error message
	// (cut to MaxErrorMessage characters) and how many failed requests
	// carried it; absent when none failed with a message.
	TopErrors map[string]TopError `json:"top_errors,omitempty"`
	// Reconnects counts requests sent again on a fresh connection after
	// the server closed a reused keep-alive one (not errors; per endpoint
	// in the by_tags counts).
	Reconnects int64 `json:"reconnects"`
}

// TopError is the most frequent error message of a class.
type TopError struct {
	Message string `json:"message"`
	Count   int64  `json:"count"`
}

// MaxErrorMessage is the most characters of an error message a report
// keeps.
const MaxErrorMessage = 120

// Stats summarises one metric's distribution (ms for latencies, tokens for
// token counts).
type Stats struct {
	Count  int64   `json:"count"`
	Mean   float64 `json:"mean"`
	StdDev float64 `json:"stddev"`
	Min    float64 `json:"min"`
	P50    float64 `json:"p50"`
	P90    float64 `json:"p90"`
	P95    float64 `json:"p95"`
	P99    float64 `json:"p99"`
	P999   float64 `json:"p999"`
	Max    float64 `json:"max"`
}

// Metrics holds the run-level distributions (DESIGN §3 definitions), keyed
// by their JSON key in the metric table (metrics.Metric.JSONKey: "ttft_ms",
// "input_tokens", ...). It encodes as a JSON object with every built-in
// trend the table gives a JSON key, in table order (zero Stats for one
// without data), then any other keys in sorted order; so a recorded trend
// added to the table appears here without a new field.
type Metrics map[string]Stats

// MarshalJSON encodes ms in the metric table's order (see Metrics).
func (ms Metrics) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	done := make(map[string]bool, len(ms))
	write := func(key string, s Stats) error {
		if len(done) > 0 {
			b.WriteByte(',')
		}
		done[key] = true
		k, err := json.Marshal(key)
		if err != nil {
			return fmt.Errorf("metrics key %q: %w", key, err)
		}
		v, err := json.Marshal(s)
		if err != nil {
			return fmt.Errorf("metrics %s: %w", key, err)
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
		return nil
	}
	for _, m := range metrics.Builtin() {
		if m.Kind == metrics.Trend && m.JSONKey != "" && !done[m.JSONKey] {
			if err := write(m.JSONKey, ms[m.JSONKey]); err != nil {
				return nil, err
			}
		}
	}
	rest := make([]string, 0, len(ms))
	for k := range ms {
		if !done[k] {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	for _, k := range rest {
		if err := write(k, ms[k]); err != nil {
			return nil, err
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// Throughput is per second of run duration, over ok requests.
type Throughput struct {
	RequestsPerS     float64 `json:"requests_per_s"`
	InputTokensPerS  float64 `json:"input_tokens_per_s"`
	OutputTokensPerS float64 `json:"output_tokens_per_s"`
	TotalTokensPerS  float64 `json:"total_tokens_per_s"`
}

// Quality holds the quality rates (shares in 0 … 1) and goodput.
type Quality struct {
	ErrorRate         float64 `json:"error_rate"`
	TruncationRate    float64 `json:"truncation_rate"`
	RejectionRate     float64 `json:"rejection_rate"`
	ThrottleRate      float64 `json:"throttle_rate"`
	RepetitionRate    float64 `json:"repetition_rate"`
	EmptyOutputRate   float64 `json:"empty_output_rate"`
	UsageMismatchRate float64 `json:"usage_mismatch_rate"`
	// IntegrityErrorRate is requests failed with an integrity_* class /
	// finished (corrupted streams).
	IntegrityErrorRate float64  `json:"integrity_error_rate"`
	GoodputPerS        *float64 `json:"goodput_per_s,omitempty"`
}

// Concurrency is in-flight requests: maximum and time-weighted mean.
type Concurrency struct {
	Max  int64   `json:"max"`
	Mean float64 `json:"mean"`
}

// Counts are the raw counters of a tag tuple or a second; every rate can be
// recomputed from them for any subset.
type Counts struct {
	OK             int64            `json:"ok"`
	Failed         int64            `json:"failed"`
	Cancelled      int64            `json:"cancelled"`
	Dropped        int64            `json:"dropped"`
	ErrorsByClass  map[string]int64 `json:"errors_by_class,omitempty"`
	Truncated      int64            `json:"truncated,omitempty"`
	Rejected       int64            `json:"rejected,omitempty"`
	Throttled      int64            `json:"throttled,omitempty"`
	EmptyOutput    int64            `json:"empty_output,omitempty"`
	UsageReported  int64            `json:"usage_reported,omitempty"`
	UsageDiffers   int64            `json:"usage_differs,omitempty"`
	UsageMismatch  int64            `json:"usage_mismatch,omitempty"`
	NgramsTotal    int64            `json:"ngrams_total,omitempty"`
	NgramsRepeated int64            `json:"ngrams_repeated,omitempty"`
	Good           int64            `json:"good,omitempty"`
	InputTokens    int64            `json:"input_tokens,omitempty"`
	OutputTokens   int64            `json:"output_tokens,omitempty"`
	Reconnects     int64            `json:"reconnects,omitempty"`
	TokensStreamed int64            `json:"tokens_streamed,omitempty"`
}

// SecondRow is one second of the time series: the requests that ended in
// [t, t+1) s of run clock (by completion), and the first tokens (ttft) and
// chunks (itl, tokens_streamed) that arrived in it (by event time).
type SecondRow struct {
	T int `json:"t"`
	Counts
	InFlightMax  int64    `json:"in_flight_max"`
	InFlightMean float64  `json:"in_flight_mean"`
	TTFTP50Ms    *float64 `json:"ttft_p50_ms,omitempty"`
	TTFTP99Ms    *float64 `json:"ttft_p99_ms,omitempty"`
	E2EP50Ms     *float64 `json:"e2e_p50_ms,omitempty"`
	E2EP99Ms     *float64 `json:"e2e_p99_ms,omitempty"`
	ITLP50Ms     *float64 `json:"itl_p50_ms,omitempty"`
	ITLP99Ms     *float64 `json:"itl_p99_ms,omitempty"`
	TPOTP50Ms    *float64 `json:"tpot_p50_ms,omitempty"`
	TPOTP99Ms    *float64 `json:"tpot_p99_ms,omitempty"`
	// Hist packs this second's ttft, e2e, itl and tpot histograms (base64 in
	// JSON; format in SCHEMA.md).
	Hist []byte `json:"hist,omitempty"`
}

// Histograms holds HDR histograms encoded with hdrhistogram-go's Encode (V2
// compressed, base64), keyed by histogramKey names: latencies in µs, token
// counts in tokens.
type Histograms struct {
	Overall map[string]string `json:"overall"`
	ByTags  []TagSet          `json:"by_tags"`
}

// TagSet is one tag tuple: its tags, raw counters and histograms.
type TagSet struct {
	Tags   map[string]string `json:"tags"`
	Counts Counts            `json:"counts"`
	HDR    map[string]string `json:"hdr"`
	// Custom holds the tuple's custom metric samples by name.
	Custom map[string]CustomSink `json:"custom,omitempty"`
}

// statsKey is the JSON key of metric m's stats in "metrics": its row's
// JSONKey in the metric table.
func statsKey(m recording.Metric) string {
	for _, row := range metrics.Builtin() {
		if row.Name == m.String() {
			return row.JSONKey
		}
	}
	return ""
}

// histogramKey is the JSON key of metric m's encoded histogram.
func histogramKey(m recording.Metric) string {
	if m.IsLatency() {
		return m.String() + "_us"
	}
	return m.String()
}

// Meta is what the caller knows about a run beyond its recording.
type Meta struct {
	ToolVersion string
	// Name is the run's or experiment's name (optional).
	Name      string
	StartedAt time.Time
	Seed      int64
	// Config is the run's configuration (a map or a struct that encodes as
	// a JSON object); Build redacts it with Redact.
	Config any
	// Shard is the run's part of a sharded load (nil: the whole load).
	Shard *Shard
}

// Build assembles the report of a finished run.
func Build(meta Meta, sum *recording.Summary) (*Document, error) {
	cfg, err := Redact(meta.Config)
	if err != nil {
		return nil, fmt.Errorf("report config: %w", err)
	}
	req := sum.Requests()
	all := sum.Counts(recording.TagFilter{})
	tp := sum.Throughput()
	d := &Document{
		SchemaVersion: SchemaVersion,
		ToolVersion:   meta.ToolVersion,
		Name:          meta.Name,
		StartedAt:     meta.StartedAt,
		Verdict:       VerdictNone,
		Thresholds:    []ThresholdResult{},
		DurationS:     sum.Duration.Seconds(),
		Seed:          meta.Seed,
		Config:        cfg,
		Shard:         meta.Shard,
		Requests: Requests{
			Scheduled: req.Scheduled, Sent: req.Sent, OK: req.OK, Failed: req.Failed,
			Cancelled: req.Cancelled, Dropped: req.Dropped, Lost: req.Lost,
			ErrorsByClass: req.ErrorsByClass, Reconnects: req.Reconnects,
			TopErrors: topErrors(sum.TopErrors),
		},
		Throughput: Throughput{
			RequestsPerS:     tp.RequestsPerS,
			InputTokensPerS:  tp.InputTokensPerS,
			OutputTokensPerS: tp.OutputTokensPerS,
			TotalTokensPerS:  tp.TotalTokensPerS,
		},
		Concurrency: Concurrency{Max: sum.Concurrency.Max, Mean: sum.Concurrency.Mean},
		run:         sum,
	}
	if err := setRates(&d.Quality, all); err != nil {
		return nil, err
	}
	if sum.SLO.Given() {
		d.SLO = &SLO{TTFTMs: ms(sum.SLO.TTFT), TPOTMs: ms(sum.SLO.TPOT), E2EMs: ms(sum.SLO.E2E)}
		g := tp.GoodputPerS
		d.Quality.GoodputPerS = &g
	}
	d.Metrics = make(Metrics, recording.NumMetrics)
	for m := range recording.NumMetrics {
		if k := statsKey(m); k != "" {
			d.Metrics[k] = toStats(m, sum.Distribution(m, recording.TagFilter{}))
		}
	}
	if d.Timeseries, err = timeseriesRows(sum.Series); err != nil {
		return nil, err
	}
	if d.Histograms, err = encodeHistograms(sum); err != nil {
		return nil, err
	}
	d.CustomMetrics = customMetrics(sum)
	d.ClientSaturatedReason = Saturation(d.Requests, d.Metrics["send_lag_ms"])
	d.ClientSaturated = d.ClientSaturatedReason != ""
	return d, nil
}

// Summary returns the run behind the document: the Summary it was built
// from, or for a document loaded by Read the one rebuilt from its
// histograms and time series.
func (d *Document) Summary() *recording.Summary { return d.run }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func toStats(m recording.Metric, x recording.Distribution) Stats {
	div := 1.0
	if m.IsLatency() {
		div = 1000 // µs → ms; dividing keeps 330239 µs as 330.239, not 330.23900000000003
	}
	return Stats{
		Count: x.Count, Mean: x.Mean / div, StdDev: x.StdDev / div,
		Min: float64(x.Min) / div, P50: float64(x.P50) / div, P90: float64(x.P90) / div,
		P95: float64(x.P95) / div, P99: float64(x.P99) / div, P999: float64(x.P999) / div,
		Max: float64(x.Max) / div,
	}
}

func toCounts(c recording.Counts) Counts {
	out := Counts{
		OK: c.OK, Failed: c.Failed, Cancelled: c.Cancelled, Dropped: c.Dropped,
		Truncated: c.Truncated, Rejected: c.Rejected, Throttled: c.Throttled,
		EmptyOutput: c.EmptyOutput, UsageReported: c.UsageReported, UsageMismatch: c.UsageMismatch,
		NgramsTotal: c.NgramsTotal, NgramsRepeated: c.NgramsRepeated, Good: c.Good,
		InputTokens: c.InputTokens, OutputTokens: c.OutputTokens, UsageDiffers: c.UsageDiffers, Reconnects: c.Reconnects,
		TokensStreamed: c.StreamedTokens,
	}
	if m := c.ErrorsByClass(); len(m) > 0 {
		out.ErrorsByClass = m
	}
	return out
}

func fromCounts(c Counts) recording.Counts {
	out := recording.Counts{
		OK: c.OK, Failed: c.Failed, Cancelled: c.Cancelled, Dropped: c.Dropped,
		Truncated: c.Truncated, Rejected: c.Rejected, Throttled: c.Throttled,
		EmptyOutput: c.EmptyOutput, UsageReported: c.UsageReported, UsageMismatch: c.UsageMismatch,
		NgramsTotal: c.NgramsTotal, NgramsRepeated: c.NgramsRepeated, Good: c.Good,
		InputTokens: c.InputTokens, OutputTokens: c.OutputTokens, UsageDiffers: c.UsageDiffers, Reconnects: c.Reconnects,
		StreamedTokens: c.TokensStreamed,
	}
	for k, n := range c.ErrorsByClass {
		out.AddClass(recording.ErrorClass(k), n)
	}
	return out
}

func timeseriesRows(s *recording.Series) ([]SecondRow, error) {
	rows := make([]SecondRow, 0, s.Len())
	for i := range s.Len() {
		st := s.Second(i)
		row := SecondRow{
			T: st.Second, Counts: toCounts(st.Counts),
			InFlightMax: st.InFlightMax, InFlightMean: st.InFlightMean, Hist: st.Hist,
		}
		for _, x := range []struct {
			m        recording.Metric
			p50, p99 **float64
		}{
			{recording.MetricTTFT, &row.TTFTP50Ms, &row.TTFTP99Ms},
			{recording.MetricE2E, &row.E2EP50Ms, &row.E2EP99Ms},
			{recording.MetricITL, &row.ITLP50Ms, &row.ITLP99Ms},
			{recording.MetricTPOT, &row.TPOTP50Ms, &row.TPOTP99Ms},
		} {
			v, n, err := st.Percentiles(x.m, 50, 99)
			if err != nil {
				return nil, fmt.Errorf("report timeseries: %w", err)
			}
			if n > 0 {
				p50, p99 := float64(v[0])/1e3, float64(v[1])/1e3
				*x.p50, *x.p99 = &p50, &p99
			}
		}
		rows = append(rows, row)
	}
	return rows, nil
}

func encodeHistograms(sum *recording.Summary) (Histograms, error) {
	var out Histograms
	var err error
	overall := &recording.TupleStats{}
	for m := range recording.NumMetrics {
		overall.Hists[m] = sum.Histogram(m, recording.TagFilter{})
	}
	if out.Overall, err = encodeHDR(overall); err != nil {
		return out, err
	}
	out.ByTags = make([]TagSet, 0, len(sum.Tuples))
	for _, t := range sum.Tuples {
		enc, err := encodeHDR(t)
		if err != nil {
			return out, fmt.Errorf("tags %v: %w", t.Tags, err)
		}
		custom, err := encodeCustom(t)
		if err != nil {
			return out, fmt.Errorf("tags %v: %w", t.Tags, err)
		}
		out.ByTags = append(out.ByTags, TagSet{Tags: tagMap(t.Tags), Counts: toCounts(t.Counts), HDR: enc, Custom: custom})
	}
	return out, nil
}

func encodeHDR(t *recording.TupleStats) (map[string]string, error) {
	out := make(map[string]string)
	for m, h := range t.Hists {
		if h == nil || h.TotalCount() == 0 {
			continue
		}
		b, err := h.Encode(hdrV2)
		if err != nil {
			return nil, fmt.Errorf("encode %s histogram: %w", recording.Metric(m), err)
		}
		out[histogramKey(recording.Metric(m))] = string(b)
	}
	return out, nil
}

// tagMap lists the non-empty tags, a script's extra tags among them; the
// endpoint loses any password it carries.
func tagMap(t recording.Tags) map[string]string {
	m := make(map[string]string)
	for k, v := range recording.ExtraPairs(t.Extra) {
		m[k] = v
	}
	for k, v := range map[string]string{"phase": t.Phase, "fault": t.Fault, "class": t.Class, "endpoint": redactString(t.Endpoint), "scenario": t.Scenario} {
		if v != "" {
			m[k] = v
		}
	}
	return m
}

// Write encodes d as indented JSON. HTML escaping is off: a threshold's
// "p(99)<500ms" stays as written instead of becoming "\u003c".
func Write(w io.Writer, d *Document) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(d); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// WriteFile writes d to path atomically (a temporary file in the same
// directory, renamed over path), so a reader never sees half a report.
func WriteFile(path string, d *Document) error {
	return WriteFileWith(path, func(w io.Writer) error { return Write(w, d) })
}

// WriteFileWith writes what write produces to path atomically: through a
// temporary file in the same directory, renamed over path once complete,
// and removed if write fails.
func WriteFileWith(path string, write func(io.Writer) error) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), ".report-*")
	if err != nil {
		return fmt.Errorf("write report %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	if err = write(f); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err = f.Chmod(0o644); err != nil {
		return fmt.Errorf("write report %s: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("write report %s: %w", path, err)
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("write report %s: %w", path, err)
	}
	return nil
}

// topErrors converts the run's most frequent error texts for the report,
// cut to MaxErrorMessage characters and with secrets removed.
func topErrors(m map[recording.ErrorClass]recording.TopError) map[string]TopError {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]TopError, len(m))
	for cl, e := range m {
		msg := redactString(e.Message)
		if r := []rune(msg); len(r) > MaxErrorMessage {
			msg = string(r[:MaxErrorMessage-1]) + "…"
		}
		out[string(cl)] = TopError{Message: msg, Count: e.Count}
	}
	return out
}

// Bounds past which the client counts as saturated (Saturation).
const (
	// SaturationSentShare is the least share of the requests the schedule
	// meant to send (scheduled less dropped) that must have been sent.
	SaturationSentShare = 0.95
	// SaturationLagP50Ms and SaturationLagP99Ms bound the send lag, the
	// delay from a request's scheduled time to its send.
	SaturationLagP50Ms = 10.0
	SaturationLagP99Ms = 100.0
)

// Saturation says why the client could not keep to its schedule, or ""
// when it did: fewer than SaturationSentShare of the requests to send
// were sent, or the send lag's median exceeded SaturationLagP50Ms or its
// p99 SaturationLagP99Ms. A dropped request (--on-saturation drop) is the
// cap on requests in flight at work, not the client falling behind.
func Saturation(r Requests, lag Stats) string {
	toSend := r.Scheduled - r.Dropped
	switch {
	case toSend > 0 && float64(r.Sent) < SaturationSentShare*float64(toSend):
		return fmt.Sprintf("sent %d of %d scheduled requests (under %.0f%%)", r.Sent, toSend, SaturationSentShare*100)
	case lag.Count > 0 && lag.P50 > SaturationLagP50Ms:
		return fmt.Sprintf("send lag p50 %s (over %s)", fmtMs(lag.P50), fmtMs(SaturationLagP50Ms))
	case lag.Count > 0 && lag.P99 > SaturationLagP99Ms:
		return fmt.Sprintf("send lag p99 %s (over %s)", fmtMs(lag.P99), fmtMs(SaturationLagP99Ms))
	}
	return ""
}

// CheckPath makes the directory of the report file path and checks that
// a report can be written there (WriteFileWith writes a temporary file
// beside it and renames it), so that a run finds out before its load,
// not after it, that its report cannot be written. A path that is a
// directory is an error. "" and Stdout need nothing.
func CheckPath(path string) error {
	if path == "" || path == Stdout {
		return nil
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("%s is a directory: give a file name", path)
	}
	return CheckDir(filepath.Dir(path))
}

// CheckDir makes dir (and its parents) and checks that files can be
// created in it.
func CheckDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".report-check-*")
	if err != nil {
		return fmt.Errorf("cannot write in %s: %w", dir, err)
	}
	name := f.Name()
	_ = f.Close()
	return os.Remove(name)
}
