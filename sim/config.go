package sim

import "github.com/llmchaos/llmchaos/simcontract/simconfig"

// Config is one simulated replica's engine configuration. It is defined in
// simconfig, which the chaos side shares without importing the simulator.
type Config = simconfig.Config

// DefaultConfig returns the configuration of a Llama-3-8B replica on one
// H200 with vLLM's scheduler defaults (simconfig.Default).
func DefaultConfig() Config { return simconfig.Default() }

// Latency model names accepted in Config.Latency.
const (
	// LatencyProfile prices each engine step with the roofline Profile.
	LatencyProfile = simconfig.LatencyProfile
	// LatencyConstant gives every sequence exactly Config.TTFT and Config.ITL.
	LatencyConstant = simconfig.LatencyConstant
)

// Divergence modes (Config.Divergence); see simconfig.
const (
	DivergenceOff     = simconfig.DivergenceOff
	DivergencePreempt = simconfig.DivergencePreempt
	DivergenceBatch   = simconfig.DivergenceBatch
)

// Memory model defaults of DefaultConfig; see simconfig for their sources.
const (
	DefaultGPUMemory               = simconfig.DefaultGPUMemory
	DefaultWeightBytes             = simconfig.DefaultWeightBytes
	DefaultKVBytesPerToken         = simconfig.DefaultKVBytesPerToken
	DefaultBlockSize               = simconfig.DefaultBlockSize
	DefaultActivationBytesPerToken = simconfig.DefaultActivationBytesPerToken
)
