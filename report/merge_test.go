package report

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// saveAndRead writes d and reads it back, as the CLI's commands do.
func saveAndRead(t *testing.T, d *Document) *Document {
	t.Helper()
	path := filepath.Join(t.TempDir(), "run.json")
	if err := WriteFile(path, d); err != nil {
		t.Fatal(err)
	}
	back, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	return back
}

func TestMergeSums(t *testing.T) {
	a := saveAndRead(t, judgedRun(t, false))
	b := synthRun(t, 3, 1.2, 700, recording.Tags{Phase: "baseline", Class: "chat", Endpoint: "http://user:REDACTED@127.0.0.1:8000/v1"})
	ths, _ := assertions.ParseFlags([]string{"e2e: p(90)<1s", "error_rate: rate<0.01"})
	b.Evaluate(ths, false)
	b = saveAndRead(t, b)

	m, err := Merge(a, b)
	if err != nil {
		t.Fatal(err)
	}
	m = saveAndRead(t, m) // the merged report reads back like any other
	ma, mb, mm := a.Summary(), b.Summary(), m.Summary()

	// Every histogram of every tag selection is the sum of the inputs'.
	filters := []recording.TagFilter{{}, {Phase: "baseline"}, {Phase: "fault"}, {Class: "chat"}, {Class: "batch"}, {Phase: "baseline", Class: "chat"}}
	for _, f := range filters {
		for metric := range recording.NumMetrics {
			want := ma.Histogram(metric, f)
			want.Merge(mb.Histogram(metric, f))
			if got := mm.Histogram(metric, f); !got.Equals(want) {
				t.Errorf("%s%+v: merged histogram (%d values) differs from the sum (%d values)", metric, f, got.TotalCount(), want.TotalCount())
			}
		}
		want := ma.Counts(f)
		want.Add(mb.Counts(f))
		if got := mm.Counts(f); got != want {
			t.Errorf("counts %+v = %+v, want %+v", f, got, want)
		}
	}
	// The testRun tuple of baseline/chat and the synthetic one share tags:
	// they merged into one tuple.
	if got, want := len(m.Histograms.ByTags), 3; got != want {
		t.Errorf("merged tag tuples = %d, want %d", got, want)
	}
	if m.Requests.Sent != a.Requests.Sent+b.Requests.Sent || m.Requests.OK != a.Requests.OK+b.Requests.OK ||
		m.Requests.Lost != 0 || m.Requests.ErrorsByClass["http_5xx"] != b.Requests.ErrorsByClass["http_5xx"] {
		t.Errorf("requests = %+v", m.Requests)
	}
	// Concurrent shards: the longest duration, throughput over it.
	if m.DurationS != max(a.DurationS, b.DurationS) || m.DurationS != 8 {
		t.Errorf("duration = %v, want the longest run's, 8 s", m.DurationS)
	}
	if got, want := m.Throughput.RequestsPerS, float64(a.Requests.OK+b.Requests.OK)/8; got != want {
		t.Errorf("requests/s = %v, want %v", got, want)
	}
	if got, want := m.Concurrency.Mean, (a.Concurrency.Mean*a.DurationS+b.Concurrency.Mean*b.DurationS)/8; diff(got, want) > 1e-9 {
		t.Errorf("in-flight mean = %v, want %v", got, want)
	}
	if m.Concurrency.Max < max(a.Concurrency.Max, b.Concurrency.Max) || m.Concurrency.Max > a.Concurrency.Max+b.Concurrency.Max {
		t.Errorf("in-flight max = %d, want between the larger and the sum of %d and %d", m.Concurrency.Max, a.Concurrency.Max, b.Concurrency.Max)
	}
	// The time series adds up second by second.
	if len(m.Timeseries) != 8 {
		t.Fatalf("merged seconds = %d, want 8", len(m.Timeseries))
	}
	for sec := range 8 {
		from, to := time.Duration(sec)*time.Second, time.Duration(sec+1)*time.Second
		wa, wb, wm := ma.Window(from, to), mb.Window(from, to), mm.Window(from, to)
		want := wa.Counts
		want.Add(wb.Counts)
		if wm.Counts != want {
			t.Errorf("second %d counts = %+v, want %+v", sec, wm.Counts, want)
		}
		for _, metric := range []recording.Metric{recording.MetricTTFT, recording.MetricE2E, recording.MetricITL, recording.MetricTPOT} {
			ha, hb, hm := wa.Histogram(metric), wb.Histogram(metric), wm.Histogram(metric)
			sum := *ha
			sum.Merge(hb)
			if *hm != sum {
				t.Errorf("second %d %s histogram differs from the sum (%d vs %d values)", sec, metric, hm.Count(), sum.Count())
			}
		}
		var ra, rb SecondRow
		if sec < len(a.Timeseries) {
			ra = a.Timeseries[sec]
		}
		if sec < len(b.Timeseries) {
			rb = b.Timeseries[sec]
		}
		if got := m.Timeseries[sec].InFlightMax; got != ra.InFlightMax+rb.InFlightMax {
			t.Errorf("second %d in-flight max = %d, want %d", sec, got, ra.InFlightMax+rb.InFlightMax)
		}
	}
	// The inputs' thresholds, each once, are judged again on the whole load.
	var got []string
	for _, th := range m.Thresholds {
		got = append(got, th.Key()+": "+th.Expr)
	}
	want := []string{"ttft: p(99)<500ms", "ttft: p(50)<200ms", "error_rate: rate<0.01", "requests_lost: count==0", "ttft{phase:recovery}: p(99)<1s", "e2e: p(90)<1s"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("merged thresholds = %q, want %q", got, want)
	}
	if m.Verdict != VerdictFail || len(m.MergedFrom) != 2 || m.MergedFrom[1].Seed != 3 || m.MergedFrom[0].Verdict != VerdictFail {
		t.Errorf("verdict %q merged_from %+v", m.Verdict, m.MergedFrom)
	}
	if e2e := m.Thresholds[5]; e2e.Value == nil || *e2e.Value != m.Metrics["e2e_ms"].P90 {
		t.Errorf("e2e p(90) on the merged run = %v, want the merged report's %v", e2e.Value, m.Metrics["e2e_ms"].P90)
	}
}

