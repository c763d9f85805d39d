package observe

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/telemetry/remotewrite"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// okResult is a finished request: TTFT 100 ms, two gaps, E2E 300 ms.
func okResult(seq uint64) *recording.Result {
	return &recording.Result{
		Seq: seq, RequestID: fmt.Sprintf("req-%d", seq), Scheduled: time.Second, Sent: time.Second,
		FirstToken: 1100 * time.Millisecond, End: 1300 * time.Millisecond, ITLMicros: []uint32{100_000, 100_000},
		Outcome: recording.OutcomeOK, ContentChunks: 3, OutputTokens: 3,
	}
}

// scrapeText fetches a metrics page and parses it.
func scrapeText(t *testing.T, u string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatalf("scrape %s: %v", u, err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse %s: %v", u, err)
	}
	return mfs
}

// value returns the value of the series of name whose labels include
// want (gauge or counter).
func value(mfs map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	mf := mfs[name]
	if mf == nil {
		return 0, false
	}
next:
	for _, m := range mf.GetMetric() {
		have := map[string]string{}
		for _, lp := range m.GetLabel() {
			have[lp.GetName()] = lp.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		if m.GetCounter() != nil {
			return m.GetCounter().GetValue(), true
		}
		return m.GetGauge().GetValue(), true
	}
	return 0, false
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		want []string // fragments of the error; none: valid
	}{
		{"zero", Options{}, nil},
		{"everything", Options{MetricsListen: ":0", RemoteWriteURL: "http://127.0.0.1:9090/api/v1/write", OTLPEndpoint: "http://127.0.0.1:4318",
			ScrapeTargets: []string{"http://127.0.0.1:8000/v1"}, ScrapeInterval: time.Second}, nil},
		{"every problem at once", Options{MetricsListen: "nohost:port:x", RemoteWriteURL: "ftp://x", OTLPEndpoint: "localhost:4318",
			ScrapeTargets: []string{"127.0.0.1:8000"}, ScrapeInterval: -time.Second, ExternalLabels: map[string]string{"__name__": "x"}},
			[]string{"metrics listen address", "remote write: URL", "tracing: endpoint", "server monitor", "scrape interval -1s", "external label name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.o.Validate()
			if (err != nil) != (len(tt.want) > 0) {
				t.Fatalf("Validate() = %v, want error %v", err, len(tt.want) > 0)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, want it to mention %q", err, w)
				}
			}
		})
	}
	if _, err := Start(context.Background(), Options{OTLPEndpoint: "nope"}); err == nil {
		t.Error("Start accepted an invalid endpoint")
	}
}

