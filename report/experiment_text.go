package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// timelineWidth is the number of columns the terminal timeline gives the
// run: each column is duration/timelineWidth seconds.
const timelineWidth = 60

// phaseMark is the character that draws a phase on the timeline.
func phaseMark(name string) byte {
	switch name {
	case PhaseBaseline:
		return '-'
	case PhaseFault:
		return '#'
	case PhaseRecovery:
		return '~'
	case PhaseAfter:
		return '='
	case "":
		return ' '
	}
	return name[0]
}

// writeExperiment writes what an experiment adds to the terminal summary:
// the timeline of phases and faults, the faults with planned and actual
// times, recovery times and the steady-state probes. It writes nothing for
// a plain load.
func writeExperiment(b *strings.Builder, d *Document) {
	if d.Experiment != nil && d.Experiment.Description != "" {
		b.WriteString("\n" + d.Experiment.Description + "\n")
	}
	writeTimeline(b, d)
	writeFaults(b, d)
	writeRecovery(b, d)
	writeConsistency(b, d)
	writeSteadyState(b, d)
}

// writeTimeline draws the run on a ruler of timelineWidth columns: one row
// for the phases and one per fault, from injection to revert.
func writeTimeline(b *strings.Builder, d *Document) {
	wins := d.faultWindows()
	if (len(d.Phases) == 0 && len(wins) == 0) || !(d.DurationS > 0) {
		return
	}
	const w = timelineWidth
	dur := d.DurationS
	col := func(t float64) int { return int(math.Floor(t / dur * w)) }
	labels := []string{"phase"}
	for _, f := range wins {
		labels = append(labels, truncate(f.name, 24))
	}
	lw := 0
	for _, l := range labels {
		lw = max(lw, len([]rune(l)))
	}
	indent := strings.Repeat(" ", 2+lw+2)
	pad := func(s string) string { return "  " + s + strings.Repeat(" ", lw-len([]rune(s))+2) }

	ticks, rule := ruler(dur, w)
	b.WriteString("\ntimeline (seconds of run clock)\n")
	b.WriteString(strings.TrimRight(indent+ticks, " ") + "\n")
	b.WriteString(indent + rule + "\n")

	used := map[string]bool{}
	if len(d.Phases) > 0 {
		row := make([]byte, w)
		for i := range row {
			mid := (float64(i) + 0.5) * dur / w
			row[i] = ' '
			for _, p := range d.Phases {
				if mid >= p.StartS && mid < p.EndS {
					row[i] = phaseMark(p.Name)
					used[p.Name] = true
				}
			}
		}
		b.WriteString(strings.TrimRight(pad("phase")+string(row), " ") + "\n")
	}
	var notReverted, notInjected bool
	for i, f := range wins {
		row := []byte(strings.Repeat(" ", w))
		from := min(max(col(f.start), 0), w-1)
		switch {
		case !f.injected:
			row[from] = 'x'
			notInjected = true
		default:
			to := min(max(int(math.Ceil(f.end/dur*w))-1, from), w-1)
			for c := from; c <= to; c++ {
				row[c] = '#'
			}
			row[from] = '['
			if to > from {
				row[to] = ']'
			}
			if !f.reverted {
				row[to] = '>'
				notReverted = true
			}
		}
		b.WriteString(strings.TrimRight(pad(labels[i+1])+string(row), " ") + "\n")
	}
	var key []string
	for _, p := range []string{PhaseBaseline, PhaseFault, PhaseRecovery, PhaseAfter} {
		if used[p] {
			key = append(key, string(phaseMark(p))+" "+p)
		}
	}
	if len(wins) > 0 {
		key = append(key, "[###] injected … reverted")
	}
	if notReverted {
		key = append(key, "> not reverted")
	}
	if notInjected {
		key = append(key, "x not injected")
	}
	b.WriteString(indent + strings.Join(key, "   ") + "\n")
}

