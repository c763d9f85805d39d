package telemetry

import (
	"context"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/llmchaos/llmchaos/internal/promexpo/promexpotest"
)

// okResult is an ok request: sent at 1 s, first token 200 ms later, 11
// tokens, ended 1.2 s after the send.
func okResult() *recording.Result {
	return &recording.Result{
		Scheduled: time.Second, Dequeued: time.Second, Sent: time.Second,
		FirstToken: 1200 * time.Millisecond, End: 2200 * time.Millisecond,
		ITLMicros: []uint32{100_000, 100_000, 100_000, 100_000, 100_000, 100_000, 100_000, 100_000, 100_000, 100_000},
		Outcome:   recording.OutcomeOK, OutputTokens: 11, UsageReported: true, ContentChunks: 11,
	}
}

// newTestExporter returns an Exporter and its series as the real
// Prometheus libraries read its protobuf exposition.
func newTestExporter(t *testing.T) (*Exporter, prometheus.Gatherer) {
	t.Helper()
	e, err := New(Options{})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return e, promexpotest.Gatherer(e.Gatherer())
}

func TestObserveCountsAndHistograms(t *testing.T) {
	e, reg := newTestExporter(t)
	tags := recording.Tags{Endpoint: "http://127.0.0.1:8000/v1", Phase: "fault", Class: "chat"}
	for _, r := range []*recording.Result{okResult(), okResult(),
		{Scheduled: 900 * time.Millisecond, Sent: time.Second, End: 1100 * time.Millisecond,
			Outcome: recording.OutcomeFailed, Class: recording.ClassHTTP5xx, HTTPStatus: 503},
		{Scheduled: time.Second, Sent: time.Second, FirstToken: 1500 * time.Millisecond,
			End: 1600 * time.Millisecond, ITLMicros: []uint32{50_000, 50_000},
			Outcome: recording.OutcomeCancelled, Class: recording.ClassCancelled, ContentChunks: 3},
		{Scheduled: 2 * time.Second, Outcome: recording.OutcomeDropped},
	} {
		r.Tags = tags
		e.Scheduled(&tags)
		e.Observe(r)
	}
	e.SetInFlight(7)
	e.SetLost(0)

	const l = `class="chat",endpoint="http://127.0.0.1:8000/v1"`
	const wantRequests = `
# HELP llmchaos_requests_total Requests that ended, by outcome (ok, failed, cancelled, dropped) and error_class.
# TYPE llmchaos_requests_total counter
llmchaos_requests_total{` + l + `,error_class="",outcome="dropped",phase="fault"} 1
llmchaos_requests_total{` + l + `,error_class="",outcome="ok",phase="fault"} 2
llmchaos_requests_total{` + l + `,error_class="cancelled",outcome="cancelled",phase="fault"} 1
llmchaos_requests_total{` + l + `,error_class="connect",outcome="failed",phase="fault"} 0
llmchaos_requests_total{` + l + `,error_class="http_429",outcome="failed",phase="fault"} 0
llmchaos_requests_total{` + l + `,error_class="http_4xx",outcome="failed",phase="fault"} 0
llmchaos_requests_total{` + l + `,error_class="http_5xx",outcome="failed",phase="fault"} 1
llmchaos_requests_total{` + l + `,error_class="protocol",outcome="failed",phase="fault"} 0
llmchaos_requests_total{` + l + `,error_class="reset",outcome="failed",phase="fault"} 0
llmchaos_requests_total{` + l + `,error_class="timeout",outcome="failed",phase="fault"} 0
# HELP llmchaos_requests_scheduled_total Requests the schedule made due (sent, dropped or still waiting for a slot).
# TYPE llmchaos_requests_scheduled_total counter
llmchaos_requests_scheduled_total{` + l + `,phase="fault"} 5
# HELP llmchaos_requests_lost Sent requests that never ended as a result: sent - (ok + failed + cancelled), set at the run's end; must be 0.
# TYPE llmchaos_requests_lost gauge
llmchaos_requests_lost 0
# HELP llmchaos_in_flight Requests sent and not yet ended.
# TYPE llmchaos_in_flight gauge
llmchaos_in_flight 7
# HELP llmchaos_output_tokens_total Output tokens of ok requests (usage.completion_tokens, else content chunks).
# TYPE llmchaos_output_tokens_total counter
llmchaos_output_tokens_total{` + l + `,phase="fault"} 22
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(wantRequests),
		NameRequests, NameScheduled, NameLost, NameInFlight, NameOutputTokens); err != nil {
		t.Error(err)
	}

	hists := gatherHistograms(t, reg)
	tests := []struct {
		name      string
		wantCount uint64
		wantSum   float64
	}{
		// Two ok requests and the cancelled one got a first token.
		{NameTTFT, 3, 0.2 + 0.2 + 0.5},
		// 10 gaps of each ok request and 2 of the cancelled one.
		{NameITL, 22, 20*0.1 + 2*0.05},
		// Only ok requests: (1.2 − 0.2) / 10.
		{NameTPOT, 2, 0.2},
		{NameE2E, 2, 2.4},
		// Every sent request; only the failed one was 100 ms late.
		{NameSendLag, 4, 0.1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := hists[tt.name]
			if h == nil {
				t.Fatalf("%s not gathered", tt.name)
			}
			if got := h.GetSampleCount(); got != tt.wantCount {
				t.Errorf("count: got %d, want %d", got, tt.wantCount)
			}
			if got := h.GetSampleSum(); math.Abs(got-tt.wantSum) > 1e-9 {
				t.Errorf("sum: got %v, want %v", got, tt.wantSum)
			}
			// Native histogram: schema 3 is the largest with factor ≤ 1.1.
			if got := h.GetSchema(); got != 3 {
				t.Errorf("native schema: got %d, want 3", got)
			}
			if len(h.GetPositiveSpan()) == 0 {
				t.Error("no native buckets")
			}
			if len(h.GetBucket()) == 0 {
				t.Error("no classic buckets")
			}
		})
	}
}

func TestTTFTBucketPlacement(t *testing.T) {
	e, reg := newTestExporter(t)
	r := okResult()
	r.FirstToken = r.Sent + 450*time.Millisecond // between the 0.4 and 0.5 bounds
	e.Observe(r)
	h := gatherHistograms(t, reg)[NameTTFT]
	for _, b := range h.GetBucket() {
		want := uint64(0)
		if b.GetUpperBound() >= 0.5 {
			want = 1
		}
		if got := b.GetCumulativeCount(); got != want {
			t.Errorf("le=%v: got %d, want %d", b.GetUpperBound(), got, want)
		}
	}
}

func TestFaultAndThresholdGauges(t *testing.T) {
	e, reg := newTestExporter(t)
	e.FaultActive("kill-one", "replica-kill", true)
	e.FaultActive("slow-net", "network-latency", true)
	e.FaultActive("slow-net", "network-latency", false)
	e.ThresholdOK("ttft{phase:fault}", false)
	e.ThresholdOK("error_rate", true)
	const want = `
# HELP llmchaos_fault_active 1 while the fault is applied, 0 after it was reverted.
# TYPE llmchaos_fault_active gauge
llmchaos_fault_active{fault="kill-one",type="replica-kill"} 1
llmchaos_fault_active{fault="slow-net",type="network-latency"} 0
# HELP llmchaos_threshold_ok 1 while the threshold on the metric holds, 0 while it fails.
# TYPE llmchaos_threshold_ok gauge
llmchaos_threshold_ok{metric="error_rate"} 1
llmchaos_threshold_ok{metric="ttft{phase:fault}"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), NameFaultActive, NameThresholdOK); err != nil {
		t.Error(err)
	}
}

