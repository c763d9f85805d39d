package sim

import "time"

// Config is one simulated replica's engine configuration. The field names are
// shared by the engine, its HTTP transport and the `llmchaos sim` command.
// Defaults live in DefaultConfig, never in validation.
type Config struct {
	Model       string        // served model name (--model)
	Latency     string        // "profile" or "constant" (--latency)
	TTFT        time.Duration // constant mode: time to first token when nothing queues (--ttft)
	ITL         time.Duration // constant mode: gap between tokens (--itl)
	Seed        int64         // seeds output text and lengths (--seed)
	MaxNumSeqs  int           // most sequences running at once (--max-num-seqs)
	MaxWaiting  int           // waiting queue bound; a full queue answers 429 (--max-waiting)
	MaxModelLen int           // prompt + max_tokens above this answers 400 (--max-model-len)

	// MaxBatchedTokens is the token budget of one step (chunked prefill).
	MaxBatchedTokens int

	// GPU memory model (DESIGN §5).
	GPUMemory      int64   // bytes of the (virtual) GPU (--gpu-memory)
	GPUUtilization float64 // share of GPUMemory the replica may use for weights + KV pool

	// MeanOutputTokens is the mean of the output length distribution used
	// when a request does not ask for ignore_eos; lengths are capped by max_tokens.
	MeanOutputTokens int
}
