package report

import (
	"math"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// timePlots builds the report's plots over the run clock from d's
// 1-second series and its monitors: latency percentiles, error rate by
// class, throughput, output tokens, in-flight requests, then the server's
// and the GPU's series when present.
func timePlots(d *Document) []*timePlot {
	var out []*timePlot
	rows := d.Timeseries
	if len(rows) > 0 {
		for _, x := range []struct {
			id, title string
			p50, p99  func(r *SecondRow) *float64
		}{
			{"plot-ttft", "Time to first token", func(r *SecondRow) *float64 { return r.TTFTP50Ms }, func(r *SecondRow) *float64 { return r.TTFTP99Ms }},
			{"plot-itl", "Inter-token latency", func(r *SecondRow) *float64 { return r.ITLP50Ms }, func(r *SecondRow) *float64 { return r.ITLP99Ms }},
			{"plot-e2e", "End-to-end latency", func(r *SecondRow) *float64 { return r.E2EP50Ms }, func(r *SecondRow) *float64 { return r.E2EP99Ms }},
		} {
			out = append(out, &timePlot{
				ID: x.id, Title: x.title, Unit: "ms",
				Lines: []plotLine{
					{Label: "p99", Color: colP99, Width: 1.8, pts: percentilePoints(rows, x.p99)},
					{Label: "p50", Color: colP50, Width: 1.4, pts: percentilePoints(rows, x.p50)},
				},
			})
		}
		out = append(out, errorRatePlot(d))
		if cp := consistencyPlot(d); cp != nil {
			out = append(out, cp)
		}
		out = append(out, throughputPlot(d), tokensPlot(d), inFlightPlot(d))
	}
	out = append(out, monitorPlots("server", d.Server)...)
	out = append(out, monitorPlots("gpu", d.GPU)...)
	return out
}

// percentilePoints places a per-second percentile at the middle of its
// second; a second without values breaks the line.
func percentilePoints(rows []SecondRow, f func(r *SecondRow) *float64) []point {
	pts := make([]point, len(rows))
	for i := range rows {
		y := math.NaN()
		if v := f(&rows[i]); v != nil {
			y = *v
		}
		pts[i] = point{float64(rows[i].T) + 0.5, y}
	}
	return pts
}

// ratePoints places a per-second count at the middle of its second. The
// last row may cover part of a second: its count is divided by the part
// covered, and left out below half a second, where it would mostly be
// noise.
func ratePoints(d *Document, f func(r *SecondRow) float64) []point {
	pts := make([]point, 0, len(d.Timeseries))
	for i := range d.Timeseries {
		r := &d.Timeseries[i]
		cover := 1.0
		if d.DurationS > 0 {
			cover = math.Min(1, d.DurationS-float64(r.T))
		}
		if cover < 0.5 {
			continue
		}
		pts = append(pts, point{float64(r.T) + 0.5, f(r) / cover})
	}
	return pts
}

// errorClasses lists the failure classes (not cancellations) seen in d's
// series, in report order.
func errorClasses(d *Document) []string {
	seen := map[string]bool{}
	for _, r := range d.Timeseries {
		for c, n := range r.ErrorsByClass {
			if n > 0 && c != string(recording.ClassCancelled) {
				seen[c] = true
			}
		}
	}
	var out []string
	for _, c := range append(append([]recording.ErrorClass(nil), recording.ErrorClasses...), recording.ClassUnknown) {
		if seen[string(c)] {
			out = append(out, string(c))
			delete(seen, string(c))
		}
	}
	rest := make([]string, 0, len(seen))
	for c := range seen {
		rest = append(rest, c)
	}
	sort.Strings(rest)
	return append(out, rest...)
}

func errorRatePlot(d *Document) *timePlot {
	tp := &timePlot{ID: "plot-errors", Title: "Error rate by class", Unit: "% of finished", yMin: 1,
		Note: "failed requests of each class / requests finished that second"}
	share := func(n int64, r *SecondRow) float64 {
		fin := r.OK + r.Failed + r.Cancelled
		if fin == 0 {
			return math.NaN()
		}
		return 100 * float64(n) / float64(fin)
	}
	all := plotLine{Label: "all", Color: colMuted, Dashed: true, Width: 1.3}
	for i := range d.Timeseries {
		r := &d.Timeseries[i]
		all.pts = append(all.pts, point{float64(r.T) + 0.5, share(r.Failed, r)})
	}
	for _, c := range errorClasses(d) {
		l := plotLine{Label: c, Color: classColor(c), Width: 1.6}
		for i := range d.Timeseries {
			r := &d.Timeseries[i]
			l.pts = append(l.pts, point{float64(r.T) + 0.5, share(r.ErrorsByClass[c], r)})
		}
		tp.Lines = append(tp.Lines, l)
	}
	tp.Lines = append(tp.Lines, all)
	return tp
}

func throughputPlot(d *Document) *timePlot {
	tp := &timePlot{ID: "plot-throughput", Title: "Requests per second by outcome", Unit: "requests/s", yMin: 1}
	tp.Lines = append(tp.Lines,
		plotLine{Label: "ok", Color: colOK, pts: ratePoints(d, func(r *SecondRow) float64 { return float64(r.OK) })},
		plotLine{Label: "failed", Color: colFailed, pts: ratePoints(d, func(r *SecondRow) float64 { return float64(r.Failed) })})
	var cancelled, dropped bool
	for _, r := range d.Timeseries {
		cancelled = cancelled || r.Cancelled > 0
		dropped = dropped || r.Dropped > 0
	}
	if cancelled {
		tp.Lines = append(tp.Lines, plotLine{Label: "cancelled", Color: "#7f7f7f", pts: ratePoints(d, func(r *SecondRow) float64 { return float64(r.Cancelled) })})
	}
	if dropped {
		tp.Lines = append(tp.Lines, plotLine{Label: "dropped", Color: "#8c6d31", Dashed: true, pts: ratePoints(d, func(r *SecondRow) float64 { return float64(r.Dropped) })})
	}
	return tp
}

// tokensPlot draws the tokens as they streamed (tokens_streamed, by event
// time); a report written before that field existed has only the ok
// requests' tokens in the second they ended.
func tokensPlot(d *Document) *timePlot {
	streamed := false
	for i := range d.Timeseries {
		streamed = streamed || d.Timeseries[i].TokensStreamed != 0
	}
	if !streamed {
		return &timePlot{ID: "plot-tokens", Title: "Output tokens per second", Unit: "tokens/s", yMin: 1,
			Note:  "tokens of ok requests, counted in the second they ended",
			Lines: []plotLine{{Label: "output tokens", Color: lineColor(3), pts: ratePoints(d, func(r *SecondRow) float64 { return float64(r.OutputTokens) })}},
		}
	}
	return &timePlot{ID: "plot-tokens", Title: "Output tokens per second", Unit: "tokens/s", yMin: 1,
		Note:  "tokens as they streamed, counted in the second they arrived",
		Lines: []plotLine{{Label: "output tokens", Color: lineColor(3), pts: ratePoints(d, func(r *SecondRow) float64 { return float64(r.TokensStreamed) })}},
	}
}

func inFlightPlot(d *Document) *timePlot {
	var maxPts, meanPts []point
	for _, r := range d.Timeseries {
		maxPts = append(maxPts, point{float64(r.T) + 0.5, float64(r.InFlightMax)})
		meanPts = append(meanPts, point{float64(r.T) + 0.5, r.InFlightMean})
	}
	return &timePlot{ID: "plot-inflight", Title: "Requests in flight", Unit: "requests", yMin: 1,
		Lines: []plotLine{
			{Label: "max", Color: lineColor(0), Width: 1.6, pts: maxPts},
			{Label: "mean", Color: colP50, Width: 1.4, pts: meanPts},
		},
	}
}

// monitorGroup is the plot a monitored series goes to: KV cache usage,
// the scheduler's queue (running and waiting together) or its own name.
func monitorGroup(name string) string {
	switch n := strings.ToLower(name); {
	case strings.Contains(n, "kv_cache_usage") || strings.Contains(n, "cache_usage"):
		return "kv"
	case strings.Contains(n, "num_requests_running") || strings.Contains(n, "num_requests_waiting"):
		return "queue"
	}
	return name
}

// monitorPlots builds one plot per group of monitored series; lines are
// per endpoint (colour) and, in the queue plot, per series (running solid,
// waiting dashed).
func monitorPlots(kind string, series []SeriesRecord) []*timePlot {
	var order []string
	groups := map[string][]SeriesRecord{}
	for _, s := range series {
		g := monitorGroup(s.Name)
		if _, ok := groups[g]; !ok {
			order = append(order, g)
		}
		groups[g] = append(groups[g], s)
	}
	// Known groups first, in a fixed order; the rest as they came.
	rank := func(g string) int {
		switch g {
		case "kv":
			return 0
		case "queue":
			return 1
		}
		return 2
	}
	slices.SortStableFunc(order, func(a, b string) int { return rank(a) - rank(b) })
	var endpoints []string
	for _, s := range series {
		if !slices.Contains(endpoints, s.Endpoint) {
			endpoints = append(endpoints, s.Endpoint)
		}
	}
	colorOf := func(ep string) string { return lineColor(slices.Index(endpoints, ep)) }
	var out []*timePlot
	for i, g := range order {
		ss := groups[g]
		tp := &timePlot{ID: "plot-" + kind + "-" + slug(g, i), yMin: 1}
		prefix := "Server"
		if kind == "gpu" {
			prefix = "GPU"
		}
		scale, unit := monitorScale(ss)
		// A counter (Prometheus's _total) reads as its rate.
		counter := g != "kv" && g != "queue" && strings.HasSuffix(strings.ToLower(g), "_total")
		if counter {
			unit = "per second"
		}
		tp.Unit = unit
		switch g {
		case "kv":
			tp.Title = prefix + " KV cache usage"
		case "queue":
			tp.Title = prefix + " requests running and waiting"
		default:
			tp.Title = prefix + " " + humanName(g, kind)
			if counter {
				tp.Title += " per second"
			}
		}
		for _, s := range ss {
			label := shortEndpoint(s.Endpoint)
			dashed := false
			if g == "queue" {
				what := "running"
				if strings.Contains(strings.ToLower(s.Name), "waiting") {
					what, dashed = "waiting", true
				}
				label = strings.TrimSpace(what + " " + label)
			}
			if label == "" {
				label = s.Name
			}
			pts := s.Points
			if counter {
				pts = counterRate(pts)
			}
			tp.Lines = append(tp.Lines, plotLine{Label: label, Color: colorOf(s.Endpoint), Dashed: dashed, pts: sampledPoints(pts, scale)})
		}
		out = append(out, tp)
	}
	return out
}

// monitorScale picks how the group's values are shown: ratios as
// percentages, bytes as GiB, anything else as is.
func monitorScale(ss []SeriesRecord) (scale float64, unit string) {
	unit = ss[0].Unit
	name := strings.ToLower(ss[0].Name)
	switch {
	case unit == "ratio" || (unit == "" && strings.HasSuffix(name, "_perc") && maxValue(ss) <= 1):
		return 100, "%"
	case unit == "bytes" || (unit == "" && strings.HasSuffix(name, "_bytes")):
		return 1.0 / (1 << 30), "GiB"
	}
	return 1, unit
}

func maxValue(ss []SeriesRecord) float64 {
	m := math.Inf(-1)
	for _, s := range ss {
		for _, p := range s.Points {
			m = math.Max(m, p[1])
		}
	}
	return m
}

// sampledPoints scales a monitored series and breaks its line where
// samples are missing: a gap longer than 2.5 times the usual interval (a
// replica that was down, a scrape that failed).
func sampledPoints(pts [][2]float64, scale float64) []point {
	if len(pts) == 0 {
		return nil
	}
	gaps := make([]float64, 0, len(pts))
	for i := 1; i < len(pts); i++ {
		gaps = append(gaps, pts[i][0]-pts[i-1][0])
	}
	limit := math.Inf(1)
	if len(gaps) > 0 {
		s := slices.Clone(gaps)
		slices.Sort(s)
		limit = 2.5 * s[len(s)/2]
	}
	out := make([]point, 0, len(pts)+4)
	for i, p := range pts {
		if i > 0 && p[0]-pts[i-1][0] > limit {
			out = append(out, point{(p[0] + pts[i-1][0]) / 2, math.NaN()})
		}
		out = append(out, point{p[0], p[1] * scale})
	}
	return out
}

// shortEndpoint writes an endpoint for a legend: the host and port of a
// URL, or the text as given.
func shortEndpoint(ep string) string {
	if u, err := url.Parse(ep); err == nil && u.Host != "" {
		return u.Host
	}
	return ep
}

// slug makes an HTML id part from a series name; i keeps it unique.
func slug(s string, i int) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			if b.Len() > 0 && !strings.HasSuffix(b.String(), "-") {
				b.WriteByte('-')
			}
		}
	}
	out := strings.TrimSuffix(b.String(), "-")
	if out == "kv" || out == "queue" {
		return out
	}
	if out == "" {
		out = "series"
	}
	return out + "-" + strconv.Itoa(i)
}

