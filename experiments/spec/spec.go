package spec

import (
	"fmt"
	"net/url"
	"strings"
)

// APIVersion and KindExperiment are the only values an experiment file's
// apiVersion and kind may take.
const (
	APIVersion     = "llmchaos/v1"
	KindExperiment = "Experiment"
)

// Spec is one experiment: what to load, which faults to inject when, what
// "healthy" means and what must hold. It is what an experiment file decodes
// into (Load, Parse); Validate checks it without changing it, WithDefaults
// returns a copy with the documented defaults filled in.
//
// The yaml and json tags are the file's keys; the doc tags are their
// descriptions in the JSON Schema (GenerateSchema).
type Spec struct {
	APIVersion string   `yaml:"apiVersion" json:"apiVersion" doc:"Always llmchaos/v1."`
	Kind       string   `yaml:"kind" json:"kind" doc:"Always Experiment."`
	Metadata   Metadata `yaml:"metadata" json:"metadata" doc:"Name, description and labels of the experiment."`
	Target     Target   `yaml:"target" json:"target" doc:"The service under test: exactly one of sim (the built-in simulator), llm (an OpenAI-compatible endpoint) or kubernetes (pods behind a Service)."`
	Proxies    []Proxy  `yaml:"proxies,omitempty" json:"proxies,omitempty" doc:"Fault proxies declared by hand. Without them the runner puts a proxy in front of each target endpoint when a proxy fault needs one."`
	Workload   Workload `yaml:"workload" json:"workload" doc:"The load to drive: a preset and/or explicit load shape and request shape, as the flags of llmchaos load."`
	// SteadyState is checked before the load (the run aborts when the
	// service is unhealthy) and after it.
	SteadyState []Probe `yaml:"steady_state,omitempty" json:"steady_state,omitempty" doc:"Probes that define a healthy service: checked before the load starts (abort when unhealthy) and after it ends."`
	Faults      []Fault `yaml:"faults,omitempty" json:"faults,omitempty" doc:"Faults to inject, each at a time offset from the start of the load, for a duration."`
	// StopConditions abort the run (and revert every fault) as soon as
	// one fails over the live rolling window: k6's abortOnFail.
	StopConditions []StopCondition `yaml:"stop_conditions,omitempty" json:"stop_conditions,omitempty" doc:"Thresholds (\"metric{tags}: expr\") evaluated live over a rolling window; the first that fails aborts the run and reverts every fault."`
	Thresholds     Thresholds      `yaml:"thresholds,omitempty" json:"thresholds,omitempty" doc:"k6-style thresholds evaluated over the whole run: metric{tag:value,...} mapped to a list of expressions (strings or {threshold, abortOnFail, delayAbortEval})."`
	Recovery       Recovery        `yaml:"recovery,omitempty" json:"recovery,omitzero" doc:"How recovery_time is measured after each fault's revert."`
	// Probes asks for consistency probes alongside the load (Probes).
	Probes *Probes `yaml:"probes,omitempty" json:"probes,omitempty" doc:"Consistency probes: a low steady stream of fixed prompts at temperature 0 with a seed, sent alongside the load and recorded apart from it (class probe); each answer is compared with the prompt's baseline reference (output_consistency, output_divergence_at, output_distinct_answers). probes: {} sends them with the defaults."`
	// BlastRadius bounds how much a run may break at once: the timeline
	// must keep within it, and a game day refuses manual faults beyond it.
	BlastRadius *BlastRadius `yaml:"blast_radius,omitempty" json:"blast_radius,omitempty" doc:"Limits on how much may be broken at once: the fault timeline must keep within them, and llmchaos gameday refuses a fault injected by hand beyond them."`
	// Seed seeds every random choice of the run (arrivals, workload,
	// jitter, per-request fault decisions, the simulator) so that a run
	// can be replayed. Unset: 1.
	Seed *uint64 `yaml:"seed,omitempty" json:"seed,omitempty" doc:"Seed of every random choice of the run (arrivals, prompts, fault decisions, the simulator). Default 1."`
	// Goodput lists the per-request SLOs a good request meets, in
	// llmchaos load's --goodput syntax: "ttft:500ms,tpot:50ms".
	Goodput string `yaml:"goodput,omitempty" json:"goodput,omitempty" doc:"Per-request SLOs that define a good request for the goodput metric, e.g. \"ttft:500ms,tpot:50ms\" (keys ttft, tpot, e2e)."`
	// Out is the run directory (run.json, journal, series). Unset: the
	// runner picks one under runs/.
	Out string `yaml:"out,omitempty" json:"out,omitempty" doc:"Run directory for run.json, the fault journal and the series. Default: chosen by the runner."`
}

