package gameday

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/llmchaos/llmchaos/experiments"
	"github.com/llmchaos/llmchaos/report"
)

// PostmortemFile is the post-mortem skeleton's name in the run directory.
const PostmortemFile = "postmortem.md"

// WritePostmortem writes the skeleton of a game day's post-mortem, in
// Markdown, from its record: the facts filled in (who took part, the
// timeline of what people did and what the service did, the faults with
// their recovery, the notes, the thresholds and the steady state), and
// headings with prompts for what only people can write (summary, what
// went well or not, action items).
func WritePostmortem(w io.Writer, d *report.Document, runDir string) error {
	var b strings.Builder
	name := d.Name
	if d.Experiment != nil && d.Experiment.Name != "" {
		name = d.Experiment.Name
	}
	fmt.Fprintf(&b, "# Game day post-mortem: %s\n\n", mdText(name))
	if !d.StartedAt.IsZero() {
		fmt.Fprintf(&b, "- **Date:** %s (UTC)\n", d.StartedAt.UTC().Format("2006-01-02 15:04"))
	}
	fmt.Fprintf(&b, "- **Duration:** %s of load\n", fmtS(d.DurationS))
	verdict := strings.ToUpper(d.Verdict)
	if d.Abort != nil {
		verdict += " (" + mdText(d.Abort.String()) + ")"
	}
	fmt.Fprintf(&b, "- **Verdict:** %s\n", verdict)
	if people := participants(d); len(people) > 0 {
		fmt.Fprintf(&b, "- **Participants:** %s\n", mdText(strings.Join(people, ", ")))
	}
	if runDir != "" {
		fmt.Fprintf(&b, "- **Record:** `%s` (run.json, report.html, junit.xml, journal.jsonl)\n", runDir)
	}
	fmt.Fprintf(&b, "- **Requests:** %d sent, %d ok, %d failed, %d lost\n", d.Requests.Scheduled, d.Requests.OK, d.Requests.Failed, d.Requests.Lost)
	b.WriteString("\n## Summary\n\n_What was tested, what happened, and what it means for the service, in a few lines._\n\n")

	b.WriteString("## Timeline\n\nRun clock, from the start of the load.\n\n| at | who | what | detail |\n| --- | --- | --- | --- |\n")
	for _, e := range d.Events {
		if !timelineEvent(e) {
			continue
		}
		what := e.Kind
		if e.Target != "" {
			what += " " + e.Target
		}
		fmt.Fprintf(&b, "| +%s | %s | %s | %s |\n", fmtS(e.AtS), mdCell(orDash(e.By)), mdCell(what), mdCell(e.Detail))
	}

	b.WriteString("\n## Faults\n\n")
	if len(d.Faults) == 0 {
		b.WriteString("No fault was injected.\n")
	} else {
		rec := map[string]report.RecoveryRecord{}
		for _, r := range d.Recovery {
			rec[r.Fault] = r
		}
		b.WriteString("| fault | type | target | by | injected | reverted | recovery |\n| --- | --- | --- | --- | --- | --- | --- |\n")
		for _, f := range d.Faults {
			if f.InjectedAtS == nil && f.By == "" && strings.HasPrefix(f.Error, "not injected") {
				continue // a step of the timeline nobody played
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", mdCell(f.Name), f.Type, mdCell(orDash(f.Target)), mdCell(orDash(byOf(f))),
				optS(f.InjectedAtS), revertedText(f), recoveryText(rec[f.Name]))
		}
	}

	b.WriteString("\n## Observations\n\nThe notes taken during the game day:\n\n")
	n := 0
	for _, e := range d.Events {
		if e.Source == report.EventSourceGameDay && e.Kind == "note" {
			n++
			fmt.Fprintf(&b, "- **N%d** +%s, %s: %s\n", n, fmtS(e.AtS), mdText(orDash(e.By)), mdText(e.Detail))
		}
	}
	if n == 0 {
		b.WriteString("- _none were written_\n")
	}
	b.WriteString("\n_What the team saw: what held, what surprised, which alerts fired or stayed silent._\n")

	b.WriteString("\n## Thresholds\n\n")
	if len(d.Thresholds) == 0 {
		b.WriteString("No threshold was given.\n")
	} else {
		b.WriteString("| threshold | result | observed |\n| --- | --- | --- |\n")
		for _, th := range d.Thresholds {
			res := "pass"
			if !th.OK {
				res = "**FAIL**"
			}
			fmt.Fprintf(&b, "| `%s: %s` | %s | %s |\n", th.Key(), th.Expr, res, mdCell(th.Observed()))
		}
	}
	if ss := d.SteadyState; ss != nil && (len(ss.Before) > 0 || len(ss.After) > 0) {
		b.WriteString("\n## Steady state\n\n")
		for _, part := range []struct {
			when string
			ps   []report.ProbeRecord
		}{{"before", ss.Before}, {"after", ss.After}} {
			for _, p := range part.ps {
				mark := "held"
				if !p.OK {
					mark = "**did not hold**"
				}
				fmt.Fprintf(&b, "- %s the load: `%s` %s", part.when, p.Probe, mark)
				if p.Detail != "" {
					fmt.Fprintf(&b, " (%s)", mdText(p.Detail))
				}
				b.WriteString("\n")
			}
		}
	}
	b.WriteString("\n## What went well\n\n- \n\n## What did not\n\n- \n\n## Action items\n\n- [ ] \n")
	_, err := io.WriteString(w, b.String())
	return err
}

