package spec

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/llmchaos/llmchaos/simcontract/simconfig"
	"github.com/llmchaos/llmchaos/simcontract/vgpu"
	"github.com/llmchaos/llmchaos/xk6-llm/engine"
)

// Defaults that WithDefaults fills in. The simulator's come from
// simconfig.Default and from `llmchaos sim`'s flags.
const (
	DefaultSeed            uint64 = 1
	DefaultRecoveryWindow         = 5 * time.Second
	DefaultRecoveryHold           = 10 * time.Second
	DefaultProbeMethod            = "GET"
	DefaultProbeStatus            = 200
	DefaultProbeTimeout           = 5 * time.Second
	DefaultProxyListen            = "127.0.0.1:0"
	DefaultSimReplicas            = 1
	DefaultSimStartupTime         = 5 * time.Second
	DefaultSimRestartDelay        = 2 * time.Second
)

// DefaultRecoveryLatencyBand is recovery.latency_band when left out: a
// recovered window's TTFT and E2E p99 are at most 1.5 times the baseline's.
const DefaultRecoveryLatencyBand = 1.5

// WithDefaults returns a copy of s with the documented defaults filled in
// where s leaves a key unset: seed 1; recovery window 5s and hold 10s; the
// workload's grace, the engine's (30s); HTTP probes GET, expecting 200
// within 5s; proxies on 127.0.0.1:0 in http mode; and the simulator's
// settings (replicas 1 and the defaults of `llmchaos sim`, its seed the
// experiment's); a kubernetes target's path /v1. s itself is not changed.
//
// Two things are resolved elsewhere, because they are not spec keys: the
// workload's preset and load defaults (resolved into Experiment.Workload
// and Experiment.Arrival), and each fault's
// params defaults (applied when the runner builds the fault, by the fault's
// own package). An llm target's model stays unset when not given (the runner
// asks /v1/models).
func (s Spec) WithDefaults() Spec {
	out := s.clone()
	if out.Seed == nil {
		seed := DefaultSeed
		out.Seed = &seed
	}
	if out.Recovery.Window == 0 {
		out.Recovery.Window = Duration(DefaultRecoveryWindow)
	}
	if out.Recovery.Hold == 0 {
		out.Recovery.Hold = Duration(DefaultRecoveryHold)
	}
	if out.Probes != nil {
		p := out.Probes.WithDefaults()
		out.Probes = &p
	}
	if out.Recovery.LatencyBand == 0 {
		out.Recovery.LatencyBand = DefaultRecoveryLatencyBand
	}
	if out.Workload.Grace == 0 {
		out.Workload.Grace = Duration(engine.DefaultGrace)
	}
	for i := range out.SteadyState {
		if h := out.SteadyState[i].HTTP; h != nil {
			if h.Method == "" {
				h.Method = DefaultProbeMethod
			}
			if h.ExpectStatus == 0 {
				h.ExpectStatus = DefaultProbeStatus
			}
			if h.Timeout == 0 {
				h.Timeout = Duration(DefaultProbeTimeout)
			}
		}
	}
	for i := range out.Proxies {
		p := &out.Proxies[i]
		if p.Listen == "" {
			p.Listen = DefaultProxyListen
		}
		if p.Mode == "" {
			p.Mode = ProxyHTTP
		}
	}
	if t := out.Target.Sim; t != nil {
		*t = t.WithDefaults(*out.Seed)
	}
	if t := out.Target.Kubernetes; t != nil {
		*t = t.WithDefaults()
	}
	return out
}

// WithDefaults returns t with the simulator's defaults filled in; seed
// is the experiment's. Spec.WithDefaults calls it.
func (t SimTarget) WithDefaults(seed uint64) SimTarget {
	d := simconfig.Default()
	if t.Replicas == 0 {
		t.Replicas = DefaultSimReplicas
	}
	if t.Model == "" {
		t.Model = d.Model
	}
	if t.Latency == "" {
		t.Latency = d.Latency
	}
	if t.Latency == simconfig.LatencyConstant {
		if t.TTFT == 0 {
			t.TTFT = Duration(d.TTFT)
		}
		if t.ITL == 0 {
			t.ITL = Duration(d.ITL)
		}
	}
	if t.MaxNumSeqs == 0 {
		t.MaxNumSeqs = d.MaxNumSeqs
	}
	if t.MaxWaiting == 0 {
		t.MaxWaiting = d.MaxWaiting
	}
	if t.MaxModelLen == 0 {
		t.MaxModelLen = d.MaxModelLen
	}
	if t.GPUMemory == "" {
		t.GPUMemory = formatSize(d.GPUMemory)
	}
	if t.GPUMemoryUtilization == 0 {
		t.GPUMemoryUtilization = d.GPUUtilization
	}
	if t.MeanOutputTokens == 0 {
		t.MeanOutputTokens = d.MeanOutputTokens
	}
	if t.StartupTime == 0 {
		t.StartupTime = Duration(DefaultSimStartupTime)
	}
	if t.RestartDelay == 0 {
		t.RestartDelay = Duration(DefaultSimRestartDelay)
	}
	if t.Seed == nil {
		v := int64(seed) // a seed above MaxInt64 wraps; it is still a fixed seed
		t.Seed = &v
	}
	return t
}

