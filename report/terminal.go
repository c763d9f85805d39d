package report

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/llmchaos/llmchaos/xk6-llm/metrics"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"

	"github.com/llmchaos/llmchaos/assertions"
)

// WriteText writes the terminal summary of d with the default options
// (TextOptions' zero value): the run's header, an aligned table of the
// latency and token distributions (count, mean, p50, p90, p99, max, with
// units), the request outcomes and errors by class, throughput, quality
// rates and concurrency; for an experiment, a timeline of its phases and
// faults, the faults with planned and actual times, recovery times and the
// steady-state probes; then each threshold with ✓ or ✗, its expression and
// the observed value, and the verdict line. It reads only d's fields, so a
// saved report renders exactly as the live run did.
func WriteText(w io.Writer, d *Document) error { return WriteTextWith(w, d, TextOptions{}) }

// WriteTextWith writes the terminal summary of d as o asks: the verdict
// line alone (Quiet), the default summary with the breakdowns and the
// event log (Verbose), colours, and the distribution table's columns.
func WriteTextWith(w io.Writer, d *Document, o TextOptions) error {
	var b strings.Builder
	if o.Quiet {
		b.WriteString(verdictLine(d, failedThresholds(d), o.Color))
	} else {
		writeHeader(&b, d)
		writeChecks(&b, d, o.Color)
		writeDistributions(&b, d, o.TrendStats)
		if hasLLM(d) {
			writeRequests(&b, d)
			if o.Verbose {
				writeBreakdowns(&b, d)
			}
			writeThroughput(&b, d)
			writeQuality(&b, d)
		}
		writeExperiment(&b, d)
		if o.Verbose {
			writeEvents(&b, d)
		}
		writeThresholds(&b, d, o.Color)
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write text report: %w", err)
	}
	return nil
}

// TextOptions say how WriteTextWith renders the terminal summary. The
// zero value is the default summary, without colour.
type TextOptions struct {
	// Quiet writes the verdict line alone.
	Quiet bool
	// Verbose adds to the default summary the requests and latency per
	// endpoint and per phase, and the run's event log (each fault's
	// injection and revert, replica events, recovery, aborts).
	Verbose bool
	// Color marks the verdict with ANSI colours (PASS green, FAIL red,
	// ABORTED yellow), the thresholds that held green and those that
	// failed red. The caller decides
	// (a terminal, no NO_COLOR, no --no-color); files never want it.
	Color bool
	// TrendStats are the columns of the distribution table (k6's
	// --summary-trend-stats; see ParseTrendStats); nil:
	// DefaultTrendStats.
	TrendStats []TrendStat
}

// Writer returns a writer of the text format with these options, in the
// shape of Format.Write.
func (o TextOptions) Writer() func(io.Writer, *Document) error {
	return func(w io.Writer, d *Document) error { return WriteTextWith(w, d, o) }
}

// ANSI colours of the terminal summary.
const (
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
	ansiReset  = "\x1b[0m"
)

// paint wraps s in colour c when on is set.
func paint(s, c string, on bool) string {
	if !on || c == "" || s == "" {
		return s
	}
	return c + s + ansiReset
}

// writeHeader writes the summary's first line, named after the command
// whose run it is: "llmchaos run" for an experiment or a script,
// "llmchaos load" for a plain load.
func writeHeader(b *strings.Builder, d *Document) {
	cmd := "llmchaos load"
	if _, script := d.Config["script"]; script || d.Experiment != nil {
		cmd = "llmchaos run"
	}
	b.WriteString(cmd)
	if d.Name != "" {
		b.WriteString(" " + strconv.Quote(d.Name))
	}
	if !d.StartedAt.IsZero() {
		b.WriteString("  started " + d.StartedAt.UTC().Format("2006-01-02 15:04:05 UTC"))
	}
	fmt.Fprintf(b, "  duration %s  seed %d", fmtSeconds(d.DurationS), d.Seed)
	if d.ToolVersion != "" {
		b.WriteString("  llmchaos " + d.ToolVersion)
	}
	b.WriteByte('\n')
	if len(d.MergedFrom) > 0 {
		fmt.Fprintf(b, "merged from %d runs\n", len(d.MergedFrom))
	}
}

