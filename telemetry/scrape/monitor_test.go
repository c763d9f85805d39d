package scrape

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/sim"
	"github.com/llmchaos/llmchaos/sim/server"
	"github.com/llmchaos/llmchaos/sim/server/servertest"
)

// vllmNew is a page of a recent vLLM with two models.
const vllmNew = `# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="a"} 3.0
vllm:num_requests_running{engine="0",model_name="b"} 2.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="a"} 7.0
vllm:num_requests_waiting{engine="0",model_name="b"} 0.0
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="a"} 0.25
vllm:kv_cache_usage_perc{engine="0",model_name="b"} 0.75
# HELP vllm:num_preemptions_total Cumulative number of preemption from the engine.
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{engine="0",model_name="a"} 4.0
vllm:num_preemptions_total{engine="0",model_name="b"} 1.0
# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{le="0.1",model_name="a"} 1.0
vllm:time_to_first_token_seconds_bucket{le="+Inf",model_name="a"} 1.0
vllm:time_to_first_token_seconds_count{model_name="a"} 1.0
vllm:time_to_first_token_seconds_sum{model_name="a"} 0.05
`

// vllmOld is a page of vLLM before 0.10 (gpu_cache_usage_perc, counters
// without _total in the TYPE line as older client libraries wrote them).
const vllmOld = `# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{model_name="m"} 0.5
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m"} 1
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{model_name="m"} 2
`

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		page    string
		want    map[string]float64
		wantErr bool
	}{
		{"new vLLM, two models", vllmNew, map[string]float64{
			KVCacheUsage: 0.75, RequestsRunning: 5, RequestsWaiting: 7, Preemptions: 5}, false},
		{"old vLLM alias", vllmOld, map[string]float64{
			KVCacheUsage: 0.5, RequestsRunning: 1, Preemptions: 2}, false},
		{"new name wins over the alias", "vllm:gpu_cache_usage_perc 0.9\nvllm:kv_cache_usage_perc 0.1\n",
			map[string]float64{KVCacheUsage: 0.1}, false},
		{"alias after new name in the page", "vllm:kv_cache_usage_perc 0.1\nvllm:gpu_cache_usage_perc 0.9\n",
			map[string]float64{KVCacheUsage: 0.1}, false},
		{"nothing known", "process_cpu_seconds_total 3\n", map[string]float64{}, false},
		{"empty", "", map[string]float64{}, false},
		{"malformed", "vllm:num_requests_running{ 3\n", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(strings.NewReader(tt.page))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err: got %v, want error %v", err, tt.wantErr)
			}
			if fmt.Sprint(got.Values) != fmt.Sprint(tt.want) && !(tt.wantErr && got.Values == nil) {
				t.Errorf("got %v, want %v", got.Values, tt.want)
			}
		})
	}
}