// TestStartNothing: a zero Options starts nothing and every method is a
// no-op.
func TestStartNothing(t *testing.T) {
	o, err := Start(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	o.Observe(okResult(1))
	o.SetInFlight(3)
	o.FaultActive("f", "t", true)
	o.ThresholdOK("ttft", false)
	o.SetThresholds([]report.ThresholdResult{{Metric: "ttft", OK: true}})
	if got := o.MetricsURL(); got != "" {
		t.Errorf("MetricsURL() = %q, want empty", got)
	}
	if got := o.ServerSeries(time.Hour); got != nil {
		t.Errorf("ServerSeries() = %v, want none", got)
	}
	if err := o.Close(context.Background()); err != nil {
		t.Errorf("Close() = %v", err)
	}
}

// TestMetricsEndpoint serves the live series, polls the in-flight gauge,
// keeps fault and threshold gauges, and stops serving at Close.
func TestMetricsEndpoint(t *testing.T) {
	var inFlight atomic.Int64
	inFlight.Store(7)
	o, err := Start(context.Background(), Options{MetricsListen: ":0", InFlight: inFlight.Load, InFlightInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	u := o.MetricsURL()
	if !strings.HasPrefix(u, "http://127.0.0.1:") || strings.HasSuffix(u, ":0/metrics") {
		t.Fatalf("MetricsURL() = %q, want loopback with the port bound", u)
	}
	for i := range 3 {
		o.Observe(okResult(uint64(i)))
	}
	o.Observe(&recording.Result{Sent: time.Second, End: 2 * time.Second, Outcome: recording.OutcomeFailed, Class: recording.ClassHTTP5xx})
	o.FaultActive("kill-one", "replica-kill", true)
	ths, err := assertions.Parse("ttft: p(99)<1s, max<2s")
	if err != nil {
		t.Fatal(err)
	}
	e2e, err := assertions.Parse("e2e: p(99)<1s")
	if err != nil {
		t.Fatal(err)
	}
	ths[0].AbortOnFail = true
	ths = append(ths, e2e...)
	o.SetLiveThresholds(ths, assertions.Outcomes{{Threshold: ths[1], Metric: "ttft"}})

	mfs := scrapeText(t, u)
	for _, tt := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"llmchaos_requests_total", map[string]string{"outcome": "ok", "error_class": ""}, 3},
		{"llmchaos_requests_total", map[string]string{"outcome": "failed", "error_class": "http_5xx"}, 1},
		{"llmchaos_output_tokens_total", nil, 9},
		{"llmchaos_fault_active", map[string]string{"fault": "kill-one", "type": "replica-kill"}, 1},
		{"llmchaos_threshold_ok", map[string]string{"metric": "ttft"}, 0},
	} {
		if got, ok := value(mfs, tt.name, tt.labels); !ok || got != tt.want {
			t.Errorf("%s%v = %v (present %v), want %v", tt.name, tt.labels, got, ok, tt.want)
		}
	}
	if _, ok := value(mfs, "llmchaos_threshold_ok", map[string]string{"metric": "e2e"}); ok {
		t.Error("a threshold without abortOnFail was set by the live check")
	}
	if got := mfs["llmchaos_ttft_seconds"].GetMetric()[0].GetHistogram().GetSampleCount(); got != 3 {
		t.Errorf("llmchaos_ttft_seconds count = %d, want 3", got)
	}
	// The poller runs every 10 ms; the first read happens at Start.
	if got, _ := value(mfs, "llmchaos_in_flight", nil); got != 7 {
		t.Errorf("llmchaos_in_flight = %v, want 7", got)
	}
	inFlight.Store(0)
	o.SetThresholds([]report.ThresholdResult{{Metric: "ttft", OK: true}, {Metric: "ttft", OK: false}, {Metric: "e2e", OK: true}})
	mfs = scrapeText(t, u)
	if got, _ := value(mfs, "llmchaos_threshold_ok", map[string]string{"metric": "ttft"}); got != 0 {
		t.Errorf("threshold_ok{ttft} = %v after one of its expressions failed, want 0", got)
	}
	if got, _ := value(mfs, "llmchaos_threshold_ok", map[string]string{"metric": "e2e"}); got != 1 {
		t.Errorf("threshold_ok{e2e} = %v, want 1", got)
	}

	if err := o.Close(context.Background()); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	if err := o.Close(context.Background()); err != nil {
		t.Errorf("second Close() = %v", err)
	}
	if resp, err := http.Get(u); err == nil {
		resp.Body.Close()
		t.Errorf("%s still answers after Close", u)
	}
}

// vllmPage serves a vLLM-like /metrics page whose values grow with each
// scrape, and signals each scrape served.
type vllmPage struct {
	n      atomic.Int64
	served chan int64
}

func (p *vllmPage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/metrics" {
		http.NotFound(w, r)
		return
	}
	n := p.n.Add(1)
	fmt.Fprintf(w, `# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{model_name="m"} %g
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m"} %d
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{model_name="m"} 0
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{model_name="m"} %d
`, float64(n)/100, n, 2*n)
	select {
	case p.served <- n:
	default:
	}
}