func writeDistributions(b *strings.Builder, d *Document, stats []TrendStat) {
	if stats == nil {
		stats = DefaultTrendStats()
	}
	t := newTable("l" + strings.Repeat("r", len(stats)))
	head := []string{"latency"}
	if !hasLLM(d) {
		head[0] = "metrics"
	}
	for _, s := range stats {
		head = append(head, s.Name)
	}
	t.row(head...)
	rows := tableTrends(d)
	if !hasLLM(d) {
		rows = nil
	}
	for _, x := range rows {
		if x.time {
			t.row(trendCells("  "+x.name, x.s, stats, builtinQuantile(d, x.name), fmtMs)...)
		}
	}
	if len(rows) > 0 {
		t.row("tokens")
	}
	for _, x := range rows {
		if !x.time {
			t.row(trendCells("  "+x.name, x.s, stats, builtinQuantile(d, x.name), fmtTokens)...)
		}
	}
	writeCustomRows(t, d, stats)
	b.WriteByte('\n')
	t.write(b)
}

// hasLLM reports whether the run's summary has LLM sections: a load or an
// experiment always, a k6-style script only when it sent an LLM request
// (k6's summary also shows only the metrics that got samples).
func hasLLM(d *Document) bool {
	return d.Requests.Scheduled > 0 || d.Requests.Sent > 0 || (len(d.CustomMetrics) == 0 && len(d.Checks) == 0)
}

func writeRequests(b *strings.Builder, d *Document) {
	r := d.Requests
	share := func(n, of int64) string {
		if of == 0 {
			return ""
		}
		return fmtPercent(float64(n) / float64(of))
	}
	// Every share is of the scheduled requests, so that they add up.
	t := newTable("lrr")
	t.row("requests", "", "of scheduled")
	t.row("  scheduled", strconv.FormatInt(r.Scheduled, 10), "")
	t.row("  sent", strconv.FormatInt(r.Sent, 10), share(r.Sent, r.Scheduled))
	t.row("  ok", strconv.FormatInt(r.OK, 10), share(r.OK, r.Scheduled))
	t.row("  failed", strconv.FormatInt(r.Failed, 10), share(r.Failed, r.Scheduled))
	t.row("  cancelled", strconv.FormatInt(r.Cancelled, 10), share(r.Cancelled, r.Scheduled))
	t.row("  dropped", strconv.FormatInt(r.Dropped, 10), share(r.Dropped, r.Scheduled))
	lost := strconv.FormatInt(r.Lost, 10)
	if r.Lost != 0 {
		lost += "  (must be 0)"
	}
	t.row("  lost", lost, "")
	if d.ShardsLost != 0 {
		t.row("  shards lost", strconv.Itoa(d.ShardsLost), "(their requests are not counted here)")
	}
	if r.Reconnects != 0 {
		t.row("  reconnects", strconv.FormatInt(r.Reconnects, 10), "(not errors)")
	}
	b.WriteByte('\n')
	t.write(b)
	writeReconnects(b, d)
	if len(r.ErrorsByClass) == 0 {
		return
	}
	var parts []string
	for _, cl := range append(append([]recording.ErrorClass(nil), recording.ErrorClasses...), recording.ClassUnknown) {
		if n := r.ErrorsByClass[string(cl)]; n != 0 {
			parts = append(parts, fmt.Sprintf("%s %d", cl, n))
		}
	}
	// The classes in as many lines as they need; each most frequent
	// message cut to the line (run.json has it whole).
	line := "  by class:"
	for i, p := range parts {
		sep := " "
		if i > 0 {
			sep = ", "
		}
		if utf8.RuneCountInString(line+sep+p)+1 > maxLineWidth {
			b.WriteString(line + ",\n")
			line, sep = "   ", " "
		}
		line += sep + p
	}
	b.WriteString(line + "\n")
	for _, cl := range recording.ErrorClasses {
		if e, ok := r.TopErrors[string(cl)]; ok {
			b.WriteString(FitLine(fmt.Sprintf("  %s, most often (%d): %s", cl, e.Count, e.Message)) + "\n")
		}
		if r.ErrorsByClass[string(cl)] != 0 {
			if sus := recording.IntegritySuspect(cl); sus != "" {
				fmt.Fprintf(b, "  %s: suspect %s\n", cl, sus)
			}
		}
	}
}

