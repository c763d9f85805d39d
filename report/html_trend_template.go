package report

import "html/template"

// trendPage is the trend page: the run report's stylesheet and layout,
// one section per experiment. It holds no script and loads nothing.
var trendPage = template.Must(template.New("trend").Parse(trendSource))

const trendSource = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="llmchaos {{.ToolVersion}}">
<title>{{.Title}} · llmchaos trends</title>
<style>{{.Style}}
.mark-line { display: inline-block; width: 18px; border-top: 2px dashed ` + colMark + `; vertical-align: middle; margin-right: 4px; }
</style>
</head>
<body>
<header id="top" class="banner unknown">
  <div class="verdict-word">TRENDS</div>
  <div>
    <h1>{{.Title}}</h1>
    <p class="why">{{len .Experiments}} experiment(s){{if .Span}}, {{.Span}}{{end}}</p>
    <p class="meta">{{if .Generated}}<span>generated {{.Generated}}</span>{{end}}<span>llmchaos {{.ToolVersion}}</span></p>
  </div>
</header>
<nav>
  {{- range .Experiments}}<a href="#{{.Anchor}}">{{.Name}}</a>{{end}}
</nav>
<main>
{{- if not .Experiments}}
<p class="muted">No runs in the history for this selection.</p>
{{- end}}
{{- range .Experiments}}
<section id="{{.Anchor}}" class="experiment">
  <h2>{{.Name}} <span class="badge">{{.Count}} run(s)</span> {{if .Latest}}<span class="badge">latest: <span class="{{if eq .LatestClass "pass"}}ok{{else if eq .LatestClass "fail"}}bad{{else}}muted{{end}}">{{.Latest}}</span></span>{{end}}</h2>
  {{- if .Targets}}<p class="hint">target: <code>{{.Targets}}</code></p>{{end}}
  <p class="hint"><span class="mark-line"></span>dashed lines mark a change of the experiment's spec (its hash), of its target or of the version label.</p>
  {{- if .PlotError}}<p class="bad">Some plots could not be drawn: {{.PlotError}}</p>{{end}}
  <div class="plots">
  {{- range .Plots}}
    <figure id="{{.ID}}">
      <figcaption><span class="title">{{.Title}}</span>{{if .Unit}}<span class="unit">{{.Unit}}</span>{{end}}
      {{- range .Lines}}<span class="key"><svg width="22" height="10" aria-hidden="true"><line x1="1" y1="5" x2="21" y2="5" stroke="{{.Color}}" stroke-width="2.5"/></svg>{{.Label}}</span>{{end}}</figcaption>
      {{.SVG}}
      {{- if .Note}}<p class="note">{{.Note}}</p>{{end}}
    </figure>
  {{- end}}
  </div>
  {{- if .Marks}}
  <h3>Changes</h3>
  <ul class="probes">{{range .Marks}}<li>{{.}}</li>{{end}}</ul>
  {{- end}}
  <h3>Runs</h3>
  <div class="table-wrap"><table>
    <thead><tr><th class="num">run</th><th>started</th><th>verdict</th><th class="num">score</th><th>regression</th><th>spec</th><th>version</th><th>target</th></tr></thead>
    <tbody>
    {{- range .Runs}}
      <tr{{if eq .VerdictClass "fail"}} class="failed"{{end}}><td class="num">{{.ID}}</td><td>{{.At}}</td><td><span class="{{if eq .VerdictClass "pass"}}ok{{else if eq .VerdictClass "fail"}}bad{{else}}muted{{end}}">{{.Verdict}}</span></td><td class="num">{{.Score}}</td><td>{{if eq .Regressed "REGRESSION"}}<span class="bad">{{.Regressed}}</span>{{else}}{{.Regressed}}{{end}}</td><td class="mono">{{.SpecHash}}</td><td>{{.Version}}</td><td class="mono">{{.Target}}</td></tr>
    {{- end}}
    </tbody>
  </table></div>
</section>
{{- end}}
</main>
<footer>llmchaos {{.ToolVersion}} · trends from the run history · self-contained: this page loads nothing</footer>
</body>
</html>
`
