package capacity

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
)

// WriteText writes the search for a terminal: a table of its steps (load,
// achieved rate, throughput, each SLO's value with ✓ or ✗, the verdict),
// the client-limited steps' reasons, the knee with its bracket, goodput
// and throughput at the knee, and the result in one sentence.
func WriteText(w io.Writer, r *Result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "capacity of %s at %s, %s mode, workload %s, seed %d\n", r.Model, strings.Join(r.Targets, ", "), r.Mode, r.workloadName(), r.Seed)
	fmt.Fprintf(&b, "SLOs: %s\n\n", strings.Join(r.SLOs, "; "))
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"#", "phase", "load " + r.Unit, "sent/s", "ok/s", "goodput/s"}
	for _, s := range r.SLOs {
		head = append(head, sloHeader(s))
	}
	head = append(head, "verdict", "")
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	short, few := false, false
	for _, st := range r.Steps {
		fmt.Fprintln(tw, strings.Join(stepCells(r, st, &short, &few), "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if short {
		fmt.Fprintf(&b, "* a short ramp step (%s measured): it only brackets the knee; the bracket's ends are measured at full length\n", fmtSeconds(r.Method.ShortStepS))
	}
	if few {
		fmt.Fprintf(&b, "† fewer requests than the %d the SLOs' percentiles need: the step hit its longest length (%s)\n", r.Method.StepRequests, fmtSeconds(r.Method.MaxStepS))
	}
	for _, st := range r.Steps {
		if len(st.Client) > 0 {
			fmt.Fprintf(&b, "step %d at %s %s was client-limited: %s\n", st.Index, FormatLoad(st.Load), r.Unit, strings.Join(st.Client, "; "))
		}
	}
	b.WriteString("\n")
	b.WriteString(r.KneeLine() + "\n")
	if k := r.Knee; k.Load > 0 {
		fmt.Fprintf(&b, "at the knee, req/s: offered %.2f, completed %.2f, throughput %.2f, goodput %.2f; output tokens %.0f/s\n",
			k.OfferedRPS, k.CompletedRPS, k.ThroughputRPS, k.GoodputRPS, k.OutputTokensPerS)
	}
	fmt.Fprintf(&b, "%s\n", r.Summary)
	_, err := io.WriteString(w, b.String())
	return err
}

// stepLine is the progress line of a step that just ended.
func stepLine(r *Result, st Step) string {
	parts := []string{fmt.Sprintf("step %d %-7s %8s %s", st.Index, st.Phase, FormatLoad(st.Load), r.Unit)}
	parts = append(parts, fmt.Sprintf("sent %.1f/s", st.AchievedRPS), fmt.Sprintf("ok %.1f/s", st.ThroughputRPS))
	for _, v := range st.SLOs {
		parts = append(parts, fmt.Sprintf("%s %s %s", sloHeader(v.SLO), v.Observed, mark(v.OK)))
	}
	parts = append(parts, "→ "+verdictWord(st.Verdict))
	if len(st.Client) > 0 {
		parts = append(parts, "("+strings.Join(st.Client, "; ")+")")
	}
	return strings.Join(parts, "  ")
}

// stepCells is a step's row of the table.
func stepCells(r *Result, st Step, short, few *bool) []string {
	phase := string(st.Phase)
	if !st.Full {
		phase += "*"
		*short = true
	}
	load := FormatLoad(st.Load)
	if r.cappedShort(st) {
		load += "†"
		*few = true
	}
	cells := []string{strconv.Itoa(st.Index), phase, load,
		strconv.FormatFloat(st.AchievedRPS, 'f', 1, 64), strconv.FormatFloat(st.ThroughputRPS, 'f', 1, 64), strconv.FormatFloat(st.GoodputRPS, 'f', 1, 64)}
	for _, v := range st.SLOs {
		cells = append(cells, v.Observed+" "+mark(v.OK))
	}
	return append(cells, verdictWord(st.Verdict), "")
}

// cappedShort reports whether a full step measured fewer requests than
// its SLOs need because it hit the longest step allowed (not because a
// random schedule sent a few less than its rate promised).
func (r *Result) cappedShort(st Step) bool {
	return st.Full && st.Verdict != ClientLimited && int64(st.Needed) > st.Sent && st.MeasureS >= r.Method.MaxStepS*(1-1e-9)
}

// KneeLine states the knee and its bracket in one line, as the terminal
// summary shows it and `llmchaos capacity --quiet` prints it: "knee: 65
// req/s (bracket 65–68.25 req/s, +5.0%)".
func (r *Result) KneeLine() string {
	k := r.Knee
	if k.Load == 0 {
		if r.Status == StatusServerLost {
			return "knee: none (the server stopped answering)"
		}
		return "knee: none (no load held every SLO)"
	}
	s := fmt.Sprintf("knee: %s %s", FormatLoad(k.Load), r.Unit)
	if k.Hi > 0 {
		s += fmt.Sprintf(" (bracket %s–%s %s, +%.1f%%)", FormatLoad(k.Lo), FormatLoad(k.Hi), r.Unit, 100*k.Uncertainty)
	} else {
		s += " (a lower bound: no load above it failed)"
	}
	return s
}

// summary is the result in one sentence.
func (r *Result) summary() string {
	k, u := r.Knee, r.Unit
	lo, hi := FormatLoad(k.Lo)+" "+u, FormatLoad(k.Hi)+" "+u
	switch r.Status {
	case StatusFound:
		return fmt.Sprintf("Every SLO held at %s and %s at %s: the knee is %s, within %.1f%% below the real one.",
			lo, r.failedAt(k.Hi), hi, lo, 100*k.Uncertainty)
	case StatusClientLimited:
		return fmt.Sprintf("The client, not the server, was the limit: every SLO held up to %s, and the client could not drive %s (%s); the server's capacity is at least %s. Measure again with a client that can drive more (a larger --max-in-flight, a bigger machine, or several: llmchaos load --shard).",
			lo, hi, r.clientWhy(k.Hi), lo)
	case StatusAboveMax:
		return fmt.Sprintf("Every SLO held at the highest load the search may try, %s: the capacity is at least that (raise --max).", lo)
	case StatusBelowMin:
		return fmt.Sprintf("No load held every SLO: even %s, the lowest the search may try, %s.", hi, r.failedAt(k.Hi))
	case StatusStepLimit:
		if k.Hi == 0 || k.Lo == 0 {
			return fmt.Sprintf("The search ran out of steps (%d) before it bracketed the knee; raise --max-steps or start nearer (--start).", r.Method.MaxSteps)
		}
		if k.Uncertainty <= r.Method.Precision {
			// Narrow enough, but an end stood only on a short ramp step.
			return fmt.Sprintf("The search ran out of steps (%d) with the knee between %s and %s (%.1f%%) before it measured both ends of the bracket at full length; raise --max-steps.",
				r.Method.MaxSteps, lo, hi, 100*k.Uncertainty)
		}
		return fmt.Sprintf("The search ran out of steps (%d) with the knee between %s and %s (%.1f%%), wider than the precision asked (%.1f%%); raise --max-steps.",
			r.Method.MaxSteps, lo, hi, 100*k.Uncertainty, 100*r.Method.Precision)
	case StatusServerLost:
		return "The server stopped answering: a step got no answer and the pre-flight check made again failed; no knee is reported."
	case StatusInterrupted:
		if k.Lo == 0 {
			return "The search was stopped before any load held every SLO."
		}
		return fmt.Sprintf("The search was stopped early: every SLO held at %s so far.", lo)
	}
	return ""
}

// failedAt says which SLOs failed at load (its last full-length step).
func (r *Result) failedAt(load float64) string {
	st, ok := r.stepAt(load)
	if !ok {
		return "an SLO failed"
	}
	var parts []string
	for _, v := range st.SLOs {
		if !v.OK {
			parts = append(parts, fmt.Sprintf("%s observed %s", v.SLO, v.Observed))
		}
	}
	if st.Saturated != "" {
		parts = append(parts, "the load (saturated: "+st.Saturated+")")
	}
	if st.Unanswered != "" {
		parts = append(parts, "the answers (unanswered: "+st.Unanswered+")")
	}
	if len(parts) == 0 {
		return "an SLO failed"
	}
	return strings.Join(parts, ", ") + " failed"
}

// clientWhy says why the client could not drive load.
func (r *Result) clientWhy(load float64) string {
	if st, ok := r.stepAt(load); ok && len(st.Client) > 0 {
		return strings.Join(st.Client, "; ")
	}
	return "client-limited"
}

// stepAt is the step that counts at load: its last full-length one, else
// its last one.
func (r *Result) stepAt(load float64) (Step, bool) {
	var found Step
	ok := false
	for _, st := range r.Steps {
		if st.Load == load && (st.Full || !found.Full) {
			found, ok = st, true
		}
	}
	return found, ok
}

// workloadName names the workload for people.
func (r *Result) workloadName() string {
	if r.Workload.Preset != "" {
		return r.Workload.Preset
	}
	return r.Workload.Class
}

// sloHeader is an SLO's short column name: "ttft p(99)".
func sloHeader(slo string) string {
	key, expr, ok := strings.Cut(slo, ": ")
	if !ok {
		return slo
	}
	if i := strings.IndexAny(expr, "<>=!"); i > 0 {
		expr = expr[:i]
	}
	return key + " " + expr
}

func mark(ok bool) string {
	if ok {
		return "✓"
	}
	return "✗"
}

func verdictWord(v Verdict) string {
	switch v {
	case Pass:
		return "pass"
	case Fail:
		return "FAIL"
	case ClientLimited:
		return "CLIENT"
	}
	return string(v)
}

// FormatLoad writes a load with at most two decimals: 96, 0.25, 93.75.
func FormatLoad(v float64) string {
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
}

func fmtSeconds(s float64) string {
	return strconv.FormatFloat(s, 'f', -1, 64) + "s"
}
