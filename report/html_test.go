package report

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// renderHTML writes d and parses the page back.
func renderHTML(t *testing.T, d *Document) (string, *html.Node) {
	t.Helper()
	var b bytes.Buffer
	if err := WriteHTML(&b, d); err != nil {
		t.Fatal(err)
	}
	root, err := html.Parse(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatalf("page does not parse: %v", err)
	}
	return b.String(), root
}

// walk calls fn for every element under n.
func walk(n *html.Node, fn func(*html.Node)) {
	if n.Type == html.ElementNode {
		fn(n)
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c, fn)
	}
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// byID finds the element with the id.
func byID(root *html.Node, id string) *html.Node {
	var found *html.Node
	walk(root, func(n *html.Node) {
		if found == nil && attr(n, "id") == id {
			found = n
		}
	})
	return found
}

// textOf is the text under n, spaces squeezed.
func textOf(n *html.Node) string {
	var b strings.Builder
	var rec func(*html.Node)
	rec = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
			b.WriteByte(' ')
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			rec(c)
		}
	}
	rec(n)
	return strings.Join(strings.Fields(b.String()), " ")
}

// rowsOf returns the text of each cell of each body row of the table
// under n.
func rowsOf(n *html.Node) [][]string {
	var rows [][]string
	walk(n, func(tr *html.Node) {
		if tr.DataAtom != atom.Tr || tr.Parent == nil || tr.Parent.DataAtom != atom.Tbody {
			return
		}
		var cells []string
		for c := tr.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == html.ElementNode && c.DataAtom == atom.Td {
				cells = append(cells, textOf(c))
			}
		}
		rows = append(rows, cells)
	})
	return rows
}