// formatSize writes a byte count the way ParseSize reads it back exactly.
func formatSize(n int64) string {
	if n > 0 && n%vgpu.GiB == 0 {
		return strconv.FormatInt(n/vgpu.GiB, 10) + "GiB"
	}
	return strconv.FormatInt(n, 10)
}

// EngineConfig returns the engine configuration of each simulator replica:
// simconfig.Default with the keys set in t on top. It does not validate the
// result (simconfig.Config.Validate does).
func (t SimTarget) EngineConfig() (simconfig.Config, error) {
	c := simconfig.Default()
	if t.Model != "" {
		c.Model = t.Model
	}
	if t.Latency != "" {
		c.Latency = t.Latency
	}
	if t.TTFT != 0 {
		c.TTFT = t.TTFT.D()
	}
	if t.ITL != 0 {
		c.ITL = t.ITL.D()
	}
	if t.MaxNumSeqs != 0 {
		c.MaxNumSeqs = t.MaxNumSeqs
	}
	if t.MaxWaiting != 0 {
		c.MaxWaiting = t.MaxWaiting
	}
	if t.MaxModelLen != 0 {
		c.MaxModelLen = t.MaxModelLen
	}
	if t.GPUMemory != "" {
		n, err := vgpu.ParseSize(t.GPUMemory)
		if err != nil {
			return c, fmt.Errorf("gpu_memory: %w", err)
		}
		c.GPUMemory = n
	}
	if t.GPUMemoryUtilization != 0 {
		c.GPUUtilization = t.GPUMemoryUtilization
	}
	if t.MeanOutputTokens != 0 {
		c.MeanOutputTokens = t.MeanOutputTokens
	}
	if t.Divergence != "" {
		c.Divergence = t.Divergence
	}
	if t.DivergenceMinBatch != 0 {
		c.DivergenceMinBatch = t.DivergenceMinBatch
	}
	if t.Seed != nil {
		c.Seed = *t.Seed
	}
	return c, nil
}

// clone returns a copy of s that shares nothing mutable with it.
func (s Spec) clone() Spec {
	out := s
	out.Metadata.Labels = maps.Clone(s.Metadata.Labels)
	if s.Target.Sim != nil {
		t := *s.Target.Sim
		if t.Seed != nil {
			v := *t.Seed
			t.Seed = &v
		}
		out.Target.Sim = &t
	}
	if s.Target.LLM != nil {
		t := *s.Target.LLM
		t.URLs = slices.Clone(t.URLs)
		t.Headers = maps.Clone(t.Headers)
		out.Target.LLM = &t
	}
	if s.Target.Kubernetes != nil {
		t := *s.Target.Kubernetes
		t.Headers = maps.Clone(t.Headers)
		out.Target.Kubernetes = &t
	}
	out.Proxies = slices.Clone(s.Proxies)
	out.Workload.Stages = slices.Clone(s.Workload.Stages)
	if s.Workload.Ramp != nil {
		r := *s.Workload.Ramp
		out.Workload.Ramp = &r
	}
	out.SteadyState = slices.Clone(s.SteadyState)
	for i, p := range out.SteadyState {
		if p.HTTP != nil {
			h := *p.HTTP
			out.SteadyState[i].HTTP = &h
		}
	}
	out.Faults = slices.Clone(s.Faults)
	for i, f := range out.Faults {
		if f.Target != nil {
			t := *f.Target
			t.Endpoints = slices.Clone(t.Endpoints)
			out.Faults[i].Target = &t
		}
		out.Faults[i].Params = cloneAny(f.Params).(map[string]any)
	}
	out.StopConditions = slices.Clone(s.StopConditions)
	if s.Thresholds != nil {
		out.Thresholds = make(Thresholds, len(s.Thresholds))
		for k, v := range s.Thresholds {
			out.Thresholds[k] = slices.Clone(v)
		}
	}
	if s.Seed != nil {
		v := *s.Seed
		out.Seed = &v
	}
	if s.Probes != nil {
		p := *s.Probes
		p.Prompts = slices.Clone(p.Prompts)
		if p.Seed != nil {
			v := *p.Seed
			p.Seed = &v
		}
		out.Probes = &p
	}
	return out
}

// cloneAny deep-copies a decoded value (maps and lists).
func cloneAny(v any) any {
	switch v := v.(type) {
	case map[string]any:
		if v == nil {
			return v
		}
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[k] = cloneAny(x)
		}
		return m
	case []any:
		s := make([]any, len(v))
		for i, x := range v {
			s[i] = cloneAny(x)
		}
		return s
	}
	return v
}
