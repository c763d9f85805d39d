package history

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/llmchaos/llmchaos/report"
)

// WriteList writes runs (newest first, as List returns them) as a table:
// id, start, experiment, verdict, exit code, TTFT and E2E p99 of the whole
// run, error rate, slowest recovery, score, spec hash and labels; times in
// the local zone.
func WriteList(w io.Writer, runs []Run) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTARTED\tEXPERIMENT\tVERDICT\tEXIT\tTTFT P99\tE2E P99\tERRORS\tRECOVERY\tSCORE\tSPEC\tLABELS\t")
	for _, r := range runs {
		whole, _ := r.Phase(WholeRun, WholeRun)
		rec := slowestRecovery(r.Recovery)
		score := "-"
		if r.Score != nil {
			score = strconv.FormatFloat(*r.Score, 'f', 1, 64)
		}
		verdict := r.Verdict
		if r.Regressed != nil && *r.Regressed {
			verdict += "+regression"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.ID, r.StartedAt.Local().Format("2006-01-02 15:04"),
			r.Experiment, verdict, r.ExitCode, latencyText(whole.TTFT), latencyText(whole.E2E), fmtValue(r.ErrorRate, "ratio"),
			rec, score, short(r.SpecHash), labelText(r.Labels))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write history: %w", err)
	}
	return nil
}

// slowestRecovery writes the longest recovery time of a run: "never" when
// a fault did not recover, "-" without one.
func slowestRecovery(rs []Recovery) string {
	worst := -1.0
	for _, rc := range rs {
		switch {
		case rc.RecoveryTimeS != nil:
			worst = max(worst, *rc.RecoveryTimeS)
		case !rc.InsufficientTraffic:
			worst = math.Inf(1)
		}
	}
	if worst < 0 {
		return "-"
	}
	return fmtValue(worst, "s")
}

// labelText writes labels as k=v, sorted, the git commit cut to 12.
func labelText(l map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(l)) {
		v := l[k]
		if k == LabelGitCommit && len(v) > 12 {
			v = v[:12]
		}
		parts = append(parts, k+"="+v)
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ",")
}

// WriteListJSON writes runs as a JSON array (their columns and the parts
// read; never the report).
func WriteListJSON(w io.Writer, runs []Run) error {
	if runs == nil {
		runs = []Run{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(runs); err != nil {
		return fmt.Errorf("write history: %w", err)
	}
	return nil
}

// WriteRun writes one run for people: what and where it ran, its outcome,
// labels, thresholds, per-phase figures and recovery times.
func WriteRun(w io.Writer, r *Run) error {
	var b strings.Builder
	fmt.Fprintf(&b, "run %d: %s (%s)\n", r.ID, r.Experiment, r.Kind)
	verdict := strings.ToUpper(r.Verdict)
	if r.Regressed != nil {
		if *r.Regressed {
			verdict += ", REGRESSION against the history"
		} else {
			verdict += ", no regression against the history"
		}
	}
	fmt.Fprintf(&b, "  verdict     %s (exit %d)\n", verdict, r.ExitCode)
	if r.Abort != "" {
		fmt.Fprintf(&b, "  aborted by  %s\n", r.Abort)
	}
	fmt.Fprintf(&b, "  started     %s, %s long (recorded %s)\n", r.StartedAt.Local().Format(time.RFC3339), fmtValue(r.DurationS, "s"), r.RecordedAt.Local().Format(time.RFC3339))
	fmt.Fprintf(&b, "  target      %s\n", r.Target)
	fmt.Fprintf(&b, "  spec hash   %s\n", r.SpecHash)
	fmt.Fprintf(&b, "  llmchaos    %s, seed %d\n", orNone(r.ToolVersion), r.Seed)
	fmt.Fprintf(&b, "  labels      %s\n", labelText(r.Labels))
	if r.Score != nil {
		fmt.Fprintf(&b, "  score       %.1f\n", *r.Score)
	}
	fmt.Fprintf(&b, "  requests    %d sent, %d ok, %d failed, %d lost; error rate %s\n", r.Requests.Sent, r.Requests.OK, r.Requests.Failed, r.Requests.Lost, fmtValue(r.ErrorRate, "ratio"))
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write run: %w", err)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if len(r.Thresholds) > 0 {
		fmt.Fprintln(tw, "\nthresholds")
		for _, th := range r.Thresholds {
			mark := "✓"
			if !th.OK {
				mark = "✗"
			}
			v := report.ThresholdResult{Metric: th.Metric, Tags: th.Tags, Expr: th.Expr, Value: th.Value, OK: th.OK, NoData: th.NoData}.Observed()
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t\n", mark, th.Key(), th.Expr, v)
		}
	}
	if len(r.Phases) > 0 {
		fmt.Fprintln(tw, "\n  phase\tfault\trequests\terror rate\tttft p50\tttft p99\te2e p99\titl p99\t")
		for _, p := range r.Phases {
			name := p.Phase
			if name == WholeRun {
				name = "(whole run)"
			}
			itl := "-"
			if v, ok := p.ITL.At(99); ok {
				itl = fmtValue(v, "ms")
			}
			ttft50 := "-"
			if v, ok := p.TTFT.At(50); ok {
				ttft50 = fmtValue(v, "ms")
			}
			fmt.Fprintf(tw, "  %s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t\n", name, orDash(p.Fault), p.Requests, fmtValue(p.ErrorRate, "ratio"),
				ttft50, latencyText(p.TTFT), latencyText(p.E2E), itl)
		}
	}
	if len(r.Recovery) > 0 {
		fmt.Fprintln(tw, "\n  recovery\trecovered\ttime\tfrom revert\t")
		for _, rc := range r.Recovery {
			t, ttr := "-", "-"
			if rc.RecoveryTimeS != nil {
				t = fmtValue(*rc.RecoveryTimeS, "s")
			}
			if rc.TimeToRecoverS != nil {
				ttr = fmtValue(*rc.TimeToRecoverS, "s")
			}
			rec := strconv.FormatBool(rc.Recovered)
			if rc.InsufficientTraffic {
				rec = "insufficient traffic"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t\n", rc.Fault, rec, t, ttr)
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write run: %w", err)
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
