package history

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// RecordOptions is what Record needs besides the report.
type RecordOptions struct {
	// ExitCode is the exit code the command ends with for this run.
	ExitCode int
	// Labels are the run's labels (ParseLabels, DefaultLabels).
	Labels map[string]string
	// Score is the run's resilience score (0–100), when its caller
	// computed one; nil reads it from the report when the report has a
	// top-level "resilience_score" (or "score") number, else none.
	Score *float64
	// Regressed is Check's outcome for the run; nil: not checked.
	Regressed *bool
	// Now is the recording time (zero: time.Now()).
	Now time.Time
}

// Record turns doc into a Run (FromDocument) and inserts it into store,
// returning its id. It is the hook a caller that runs experiments (run,
// suite) calls once per run; a failure here must not change the run's
// verdict (the CLI prints it as a warning).
func Record(ctx context.Context, store Store, doc *report.Document, opts RecordOptions) (int64, error) {
	run, err := FromDocument(doc, opts)
	if err != nil {
		return 0, err
	}
	return store.Insert(ctx, run)
}

// FromDocument builds the Run that Record stores for doc: its identity
// (experiment, SpecHash, Target), outcome, thresholds, per-phase figures
// and histograms (read from doc's recording: doc must come from
// report.Build or report.Read, else it is rebuilt from its JSON), recovery
// times and the whole report.
func FromDocument(doc *report.Document, opts RecordOptions) (*Run, error) {
	if doc == nil {
		return nil, errors.New("history: no report to record")
	}
	var buf bytes.Buffer
	if err := report.Write(&buf, doc); err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	sum := doc.Summary()
	if sum == nil {
		back, err := report.Decode(bytes.NewReader(buf.Bytes()))
		if err != nil {
			return nil, fmt.Errorf("history: %w", err)
		}
		sum = back.Summary()
	}
	run := &Run{
		Experiment: ExperimentName(doc),
		Kind:       KindLoad,
		SpecHash:   SpecHash(doc),
		Target:     Target(doc),
		// Stores keep microseconds: so does the Run, to read back equal.
		StartedAt:   doc.StartedAt.UTC().Truncate(time.Microsecond),
		RecordedAt:  opts.Now.UTC().Truncate(time.Microsecond),
		DurationS:   doc.DurationS,
		Verdict:     doc.Verdict,
		ExitCode:    opts.ExitCode,
		ToolVersion: doc.ToolVersion,
		Seed:        doc.Seed,
		Requests:    Requests{Sent: doc.Requests.Sent, OK: doc.Requests.OK, Failed: doc.Requests.Failed, Lost: doc.Requests.Lost},
		ErrorRate:   doc.Quality.ErrorRate,
		Score:       opts.Score,
		Regressed:   opts.Regressed,
		Labels:      maps.Clone(opts.Labels),
		Report:      buf.Bytes(),
	}
	if run.StartedAt.IsZero() {
		run.StartedAt = time.Now().UTC().Truncate(time.Microsecond)
	}
	if doc.Experiment != nil {
		run.Kind = KindExperiment
	}
	if doc.Abort != nil {
		run.Abort = doc.Abort.String()
	}
	if run.Score == nil {
		run.Score = scoreOf(buf.Bytes())
	}
	for _, th := range doc.Thresholds {
		run.Thresholds = append(run.Thresholds, Threshold{Metric: th.Metric, Tags: th.Tags, Expr: th.Expr, Value: th.Value, OK: th.OK, NoData: th.NoData})
	}
	for _, r := range doc.Recovery {
		run.Recovery = append(run.Recovery, Recovery{Fault: r.Fault, RecoveryTimeS: r.RecoveryTimeS, Recovered: r.Recovered,
			TimeToRecoverS: r.TimeToRecoverS, InsufficientTraffic: r.InsufficientTraffic})
	}
	var err error
	if run.Phases, run.Histograms, err = phaseFigures(sum); err != nil {
		return nil, err
	}
	return run, nil
}