// writeReconnects lists the reconnects per endpoint when there were any:
// requests sent again on a fresh connection after the endpoint closed a
// reused keep-alive connection under them.
func writeReconnects(b *strings.Builder, d *Document) {
	if d.Requests.Reconnects == 0 {
		return
	}
	by := map[string]int64{}
	for _, ts := range d.Histograms.ByTags {
		if n := ts.Counts.Reconnects; n != 0 {
			by[ts.Tags["endpoint"]] += n
		}
	}
	var parts []string
	for _, ep := range slices.Sorted(maps.Keys(by)) {
		parts = append(parts, fmt.Sprintf("%s %d", ep, by[ep]))
	}
	if len(parts) > 0 {
		b.WriteString("  reconnects by endpoint: " + strings.Join(parts, ", ") + "\n")
	}
}

func writeThroughput(b *strings.Builder, d *Document) {
	t := newTable("lrl")
	t.row("throughput", "", "")
	for _, r := range figureRows(d, metrics.Gauge) {
		t.row("  "+r.Key, r.Value, r.Note)
	}
	b.WriteByte('\n')
	t.write(b)
	// The token totals are the vLLM-format report's total_input_tokens and
	// total_output_tokens (one source: the recorded counts of the ok
	// requests).
	in, out := d.tokenTotals()
	fmt.Fprintf(b, "totals: %d requests (%d ok), %d input tokens, %d output tokens of the ok requests in %s\n",
		d.Requests.Scheduled, d.Requests.OK, in, out, fmtSeconds(d.DurationS))
	if d.ClientSaturated {
		// Two lines, each within the 120 columns of every summary line.
		fmt.Fprintf(b, "client saturated: %s\n", d.ClientSaturatedReason)
		b.WriteString("  the load generator fell behind its schedule: these figures understate the load asked for\n")
	}
}

// sloText describes the goodput objectives: "ttft ≤ 200ms, tpot ≤ 70ms".
func sloText(s *SLO) string {
	if s == nil {
		return ""
	}
	var parts []string
	for _, x := range []struct {
		name string
		ms   float64
	}{{"ttft", s.TTFTMs}, {"tpot", s.TPOTMs}, {"e2e", s.E2EMs}} {
		if x.ms > 0 {
			parts = append(parts, x.name+" ≤ "+strconv.FormatFloat(x.ms, 'f', -1, 64)+"ms")
		}
	}
	return strings.Join(parts, ", ")
}

func writeQuality(b *strings.Builder, d *Document) {
	t := newTable("lr")
	t.row("quality", "")
	for _, r := range figureRows(d, metrics.Rate) {
		t.row("  "+r.Key, r.Value)
	}
	b.WriteByte('\n')
	t.write(b)
	writeUsageNote(b, d)
	fmt.Fprintf(b, "\nin flight: max %d, mean %.2f\n", d.Concurrency.Max, d.Concurrency.Mean)
}

// writeUsageNote says, as information, how many requests counted a
// number of content chunks other than usage.completion_tokens within the
// tolerance (recording.UsageMismatch): normal for servers that merge tokens into
// one chunk, and not part of the usage mismatch rate above.
func writeUsageNote(b *strings.Builder, d *Document) {
	sum := d.Summary()
	if sum == nil {
		return
	}
	c := sum.Counts(recording.TagFilter{})
	if within := c.UsageDiffers - c.UsageMismatch; within > 0 {
		fmt.Fprintf(b, "note: %d of %d requests with usage streamed a few chunks more or fewer than usage.completion_tokens "+
			"(within max(2, 5%%)): information, not a mismatch; token counts use usage\n", within, c.UsageReported)
	}
}

