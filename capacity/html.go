package capacity

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/report"
)

// Colours of the capacity page's marks (the report's pass green and fail
// red, its p99 and p50 blues).
const (
	colKnee  = "#1a7f37"
	colBound = "#cf222e"
	colP99   = "#1d4f91"
	colP50   = "#7aa7dc"
)

// WriteHTMLFile writes r's HTML page to path.
func WriteHTMLFile(path string, r *Result) error {
	var b bytes.Buffer
	if err := WriteHTML(&b, r); err != nil {
		return err
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write capacity HTML: %w", err)
	}
	return nil
}

// WriteHTML writes r as a self-contained HTML page in the run report's
// look (report.PageStyle, report.XYPlot): a banner with the knee and the
// result in one sentence, cards, for each SLO its value against the load
// with the SLO's bound and the knee marked, the throughput curve (sent,
// ok and good requests per second against the load offered), the steps'
// table and the method. It loads nothing and runs no script.
func WriteHTML(w io.Writer, r *Result) error {
	p, err := newPage(r)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := pageTemplate.Execute(&b, p); err != nil {
		return fmt.Errorf("capacity HTML: %w", err)
	}
	_, err = w.Write(b.Bytes())
	return err
}

// page is what the template shows.
type page struct {
	R      *Result
	Style  template.CSS
	Word   string
	Banner string
	Title  string
	Meta   []string
	Cards  []card
	Plots  []figure
	Steps  []stepRow
	SLOs   []string
	Method []fact
	// NoteSpan is the columns a step's note spans (all but the first).
	NoteSpan int
}

type card struct{ Label, Value, Sub string }

type figure struct {
	Title, Unit, Note string
	Keys              []key
	SVG               template.HTML
}

type key struct {
	Label, Color string
	Dashed       bool
}

type stepRow struct {
	Step
	PhaseText                      string
	Load, Measured, Sent, OK, Good string
	Values                         []sloCell
	Word, Class                    string
	Note                           string
}

type sloCell struct {
	Text string
	OK   bool
}

type fact struct{ Name, Value string }