// Metadata names and describes an experiment.
type Metadata struct {
	// Name identifies the experiment in reports and run directories.
	Name        string            `yaml:"name" json:"name" doc:"Name of the experiment: lower-case letters, digits, '.', '_' and '-', starting and ending with a letter or digit, at most 63 characters."`
	Description string            `yaml:"description,omitempty" json:"description,omitempty" doc:"Free text shown in reports."`
	Labels      map[string]string `yaml:"labels,omitempty" json:"labels,omitempty" doc:"Free key/value pairs copied into reports."`
}

// Target is the service under test: exactly one of Sim, LLM and
// Kubernetes is set.
type Target struct {
	Sim        *SimTarget        `yaml:"sim,omitempty" json:"sim,omitempty" doc:"Start the built-in vLLM-like simulator (llmchaos sim) for the run and tear it down after."`
	LLM        *LLMTarget        `yaml:"llm,omitempty" json:"llm,omitempty" doc:"An OpenAI-compatible endpoint that is already running."`
	Kubernetes *KubernetesTarget `yaml:"kubernetes,omitempty" json:"kubernetes,omitempty" doc:"Pods of a Kubernetes cluster serving an OpenAI-compatible API, found through a Service or a label selector and re-discovered while the run goes on; replica faults act on them."`
}