func TestUnknownClassStillCounted(t *testing.T) {
	e, _ := newTestExporter(t)
	e.Observe(&recording.Result{Outcome: recording.OutcomeFailed, Class: "tls", Tags: recording.Tags{Phase: "after"}})
	if got := e.requests.WithLabelValues("", "after", "", "failed", "tls").Value(); got != 1 {
		t.Errorf("requests{failed,tls}: got %v, want 1", got)
	}
}

func TestNewOptions(t *testing.T) {
	e, err := New(Options{})
	if err != nil {
		t.Fatalf("New with own registry: %v", err)
	}
	e.Observe(okResult())
	fams := e.Gatherer().Gather()
	if got, want := len(fams), len(MetricNames())-2; got != want { // the fault and threshold vecs are empty
		t.Errorf("own registry families: got %d, want %d", got, want)
	}
	// Run labels with an empty value are left out; the others are on
	// every series.
	e, err = New(Options{RunLabels: map[string]string{LabelRun: "r1", LabelExperiment: ""}})
	if err != nil {
		t.Fatal(err)
	}
	e.SetInFlight(1)
	for _, f := range e.Gatherer().Gather() {
		for _, m := range f.Metrics {
			if v, _ := m.Label(LabelRun); v != "r1" {
				t.Errorf("%s: run label %q, want r1", f.Name, v)
			}
			if _, ok := m.Label(LabelExperiment); ok {
				t.Errorf("%s: has an empty experiment label", f.Name)
			}
		}
	}
}

