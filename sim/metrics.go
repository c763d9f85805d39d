package sim

import (
	"errors"
	"fmt"

	"github.com/llmchaos/llmchaos/internal/promexpo"
)

// Histogram buckets as vLLM defines them (vllm/v1/metrics/loggers.py).
var (
	ttftBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5,
		0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	itlBuckets = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5,
		0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
	requestBuckets = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0,
		30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
)

// metrics are the engine's vLLM-named Prometheus series for one model.
type metrics struct {
	running, waiting, kvUsage *promexpo.Gauge
	preemptions               *promexpo.Counter
	promptTokens, genTokens   *promexpo.Counter
	success                   [FinishLength + 1]*promexpo.Counter
	ttft, itl, e2e, queue     *promexpo.Histogram
}

// newMetrics creates the series and registers them on reg when it is not
// nil (a nil registry keeps them and exports them nowhere).
func newMetrics(reg *promexpo.Registry, model string) (*metrics, error) {
	labels := map[string]string{"model_name": model}
	var errs []error
	keep := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	gauge := func(name, help string) *promexpo.Gauge {
		g, err := reg.Gauge(promexpo.Opts{Name: name, Help: help, ConstLabels: labels})
		keep(err)
		return g
	}
	counter := func(name, help string) *promexpo.Counter {
		c, err := reg.Counter(promexpo.Opts{Name: name, Help: help, ConstLabels: labels})
		keep(err)
		return c
	}
	histogram := func(name, help string, buckets []float64) *promexpo.Histogram {
		h, err := reg.Histogram(promexpo.HistogramOpts{Opts: promexpo.Opts{Name: name, Help: help, ConstLabels: labels},
			Buckets: buckets})
		keep(err)
		return h
	}
	m := &metrics{
		running:      gauge("vllm:num_requests_running", "Number of requests in model execution batches."),
		waiting:      gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed."),
		kvUsage:      gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage."),
		preemptions:  counter("vllm:num_preemptions_total", "Cumulative number of preemption from the engine."),
		promptTokens: counter("vllm:prompt_tokens_total", "Number of prefill tokens processed."),
		genTokens:    counter("vllm:generation_tokens_total", "Number of generation tokens processed."),
		ttft:         histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", ttftBuckets),
		itl:          histogram("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", itlBuckets),
		e2e:          histogram("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", requestBuckets),
		queue:        histogram("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", requestBuckets),
	}
	success, err := reg.CounterVec(promexpo.Opts{
		Name: "vllm:request_success_total", Help: "Count of successfully processed requests.", ConstLabels: labels,
	}, "finished_reason")
	keep(err)
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("register metrics: %w", err)
	}
	m.success[FinishStop] = success.WithLabelValues(FinishStop.String())
	m.success[FinishLength] = success.WithLabelValues(FinishLength.String())
	return m, nil
}
