package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/llmchaos/llmchaos/xk6-llm/metrics"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// Defaults of CompareOptions.
const (
	DefaultResamples  = 1000
	DefaultConfidence = 0.95
)

// CompareOptions configures Compare.
type CompareOptions struct {
	// Resamples is the number of bootstrap resamples B (default
	// DefaultResamples).
	Resamples int
	// Confidence is the level of the intervals, between 0 and 1 (default
	// DefaultConfidence).
	Confidence float64
	// MaxRegression, when set, is the relative slowdown of a latency
	// percentile that is tolerated (0.1 for 10%): a percentile whose whole
	// confidence interval of new/base − 1 lies above it is a regression.
	// nil checks nothing.
	MaxRegression *float64
	// Rand drives the bootstrap; the same seed gives the same intervals.
	// nil uses a generator seeded with 1.
	Rand *rand.Rand
	// Filter selects the tag tuples whose histograms the percentiles and
	// their intervals come from (recording.TagFilter{Phase: "fault"}: the
	// fault phase of both runs); the zero filter takes the whole runs.
	// Rows always set the whole runs side by side.
	Filter recording.TagFilter
}

// comparedPercentiles are the percentiles of the metrics the table marks
// metrics.CompareBootstrap that get a bootstrap confidence interval.
var comparedPercentiles = []float64{50, 90, 99}

// bootstrapMetrics returns the recorded metrics the table marks
// metrics.CompareBootstrap, in table order.
func bootstrapMetrics() []recording.Metric {
	var out []recording.Metric
	for _, row := range metrics.Builtin() {
		if row.Compare != metrics.CompareBootstrap {
			continue
		}
		if m, err := recording.ParseMetric(row.Name); err == nil {
			out = append(out, m)
		}
	}
	return out
}

// Comparison is two runs side by side (Compare). Its JSON form is the
// output of `llmchaos compare --format json`.
type Comparison struct {
	Base RunInfo `json:"base"`
	New  RunInfo `json:"new"`
	// Rows hold every compared figure, by section, in display order.
	Rows []DeltaRow `json:"rows"`
	// Percentiles hold the latency percentiles with their bootstrap
	// confidence intervals.
	Percentiles []PercentileDelta `json:"percentiles"`
	Resamples   int               `json:"resamples"`
	Confidence  float64           `json:"confidence"`
	// MaxRegression is the tolerated slowdown (a share), when one was set.
	MaxRegression *float64 `json:"max_regression,omitempty"`
}

// RunInfo identifies a compared run.
type RunInfo struct {
	Name      string  `json:"name,omitempty"`
	StartedAt string  `json:"started_at,omitempty"`
	DurationS float64 `json:"duration_s"`
	Seed      int64   `json:"seed"`
	Verdict   string  `json:"verdict,omitempty"`
}

// DeltaRow is one figure of both runs.
type DeltaRow struct {
	// Section is "latency", "tokens", "requests", "throughput" or "quality".
	Section string `json:"section"`
	// Name is the figure: "ttft p99", "error_rate", "ok".
	Name string `json:"name"`
	// Unit is "ms", "tokens", "requests", "1/s" or "ratio".
	Unit string  `json:"unit"`
	Base float64 `json:"base"`
	New  float64 `json:"new"`
	// Delta is New − Base.
	Delta float64 `json:"delta"`
	// DeltaRel is New/Base − 1; null when Base is 0.
	DeltaRel *float64 `json:"delta_rel"`
}

// PercentileDelta is a latency percentile of both runs with the bootstrap
// confidence interval of the change.
type PercentileDelta struct {
	Metric string  `json:"metric"`
	P      float64 `json:"p"`
	// Base and New are the percentiles in milliseconds, as the reports'
	// metrics give them; BaseCount and NewCount the samples behind them.
	Base      float64 `json:"base_ms"`
	New       float64 `json:"new_ms"`
	BaseCount int64   `json:"base_count"`
	NewCount  int64   `json:"new_count"`
	// Rel is New/Base − 1 and RelLow … RelHigh its confidence interval;
	// DiffLow … DiffHigh the interval of New − Base in milliseconds.
	// All are null without data on either side (or a zero base for Rel).
	Rel      *float64 `json:"rel"`
	RelLow   *float64 `json:"rel_low"`
	RelHigh  *float64 `json:"rel_high"`
	DiffLow  *float64 `json:"diff_low_ms"`
	DiffHigh *float64 `json:"diff_high_ms"`
	// Change is "slower" or "faster" when the interval of the change
	// excludes 0, "same" when it holds 0, "" without data.
	Change string `json:"change"`
	// Regression is true when RelLow exceeds MaxRegression.
	Regression bool `json:"regression"`
	// Note warns when the interval deserves little trust.
	Note string `json:"note,omitempty"`
}

