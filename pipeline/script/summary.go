package script

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/xk6-llm/js"
	"github.com/llmchaos/llmchaos/xk6-llm/metrics"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// summaryData is handleSummary's data for a finished run: every metric of
// the run's table that has data or thresholds, with k6's value names,
// computed from the same recorded run the thresholds were evaluated on.
// The built-in LLM metrics appear only when LLM requests were sent.
// Thresholds are named as k6 names them, by the script's text
// (k6MetricName, k6ThresholdSource); ths are the run's thresholds, whose
// outcomes doc holds.
func summaryData(doc *report.Document, ths []assertions.Threshold, sh *js.Shared, opts js.SummaryOptions, state js.SummaryState, setupJSON string) js.SummaryData {
	d := js.SummaryData{
		RootGroup: sh.Checks(), Options: opts, State: state,
		Metrics: map[string]js.SummaryMetric{},
	}
	if setupJSON != "" {
		d.SetupData = json.RawMessage(setupJSON)
	}
	sum := doc.Summary()
	src := assertions.NewSummarySource(sum)
	byKey := map[string][]report.ThresholdResult{}
	for _, th := range doc.Thresholds {
		byKey[th.Key()] = append(byKey[th.Key()], th)
	}
	for _, m := range sum.Metrics.All() {
		if m.Builtin && sum.Sent == 0 {
			continue
		}
		if sm, ok := summaryMetric(m, sum, src, assertions.Tags{}, opts.SummaryTrendStats); ok || len(byKey[m.Name]) > 0 {
			d.Metrics[m.Name] = sm
		}
	}
	written := map[string]assertions.Threshold{}
	for _, th := range ths {
		if k := th.Key() + "\x00" + th.Expr.String(); written[k].Metric == "" {
			written[k] = th
		}
	}
	for key, results := range byKey {
		m, ok := sum.Metrics.Lookup(results[0].Metric)
		if !ok {
			continue
		}
		sm, ok := d.Metrics[key]
		if !ok {
			sm, _ = summaryMetric(m, sum, src, results[0].Tags, opts.SummaryTrendStats)
		}
		sm.Thresholds = map[string]js.SummaryThreshold{}
		name := ""
		for _, res := range results {
			expr := res.Expr
			if th, ok := written[key+"\x00"+res.Expr]; ok {
				expr = k6ThresholdSource(th)
				if name == "" {
					name = k6MetricName(th)
				}
			}
			prev, seen := sm.Thresholds[expr] // several expressions with one text hold only if all do
			sm.Thresholds[expr] = js.SummaryThreshold{OK: res.OK && (!seen || prev.OK)}
		}
		if name == "" {
			name = key
		}
		if name != key {
			delete(d.Metrics, key)
		}
		d.Metrics[name] = sm
	}
	return d
}

// summaryMetric is metric m's entry over the selection sel; ok is false
// when the selection holds no data for it.
func summaryMetric(m metrics.Metric, sum *recording.Summary, src *assertions.SummarySource, sel assertions.Tags, trendStats []string) (js.SummaryMetric, bool) {
	sm := js.SummaryMetric{Type: m.Kind.String(), Contains: "default", Values: map[string]float64{}}
	if m.IsTime() {
		sm.Contains = "time"
	}
	f := recording.TagFilter{Phase: sel.Phase, Fault: sel.Fault, Class: sel.Class, Endpoint: sel.Endpoint, Scenario: sel.Scenario,
		Extra: sel.Extra} // a submetric's own tags (k6's my_counter{tag:x})
	secs := sum.Duration.Seconds()
	switch m.Kind {
	case metrics.Trend:
		dist := src.Distribution(m.Name, sel)
		if dist == nil || dist.Count() == 0 {
			return sm, false
		}
		for _, s := range trendStats {
			if v, ok := trendStat(dist, s); ok {
				sm.Values[s] = v
			}
		}
	case metrics.Rate:
		hits, total := src.Ratio(m.Name, sel)
		if total == 0 {
			return sm, false
		}
		sm.Values["rate"] = float64(hits) / float64(total)
		sm.Values["passes"], sm.Values["fails"] = float64(hits), float64(total-hits)
	case metrics.Counter:
		var n float64
		if m.Builtin {
			c, _ := src.Counter(m.Name, sel)
			n = float64(c)
		} else {
			s := sum.Custom(m.Name, f)
			if s == nil || s.Count == 0 {
				return sm, false
			}
			n = s.Sum
		}
		sm.Values["count"] = n
		if secs > 0 {
			sm.Values["rate"] = n / secs
		}
	case metrics.Gauge:
		if m.Builtin {
			v, ok := src.Value(m.Name, sel)
			if !ok {
				return sm, false
			}
			sm.Values["value"] = v
		} else {
			s := sum.Custom(m.Name, f)
			if s == nil || s.Count == 0 {
				return sm, false
			}
			sm.Values["value"], sm.Values["min"], sm.Values["max"] = s.Last, s.Lo, s.Hi
		}
	}
	return sm, true
}

