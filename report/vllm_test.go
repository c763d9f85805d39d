package report

import (
	"bytes"
	"encoding/json"
	"math"
	"path/filepath"
	"testing"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// TestWriteVLLM checks every field of vLLM's `bench serve` result that a
// run maps onto, by name and value, on a document built in this process
// and on the same document read back from its JSON report.
func TestWriteVLLM(t *testing.T) {
	built := synthRun(t, 3, 1, 500, recording.Tags{})
	built.Config = map[string]any{"model": "m", "api": "chat", "rate": json.Number("20"), "max_in_flight": json.Number("8"), "burstiness": json.Number("0.5")}
	path := filepath.Join(t.TempDir(), "run.json")
	if err := WriteFile(path, built); err != nil {
		t.Fatal(err)
	}
	read, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	for name, d := range map[string]*Document{"built": built, "read": read} {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteVLLM(&buf, d); err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, buf.String())
			}
			m := built.Metrics
			sum := built.Summary().Counts(recording.TagFilter{})
			want := map[string]any{
				"date": "20260314-150926", "label": "synthetic", "model_id": "m",
				"backend": "openai-chat", "endpoint_type": "openai-chat",
				"request_rate": 20.0, "burstiness": 0.5, "max_concurrency": 8.0,
				"duration":    built.DurationS,
				"num_prompts": 500.0, "completed": 490.0, "failed": 10.0,
				"total_input_tokens": float64(sum.InputTokens), "total_output_tokens": float64(sum.OutputTokens),
				"request_throughput":      built.Throughput.RequestsPerS,
				"output_throughput":       built.Throughput.OutputTokensPerS,
				"total_token_throughput":  built.Throughput.TotalTokensPerS,
				"request_goodput":         *built.Quality.GoodputPerS,
				"max_concurrent_requests": float64(built.Concurrency.Max),
				"mean_ttft_ms":            m["ttft_ms"].Mean, "median_ttft_ms": m["ttft_ms"].P50, "std_ttft_ms": m["ttft_ms"].StdDev, "p99_ttft_ms": m["ttft_ms"].P99,
				"p90_ttft_ms": m["ttft_ms"].P90, "p95_ttft_ms": m["ttft_ms"].P95,
				"mean_tpot_ms": m["tpot_ms"].Mean, "median_tpot_ms": m["tpot_ms"].P50, "std_tpot_ms": m["tpot_ms"].StdDev, "p99_tpot_ms": m["tpot_ms"].P99,
				"p90_tpot_ms": m["tpot_ms"].P90, "p95_tpot_ms": m["tpot_ms"].P95,
				"mean_itl_ms": m["itl_ms"].Mean, "median_itl_ms": m["itl_ms"].P50, "std_itl_ms": m["itl_ms"].StdDev, "p99_itl_ms": m["itl_ms"].P99,
				"p90_itl_ms": m["itl_ms"].P90, "p95_itl_ms": m["itl_ms"].P95,
				"mean_e2el_ms": m["e2e_ms"].Mean, "median_e2el_ms": m["e2e_ms"].P50, "std_e2el_ms": m["e2e_ms"].StdDev, "p99_e2el_ms": m["e2e_ms"].P99,
				"p90_e2el_ms": m["e2e_ms"].P90, "p95_e2el_ms": m["e2e_ms"].P95,
			}
			for k, w := range want {
				g, ok := got[k]
				if !ok {
					t.Errorf("%s missing", k)
					continue
				}
				gf, gok := g.(float64)
				wf, wok := w.(float64)
				if gok && wok {
					// A document read back holds its figures as saved.
					if math.Abs(gf-wf) > 1e-6*math.Max(1, math.Abs(wf)) {
						t.Errorf("%s = %v, want %v", k, gf, wf)
					}
					continue
				}
				if g != w {
					t.Errorf("%s = %v, want %v", k, g, w)
				}
			}
			for k := range got {
				if _, ok := want[k]; !ok {
					t.Errorf("unexpected field %s", k)
				}
			}
		})
	}
}

// TestWriteVLLMClosedLoop: a closed loop has no rate (vLLM's "inf"), its
// users are the concurrency cap, and without goodput SLOs
// request_goodput is null, as vLLM writes it.
func TestWriteVLLMClosedLoop(t *testing.T) {
	d := synthRun(t, 3, 1, 100, recording.Tags{})
	d.Config = map[string]any{"model": "m", "api": "completions", "concurrency": 16.0}
	d.Quality.GoodputPerS = nil
	got := vllmResult(d)
	for k, w := range map[string]any{"request_rate": "inf", "max_concurrency": int64(16), "request_goodput": nil, "backend": "openai", "endpoint_type": "openai", "burstiness": 1.0} {
		if got[k] != w {
			t.Errorf("%s = %v (%T), want %v (%T)", k, got[k], got[k], w, w)
		}
	}
}
