package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

var startedAt = time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)

// testRun records a small deterministic run: two phases, two classes,
// failures of several classes, a cancellation and a drop, over 4 s.
func testRun(t *testing.T) *recording.Summary {
	t.Helper()
	r := recording.NewRecorder(recording.Options{SLO: recording.SLO{TTFT: 200 * time.Millisecond, TPOT: 70 * time.Millisecond}})
	ep := "http://user:hunter2@127.0.0.1:8000/v1"
	tags := []recording.Tags{
		{Phase: "baseline", Class: "chat", Endpoint: ep},
		{Phase: "fault", Fault: "kill", Class: "chat", Endpoint: ep},
		{Phase: "fault", Fault: "kill", Class: "batch", Endpoint: ep},
	}
	for i := range 24 {
		sent := time.Duration(i)*150*time.Millisecond + time.Millisecond
		tg := tags[i%3]
		r.RequestStarted(sent)
		res := &recording.Result{
			Seq: uint64(i), Tags: tg, Scheduled: sent - time.Duration(i)*time.Microsecond, Dequeued: sent, Sent: sent,
			FirstToken: sent + time.Duration(100+10*i)*time.Millisecond,
			End:        sent + time.Duration(300+10*i)*time.Millisecond,
			ITLMicros:  []uint32{uint32(20_000 + 100*i), uint32(25_000 + 50*i), 30_000},
			Outcome:    recording.OutcomeOK, HTTPStatus: 200, InputTokens: 100 + i, OutputTokens: 4, ContentChunks: 4,
			UsageReported: true, FinishReason: "stop", OutputChars: 16, NgramsTotal: 3, NgramsRepeated: i % 2,
		}
		switch i {
		case 5:
			res.FinishReason = "length"
		case 7:
			res.Outcome, res.Class, res.HTTPStatus, res.FirstToken, res.ITLMicros = recording.OutcomeFailed, recording.ClassHTTP429, 429, 0, nil
		case 11:
			res.Outcome, res.Class, res.HTTPStatus, res.FirstToken, res.ITLMicros = recording.OutcomeFailed, recording.ClassHTTP4xx, 413, 0, nil
		case 13:
			res.Outcome, res.Class = recording.OutcomeFailed, recording.ClassReset
		case 17:
			res.Outcome, res.Class = recording.OutcomeCancelled, recording.ClassCancelled
		case 19:
			res.ContentChunks = 8 // usage mismatch: 4 more than usage, beyond max(2, 5 %)
		}
		r.RequestEnded(res.End)
		r.Record(res)
	}
	r.Record(&recording.Result{Seq: 24, Tags: tags[1], Scheduled: 3 * time.Second, Outcome: recording.OutcomeDropped})
	return r.Finish(4 * time.Second)
}

func testMeta() Meta {
	return Meta{
		ToolVersion: "v0.1.0-test",
		StartedAt:   startedAt,
		Seed:        42,
		Config: map[string]any{
			"target": "http://127.0.0.1:8000/v1", "model": "m", "rate": 20, "max_tokens": 4,
			"api_key_env": "OPENAI_API_KEY", "api_key": "sk-abcdefghijklmnopqrstuvwx",
			"headers": []string{"Authorization: Bearer abc", "X-Trace: 1"},
		},
	}
}