// Regressions returns the percentiles that regressed beyond MaxRegression
// with confidence.
func (c *Comparison) Regressions() []PercentileDelta {
	var out []PercentileDelta
	for _, p := range c.Percentiles {
		if p.Regression {
			out = append(out, p)
		}
	}
	return out
}

// Compare sets two runs side by side: every latency and token statistic,
// the request accounting, throughput and quality rates, with absolute and
// relative deltas; and for the p50, p90 and p99 of ttft, itl, tpot and e2e a
// bootstrap confidence interval of the change computed from the stored HDR
// histograms.
//
// Method: each run's histogram stands for the distribution its values were
// drawn from. A resample draws as many values as the run recorded, with
// replacement, from each run independently, and takes the percentile of
// each; B resamples give B values of new/base − 1 (and of new − base), and
// the interval is their α/2 and 1 − α/2 quantiles (percentile bootstrap).
// The percentile of a resample is drawn exactly without expanding the
// histogram: it is the value of rank r among n draws, F⁻¹ of a
// Beta(r, n − r + 1) variate, found by binary search over the cumulative
// bucket counts (see compare_bootstrap.go), so B = 1000 costs well under a
// millisecond per percentile whatever the sample size.
//
// Limits, which the output should be read with:
//
//   - the bootstrap takes values as independent. Requests of one run are
//     not quite (the server's load drifts, a slow second slows many), and
//     itl pools every gap of every request, which are strongly correlated
//     within a request: its intervals are too narrow, those of ttft, tpot
//     and e2e less so. Run long enough to cover the drift.
//   - a tail percentile rests on the few values beyond it: p99 of 200
//     values on 2. With fewer than 10 values beyond the percentile (either
//     side) the interval is unreliable and Note says so.
//   - the histograms keep 3 significant digits (0.1%): smaller changes are
//     not seen.
//   - a regression needs the whole interval beyond the limit, so a real but
//     small or noisy slowdown passes; run longer for more power.
func Compare(base, next *Document, opts CompareOptions) (*Comparison, error) {
	if base == nil || next == nil {
		return nil, errors.New("compare: missing run")
	}
	if base.run == nil || next.run == nil {
		return nil, errors.New("compare: runs must come from Build or Read (their histograms are needed)")
	}
	if opts.Resamples == 0 {
		opts.Resamples = DefaultResamples
	}
	if opts.Confidence == 0 {
		opts.Confidence = DefaultConfidence
	}
	if opts.Resamples < 10 {
		return nil, fmt.Errorf("compare: %d resamples: want at least 10", opts.Resamples)
	}
	if !(opts.Confidence > 0 && opts.Confidence < 1) {
		return nil, fmt.Errorf("compare: confidence %v: want a level between 0 and 1, such as 0.95", opts.Confidence)
	}
	if r := opts.MaxRegression; r != nil && (math.IsNaN(*r) || *r < 0) {
		return nil, fmt.Errorf("compare: max regression %v: want a share ≥ 0, such as 0.1 for 10%%", *r)
	}
	rng := opts.Rand
	if rng == nil {
		rng = rand.New(rand.NewPCG(1, 0))
	}
	c := &Comparison{
		Base: runInfo(base), New: runInfo(next),
		Resamples: opts.Resamples, Confidence: opts.Confidence, MaxRegression: opts.MaxRegression,
	}
	c.Rows = deltaRows(base, next)
	for _, m := range bootstrapMetrics() {
		bc := newHistCDF(base.run.Histogram(m, opts.Filter))
		nc := newHistCDF(next.run.Histogram(m, opts.Filter))
		for _, p := range comparedPercentiles {
			c.Percentiles = append(c.Percentiles, comparePercentile(m, p, bc, nc, opts, rng))
		}
	}
	return c, nil
}

func runInfo(d *Document) RunInfo {
	ri := RunInfo{Name: d.Name, DurationS: d.DurationS, Seed: d.Seed, Verdict: d.Verdict}
	if !d.StartedAt.IsZero() {
		ri.StartedAt = d.StartedAt.UTC().Format("2006-01-02T15:04:05Z07:00")
	}
	return ri
}

// tailMin is the fewest values beyond a percentile, on either side, for
// its interval to be trusted.
const tailMin = 10