// ruler returns the tick labels and the rule of a timeline of w columns
// over dur seconds: a "|" every step of a round number of seconds that
// gives at most 6 intervals, and one at the end. A label that would touch
// another is left out; the end's label always stays.
func ruler(dur float64, w int) (labels, rule string) {
	step := 1.0
	for _, s := range []float64{1, 2, 5, 10, 15, 20, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 43200, 86400} {
		step = s
		if dur/s <= 6 {
			break
		}
	}
	for dur/step > 6 { // runs longer than six days
		step *= 2
	}
	r := []byte(strings.Repeat("-", w+1))
	lab := []byte(strings.Repeat(" ", w+1))
	colOf := func(t float64) int { return min(int(math.Round(t/dur*float64(w))), w) }
	// The end's label, right-aligned on its tick, is placed first.
	end := fmtTick(dur)
	endAt := max(w-len(end)+1, 0)
	r[w] = '|'
	copy(lab[endAt:], end)
	next := 0 // first column free for a label
	for k := 0; ; k++ {
		t := float64(k) * step
		if t >= dur-1e-9 {
			break
		}
		c := colOf(t)
		r[c] = '|'
		s := fmtTick(t)
		if c < next || c+len(s) >= endAt {
			continue
		}
		copy(lab[c:], s)
		next = c + len(s) + 1
	}
	return strings.TrimRight(string(lab), " "), string(r)
}

// fmtTick writes a ruler label: "15s", "2m", "1m30s", "1h", "1h15m".
func fmtTick(t float64) string {
	if t < 120 {
		return strconv.FormatFloat(math.Round(t*10)/10, 'f', -1, 64) + "s"
	}
	s := int64(math.Round(t))
	h, m, sec := s/3600, s%3600/60, s%60
	var b strings.Builder
	if h > 0 {
		b.WriteString(strconv.FormatInt(h, 10) + "h")
	}
	if m > 0 || (h == 0 && sec == 0) {
		b.WriteString(strconv.FormatInt(m, 10) + "m")
	}
	if sec > 0 {
		b.WriteString(strconv.FormatInt(sec, 10) + "s")
	}
	return b.String()
}

// truncate shortens s to n runes, ending it with "…" when cut.
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// writeFaults writes the faults table: planned times, actual times with
// their offset from the plan, and whether the revert worked.
func writeFaults(b *strings.Builder, d *Document) {
	if len(d.Faults) == 0 {
		return
	}
	t := newTable("lllllll")
	t.row("faults", "type", "target", "planned", "injected", "reverted", "revert")
	var errs []string
	for _, f := range d.Faults {
		inj, rev := faultTimes(f)
		t.row("  "+f.Name, f.Type, orDash(ShortTarget(f.Target)), plannedSpan(f), inj, rev, revertText(f))
		if f.Error != "" {
			errs = append(errs, "  "+f.Name+": "+f.Error)
		}
	}
	b.WriteByte('\n')
	t.write(b)
	for _, e := range errs {
		b.WriteString(e + "\n")
	}
}

// faultTimes writes when a fault was injected and reverted, each with its
// offset from the plan: "15.012s (+12ms)", or who did it by hand in a game
// day: "15.012s (by bob)"; "-" for what did not happen.
func faultTimes(f FaultRecord) (injected, reverted string) {
	injected, reverted = "-", "-"
	if f.InjectedAtS != nil {
		injected = fmtAt(*f.InjectedAtS)
		if f.By != "" {
			// Injected by hand (a game day): no plan to be late or early for.
			injected += " (by " + f.By + ")"
		} else {
			injected += " (" + fmtOffset(*f.InjectedAtS-f.PlannedAtS) + ")"
		}
	}
	if f.RevertedAtS != nil {
		reverted = fmtAt(*f.RevertedAtS)
		switch {
		case f.RevertedBy != "":
			// A revert by hand has no plan to be late or early for.
			reverted += " (by " + f.RevertedBy + ")"
		case f.PlannedDurationS > 0:
			reverted += " (" + fmtOffset(*f.RevertedAtS-f.PlannedAtS-f.PlannedDurationS) + ")"
		}
	}
	return injected, reverted
}

// fmtAt writes a time on the run clock to the millisecond: "15.012s",
// "60s", and from two minutes on as a duration, "2m5.5s".
func fmtAt(s float64) string {
	if math.Abs(s) < 120 {
		return strconv.FormatFloat(math.Round(s*1000)/1000, 'f', -1, 64) + "s"
	}
	return fmtSeconds(s)
}