func TestMetricNamesMatchRegistry(t *testing.T) {
	e, reg := newTestExporter(t)
	e.Observe(okResult())
	e.FaultActive("f", "t", true)
	e.ThresholdOK("m", true)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := make(map[string]bool)
	for _, mf := range mfs {
		got[mf.GetName()] = true
	}
	for _, name := range MetricNames() {
		if !got[name] {
			t.Errorf("MetricNames has %s, the registry does not", name)
		}
		delete(got, name)
	}
	for name := range got {
		t.Errorf("the registry has %s, MetricNames does not", name)
	}
}

func TestListenAddr(t *testing.T) {
	tests := []struct {
		in, want string
		wantErr  bool
	}{
		{"", DefaultListen, false},
		{":9464", "127.0.0.1:9464", false},
		{"9464", "127.0.0.1:9464", false},
		{"127.0.0.1:0", "127.0.0.1:0", false},
		{"0.0.0.0:9464", "0.0.0.0:9464", false},
		{"[::1]:9464", "[::1]:9464", false},
		{"localhost", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ListenAddr(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err: got %v, want error %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestServe(t *testing.T) {
	e, _ := newTestExporter(t)
	e.Observe(okResult())
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	srv, err := e.Serve(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if strings.HasSuffix(srv.Addr(), ":0") || !strings.HasPrefix(srv.Addr(), "127.0.0.1:") {
		t.Errorf("Addr: got %q, want 127.0.0.1 and a real port", srv.Addr())
	}
	resp, err := http.Get(srv.URL())
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`llmchaos_requests_total{class="",endpoint="",error_class="",outcome="ok",phase=""} 1`,
		`llmchaos_ttft_seconds_bucket{class="",endpoint="",phase="",le="0.2"} 1`,
		`llmchaos_e2e_seconds_count{class="",endpoint="",phase=""} 1`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	// Binding the same port again fails with a clear error.
	if _, err := e.Serve(ctx, srv.Addr()); err == nil || !strings.Contains(err.Error(), "metrics listen") {
		t.Errorf("second Serve on %s: got %v, want a listen error", srv.Addr(), err)
	}
	cancel()
	if err := srv.Wait(); err != nil {
		t.Errorf("Wait after cancel: %v", err)
	}
	if _, err := http.Get(srv.URL()); err == nil {
		t.Error("server still answers after its context ended")
	}
}

// gatherHistograms returns the gathered histograms by family name.
func gatherHistograms(t *testing.T, g prometheus.Gatherer) map[string]*dto.Histogram {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]*dto.Histogram)
	for _, mf := range mfs {
		if mf.GetType() == dto.MetricType_HISTOGRAM && len(mf.GetMetric()) == 1 {
			out[mf.GetName()] = mf.GetMetric()[0].GetHistogram()
		}
	}
	return out
}

func BenchmarkObserve(b *testing.B) {
	e, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	r := okResult()
	r.ITLMicros = make([]uint32, 128) // a typical 128-token answer
	for i := range r.ITLMicros {
		r.ITLMicros[i] = uint32(8000 + i*97%5000)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		e.Observe(r)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/result")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/129, "ns/observation")
}

func TestObserveEventsBeforeTheResult(t *testing.T) {
	// A running stream's first token and first gaps show in the live
	// histograms before its Result; the Result (LiveEvents) does not add
	// them again.
	e, reg := newTestExporter(t)
	r := okResult()
	r.LiveEvents = true
	e.ObserveEvents(&recording.StreamEvents{Tags: &r.Tags, At: r.FirstToken, FirstToken: true, TTFT: r.FirstToken - r.Sent, Tokens: 1})
	e.ObserveEvents(&recording.StreamEvents{Tags: &r.Tags, At: r.FirstToken + 400*time.Millisecond, Tokens: 4, ITLMicros: r.ITLMicros[:4]})
	h := gatherHistograms(t, reg)
	if got := h[NameTTFT].GetSampleCount(); got != 1 {
		t.Errorf("ttft samples while streaming = %d, want 1", got)
	}
	if got := h[NameITL].GetSampleCount(); got != 4 {
		t.Errorf("itl samples while streaming = %d, want 4", got)
	}
	e.ObserveEvents(&recording.StreamEvents{Tags: &r.Tags, At: r.End, Tokens: 6, ITLMicros: r.ITLMicros[4:]})
	e.Observe(r)
	h = gatherHistograms(t, reg)
	if got := h[NameTTFT].GetSampleCount(); got != 1 {
		t.Errorf("ttft samples after the result = %d, want 1 (not counted twice)", got)
	}
	if got := h[NameITL].GetSampleCount(); got != 10 {
		t.Errorf("itl samples after the result = %d, want 10", got)
	}
	if got := h[NameE2E].GetSampleCount(); got != 1 {
		t.Errorf("e2e samples = %d, want 1 (by completion)", got)
	}
}