// SimTarget starts the built-in simulator for the run: Replicas replica
// processes under its supervisor, on free ports of 127.0.0.1, each one an
// endpoint of the target (requests go round-robin over them). Unset fields
// take the defaults of `llmchaos sim` (WithDefaults fills them).
type SimTarget struct {
	Replicas             int      `yaml:"replicas,omitempty" json:"replicas,omitempty" doc:"Number of replica processes; each is an endpoint the load is spread over. Default 1."`
	Model                string   `yaml:"model,omitempty" json:"model,omitempty" doc:"Served model name. Default llmchaos-sim."`
	Latency              string   `yaml:"latency,omitempty" json:"latency,omitempty" doc:"Latency model: profile (Llama-3-8B on one H200) or constant (ttft, itl). Default profile."`
	TTFT                 Duration `yaml:"ttft,omitempty" json:"ttft,omitempty" doc:"latency constant: time to first token when nothing queues."`
	ITL                  Duration `yaml:"itl,omitempty" json:"itl,omitempty" doc:"latency constant: time between tokens."`
	MaxNumSeqs           int      `yaml:"max_num_seqs,omitempty" json:"max_num_seqs,omitempty" doc:"Most sequences running at once per replica (vLLM's --max-num-seqs)."`
	MaxWaiting           int      `yaml:"max_waiting,omitempty" json:"max_waiting,omitempty" doc:"Waiting queue bound per replica; a full queue answers 429."`
	MaxModelLen          int      `yaml:"max_model_len,omitempty" json:"max_model_len,omitempty" doc:"Prompt + max_tokens above this answers 400."`
	GPUMemory            string   `yaml:"gpu_memory,omitempty" json:"gpu_memory,omitempty" doc:"Size of each replica's virtual GPU, e.g. 141GiB or 80GB."`
	GPUMemoryUtilization float64  `yaml:"gpu_memory_utilization,omitempty" json:"gpu_memory_utilization,omitempty" doc:"Share of the GPU for weights and KV cache, in (0, 1]."`
	MeanOutputTokens     int      `yaml:"mean_output_tokens,omitempty" json:"mean_output_tokens,omitempty" doc:"Mean output length of requests that do not set ignore_eos."`
	Divergence           string   `yaml:"divergence,omitempty" json:"divergence,omitempty" doc:"What makes output differ from the deterministic greedy answer of (prompt, seed): preempt (a preempted sequence recomputes into another continuation) or batch (at near-tie tokens the batch size decides). Default: never."`
	DivergenceMinBatch   int      `yaml:"divergence_min_batch,omitempty" json:"divergence_min_batch,omitempty" doc:"divergence batch: the smallest batch whose near-tie tokens differ from a lone sequence's; smaller batches give the reference answer. Default 2."`
	Migrate              string   `yaml:"migrate,omitempty" json:"migrate,omitempty" doc:"Serve the replicas behind the simulator's router (llmchaos sim --router), the target's one endpoint, which migrates a stream whose replica dies to another replica, as Dynamo's request migration does: clean (it continues the same answer from the token it reached), duplicate (it resends 4 tokens the client has) or drop (it skips 4). Needs 2 replicas or more. Default: no router, each replica an endpoint."`
	StartupTime          Duration `yaml:"startup_time,omitempty" json:"startup_time,omitempty" doc:"Model load time: /health answers 503 this long after a replica starts. Default 5s."`
	RestartDelay         Duration `yaml:"restart_delay,omitempty" json:"restart_delay,omitempty" doc:"Wait after a replica exits before the supervisor restarts it. Default 2s."`
	// Seed seeds the simulator's output text and lengths. Unset: the
	// experiment's seed.
	Seed *int64 `yaml:"seed,omitempty" json:"seed,omitempty" doc:"Seed of the simulator's output text and lengths. Default: the experiment's seed."`
}

// EndpointCount is the number of endpoints the simulator gives the load:
// its router with migrate, else each replica.
func (t SimTarget) EndpointCount() int {
	if t.Migrate != "" {
		return 1
	}
	return max(t.Replicas, DefaultSimReplicas)
}

// LLMTarget is an OpenAI-compatible service that is already running. URL
// and URLs are exclusive: one base URL, or several endpoints the load
// engine spreads requests over round-robin (each result is tagged with its
// endpoint, so a lost replica shows). Users with a gateway target the
// gateway.
type LLMTarget struct {
	URL  string   `yaml:"url,omitempty" json:"url,omitempty" doc:"Base URL of the OpenAI-compatible API, e.g. http://127.0.0.1:8000/v1. Exclusive with urls."`
	URLs []string `yaml:"urls,omitempty" json:"urls,omitempty" doc:"Several base URLs; requests go round-robin over them and results are tagged with their endpoint. Exclusive with url."`
	// Model is the model name sent in requests. Unset: the first model
	// the endpoint's /v1/models lists.
	Model string `yaml:"model,omitempty" json:"model,omitempty" doc:"Model name sent in requests. Default: the first model /v1/models lists."`
	// APIKeyEnv names the environment variable holding the API key; the
	// key itself never appears in a file, a log or a report.
	APIKeyEnv string            `yaml:"api_key_env,omitempty" json:"api_key_env,omitempty" doc:"Name of the environment variable that holds the API key (sent as a bearer token). Keys never go in the file."`
	Headers   map[string]string `yaml:"headers,omitempty" json:"headers,omitempty" doc:"Extra HTTP headers sent with every request (not Authorization: use api_key_env)."`
}

// Endpoints returns the target's base URLs in order (URL, or URLs).
func (t LLMTarget) Endpoints() []string {
	if t.URL != "" {
		return []string{t.URL}
	}
	return append([]string(nil), t.URLs...)
}