// plannedSpan writes a fault's planned window: "15s → 30s", or "15s →"
// when it was to stay until the end.
func plannedSpan(f FaultRecord) string {
	s := fmtAt(f.PlannedAtS) + " →"
	if f.PlannedDurationS > 0 {
		s += " " + fmtAt(f.PlannedAtS+f.PlannedDurationS)
	}
	return s
}

// revertText says how a fault's revert went.
func revertText(f FaultRecord) string {
	switch {
	case f.InjectedAtS == nil && f.RevertOK:
		return "not injected"
	case f.RevertOK:
		return "ok"
	}
	return "FAILED"
}

// fmtOffset writes an offset in seconds from a plan, in whole
// milliseconds below a second: "+12ms", "-3ms", "+250µs", "+1.20s", "0ms".
func fmtOffset(s float64) string {
	ms := s * 1000
	sign := "+"
	if ms < 0 {
		sign, ms = "-", -ms
	}
	switch {
	case ms < 0.0005:
		return "0ms"
	case ms < 1:
		return sign + fmtMs(ms)
	case ms < 1000:
		return sign + strconv.FormatFloat(math.Round(ms), 'f', 0, 64) + "ms"
	}
	return sign + fmtMs(ms)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// writeRecovery writes recovery_time per fault: whether it recovered
// ("insufficient traffic" when that could not be judged), the time from
// its injection, for a sustained fault the time from its revert
// (time_to_recover), the criterion that held last, and the OOM recovery.
func writeRecovery(b *strings.Builder, d *Document) {
	if len(d.Recovery) == 0 {
		return
	}
	oom := false
	for _, r := range d.Recovery {
		oom = oom || r.OOMRecoveryTimeS != nil
	}
	t := newTable("llrrl")
	head := []string{"recovery", "recovered", "time", "from revert", "held last"}
	if oom {
		t = newTable("llrrlr")
		head = append(head, "after OOM")
	}
	t.row(head...)
	for _, r := range d.Recovery {
		recovered := yesNo(r.Recovered)
		switch {
		case r.InsufficientTraffic:
			recovered = "insufficient traffic"
		case r.CutBy != "":
			recovered = "no (" + r.CutBy + " came first)"
		}
		fromRevert := optSeconds(r.TimeToRecoverS)
		if r.Instantaneous {
			fromRevert = "(instant)"
		}
		cells := []string{"  " + r.Fault, recovered, optSeconds(r.RecoveryTimeS), fromRevert, orDash(r.HeldLast)}
		if oom {
			cells = append(cells, optSeconds(r.OOMRecoveryTimeS))
		}
		t.row(cells...)
	}
	b.WriteByte('\n')
	t.write(b)
}

func yesNo(v bool) string {
	if v {
		return "yes"
	}
	return "no"
}

// optSeconds writes an optional time in seconds, "-" when absent.
func optSeconds(s *float64) string {
	if s == nil {
		return "-"
	}
	return fmtMs(*s * 1000)
}

// writeSteadyState writes how many probes held before and after, and each
// probe that did not.
func writeSteadyState(b *strings.Builder, d *Document) {
	ss := d.SteadyState
	if ss == nil || (len(ss.Before) == 0 && len(ss.After) == 0) {
		return
	}
	count := func(ps []ProbeRecord) string {
		n := 0
		for _, p := range ps {
			if p.OK {
				n++
			}
		}
		return fmt.Sprintf("%d of %d held", n, len(ps))
	}
	b.WriteString("\nsteady state  before: " + count(ss.Before))
	if len(ss.After) > 0 {
		b.WriteString("  after: " + count(ss.After))
	} else {
		b.WriteString("  after: not checked")
	}
	b.WriteByte('\n')
	for _, x := range []struct {
		when string
		ps   []ProbeRecord
	}{{"before", ss.Before}, {"after", ss.After}} {
		for _, p := range x.ps {
			if !p.OK {
				line := "  ✗ " + x.when + "  " + p.Probe
				if p.Detail != "" {
					line += ": " + p.Detail
				}
				b.WriteString(line + "\n")
			}
		}
	}
}
