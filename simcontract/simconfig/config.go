package simconfig

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Memory model defaults (DESIGN §5). Sources:
//   - H200 SXM: 141 GB of HBM3e (NVIDIA H200 datasheet); the simulator uses
//     141 GiB, the figure the --gpu-memory flag defaults to.
//   - Llama-3-8B: 8.03 B parameters in bf16 (2 bytes each) ≈ 16.06 GB of
//     weights (Meta's model card).
//   - KV cache bytes per token for Llama-3-8B: 2 (K and V) × 32 layers × 8 KV
//     heads (grouped-query attention) × 128 head dim × 2 bytes (bf16) = 131072.
//   - Block size 16 tokens and gpu_memory_utilization 0.9 are vLLM's defaults.
const (
	// DefaultGPUMemory is the simulated device size: one H200 (141 GiB).
	DefaultGPUMemory int64 = 141 << 30
	// DefaultWeightBytes is Llama-3-8B in bf16: 8.03e9 parameters × 2 bytes.
	DefaultWeightBytes int64 = 16_060_000_000
	// DefaultKVBytesPerToken is Llama-3-8B's KV cache per token:
	// 2 × 32 layers × 8 KV heads × 128 dim × 2 bytes.
	DefaultKVBytesPerToken int64 = 2 * 32 * 8 * 128 * 2
	// DefaultBlockSize is vLLM's KV cache block size in tokens.
	DefaultBlockSize = 16
	// DefaultActivationBytesPerToken is the transient activation memory one
	// batched token needs during a step: 1 MiB. It is a round figure of the
	// right order for Llama-3-8B (the sampled token's fp32 logits alone are
	// 128256 × 4 B ≈ 0.5 MiB, plus MLP intermediates of 14336 × 2 × 2 B per
	// token and attention workspace), chosen so that a large prefill step
	// (2,048–8,192 batched tokens) needs 2–8 GiB and a decode step of 256
	// sequences needs 256 MiB, against ≈ 14 GiB left free by a 0.9 utilisation
	// of 141 GiB.
	DefaultActivationBytesPerToken int64 = 1 << 20
)

// Config is one simulated replica's engine configuration. The field names are
// shared by the engine, its HTTP transport and the `llmchaos sim` command.
// Defaults live in Default, never in validation.
type Config struct {
	Model       string        // served model name (--model)
	Latency     string        // "profile" or "constant" (--latency)
	TTFT        time.Duration // constant mode: time to first token when nothing queues (--ttft)
	ITL         time.Duration // constant mode: gap between tokens (--itl)
	Seed        int64         // seeds output text and lengths (--seed)
	MaxNumSeqs  int           // most sequences running at once (--max-num-seqs)
	MaxWaiting  int           // waiting queue bound; a full queue answers 429 (--max-waiting)
	MaxModelLen int           // prompt + max_tokens above this answers 400 (--max-model-len)

	// Divergence says what makes a sequence's output differ from its
	// deterministic greedy answer (--divergence): DivergenceOff (""),
	// DivergencePreempt (a preempted sequence's recomputation takes
	// another continuation) or DivergenceBatch (at near-tie positions
	// the batch size decides the token, as kernels that are not batch
	// invariant do).
	Divergence string
	// DivergenceMinBatch is, in DivergenceBatch mode, the smallest batch
	// whose numerics differ from a lone sequence's
	// (--divergence-min-batch): a token generated in a smaller batch is
	// the reference one, as kernels that keep one reduction order up to a
	// batch size do. Default 2: any batch but a lone sequence.
	DivergenceMinBatch int

	// MaxBatchedTokens is the token budget of one step (chunked prefill).
	MaxBatchedTokens int

	// GPU memory model (DESIGN §5).
	GPUMemory      int64   // bytes of the (virtual) GPU (--gpu-memory)
	GPUUtilization float64 // share of GPUMemory the replica may use for weights + KV pool

	// MeanOutputTokens is the mean of the output length distribution used
	// when a request does not ask for ignore_eos; lengths are capped by max_tokens.
	MeanOutputTokens int

	// WeightBytes is the model's weights, reserved on the device at start.
	WeightBytes int64
	// KVBytesPerToken is the KV cache one token of context occupies.
	KVBytesPerToken int64
	// BlockSize is the number of tokens in one KV cache block (paged attention).
	BlockSize int
	// ActivationBytesPerToken is the transient memory each token batched in a
	// step needs on top of weights and KV cache; a step whose need exceeds the
	// device's free memory kills the replica as a CUDA out-of-memory would.
	ActivationBytesPerToken int64
}