func TestHTMLSections(t *testing.T) {
	d := sampleExperiment(t)
	_, root := renderHTML(t, d)
	for _, id := range []string{
		"verdict", "summary", "plots", "plot-ttft", "plot-itl", "plot-e2e", "plot-errors", "plot-throughput",
		"plot-tokens", "plot-inflight", "plot-server-kv", "plot-server-queue", "plot-gpu-gpu-memory-used-bytes-0",
		"phases", "thresholds", "recovery", "faults", "steady-state", "events", "details", "experiment",
		"experiment-spec", "config",
	} {
		if byID(root, id) == nil {
			t.Errorf("no element with id %q", id)
		}
	}
	banner := byID(root, "verdict")
	if got := attr(banner, "class"); got != "banner fail" {
		t.Errorf("banner class = %q, want %q", got, "banner fail")
	}
	if got := textOf(banner); !strings.HasPrefix(got, "FAIL oom-and-slow-net 2 of 5 thresholds failed started 2026-03-14 15:09:26 UTC") {
		t.Errorf("banner reads %q", got)
	}
	// Every plot is inline SVG with lines, ticks and the fault windows'
	// labels drawn in it.
	plots := 0
	walk(byID(root, "plots"), func(n *html.Node) {
		if n.DataAtom != atom.Figure {
			return
		}
		plots++
		var svg *html.Node
		walk(n, func(c *html.Node) {
			if svg == nil && c.DataAtom == atom.Svg && attr(c, "class") == "plot" {
				svg = c
			}
		})
		if svg == nil {
			t.Errorf("figure %s has no inline plot", attr(n, "id"))
			return
		}
		if svg.Namespace != "svg" || attr(svg, "viewBox") != "0 0 560 210" {
			t.Errorf("figure %s: svg namespace %q, viewBox %q", attr(n, "id"), svg.Namespace, attr(svg, "viewBox"))
		}
		var paths int
		walk(svg, func(c *html.Node) {
			if c.Data == "path" {
				paths++
			}
		})
		text := textOf(svg)
		if paths < 10 || !strings.Contains(text, "slow-net") || !strings.Contains(text, "gpu-oom") || !strings.Contains(text, "seconds") {
			t.Errorf("figure %s: %d paths, text %q; want lines, both fault labels and the time axis", attr(n, "id"), paths, text)
		}
	})
	if plots != 10 {
		t.Errorf("plots = %d, want 10", plots)
	}

	// The tables hold the document's figures.
	th := rowsOf(byID(root, "thresholds"))
	if len(th) != len(d.Thresholds) {
		t.Fatalf("threshold rows = %d, want %d", len(th), len(d.Thresholds))
	}
	for i, r := range th {
		want := []string{"✓", d.Thresholds[i].Key(), d.Thresholds[i].Expr, d.Thresholds[i].Observed()}
		if !d.Thresholds[i].OK {
			want[0] = "✗"
		}
		if !slices.Equal(r, want) {
			t.Errorf("threshold row %d = %q, want %q", i, r, want)
		}
	}
	ph := rowsOf(byID(root, "phases"))
	wantPhases := [][]string{
		{"baseline", "-", "0s → 15.012s", "15.012s"},
		{"fault", "slow-net", "15.012s → 30.004s", "14.992s"},
		{"recovery", "slow-net", "30.004s → 33.5s", "3.496s"},
		{"after", "-", "33.5s → 40.003s, 52.4s → 60s", "14.103s"},
		{"fault", "gpu-oom", "40.003s → 48.01s", "8.007s"},
		{"recovery", "gpu-oom", "48.01s → 52.4s", "4.39s"},
	}
	if len(ph) != len(wantPhases) {
		t.Fatalf("phase rows = %q, want %d rows", ph, len(wantPhases))
	}
	for i, w := range wantPhases {
		if !slices.Equal(ph[i][:4], w) {
			t.Errorf("phase row %d = %q, want it to start %q", i, ph[i], w)
		}
	}
	// The fault phase's ttft p99 is the figure its threshold reads.
	if got, want := ph[1][7], fmtMs(*d.Thresholds[1].Value); got != want {
		t.Errorf("slow-net fault phase ttft p99 = %q, want %q (the threshold's value)", got, want)
	}
	// ok/s of the after phases is requests_per_s{phase:after}.
	if got, want := ph[3][10], fmtRate(*d.Thresholds[3].Value); got != want {
		t.Errorf("after phases ok/s = %q, want %q", got, want)
	}
	faults := rowsOf(byID(root, "faults"))
	if want := []string{"slow-net", "network.latency", "proxy 127.0.0.1:8001,8002", "15s → 30s", "15.012s (+12ms)", "30.004s (+4ms)", "ok", ""}; !slices.Equal(faults[0], want) {
		t.Errorf("fault row = %q, want %q", faults[0], want)
	}
	rec := rowsOf(byID(root, "recovery"))
	wantRec := [][]string{
		{"slow-net", "yes", "18.49s", "3.48s", "ttft p99", "-"},
		{"gpu-oom", "yes", "12.40s", "4.39s", "error_rate", "9.00s"},
	}
	if !slices.EqualFunc(rec, wantRec, slices.Equal) {
		t.Errorf("recovery rows = %q, want %q", rec, wantRec)
	}
	if ev := rowsOf(byID(root, "events")); len(ev) != len(d.Events) || ev[5][0] != "40.500s" || ev[5][2] != "died" {
		t.Errorf("events = %q", ev)
	}
	if got := textOf(byID(root, "experiment-spec")); got != strings.Join(strings.Fields(sampleSpec), " ") {
		t.Errorf("experiment spec reads %q", got)
	}
}

// TestHTMLLoadsNothing: the page names no resource to fetch — no script,
// stylesheet, image, frame, font or url() — so it renders offline and
// leaks nothing when opened.
func TestHTMLLoadsNothing(t *testing.T) {
	load, err := Build(testMeta(), testRun(t))
	if err != nil {
		t.Fatal(err)
	}
	for name, d := range map[string]*Document{"experiment": sampleExperiment(t), "load": load} {
		page, root := renderHTML(t, d)
		walk(root, func(n *html.Node) {
			switch n.DataAtom {
			case atom.Script, atom.Link, atom.Img, atom.Iframe, atom.Object, atom.Embed, atom.Audio, atom.Video, atom.Source, atom.Base:
				t.Errorf("%s: page has a <%s> element", name, n.Data)
			}
			if n.Data == "image" || n.Data == "use" || n.Data == "foreignObject" {
				t.Errorf("%s: page has an SVG <%s>", name, n.Data)
			}
			for _, a := range n.Attr {
				k := strings.ToLower(a.Key)
				if (k == "href" && !strings.HasPrefix(a.Val, "#")) || k == "src" || k == "srcset" || k == "xlink:href" ||
					k == "action" || k == "poster" || k == "data" || strings.HasPrefix(k, "on") {
					t.Errorf("%s: <%s %s=%q> could load or run something", name, n.Data, a.Key, a.Val)
				}
				if v := strings.ToLower(a.Val); strings.Contains(v, "url(") || strings.Contains(v, "http://") || strings.Contains(v, "https://") || strings.Contains(v, "//") && k == "style" {
					t.Errorf("%s: <%s %s=%q> names a resource", name, n.Data, a.Key, a.Val)
				}
			}
			if n.DataAtom == atom.Style {
				css := strings.ToLower(textOf(n))
				for _, bad := range []string{"url(", "@import", "@font-face", "http:", "https:"} {
					if strings.Contains(css, bad) {
						t.Errorf("%s: stylesheet has %q", name, bad)
					}
				}
			}
		})
		if !strings.HasPrefix(page, "<!DOCTYPE html>\n") {
			t.Errorf("%s: page starts %q", name, page[:min(40, len(page))])
		}
	}
}

