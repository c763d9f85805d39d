// Package sim is the engine of llmchaos's vLLM-like simulator, the system
// under test that runs anywhere without a GPU. Its HTTP transport lives in
// sim/server; this package knows nothing of HTTP.
//
// # Engine
//
// Engine is vLLM's continuous batching as a pure state machine on an engine
// clock (a time.Duration the caller advances; nothing sleeps):
//
//   - a waiting queue bounded by Config.MaxWaiting (full: ErrQueueFull, 429);
//   - at most Config.MaxNumSeqs running sequences;
//   - per step a budget of Config.MaxBatchedTokens tokens: every running
//     sequence decodes one token or takes its next prefill chunk (chunked
//     prefill), then waiting sequences are admitted while budget, slots and
//     KV blocks allow;
//   - a paged KV cache of Config.BlockSize-token blocks; a sequence takes
//     blocks as it grows, and when a step cannot get one the newest running
//     sequence is preempted (recompute: its blocks are freed and it goes back
//     to the front of the queue), counted in vllm:num_preemptions_total;
//   - prompt + max_tokens above Config.MaxModelLen: *ContextLengthError (400).
//
// Live drives an Engine on the wall clock with one goroutine (Live.Run).
// Consumers read a Stream's progress without locks and hear of it in one of
// two ways: on the stream's Ready channel, or through a sink
// (Stream.SetSink) that Run calls on its own goroutine, after each Advance
// and outside the engine's lock, for every stream that published
// (Engine.TakePublished collects each once, allocating nothing per token).
// One wake-up of Run thus hands a whole step's tokens to their consumers,
// without a goroutine wake-up per stream; a sink must never block.
// Engine.Advance returns when the next event is due, so tests step through
// virtual time event by event. The same Config.Seed and the same calls give
// the same tokens at the same engine times.
//
// # Latency models
//
// A LatencyModel prices the work. Profile ("profile", the default) is a
// roofline of Llama-3-8B on one H200: per step 1 ms of overhead plus the
// larger of memory time (16.06 GB of weights plus 131072 bytes per context
// token over 3.84 TB/s) and compute time (1.606e10 FLOPs per batched token
// over 4.95e14 FLOP/s); DefaultProfile documents the sources. Constant
// ("constant") gives each sequence its own absolute schedule: first token at
// admission + Config.TTFT, then one every Config.ITL, exactly, when nothing
// queues; MaxNumSeqs, the queue and the KV cache still apply. A request
// admitted on arrival counts from Request.Arrival, so the transport's parse
// time does not show. It is the ground truth the load generator is checked
// against. The admin slowdown factor multiplies every step time, TTFT and ITL.
//
// # GPU memory
//
// The replica runs on a Memory: a virtual GPU ledger shared with other
// processes (simcontract/vgpu) or NewLocalMemory. As vLLM, it reserves its weights
// and its whole KV pool at start, sized
//
//	blocks = (total × GPUUtilization − WeightBytes) / (KVBytesPerToken × BlockSize)
//
// (141 GiB × 0.9 − 16.06 GB over 131072 × 16 bytes: 57,314 blocks, 917,024
// tokens), and fails with *StartError, naming need, free and total, when
// fewer bytes are free. Afterwards about (1 − GPUUtilization) of the device
// stays free (14.1 GiB of 141 GiB). Each step needs ActivationBytesPerToken (1 MiB) of transient
// memory per batched token (a decode step of 256 sequences: 256 MiB; a
// prefill step of 8,192 tokens: 8 GiB), checked against Memory.Free, which
// the engine re-reads at most every 100 ms of engine time and always right
// before it gives up. When the step does not fit the engine dies with an
// *OOMError (worded like PyTorch's CUDA out-of-memory error, with the
// numbers), every stream ends with FinishError, and the transport exits.
// A balloon that takes the free headroom kills a replica under load this way.
//
// # Token counting
//
// The simulator does not tokenize; it counts, cheaply and deterministically:
//
//	CountTokens(s)       = ceil(len(s) / 4), len in UTF-8 bytes; 0 for ""
//	chat prompt tokens   = Σ over messages (CountTokens(content) + 4)
//	completion prompt    = CountTokens(prompt)
//
// The 4 per chat message stands for the chat template (ChatTemplateTokens).
// The load generator builds prompts to a target token count with the same
// rule. Output tokens are words drawn from a 256-word vocabulary by a
// counter-based hash of the sequence's seed, each exactly four bytes
// (" cat"), so CountTokens of a completion equals its token count. The seed
// is a function of the prompt's text and the request's seed when it gives
// one, or of the prompt alone at temperature 0 (greedy), so such answers are
// the same on every replica, as a model's greedy output is; other requests
// draw one from Config.Seed. Output length is max_tokens with ignore_eos;
// otherwise it is geometric with mean Config.MeanOutputTokens, at least
// min_tokens, and capped by max_tokens (finish_reason "length" when capped,
// "stop" otherwise).
//
// Config.Divergence makes answers leave that reference as real engines do:
// "preempt" gives a sequence preempted and recomputed another continuation
// from the token it had reached; "batch" lets the batch size decide the
// token at near-tie positions (3 % of them), as kernels that are not batch
// invariant do, so the same prompt answers differently under load;
// Config.DivergenceMinBatch is the smallest batch that does.
package sim
