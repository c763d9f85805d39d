package suite

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/llmchaos/llmchaos/report"
)

// maxReason is the most characters of a reason the terminal table shows.
const maxReason = 100

// WriteText writes the suite's terminal summary: a table of the
// experiments (status, score, thresholds held, faults reverted, time,
// reason), the suite's resilience score and its verdict line with the exit
// code.
func WriteText(w io.Writer, r *Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "\nsuite %s: %d experiment(s), %s\n", r.Name, len(r.Experiments), fmtDuration(r.DurationS))
	var table strings.Builder
	tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  #\texperiment\tstatus\tscore\tthresholds\tfaults reverted\ttime\treason")
	for _, e := range r.Experiments {
		score, th, faults, took := "–", "–", "–", "–"
		if e.Score != nil && e.Score.Value != nil {
			score = strings.TrimSuffix(report.FormatScore(*e.Score.Value), "/100")
		}
		if e.Ran() {
			th = heldOf(len(e.Thresholds), func(i int) bool { return e.Thresholds[i].OK })
			faults = heldOf(len(e.Faults), func(i int) bool { return e.Faults[i].RevertOK })
			took = fmtDuration(e.DurationS)
		}
		reason := strings.ReplaceAll(e.Reason, "\n", " ")
		if r := []rune(reason); len(r) > maxReason {
			reason = string(r[:maxReason-1]) + "…"
		}
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Index, e.Name, e.Status.Word(), score, th, faults, took, reason)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// Each row within the terminal's 120 columns: the reason, last, is
	// cut (suite.json and the HTML page have it whole).
	for _, line := range strings.SplitAfter(table.String(), "\n") {
		if line != "" {
			// A row without a reason would end in the padding of its
			// time column.
			b.WriteString(report.FitLine(strings.TrimRight(line, " \n")) + "\n")
		}
	}
	score := "none (no experiment was scored)"
	if r.Score != nil {
		score = report.FormatScore(*r.Score)
	}
	fmt.Fprintf(&b, "resilience score: %s\n", score)
	b.WriteString(verdictLine(r))
	_, err := io.WriteString(w, b.String())
	return err
}

// verdictLine is the summary's last line: "verdict: FAIL (1 of 3
// experiments did not pass); exit code 99".
func verdictLine(r *Record) string {
	ran, bad := 0, 0
	for _, e := range r.Experiments {
		if e.Status == StatusFiltered || e.Status == StatusNotRun {
			continue
		}
		ran++
		if e.Status != StatusPass {
			bad++
		}
	}
	switch r.Status {
	case report.VerdictPass:
		return fmt.Sprintf("verdict: PASS (%d experiment(s) passed); exit code %d\n", ran, r.ExitCode)
	case report.VerdictAborted:
		return fmt.Sprintf("verdict: ABORTED by %s (%d experiment(s) not run); exit code %d\n", r.Abort.String(), r.Counts[StatusNotRun], r.ExitCode)
	case report.VerdictNone:
		return fmt.Sprintf("verdict: no experiment ran; exit code %d\n", r.ExitCode)
	}
	return fmt.Sprintf("verdict: FAIL (%d of %d experiment(s) did not pass); exit code %d\n", bad, ran, r.ExitCode)
}
