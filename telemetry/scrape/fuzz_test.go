package scrape

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// FuzzParse checks that Parse never panics, yields only known names and
// engines, and
// never leaks the -Inf that the max fold starts from.
func FuzzParse(f *testing.F) {
	for _, s := range []string{vllmNew, vllmOld, "", "vllm:kv_cache_usage_perc 0.5\n", "vllm:num_requests_running{a=\"b\"} NaN\n",
		"# TYPE x histogram\nx_bucket{le=\"1\"} 1\n", "vllm:num_preemptions_total{",
		"llamacpp:requests_processing 2\n", "nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type=\"used\"} 1\nnv_trt_llm_kv_cache_block_metrics{kv_cache_block_type=\"max\"} 0\n"} {
		f.Add(s)
	}
	known := map[string]bool{}
	for _, n := range Names() {
		known[n] = true
	}
	f.Fuzz(func(t *testing.T, page string) {
		got, err := Parse(strings.NewReader(page))
		if err != nil {
			return
		}
		if !slices.Contains(Engines(), got.Engine) && got.Engine != EngineUnknown {
			t.Fatalf("Parse(%q) yielded engine %q", page, got.Engine)
		}
		for n, v := range got.Values {
			if !known[n] || n == Up {
				t.Fatalf("Parse(%q) yielded unknown name %q", page, n)
			}
			if n == KVCacheUsage && math.IsInf(v, -1) {
				t.Fatalf("Parse(%q): kv usage -Inf from an empty fold", page)
			}
		}
	})
}