// TestHTMLEscapes: names and texts from the run (a fault's name in a plot
// label, an event's detail, the experiment file) are text, never markup.
func TestHTMLEscapes(t *testing.T) {
	d := sampleExperiment(t)
	evil := `<script>alert(1)</script>`
	d.Name = `nightly <oom> & "recovery"`
	d.Faults[0].Name = evil
	d.Phases[1].Fault = evil
	d.Events[1].Detail = evil
	d.Experiment.Spec += "# " + evil + "\n"
	page, root := renderHTML(t, d)
	walk(root, func(n *html.Node) {
		if n.DataAtom == atom.Script {
			t.Errorf("an injected <script> became an element")
		}
	})
	if strings.Contains(page, evil) {
		t.Errorf("page holds %s unescaped", evil)
	}
	var h1 *html.Node
	walk(byID(root, "verdict"), func(n *html.Node) {
		if n.DataAtom == atom.H1 {
			h1 = n
		}
	})
	if got := textOf(h1); got != d.Name {
		t.Errorf("title reads %q, want %q", got, d.Name)
	}
	if got := textOf(byID(root, "plot-ttft")); !strings.Contains(got, evil) {
		t.Errorf("the fault's name is not in its plot label as text: %q", got)
	}
}

func TestHTMLPlainLoadAndEmpty(t *testing.T) {
	load, err := Build(testMeta(), testRun(t))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		doc     *Document
		ids     []string
		absent  []string
		banner  string
		inPage  []string
		noPlots bool
	}{
		{
			name:   "load",
			doc:    load,
			ids:    []string{"plot-ttft", "plot-errors", "plot-inflight", "phases", "thresholds", "details", "config"},
			absent: []string{"plot-server-kv", "recovery", "faults", "steady-state", "events", "experiment", "alerts"},
			banner: "banner unknown", // no thresholds: no verdict
			// Phases from the tags alone: no times, figures per tag.
			inPage: []string{"no thresholds were given", "Configuration (secrets removed)", "[REDACTED]"},
		},
		{
			name:    "hand-made",
			doc:     &Document{SchemaVersion: 1, Thresholds: []ThresholdResult{}},
			ids:     []string{"verdict", "summary", "plots", "thresholds", "details"},
			absent:  []string{"plot-ttft", "phases", "config", "experiment"},
			banner:  "banner unknown",
			inPage:  []string{"NO VERDICT", "This run has no time series."},
			noPlots: true,
		},
		{
			name: "lost and unreverted",
			doc: &Document{SchemaVersion: 1, Verdict: VerdictAborted, DurationS: 10, Requests: Requests{Sent: 5, Lost: 2},
				Faults:   []FaultRecord{{Name: "kill", Type: "replica.kill", PlannedAtS: 2, InjectedAtS: Seconds(2e9), Error: "undo: timeout"}},
				Recovery: []RecoveryRecord{{Fault: "kill"}},
				SteadyState: &SteadyState{Before: []ProbeRecord{{Probe: "health", OK: true}},
					After: []ProbeRecord{{Probe: "health", OK: false, Detail: "503"}}},
				MergedFrom: []MergedRun{{Name: "shard-a", StartedAt: startedAt, DurationS: 10, Seed: 7, Verdict: VerdictPass}},
				Thresholds: []ThresholdResult{{Metric: "ttft", Expr: "p(99)<1s", NoData: true}}},
			ids:    []string{"alerts", "faults", "recovery", "steady-state"},
			banner: "banner aborted",
			inPage: []string{"2 requests were lost", `fault &#34;kill&#34; was not reverted: undo: timeout`, "steady state not restored after the run: health",
				"<span class=\"bad\">FAILED</span>", "<span class=\"bad\">no</span>", "never", "it may still be applied",
				"<td>shard-a</td><td>2026-03-14 15:09:26 UTC</td>", `<td class="num muted">no data</td>`},
			noPlots: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page, root := renderHTML(t, tt.doc)
			for _, id := range tt.ids {
				if byID(root, id) == nil {
					t.Errorf("no element with id %q", id)
				}
			}
			for _, id := range tt.absent {
				if byID(root, id) != nil {
					t.Errorf("element %q present", id)
				}
			}
			if got := attr(byID(root, "verdict"), "class"); got != tt.banner {
				t.Errorf("banner class = %q, want %q", got, tt.banner)
			}
			for _, s := range tt.inPage {
				if !strings.Contains(page, s) {
					t.Errorf("page lacks %q", s)
				}
			}
			if n := strings.Count(page, `<svg class="plot"`); (n == 0) != tt.noPlots {
				t.Errorf("%d plots", n)
			}
		})
	}
}