func newPage(r *Result) (*page, error) {
	p := &page{R: r, Style: report.PageStyle(), NoteSpan: 8 + len(r.SLOs)}
	for _, slo := range r.SLOs {
		p.SLOs = append(p.SLOs, sloHeader(slo))
	}
	u := r.Unit
	switch r.Status {
	case StatusFound, StatusAboveMax:
		p.Banner = "pass"
	case StatusClientLimited:
		p.Banner = "aborted"
	case StatusBelowMin:
		p.Banner = "fail"
	default:
		p.Banner = "unknown"
	}
	p.Word = "NO KNEE"
	if r.Knee.Load > 0 {
		p.Word = FormatLoad(r.Knee.Load) + " " + u
		if r.Status == StatusAboveMax || r.Status == StatusClientLimited {
			p.Word = "≥ " + p.Word
		}
	}
	p.Title = fmt.Sprintf("%s · capacity of %s · llmchaos", p.Word, r.Model)
	p.Meta = []string{strings.Join(r.Targets, ", "), string(r.Mode) + " mode", "workload " + r.workloadName(), "seed " + strconv.FormatUint(r.Seed, 10)}
	if !r.StartedAt.IsZero() {
		p.Meta = append(p.Meta, r.StartedAt.UTC().Format(time.RFC3339))
	}
	p.Meta = append(p.Meta, (time.Duration(r.DurationS * float64(time.Second))).Round(time.Second).String())

	k := r.Knee
	kneeSub := "highest load that held every SLO"
	bracket, bracketSub := "—", "no load failed above the knee"
	if k.Hi > 0 {
		bracket = FormatLoad(k.Lo) + "–" + FormatLoad(k.Hi)
		bracketSub = fmt.Sprintf("%s, the knee within %.1f%% below the real one", u, 100*k.Uncertainty)
	}
	p.Cards = []card{
		{"knee", orDash(k.Load, FormatLoad(k.Load)+" "+u), kneeSub},
		{"bracket", bracket, bracketSub},
		{"throughput at knee", fmt.Sprintf("%.2f", k.ThroughputRPS), "ok requests/s"},
		{"goodput at knee", fmt.Sprintf("%.2f", k.GoodputRPS), "requests/s within " + orText(r.Goodput, "no per-request SLO")},
		{"output tokens/s", fmt.Sprintf("%.0f", k.OutputTokensPerS), "at the knee"},
		{"steps", strconv.Itoa(len(r.Steps)), fmt.Sprintf("status %s", r.Status)},
	}
	var err error
	if p.Plots, err = plots(r); err != nil {
		return nil, err
	}
	for _, st := range r.Steps {
		row := stepRow{Step: st, PhaseText: string(st.Phase), Load: FormatLoad(st.Load), Measured: fmt.Sprintf("%.1fs · %d req", st.MeasureS, st.Sent), Sent: fmt.Sprintf("%.1f", st.AchievedRPS),
			OK: fmt.Sprintf("%.1f", st.ThroughputRPS), Good: fmt.Sprintf("%.1f", st.GoodputRPS), Word: verdictWord(st.Verdict)}
		switch st.Verdict {
		case Fail:
			row.Class = "failed"
		case ClientLimited:
			row.Class = "failed"
			row.Note = strings.Join(st.Client, "; ")
		}
		if !st.Full {
			row.PhaseText = string(st.Phase) + " · short"
		} else if r.cappedShort(st) {
			row.Note = strings.TrimPrefix(row.Note+fmt.Sprintf("; %d requests, fewer than the %d the percentiles need", st.Sent, st.Needed), "; ")
		}
		for _, v := range st.SLOs {
			row.Values = append(row.Values, sloCell{v.Observed, v.OK})
		}
		p.Steps = append(p.Steps, row)
	}
	m := r.Method
	p.Method = []fact{
		{"search", fmt.Sprintf("ramp from %s %s, ×%s per step, within [%s, %s] %s; bisection until the bracket is within %.1f%%; at most %d steps", FormatLoad(m.Start), u, FormatLoad(m.Growth), FormatLoad(m.Min), FormatLoad(m.Max), u, 100*m.Precision, m.MaxSteps)},
		{"step length", fmt.Sprintf("%d requests measured (max(10/(1−q), %d) for the highest percentile q, 10/b for a rate bound b), within [%s, %s]; ramp steps %s", m.StepRequests, MinStepRequests, fmtSeconds(m.MinStepS), fmtSeconds(m.MaxStepS), fmtSeconds(m.ShortStepS))},
		{"each step", fmt.Sprintf("%s of warm-up discarded, then the measurement; requests in flight get %s to finish; %s settle before the next step", fmtSeconds(m.WarmupS), fmtSeconds(m.GraceS), fmtSeconds(m.SettleS))},
		{"client limits", fmt.Sprintf("sent below %.0f%% of the schedule, send lag p99 above %gms, drops above %.1f%%, client CPU above %s", 100*m.MinSentShare, m.MaxSendLagMs, 100*m.MaxDropShare, cpuLimit(m.MaxCPU))},
		{"workload", workloadText(r.Workload)},
	}
	return p, nil
}

func orDash(v float64, s string) string {
	if v == 0 {
		return "—"
	}
	return s
}

