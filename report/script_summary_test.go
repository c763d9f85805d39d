package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/xk6-llm/metrics"
)

// TestScriptSummaryShowsWhatHasSamples: the end-of-test summary of a
// k6-style script that sent no LLM request has none of the LLM sections
// (requests, latency, tokens, errors), as k6's summary shows only metrics
// with samples; a time trend keeps its unit past a second ("1.13s", not a
// bare number); a counter shows its rate per second of the run; byte
// counters (data_sent, data_received) are listed with the others; a metric
// without samples is not shown.
func TestScriptSummaryShowsWhatHasSamples(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	d := &Document{
		DurationS: 4,
		Verdict:   VerdictNone,
		Checks:    []Check{{Name: "is 200", Passes: 3}},
		CustomMetrics: []CustomMetric{
			{Name: "iterations", Kind: "counter", Count: 8, Sum: f(8)},
			{Name: "iteration_duration", Kind: "trend", Unit: metrics.UnitMillis, Count: 8,
				Stats: &Stats{Count: 8, Mean: 1130, P50: 1100, P90: 1500, P95: 1600, P99: 1700, Max: 1750, Min: 900}},
			{Name: "data_sent", Kind: "counter", Unit: metrics.UnitBytes, Count: 8, Sum: f(4000)},
			{Name: "data_received", Kind: "counter", Unit: metrics.UnitBytes, Count: 8, Sum: f(36000)},
			{Name: "group_duration", Kind: "trend", Unit: metrics.UnitMillis},
			{Name: "iterations_failed", Kind: "counter", Sum: f(0)},
		},
	}
	var b bytes.Buffer
	if err := WriteText(&b, d); err != nil {
		t.Fatal(err)
	}
	out := squeeze(b.String())
	for _, want := range []string{
		"iterations 8 sum 8 (2.00/s)",
		"iteration_duration 8 1.13s 1.10s 1.50s 1.70s 1.75s",
		"data_sent 8 sum 4000 (1000.00/s)",
		"data_received 8 sum 36000 (9000.00/s)",
		"✓ is 200",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
	for _, section := range []string{"requests", "latency", "ttft", "tokens", "errors", "goodput", "group_duration", "iterations_failed"} {
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), section) {
				t.Errorf("a script without LLM requests shows the %s section: %q\n%s", section, l, b.String())
			}
		}
	}
	// The same document with one LLM request sent has the sections back.
	d.Requests.Sent, d.Requests.Scheduled = 1, 1
	b.Reset()
	if err := WriteText(&b, d); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "requests") {
		t.Errorf("a script with an LLM request lacks the requests section:\n%s", b.String())
	}
}

// TestScriptChecksAreNamedInEveryReport: a script's checks appear by name
// in the terminal summary (k6's "✓ name", "✗ name" with its "↳ 70% — ✓ 7
// / ✗ 3" tally, under "█ group" headings), in run.json, as JUnit
// properties and as HTML rows, each with the same passes and fails.
func TestScriptChecksAreNamedInEveryReport(t *testing.T) {
	d := &Document{DurationS: 1, Verdict: VerdictNone, Thresholds: []ThresholdResult{}, Checks: []Check{
		{Name: "status 200", Passes: 10},
		{Name: "has text", Passes: 7, Fails: 3},
		{Group: "::login::form", Name: "token", Passes: 5},
	}}
	var text bytes.Buffer
	if err := WriteText(&text, d); err != nil {
		t.Fatal(err)
	}
	want := "\nchecks\n  ✓ status 200\n  ✗ has text\n    ↳ 70% — ✓ 7 / ✗ 3\n  █ login › form\n    ✓ token\n"
	if !strings.Contains(text.String(), want) {
		t.Errorf("terminal summary lacks\n%s\ngot:\n%s", want, text.String())
	}
	var js bytes.Buffer
	if err := Write(&js, d); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`"name": "has text"`, `"passes": 7`, `"fails": 3`, `"group": "::login::form"`} {
		if !strings.Contains(js.String(), w) {
			t.Errorf("run.json lacks %s:\n%s", w, js.String())
		}
	}
	var junitXML bytes.Buffer
	if err := WriteJUnit(&junitXML, d); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`name="check: has text" value="✓ 7 / ✗ 3"`, `name="check: login › form › token" value="✓ 5 / ✗ 0"`} {
		if !strings.Contains(junitXML.String(), w) {
			t.Errorf("JUnit lacks %s:\n%s", w, junitXML.String())
		}
	}
	var page bytes.Buffer
	if err := WriteHTML(&page, d); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"✗ has text", "✓ 7 / ✗ 3", "✓ login › form › token"} {
		if !strings.Contains(page.String(), w) {
			t.Errorf("HTML lacks %q", w)
		}
	}
}
