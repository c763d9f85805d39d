package report

import (
	"sort"
	"strconv"
	"strings"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// writeBreakdowns writes, for the verbose summary, the requests and the
// p99 of TTFT and E2E per endpoint and per phase, from the run behind d.
func writeBreakdowns(b *strings.Builder, d *Document) {
	sum := d.Summary()
	if sum == nil {
		return
	}
	var endpoints []string
	seen := map[string]bool{}
	for _, t := range sum.Tuples {
		if ep := t.Tags.Endpoint; ep != "" && !seen[ep] {
			seen[ep] = true
			endpoints = append(endpoints, ep)
		}
	}
	sort.Strings(endpoints)
	var rows []breakdownRow
	for _, ep := range endpoints {
		// The live run's tags keep a URL's password; the report does not.
		rows = append(rows, breakdownRow{redactString(ep), recording.TagFilter{Endpoint: ep}})
	}
	writeBreakdown(b, sum, "by endpoint", rows)
	rows = nil
	// One row per phase and fault ("fault slow-net", "recovery slow-net"):
	// a phase that comes back (after, between faults) is one row, and the
	// fault and recovery rows of two faults are told apart.
	seenPhase := map[recording.TagFilter]bool{}
	for _, p := range d.Phases {
		f := recording.TagFilter{Phase: p.Name, Fault: p.Fault}
		if seenPhase[f] {
			continue
		}
		seenPhase[f] = true
		label := p.Name
		if p.Fault != "" {
			label += " " + p.Fault
		}
		rows = append(rows, breakdownRow{label, f})
	}
	writeBreakdown(b, sum, "by phase", rows)
}

// breakdownRow is one row of a breakdown: its label and what it selects.
type breakdownRow struct {
	label  string
	filter recording.TagFilter
}

// writeBreakdown writes one breakdown table; nothing when rows is empty.
func writeBreakdown(b *strings.Builder, sum *recording.Summary, title string, rows []breakdownRow) {
	if len(rows) == 0 {
		return
	}
	t := newTable("lrrrrrr")
	t.row(title, "ok", "failed", "cancelled", "dropped", "ttft p99", "e2e p99")
	for _, r := range rows {
		c := sum.Counts(r.filter)
		p99 := func(m recording.Metric) string {
			h := sum.Histogram(m, r.filter)
			if h.TotalCount() == 0 {
				return "-"
			}
			return fmtMs(float64(h.ValueAtQuantile(99)) / 1000)
		}
		t.row("  "+r.label, strconv.FormatInt(c.OK, 10), strconv.FormatInt(c.Failed, 10),
			strconv.FormatInt(c.Cancelled, 10), strconv.FormatInt(c.Dropped, 10), p99(recording.MetricTTFT), p99(recording.MetricE2E))
	}
	b.WriteByte('\n')
	t.write(b)
}

// writeEvents writes, for the verbose summary, the run's event log: each
// fault's injection and revert, replica events, recovery and aborts, on
// the run clock.
func writeEvents(b *strings.Builder, d *Document) {
	if len(d.Events) == 0 {
		return
	}
	t := newTable("rlll")
	for _, e := range d.Events {
		what := e.Target
		if e.Detail != "" {
			if what != "" {
				what += ": "
			}
			what += e.Detail
		}
		t.row("  "+fmtAt(e.AtS), e.Source, e.Kind, what)
	}
	b.WriteString("\nevents (run clock)\n")
	t.write(b)
}