// TestHTMLVerdictBanner: the banner says why an aborted run ended, as the
// terminal summary and JUnit do, and a run without thresholds has no
// verdict.
func TestHTMLVerdictBanner(t *testing.T) {
	twoThresholds := []ThresholdResult{{Metric: "ttft", Expr: "p(99)<1s", OK: true}, {Metric: "error_rate", Expr: "rate<0.01"}}
	tests := []struct {
		name    string
		verdict string
		abort   *Abort
		ths     []ThresholdResult
		class   string
		want    string // the banner's text after the title
	}{
		{name: "signal", verdict: VerdictAborted, abort: &Abort{Cause: AbortSignal, Name: "SIGINT"},
			class: "banner aborted", want: "ABORTED t aborted by signal SIGINT"},
		{name: "signal with a failed threshold", verdict: VerdictAborted, abort: &Abort{Cause: AbortSignal, Name: "SIGTERM"}, ths: twoThresholds,
			class: "banner aborted", want: "ABORTED t aborted by signal SIGTERM; 1 of 2 thresholds failed"},
		{name: "not steady", verdict: VerdictAborted,
			abort: &Abort{Cause: AbortNotSteady, Detail: "http GET /health → 200: status 503"},
			class: "banner aborted", want: "ABORTED t aborted by the steady-state check before the faults: http GET /health → 200: status 503"},
		{name: "stop condition", verdict: VerdictAborted,
			abort: &Abort{Cause: AbortStopCondition, Name: "stop_conditions[0]", Detail: "error_rate: rate<0.5 (observed 0.81)"},
			class: "banner aborted", want: "ABORTED t aborted by stop condition stop_conditions[0]: error_rate: rate<0.5 (observed 0.81)"},
		{name: "error", verdict: VerdictAborted, abort: &Abort{Cause: AbortError, Detail: "journal: disk full"},
			class: "banner aborted", want: "ABORTED t aborted by an error: journal: disk full"},
		{name: "interrupted", verdict: VerdictAborted, abort: &Abort{Cause: AbortInterrupted, Detail: "context canceled"},
			class: "banner aborted", want: "ABORTED t aborted by an interruption: context canceled"},
		{name: "report without a cause", verdict: VerdictAborted,
			class: "banner aborted", want: "ABORTED t aborted by a stop condition"},
		{name: "no thresholds", verdict: VerdictNone,
			class: "banner unknown", want: "NO VERDICT t no thresholds were given"},
		{name: "none recorded", verdict: "",
			class: "banner unknown", want: "NO VERDICT t none was recorded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &Document{SchemaVersion: 1, Name: "t", Verdict: tt.verdict, Abort: tt.abort, Thresholds: tt.ths}
			_, root := renderHTML(t, d)
			banner := byID(root, "verdict")
			if got := attr(banner, "class"); got != tt.class {
				t.Errorf("banner class = %q, want %q", got, tt.class)
			}
			if got := textOf(banner); !strings.HasPrefix(got, tt.want+" duration") {
				t.Errorf("banner reads %q, want it to start %q", got, tt.want)
			}
		})
	}
}

