package workload

import (
	"fmt"
	"strings"
	"time"
)

// Preset is a named, documented traffic class: a workload and a default
// load shape. The user's flags go on top of both (Config.Overlay,
// ArrivalConfig.Overlay); the run's duration or request count comes from the
// user, never from a preset.
type Preset struct {
	Name        string
	Description string
	Workload    Config
	Arrival     ArrivalConfig
}

// Presets returns the built-in presets, freshly made, in the order chat,
// batch, completion, agent.
//
// Their numbers, and where they come from:
//
// chat — interactive conversation. Lengths follow the conversation service
// of the Azure LLM inference trace 2023 (published with the Splitwise paper,
// ISCA 2024), whose median prompt is about 1020 tokens and median output
// about 129: prompt lognormal(median 1020, σ 0.8) capped at 6144, output
// lognormal(median 129, σ 0.8) capped at 1024, so prompt + output stays
// under 8192 (Llama-3-8B's context, vLLM's default max_model_len for it).
// The σ values are our choice, to give the heavy right tail production
// traces show. Arrivals: Poisson (vLLM bench's default, burstiness 1) at
// 10 req/s.
//
// batch — offline, throughput-oriented generation (summaries, synthetic
// data). Prompt normal(1024, sd 128), vLLM bench's default random input
// length; output fixed at 1024 tokens with ignore_eos so that every request
// decodes the same long answer and decode throughput dominates. Load: a
// closed loop of 64 concurrent requests with no think time, the way batch
// jobs run a worker pool and GuideLLM's throughput profile saturates a
// server.
//
// completion — code completion as in an editor. Lengths follow the coding
// service of the same Azure 2023 trace (Splitwise: median prompt about 1500
// tokens, median output about 13): prompt lognormal(median 1500, σ 0.6)
// capped at 6144, output lognormal(median 13, σ 0.9) capped at 256, on the
// completions API. Poisson at 50 req/s (many short requests from many
// editors). 30% of requests are cancelled 100–400 ms after send, as an
// editor drops a completion superseded by the next keystroke; that share
// and window are our assumption, not a published figure.
//
// agent — a tool-using agent: multi-turn sessions over a long, growing
// context behind a large shared prefix. 4 system prompts of 2048 tokens
// (tool schemas and instructions) shared by every session, 3–8 turns,
// each adding a tool result or user message of lognormal(median 300, σ 0.9)
// tokens capped at 1500, with replies of lognormal(median 180, σ 0.7)
// capped at 512 (Mooncake's Kimi trace, FAST 2025: average output 182
// tokens; its average input, 7590 tokens, shows how long agent-like
// contexts get), and 2 s median lognormal think time (σ 0.8, capped at
// 30 s) for tool execution between turns. The planned context (replies at
// max_tokens) has a median of about 2.4k tokens at the first turn and about
// 7k at the eighth; about 1% of turns plan more than 8192 tokens of prompt
// and output together, which an 8k-context server rejects (rejection_rate
// shows it). Sessions arrive Poisson at 1 per second.
func Presets() []Preset {
	return []Preset{
		{
			Name:        "chat",
			Description: "interactive chat: Azure-trace conversation lengths (prompt ~1020, output ~129 tokens), Poisson 10 req/s",
			Workload: Config{
				Name:         "chat",
				API:          APIChat,
				InputTokens:  LognormalDist(1020, 0.8).WithMax(6144),
				OutputTokens: LognormalDist(129, 0.8).WithMax(1024),
			},
			Arrival: ArrivalConfig{Rate: 10, Arrival: ArrivalPoisson, Burstiness: 1},
		},
		{
			Name:        "batch",
			Description: "offline batch: ~1024-token prompts, 1024-token outputs (ignore_eos), closed loop of 64",
			Workload: Config{
				Name:         "batch",
				API:          APIChat,
				InputTokens:  NormalDist(1024, 128),
				OutputTokens: FixedDist(1024),
				IgnoreEOS:    true,
			},
			Arrival: ArrivalConfig{Concurrency: 64},
		},
		{
			Name:        "completion",
			Description: "code completion: Azure-trace coding lengths (prompt ~1500, output ~13 tokens), Poisson 50 req/s, 30% cancelled as superseded",
			Workload: Config{
				Name:         "completion",
				API:          APICompletions,
				InputTokens:  LognormalDist(1500, 0.6).WithMax(6144),
				OutputTokens: LognormalDist(13, 0.9).WithMax(256),
				CancelShare:  0.3,
				CancelAfter:  DurationDist{Kind: DistUniform, A: 100 * time.Millisecond, B: 400 * time.Millisecond},
			},
			Arrival: ArrivalConfig{Rate: 50, Arrival: ArrivalPoisson, Burstiness: 1},
		},
		{
			Name:        "agent",
			Description: "tool-using agent: 3-8 turns over a 2048-token shared prefix, growing context, 2 s think time, 1 session/s",
			Workload: Config{
				Name:         "agent",
				API:          APIChat,
				InputTokens:  LognormalDist(300, 0.9).WithMax(1500),
				OutputTokens: LognormalDist(180, 0.7).WithMax(512),
				PrefixCount:  4,
				PrefixTokens: 2048,
				PrefixShare:  1,
				Turns:        UniformDist(3, 8),
				ThinkTime:    DurationDist{Kind: DistLognormal, A: 2 * time.Second, Sigma: 0.8, Max: 30 * time.Second},
			},
			Arrival: ArrivalConfig{Rate: 1, Arrival: ArrivalPoisson, Burstiness: 1},
		},
	}
}

// LookupPreset returns the built-in preset called name.
func LookupPreset(name string) (Preset, error) {
	var names []string
	for _, p := range Presets() {
		if p.Name == name {
			return p, nil
		}
		names = append(names, p.Name)
	}
	return Preset{}, fmt.Errorf("workload preset %q: unknown (want one of %s)", name, strings.Join(names, ", "))
}
