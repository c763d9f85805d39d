// Package scrape is the server-side monitor: during load and run it scrapes
// each target's /metrics every Options.Interval (2 s by default), recognises
// the inference engine behind it (vLLM, SGLang, llama.cpp, Hugging Face TGI
// or Triton with the TensorRT-LLM backend), extracts the series that show
// the server's state, and turns them into Samples on the run's clock, so
// reports can put the server's KV cache, batch and queue beside client
// latency and the fault windows.
//
// # Series
//
// Each scrape of an endpoint yields one Sample per name below that the page
// has, plus "up" (1 when the scrape succeeded, 0 when it did not: a killed
// replica shows as up 0, not as a gap). Every engine's series map onto the
// same names:
//
//	kv_cache_usage_perc      a share, 0–1; label sets folded by max
//	  vLLM                   vllm:kv_cache_usage_perc (before 0.10: vllm:gpu_cache_usage_perc)
//	  SGLang                 sglang:token_usage
//	  llama.cpp              llamacpp:kv_cache_usage_ratio
//	  TGI                    —
//	  Triton TensorRT-LLM    nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="fraction"}
//	                         (else its "used" / "max")
//	num_requests_running     in the running batch; label sets summed (so are all below)
//	  vLLM                   vllm:num_requests_running
//	  SGLang                 sglang:num_running_reqs
//	  llama.cpp              llamacpp:requests_processing
//	  TGI                    tgi_batch_current_size
//	  Triton TensorRT-LLM    nv_trt_llm_request_metrics{request_type="active"}
//	num_requests_waiting     queued
//	  vLLM                   vllm:num_requests_waiting
//	  SGLang                 sglang:num_queue_reqs
//	  llama.cpp              llamacpp:requests_deferred
//	  TGI                    tgi_queue_size
//	  Triton TensorRT-LLM    nv_trt_llm_request_metrics{request_type="waiting"}
//	num_preemptions_total    counter
//	  vLLM                   vllm:num_preemptions_total
//	  SGLang                 sglang:num_retracted_requests_total
//	  llama.cpp, TGI, Triton —
//	prompt_tokens_total      counter
//	  vLLM                   vllm:prompt_tokens_total
//	  SGLang                 sglang:prompt_tokens_total
//	  llama.cpp              llamacpp:prompt_tokens_total
//	  TGI                    tgi_request_input_length_sum
//	  Triton TensorRT-LLM    nv_llm_input_token_len_sum
//	generation_tokens_total  counter
//	  vLLM                   vllm:generation_tokens_total
//	  SGLang                 sglang:generation_tokens_total
//	  llama.cpp              llamacpp:tokens_predicted_total
//	  TGI                    tgi_request_generated_tokens_sum
//	  Triton TensorRT-LLM    nv_llm_output_token_len_sum
//
// KV cache usage is a share (0–1) in every engine: SGLang's token_usage is
// the share of its token pool in use, TensorRT-LLM's the share of KV blocks.
// SGLang's retractions are its preemptions (a running request sent back to
// the queue for lack of KV cache); llama.cpp, TGI and the TensorRT-LLM
// backend export no such count, so the series is absent. The token series
// are counters (TGI's and Triton's are the sums of their per-request
// histograms). Some llama.cpp builds do not export kv_cache_usage_ratio;
// the series is then absent.
//
// A page may carry several label sets of one series (one per model_name, or
// per engine with data parallelism): they are folded by max for KV cache
// usage (the fullest engine matters) and by sum for everything else. When
// both vLLM's new and old KV name are present, the new one wins.
//
// # Engines
//
// The page's engine is the first of vLLM, SGLang, llama.cpp, TGI and
// Triton TensorRT-LLM (Engines) with at least one series of the table on
// the page, and only that engine's series are read. A page that parses
// but has none is EngineUnknown: only its up series is recorded, and
// Options.OnEngine hears of it, so that the caller can say so once.
// Monitor.Engine tells which engine an endpoint was last seen to be.
//
// # Endpoints
//
// An endpoint is given as the load's base URL (http://host:8000/v1) or as a
// metrics URL. Unless its path already ends in /metrics, the path is
// replaced by /metrics, which is where vLLM, SGLang, llama-server, TGI and
// the simulator serve it (Triton serves it on its own port, 8002 by default:
// give that as a metrics URL).
// Samples carry the endpoint as given, so they join the load's Results on
// Tags.Endpoint.
//
// The page is read as the Prometheus text format (version 0.0.4), which
// all of them serve, with the parser of internal/promexpo.
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