// TestHTMLRecoveryFields: the recovery table shows what the terminal's
// does: time_to_recover from the revert, "instant" for an instantaneous
// fault, the criterion that held last, and "insufficient traffic" for a
// recovery that could not be judged (which is not a failed row, and not
// "never" on the card).
func TestHTMLRecoveryFields(t *testing.T) {
	d := &Document{SchemaVersion: 1, Verdict: VerdictNone, DurationS: 60, Recovery: []RecoveryRecord{
		{Fault: "kill", Recovered: true, Instantaneous: true, RecoveryTimeS: Seconds(7200 * time.Millisecond), HeldLast: "e2e p99"},
		{Fault: "slow-net", Recovered: true, RecoveryTimeS: Seconds(18488 * time.Millisecond), TimeToRecoverS: Seconds(3484 * time.Millisecond), HeldLast: "ttft p99"},
		{Fault: "quiet", InsufficientTraffic: true},
	}}
	page, root := renderHTML(t, d)
	rec := byID(root, "recovery")
	want := [][]string{
		{"kill", "yes", "7.20s", "instant", "e2e p99"},
		{"slow-net", "yes", "18.49s", "3.48s", "ttft p99"},
		{"quiet", "insufficient traffic", "-", "-", "-"},
	}
	if got := rowsOf(rec); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("recovery rows = %q, want %q", got, want)
	}
	var heads []string
	walk(rec, func(n *html.Node) {
		if n.DataAtom == atom.Th {
			heads = append(heads, textOf(n))
		}
	})
	if wantHeads := []string{"fault", "recovered", "recovery time", "from revert", "held last"}; !slices.Equal(heads, wantHeads) {
		t.Errorf("recovery headers = %q, want %q (no after OOM column without an OOM)", heads, wantHeads)
	}
	if strings.Contains(page, `class="failed"`) {
		t.Errorf("a row is marked failed; insufficient traffic is not a failed recovery")
	}
	var cardText string
	walk(byID(root, "summary"), func(n *html.Node) {
		if attr(n, "class") == "card bad" {
			cardText = textOf(n)
		}
	})
	if want := "Slowest recovery 18.49s 2 of 3 faults recovered · 1 insufficient traffic"; cardText != want {
		t.Errorf("recovery card reads %q, want %q", cardText, want)
	}
}

func TestWriteHTMLFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "report.html")
	if err := WriteHTMLFile(path, sampleExperiment(t)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("<!DOCTYPE html>")) || !bytes.HasSuffix(b, []byte("</html>\n")) {
		t.Errorf("file is not a whole page: %d bytes", len(b))
	}
	if err := WriteHTMLFile(filepath.Join(t.TempDir(), "no", "such", "dir.html"), sampleExperiment(t)); err == nil {
		t.Error("writing into a missing directory succeeded")
	}
}

// TestTimePlotData checks the numbers behind the lines against the
// document's rows.
func TestTimePlotData(t *testing.T) {
	d := sampleExperiment(t)
	plots := map[string]*timePlot{}
	for _, p := range timePlots(d) {
		plots[p.ID] = p
	}
	ttft := plots["plot-ttft"]
	if ttft.Lines[0].Label != "p99" || len(ttft.Lines[0].pts) != len(d.Timeseries) {
		t.Fatalf("ttft lines = %+v", ttft.Lines)
	}
	for i, r := range d.Timeseries {
		got := ttft.Lines[0].pts[i]
		if got.x != float64(r.T)+0.5 || (r.TTFTP99Ms == nil) != math.IsNaN(got.y) || (r.TTFTP99Ms != nil && got.y != *r.TTFTP99Ms) {
			t.Errorf("ttft p99 point %d = %+v, row %d has %v", i, got, r.T, deref(r.TTFTP99Ms))
		}
	}
	// Error rate by class: connect errors of second 44 over its finished
	// requests, in percent.
	errs := plots["plot-errors"]
	var labels []string
	for _, l := range errs.Lines {
		labels = append(labels, l.Label)
	}
	if want := []string{"connect", "reset", "http_429", "all"}; !slices.Equal(labels, want) {
		t.Errorf("error lines = %q, want %q", labels, want)
	}
	r := d.Timeseries[44]
	want := 100 * float64(r.ErrorsByClass["connect"]) / float64(r.OK+r.Failed+r.Cancelled)
	if got := errs.Lines[0].pts[44].y; got != want || want == 0 {
		t.Errorf("connect share at 44 s = %v, want %v", got, want)
	}
	if got := plots["plot-throughput"].Lines[0].pts[10].y; got != float64(d.Timeseries[10].OK) {
		t.Errorf("ok/s at 10 s = %v, want %d", got, d.Timeseries[10].OK)
	}
	kv := plots["plot-server-kv"]
	if kv.Unit != "%" || len(kv.Lines) != 2 || kv.Lines[0].pts[0].y != d.Server[0].Points[0][1]*100 {
		t.Errorf("kv plot = %+v", kv)
	}
	// The dead replica's line breaks while it had no samples.
	var gaps int
	for _, p := range kv.Lines[1].pts {
		if math.IsNaN(p.y) {
			gaps++
		}
	}
	if gaps != 1 {
		t.Errorf("replica 2's kv line has %d breaks, want 1", gaps)
	}
	if g := plots["plot-gpu-gpu-memory-used-bytes-0"]; g == nil || g.Unit != "GiB" || g.Title != "GPU memory used" ||
		math.Abs(g.Lines[0].pts[0].y-d.GPU[0].Points[0][1]/(1<<30)) > 1e-9 {
		t.Errorf("gpu plot = %+v", g)
	}
}

