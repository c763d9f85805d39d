package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// vllmDateLayout is how vLLM's `bench serve` writes the result's date.
const vllmDateLayout = "20060102-150405"

// WriteVLLM writes d as the result JSON of vLLM's `bench serve`
// (benchmark_serving.py's --save-result), with its field names, so that
// dashboards and scripts that read vLLM results read a run unchanged:
//
//   - duration (s), completed (ok requests), failed (every other scheduled
//     request), num_prompts (scheduled), total_input_tokens and
//     total_output_tokens (over ok requests);
//   - request_throughput, output_throughput, total_token_throughput (per
//     second of the run), request_goodput (null without --goodput), and
//     max_concurrent_requests (the most requests in flight);
//   - mean_, median_, std_ and p99_ (vLLM's default percentile, with p90 and
//     p95 as `--metric-percentiles 90,95,99` would add) of ttft_ms, tpot_ms,
//     itl_ms and e2el_ms;
//   - the run's description: date, label (the run's name), model_id,
//     backend and endpoint_type (openai-chat or openai), request_rate
//     ("inf" for an unpaced or closed loop), burstiness and max_concurrency
//     (the client's cap; null without one).
//
// vLLM's per-request arrays (ttfts, itls, input_lens, generated_texts, …)
// are not written: a run report keeps distributions, not every request.
func WriteVLLM(w io.Writer, d *Document) error {
	b, err := json.MarshalIndent(vllmResult(d), "", "  ")
	if err != nil {
		return fmt.Errorf("vllm result: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// vllmResult maps d onto vLLM's result fields.
func vllmResult(d *Document) map[string]any {
	m := map[string]any{
		"date":                    d.StartedAt.UTC().Format(vllmDateLayout),
		"label":                   d.Name,
		"duration":                d.DurationS,
		"num_prompts":             d.Requests.Scheduled,
		"completed":               d.Requests.OK,
		"failed":                  d.Requests.Scheduled - d.Requests.OK,
		"request_throughput":      d.Throughput.RequestsPerS,
		"output_throughput":       d.Throughput.OutputTokensPerS,
		"total_token_throughput":  d.Throughput.TotalTokensPerS,
		"request_goodput":         nil,
		"max_concurrent_requests": d.Concurrency.Max,
	}
	if g := d.Quality.GoodputPerS; g != nil {
		m["request_goodput"] = *g
	}
	in, out := d.tokenTotals()
	m["total_input_tokens"], m["total_output_tokens"] = in, out
	for _, x := range []struct {
		name string
		s    Stats
	}{{"ttft", d.Metrics["ttft_ms"]}, {"tpot", d.Metrics["tpot_ms"]}, {"itl", d.Metrics["itl_ms"]}, {"e2el", d.Metrics["e2e_ms"]}} {
		m["mean_"+x.name+"_ms"] = x.s.Mean
		m["median_"+x.name+"_ms"] = x.s.P50
		m["std_"+x.name+"_ms"] = x.s.StdDev
		m["p90_"+x.name+"_ms"] = x.s.P90
		m["p95_"+x.name+"_ms"] = x.s.P95
		m["p99_"+x.name+"_ms"] = x.s.P99
	}
	cfg := d.Config
	m["model_id"] = cfg["model"]
	m["backend"], m["endpoint_type"] = "openai-chat", "openai-chat"
	if api, _ := cfg["api"].(string); api == string(workload.APICompletions) {
		m["backend"], m["endpoint_type"] = "openai", "openai"
	}
	m["request_rate"] = "inf"
	if r, ok := configNumber(cfg["rate"]); ok && !math.IsInf(r, 0) {
		m["request_rate"] = r
	}
	m["burstiness"] = 1.0
	if b, ok := configNumber(cfg["burstiness"]); ok && b > 0 {
		m["burstiness"] = b
	}
	m["max_concurrency"] = nil
	for _, k := range []string{"concurrency", "max_in_flight"} {
		if n, ok := configNumber(cfg[k]); ok && n > 0 {
			m["max_concurrency"] = int64(n)
		}
	}
	return m
}

// configNumber reads a number of a configuration record: a json.Number in
// a document built in this process, a float64 in one read from a file.
func configNumber(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	}
	return 0, false
}

// tokenTotals returns the input and output tokens of the ok requests: the
// recorded counts when the document has its run, else what its throughput
// and duration give.
func (d *Document) tokenTotals() (in, out int64) {
	if s := d.Summary(); s != nil {
		c := s.Counts(recording.TagFilter{})
		return c.InputTokens, c.OutputTokens
	}
	return int64(math.Round(d.Throughput.InputTokensPerS * d.DurationS)), int64(math.Round(d.Throughput.OutputTokensPerS * d.DurationS))
}