func writeThresholds(b *strings.Builder, d *Document, color bool) {
	b.WriteByte('\n')
	if len(d.Thresholds) > 0 {
		t := newTable("lll")
		t.row("thresholds", "", "")
		for _, th := range d.Thresholds {
			mark, c := "✓", ansiGreen
			if !th.OK {
				mark, c = "✗", ansiRed
			}
			t.row("  "+mark+" "+th.Key(), cmp.Or(th.Source, th.Expr), th.Observed())
			if color {
				t.color(c)
			}
		}
		t.write(b)
		b.WriteByte('\n')
	}
	if d.Score != nil {
		b.WriteString("resilience score: " + d.Score.String() + "\n")
	}
	b.WriteString(verdictLine(d, failedThresholds(d), color))
}

// failedThresholds counts d's thresholds that did not hold.
func failedThresholds(d *Document) int {
	n := 0
	for _, th := range d.Thresholds {
		if !th.OK {
			n++
		}
	}
	return n
}

// verdictLine is the summary's last line, "verdict: PASS (3 thresholds
// held)", with its verdict word coloured when color is set.
func verdictLine(d *Document, failed int, color bool) string {
	n := len(d.Thresholds)
	switch d.Verdict {
	case VerdictPass:
		if n == 0 {
			return "verdict: " + paint("PASS", ansiGreen, color) + " (no thresholds)\n" // a report of an earlier version
		}
		return fmt.Sprintf("verdict: %s (%s held)\n", paint("PASS", ansiGreen, color), plural(n, "threshold"))
	case VerdictNone:
		return "verdict: no thresholds — no verdict\n"
	case VerdictFail:
		var why []string
		if d.MarkedFailed != "" {
			why = append(why, "marked failed by the script: "+d.MarkedFailed)
		}
		if len(d.Regressions) > 0 {
			why = append(why, "regressed against the history: "+d.RegressionNames())
		}
		why = append(why, fmt.Sprintf("%d of %s failed", failed, plural(n, "threshold")))
		return fmt.Sprintf("verdict: %s (%s)\n", paint("FAIL", ansiRed, color), strings.Join(why, "; "))
	case VerdictAborted:
		line := "verdict: " + paint("ABORTED", ansiYellow, color) + " by " + d.Abort.String()
		if failed > 0 {
			line += fmt.Sprintf(" (%d of %s failed)", failed, plural(n, "threshold"))
		}
		return line + "\n"
	case "":
		return "verdict: none recorded\n"
	}
	return fmt.Sprintf("verdict: %s\n", strings.ToUpper(d.Verdict))
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

// table aligns cells in columns, two spaces apart; align holds 'l' or 'r'
// per column. Widths count runes, so ✓ and µ take one column.
type table struct {
	align  string
	rows   [][]string
	colors map[int]string // ANSI colour of a whole row, by row index
}

func newTable(align string) *table { return &table{align: align} }

func (t *table) row(cells ...string) { t.rows = append(t.rows, cells) }

// color paints the last row added in ANSI colour c, after alignment, so
// that the escape codes take no columns.
func (t *table) color(c string) {
	if t.colors == nil {
		t.colors = map[int]string{}
	}
	t.colors[len(t.rows)-1] = c
}

func (t *table) write(b *strings.Builder) {
	widths := make([]int, len(t.align))
	for _, r := range t.rows {
		for i, c := range r {
			// A first-column cell alone on its row (a section title) does
			// not widen the column.
			if i == 0 && len(r) == 1 {
				continue
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	for ri, r := range t.rows {
		var line strings.Builder
		for i, c := range r {
			pad := widths[i] - utf8.RuneCountInString(c)
			if i > 0 {
				line.WriteString("  ")
			}
			if t.align[i] == 'r' {
				line.WriteString(strings.Repeat(" ", max(pad, 0)))
				line.WriteString(c)
			} else {
				line.WriteString(c)
				if i < len(r)-1 {
					line.WriteString(strings.Repeat(" ", max(pad, 0)))
				}
			}
		}
		b.WriteString(paint(strings.TrimRight(line.String(), " "), t.colors[ri], true))
		b.WriteByte('\n')
	}
}

// maxLineWidth is the widest line of a terminal summary (as everything
// llmchaos prints to a terminal).
const maxLineWidth = 120

// FitLine cuts s to the 120 columns of a terminal line, ending it with
// "…" when cut (for a table whose last column is free text).
func FitLine(s string) string {
	if utf8.RuneCountInString(s) <= maxLineWidth {
		return s
	}
	return s[:runeIndex(s, maxLineWidth-1)] + "…"
}

// runeIndex is the byte offset of the n-th rune of s (len(s) when s is
// shorter).
func runeIndex(s string, n int) int {
	for i := range s {
		if n == 0 {
			return i
		}
		n--
	}
	return len(s)
}

// fmtMs writes a duration given in milliseconds with a unit that keeps
// three or four significant digits: "12µs", "2.35ms", "217.3ms", "1.24s".
func fmtMs(v float64) string {
	switch a := math.Abs(v); {
	case a == 0:
		return "0ms"
	case a < 1:
		return strconv.FormatFloat(v*1000, 'f', 0, 64) + "µs"
	case a < 10:
		return strconv.FormatFloat(v, 'f', 2, 64) + "ms"
	case a < 1000:
		return strconv.FormatFloat(v, 'f', 1, 64) + "ms"
	}
	return assertions.FormatMs(v, "") // "24.99s", as a threshold's observed value
}

// fmtTokens writes a token figure: integers as such, others with one decimal.
func fmtTokens(v float64) string {
	if v == math.Trunc(v) {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// fmtRate writes a per-second figure with three significant digits or more.
func fmtRate(v float64) string {
	switch a := math.Abs(v); {
	case a == 0:
		return "0/s"
	case a < 10:
		return strconv.FormatFloat(v, 'f', 2, 64) + "/s"
	case a < 100:
		return strconv.FormatFloat(v, 'f', 1, 64) + "/s"
	}
	return strconv.FormatFloat(v, 'f', 0, 64) + "/s"
}

// fmtPercent writes a share as a percentage with two decimals.
func fmtPercent(v float64) string { return strconv.FormatFloat(v*100, 'f', 2, 64) + "%" }

// fmtSeconds writes a run duration: "4.00s", "90.50s".
func fmtSeconds(s float64) string { return fmtMs(s * 1000) }

// proxyAddrs matches the addresses of a fault proxy in a fault's target,
// "proxy endpoint-0 127.0.0.1:46305 → 127.0.0.1:42327".
var proxyAddrs = regexp.MustCompile(`(proxy \S+) \S+ → \S+`)

// ShortTarget is a fault's target as the terminal shows it: a proxy by
// its name alone ("proxy endpoint-0"; the run's first lines give its
// addresses), so that a fault of several proxies fits in a line. The
// report keeps the whole target.
//
// A fault that acts through several proxies of numbered endpoints names
// them once: "proxies endpoint-0..2" for "proxy endpoint-0 proxy
// endpoint-1 proxy endpoint-2", "proxies endpoint-0,2" when not
// consecutive.
func ShortTarget(s string) string {
	s = proxyAddrs.ReplaceAllString(s, "$1")
	return proxyRun.ReplaceAllStringFunc(s, func(run string) string {
		var prefix string
		var nums []int
		for _, m := range proxyName.FindAllStringSubmatch(run, -1) {
			n, err := strconv.Atoi(m[2])
			if err != nil || (prefix != "" && m[1] != prefix) {
				return run
			}
			prefix = m[1]
			nums = append(nums, n)
		}
		consecutive := true
		for i := 1; i < len(nums); i++ {
			consecutive = consecutive && nums[i] == nums[i-1]+1
		}
		if consecutive {
			return fmt.Sprintf("proxies %s%d..%d", prefix, nums[0], nums[len(nums)-1])
		}
		parts := make([]string, len(nums))
		for i, n := range nums {
			parts[i] = strconv.Itoa(n)
		}
		return "proxies " + prefix + strings.Join(parts, ",")
	})
}

// proxyRun matches two or more proxies named one after the other in a
// shortened target, proxyName one of them ("proxy endpoint-1": its name's
// prefix and number).
var (
	proxyRun  = regexp.MustCompile(`proxy [^\s,]+?-\d+(?: proxy [^\s,]+?-\d+)+`)
	proxyName = regexp.MustCompile(`proxy ([^\s,]+?-)(\d+)`)
)
