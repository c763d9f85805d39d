package scrape

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestParseEngines reads the recorded page of each engine in testdata
// (written from the engines' documented metric names) and checks that
// its engine is recognised and its series land in the common names.
func TestParseEngines(t *testing.T) {
	tests := []struct {
		file   string
		engine string
		want   map[string]float64
	}{
		{"llamacpp.prom", EngineLlamaCpp, map[string]float64{
			KVCacheUsage: 0.42, RequestsRunning: 2, RequestsWaiting: 3, PromptTokens: 6886, GenerationTokens: 3469}},
		{"sglang.prom", EngineSGLang, map[string]float64{
			KVCacheUsage: 0.61, RequestsRunning: 202, RequestsWaiting: 2830, Preemptions: 50,
			PromptTokens: 8.125e6, GenerationTokens: 7.55e6}},
		{"tgi.prom", EngineTGI, map[string]float64{
			RequestsRunning: 8, RequestsWaiting: 5, PromptTokens: 31744, GenerationTokens: 63488}},
		{"triton-trtllm.prom", EngineTriton, map[string]float64{
			KVCacheUsage: 0.375, RequestsRunning: 12, RequestsWaiting: 6, PromptTokens: 61440, GenerationTokens: 15360}},
		{"unknown.prom", EngineUnknown, map[string]float64{}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = f.Close() }()
			got, err := Parse(f)
			if err != nil {
				t.Fatal(err)
			}
			if got.Engine != tt.engine {
				t.Errorf("engine: got %q, want %q", got.Engine, tt.engine)
			}
			if fmt.Sprint(got.Values) != fmt.Sprint(tt.want) {
				t.Errorf("values:\n got %v\nwant %v", got.Values, tt.want)
			}
		})
	}
}

func TestParseEngineRules(t *testing.T) {
	tests := []struct {
		name   string
		page   string
		engine string
		want   map[string]float64
	}{
		{"vLLM page", vllmNew, EngineVLLM, map[string]float64{
			KVCacheUsage: 0.75, RequestsRunning: 5, RequestsWaiting: 7, Preemptions: 5}},
		{"Triton without fraction: used / max",
			`nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="used",model="m"} 30
nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="max",model="m"} 120
`, EngineTriton, map[string]float64{KVCacheUsage: 0.25}},
		{"Triton, max 0: no ratio",
			`nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="used"} 30
nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="max"} 0
`, EngineTriton, map[string]float64{}},
		{"Triton fraction wins over used / max",
			`nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="used"} 30
nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="max"} 120
nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="fraction"} 0.5
`, EngineTriton, map[string]float64{KVCacheUsage: 0.5}},
		{"vLLM wins over another engine on one page, whose series are not mixed in",
			"llamacpp:requests_deferred 9\nvllm:num_requests_running 1\n", EngineVLLM, map[string]float64{RequestsRunning: 1}},
		{"llama.cpp without kv_cache_usage_ratio", "llamacpp:requests_processing 1\nllamacpp:requests_deferred 0\n",
			EngineLlamaCpp, map[string]float64{RequestsRunning: 1, RequestsWaiting: 0}},
		{"empty page", "", EngineUnknown, map[string]float64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(strings.NewReader(tt.page))
			if err != nil {
				t.Fatal(err)
			}
			if got.Engine != tt.engine || fmt.Sprint(got.Values) != fmt.Sprint(tt.want) {
				t.Errorf("got %q %v, want %q %v", got.Engine, got.Values, tt.engine, tt.want)
			}
		})
	}
}

// TestMonitorRecognisesEngines scrapes one httptest server per recorded
// page with the real monitor: each endpoint's engine is recognised and
// reported once through OnEngine, its series become samples, and the
// unknown page yields only up.
func TestMonitorRecognisesEngines(t *testing.T) {
	files := []string{"llamacpp.prom", "sglang.prom", "tgi.prom", "triton-trtllm.prom", "unknown.prom"}
	var endpoints []string
	byEndpoint := map[string]string{}
	for _, f := range files {
		body, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		srv := page(t, string(body), http.StatusOK)
		ep := srv.URL + "/v1"
		endpoints = append(endpoints, ep)
		byEndpoint[ep] = f
	}
	var mu sync.Mutex
	heard := map[string][]string{}
	m, err := New(Options{Endpoints: endpoints, Now: func() time.Duration { return time.Second },
		OnEngine: func(ep, engine string) {
			mu.Lock()
			defer mu.Unlock()
			heard[ep] = append(heard[ep], engine)
		}})
	if err != nil {
		t.Fatal(err)
	}
	var samples []Sample
	for range 3 {
		samples = append(samples, m.ScrapeOnce(t.Context())...)
	}
	want := map[string]string{"llamacpp.prom": EngineLlamaCpp, "sglang.prom": EngineSGLang, "tgi.prom": EngineTGI,
		"triton-trtllm.prom": EngineTriton, "unknown.prom": EngineUnknown}
	names := map[string]map[string]bool{}
	for _, s := range samples {
		f := byEndpoint[s.Endpoint]
		if names[f] == nil {
			names[f] = map[string]bool{}
		}
		names[f][s.Name] = true
	}
	mu.Lock()
	defer mu.Unlock()
	for ep, f := range byEndpoint {
		if got := m.Engine(ep); got != want[f] {
			t.Errorf("%s: Engine() = %q, want %q", f, got, want[f])
		}
		if got := heard[ep]; len(got) != 1 || got[0] != want[f] {
			t.Errorf("%s: OnEngine heard %q over 3 scrapes, want once %q", f, got, want[f])
		}
	}
	for _, tt := range []struct {
		file  string
		names string
	}{
		{"llamacpp.prom", "generation_tokens_total kv_cache_usage_perc num_requests_running num_requests_waiting prompt_tokens_total up"},
		{"sglang.prom", "generation_tokens_total kv_cache_usage_perc num_preemptions_total num_requests_running num_requests_waiting prompt_tokens_total up"},
		{"tgi.prom", "generation_tokens_total num_requests_running num_requests_waiting prompt_tokens_total up"},
		{"triton-trtllm.prom", "generation_tokens_total kv_cache_usage_perc num_requests_running num_requests_waiting prompt_tokens_total up"},
		{"unknown.prom", "up"},
	} {
		var got []string
		for n := range names[tt.file] {
			got = append(got, n)
		}
		if g := strings.Join(slices.Sorted(slices.Values(got)), " "); g != tt.names {
			t.Errorf("%s: sample names %q, want %q", tt.file, g, tt.names)
		}
	}
}
