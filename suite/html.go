package suite

import (
	"fmt"
	"html/template"
	"io"
	"path"
	"path/filepath"
	"strings"

	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/report"
)

// WriteHTML writes the suite's index page: a banner with the suite's
// status, exit code and resilience score, and the verdict table, one row
// per experiment (tag-filtered ones included, greyed) linking its own HTML
// report. base is the path from the page's directory to the suite's
// directory ("" when the page is in it), which the links start with.
func WriteHTML(w io.Writer, r *Record, base string) error {
	v := htmlIndex{Title: "suite " + r.Name, Status: strings.ToUpper(r.Status), StatusClass: r.Status, ExitCode: r.ExitCode,
		Started: r.StartedAt.Format("2006-01-02 15:04:05 MST"), Duration: fmtDuration(r.DurationS),
		Score: "none", Record: link(base, RecordFile), Rank: rankText()}
	if r.Score != nil {
		v.Score = report.FormatScore(*r.Score)
	}
	if r.Abort != nil {
		v.Detail = "interrupted by " + r.Abort.String() + "; "
	}
	var counts []string
	for _, s := range []Status{StatusPass, StatusFail, StatusAborted, StatusNotSteady, StatusRefused, StatusRevertFailed, StatusError, StatusSkipped, StatusNotRun, StatusRunning, StatusFiltered} {
		if n := r.Counts[s]; n > 0 {
			counts = append(counts, fmt.Sprintf("%d %s", n, strings.ReplaceAll(string(s), "_", " ")))
		}
	}
	v.Detail += fmt.Sprintf("%d experiment(s): %s; exit code %d", len(r.Experiments), strings.Join(counts, ", "), r.ExitCode)
	for _, e := range r.Experiments {
		row := htmlRow{Index: e.Index, Name: e.Name, File: e.File, Description: e.Description, Status: e.Status.Word(),
			StatusClass: string(e.Status), Reason: e.Reason, Tags: strings.Join(e.Tags, ", "), Score: "–", Duration: "–",
			Thresholds: "–", Faults: "–", Recovery: "–", Steady: "–"}
		if e.HTML != "" {
			row.Link = link(base, e.HTML)
		}
		if e.Score != nil {
			row.Score = "none"
			if e.Score.Value != nil {
				row.Score = strings.TrimSuffix(report.FormatScore(*e.Score.Value), "/100")
			}
			row.ScoreTitle = e.Score.String()
		}
		if e.Ran() {
			row.Duration = fmtDuration(e.DurationS)
			row.Thresholds = heldOf(len(e.Thresholds), func(i int) bool { return e.Thresholds[i].OK })
			row.Faults = heldOf(len(e.Faults), func(i int) bool { return e.Faults[i].RevertOK })
			row.Recovery = recoveryText(e)
			if ss := e.SteadyState; ss != nil {
				row.Steady = heldOf(len(ss.After), func(i int) bool { return ss.After[i].OK })
			}
		}
		if e.ExitCode != nil {
			row.ExitCode = fmt.Sprint(*e.ExitCode)
		}
		v.Rows = append(v.Rows, row)
	}
	if err := indexTemplate.Execute(w, v); err != nil {
		return fmt.Errorf("write suite html: %w", err)
	}
	return nil
}

