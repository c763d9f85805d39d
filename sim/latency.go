package sim

import "time"

// Batch is what one engine step runs, as far as its cost is concerned.
type Batch struct {
	// PrefillTokens are prompt tokens (or, after a preemption, recomputed
	// tokens) whose KV entries the step computes.
	PrefillTokens int
	// DecodeTokens is the number of sequences that decode one token.
	DecodeTokens int
	// ContextTokens is the KV cache the step's attention reads: the sum over
	// the scheduled sequences of their context length after the step.
	ContextTokens int
}

// Tokens returns the tokens batched in the step.
func (b Batch) Tokens() int { return b.PrefillTokens + b.DecodeTokens }

// LatencyModel prices the engine's work, as llm-d-inference-sim's latency
// model does, but per continuous-batching step. Implementations must be pure
// (same input, same answer) so the engine stays deterministic.
type LatencyModel interface {
	// StepTime returns how long a step running b takes on the modelled GPU,
	// before the admin API's slowdown factor is applied.
	StepTime(b Batch) time.Duration
	// Paced reports, for models that give every sequence its own absolute
	// schedule instead of shared steps, the time from admission to the first
	// token and the gap between tokens; ok is false for step-priced models.
	Paced() (ttft, itl time.Duration, ok bool)
}

// Profile is a roofline model of one decoder-only transformer on one GPU: a
// step costs a fixed overhead plus the larger of its memory time (weights and
// the KV cache it reads, over the effective memory bandwidth) and its compute
// time (2 FLOPs per parameter per batched token, over the effective compute
// rate). Small decode batches are therefore bandwidth-bound, and prefill and
// large batches compute-bound, as on real hardware.
type Profile struct {
	Overhead        time.Duration // per step: scheduler, sampling, kernel launches
	WeightBytes     float64       // bytes of weights read once per step
	KVBytesPerToken float64       // bytes of KV cache read per context token
	Bandwidth       float64       // effective memory bandwidth, bytes/s
	FLOPsPerToken   float64       // compute per batched token
	ComputeRate     float64       // effective compute, FLOP/s
}

var _ LatencyModel = Profile{}

// DefaultProfile approximates Llama-3-8B (bf16) served by vLLM on one H200.
// Sources and derivation:
//   - H200 SXM datasheet: 4.8 TB/s HBM3e bandwidth, 989 TFLOP/s dense bf16.
//     We assume 80% of the bandwidth (3.84e12 B/s) and 50% of the compute
//     (4.95e14 FLOP/s) are reached, typical for well-tuned serving kernels.
//   - Llama-3-8B: 8.03e9 parameters → 16.06 GB of weights and
//     2 × 8.03e9 = 1.606e10 FLOPs per token; 131072 KV bytes per token.
//   - Overhead 1 ms per step for scheduling, sampling and launches.
//
// This gives ≈ 5.2 ms per decode step at batch 1 (≈ 190 tokens/s for a
// single stream), ≈ 14 ms per step for 256 sequences of 1k context, and
// ≈ 33 ms of prefill for a 1,000-token prompt. These are of the order
// commonly reported for vLLM serving Llama-3-8B on Hopper GPUs (single-stream
// decode of 6–7 ms per token on an H100, which has 0.7× the H200's
// bandwidth; TTFT of tens of ms for 1k-token prompts at low load), but the
// model is derived from the datasheet roofline above, not fitted to a
// specific benchmark run: an approximation for load testing, not a
// performance prediction.
func DefaultProfile() Profile {
	return Profile{
		Overhead:        time.Millisecond,
		WeightBytes:     float64(DefaultWeightBytes),
		KVBytesPerToken: float64(DefaultKVBytesPerToken),
		Bandwidth:       0.8 * 4.8e12,
		FLOPsPerToken:   2 * 8.03e9,
		ComputeRate:     0.5 * 989e12,
	}
}

// StepTime is overhead + max(memory time, compute time).
func (p Profile) StepTime(b Batch) time.Duration {
	memory := (p.WeightBytes + float64(b.ContextTokens)*p.KVBytesPerToken) / p.Bandwidth
	compute := float64(b.Tokens()) * p.FLOPsPerToken / p.ComputeRate
	return p.Overhead + time.Duration(max(memory, compute)*float64(time.Second))
}

// Paced reports that Profile prices shared steps.
func (p Profile) Paced() (ttft, itl time.Duration, ok bool) { return 0, 0, false }

// Constant gives every sequence exactly TTFT from admission to its first
// token and ITL between tokens, each sequence on its own absolute schedule
// (first token at admission + TTFT, token k at admission + TTFT + (k−1)·ITL),
// so that measured latencies equal the configured ones when nothing queues.
// The engine still honours MaxNumSeqs, the waiting queue and the KV cache.
type Constant struct {
	TTFT time.Duration
	ITL  time.Duration
}

var _ LatencyModel = Constant{}

// StepTime returns ITL: a paced model has no shared steps, so this only
// answers what one decode of any batch costs.
func (c Constant) StepTime(Batch) time.Duration { return c.ITL }

// Paced returns TTFT and ITL.
func (c Constant) Paced() (ttft, itl time.Duration, ok bool) { return c.TTFT, c.ITL, true }
