// Package scrape is the server-side monitor: during load and run it scrapes
// each target's /metrics every Options.Interval (2 s by default), extracts
// the vLLM series that show the server's state, and turns them into Samples
// on the run's clock, so reports can put the server's KV cache, batch and
// queue beside client latency and the fault windows.
//
// # Series
//
// Each scrape of an endpoint yields one Sample per name below that the page
// has, plus "up" (1 when the scrape succeeded, 0 when it did not: a killed
// replica shows as up 0, not as a gap).
//
//	name                   from                                     aggregated over label sets
//	kv_cache_usage_perc    vllm:kv_cache_usage_perc (0–1)           max (the fullest engine matters)
//	                       or vllm:gpu_cache_usage_perc (vLLM < 0.10, same scale)
//	num_requests_running   vllm:num_requests_running                sum
//	num_requests_waiting   vllm:num_requests_waiting                sum
//	num_preemptions_total  vllm:num_preemptions_total (counter)     sum
//
// A page may carry several label sets of one series (one per model_name, or
// per engine with data parallelism): they are folded as the table says.
// When both the new and the old KV name are present, the new one wins.
//
// # Endpoints
//
// An endpoint is given as the load's base URL (http://host:8000/v1) or as a
// metrics URL. Unless its path already ends in /metrics, the path is
// replaced by /metrics, which is where vLLM and the simulator serve it.
// Samples carry the endpoint as given, so they join the load's Results on
// Tags.Endpoint.
//
// The page is read as the Prometheus text format (version 0.0.4), which
// vLLM serves, with github.com/prometheus/common/expfmt.
//
// # Ownership
//
// Run works in the caller's goroutine. Each tick scrapes every endpoint at
// once, in one goroutine per endpoint that the tick waits for, each scrape
// bounded by Options.Timeout (a frozen replica delays nobody else), and
// skips ticks missed meanwhile. Samples are then delivered to
// Options.OnSample from Run's goroutine, endpoints in the order given and in
// time order per endpoint, and kept in a ring of Options.MaxSamples (oldest
// dropped first, counted in Stats). Only the lines of the series above are
// parsed, so a scrape of a full vLLM page costs about 0.15 ms
// (BenchmarkParse).
package scrape