// humanName turns a metric name into a plot title's words:
// "vllm:num_preemptions_total" → "num preemptions", and for the GPU,
// "gpu_memory_used_bytes" → "memory used".
func humanName(name, kind string) string {
	if i := strings.LastIndexByte(name, ':'); i >= 0 {
		name = name[i+1:]
	}
	w := strings.Fields(strings.ReplaceAll(name, "_", " "))
	for len(w) > 1 && slices.Contains([]string{"bytes", "perc", "total", "seconds", "ratio"}, w[len(w)-1]) {
		w = w[:len(w)-1]
	}
	if kind == "gpu" && len(w) > 1 && w[0] == "gpu" {
		w = w[1:]
	}
	return strings.Join(w, " ")
}

// counterRate turns samples of a monotonic counter into its rate per
// second between samples, placed at the later one; a counter that went
// down (a restarted server) gives no rate for that interval.
func counterRate(pts [][2]float64) [][2]float64 {
	out := make([][2]float64, 0, len(pts))
	for i := 1; i < len(pts); i++ {
		dt, dv := pts[i][0]-pts[i-1][0], pts[i][1]-pts[i-1][1]
		if dt <= 0 {
			continue
		}
		r := dv / dt
		if dv < 0 {
			r = math.NaN()
		}
		out = append(out, [2]float64{pts[i][0], r})
	}
	return out
}