// Proxy modes: ProxyHTTP speaks HTTP/1.1 and can run the per-request L7
// faults (http.*, stream.*) as well as the L4 ones; ProxyTCP forwards bytes
// and runs the L4 faults (network.*) only.
const (
	ProxyHTTP = "http"
	ProxyTCP  = "tcp"
)

// Proxy declares a fault proxy: it listens on Listen and forwards to
// Upstream. Point the target (llm.url) at Listen to send the load through
// it, and name it in a fault's target.proxy.
type Proxy struct {
	Name     string `yaml:"name" json:"name" doc:"Name of the proxy, used by a fault's target.proxy."`
	Listen   string `yaml:"listen,omitempty" json:"listen,omitempty" doc:"Address to listen on, host:port. Default 127.0.0.1:0 (a free port)."`
	Upstream string `yaml:"upstream" json:"upstream" doc:"Address to forward to, host:port."`
	Mode     string `yaml:"mode,omitempty" json:"mode,omitempty" doc:"http (L4 and per-request L7 faults) or tcp (L4 faults only). Default http."`
}

// Probe is one steady-state check: exactly one of HTTP, Threshold and
// PromQL.
type Probe struct {
	// Name labels the probe in reports. Unset: derived from its check.
	Name string     `yaml:"name,omitempty" json:"name,omitempty" doc:"Label of the probe in reports."`
	HTTP *HTTPProbe `yaml:"http,omitempty" json:"http,omitempty" doc:"An HTTP request that must answer the expected status."`
	// Threshold is a threshold in the flag form, "metric{tags}: expr",
	// evaluated by the runner over a short probe window of load.
	Threshold string `yaml:"threshold,omitempty" json:"threshold,omitempty" doc:"A threshold, \"metric{tags}: expr\" (e.g. \"error_rate: rate<0.01\"), evaluated over a short window of probe load."`
	// PromQL queries a Prometheus server before the load and after it.
	PromQL *PromQLProbe `yaml:"promql,omitempty" json:"promql,omitempty" doc:"A PromQL instant query whose result must satisfy expect, checked before the load starts and after it ends."`
}

// TemplateTarget is the placeholder an HTTP probe's URL may hold: the
// runner replaces it with each endpoint's base URL (scheme, host and port,
// no trailing slash) and probes every endpoint. No other {{...}}
// placeholder exists.
const TemplateTarget = "{{target}}"

// HTTPProbe sends one request and expects a status.
//
// Templating: URL may contain {{target}} (TemplateTarget). The runner
// replaces it with the base URL of each target endpoint in turn — the
// scheme, host and port of each llm url (its path dropped), or of each
// simulator replica — and probes every endpoint; all must pass. ExpandURL
// does the substitution.
type HTTPProbe struct {
	URL          string   `yaml:"url" json:"url" doc:"URL to request; {{target}} is replaced with each target endpoint's scheme://host:port and every endpoint is probed."`
	Method       string   `yaml:"method,omitempty" json:"method,omitempty" doc:"HTTP method. Default GET."`
	ExpectStatus int      `yaml:"expect_status,omitempty" json:"expect_status,omitempty" doc:"Status code the answer must have. Default 200."`
	Timeout      Duration `yaml:"timeout,omitempty" json:"timeout,omitempty" doc:"Time allowed for the answer. Default 5s."`
}

// ExpandURL returns the probe's URL for one target endpoint: {{target}}
// replaced with the endpoint's scheme://host:port (its path dropped, so
// "http://h:8000/v1" probes "http://h:8000/health" for
// "{{target}}/health"). A URL without the placeholder is returned as is.
func (h HTTPProbe) ExpandURL(endpoint string) (string, error) {
	if !strings.Contains(h.URL, TemplateTarget) {
		return h.URL, nil
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "", fmt.Errorf("probe %s: endpoint %q is not an absolute URL", h.URL, endpoint)
	}
	return strings.ReplaceAll(h.URL, TemplateTarget, u.Scheme+"://"+u.Host), nil
}