func comparePercentile(m recording.Metric, p float64, bc, nc histCDF, opts CompareOptions, rng *rand.Rand) PercentileDelta {
	pd := PercentileDelta{Metric: m.String(), P: p, BaseCount: bc.n, NewCount: nc.n}
	if bc.n == 0 || nc.n == 0 {
		pd.Note = "no data"
		return pd
	}
	rb, rn := rank(p, bc.n), rank(p, nc.n)
	vb, vn := bc.atRank(rb), nc.atRank(rn)
	pd.Base, pd.New = float64(vb)/1000, float64(vn)/1000
	if vb > 0 {
		pd.Rel = ptr(float64(vn)/float64(vb) - 1)
	}
	rel := make([]float64, 0, opts.Resamples)
	diff := make([]float64, opts.Resamples)
	for i := range opts.Resamples {
		b := bc.resamplePercentile(rng, rb)
		n := nc.resamplePercentile(rng, rn)
		diff[i] = float64(n-b) / 1000
		if b > 0 {
			rel = append(rel, float64(n)/float64(b)-1)
		}
	}
	alpha := 1 - opts.Confidence
	slices.Sort(diff)
	pd.DiffLow, pd.DiffHigh = ptr(quantileSorted(diff, alpha/2)), ptr(quantileSorted(diff, 1-alpha/2))
	if len(rel) == opts.Resamples {
		slices.Sort(rel)
		pd.RelLow, pd.RelHigh = ptr(quantileSorted(rel, alpha/2)), ptr(quantileSorted(rel, 1-alpha/2))
	}
	switch {
	case *pd.DiffLow > 0:
		pd.Change = "slower"
	case *pd.DiffHigh < 0:
		pd.Change = "faster"
	default:
		pd.Change = "same"
	}
	if lim := opts.MaxRegression; lim != nil && pd.RelLow != nil && *pd.RelLow > *lim {
		pd.Regression = true
	}
	if t := min(rb, bc.n-rb+1, rn, nc.n-rn+1); t < tailMin {
		pd.Note = fmt.Sprintf("only %d values beyond p%s on one side: interval unreliable", t, fmtP(p))
	}
	return pd
}

func ptr(v float64) *float64 { return &v }

func fmtP(p float64) string { return strconv.FormatFloat(p, 'f', -1, 64) }

// deltaRows lists every scalar figure of both runs: the metrics the table
// marks for comparison (metrics.Metric.Compare), by section (latency,
// tokens, throughput, quality, in table order), and the request
// accounting.
func deltaRows(a, b *Document) []DeltaRow {
	var rows []DeltaRow
	add := func(section, name, unit string, x, y float64) {
		r := DeltaRow{Section: section, Name: name, Unit: unit, Base: x, New: y, Delta: y - x}
		if x != 0 {
			r.DeltaRel = ptr(y/x - 1)
		}
		rows = append(rows, r)
	}
	stats := func(section, name, unit string, x, y Stats) {
		add(section, name+" mean", unit, x.Mean, y.Mean)
		add(section, name+" p50", unit, x.P50, y.P50)
		add(section, name+" p90", unit, x.P90, y.P90)
		add(section, name+" p99", unit, x.P99, y.P99)
		add(section, name+" max", unit, x.Max, y.Max)
	}
	table := metrics.Builtin()
	trends := func(section string, time bool) {
		for _, m := range table {
			if m.Kind != metrics.Trend || m.IsTime() != time || m.Compare == metrics.CompareNone {
				continue
			}
			x, okx := a.Metrics[m.JSONKey]
			y, oky := b.Metrics[m.JSONKey]
			switch {
			case !okx || !oky:
			case m.Compare == metrics.CompareValue:
				add(section, m.Name+" mean", m.Unit, x.Mean, y.Mean)
			default:
				stats(section, m.Name, m.Unit, x, y)
			}
		}
	}
	figures := func(section string, kind metrics.Kind) {
		for _, m := range table {
			if m.Kind != kind || m.Compare == metrics.CompareNone {
				continue
			}
			x, okx := figure(a, m)
			y, oky := figure(b, m)
			if okx && oky {
				add(section, m.Name, m.Unit, x, y)
			}
		}
	}
	trends("latency", true)
	trends("tokens", false)
	// The request accounting is the report's, not the table's: its
	// counters (requests sent, requests lost) are among these.
	ra, rb := a.Requests, b.Requests
	for _, x := range []struct {
		name string
		a, b int64
	}{
		{"scheduled", ra.Scheduled, rb.Scheduled}, {"sent", ra.Sent, rb.Sent}, {"ok", ra.OK, rb.OK},
		{"failed", ra.Failed, rb.Failed}, {"cancelled", ra.Cancelled, rb.Cancelled},
		{"dropped", ra.Dropped, rb.Dropped}, {"lost", ra.Lost, rb.Lost},
	} {
		add("requests", x.name, "requests", float64(x.a), float64(x.b))
	}
	figures("throughput", metrics.Gauge)
	figures("quality", metrics.Rate)
	return rows
}