// phaseFigures computes the per-phase rows and their histograms from a
// run's recording: the whole run, each phase over its faults, and each
// phase of each fault.
func phaseFigures(sum *recording.Summary) ([]PhaseStats, []Histogram, error) {
	type key struct{ phase, fault string }
	keys := []key{{WholeRun, WholeRun}}
	seen := map[key]bool{keys[0]: true}
	for _, t := range sum.Tuples {
		for _, k := range []key{{t.Tags.Phase, WholeRun}, {t.Tags.Phase, t.Tags.Fault}} {
			if k.phase == WholeRun || seen[k] {
				continue
			}
			seen[k] = true
			keys = append(keys, k)
		}
	}
	var phases []PhaseStats
	var hists []Histogram
	for _, k := range keys {
		f := recording.TagFilter{Phase: k.phase, Fault: k.fault}
		c := sum.Counts(f)
		ps := PhaseStats{Phase: k.phase, Fault: k.fault, Requests: c.Finished(), Failed: c.Failed, ErrorRate: c.ErrorRate()}
		lat := map[recording.Metric]*Percentiles{
			recording.MetricTTFT: &ps.TTFT, recording.MetricE2E: &ps.E2E,
			recording.MetricITL: &ps.ITL, recording.MetricTPOT: &ps.TPOT,
		}
		for _, m := range storedHistograms {
			h := sum.Histogram(m, f)
			if h == nil || h.TotalCount() == 0 {
				continue
			}
			if dst, ok := lat[m]; ok {
				// ValueAtPercentile, as the report's figures (µs → ms).
				v := h.ValueAtPercentiles([]float64{50, 90, 99})
				*dst = Percentiles{Count: h.TotalCount(), P50: float64(v[50]) / 1000, P90: float64(v[90]) / 1000, P99: float64(v[99]) / 1000}
			}
			enc, err := h.Encode(hdrhistogramV2)
			if err != nil {
				return nil, nil, fmt.Errorf("history: encode the %s histogram of phase %q fault %q: %w", m, k.phase, k.fault, err)
			}
			hists = append(hists, Histogram{Phase: k.phase, Fault: k.fault, Metric: HistogramKey(m), HDR: string(enc)})
		}
		phases = append(phases, ps)
	}
	sortParts(phases, hists)
	return phases, hists, nil
}

// sortParts puts phase rows and histograms in the order a store returns
// them: by phase, fault and metric, bytewise (not by a database's
// collation).
func sortParts(phases []PhaseStats, hists []Histogram) {
	slices.SortStableFunc(phases, func(a, b PhaseStats) int {
		return cmp.Or(strings.Compare(a.Phase, b.Phase), strings.Compare(a.Fault, b.Fault))
	})
	slices.SortStableFunc(hists, func(a, b Histogram) int {
		return cmp.Or(strings.Compare(a.Phase, b.Phase), strings.Compare(a.Fault, b.Fault), strings.Compare(a.Metric, b.Metric))
	})
}

// storedHistograms are the metrics whose histograms a Run keeps per phase:
// the latencies report.Compare bootstraps, and the output length. The
// stored run.json keeps every metric's, per tag tuple.
var storedHistograms = []recording.Metric{
	recording.MetricTTFT, recording.MetricITL, recording.MetricTPOT, recording.MetricE2E, recording.MetricOutputTokens,
}

// hdrhistogramV2 selects the encoding run.json uses for its histograms.
const hdrhistogramV2 = hdrhistogram.V2CompressedEncodingCookieBase

// HistogramKey is the name a metric's histogram is stored under, as
// run.json's histograms name it: latencies in µs ("ttft_us"), token counts
// bare ("output_tokens").
func HistogramKey(m recording.Metric) string {
	if m.IsLatency() {
		return m.String() + "_us"
	}
	return m.String()
}

// ExperimentName is the name a run is listed under: the experiment's
// metadata.name, else the run's name, else "load".
func ExperimentName(doc *report.Document) string {
	switch {
	case doc.Experiment != nil && doc.Experiment.Name != "":
		return doc.Experiment.Name
	case doc.Name != "":
		return doc.Name
	}
	return "load"
}

// specIgnored are the keys of a run's recorded configuration that SpecHash
// leaves out: what differs between two samples of one experiment (the seed,
// the run directory, ports of the runner's own endpoints, outputs), what
// judges a run without changing what it measures (thresholds, stop
// conditions), its name and description (the experiment column has the
// name), and where it ran (the Target column).
var specIgnored = map[string]bool{
	"seed": true, "run_dir": true, "out": true, "name": true, "metadata": true, "endpoints": true,
	"thresholds": true, "stop_conditions": true,
	"save_requests": true, "server_monitor": true, "scrape_interval": true, "api_key_env": true,
	"target": true, "targets": true, "model": true, "start_at": true, "headers": true,
}

