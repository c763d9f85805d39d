package report

import "html/template"

// htmlPage is the HTML report's page. It is parsed once and only executed
// afterwards (html/template escapes every value by its context). The page
// holds no script and loads nothing: its style is inline, its plots are
// inline SVG and its fonts are the reader's own.
var htmlPage = template.Must(template.New("report").Parse(htmlSource))

const htmlSource = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="llmchaos {{.ToolVersion}}">
<title>{{.VerdictWord}} · {{.Title}} · llmchaos report</title>
<style>
:root {
  --fg: #1f2328; --muted: #59636e; --line: #d8dee4; --soft: #f6f8fa;
  --pass: #1a7f37; --fail: #cf222e; --abort: #9a6700;
  --fault: ` + colFaultBand + `; --recovery: ` + colRecoveryBand + `;
}
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body {
  margin: 0; color: var(--fg); background: #fff;
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, "Liberation Sans", sans-serif;
}
.banner { color: #fff; padding: 20px 32px; display: flex; gap: 24px; align-items: center; flex-wrap: wrap; }
.banner.pass { background: var(--pass); }
.banner.fail { background: var(--fail); }
.banner.aborted { background: var(--abort); }
.banner.unknown { background: #57606a; }
.verdict-word {
  font-size: 32px; font-weight: 800; letter-spacing: .06em; line-height: 1.1;
  border: 3px solid rgba(255,255,255,.9); border-radius: 8px; padding: 6px 16px;
}
.banner h1 { margin: 0; font-size: 24px; font-weight: 650; line-height: 1.25; }
.banner .why { margin: 2px 0 0; font-size: 16px; }
.banner .meta { margin: 4px 0 0; font-size: 13px; opacity: .88; }
.banner .meta span + span::before { content: "·"; margin: 0 8px; }
.alerts { margin: 0; padding: 10px 32px; list-style: none; background: #fff8c5; border-bottom: 1px solid #eed888; color: #4d2d00; font-weight: 600; }
.alerts li::before { content: "⚠ "; }
nav { position: sticky; top: 0; z-index: 1; background: rgba(255,255,255,.96); border-bottom: 1px solid var(--line); padding: 8px 32px; font-size: 13px; }
nav a { color: var(--muted); text-decoration: none; margin-right: 18px; white-space: nowrap; }
nav a:hover { color: var(--fg); text-decoration: underline; }
main { max-width: 1320px; margin: 0 auto; padding: 4px 32px 40px; }
h2 { font-size: 19px; font-weight: 650; margin: 30px 0 12px; padding-bottom: 6px; border-bottom: 1px solid var(--line); }
h3 { font-size: 15px; margin: 18px 0 8px; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(165px, 1fr)); gap: 12px; margin-top: 18px; }
.card { background: var(--soft); border: 1px solid var(--line); border-radius: 8px; padding: 10px 14px; }
.card .label { font-size: 12px; color: var(--muted); text-transform: uppercase; letter-spacing: .04em; }
.card .value { font-size: 24px; font-weight: 650; line-height: 1.3; font-variant-numeric: tabular-nums; }
.card .sub { font-size: 12px; color: var(--muted); }
.card.bad { border-color: #ffcecb; background: #ffebe9; }
.card.bad .value { color: var(--fail); }
.hint { font-size: 13px; color: var(--muted); margin: -4px 0 12px; }
.swatch { display: inline-block; width: 14px; height: 12px; border-radius: 2px; vertical-align: -1px; margin: 0 4px 0 2px; }
.swatch.fault { background: rgba(207,34,46,.16); border: 1px solid rgba(207,34,46,.5); }
.diff { white-space: pre-wrap; word-break: break-word; font-size: 12px; }
.diff div { padding: 1px 4px; }
.diff del { background: rgba(207,34,46,.18); text-decoration: none; }
.diff ins { background: rgba(26,127,55,.18); text-decoration: none; }
.diff-tag { display: inline-block; width: 6.5em; color: var(--muted, #666); font-family: sans-serif; }
.swatch.recovery { background: rgba(212,167,44,.22); border: 1px solid rgba(212,167,44,.7); }
.plots { display: grid; grid-template-columns: repeat(auto-fit, minmax(540px, 1fr)); gap: 20px 28px; }
figure { margin: 0; min-width: 0; }
figcaption { display: flex; flex-wrap: wrap; align-items: baseline; gap: 2px 14px; margin-bottom: 2px; }
figcaption .title { font-weight: 650; font-size: 14px; }
figcaption .unit { color: var(--muted); font-size: 12px; }
.key { font-size: 12px; color: var(--muted); white-space: nowrap; }
.key svg { vertical-align: middle; margin-right: 3px; }
figure .note { font-size: 12px; color: var(--muted); margin: 0; }
svg.plot { display: block; width: 100%; height: auto; }
.table-wrap { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; font-size: 14px; font-variant-numeric: tabular-nums; }
table.fit { width: auto; min-width: min(640px, 100%); }
th, td { text-align: left; padding: 6px 10px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-size: 12px; color: var(--muted); font-weight: 600; text-transform: uppercase; letter-spacing: .03em; background: var(--soft); white-space: nowrap; }
td.num, th.num { text-align: right; white-space: nowrap; }
td.mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace; font-size: 13px; }
tr.failed td { background: #fff5f5; }
tr.section td { font-weight: 650; background: #fff; color: var(--muted); padding-top: 12px; }
tr.phase-fault td:first-child { box-shadow: inset 4px 0 0 var(--fault); }
tr.phase-recovery td:first-child { box-shadow: inset 4px 0 0 var(--recovery); }
.ok { color: var(--pass); font-weight: 700; }
.bad { color: var(--fail); font-weight: 700; }
.mark { font-size: 17px; line-height: 1; }
.muted { color: var(--muted); }
.unjudged { color: var(--abort); font-weight: 700; }
.badge { display: inline-block; padding: 0 8px; border-radius: 10px; font-size: 12px; background: var(--soft); border: 1px solid var(--line); white-space: nowrap; }
.badge.fault { background: #ffebe9; border-color: #ffcecb; }
.badge.replica { background: #ddf4ff; border-color: #b6e3ff; }
.badge.kubernetes { background: #eef1ff; border-color: #c8d1ff; }
.badge.runner { background: #f0fff4; border-color: #aceebb; }
.badge.gameday { background: #fbefff; border-color: #ecd8ff; }
.cols { display: grid; grid-template-columns: repeat(auto-fit, minmax(380px, 1fr)); gap: 8px 32px; }
ul.probes { list-style: none; margin: 0; padding: 0; }
ul.probes li { padding: 4px 0; border-bottom: 1px solid var(--line); }
pre { background: var(--soft); border: 1px solid var(--line); border-radius: 6px; padding: 12px 14px; overflow: auto;
  font: 13px/1.45 ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace; }
details summary { cursor: pointer; color: var(--muted); }
dl.about { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 0 0 12px; }
dl.about dt { color: var(--muted); }
dl.about dd { margin: 0; }
footer { color: var(--muted); font-size: 12px; text-align: center; padding: 20px; border-top: 1px solid var(--line); }
@media (max-width: 640px) { .banner, nav, main, .alerts { padding-left: 14px; padding-right: 14px; } .plots { grid-template-columns: 1fr; } }
@media print { nav { display: none; } .banner { -webkit-print-color-adjust: exact; print-color-adjust: exact; } figure { break-inside: avoid; } }
</style>
</head>
<body>
<header id="verdict" class="banner {{.VerdictClass}}">
  <div class="verdict-word">{{.VerdictWord}}</div>
  <div>
    <h1>{{.Title}}</h1>
    <p class="why">{{.VerdictDetail}}</p>
    <p class="meta">{{range .Meta}}<span>{{.}}</span>{{end}}</p>
  </div>
</header>
{{- if .Alerts}}
<ul class="alerts" id="alerts">{{range .Alerts}}<li>{{.}}</li>{{end}}</ul>
{{- end}}
<nav>
  <a href="#summary">Summary</a><a href="#plots">Over time</a>
  {{- if .Phases}}<a href="#phases">Phases</a>{{end}}
  <a href="#thresholds">Thresholds</a>
  {{- if .Recovery}}<a href="#recovery">Recovery</a>{{end}}
  {{- if .Consistency}}<a href="#consistency">Consistency</a>{{end}}
  {{- if .Faults}}<a href="#faults">Faults</a>{{end}}
  {{- if .SteadyState}}<a href="#steady-state">Steady state</a>{{end}}
  {{- if .Events}}<a href="#events">Events</a>{{end}}
  <a href="#details">Details</a>
  {{- if .Experiment}}<a href="#experiment">Experiment</a>{{end}}
</nav>
<main>
<section id="summary">
  <div class="cards">
  {{- range .Cards}}
    <div class="card{{if .Bad}} bad{{end}}"><div class="label">{{.Label}}</div><div class="value">{{.Value}}</div><div class="sub">{{.Sub}}</div></div>
  {{- end}}
  </div>
</section>

<section id="plots">
  <h2>Over time</h2>
  <p class="hint">Per second of run clock: a request counts in the second it ended.
  {{- if .HasFaults}} Shaded <span class="swatch fault"></span>fault windows, named at the top{{if .HasRecovery}}, and <span class="swatch recovery"></span>recovery{{end}}.{{end}}</p>
  {{- if .PlotError}}<p class="bad">Some plots could not be drawn: {{.PlotError}}</p>{{end}}
  {{- if not .Plots}}<p class="muted">This run has no time series.</p>{{end}}
  <div class="plots">
  {{- range .Plots}}
    <figure id="{{.ID}}">
      <figcaption><span class="title">{{.Title}}</span>{{if .Unit}}<span class="unit">{{.Unit}}</span>{{end}}
      {{- range .Lines}}<span class="key"><svg width="22" height="10" aria-hidden="true"><line x1="1" y1="5" x2="21" y2="5" stroke="{{.Color}}" stroke-width="2.5"{{if .Dashed}} stroke-dasharray="5 3"{{end}}/></svg>{{.Label}}</span>{{end}}</figcaption>
      {{.SVG}}
      {{- if .Note}}<p class="note">{{.Note}}</p>{{end}}
    </figure>
  {{- end}}
  </div>
</section>

{{- if .Phases}}
<section id="phases">
  <h2>Phases</h2>
  <div class="table-wrap"><table>
    <thead><tr><th>phase</th><th>fault</th><th>when</th><th class="num">length</th><th class="num">requests</th><th class="num">error rate</th><th class="num">ttft p50</th><th class="num">ttft p99</th><th class="num">itl p99</th><th class="num">e2e p99</th><th class="num">ok / s</th></tr></thead>
    <tbody>
    {{- range .Phases}}
      <tr class="phase-{{.Name}}"><td>{{.Name}}</td><td>{{.Fault}}</td><td>{{.Spans}}</td><td class="num">{{.Length}}</td><td class="num">{{.Requests}}</td><td class="num">{{.ErrorRate}}</td><td class="num">{{.TTFTP50}}</td><td class="num">{{.TTFTP99}}</td><td class="num">{{.ITLP99}}</td><td class="num">{{.E2EP99}}</td><td class="num">{{.OKPerS}}</td></tr>
    {{- end}}
    </tbody>
  </table></div>
</section>
{{- end}}

<section id="thresholds">
  <h2>Thresholds</h2>
  {{- if .Thresholds}}
  <div class="table-wrap"><table class="fit">
    <thead><tr><th></th><th>metric</th><th>expression</th><th class="num">observed</th></tr></thead>
    <tbody>
    {{- range .Thresholds}}
      <tr{{if not .OK}} class="failed"{{end}}><td>{{if .OK}}<span class="ok mark" title="held">✓</span>{{else}}<span class="bad mark" title="failed">✗</span>{{end}}</td><td class="mono">{{.Key}}</td><td class="mono">{{.Expr}}</td><td class="num{{if .NoData}} muted{{end}}">{{.Observed}}</td></tr>
    {{- end}}
    </tbody>
  </table></div>
  {{- else}}
  <p class="muted">No thresholds were given.</p>
  {{- end}}
</section>

{{- if .Recovery}}
<section id="recovery">
  <h2>Recovery</h2>
  <p class="hint">Recovery time runs from the fault's injection; from revert (time_to_recover) from the revert of a sustained fault, while an instant fault (a kill, a stop) has none. Held last is the recovery criterion that was the last to hold; insufficient traffic: too few requests finished after the fault to judge.</p>
  <div class="table-wrap"><table class="fit">
    <thead><tr><th>fault</th><th>recovered</th><th class="num">recovery time</th><th class="num">from revert</th><th>held last</th>{{if .RecoveryOOM}}<th class="num">after OOM</th>{{end}}</tr></thead>
    <tbody>
    {{- $oom := .RecoveryOOM}}
    {{- range .Recovery}}
      <tr{{if not (or .Recovered .Insufficient)}} class="failed"{{end}}><td>{{.Fault}}</td><td>{{if .Insufficient}}<span class="unjudged">insufficient traffic</span>{{else if .Recovered}}<span class="ok">yes</span>{{else}}<span class="bad">no</span>{{if .CutBy}} ({{.CutBy}} came first){{end}}{{end}}</td><td class="num">{{.Time}}</td><td class="num{{if .Instant}} muted{{end}}">{{.FromRevert}}</td><td class="mono">{{.HeldLast}}</td>{{if $oom}}<td class="num">{{.OOM}}</td>{{end}}</tr>
    {{- end}}
    </tbody>
  </table></div>
</section>
{{- end}}

{{- with .Consistency}}
<section id="consistency">
  <h2>Output consistency</h2>
  <p class="hint">{{.Summary}} Consistency is the share of probes that gave the reference; divergence at is where the divergent ones first left it; distinct is the most different answers one prompt got.</p>
  <div class="table-wrap"><table class="fit">
    <thead><tr><th>phase</th><th>fault</th><th class="num">compared</th><th class="num">consistency</th><th class="num">divergence at</th><th class="num">distinct</th></tr></thead>
    <tbody>
    {{- range .Windows}}
      <tr class="phase-{{.Phase}}{{if .Bad}} failed{{end}}"><td>{{.Phase}}</td><td>{{.Fault}}</td><td class="num">{{.Compared}}</td><td class="num">{{.Consistency}}</td><td class="num">{{.DivergenceAt}}</td><td class="num">{{.Distinct}}</td></tr>
    {{- end}}
    </tbody>
  </table></div>
  <div class="table-wrap"><table class="prompts">
    <thead><tr><th>#</th><th>prompt</th><th class="num">baseline agreement</th><th class="num">distinct</th><th>most common divergent answer against the reference</th></tr></thead>
    <tbody>
    {{- range .Prompts}}
      <tr class="prompt{{if .Divergent}} failed{{end}}"><td class="num">{{.N}}</td><td>{{.Prompt}}</td><td class="num">{{if .NoReference}}<span class="unjudged">no reference</span>{{else}}{{.Agreement}}{{end}}</td><td class="num">{{.Distinct}}</td>
      <td>{{if .Divergent}}<div class="diff mono"><div class="diff-ref"><span class="diff-tag">reference</span>{{if .Cut}}…{{end}}{{.Before}}<del>{{.Reference}}</del></div><div class="diff-ans"><span class="diff-tag">answer</span>{{if .Cut}}…{{end}}{{.Before}}<ins>{{.Answer}}</ins></div></div><p class="note">{{.DivergentNote}}</p>{{else if .NoReference}}<span class="muted">not compared</span>{{else}}<span class="ok">always the reference</span>{{end}}</td></tr>
    {{- end}}
    </tbody>
  </table></div>
</section>
{{- end}}

{{- if .Faults}}
<section id="faults">
  <h2>Faults</h2>
  <div class="table-wrap"><table>
    <thead><tr><th>fault</th><th>type</th><th>target</th><th>planned</th><th>injected</th><th>reverted</th><th>revert</th><th>error</th></tr></thead>
    <tbody>
    {{- range .Faults}}
      <tr{{if not .RevertOK}} class="failed"{{end}}><td>{{.Name}}</td><td class="mono">{{.Type}}</td><td>{{.Target}}</td><td class="num">{{.Planned}}</td><td class="num">{{.Injected}}</td><td class="num">{{.Reverted}}</td><td>{{if .RevertOK}}<span class="ok">{{.Revert}}</span>{{else}}<span class="bad">{{.Revert}}</span>{{end}}</td><td>{{.Error}}</td></tr>
    {{- end}}
    </tbody>
  </table></div>
</section>
{{- end}}

{{- with .SteadyState}}
<section id="steady-state">
  <h2>Steady state</h2>
  <div class="cols">
    <div><h3>Before the load</h3><ul class="probes">{{range .Before}}<li>{{if .OK}}<span class="ok">✓</span>{{else}}<span class="bad">✗</span>{{end}} <code>{{.Probe}}</code>{{if .Detail}} <span class="muted">— {{.Detail}}</span>{{end}}</li>{{end}}</ul></div>
    <div><h3>After the load</h3>{{if .AfterChecked}}<ul class="probes">{{range .After}}<li>{{if .OK}}<span class="ok">✓</span>{{else}}<span class="bad">✗</span>{{end}} <code>{{.Probe}}</code>{{if .Detail}} <span class="muted">— {{.Detail}}</span>{{end}}</li>{{end}}</ul>{{else}}<p class="muted">Not checked: the run ended before.</p>{{end}}</div>
  </div>
</section>
{{- end}}

{{- if .Events}}
<section id="events">
  <h2>Events</h2>
  <div class="table-wrap"><table>
    <thead><tr><th class="num">at</th><th>source</th><th>what</th><th>target</th><th>detail</th></tr></thead>
    <tbody>
    {{- range .Events}}
      <tr><td class="num">{{.At}}</td><td><span class="badge {{.Source}}">{{.Source}}</span></td><td>{{.Kind}}</td><td>{{.Target}}</td><td>{{.Detail}}{{if .By}} <span class="muted">— by {{.By}}</span>{{end}}</td></tr>
    {{- end}}
    </tbody>
  </table></div>
</section>
{{- end}}

<section id="details">
  <h2>Details</h2>
  <div class="table-wrap"><table>
    <thead><tr><th>distribution</th><th class="num">count</th><th class="num">mean</th><th class="num">p50</th><th class="num">p90</th><th class="num">p99</th><th class="num">p99.9</th><th class="num">max</th></tr></thead>
    <tbody>
    {{- range .Dist}}
      {{- if .Section}}<tr class="section"><td colspan="8">{{.Name}}</td></tr>
      {{- else}}<tr><td class="mono">{{.Name}}</td><td class="num">{{.Count}}</td><td class="num">{{.Mean}}</td><td class="num">{{.P50}}</td><td class="num">{{.P90}}</td><td class="num">{{.P99}}</td><td class="num">{{.P999}}</td><td class="num">{{.Max}}</td></tr>{{end}}
    {{- end}}
    </tbody>
  </table></div>
  <div class="cols">
    <div><h3>Requests</h3><table><tbody>{{range .Requests}}<tr><td>{{.Key}}</td><td class="num">{{.Value}}</td><td class="num muted">{{.Note}}</td></tr>{{end}}</tbody></table></div>
    <div><h3>Throughput</h3><table><tbody>{{range .Throughput}}<tr><td>{{.Key}}</td><td class="num">{{.Value}}</td><td class="num muted">{{.Note}}</td></tr>{{end}}</tbody></table>
    <h3>Quality</h3><table><tbody>{{range .Quality}}<tr><td>{{.Key}}</td><td class="num">{{.Value}}</td></tr>{{end}}</tbody></table></div>
  </div>
  {{- if .MergedFrom}}
  <h3>Merged from</h3>
  <div class="table-wrap"><table><thead><tr><th>run</th><th>started</th><th class="num">duration</th><th class="num">seed</th><th>verdict</th></tr></thead><tbody>
  {{- range .MergedFrom}}<tr><td>{{.Name}}</td><td>{{.StartedAt.UTC.Format "2006-01-02 15:04:05 UTC"}}</td><td class="num">{{.DurationS}}s</td><td class="num">{{.Seed}}</td><td>{{.Verdict}}</td></tr>{{end}}
  </tbody></table></div>
  {{- end}}
</section>

{{- with .Experiment}}
<section id="experiment">
  <h2>Experiment</h2>
  <dl class="about"><dt>name</dt><dd>{{.Name}}</dd>{{if .Description}}<dt>description</dt><dd>{{.Description}}</dd>{{end}}{{if .File}}<dt>file</dt><dd><code>{{.File}}</code></dd>{{end}}</dl>
  {{- if .Spec}}
  <pre id="experiment-spec"><code>{{.Spec}}</code></pre>
  {{- end}}
</section>
{{- end}}

{{- if .Config}}
<section id="config">
  <details><summary>Configuration (secrets removed)</summary><pre><code>{{.Config}}</code></pre></details>
</section>
{{- end}}
</main>
<footer>llmchaos {{.ToolVersion}} · run report schema {{.SchemaVersion}} · self-contained: this page loads nothing</footer>
</body>
</html>
`