// trendStat is one of k6's trend statistics (avg, min, med, max, count,
// p(N)) of dist.
func trendStat(dist assertions.Distribution, stat string) (float64, bool) {
	switch stat {
	case "avg":
		return dist.Mean(), true
	case "min":
		return dist.Min(), true
	case "med":
		return dist.Quantile(50), true
	case "max":
		return dist.Max(), true
	case "count":
		return float64(dist.Count()), true
	}
	inner, ok := strings.CutPrefix(stat, "p(")
	inner, ok2 := strings.CutSuffix(inner, ")")
	p, err := strconv.ParseFloat(inner, 64)
	if !ok || !ok2 || err != nil || p < 0 || p > 100 {
		return 0, false
	}
	return dist.Quantile(p), true
}

// handleSummary runs the script's handleSummary, when it exports one, and
// writes what it returns; it reports whether the default summary is still
// to be written (no handleSummary, or one that threw, which is reported on
// stderr with its position). Errors are those of writing the outputs.
func handleSummary(ctx context.Context, vu0 *js.VU, data js.SummaryData, stdout, stderr io.Writer) (printDefault bool, err error) {
	outs, ok, err := vu0.HandleSummary(ctx, data)
	if !ok {
		return true, nil
	}
	if err != nil {
		fmt.Fprintf(stderr, "llmchaos run: %v\nllmchaos run: handleSummary failed: the default summary follows\n", err)
		return true, nil
	}
	var errs []error
	for _, o := range outs {
		switch o.Key {
		case "stdout":
			_, err = stdout.Write(o.Content)
		case "stderr":
			_, err = stderr.Write(o.Content)
		default:
			err = writeSummaryFile(o.Key, o.Content)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("handleSummary output %q: %w", o.Key, err))
		}
	}
	return false, errors.Join(errs...)
}

// writeSummaryFile writes a handleSummary output to path (relative to the
// working directory, as k6's), making its directory.
func writeSummaryFile(path string, content []byte) error {
	if strings.TrimSpace(path) == "" {
		return errors.New("empty file name")
	}
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	return report.WriteFileWith(path, func(w io.Writer) error {
		_, err := w.Write(content)
		return err
	})
}

// k6MetricName is the name k6 gives a threshold's metric or submetric:
// the key as the script's options wrote it, the text between its braces
// trimmed, as k6's registry names a submetric; a threshold from elsewhere
// (--threshold) has its canonical key.
func k6MetricName(th assertions.Threshold) string {
	if th.SourceKey == "" {
		return th.Key()
	}
	name, inner, ok := strings.Cut(strings.TrimSpace(th.SourceKey), "{")
	if !ok {
		return name
	}
	return name + "{" + strings.TrimSpace(strings.TrimSuffix(inner, "}")) + "}"
}

// k6ThresholdSource is the threshold's expression as the script wrote it
// (k6 keys thresholds by their text), or its canonical form when it has
// none.
func k6ThresholdSource(th assertions.Threshold) string {
	if th.Source != "" {
		return th.Source
	}
	return th.Expr.String()
}