func marshal(t *testing.T, d *Document) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, d); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestBuildNumbers(t *testing.T) {
	d, err := Build(testMeta(), testRun(t))
	if err != nil {
		t.Fatal(err)
	}
	wantReq := Requests{Scheduled: 25, Sent: 24, OK: 20, Failed: 3, Cancelled: 1, Dropped: 1, Lost: 0,
		ErrorsByClass: map[string]int64{"http_429": 1, "http_4xx": 1, "reset": 1, "cancelled": 1}}
	if !reflect.DeepEqual(d.Requests, wantReq) {
		t.Errorf("requests = %+v, want %+v", d.Requests, wantReq)
	}
	if d.Requests.Lost != 0 || d.Requests.Sent != d.Requests.OK+d.Requests.Failed+d.Requests.Cancelled {
		t.Errorf("lost = %d: sent %d != ok+failed+cancelled", d.Requests.Lost, d.Requests.Sent)
	}
	// 20 ok requests, 4 output tokens each (usage), input 100+i, over 4 s.
	inSum := 0
	for i := range 24 {
		if !slices.Contains([]int{7, 11, 13, 17}, i) {
			inSum += 100 + i
		}
	}
	wantTP := Throughput{RequestsPerS: 5, InputTokensPerS: float64(inSum) / 4, OutputTokensPerS: 20,
		TotalTokensPerS: float64(inSum)/4 + 20}
	if d.Throughput != wantTP {
		t.Errorf("throughput = %+v, want %+v", d.Throughput, wantTP)
	}
	q := d.Quality
	if q.ErrorRate != 3.0/24 || q.ThrottleRate != 1.0/24 || q.RejectionRate != 1.0/24 || q.TruncationRate != 1.0/24 ||
		q.UsageMismatchRate != 1.0/24 || q.RepetitionRate != 12.0/72 || q.EmptyOutputRate != 0 {
		t.Errorf("quality = %+v", q)
	}
	// Good: ok with ttft = 100+10i ms ≤ 200 ms (i ≤ 10, less the failed 7);
	// every tpot is 200 ms / 3 ≤ 70 ms. 10 good requests in 4 s.
	if q.GoodputPerS == nil || *q.GoodputPerS != 2.5 {
		t.Errorf("goodput = %v, want 2.5/s", q.GoodputPerS)
	}
	if d.SLO == nil || d.SLO.TTFTMs != 200 || d.SLO.TPOTMs != 70 || d.SLO.E2EMs != 0 {
		t.Errorf("slo = %+v", d.SLO)
	}
	// ttft of requests that got a first token: 22 values, 100+10i ms for i ∉ {7, 11}.
	if m := d.Metrics["ttft_ms"]; m.Count != 22 || m.Min < 99.9 || m.Min > 100.1 || m.Max < 329.8 || m.Max > 330.4 {
		t.Errorf("ttft_ms = %+v, want 22 values from 100 to 330 ms", m)
	}
	if m := d.Metrics["itl_ms"]; m.Count != 66 {
		t.Errorf("itl count = %d, want 66", m.Count)
	}
	if m := d.Metrics["output_tokens"]; m.Count != 20 || m.P50 != 4 || m.Mean != 4 {
		t.Errorf("output_tokens = %+v, want 20 × 4", m)
	}
	if m := d.Metrics["send_lag_ms"]; m.Count != 24 || m.Max < 0.0229 || m.Max > 0.0231 {
		t.Errorf("send_lag_ms = %+v, want 24 values up to 0.023 ms", m)
	}
	if d.Concurrency.Max < 1 || d.Concurrency.Mean <= 0 {
		t.Errorf("concurrency = %+v", d.Concurrency)
	}
	if len(d.Timeseries) != 4 {
		t.Fatalf("timeseries rows = %d, want 4", len(d.Timeseries))
	}
	var okSum int64
	for _, row := range d.Timeseries {
		okSum += row.OK
	}
	if okSum != 20 {
		t.Errorf("timeseries ok total = %d, want 20", okSum)
	}
	if len(d.Histograms.ByTags) != 3 {
		t.Errorf("tag sets = %d, want 3", len(d.Histograms.ByTags))
	}
	for _, ts := range d.Histograms.ByTags {
		if strings.Contains(ts.Tags["endpoint"], "hunter2") {
			t.Errorf("endpoint tag keeps its password: %q", ts.Tags["endpoint"])
		}
	}
	js := string(marshal(t, d))
	for _, secret := range []string{"hunter2", "sk-abcdef", "Bearer abc"} {
		if strings.Contains(js, secret) {
			t.Errorf("report contains secret %q", secret)
		}
	}
}

