package js

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// TextSummaryOptions are textSummary's options, as the k6-summary jslib's:
// the prefix of every line (default one space) and whether to colour the
// check and threshold marks. SummaryTrendStats and SummaryTimeUnit, when
// set, replace the data's options.
type TextSummaryOptions struct {
	Indent            *string  `json:"indent"`
	EnableColors      bool     `json:"enableColors"`
	SummaryTrendStats []string `json:"summaryTrendStats"`
	SummaryTimeUnit   string   `json:"summaryTimeUnit"`
}

// ANSI colours of the text summary.
const (
	colorGreen = "\x1b[32m"
	colorRed   = "\x1b[31m"
	colorFaint = "\x1b[2m"
	colorReset = "\x1b[0m"
)

// TextSummary renders d as k6's end-of-test summary does: the checks by
// group, then one line per metric in name order, a metric with thresholds
// marked ✓ when all held and ✗ otherwise, its tag selections under it.
func TextSummary(d SummaryData, o TextSummaryOptions) string {
	indent := " "
	if o.Indent != nil {
		indent = *o.Indent
	}
	stats := d.Options.SummaryTrendStats
	if len(o.SummaryTrendStats) > 0 {
		stats = o.SummaryTrendStats
	}
	if len(stats) == 0 {
		stats = DefaultSummaryTrendStats()
	}
	unit := cmpOr(o.SummaryTimeUnit, d.Options.SummaryTimeUnit)
	paint := func(s, c string) string {
		if !o.EnableColors {
			return s
		}
		return c + s + colorReset
	}
	var lines []string
	writeGroup(&lines, d.RootGroup, "    ", paint, true)
	if len(lines) > 0 {
		lines = append(lines, "")
	}
	lines = append(lines, metricLines(d.Metrics, stats, unit, paint)...)
	var b strings.Builder
	for _, l := range lines {
		if l != "" {
			b.WriteString(indent + l)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// writeGroup adds the lines of g's checks and of its groups.
func writeGroup(lines *[]string, g SummaryGroup, pad string, paint func(string, string) string, root bool) {
	if !root {
		*lines = append(*lines, pad+"█ "+g.Name, "")
		pad += "  "
	}
	for _, c := range g.Checks {
		if c.Fails == 0 {
			*lines = append(*lines, pad+paint("✓ "+c.Name, colorGreen))
			continue
		}
		*lines = append(*lines, pad+paint("✗ "+c.Name, colorRed))
		pct := 0.0
		if n := c.Passes + c.Fails; n > 0 {
			pct = math.Floor(100 * float64(c.Passes) / float64(n))
		}
		*lines = append(*lines, pad+" ↳  "+strconv.FormatFloat(pct, 'f', 0, 64)+"% — ✓ "+
			strconv.FormatInt(c.Passes, 10)+" / ✗ "+strconv.FormatInt(c.Fails, 10))
	}
	for i, sub := range g.Groups {
		if i > 0 || len(g.Checks) > 0 {
			*lines = append(*lines, "")
		}
		writeGroup(lines, sub, pad, paint, false)
	}
}

// metricLines are the metrics' lines: name, dots, values.
func metricLines(ms map[string]SummaryMetric, stats []string, unit string, paint func(string, string) string) []string {
	names := make([]string, 0, len(ms))
	for n := range ms {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		bi, bj := baseMetric(names[i]), baseMetric(names[j])
		if bi != bj {
			return bi < bj
		}
		return names[i] < names[j]
	})
	label := func(n string) string {
		if b := baseMetric(n); b != n && ms[b].Type != "" {
			return "  " + n[len(b):] // a selection under its metric
		}
		return n
	}
	width := 0
	for _, n := range names {
		width = max(width, utf8.RuneCountInString(label(n)))
	}
	// Trend statistics are aligned in columns across the trends.
	cells := map[string][]string{}
	colWidth := make([]int, len(stats))
	for _, n := range names {
		m := ms[n]
		if m.Type != "trend" {
			continue
		}
		row := make([]string, len(stats))
		for i, s := range stats {
			v, ok := m.Values[s]
			text := "-"
			switch {
			case ok && s == "count":
				text = formatNumber(v)
			case ok:
				text = formatValue(v, m.Contains, unit)
			}
			row[i] = s + "=" + text
			colWidth[i] = max(colWidth[i], utf8.RuneCountInString(row[i]))
		}
		cells[n] = row
	}
	var out []string
	for _, n := range names {
		m := ms[n]
		mark := "  "
		if len(m.Thresholds) > 0 {
			mark = paint("✓ ", colorGreen)
			for _, t := range m.Thresholds {
				if !t.OK {
					mark = paint("✗ ", colorRed)
					break
				}
			}
		}
		l := label(n)
		dots := strings.Repeat(".", width-utf8.RuneCountInString(l)+3)
		out = append(out, mark+l+paint(dots, colorFaint)+": "+metricValues(m, cells[n], colWidth, unit))
	}
	return out
}

// baseMetric is the metric a selection is of: "ttft" for "ttft{class:a}".
func baseMetric(name string) string {
	if i := strings.IndexByte(name, '{'); i > 0 {
		return name[:i]
	}
	return name
}

// metricValues is the value part of a metric's line.
func metricValues(m SummaryMetric, trendCells []string, colWidth []int, unit string) string {
	v := m.Values
	switch m.Type {
	case "trend":
		parts := make([]string, len(trendCells))
		for i, c := range trendCells {
			parts[i] = c + strings.Repeat(" ", colWidth[i]-utf8.RuneCountInString(c))
		}
		return strings.TrimRight(strings.Join(parts, " "), " ")
	case "rate":
		return strconv.FormatFloat(100*v["rate"], 'f', 2, 64) + "% ✓ " + formatNumber(v["passes"]) + " ✗ " + formatNumber(v["fails"])
	case "counter":
		return padRight(formatValue(v["count"], m.Contains, unit), 8) + " " + formatNumber(v["rate"]) + "/s"
	case "gauge":
		s := formatValue(v["value"], m.Contains, unit)
		for _, k := range []string{"min", "max"} {
			if x, ok := v[k]; ok {
				s += " " + k + "=" + formatValue(x, m.Contains, unit)
			}
		}
		return s
	}
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + formatNumber(v[k])
	}
	return strings.Join(parts, " ")
}

// padRight pads s with spaces to n characters.
func padRight(s string, n int) string {
	if c := utf8.RuneCountInString(s); c < n {
		return s + strings.Repeat(" ", n-c)
	}
	return s
}

// formatValue writes a value: a duration (contains "time", in ms) in the
// unit asked for or one that suits it, else a number.
func formatValue(v float64, contains, unit string) string {
	if contains != "time" {
		return formatNumber(v)
	}
	switch unit {
	case "s":
		return strconv.FormatFloat(v/1000, 'f', 2, 64) + "s"
	case "ms":
		return strconv.FormatFloat(v, 'f', 2, 64) + "ms"
	case "us", "µs":
		return strconv.FormatFloat(v*1000, 'f', 2, 64) + "µs"
	}
	switch a := math.Abs(v); {
	case a == 0:
		return "0s"
	case a < 1:
		return strconv.FormatFloat(v*1000, 'f', 2, 64) + "µs"
	case a < 1000:
		return strconv.FormatFloat(v, 'f', 2, 64) + "ms"
	case a < 60_000:
		return strconv.FormatFloat(v/1000, 'f', 2, 64) + "s"
	default:
		mins := math.Floor(v / 60_000)
		return strconv.FormatFloat(mins, 'f', 0, 64) + "m" + strconv.FormatFloat((v-mins*60_000)/1000, 'f', 1, 64) + "s"
	}
}

// formatNumber writes a plain number: whole numbers without decimals,
// others with at most two (two significant digits below 0.01).
func formatNumber(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	if math.Abs(v) < 0.01 {
		return strconv.FormatFloat(v, 'g', 2, 64)
	}
	s := strconv.FormatFloat(v, 'f', 2, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// HumanizeValue writes one value of metric m as the text summary does: a
// rate as a percentage, a duration in timeUnit ("" chooses), else a
// number.
func HumanizeValue(v float64, m SummaryMetric, timeUnit string) string {
	if m.Type == "rate" {
		return strconv.FormatFloat(100*v, 'f', 2, 64) + "%"
	}
	return formatValue(v, m.Contains, timeUnit)
}
