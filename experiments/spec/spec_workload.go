package spec

import (
	"errors"
	"path/filepath"

	"github.com/llmchaos/llmchaos/internal/field"
	"github.com/llmchaos/llmchaos/xk6-llm/client"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// Workload is the load of an experiment, one key per flag of `llmchaos
// load` (flag --max-in-flight is key max_in_flight). A preset (chat, batch,
// completion, agent) gives a request shape and a default load shape; every
// key set here goes on top of it (llm's Overlay rules: setting a load shape
// replaces the preset's). Exactly one load shape results: rate, ramp,
// stages, trace or concurrency. Configs resolves it.
type Workload struct {
	// Script is a k6-style script that drives the load instead of a
	// preset (see ScriptKeys for the keys that apply with it).
	Script string            `yaml:"script,omitempty" json:"script,omitempty" doc:"A k6-style JavaScript file (a path relative to the experiment file) that drives the load instead of a preset: its options give the scenarios; duration, concurrency (its VUs), requests (its iterations) and rate (a constant arrival rate) override them as llmchaos run's flags do. The runner sets __ENV.BASE_URL (the first endpoint, through its fault proxy), BASE_URLS (all of them, comma-separated) and MODEL: build the script's llm.Client from them."`
	Env    map[string]string `yaml:"env,omitempty" json:"env,omitempty" doc:"With script: more __ENV variables of the script (over the process environment), as llmchaos run -e KEY=VALUE."`

	Preset string `yaml:"preset,omitempty" json:"preset,omitempty" doc:"Built-in traffic class: chat, batch, completion or agent. Its request shape and load shape apply under the keys set here."`
	Class  string `yaml:"class,omitempty" json:"class,omitempty" doc:"Request class tag of every result (thresholds select it with class:NAME). Default: the preset's name, else custom."`
	API    string `yaml:"api,omitempty" json:"api,omitempty" doc:"chat or completions. Default chat."`

	Rate       Rate     `yaml:"rate,omitempty" json:"rate,omitzero" doc:"Open-loop arrival rate in requests per second (.inf: every request at once; needs requests), or a share of a measured capacity such as 80%, which needs capacity: the rate is then that share of the knee llmchaos capacity measured."`
	Capacity   string   `yaml:"capacity,omitempty" json:"capacity,omitempty" doc:"With rate given as a percentage: the capacity file written by llmchaos capacity --out FILE (a path relative to the experiment file); the rate is that share of its knee. llmchaos run --capacity FILE and llmchaos suite --capacity FILE override it."`
	Arrival    string   `yaml:"arrival,omitempty" json:"arrival,omitempty" doc:"Inter-arrival shape for rate, ramp and stages: constant, poisson or gamma. Default poisson."`
	Burstiness float64  `yaml:"burstiness,omitempty" json:"burstiness,omitempty" doc:"Gamma shape for arrival gamma: below 1 burstier, above 1 smoother. Default 1."`
	Ramp       *Ramp    `yaml:"ramp,omitempty" json:"ramp,omitempty" doc:"Rate that moves linearly from one value to another over the duration."`
	Stages     []Stage  `yaml:"stages,omitempty" json:"stages,omitempty" doc:"Ramping-arrival-rate schedule: each stage moves the rate linearly to its target over its duration."`
	StartRate  float64  `yaml:"start_rate,omitempty" json:"start_rate,omitempty" doc:"Rate the first stage starts from."`
	Trace      string   `yaml:"trace,omitempty" json:"trace,omitempty" doc:"JSONL trace of arrival timestamps to replay (a path relative to the experiment file)."`
	Duration   Duration `yaml:"duration,omitempty" json:"duration,omitempty" doc:"Length of the load, e.g. 60s; fault times are measured from its start."`
	Requests   int      `yaml:"requests,omitempty" json:"requests,omitempty" doc:"End the load after this many requests (with duration: whichever comes first)."`

	Concurrency  int          `yaml:"concurrency,omitempty" json:"concurrency,omitempty" doc:"Closed loop of this many virtual users instead of an arrival rate."`
	ThinkTime    DurationDist `yaml:"think_time,omitempty" json:"think_time,omitzero" doc:"Closed loop: a user's pause between requests, e.g. 1s or exponential:3s."`
	MaxInFlight  int          `yaml:"max_in_flight,omitempty" json:"max_in_flight,omitempty" doc:"Open loop: cap on requests in flight (0: none)."`
	OnSaturation string       `yaml:"on_saturation,omitempty" json:"on_saturation,omitempty" doc:"Open loop at max_in_flight: wait (queue the arrival) or drop (record it dropped). Default wait."`

	InputTokens  Dist   `yaml:"input_tokens,omitempty" json:"input_tokens,omitzero" doc:"Length of each synthetic user turn in tokens: 512, uniform:100:300, normal:512:128,max=1024 or lognormal:1020:0.8,max=6144."`
	PromptTokens Dist   `yaml:"prompt_tokens,omitempty" json:"prompt_tokens,omitzero" doc:"Another name of input_tokens (as load's --prompt-tokens is of --input-tokens); set one of the two."`
	OutputTokens Dist   `yaml:"output_tokens,omitempty" json:"output_tokens,omitzero" doc:"Output length, sent as max_tokens; same syntax as input_tokens."`
	MinTokens    int    `yaml:"min_tokens,omitempty" json:"min_tokens,omitempty" doc:"Sent as min_tokens, capped at max_tokens."`
	IgnoreEOS    bool   `yaml:"ignore_eos,omitempty" json:"ignore_eos,omitempty" doc:"Ask the server to generate exactly max_tokens (vLLM's ignore_eos); needs output_tokens."`
	Dataset      string `yaml:"dataset,omitempty" json:"dataset,omitempty" doc:"Prompt dataset file (a path relative to the experiment file)."`
	DataFormat   string `yaml:"dataset_format,omitempty" json:"dataset_format,omitempty" doc:"sharegpt or jsonl. Default: detected."`

	PrefixCount  int     `yaml:"prefix_count,omitempty" json:"prefix_count,omitempty" doc:"Number of shared system prompts (for prefix caching)."`
	PrefixTokens int     `yaml:"prefix_tokens,omitempty" json:"prefix_tokens,omitempty" doc:"Length of each shared system prompt in tokens."`
	PrefixShare  float64 `yaml:"prefix_share,omitempty" json:"prefix_share,omitempty" doc:"Share of sessions that use a shared prefix, in [0, 1]. Default 1 with prefixes."`

	Turns            Dist         `yaml:"turns,omitempty" json:"turns,omitzero" doc:"User turns per synthetic session. Default 1."`
	SessionThinkTime DurationDist `yaml:"session_think_time,omitempty" json:"session_think_time,omitzero" doc:"Pause after a turn's reply before the next turn of a session."`

	CancelShare       float64      `yaml:"cancel_share,omitempty" json:"cancel_share,omitempty" doc:"Share of requests the client cancels on purpose, in [0, 1]. Default 1 when a cancel_after is given."`
	CancelAfterTokens Dist         `yaml:"cancel_after_tokens,omitempty" json:"cancel_after_tokens,omitzero" doc:"Cancel after this many content chunks."`
	CancelAfter       DurationDist `yaml:"cancel_after,omitempty" json:"cancel_after,omitzero" doc:"Cancel this long after send."`

	Preflight   *bool    `yaml:"preflight,omitempty" json:"preflight,omitempty" doc:"Check each endpoint before the load and the faults (its /models lists the model, else one max_tokens 1 request succeeds) and stop the run, exit 2, when it refuses for good. Default true; false skips it, as llmchaos run --no-preflight."`
	Timeout     Duration `yaml:"timeout,omitempty" json:"timeout,omitempty" doc:"Bound on a whole request, send to end of stream (0: none). A request cut by it failed (class timeout): only the cancels asked for above are not errors."`
	TTFTTimeout Duration `yaml:"ttft_timeout,omitempty" json:"ttft_timeout,omitempty" doc:"Bound on the time from send to the first content chunk (0: none). A request cut by it failed (class timeout)."`
	IdleTimeout Duration `yaml:"idle_timeout,omitempty" json:"idle_timeout,omitempty" doc:"Bound on the server's silence: to the first byte and between reads (0: none). A request cut by it failed (class timeout)."`
	Grace       Duration `yaml:"grace,omitempty" json:"grace,omitempty" doc:"Time requests in flight get to finish after the load's schedule ends. Those still unfinished then failed (class timeout), counted in error_rate. Default (unset or 0s): 30s."`

	// Shards splits the load over that many processes. It needs a
	// Kubernetes target, where the shards run as the pods of an Indexed
	// Job (experiments/shardjob).
	Shards int `yaml:"shards,omitempty" json:"shards,omitempty" doc:"Run the load as this many shards at once, the pods of a Kubernetes Indexed Job (each llmchaos load --shard INDEX/N, one start instant) while the runner runs the faults; their request lines reach the runner as they are written (the pods' logs, followed), so stop_conditions, abortOnFail thresholds, steady-state threshold probes and live recovery work as with one process, about a second behind; at the end every result is recorded exactly, tagged by phase from its send time. Needs target.kubernetes and llmchaos run --shard-image. Default 1: one process."`
}

// ClientTimeouts sets the request, TTFT and idle timeouts of o from the workload.
func (w Workload) ClientTimeouts(o *client.Options) {
	o.RequestTimeout, o.TTFTTimeout, o.IdleTimeout = w.Timeout.D(), w.TTFTTimeout.D(), w.IdleTimeout.D()
}

// CapacityPath is the workload's capacity file as a path: relative to
// dir, the experiment file's directory, unless absolute; "" when none.
func (w Workload) CapacityPath(dir string) string {
	if w.Capacity == "" || filepath.IsAbs(w.Capacity) || dir == "" {
		return w.Capacity
	}
	return filepath.Join(dir, w.Capacity)
}

// PreflightOff reports whether the file turns the pre-flight check off
// (preflight: false); left out, the check runs.
func (w Workload) PreflightOff() bool { return w.Preflight != nil && !*w.Preflight }

// keyHints answers keys people reach for that the workload spells another
// way.
func (Workload) keyHints() map[string]string {
	return map[string]string{
		"max_tokens":    `output_tokens is sent as max_tokens: write output_tokens`,
		"think-time":    `write think_time`,
		"preset_name":   `write preset`,
		"arrival_rate":  `write rate`,
		"capacity_file": `write capacity`,
		"users":         `write concurrency (closed loop of N users)`,
		"vus":           `write concurrency (closed loop of N users; with a script, its VUs)`,
		"iterations":    `write requests (with a script, its iterations)`,
	}
}

// keyAliases maps each key that is another name of a key to that key:
// the file may write either, not both. The metric is input_tokens, so that
// is the key's name; prompt_tokens is the name people bring from
// OpenAI's usage and from load's --prompt-tokens.
func (Workload) keyAliases() map[string]string {
	return map[string]string{"prompt_tokens": "input_tokens"}
}

// inputTokens is input_tokens, or prompt_tokens, its other name, when only
// that is set.
func (w Workload) inputTokens() Dist {
	if w.InputTokens == (Dist{}) {
		return w.PromptTokens
	}
	return w.InputTokens
}

// Ramp is a rate that moves linearly from From to To requests per second
// over the workload's duration.
type Ramp struct {
	From float64 `yaml:"from" json:"from" doc:"Rate at the start, in requests per second."`
	To   float64 `yaml:"to" json:"to" doc:"Rate at the end, in requests per second."`
}

// Stage is one step of a ramping-arrival-rate schedule: the rate moves
// linearly from the previous stage's target (or start_rate) to Target over
// Duration.
type Stage struct {
	Duration Duration `yaml:"duration" json:"duration" doc:"Length of the stage; 0s jumps to the target at once."`
	Target   float64  `yaml:"target" json:"target" doc:"Rate reached at the end of the stage, in requests per second."`
}

// Configs resolves the workload (workload.Resolve): the preset's configs
// (if any) with the keys set here on top, then llm's defaults. It returns
// every problem of the result, each keyed by its field under workload
// (a field.Problems); the configs are returned even then.
func (w Workload) Configs() (workload.Config, workload.ArrivalConfig, error) {
	r, ps := w.resolve()
	var errs []error
	if w.Rate.Unresolved() {
		errs = append(errs, errUnresolvedRate(w.Rate))
	}
	if len(ps) > 0 {
		errs = append(errs, ps.Under("workload"))
	}
	return r.Workload, r.Arrival, errors.Join(errs...)
}

// resolve resolves the workload through workload.Resolve, the resolver
// llmchaos load's flags take too.
func (w Workload) resolve() (workload.Resolved, field.Problems) {
	uw, ua := w.user()
	return workload.Resolve(workload.Given{Preset: w.Preset, Workload: uw, Arrival: ua})
}

// user returns the keys set here as llm configs, without preset or
// defaults.
func (w Workload) user() (workload.Config, workload.ArrivalConfig) {
	wc := workload.Config{
		Name:              w.Class,
		API:               workload.APIKind(w.API),
		InputTokens:       workload.Dist(w.inputTokens()),
		OutputTokens:      workload.Dist(w.OutputTokens),
		MinTokens:         w.MinTokens,
		IgnoreEOS:         w.IgnoreEOS,
		Dataset:           w.Dataset,
		DatasetFormat:     workload.DatasetFormat(w.DataFormat),
		PrefixCount:       w.PrefixCount,
		PrefixTokens:      w.PrefixTokens,
		PrefixShare:       w.PrefixShare,
		Turns:             workload.Dist(w.Turns),
		ThinkTime:         workload.DurationDist(w.SessionThinkTime),
		CancelShare:       w.CancelShare,
		CancelAfterTokens: workload.Dist(w.CancelAfterTokens),
		CancelAfter:       workload.DurationDist(w.CancelAfter),
	}
	ac := workload.ArrivalConfig{
		Rate:         w.Rate.PerSecond,
		Arrival:      workload.ArrivalKind(w.Arrival),
		Burstiness:   w.Burstiness,
		StartRate:    w.StartRate,
		TraceFile:    w.Trace,
		Duration:     w.Duration.D(),
		Requests:     w.Requests,
		Concurrency:  w.Concurrency,
		ThinkTime:    workload.DurationDist(w.ThinkTime),
		MaxInFlight:  w.MaxInFlight,
		OnSaturation: workload.Saturation(w.OnSaturation),
	}
	if w.Ramp != nil {
		ac.Ramp = workload.Ramp{From: w.Ramp.From, To: w.Ramp.To}
	}
	for _, st := range w.Stages {
		ac.Stages = append(ac.Stages, workload.Stage{Duration: st.Duration.D(), Target: st.Target})
	}
	return wc, ac
}