func TestReportRoundTrip(t *testing.T) {
	sum := testRun(t)
	d, err := Build(testMeta(), sum)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "run.json")
	if err := WriteFile(path, d); err != nil {
		t.Fatal(err)
	}
	back, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	// The document reads back field for field.
	if got, want := marshal(t, back), marshal(t, d); !bytes.Equal(got, want) {
		t.Errorf("read document differs from the written one:\n%s", diffLine(got, want))
	}
	// The rebuilt run gives the same numbers: rebuilding the report from it
	// reproduces every figure, histogram and time-series row.
	again, err := Build(testMeta(), back.Summary())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := marshal(t, again), marshal(t, d); !bytes.Equal(got, want) {
		t.Errorf("report rebuilt from the loaded run differs:\n%s", diffLine(got, want))
	}
	// Queries on the loaded run match queries on the original.
	f := recording.TagFilter{Phase: "fault"}
	for m := range recording.NumMetrics {
		if got, want := back.Summary().Distribution(m, f), sum.Distribution(m, f); got != want {
			t.Errorf("%s{phase:fault} = %+v, want %+v", m, got, want)
		}
	}
	if got, want := back.Summary().Counts(f), sum.Counts(f); got != want {
		t.Errorf("counts{phase:fault} = %+v, want %+v", got, want)
	}
	wb, wo := back.Summary().Window(time.Second, 3*time.Second), sum.Window(time.Second, 3*time.Second)
	if wb.Counts != wo.Counts || wb.InFlightMax != wo.InFlightMax || wb.InFlightMean != wo.InFlightMean {
		t.Errorf("window [1s,3s) = %+v, want %+v", wb.Counts, wo.Counts)
	}
	for _, m := range []recording.Metric{recording.MetricTTFT, recording.MetricE2E, recording.MetricITL, recording.MetricTPOT} {
		got, _ := wb.Percentile(m, 99)
		want, _ := wo.Percentile(m, 99)
		if got != want || wb.Histogram(m).Count() != wo.Histogram(m).Count() {
			t.Errorf("window %s p99 = %v, want %v", m, got, want)
		}
	}
	// Histograms of two runs add up.
	merged := back.Summary().Histogram(recording.MetricTTFT, recording.TagFilter{})
	merged.Merge(sum.Histogram(recording.MetricTTFT, recording.TagFilter{}))
	if merged.TotalCount() != 44 {
		t.Errorf("merged ttft count = %d, want 44", merged.TotalCount())
	}
}

func diffLine(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			return "line " + itoa(i+1) + ":\n got  " + g[i] + "\n want " + w[i]
		}
	}
	return "lengths differ"
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestGolden(t *testing.T) {
	d, err := Build(testMeta(), testRun(t))
	if err != nil {
		t.Fatal(err)
	}
	got := marshal(t, d)
	path := filepath.Join("testdata", "run.golden.json")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("report differs from %s (run with -update if the change is intended):\n%s", path, diffLine(got, want))
	}
}