// timelineEvent says whether e belongs to the post-mortem's timeline:
// what people did, what the faults did, the service's recoveries and
// deaths, aborts.
func timelineEvent(e report.EventRecord) bool {
	switch e.Source {
	case report.EventSourceGameDay, report.EventSourceFault, report.EventSourceReplica, report.EventSourceDocker, report.EventSourceSteadyState:
		return true
	case report.EventSourceRunner:
		return e.Kind != "load_started" || e.AtS > 0
	}
	return false
}

// participants are the token holders who did something, in order of
// their first action.
func participants(d *report.Document) []string {
	var out []string
	add := func(by string) {
		if by != "" && by != experiments.TimelineHolder && !slices.Contains(out, by) {
			out = append(out, by)
		}
	}
	for _, e := range d.Events {
		add(e.By)
	}
	for _, f := range d.Faults {
		add(f.By)
	}
	return out
}

func byOf(f report.FaultRecord) string {
	if f.By != "" {
		return f.By
	}
	return experiments.TimelineHolder
}

func revertedText(f report.FaultRecord) string {
	switch {
	case f.RevertedAtS != nil:
		return "+" + fmtS(*f.RevertedAtS)
	case f.InjectedAtS != nil && !f.RevertOK:
		return "**not reverted**: " + mdCell(f.Error)
	case f.InjectedAtS == nil:
		return mdCell(orDash(f.Error))
	}
	return "-"
}

func recoveryText(r report.RecoveryRecord) string {
	switch {
	case r.Fault == "":
		return "-"
	case r.Recovered && r.RecoveryTimeS != nil:
		return fmtS(*r.RecoveryTimeS) + " after injection"
	case r.InsufficientTraffic:
		return "not judged (too little traffic)"
	}
	return "**not recovered**"
}

func optS(v *float64) string {
	if v == nil {
		return "-"
	}
	return "+" + fmtS(*v)
}

// fmtS writes seconds as "12.3s", or "2m05s" from two minutes up.
func fmtS(s float64) string {
	if s >= 120 {
		d := time.Duration(s * float64(time.Second)).Round(time.Second)
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%.1fs", s)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// mdText keeps free text on one line.
func mdText(s string) string {
	return mdEscaper.Replace(strings.Join(strings.Fields(s), " "))
}

// mdEscaper escapes what Markdown (and the HTML it may carry) would read
// as markup in free text, so that a note reads in postmortem.md as typed,
// as the console and the HTML report show it: no link, image, emphasis,
// heading or tag of its own.
var mdEscaper = strings.NewReplacer(
	"&", "&amp;", "<", "&lt;", ">", "&gt;",
	`\`, `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`,
	"(", `\(`, ")", `\)`, "#", `\#`, "!", `\!`, "~", `\~`,
)

// mdCell makes free text safe in a table cell.
func mdCell(s string) string {
	return strings.ReplaceAll(mdText(s), "|", `\|`)
}