// TestServerSeries scrapes two targets, one without /metrics: one warning
// for that one, however often it fails; the other's samples become the
// report's vLLM series, the failing one an up series at 0, and samples
// after the run's end are left out.
func TestServerSeries(t *testing.T) {
	page := &vllmPage{served: make(chan int64, 1)}
	good := httptest.NewServer(page)
	t.Cleanup(good.Close)
	bad := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(bad.Close)
	badTarget := strings.Replace(bad.URL, "http://", "http://user:s3cret-pw@", 1) + "/v1"

	var clock atomic.Int64 // the run clock, moved by the test
	var mu sync.Mutex
	var warnings []string
	o, err := Start(context.Background(), Options{
		ScrapeTargets:  []string{good.URL + "/v1", badTarget, good.URL + "/v1"},
		ScrapeInterval: 100 * time.Millisecond, // also the scrape timeout: room for the race detector on a busy machine
		Clock:          func() time.Duration { return time.Duration(clock.Load()) },
		Warn: func(err error) {
			mu.Lock()
			defer mu.Unlock()
			warnings = append(warnings, err.Error())
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	// Let the monitor scrape the good target four times, a second of run
	// clock apart.
	for n := int64(0); n < 4; {
		select {
		case n = <-page.served:
			clock.Add(int64(time.Second))
		case <-time.After(10 * time.Second):
			t.Fatal("the monitor did not scrape within 10 s")
		}
	}
	if err := o.Close(context.Background()); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(warnings) != 1 || !strings.Contains(warnings[0], "HTTP 404") || !strings.Contains(warnings[0], "the run goes on") {
		t.Errorf("warnings = %q, want one for the target without /metrics", warnings)
	}
	for _, w := range warnings {
		if strings.Contains(w, "s3cret-pw") {
			t.Errorf("warning shows the target's password: %q", w)
		}
	}

	const end = 2500 * time.Millisecond
	series := o.ServerSeries(end)
	byName := map[string]report.SeriesRecord{}
	for _, s := range series {
		if strings.Contains(s.Endpoint, "s3cret-pw") {
			t.Errorf("series endpoint shows the password: %q", s.Endpoint)
		}
		for i, p := range s.Points {
			if p[0] > end.Seconds() {
				t.Errorf("%s has a point at %v s, after the run's end", s.Name, p[0])
			}
			if i > 0 && p[0] < s.Points[i-1][0] {
				t.Errorf("%s points out of order: %v", s.Name, s.Points)
			}
		}
		byName[s.Endpoint+" "+s.Name] = s
	}
	goodEP, badEP := good.URL+"/v1", redactURL(badTarget)
	tests := []struct {
		key      string
		unit     string
		min      int
		firstVal float64
	}{
		{goodEP + " vllm:kv_cache_usage_perc", "ratio", 3, 0.01},
		{goodEP + " vllm:num_requests_running", "count", 3, 1},
		{goodEP + " vllm:num_requests_waiting", "count", 3, 0},
		{goodEP + " vllm:num_preemptions_total", "count", 3, 2},
		// The failing target's scrapes race the test's clock moves: at
		// least two fall before the end.
		{badEP + " up", "", 2, 0},
	}
	for _, tt := range tests {
		s, ok := byName[tt.key]
		if !ok {
			t.Errorf("no series %q among %d", tt.key, len(series))
			continue
		}
		if s.Unit != tt.unit || len(s.Points) < tt.min || s.Points[0][1] != tt.firstVal {
			t.Errorf("%s: unit %q, points %v; want unit %q, at least %d points, first value %v", tt.key, s.Unit, s.Points, tt.unit, tt.min, tt.firstVal)
		}
	}
	if _, ok := byName[goodEP+" up"]; ok {
		t.Error("an up series for a target whose scrapes all succeeded")
	}
	if got, want := len(series), len(tests); got != want {
		t.Errorf("%d series, want %d (targets scraped once each)", got, want)
	}
	if n := len(o.Samples()); n == 0 {
		t.Error("Samples() is empty")
	}
}

// TestSingleTargetSeriesHaveNoEndpoint: with one target the endpoint is
// left out, as the report's schema says.
func TestSingleTargetSeriesHaveNoEndpoint(t *testing.T) {
	page := &vllmPage{served: make(chan int64, 1)}
	srv := httptest.NewServer(page)
	t.Cleanup(srv.Close)
	o, err := Start(context.Background(), Options{ScrapeTargets: []string{srv.URL + "/v1"}, ScrapeInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// The second scrape begins after the first one was read whole.
	for range 2 {
		select {
		case <-page.served:
		case <-time.After(10 * time.Second):
			t.Fatal("no scrape within 10 s")
		}
	}
	// Before Close: the scrape that Close cuts short counts as failed.
	series := o.ServerSeries(time.Hour)
	if err := o.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(series) != 4 {
		t.Fatalf("%d series, want the 4 vLLM ones: %+v", len(series), series)
	}
	for _, s := range series {
		if s.Endpoint != "" {
			t.Errorf("%s: endpoint %q, want none for a single target", s.Name, s.Endpoint)
		}
	}
}

// TestRemoteWriteFailureWarnsOnce pushes to a port nobody listens on: one
// warning while the run goes on, and Close reports the failed pushes;
// neither shows the password in the receiver's URL.
func TestRemoteWriteFailureWarnsOnce(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://llmchaos:rw-s3cret@" + ln.Addr().String() + "/api/v1/write"
	ln.Close()
	warned := make(chan error, 10)
	o, err := Start(context.Background(), Options{RemoteWriteURL: dead, RemoteWriteInterval: 10 * time.Millisecond,
		Warn: func(err error) { warned <- err }})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case w := <-warned:
		if !strings.Contains(w.Error(), "the run goes on") || !strings.Contains(w.Error(), ln.Addr().String()) || strings.Contains(w.Error(), "rw-s3cret") {
			t.Errorf("warning = %q, want the receiver named without its password", w)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no warning within 20 s of pushing to a closed port")
	}
	err = o.Close(context.Background())
	if re, ok := errors.AsType[*remotewrite.RunError](err); !ok || re.Failed < 2 {
		t.Errorf("Close() = %v, want a *remotewrite.RunError counting the failed pushes, the last one included", err)
	}
	if strings.Contains(err.Error(), "rw-s3cret") {
		t.Errorf("Close() = %q shows the receiver's password", err)
	}
	if n := len(warned); n != 0 {
		t.Errorf("%d more warnings, want one in all", n)
	}
}

// otlpReceiver is an in-test OTLP/HTTP collector that keeps the spans.
type otlpReceiver struct {
	mu    sync.Mutex
	spans []*tracepb.Span
}

func (c *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	raw, err := io.ReadAll(body)
	var req coltracepb.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(raw, &req)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			c.spans = append(c.spans, ss.GetSpans()...)
		}
	}
	c.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// TestTracingSpansAtClose: every observed Result is a span at the
// collector once Close returns, placed on the run's wall clock.
func TestTracingSpansAtClose(t *testing.T) {
	col := &otlpReceiver{}
	srv := httptest.NewServer(col)
	t.Cleanup(srv.Close)
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	o, err := Start(context.Background(), Options{OTLPEndpoint: srv.URL, RunStart: start,
		Clock: func() time.Duration { return 0 }, TraceAttributes: map[string]string{"llmchaos.run": "t"}})
	if err != nil {
		t.Fatal(err)
	}
	const n = 5
	for i := range n {
		o.Observe(okResult(uint64(i)))
	}
	if err := o.Close(context.Background()); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	if len(col.spans) != n {
		t.Fatalf("%d spans at the collector, want %d", len(col.spans), n)
	}
	for _, s := range col.spans {
		if got, want := s.GetStartTimeUnixNano(), uint64(start.Add(time.Second).UnixNano()); s.GetName() != "llm.request" || got != want {
			t.Errorf("span %q starts at %d, want llm.request at %d", s.GetName(), got, want)
		}
	}
}

func BenchmarkObserve(b *testing.B) {
	o, err := Start(context.Background(), Options{MetricsListen: "127.0.0.1:0"})
	if err != nil {
		b.Fatal(err)
	}
	defer o.Close(context.Background())
	res := okResult(1)
	b.ReportAllocs()
	for b.Loop() {
		o.Observe(res)
	}
}

// TestOutlivesStartContext: the observers run until Close, not until
// Start's context ends (an interrupted run still gets its last push and
// its report).
func TestOutlivesStartContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	o, err := Start(ctx, Options{MetricsListen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	o.Observe(okResult(1))
	if got, _ := value(scrapeText(t, o.MetricsURL()), "llmchaos_requests_total", map[string]string{"outcome": "ok"}); got != 1 {
		t.Errorf("after Start's context ended: requests ok = %v, want 1", got)
	}
	if err := o.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestLiveSeriesLabels scrapes the endpoint over HTTP: every request series
// carries the run, the experiment, the endpoint, the phase and the request
// class, and errors their error_class.
func TestLiveSeriesLabels(t *testing.T) {
	o, err := Start(context.Background(), Options{MetricsListen: "127.0.0.1:0", Run: "r1", Experiment: "kill-one"})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close(context.Background())
	tags := recording.Tags{Endpoint: "http://127.0.0.1:8001/v1", Phase: "fault", Class: "chat"}
	o.Scheduled(&tags)
	o.Scheduled(&tags)
	res := okResult(1)
	res.Tags = tags
	o.Observe(res)
	failed := &recording.Result{Scheduled: time.Second, Sent: 1500 * time.Millisecond, End: 2 * time.Second,
		Outcome: recording.OutcomeFailed, Class: recording.ClassConnect, Tags: tags}
	o.Observe(failed)
	mfs := scrapeText(t, o.MetricsURL())
	base := map[string]string{"run": "r1", "experiment": "kill-one", "endpoint": tags.Endpoint, "phase": "fault", "class": "chat"}
	with := func(kv ...string) map[string]string {
		m := maps.Clone(base)
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	tests := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"llmchaos_requests_total", with("outcome", "ok", "error_class", ""), 1},
		{"llmchaos_requests_total", with("outcome", "failed", "error_class", "connect"), 1},
		{"llmchaos_requests_scheduled_total", base, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := value(mfs, tt.name, tt.labels)
			if !ok || got != tt.want {
				t.Errorf("%s%v: got %v (found %v), want %v", tt.name, tt.labels, got, ok, tt.want)
			}
		})
	}
	for _, name := range []string{"llmchaos_in_flight", "llmchaos_send_lag_seconds", "llmchaos_ttft_seconds"} {
		labels := base
		if name == "llmchaos_in_flight" {
			labels = map[string]string{"run": "r1", "experiment": "kill-one"}
		}
		if _, ok := value(mfs, name, labels); !ok {
			t.Errorf("%s: no series labelled %v", name, labels)
		}
	}
}

// TestThresholdOKScrapeableAfterTheRun: Close keeps the endpoint up until a
// scrape that began after the run's end has read the verdicts.
func TestThresholdOKScrapeableAfterTheRun(t *testing.T) {
	o, err := Start(context.Background(), Options{MetricsListen: "127.0.0.1:0", Linger: MaxLinger})
	if err != nil {
		t.Fatal(err)
	}
	u := o.MetricsURL()
	scrapeText(t, u) // a scraper watches the run
	o.ThresholdOK("ttft{phase:fault}", false)
	closed := make(chan error, 1)
	go func() { closed <- o.Close(context.Background()) }()
	mfs := scrapeText(t, u) // the scraper's next visit, after the end
	if got, ok := value(mfs, "llmchaos_threshold_ok", map[string]string{"metric": "ttft{phase:fault}"}); !ok || got != 0 {
		t.Errorf("llmchaos_threshold_ok after the run: got %v (found %v), want 0", got, ok)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if resp, err := http.Get(u); err == nil {
		resp.Body.Close()
		t.Error("the endpoint still answers after Close")
	}
}

// TestNoLingerWithoutScraper: an endpoint nobody scraped goes away at
// once, whatever the linger.
func TestNoLingerWithoutScraper(t *testing.T) {
	o, err := Start(context.Background(), Options{MetricsListen: "127.0.0.1:0", Linger: MaxLinger})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := o.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Error("Close waited for a scraper that never came")
	}
}