func diff(a, b float64) float64 {
	if a > b {
		return a - b
	}
	return b - a
}

func TestMergeRejects(t *testing.T) {
	a := judgedRun(t, false)
	noSLO, err := Build(testMeta(), recording.NewRecorder(recording.Options{}).Finish(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Merge(a, noSLO); err == nil || !strings.Contains(err.Error(), "goodput SLO") {
		t.Errorf("different SLOs: err = %v", err)
	}
	if _, err := Merge(); err == nil {
		t.Error("no runs: want an error")
	}
	if _, err := Merge(a, &Document{}); err == nil || !strings.Contains(err.Error(), "run 2") {
		t.Errorf("a document without data: err = %v", err)
	}
	// One aborted shard makes the whole load aborted.
	m, err := Merge(a, judgedRun(t, true))
	if err != nil {
		t.Fatal(err)
	}
	if m.Verdict != VerdictAborted {
		t.Errorf("verdict = %q, want aborted", m.Verdict)
	}
}

func TestHist4RoundTrip(t *testing.T) {
	d := synthRun(t, 1, 1, 300, recording.Tags{})
	for _, row := range d.Timeseries {
		var h hist4
		if err := h.add(row.Hist); err != nil {
			t.Fatal(err)
		}
		got, _ := h.encode(nil)
		if string(got) != string(row.Hist) {
			t.Errorf("second %d: re-encoded %x, want %x", row.T, got, row.Hist)
		}
	}
	var h hist4
	for _, bad := range [][]byte{{2}, {1, 1}, {1, 1, 0xff, 0xff, 0xff, 0x7f, 1, 0, 0, 0}, {1, 0, 0, 0, 0, 9}} {
		if err := h.add(bad); err == nil {
			t.Errorf("%x: want an error", bad)
		}
	}
}
