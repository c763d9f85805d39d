package spec

import (
	"math"
	"slices"
	"strings"
	"unicode/utf8"
)

// Probes asks for consistency probes: alongside the load, a low steady
// stream of requests that ask a few fixed prompts at temperature 0 with a
// seed, over and over. The answer most baseline probes of a prompt gave is
// its reference; during each fault and recovery window every probe's answer
// is compared with it (output_consistency, output_divergence_at,
// output_distinct_answers). Probes are recorded apart from the load (class
// probe): the load's figures never include them, and a threshold that
// selects class:probe reads theirs.
type Probes struct {
	Rate      float64  `yaml:"rate,omitempty" json:"rate,omitempty" doc:"Probe requests per second, sent on a fixed schedule whatever the load does and spread round-robin over the endpoints. Default 2."`
	Prompts   []string `yaml:"prompts,omitempty" json:"prompts,omitempty" doc:"The fixed prompts, asked in turn (each as one user message). Default: four built-in prompts."`
	MaxTokens int      `yaml:"max_tokens,omitempty" json:"max_tokens,omitempty" doc:"max_tokens of each probe: how much of each answer is compared. Default 32."`
	Seed      *int64   `yaml:"seed,omitempty" json:"seed,omitempty" doc:"Seed sent with every probe (temperature is always 0). Default 1."`
}

// Probe defaults (Probes.WithDefaults).
const (
	DefaultProbeRate      = 2.0
	DefaultProbeMaxTokens = 32
	DefaultProbeSeed      = int64(1)
	// MaxProbeRate bounds probes.rate: probes are a check, not a load.
	MaxProbeRate = 100.0
	// MaxProbeMaxTokens bounds probes.max_tokens.
	MaxProbeMaxTokens = 4096
	// MaxProbePrompts bounds the number of probes.prompts: each prompt
	// needs many answers in every window to say anything.
	MaxProbePrompts = 64
)

// DefaultProbePrompts are the prompts probes ask when probes.prompts is
// left out: short, with one right answer, so a healthy greedy engine
// answers each the same every time.
var DefaultProbePrompts = []string{
	"List the first ten prime numbers, separated by commas.",
	"Translate into French: The cat sleeps on the warm windowsill.",
	"What is the capital of Australia? Answer in one sentence.",
	"Write the word 'resilience' backwards, letter by letter.",
}

// WithDefaults returns p with its defaults filled in.
func (p Probes) WithDefaults() Probes {
	if p.Rate == 0 {
		p.Rate = DefaultProbeRate
	}
	if len(p.Prompts) == 0 {
		p.Prompts = slices.Clone(DefaultProbePrompts)
	} else {
		p.Prompts = slices.Clone(p.Prompts)
	}
	if p.MaxTokens == 0 {
		p.MaxTokens = DefaultProbeMaxTokens
	}
	if p.Seed == nil {
		s := DefaultProbeSeed
		p.Seed = &s
	} else {
		s := *p.Seed
		p.Seed = &s
	}
	return p
}

// ProbeClass is the request class of probe results, which thresholds
// select with class:probe.
const ProbeClass = "probe"

// probeMetric reports whether a metric is computed from the consistency
// probes (and needs probes:).
func probeMetric(name string) bool {
	switch name {
	case "output_consistency", "output_divergence_at", "output_distinct_answers":
		return true
	}
	return false
}

// probes checks probes:.
func (v *validator) probes() {
	p := v.s.Probes
	if p == nil {
		return
	}
	if r := p.Rate; r < 0 || r > MaxProbeRate || math.IsNaN(r) {
		v.iss.add("probes.rate", "%v: want a rate above 0 and at most %v probes per second (probes check answers; they are not a load)", r, MaxProbeRate)
	}
	if len(p.Prompts) > MaxProbePrompts {
		v.iss.add("probes.prompts", "%d prompts: at most %d (each prompt needs many answers in every window)", len(p.Prompts), MaxProbePrompts)
	}
	for i, s := range p.Prompts {
		switch {
		case strings.TrimSpace(s) == "":
			v.iss.add(index("probes.prompts", i), "empty prompt: write the question the probes ask")
		case !utf8.ValidString(s):
			v.iss.add(index("probes.prompts", i), "not valid UTF-8")
		}
	}
	if n := p.MaxTokens; n < 0 || n > MaxProbeMaxTokens {
		v.iss.add("probes.max_tokens", "%d: want 1 to %d", n, MaxProbeMaxTokens)
	}
	if v.s.Workload.Shards > 1 {
		v.iss.add("probes", "probes run with a one-process load; with workload.shards %d the load runs in shards and no prober runs beside it: drop probes or shards", v.s.Workload.Shards)
	}
	if v.s.Workload.Script != "" {
		v.iss.add("probes", "probes run beside a workload's load, not beside a script: drop probes or workload.script")
	}
}