func TestMetricsURL(t *testing.T) {
	tests := []struct {
		in, want string
		wantErr  bool
	}{
		{"http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/metrics", false},
		{"http://127.0.0.1:8000/v1/", "http://127.0.0.1:8000/metrics", false},
		{"http://127.0.0.1:8000", "http://127.0.0.1:8000/metrics", false},
		{"https://h/prefix/metrics", "https://h/prefix/metrics", false},
		{"http://h:1/v1?x=1", "http://h:1/metrics", false},
		{"127.0.0.1:8000", "", true},
		{"ftp://h/", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := MetricsURL(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err: got %v, want error %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	err := Options{Endpoints: []string{"nohost", "http://ok:1"}, Interval: -1, MaxSamples: -1}.Validate()
	for _, want := range []string{`endpoint "nohost"`, "must not be negative", "max samples -1"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: got %v, want it to mention %q", err, want)
		}
	}
	if err := (Options{}).Validate(); err == nil || !strings.Contains(err.Error(), "no endpoints") {
		t.Errorf("Validate of zero Options: got %v", err)
	}
}

// page serves a fixed metrics page and counts scrapes.
func page(t *testing.T, body string, status int) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestScrapeOnceUpAndDown(t *testing.T) {
	good := page(t, vllmNew, http.StatusOK)
	broken := page(t, "oops", http.StatusInternalServerError)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String() + "/v1"
	_ = ln.Close()

	var mu sync.Mutex
	failed := map[string]bool{}
	var clock atomic.Int64
	clock.Store(int64(3 * time.Second))
	m, err := New(Options{
		Endpoints: []string{good.URL + "/v1", broken.URL, dead},
		Now:       func() time.Duration { return time.Duration(clock.Load()) },
		OnError: func(ep string, err error) {
			mu.Lock()
			defer mu.Unlock()
			failed[ep] = true
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := m.ScrapeOnce(t.Context())
	want := []Sample{
		{3 * time.Second, good.URL + "/v1", KVCacheUsage, 0.75},
		{3 * time.Second, good.URL + "/v1", RequestsRunning, 5},
		{3 * time.Second, good.URL + "/v1", RequestsWaiting, 7},
		{3 * time.Second, good.URL + "/v1", Preemptions, 5},
		{3 * time.Second, good.URL + "/v1", Up, 1},
		{3 * time.Second, broken.URL, Up, 0},
		{3 * time.Second, dead, Up, 0},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}
	if !failed[broken.URL] || !failed[dead] || failed[good.URL+"/v1"] {
		t.Errorf("OnError endpoints: got %v, want the broken and the dead one", failed)
	}
	if err := m.LastError(broken.URL); err == nil || !strings.Contains(err.Error(), "HTTP 500") {
		t.Errorf("LastError(broken): got %v, want HTTP 500", err)
	}
	if err := m.LastError(dead); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("LastError(dead): got %v, want connection refused", err)
	}
	if st := m.Stats(); st.Scrapes != 3 || st.Failures != 2 {
		t.Errorf("stats: got %+v, want 3 scrapes, 2 failures", st)
	}
}

func TestRingKeepsNewest(t *testing.T) {
	srv := page(t, vllmOld, http.StatusOK) // 4 samples a scrape with up
	var tick atomic.Int64
	m, err := New(Options{Endpoints: []string{srv.URL}, MaxSamples: 6,
		Now: func() time.Duration { return time.Duration(tick.Add(1)) * time.Second }})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		m.ScrapeOnce(t.Context())
	}
	got := m.Samples()
	if len(got) != 6 {
		t.Fatalf("kept %d samples, want 6", len(got))
	}
	// The last 6 of 12: the second half of scrape 2 and all of scrape 3.
	wantAt := []time.Duration{2, 2, 3, 3, 3, 3}
	for i, s := range got {
		if s.At != wantAt[i]*time.Second {
			t.Errorf("sample %d at %v, want %v", i, s.At, wantAt[i]*time.Second)
		}
	}
	if got[len(got)-1].Name != Up {
		t.Errorf("newest sample: got %s, want up", got[len(got)-1].Name)
	}
	if st := m.Stats(); st.Dropped != 6 {
		t.Errorf("dropped: got %d, want 6", st.Dropped)
	}
}

func TestRunTicksAndStops(t *testing.T) {
	srv := page(t, vllmOld, http.StatusOK)
	samples := make(chan Sample, 1000)
	m, err := New(Options{Endpoints: []string{srv.URL}, Interval: 10 * time.Millisecond,
		OnSample: func(s Sample) { samples <- s }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	var ups []Sample
	timeout := time.After(10 * time.Second)
	for len(ups) < 3 {
		select {
		case s := <-samples:
			if s.Name == Up {
				ups = append(ups, s)
			}
		case <-timeout:
			t.Fatalf("got %d scrapes within 10 s, want 3", len(ups))
		}
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10 s of its context ending")
	}
	for i := 1; i < len(ups); i++ {
		if ups[i].At <= ups[i-1].At {
			t.Errorf("scrape %d at %v, not after %v", i, ups[i].At, ups[i-1].At)
		}
	}
}

// TestMonitorRealSimulator scrapes the simulator while requests stream
// through it and sees its KV cache and batch in use.
func TestMonitorRealSimulator(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.Latency = sim.LatencyConstant
	cfg.TTFT = 20 * time.Millisecond
	cfg.ITL = 5 * time.Millisecond
	// A small device: 2 GiB of KV pool, 16,384 tokens, so that a few
	// requests show as a visible share.
	cfg.GPUMemory = (cfg.WeightBytes + 2<<30) * 10 / 9
	base := startSim(t, cfg)

	// A little load: 8 streams of 600 tokens (3 s each), cancelled at the end.
	lctx, stopLoad := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { stopLoad(); wg.Wait() }) // before the server stops (LIFO)
	for i := range 8 {
		wg.Go(func() { stream(lctx, base, i) })
	}

	m, err := New(Options{Endpoints: []string{base + "/v1"}}) // ScrapeOnce in a loop; 2 s timeout
	if err != nil {
		t.Fatal(err)
	}
	var sawKV, sawRunning float64
	deadline := time.Now().Add(10 * time.Second)
	for (sawKV == 0 || sawRunning == 0) && time.Now().Before(deadline) {
		for _, s := range m.ScrapeOnce(t.Context()) {
			switch s.Name {
			case KVCacheUsage:
				sawKV = max(sawKV, s.Value)
			case RequestsRunning:
				sawRunning = max(sawRunning, s.Value)
			case Up:
				if s.Value != 1 {
					t.Fatalf("simulator scrape failed: %v", m.LastError(base+"/v1"))
				}
			}
		}
	}
	t.Logf("max seen: kv_cache_usage_perc %.4f, num_requests_running %v", sawKV, sawRunning)
	if sawKV <= 0 || sawKV > 1 {
		t.Errorf("kv_cache_usage_perc: max seen %v, want in (0, 1]", sawKV)
	}
	if sawRunning <= 0 {
		t.Errorf("num_requests_running: max seen %v, want > 0", sawRunning)
	}
	names := map[string]bool{}
	for _, s := range m.Samples() {
		names[s.Name] = true
	}
	for _, n := range Names() {
		if !names[n] {
			t.Errorf("no %s sample from the simulator", n)
		}
	}
}

// startSim serves a simulator replica on 127.0.0.1:0 until the test ends.
func startSim(t *testing.T, cfg sim.Config) string {
	t.Helper()
	return servertest.Start(t, server.Options{Config: cfg})
}

// stream sends one streaming chat request and reads it to the end.
func stream(ctx context.Context, base string, i int) {
	body := fmt.Sprintf(`{"model":"llmchaos-sim","stream":true,"max_tokens":600,"ignore_eos":true,`+
		`"messages":[{"role":"user","content":"%s"}]}`, strings.Repeat("word ", 200+i))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		return
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return // the test cancelled it
	}
	defer func() { _ = resp.Body.Close() }()
	_, _ = io.Copy(io.Discard, resp.Body)
}

func BenchmarkParse(b *testing.B) {
	// A page the size of a real vLLM one: the known series plus 60
	// histograms of 20 buckets that Parse has to skip.
	var sb strings.Builder
	sb.WriteString(vllmNew)
	for i := range 60 {
		fmt.Fprintf(&sb, "# TYPE vllm:h%d_seconds histogram\n", i)
		for j := range 20 {
			fmt.Fprintf(&sb, "vllm:h%d_seconds_bucket{le=\"%d\",model_name=\"a\"} %d\n", i, j, j)
		}
		fmt.Fprintf(&sb, "vllm:h%d_seconds_bucket{le=\"+Inf\",model_name=\"a\"} 20\n", i)
		fmt.Fprintf(&sb, "vllm:h%d_seconds_sum{model_name=\"a\"} 1\nvllm:h%d_seconds_count{model_name=\"a\"} 20\n", i, i)
	}
	page := sb.String()
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(strings.NewReader(page)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/page")
}
