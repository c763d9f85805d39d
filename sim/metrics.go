package sim

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
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
	running, waiting, kvUsage prometheus.Gauge
	preemptions               prometheus.Counter
	promptTokens, genTokens   prometheus.Counter
	success                   [FinishLength + 1]prometheus.Counter
	ttft, itl, e2e, queue     prometheus.Observer
}

// newMetrics creates the series and registers them on reg when it is not nil.
func newMetrics(reg prometheus.Registerer, model string) (*metrics, error) {
	labels := prometheus.Labels{"model_name": model}
	gauge := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: labels})
	}
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: labels})
	}
	histogram := func(name, help string, buckets []float64) prometheus.Histogram {
		return prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets, ConstLabels: labels})
	}
	success := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "vllm:request_success_total", Help: "Count of successfully processed requests.", ConstLabels: labels,
	}, []string{"finished_reason"})
	ttft := histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", ttftBuckets)
	itl := histogram("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", itlBuckets)
	e2e := histogram("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", requestBuckets)
	queue := histogram("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", requestBuckets)
	m := &metrics{
		running:      gauge("vllm:num_requests_running", "Number of requests in model execution batches."),
		waiting:      gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed."),
		kvUsage:      gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage."),
		preemptions:  counter("vllm:num_preemptions_total", "Cumulative number of preemption from the engine."),
		promptTokens: counter("vllm:prompt_tokens_total", "Number of prefill tokens processed."),
		genTokens:    counter("vllm:generation_tokens_total", "Number of generation tokens processed."),
		ttft:         ttft,
		itl:          itl,
		e2e:          e2e,
		queue:        queue,
	}
	m.success[FinishStop] = success.WithLabelValues(FinishStop.String())
	m.success[FinishLength] = success.WithLabelValues(FinishLength.String())
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.running, m.waiting, m.kvUsage, m.preemptions,
		m.promptTokens, m.genTokens, success, ttft, itl, e2e, queue} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register metrics: %w", err)
		}
	}
	return m, nil
}