// Default returns the configuration of a Llama-3-8B replica on one
// H200 with vLLM's scheduler defaults.
func Default() Config {
	return Config{
		Model:                   "llmchaos-sim",
		Latency:                 LatencyProfile,
		TTFT:                    50 * time.Millisecond,
		ITL:                     10 * time.Millisecond,
		Seed:                    1,
		MaxNumSeqs:              256,  // vLLM's long-standing --max-num-seqs default
		MaxWaiting:              1024, // vLLM has no bound; ours makes overload answer 429
		MaxModelLen:             8192, // Llama-3-8B's context window
		MaxBatchedTokens:        8192, // vLLM's chunked-prefill budget for large GPUs
		GPUMemory:               DefaultGPUMemory,
		GPUUtilization:          0.9, // vLLM's --gpu-memory-utilization default
		MeanOutputTokens:        128,
		DivergenceMinBatch:      2,
		WeightBytes:             DefaultWeightBytes,
		KVBytesPerToken:         DefaultKVBytesPerToken,
		BlockSize:               DefaultBlockSize,
		ActivationBytesPerToken: DefaultActivationBytesPerToken,
	}
}

// Divergence modes (Config.Divergence).
const (
	DivergenceOff     = ""
	DivergencePreempt = "preempt"
	DivergenceBatch   = "batch"
)

// Migration modes of the simulator's router (llmchaos sim --router
// --migrate): how a stream whose replica died continues on another.
const (
	MigrateOff       = ""
	MigrateClean     = "clean"     // from the token it reached: the same answer
	MigrateDuplicate = "duplicate" // a span early: the client gets it twice
	MigrateDrop      = "drop"      // a span late: the client never gets it
)

// Latency model names accepted in Config.Latency.
const (
	// LatencyProfile prices each engine step with the roofline Profile.
	LatencyProfile = "profile"
	// LatencyConstant gives every sequence exactly Config.TTFT and Config.ITL.
	LatencyConstant = "constant"
)

// Validate reports every problem of c at once. It fills in nothing.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Model == "" {
		bad("model: empty name")
	}
	switch c.Latency {
	case LatencyProfile:
	case LatencyConstant:
		if c.TTFT < 0 || c.ITL < 0 {
			bad("latency constant: ttft %v and itl %v must not be negative", c.TTFT, c.ITL)
		}
	default:
		bad("latency: %q is not %q or %q", c.Latency, LatencyProfile, LatencyConstant)
	}
	switch c.Divergence {
	case DivergenceOff, DivergencePreempt, DivergenceBatch:
	default:
		bad("divergence: %q is not %q, %q or empty (off)", c.Divergence, DivergencePreempt, DivergenceBatch)
	}
	if c.DivergenceMinBatch < 2 {
		bad("divergence-min-batch: %d, need at least 2 (a lone sequence is the reference)", c.DivergenceMinBatch)
	}
	if c.MaxNumSeqs < 1 {
		bad("max-num-seqs: %d, need at least 1", c.MaxNumSeqs)
	}
	if c.MaxWaiting < 0 {
		bad("max-waiting: %d must not be negative", c.MaxWaiting)
	}
	if c.MaxModelLen < 2 {
		bad("max-model-len: %d, need at least 2", c.MaxModelLen)
	}
	if c.MaxBatchedTokens < 1 {
		bad("max batched tokens: %d, need at least 1", c.MaxBatchedTokens)
	}
	if c.GPUMemory <= 0 {
		bad("gpu-memory: %d bytes, need more than 0", c.GPUMemory)
	}
	if !(c.GPUUtilization > 0 && c.GPUUtilization <= 1) || math.IsNaN(c.GPUUtilization) {
		bad("gpu utilization: %v is not in (0, 1]", c.GPUUtilization)
	}
	if c.MeanOutputTokens < 1 {
		bad("mean output tokens: %d, need at least 1", c.MeanOutputTokens)
	}
	if c.WeightBytes < 0 {
		bad("weight bytes: %d must not be negative", c.WeightBytes)
	}
	if c.KVBytesPerToken < 1 {
		bad("KV bytes per token: %d, need at least 1", c.KVBytesPerToken)
	}
	if c.BlockSize < 1 {
		bad("block size: %d, need at least 1", c.BlockSize)
	}
	if c.ActivationBytesPerToken < 0 {
		bad("activation bytes per token: %d must not be negative", c.ActivationBytesPerToken)
	}
	return errors.Join(errs...)
}