func TestRatePointsPartialSecond(t *testing.T) {
	d := &Document{DurationS: 3.25, Timeseries: []SecondRow{
		{T: 0, Counts: Counts{OK: 10}}, {T: 1, Counts: Counts{OK: 12}}, {T: 2, Counts: Counts{OK: 8}}, {T: 3, Counts: Counts{OK: 3}},
	}}
	got := ratePoints(d, func(r *SecondRow) float64 { return float64(r.OK) })
	want := []point{{0.5, 10}, {1.5, 12}, {2.5, 8}} // 0.25 s left over: too little to plot
	if !slices.Equal(got, want) {
		t.Errorf("rate points = %v, want %v", got, want)
	}
	d.DurationS = 3.5
	if got := ratePoints(d, func(r *SecondRow) float64 { return float64(r.OK) }); got[3] != (point{3.5, 6}) {
		t.Errorf("half a last second = %v, want 3 requests as 6/s", got[3])
	}
}

func TestSampledPointsGaps(t *testing.T) {
	tests := []struct {
		name string
		in   [][2]float64
		want []float64 // y, NaN for a break
	}{
		{"regular", [][2]float64{{0, 1}, {2, 2}, {4, 3}}, []float64{1, 2, 3}},
		{"one missing scrape is bridged", [][2]float64{{0, 1}, {2, 2}, {6, 3}, {8, 4}}, []float64{1, 2, 3, 4}},
		{"a replica down breaks the line", [][2]float64{{0, 1}, {2, 2}, {4, 3}, {14, 4}, {16, 5}}, []float64{1, 2, 3, math.NaN(), 4, 5}},
		{"jitter is no gap", [][2]float64{{0, 1}, {2.1, 2}, {3.9, 3}, {6.4, 4}}, []float64{1, 2, 3, 4}},
		{"one point", [][2]float64{{5, 7}}, []float64{7}},
		{"none", nil, nil},
	}
	for _, tt := range tests {
		got := sampledPoints(tt.in, 1)
		var ys []float64
		for _, p := range got {
			ys = append(ys, p.y)
		}
		if !slices.EqualFunc(ys, tt.want, func(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }) {
			t.Errorf("%s: y = %v, want %v", tt.name, ys, tt.want)
		}
	}
}

func TestNiceTicks(t *testing.T) {
	tests := []struct {
		lo, hi float64
		n      int
		want   []string
	}{
		{0, 844, 4, []string{"0", "250", "500", "750"}},
		{0, 60, 6, []string{"0", "10", "20", "30", "40", "50", "60"}},
		{0, 1.15, 4, []string{"0.0", "0.5", "1.0"}},
		{0, 86, 4, []string{"0", "25", "50", "75"}},
		{0, 0.069, 4, []string{"0.00", "0.02", "0.04", "0.06"}},
		{0, 52000, 4, []string{"0", "20k", "40k"}},
	}
	for _, tt := range tests {
		var got []string
		for _, tk := range (niceTicks{n: tt.n}).ticks(tt.lo, tt.hi) {
			got = append(got, tk.label)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("ticks(%v, %v, %d) = %q, want %q", tt.lo, tt.hi, tt.n, got, tt.want)
		}
	}
	for _, tk := range (niceTicks{n: 4}).ticks(-1, 1) {
		if tk.label == "-0" || tk.label == "-0.0" {
			t.Errorf("tick label %q", tk.label)
		}
	}
}