// SpecHash identifies what a run measured, apart from where and which
// sample: the first 16 hex digits of the SHA-256 of its recorded
// configuration (run.json's config: the experiment as resolved, with its
// defaults and the command's overrides such as --duration) in canonical
// JSON (keys sorted, no spaces), leaving out the top-level keys that
// differ between two samples of one experiment, name where it ran, or
// only judge it (seed, run directory, endpoints, target, model, outputs,
// metadata, thresholds, stop conditions). Editing a comment or a
// threshold of the file leaves it; changing a rate, a fault, the recovery
// settings or a default does not. A report without a configuration
// hashes its experiment file's text.
func SpecHash(doc *report.Document) string {
	h := sha256.New()
	if len(doc.Config) > 0 {
		m := make(map[string]any, len(doc.Config))
		for k, v := range doc.Config {
			if !specIgnored[k] {
				m[k] = v
			}
		}
		b, err := json.Marshal(m) // maps marshal with sorted keys
		if err == nil {
			h.Write(b)
			return hex.EncodeToString(h.Sum(nil))[:16]
		}
	}
	if doc.Experiment != nil {
		h.Write([]byte(doc.Experiment.Spec))
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// Target says where a run ran, from its recorded configuration: an
// endpoint target's base URLs (passwords removed, comma-separated) and its
// model; a simulator target as "sim" and its settings in canonical JSON;
// "unknown" when the report does not say.
func Target(doc *report.Document) string {
	cfg := doc.Config
	model, _ := cfg["model"].(string)
	withModel := func(s string) string {
		if model != "" {
			return s + " model=" + model
		}
		return s
	}
	if t, ok := cfg["target"].(map[string]any); ok {
		if sim, ok := t["sim"].(map[string]any); ok {
			m := maps.Clone(sim)
			delete(m, "seed")
			b, err := json.Marshal(m)
			if err != nil {
				return "sim"
			}
			return "sim " + string(b)
		}
		if llm, ok := t["llm"].(map[string]any); ok {
			var urls []string
			if u, ok := llm["url"].(string); ok && u != "" {
				urls = append(urls, u)
			}
			urls = append(urls, stringList(llm["urls"])...)
			if len(urls) > 0 {
				return withModel(joinURLs(urls))
			}
		}
	}
	if urls := stringList(cfg["targets"]); len(urls) > 0 {
		return withModel(joinURLs(urls))
	}
	return "unknown"
}

// stringList reads a JSON list of strings.
func stringList(v any) []string {
	var out []string
	switch l := v.(type) {
	case []any:
		for _, x := range l {
			if s, ok := x.(string); ok && s != "" {
				out = append(out, s)
			}
		}
	case []string:
		out = append(out, l...)
	}
	return out
}

func joinURLs(urls []string) string {
	out := make([]string, len(urls))
	for i, u := range urls {
		if p, err := url.Parse(u); err == nil {
			u = p.Redacted()
		}
		out[i] = u
	}
	return strings.Join(out, ",")
}

// scoreOf reads a resilience score from a report's JSON: a top-level
// "resilience_score" or "score" that is a number in [0, 100], or an object
// with such a "value" or "score". A null is no score (an unscored run: one
// a signal or an error cut short, or one without data), never 0.
func scoreOf(report []byte) *float64 {
	var top map[string]json.RawMessage
	if json.Unmarshal(report, &top) != nil {
		return nil
	}
	number := func(raw json.RawMessage) *float64 {
		var v *float64
		if json.Unmarshal(raw, &v) != nil || v == nil || !(*v >= 0 && *v <= 100) {
			return nil
		}
		return v
	}
	for _, k := range []string{"resilience_score", "score"} {
		raw, ok := top[k]
		if !ok {
			continue
		}
		if v := number(raw); v != nil {
			return v
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil || obj == nil {
			continue
		}
		for _, kk := range []string{"value", "score"} {
			if v, ok := obj[kk]; ok {
				return number(v) // the object's own value, null or not
			}
		}
	}
	return nil
}