// Fault targets: what a fault type acts on, which decides what
// FaultTarget may say.
const (
	// TargetProxy faults act through a fault proxy: a declared one
	// (FaultTarget.Proxy) or the automatic ones in front of the target's
	// endpoints (FaultTarget.Endpoints, Count, Percent).
	TargetProxy = "proxy"
	// TargetParams faults say in their params where they act (a network
	// namespace and interface); they take no target selector.
	TargetParams = "params"
)

// Fault is one fault of the timeline: injected At after the load starts,
// reverted Duration later. Params are the type's parameters (see
// FaultTypes); they are decoded and checked by Validate, and get their
// defaults when the runner builds the fault.
type Fault struct {
	Name     string         `yaml:"name" json:"name" doc:"Unique name of the fault, used in thresholds as fault:NAME. Letters, digits, '.', '_' and '-'."`
	Type     string         `yaml:"type" json:"type" doc:"Fault type, e.g. network.latency or stream.stall."`
	At       Duration       `yaml:"at,omitempty" json:"at,omitempty" doc:"When to inject, from the start of the load, e.g. 15s. Default 0s."`
	Duration Duration       `yaml:"duration" json:"duration" doc:"How long the fault stays injected before it is reverted."`
	Target   *FaultTarget   `yaml:"target,omitempty" json:"target,omitempty" doc:"Where a proxy fault acts. Default: every target endpoint, through automatic proxies."`
	Params   map[string]any `yaml:"params,omitempty" json:"params,omitempty" doc:"Parameters of the fault type."`
}

// FaultTarget selects where a proxy fault acts (TargetProxy types only):
// a declared proxy, or some of the target's endpoints through the proxies
// the runner puts in front of them. Count and Percent pick that many of the
// selected endpoints at random (seeded); both unset: all of them.
type FaultTarget struct {
	Proxy     string  `yaml:"proxy,omitempty" json:"proxy,omitempty" doc:"Name of a proxy declared under proxies. Exclusive with endpoints, count and percent."`
	Endpoints []int   `yaml:"endpoints,omitempty" json:"endpoints,omitempty" doc:"Indexes (from 0) of the target endpoints to act on: llm urls or sim replicas. Default: all."`
	Count     int     `yaml:"count,omitempty" json:"count,omitempty" doc:"Act on this many of the selected endpoints, chosen at random (seeded)."`
	Percent   float64 `yaml:"percent,omitempty" json:"percent,omitempty" doc:"Act on this percentage of the selected endpoints (rounded up), chosen at random (seeded)."`
}

// Recovery sets how recovery_time{fault:NAME} is measured (DESIGN §3): from
// the fault's injection to the first moment, at or after its revert (its
// injection for an InstantaneousFault), from which every rolling Window
// with traffic holds the steady-state thresholds and has its TTFT and E2E
// p99 within LatencyBand times the baseline's, for Hold.
type Recovery struct {
	Window      Duration `yaml:"window,omitempty" json:"window,omitempty" doc:"Rolling window the recovery criteria are evaluated over. Default 5s."`
	Hold        Duration `yaml:"hold,omitempty" json:"hold,omitempty" doc:"How long every window must hold before the service counts as recovered. Default 10s."`
	LatencyBand float64  `yaml:"latency_band,omitempty" json:"latency_band,omitempty" doc:"A window counts as recovered only if its TTFT and E2E p99 are at most this many times the baseline's (the load before the first fault), never tighter than 50ms above it. 1 or more; default 1.5."`
	MinRequests int      `yaml:"min_requests,omitempty" json:"min_requests,omitempty" doc:"A window in which fewer requests finished is no evidence either way (skipped, as a window without traffic): from about 100, its p99 is no longer its slowest request, so one heavy-tailed request cannot decide it. Scaled with time_scale (at least 1). Default 1."`
}