// WriteHTMLFile writes the index page to path atomically, its links
// relative to path's directory; dir is the suite's directory.
func WriteHTMLFile(path string, r *Record, dir string) error {
	base, err := filepath.Rel(filepath.Dir(absPath(path)), absPath(dir))
	if err != nil {
		base = absPath(dir)
	}
	if base == "." {
		base = ""
	}
	return report.WriteFileWith(path, func(w io.Writer) error { return WriteHTML(w, r, filepath.ToSlash(base)) })
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// link joins the base and a path of the suite's directory for an href.
func link(base, rel string) string {
	rel = filepath.ToSlash(rel)
	if base == "" {
		return rel
	}
	return path.Join(base, rel)
}

// heldOf says "3/4" of n items of which ok(i) hold; "–" for none.
func heldOf(n int, ok func(int) bool) string {
	if n == 0 {
		return "–"
	}
	held := 0
	for i := range n {
		if ok(i) {
			held++
		}
	}
	return fmt.Sprintf("%d/%d", held, n)
}

// recoveryText lists each fault's recovery time, "–" for none.
func recoveryText(e ExperimentRecord) string {
	var parts []string
	for _, r := range e.Recovery {
		switch {
		case r.InsufficientTraffic:
			parts = append(parts, r.Fault+" not judged")
		case !r.Recovered || r.RecoveryTimeS == nil:
			parts = append(parts, r.Fault+" did not recover")
		default:
			s := fmt.Sprintf("%s %.1fs", r.Fault, *r.RecoveryTimeS)
			if b, ok := report.RecoveryBound(e.Thresholds, r.Fault); ok {
				s += fmt.Sprintf(" of %gs", b)
			}
			parts = append(parts, s)
		}
	}
	if len(parts) == 0 {
		return "–"
	}
	return strings.Join(parts, "; ")
}

// rankText is exitcode.Rank for people.
func rankText() string {
	parts := make([]string, len(exitcode.Rank))
	for i, c := range exitcode.Rank {
		parts[i] = fmt.Sprint(c)
	}
	return strings.Join(parts, " > ")
}

func fmtDuration(s float64) string {
	switch {
	case s >= 3600:
		return fmt.Sprintf("%dh%02dm", int(s)/3600, int(s)%3600/60)
	case s >= 60:
		return fmt.Sprintf("%dm%02ds", int(s)/60, int(s)%60)
	}
	return fmt.Sprintf("%.1fs", s)
}

type htmlIndex struct {
	Title, Status, StatusClass, Detail, Score, Started, Duration, Record, Rank string
	ExitCode                                                                   int
	Rows                                                                       []htmlRow
}

type htmlRow struct {
	Index                                                      int
	Name, File, Description, Link, Status, StatusClass, Reason string
	Tags, Score, ScoreTitle, Duration, ExitCode                string
	Thresholds, Faults, Recovery, Steady                       string
}

var indexTemplate = template.Must(template.New("index").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Status}} · {{.Title}} · llmchaos</title>
<style>
:root { --pass: #1a7f37; --fail: #cf222e; --aborted: #9a6700; --muted: #57606a; --line: #d0d7de; }
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; color: #1f2328; }
.banner { padding: 18px 28px; color: #fff; background: var(--muted); display: flex; gap: 24px; align-items: center; }
.banner.pass { background: var(--pass); } .banner.fail { background: var(--fail); } .banner.aborted { background: var(--aborted); }
.word { font-size: 34px; font-weight: 700; letter-spacing: 1px; }
.banner h1 { margin: 0 0 4px; font-size: 20px; } .banner p { margin: 2px 0; }
.score { margin-left: auto; text-align: right; } .score b { font-size: 28px; display: block; }
main { padding: 18px 28px; }
table { border-collapse: collapse; width: 100%; font-size: 14px; }
th, td { border-bottom: 1px solid var(--line); padding: 6px 8px; text-align: left; vertical-align: top; }
th { background: #f6f8fa; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.st { font-weight: 700; white-space: nowrap; }
.st.pass { color: var(--pass); } .st.fail, .st.revert_failed, .st.error { color: var(--fail); }
.st.aborted, .st.not_steady, .st.skipped, .st.refused { color: var(--aborted); } .st.not_run, .st.filtered { color: var(--muted); }
tr.filtered td, tr.not_run td { color: var(--muted); }
.why { color: var(--muted); font-size: 13px; } .file { color: var(--muted); font-size: 12px; }
footer { color: var(--muted); font-size: 12px; padding: 14px 28px; border-top: 1px solid var(--line); }
</style>
</head>
<body>
<header class="banner {{.StatusClass}}" id="verdict">
  <div class="word">{{.Status}}</div>
  <div><h1>{{.Title}}</h1><p>{{.Detail}}</p><p>started {{.Started}}, {{.Duration}}</p></div>
  <div class="score" id="score">resilience score<b>{{.Score}}</b></div>
</header>
<main>
<table id="verdicts">
<thead><tr><th>#</th><th>experiment</th><th>status</th><th class="num">score</th><th>thresholds held</th><th>faults reverted</th><th>recovery</th><th>steady after</th><th class="num">time</th><th class="num">exit</th><th>tags</th></tr></thead>
<tbody>
{{- range .Rows}}
<tr class="{{.StatusClass}}">
<td class="num">{{.Index}}</td>
<td>{{if .Link}}<a href="{{.Link}}">{{.Name}}</a>{{else}}{{.Name}}{{end}}<div class="file" title="{{.Description}}">{{.File}}</div></td>
<td><span class="st {{.StatusClass}}">{{.Status}}</span>{{if .Reason}}<div class="why">{{.Reason}}</div>{{end}}</td>
<td class="num" title="{{.ScoreTitle}}">{{.Score}}</td>
<td>{{.Thresholds}}</td><td>{{.Faults}}</td><td>{{.Recovery}}</td><td>{{.Steady}}</td>
<td class="num">{{.Duration}}</td><td class="num">{{.ExitCode}}</td><td>{{.Tags}}</td>
</tr>
{{- end}}
</tbody>
</table>
</main>
<footer>The suite's exit code is the worst of its experiments', in this order: {{.Rank}}. The record is <a href="{{.Record}}">suite.json</a>. Made by llmchaos suite.</footer>
</body>
</html>
`))
