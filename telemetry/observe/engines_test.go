package observe

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fixedPage serves body as /metrics and signals each scrape.
func fixedPage(t *testing.T, body string, served chan<- struct{}) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		_, _ = io.WriteString(w, body)
		select {
		case served <- struct{}{}:
		default:
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestServerSeriesOtherEngines: a llama-server page becomes the report's
// series under vLLM's names, marked with its engine; a page of no known
// engine gets one warning however often it is scraped, and only up.
func TestServerSeriesOtherEngines(t *testing.T) {
	llama := make(chan struct{}, 1)
	other := make(chan struct{}, 1)
	l := fixedPage(t, "# TYPE llamacpp:requests_processing gauge\nllamacpp:requests_processing 2\n"+
		"# TYPE llamacpp:requests_deferred gauge\nllamacpp:requests_deferred 1\n"+
		"# TYPE llamacpp:tokens_predicted_total counter\nllamacpp:tokens_predicted_total 99\n", llama)
	u := fixedPage(t, "# TYPE go_goroutines gauge\ngo_goroutines 7\n", other)

	var mu sync.Mutex
	var warnings []string
	o, err := Start(context.Background(), Options{
		ScrapeTargets:  []string{l.URL + "/v1", u.URL + "/v1"},
		ScrapeInterval: 100 * time.Millisecond, // also the scrape timeout
		Warn: func(err error) {
			mu.Lock()
			defer mu.Unlock()
			warnings = append(warnings, err.Error())
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range []chan struct{}{llama, other, llama, other, llama, other} {
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatal("no scrape within 10 s")
		}
	}
	series := o.ServerSeries(time.Hour)
	if err := o.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	// A scrape that times out on a loaded machine warns too (once per
	// target, "scrape ..."): only the engine warnings count here.
	var unknown []string
	for _, w := range warnings {
		if strings.Contains(w, "no series of a known engine") {
			unknown = append(unknown, w)
		}
	}
	if len(unknown) != 1 || !strings.Contains(unknown[0], u.URL) || !strings.Contains(unknown[0], "llama.cpp") {
		t.Errorf("warnings = %q, want one for the unknown engine that names the known ones", warnings)
	}
	got := map[string]string{} // endpoint name → engine
	for _, s := range series {
		if s.Name != "up" { // only a scrape that timed out makes one
			got[s.Endpoint+" "+s.Name] = s.Engine
		}
	}
	want := map[string]string{
		l.URL + "/v1 vllm:num_requests_running":    "llama.cpp",
		l.URL + "/v1 vllm:num_requests_waiting":    "llama.cpp",
		l.URL + "/v1 vllm:generation_tokens_total": "llama.cpp",
	}
	for k, e := range want {
		if got[k] != e {
			t.Errorf("series %q: engine %q, want %q (all: %v)", k, got[k], e, got)
		}
	}
	for k := range got {
		if strings.HasPrefix(k, u.URL) {
			t.Errorf("series %q from the unknown engine's target", k)
		}
	}
	if len(got) != len(want) {
		t.Errorf("series %v, want %v", got, want)
	}
}
