package report_test

import (
	"bytes"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/telemetry"
	"github.com/llmchaos/llmchaos/xk6-llm/metrics"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// TestCustomMetricsFlowEverywhere registers a custom trend and a custom
// rate, records samples, and checks that thresholds on them pass and fail
// as they should and that both show in run.json (also after reading it
// back), JUnit, the terminal and HTML reports and the Prometheus exporter,
// with no code there naming them.
func TestCustomMetricsFlowEverywhere(t *testing.T) {
	reg := metrics.NewRegistry()
	if _, err := reg.Register("tool_latency", metrics.Trend, "ms"); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Register("answer_ok", metrics.Rate, ""); err != nil {
		t.Fatal(err)
	}
	exp, err := telemetry.New(telemetry.Options{Metrics: reg})
	if err != nil {
		t.Fatal(err)
	}
	rec := recording.NewRecorder(recording.Options{Metrics: reg})
	tags := recording.Tags{Phase: "baseline"}
	add := func(name string, v float64) {
		t.Helper()
		if err := rec.AddSample(name, tags, v); err != nil {
			t.Fatal(err)
		}
		if err := exp.AddSample(name, tags, v); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 100 {
		add("tool_latency", float64(10+i)) // 10 … 109 ms
		add("answer_ok", float64(i%4))     // 75 % pass
	}
	if err := rec.AddSample("ttft", tags, 1); err == nil {
		t.Error("AddSample on a built-in: got no error")
	}
	if err := rec.AddSample("nope", tags, 1); err == nil {
		t.Error("AddSample on an unregistered metric: got no error")
	}
	sum := rec.Finish(10 * time.Second)

	ths, err := assertions.ParseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"tool_latency: p(99)<200ms", "tool_latency{phase:baseline}: max<50ms",
		"answer_ok: rate>0.7", "answer_ok: rate>0.9",
	} {
		th, err := assertions.ParseIn(reg, s)
		if err != nil {
			t.Fatalf("ParseIn(%q): %v", s, err)
		}
		ths = append(ths, th...)
	}
	if _, err := assertions.Parse("tool_latency: p(99)<200ms"); err == nil {
		t.Error("Parse without the registry: got no error for a custom metric")
	}
	doc, err := report.Build(report.Meta{Name: "custom"}, sum)
	if err != nil {
		t.Fatal(err)
	}
	outs := doc.Evaluate(ths, false)
	for i, want := range []bool{true, false, true, false} {
		if got := outs[i].OK; got != want || outs[i].NoData {
			t.Errorf("%s: ok = %v (no data %v, value %v), want %v", ths[i], got, outs[i].NoData, outs[i].Value, want)
		}
	}

	var js bytes.Buffer
	if err := report.Write(&js, doc); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"custom_metrics"`, `"name": "tool_latency"`, `"name": "answer_ok"`, `"rate": 0.75`} {
		if !strings.Contains(js.String(), want) {
			t.Errorf("run.json lacks %s", want)
		}
	}
	back, err := report.Decode(bytes.NewReader(js.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	saved, err := back.SavedThresholds()
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range back.Evaluate(saved, false) {
		if o.OK != outs[i].OK || o.Value != outs[i].Value {
			t.Errorf("re-evaluated %s: got ok %v value %v, want %v %v", saved[i], o.OK, o.Value, outs[i].OK, outs[i].Value)
		}
	}

	writers := map[string]func(io.Writer, *report.Document) error{
		"junit": report.WriteJUnit, "terminal": report.WriteText, "html": report.WriteHTML,
	}
	for name, write := range writers {
		var b bytes.Buffer
		if err := write(&b, doc); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, want := range []string{"tool_latency", "answer_ok"} {
			if !strings.Contains(b.String(), want) {
				t.Errorf("%s report lacks %s", name, want)
			}
		}
	}

	srv := httptest.NewServer(exp.Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, want := range []string{"llmchaos_tool_latency_seconds_count", "llmchaos_answer_ok_total{class=\"\",endpoint=\"\",fault=\"\",ok=\"true\",phase=\"baseline\"} 75"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("exporter output lacks %s", want)
		}
	}
}