func orText(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func cpuLimit(v float64) string {
	if v <= 0 {
		return "(not checked)"
	}
	return fmt.Sprintf("%.0f%%", 100*v)
}

func workloadText(w WorkloadRecord) string {
	s := fmt.Sprintf("%s: %s API, input tokens %s, output tokens %s", orText(w.Preset, w.Class), w.API, w.InputTokens, w.OutputTokens)
	if w.IgnoreEOS {
		s += ", ignore_eos"
	}
	if w.Arrival != "" {
		s += ", " + w.Arrival + " arrivals"
	}
	if w.MaxInFlight > 0 {
		s += fmt.Sprintf(", at most %d in flight", w.MaxInFlight)
	}
	return s
}

// curve is the steps that count, one per load, in load order.
func curve(r *Result) []Step {
	var loads []float64
	for _, st := range r.Steps {
		if !slices.Contains(loads, st.Load) {
			loads = append(loads, st.Load)
		}
	}
	slices.Sort(loads)
	out := make([]Step, 0, len(loads))
	for _, l := range loads {
		st, _ := r.stepAt(l)
		out = append(out, st)
	}
	return out
}

// plots draws, for each SLO, its value against the load with its bound
// and the knee, then the throughput curve.
func plots(r *Result) ([]figure, error) {
	steps := curve(r)
	xs := make([]float64, len(steps))
	for i, st := range steps {
		xs[i] = st.Load
	}
	xlabel := "load (" + r.Unit + ")"
	var marks []report.XYMark
	if r.Knee.Load > 0 {
		marks = append(marks, report.XYMark{Label: "knee " + FormatLoad(r.Knee.Load), Color: colKnee, At: r.Knee.Load, Vertical: true})
	}
	if r.Knee.Hi > 0 {
		marks = append(marks, report.XYMark{Color: colBound, At: r.Knee.Hi, Vertical: true, Dashed: true})
	}
	var figs []figure
	var errs []error
	for i, slo := range r.SLOs {
		ys := make([]float64, len(steps))
		var bound float64
		metric := ""
		for j, st := range steps {
			ys[j] = nan()
			if i < len(st.SLOs) {
				v := st.SLOs[i]
				bound, metric = v.Bound, v.Metric
				if !v.NoData {
					ys[j] = v.Value
				}
			}
		}
		unit := ""
		if m, ok := assertions.LookupMetric(metric); ok && m.Kind == assertions.KindDuration {
			unit = "ms"
		}
		lines := []report.XYLine{{Label: sloHeader(slo), Color: colP99, Dots: true, X: xs, Y: ys}}
		keys := []key{{Label: sloHeader(slo), Color: colP99}}
		if lat, ok := latencyName(metric); ok && !isMedian(slo) {
			p50 := make([]float64, len(steps))
			for j, st := range steps {
				p50[j] = nan()
				if v, ok := st.Latency[lat]; ok {
					p50[j] = v.P50
				}
			}
			lines = append(lines, report.XYLine{Label: metric + " p50", Color: colP50, X: xs, Y: p50})
			keys = append(keys, key{Label: metric + " p50", Color: colP50})
		}
		mk := append(slices.Clone(marks), report.XYMark{Label: "SLO " + slo, Color: colBound, At: bound, Dashed: true})
		svg, err := report.XYPlot{Title: slo, XLabel: xlabel, Lines: lines, Marks: mk, YClip: 4}.SVG()
		errs = append(errs, err)
		keys = append(keys, key{Label: "bound", Color: colBound, Dashed: true}, key{Label: "knee", Color: colKnee})
		figs = append(figs, figure{Title: slo, Unit: unit, Note: "one dot per load measured; a triangle on the top edge lies above the plot", Keys: keys, SVG: svg})
	}
	sent, ok, good := make([]float64, len(steps)), make([]float64, len(steps)), make([]float64, len(steps))
	for j, st := range steps {
		sent[j], ok[j], good[j] = st.AchievedRPS, st.ThroughputRPS, st.GoodputRPS
	}
	lines := []report.XYLine{
		{Label: "sent/s", Color: report.LineColor(1), Dots: true, X: xs, Y: sent},
		{Label: "ok/s", Color: colP99, Dots: true, X: xs, Y: ok},
		{Label: "goodput/s", Color: colKnee, Dots: true, X: xs, Y: good},
	}
	keys := []key{{Label: "sent/s", Color: report.LineColor(1)}, {Label: "ok/s", Color: colP99}, {Label: "goodput/s", Color: colKnee}}
	if r.Mode == ModeRate && len(xs) > 0 {
		top := xs[len(xs)-1]
		lines = append(lines, report.XYLine{Label: "offered", Color: "#8c959f", Dashed: true, X: []float64{0, top}, Y: []float64{0, top}})
		keys = append(keys, key{Label: "offered", Color: "#8c959f", Dashed: true})
	}
	svg, err := report.XYPlot{Title: "throughput", XLabel: xlabel, Lines: lines, Marks: marks}.SVG()
	errs = append(errs, err)
	figs = append(figs, figure{Title: "Throughput", Unit: "requests/s", Note: "requests of the measurement window sent, answered ok, and answered within every per-request SLO, per second", Keys: keys, SVG: svg})
	return figs, errors.Join(errs...)
}

// isMedian reports whether an SLO's aggregation is the median, which the
// p50 line would only repeat.
func isMedian(slo string) bool {
	_, expr, _ := strings.Cut(slo, ": ")
	return strings.HasPrefix(expr, "med") || strings.HasPrefix(expr, "p(50)")
}

// latencyName is the Step.Latency key of a latency metric.
func latencyName(metric string) (string, bool) {
	for _, lm := range latencyMetrics {
		if lm.name == metric {
			return lm.name, true
		}
	}
	return "", false
}

var pageTemplate = template.Must(template.New("capacity").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="llmchaos {{.R.ToolVersion}}">
<title>{{.Title}}</title>
<style>{{.Style}}
td.ok { color: var(--pass); } td.bad { color: var(--fail); font-weight: 600; }
dl.method { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; font-size: 14px; }
dl.method dt { color: var(--muted); } dl.method dd { margin: 0; }
tr.note-row td { border-top: 0; padding-top: 0; font-size: 13px; color: var(--muted); }
</style>
</head>
<body>
<header class="banner {{.Banner}}" id="verdict">
<div class="verdict-word">{{.Word}}</div>
<div>
<h1>Capacity of {{.R.Model}}</h1>
<p class="why">{{.R.Summary}}</p>
<p class="meta">{{range .Meta}}<span>{{.}}</span>{{end}}</p>
</div>
</header>
<nav><a href="#curves">Curves</a><a href="#steps">Steps</a><a href="#method">Method</a></nav>
<main>
<div class="cards">{{range .Cards}}<div class="card"><div class="label">{{.Label}}</div><div class="value">{{.Value}}</div><div class="sub">{{.Sub}}</div></div>{{end}}</div>
<section id="curves">
<h2>Latency and throughput against load</h2>
<p class="hint">SLOs: {{range $i, $s := .R.SLOs}}{{if $i}}; {{end}}<code>{{$s}}</code>{{end}}. Each point is the measurement window of the step that counts at that load (its last full-length one).</p>
<div class="plots">{{range .Plots}}
<figure>
<figcaption><span class="title">{{.Title}}</span>{{if .Unit}}<span class="unit">{{.Unit}}</span>{{end}}{{range .Keys}}<span class="key"><svg width="18" height="8" aria-hidden="true"><line x1="0" y1="4" x2="18" y2="4" stroke="{{.Color}}" stroke-width="2"{{if .Dashed}} stroke-dasharray="4 3"{{end}}/></svg>{{.Label}}</span>{{end}}</figcaption>
{{.SVG}}
<p class="note">{{.Note}}</p>
</figure>{{end}}
</div>
</section>
<section id="steps">
<h2>Steps</h2>
<div class="table-wrap"><table>
<thead><tr><th class="num">#</th><th>phase</th><th class="num">load {{.R.Unit}}</th><th class="num">measured</th><th class="num">sent/s</th><th class="num">ok/s</th><th class="num">goodput/s</th>{{range .SLOs}}<th class="num" title="{{.}}">{{.}}</th>{{end}}<th class="num">send lag p99</th><th>verdict</th></tr></thead>
<tbody>{{range .Steps}}
<tr{{if .Class}} class="{{.Class}}"{{end}}><td class="num">{{.Index}}</td><td>{{.PhaseText}}</td><td class="num">{{.Load}}</td><td class="num">{{.Measured}}</td><td class="num">{{.Sent}}</td><td class="num">{{.OK}}</td><td class="num">{{.Good}}</td>{{range .Values}}<td class="num {{if .OK}}ok{{else}}bad{{end}}">{{.Text}}</td>{{end}}<td class="num">{{printf "%.1f" .SendLagP99Ms}}ms</td><td>{{.Word}}</td></tr>{{if .Note}}
<tr class="note-row{{if .Class}} {{.Class}}{{end}}"><td></td><td colspan="{{$.NoteSpan}}">{{.Note}}</td></tr>{{end}}{{end}}
</tbody></table></div>
</section>
<section id="method">
<h2>Method</h2>
<dl class="method">{{range .Method}}<dt>{{.Name}}</dt><dd>{{.Value}}</dd>{{end}}</dl>
</section>
</main>
</body>
</html>
`))

func nan() float64 { return math.NaN() }