func TestDecimate(t *testing.T) {
	var pts []point
	for i := range 10000 {
		y := float64(i % 10)
		switch {
		case i == 4321:
			y = 500 // a one-second spike
		case i >= 6000 && i < 6100:
			y = math.NaN() // a gap
		}
		pts = append(pts, point{float64(i), y})
	}
	got := decimate(pts, 500)
	if len(got) > 1000 {
		t.Errorf("decimated to %d points, want ≤ 1000", len(got))
	}
	var spike, gap bool
	for i, p := range got {
		spike = spike || (p.y == 500 && p.x == 4321)
		gap = gap || math.IsNaN(p.y)
		if i > 0 && p.x <= got[i-1].x {
			t.Fatalf("points out of order at %d: %v after %v", i, p, got[i-1])
		}
	}
	if !spike || !gap {
		t.Errorf("spike kept %v, gap kept %v; want both", spike, gap)
	}
	if short := pts[:800]; len(decimate(short, 500)) != 800 {
		t.Errorf("a short line was thinned")
	}
}

// TestMonitorPlotsScrapeNames: the server monitor's own sample names (no
// vllm: prefix) land in the KV and queue plots; a counter is plotted as a
// rate, a restart breaking it; other series get a plot each.
func TestMonitorPlotsScrapeNames(t *testing.T) {
	ep := "http://127.0.0.1:8001/v1"
	series := []SeriesRecord{
		{Endpoint: ep, Name: "kv_cache_usage_perc", Points: [][2]float64{{0, 0.25}, {2, 0.5}}},
		{Endpoint: ep, Name: "num_requests_running", Points: [][2]float64{{0, 3}, {2, 4}}},
		{Endpoint: ep, Name: "num_requests_waiting", Points: [][2]float64{{0, 0}, {2, 1}}},
		{Endpoint: ep, Name: "num_preemptions_total", Points: [][2]float64{{0, 10}, {2, 14}, {4, 20}, {6, 1}, {8, 3}}},
		{Endpoint: ep, Name: "up", Points: [][2]float64{{0, 1}, {2, 0}}},
	}
	plots := monitorPlots("server", series)
	var got []string
	for _, p := range plots {
		got = append(got, p.ID+"|"+p.Title+"|"+p.Unit)
	}
	want := []string{
		"plot-server-kv|Server KV cache usage|%",
		"plot-server-queue|Server requests running and waiting|",
		"plot-server-num-preemptions-total-2|Server num preemptions per second|per second",
		"plot-server-up-3|Server up|",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("plots = %q, want %q", got, want)
	}
	if y := plots[0].Lines[0].pts[1].y; y != 50 {
		t.Errorf("kv 0.5 plotted as %v, want 50 (%%)", y)
	}
	if l := plots[1].Lines; len(l) != 2 || l[0].Label != "running 127.0.0.1:8001" || l[1].Label != "waiting 127.0.0.1:8001" || !l[1].Dashed {
		t.Errorf("queue lines = %+v", l)
	}
	var rates []float64
	for _, p := range plots[2].Lines[0].pts {
		rates = append(rates, p.y)
	}
	if want := []float64{2, 3, math.NaN(), 1}; !slices.EqualFunc(rates, want, func(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }) {
		t.Errorf("preemption rates = %v, want %v", rates, want)
	}
}

// TestHTMLGameDayMarks: a game day's notes and actions are drawn on the
// plots as dashed lines labelled at the bottom (notes numbered as in the
// events table), and the events say who did them.
func TestHTMLGameDayMarks(t *testing.T) {
	d := sampleExperiment(t)
	d.Events = append(d.Events,
		EventRecord{AtS: 12, Source: EventSourceGameDay, Kind: "note", Detail: "p99 doubled", By: "alice"},
		EventRecord{AtS: 14, Source: EventSourceGameDay, Kind: "load", Detail: "rate 20 req/s", By: "bob"})
	var b strings.Builder
	if err := WriteHTML(&b, d); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{">N1<", ">load<", "note N1", "— by alice", `stroke-dasharray="3,2"`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}