// WriteComparison writes c as an aligned table: each figure of both runs
// with its delta and relative delta; latency percentiles also carry the
// confidence interval of the relative change, slower/faster/same, and
// REGRESSION beyond the limit. A closing line sums the regressions up.
func WriteComparison(w io.Writer, c *Comparison) error {
	var b strings.Builder
	fmt.Fprintf(&b, "base: %s\nnew:  %s\n\n", runLine(c.Base), runLine(c.New))
	pct := make(map[string]PercentileDelta, len(c.Percentiles))
	for _, p := range c.Percentiles {
		pct[p.Metric+" p"+fmtP(p.P)] = p
	}
	ciHead := fmt.Sprintf("%s%% CI of Δ%%", fmtP(c.Confidence*100))
	t := newTable("lrrrrlll")
	t.row("", "base", "new", "delta", "Δ%", ciHead, "", "")
	section := ""
	for _, r := range c.Rows {
		if r.Section != section {
			section = r.Section
			t.row(section)
		}
		rel := "-"
		if r.DeltaRel != nil {
			rel = fmtSigned(*r.DeltaRel*100, 1) + "%"
		}
		cells := []string{"  " + r.Name, fmtUnit(r.Base, r.Unit), fmtUnit(r.New, r.Unit), fmtDelta(r.Delta, r.Unit), rel}
		if p, ok := pct[r.Name]; ok {
			ci, mark := "", p.Change
			if p.RelLow != nil {
				ci = "[" + fmtSigned(*p.RelLow*100, 1) + "%, " + fmtSigned(*p.RelHigh*100, 1) + "%]"
			}
			if p.Regression {
				mark = "REGRESSION"
			}
			cells = append(cells, ci, mark, p.Note)
		}
		t.row(cells...)
	}
	t.write(&b)
	b.WriteByte('\n')
	fmt.Fprintf(&b, "%d bootstrap resamples per percentile from the stored histograms; Δ%% = new/base − 1.\n", c.Resamples)
	if c.MaxRegression != nil {
		reg := c.Regressions()
		lim := fmtSigned(*c.MaxRegression*100, 1) + "%"
		if len(reg) == 0 {
			fmt.Fprintf(&b, "no latency percentile regressed beyond %s with confidence\n", strings.TrimPrefix(lim, "+"))
		} else {
			var names []string
			for _, p := range reg {
				names = append(names, p.Metric+" p"+fmtP(p.P))
			}
			fmt.Fprintf(&b, "REGRESSION beyond %s with confidence: %s\n", strings.TrimPrefix(lim, "+"), strings.Join(names, ", "))
		}
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write comparison: %w", err)
	}
	return nil
}

// WriteComparisonJSON writes c as indented JSON.
func WriteComparisonJSON(w io.Writer, c *Comparison) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(c); err != nil {
		return fmt.Errorf("write comparison: %w", err)
	}
	return nil
}

func runLine(r RunInfo) string {
	var parts []string
	if r.Name != "" {
		parts = append(parts, strconv.Quote(r.Name))
	}
	if r.StartedAt != "" {
		parts = append(parts, "started "+r.StartedAt)
	}
	parts = append(parts, "duration "+fmtSeconds(r.DurationS), "seed "+strconv.FormatInt(r.Seed, 10))
	if r.Verdict != "" {
		parts = append(parts, "verdict "+r.Verdict)
	}
	return strings.Join(parts, "  ")
}

func fmtUnit(v float64, unit string) string {
	switch unit {
	case "ms":
		return fmtMs(v)
	case "1/s":
		return fmtRate(v)
	case "ratio":
		return fmtPercent(v)
	case "tokens":
		return fmtTokens(v)
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

func fmtDelta(v float64, unit string) string {
	sign := "+"
	if v < 0 {
		sign = "-"
		v = -v
	}
	switch unit {
	case "ratio":
		return sign + strconv.FormatFloat(v*100, 'f', 2, 64) + "pp"
	case "":
	default:
		if v == 0 {
			return "0"
		}
	}
	return sign + fmtUnit(v, unit)
}

func fmtSigned(v float64, prec int) string {
	s := strconv.FormatFloat(v, 'f', prec, 64)
	if strings.Trim(s, "-0.") == "" { // rounds to zero: no sign
		return strings.TrimPrefix(s, "-")
	}
	if !strings.HasPrefix(s, "-") {
		s = "+" + s
	}
	return s
}