func TestSchemaFields(t *testing.T) {
	d, err := Build(testMeta(), testRun(t))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(marshal(t, d), &m); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"":            {"schema_version", "tool_version", "started_at", "duration_s", "seed", "config", "verdict", "thresholds", "requests", "metrics", "throughput", "quality", "concurrency", "timeseries", "histograms"},
		"requests":    {"scheduled", "sent", "ok", "failed", "cancelled", "dropped", "lost", "errors_by_class"},
		"metrics":     {"ttft_ms", "itl_ms", "tpot_ms", "e2e_ms", "send_lag_ms", "client_queue_ms", "input_tokens", "output_tokens"},
		"throughput":  {"requests_per_s", "input_tokens_per_s", "output_tokens_per_s", "total_tokens_per_s"},
		"quality":     {"truncation_rate", "rejection_rate", "throttle_rate", "repetition_rate", "empty_output_rate", "usage_mismatch_rate", "integrity_error_rate", "goodput_per_s"},
		"concurrency": {"max", "mean"},
		"histograms":  {"overall", "by_tags"},
	}
	for section, keys := range want {
		obj := m
		if section != "" {
			obj = m[section].(map[string]any)
		}
		for _, k := range keys {
			if _, ok := obj[k]; !ok {
				t.Errorf("%s.%s missing", section, k)
			}
		}
	}
	ttft := m["metrics"].(map[string]any)["ttft_ms"].(map[string]any)
	for _, k := range []string{"count", "mean", "stddev", "min", "p50", "p90", "p95", "p99", "p999", "max"} {
		if _, ok := ttft[k]; !ok {
			t.Errorf("metrics.ttft_ms.%s missing", k)
		}
	}
	if th, ok := m["thresholds"].([]any); !ok || len(th) != 0 || m["verdict"] != "none" {
		t.Errorf("thresholds = %#v, verdict = %#v: want [] and none for a run built without thresholds", m["thresholds"], m["verdict"])
	}
	if m["schema_version"] != 1.0 || m["started_at"] != "2026-03-14T15:09:26Z" || m["seed"] != 42.0 || m["duration_s"] != 4.0 {
		t.Errorf("header = %v %v %v %v", m["schema_version"], m["started_at"], m["seed"], m["duration_s"])
	}
}

func TestDecodeRejects(t *testing.T) {
	d, err := Build(testMeta(), testRun(t))
	if err != nil {
		t.Fatal(err)
	}
	good := marshal(t, d)
	tests := []struct {
		name string
		edit func(m map[string]any)
		want string
	}{
		{"no schema version", func(m map[string]any) { delete(m, "schema_version") }, "schema_version"},
		{"negative duration", func(m map[string]any) { m["duration_s"] = -1 }, "duration_s"},
		{"bad histogram", func(m map[string]any) {
			byTags(m)[0].(map[string]any)["hdr"].(map[string]any)["ttft_us"] = "bm90IGEgaGlzdG9ncmFt"
		}, "ttft_us"},
		{"empty tag key", func(m map[string]any) {
			byTags(m)[0].(map[string]any)["tags"].(map[string]any)[""] = "red"
		}, "empty key"},
		{"repeated tags", func(m map[string]any) {
			bt := byTags(m)
			m["histograms"].(map[string]any)["by_tags"] = append(bt, bt[0])
		}, "repeated"},
		{"bad second", func(m map[string]any) {
			m["timeseries"].([]any)[0].(map[string]any)["hist"] = "CQ=="
		}, "second 0"},
		{"not JSON", nil, "decode report"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := []byte("{not json")
			if tt.edit != nil {
				var m map[string]any
				if err := json.Unmarshal(good, &m); err != nil {
					t.Fatal(err)
				}
				tt.edit(m)
				in, _ = json.Marshal(m)
			}
			_, err := Decode(bytes.NewReader(in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one mentioning %q", err, tt.want)
			}
		})
	}
	// Fields added by later versions are ignored.
	var m map[string]any
	_ = json.Unmarshal(good, &m)
	m["added_later"] = map[string]any{"x": 1}
	m["schema_version"] = 2
	in, _ := json.Marshal(m)
	if _, err := Decode(bytes.NewReader(in)); err != nil {
		t.Errorf("a later schema with added fields: %v", err)
	}
}

func byTags(m map[string]any) []any {
	return m["histograms"].(map[string]any)["by_tags"].([]any)
}

func TestWriteFile(t *testing.T) {
	d, err := Build(testMeta(), testRun(t))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "out.json")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, d); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the report (no temporary file left)", len(entries))
	}
	if _, err := Read(path); err != nil {
		t.Errorf("reading the replaced report: %v", err)
	}
	if err := WriteFile(filepath.Join(dir, "missing", "out.json"), d); err == nil {
		t.Error("writing into a missing directory: want an error")
	}
	if _, err := Read(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("reading a missing file: want an error")
	}
}
