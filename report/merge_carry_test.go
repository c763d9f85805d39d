package report

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/xk6-llm/metrics"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// shard is one load generator's run for TestMergeCarries.
type shard struct {
	dur     time.Duration
	ok      int                  // ok requests, sent on schedule
	lagged  int                  // ok requests sent 2 s behind the schedule
	errs    []string             // one failed request (HTTP 503) per message
	samples map[string][]float64 // custom metric → samples, in order
}

// run records the shard through the real recorder, with its own metric
// table (as a separate process would), builds it and reads it back.
func (s shard) run(t *testing.T) *Document {
	t.Helper()
	reg := metrics.NewRegistry()
	for name, kind := range map[string]metrics.Kind{
		"tool_latency": metrics.Trend, "answer_ok": metrics.Rate, "tool_calls": metrics.Counter, "queue_depth": metrics.Gauge,
	} {
		unit := ""
		if kind == metrics.Trend {
			unit = metrics.UnitMillis
		}
		if _, err := reg.Register(name, kind, unit); err != nil {
			t.Fatal(err)
		}
	}
	rec := recording.NewRecorder(recording.Options{Metrics: reg})
	seq := uint64(0)
	record := func(res *recording.Result) {
		res.Seq = seq
		seq++
		rec.RequestStarted(res.Sent)
		rec.Record(res)
		rec.RequestEnded(res.End)
	}
	for i := range s.ok + s.lagged {
		at := time.Duration(i) * time.Millisecond
		res := &recording.Result{Scheduled: at, Sent: at, FirstToken: at + time.Millisecond, End: at + 2*time.Millisecond,
			Outcome: recording.OutcomeOK, HTTPStatus: 200, OutputTokens: 1, ContentChunks: 1, OutputChars: 4, FinishReason: "stop"}
		if i >= s.ok {
			res.Sent += 2 * time.Second
			res.FirstToken += 2 * time.Second
			res.End += 2 * time.Second
		}
		record(res)
	}
	for _, msg := range s.errs {
		record(&recording.Result{Outcome: recording.OutcomeFailed, Class: recording.ClassHTTP5xx, HTTPStatus: 503, Err: msg, End: time.Millisecond})
	}
	for _, name := range []string{"tool_latency", "answer_ok", "tool_calls", "queue_depth"} {
		for _, v := range s.samples[name] {
			if err := rec.AddSample(name, recording.Tags{}, v); err != nil {
				t.Fatal(err)
			}
		}
	}
	d, err := Build(Meta{ToolVersion: "test", StartedAt: startedAt}, rec.Finish(s.dur))
	if err != nil {
		t.Fatal(err)
	}
	return saveAndRead(t, d)
}

// TestMergeCarries checks what Merge keeps of the runs beyond their
// histograms and counters: custom metrics (trends merged, rates and
// counters summed, a gauge the value of the run that ended last), the
// abort cause, the most frequent error message per class and a shard's
// client saturation.
func TestMergeCarries(t *testing.T) {
	// a lasts 10 s, b 5 s: a ends last, though it is the first argument.
	a := shard{dur: 10 * time.Second, ok: 300, errs: []string{"boom", "boom", "boom"}, samples: map[string][]float64{
		"tool_latency": {10, 20, 30}, "answer_ok": {1, 0, 1}, "tool_calls": {2, 3}, "queue_depth": {5, 7},
	}}.run(t)
	b := shard{dur: 5 * time.Second, lagged: 2, errs: []string{"boom", "boom", "other"}, samples: map[string][]float64{
		"tool_latency": {40}, "answer_ok": {1}, "tool_calls": {10}, "queue_depth": {9, 1},
	}}.run(t)
	a.SetAbort(&Abort{Cause: AbortSignal, Name: "SIGINT"})
	if !b.ClientSaturated || a.ClientSaturated {
		t.Fatalf("client_saturated a %v, b %v: want only b (2 s send lag)", a.ClientSaturated, b.ClientSaturated)
	}
	th, err := assertions.ParseIn(a.Summary().Metrics, "tool_latency: max<50")
	if err != nil {
		t.Fatal(err)
	}
	a.Evaluate(th, true)
	a.SetAbort(&Abort{Cause: AbortSignal, Name: "SIGINT"})

	m, err := Merge(a, b)
	if err != nil {
		t.Fatal(err)
	}
	m = saveAndRead(t, m)

	got := map[string]CustomMetric{}
	for _, c := range m.CustomMetrics {
		got[c.Name] = c
	}
	if c := got["tool_latency"]; c.Count != 4 || c.Stats == nil || math.Abs(c.Stats.Max-40) > 0.05 || c.Stats.Min != 10 { // HDR: 3 digits
		t.Errorf("tool_latency = %+v %+v, want 4 samples from 10 to 40 ms", c, c.Stats)
	}
	if c := got["answer_ok"]; c.Count != 4 || c.Passes != 3 || c.Rate == nil || *c.Rate != 0.75 {
		t.Errorf("answer_ok = %+v, want 3 of 4", c)
	}
	if c := got["tool_calls"]; c.Sum == nil || *c.Sum != 15 {
		t.Errorf("tool_calls = %+v, want the sum 15", c)
	}
	if c := got["queue_depth"]; c.Value == nil || *c.Value != 7 || c.Count != 4 {
		t.Errorf("queue_depth = %+v, want 7, the last value of the run that ended last", c)
	}
	if len(m.Thresholds) != 1 || !m.Thresholds[0].OK || m.Thresholds[0].Value == nil || math.Abs(*m.Thresholds[0].Value-40) > 0.05 {
		t.Errorf("thresholds = %+v, want tool_latency max 40 < 50 re-evaluated on the merged run", m.Thresholds)
	}

	if m.Verdict != VerdictAborted || m.Abort == nil || *m.Abort != (Abort{Cause: AbortSignal, Name: "SIGINT"}) {
		t.Errorf("verdict %q abort %+v, want aborted by SIGINT", m.Verdict, m.Abort)
	}
	if e := m.Requests.TopErrors["http_5xx"]; e != (TopError{Message: "boom", Count: 5}) {
		t.Errorf("top_errors = %+v, want boom 5 (3 + 2)", m.Requests.TopErrors)
	}
	if !m.ClientSaturated || !strings.HasPrefix(m.ClientSaturatedReason, "run 2: send lag p50") {
		t.Errorf("client_saturated %v %q, want run 2's send lag", m.ClientSaturated, m.ClientSaturatedReason)
	}
}
