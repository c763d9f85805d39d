package experiments

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/faults"
)

// urlCatcher is the run's Out: it keeps every line and sends the live
// metrics URL once the runner prints it.
type urlCatcher struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	once sync.Once
	url  chan string
}

func (c *urlCatcher) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for line := range strings.Lines(string(p)) {
		if _, u, ok := strings.Cut(strings.TrimSpace(line), "live metrics at "); ok {
			c.once.Do(func() { c.url <- u })
		}
	}
	return c.buf.Write(p)
}

func (c *urlCatcher) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

// faultActiveValue scrapes metricsURL and returns the value of
// llmchaos_fault_active for fault name; ok is false when the series is
// absent or the scrape failed.
func faultActiveValue(c *http.Client, metricsURL, name string) (v float64, ok bool) {
	resp, err := c.Get(metricsURL)
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "llmchaos_fault_active{") || !strings.Contains(line, `fault="`+name+`"`) {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if _, err := fmt.Sscan(line[i+1:], &v); err == nil {
			return v, true
		}
	}
	return 0, false
}

func TestRunObservesLiveMetricsAndServer(t *testing.T) {
	t.Parallel()
	skipShort(t)
	srv := newSSEServer(t)
	// The service also serves vLLM's metrics, for the server monitor.
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = io.WriteString(w, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"stub-model\"} 3\n"+
			"# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{model_name=\"stub-model\"} 0.25\n")
	})
	mux.Handle("/", srv.Config.Handler)
	svc := httptest.NewServer(mux)
	t.Cleanup(svc.Close)

	f := newFakeFault(t, "errors", nil)
	exp := testSpec(svc.URL, 3*time.Second, httpErrorFault("errors", 800*time.Millisecond, 700*time.Millisecond))
	out := &urlCatcher{url: make(chan string, 1)}
	opts := Options{
		RunDir: t.TempDir(), Out: out, hooks: fakeBuilds(map[string]faults.Fault{"errors": f}),
		Observe: ObserveOptions{MetricsListen: "127.0.0.1:0", Scrape: true, ScrapeInterval: 200 * time.Millisecond},
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	type result struct {
		o   *Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		o, err := runSpec(ctx, exp, opts)
		done <- result{o, err}
	}()

	var metricsURL string
	select {
	case metricsURL = <-out.url:
	case r := <-done:
		t.Fatalf("run ended (%v) before printing its live metrics URL:\n%s", r.err, out.String())
	}
	// Scrape the live endpoint while the run lasts: the fault's series is
	// 1 while the fake is injected (on both sides of the scrape), and 0
	// once it was undone.
	hc := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var sawOn, sawOff, sawBefore bool
	var r result
poll:
	for {
		select {
		case r = <-done:
			break poll
		case <-tick.C:
		}
		activeBefore := f.isActive()
		_, undoneBefore := f.counts()
		v, ok := faultActiveValue(hc, metricsURL, "errors")
		if !ok {
			continue
		}
		activeAfter := f.isActive()
		_, undoneAfter := f.counts()
		switch {
		case activeBefore && activeAfter && v == 1:
			sawOn = true
		case undoneBefore == 1 && v == 0:
			sawOff = true
		case !activeBefore && !activeAfter && undoneAfter == 0 && v == 1:
			// Not injected before the scrape nor after it. (Injected
			// during the scrape is no error: the runner sets the gauge
			// right after Inject; this failed CI once.)
			sawBefore = true
		}
	}
	if r.err != nil {
		t.Fatalf("Run: %v\n%s", r.err, out.String())
	}
	if !sawOn {
		t.Errorf("llmchaos_fault_active{fault=\"errors\"}: never 1 while the fault was injected\n%s", out.String())
	}
	if !sawOff {
		t.Errorf("llmchaos_fault_active{fault=\"errors\"}: never 0 after the fault was reverted\n%s", out.String())
	}
	if sawBefore {
		t.Errorf("llmchaos_fault_active{fault=\"errors\"}: 1 before the fault was injected")
	}
	if in, un := f.counts(); in != 1 || un != 1 {
		t.Errorf("fault: injected %d, undone %d times; want 1 and 1", in, un)
	}

	// The report carries the server's series, scraped from the service
	// (not from its proxy).
	got := map[string]float64{}
	for _, s := range r.o.Doc.Server {
		if len(s.Points) > 0 {
			got[s.Name] = s.Points[len(s.Points)-1][1]
		}
	}
	for name, want := range map[string]float64{"vllm:num_requests_running": 3, "vllm:kv_cache_usage_perc": 0.25} {
		if v, ok := got[name]; !ok || v != want {
			t.Errorf("server series %s: got %v (present %v), want %v; all: %+v", name, v, ok, want, r.o.Doc.Server)
		}
	}
	// The live endpoint is gone once Run returned.
	if _, err := hc.Get(metricsURL); err == nil {
		t.Errorf("GET %s after the run: answered, want the endpoint closed", metricsURL)
	}
}

func TestRunWithoutObserversStartsNone(t *testing.T) {
	t.Parallel()
	skipShort(t)
	srv := newSSEServer(t)
	out := &urlCatcher{url: make(chan string, 1)}
	o, err := runSpec(context.Background(), testSpec(srv.URL, 500*time.Millisecond), Options{RunDir: t.TempDir(), Out: out})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	if got := len(o.Doc.Server); got != 0 {
		t.Errorf("server series: got %d, want none without --metrics-listen or the monitor", got)
	}
	if s := out.String(); strings.Contains(s, "live metrics at") {
		t.Errorf("output mentions live metrics without --metrics-listen:\n%s", s)
	}
}
