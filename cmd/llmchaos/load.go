package main

import (
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/internal/field"
	"github.com/llmchaos/llmchaos/pipeline/load"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/xk6-llm/client"
	"github.com/llmchaos/llmchaos/xk6-llm/engine"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Defaults of `llmchaos load` beyond the engine's.
const (
	// defaultProgress is the interval of the plain progress lines written
	// when stdout is not a terminal; on a terminal one line is rewritten
	// every second.
	defaultProgress = 5 * time.Second
)

// loadFlags holds `llmchaos load`'s flags as given: what needs parsing is
// kept as text and parsed by config, so that every problem is reported at
// once.
type loadFlags struct {
	Targets []string
	Kube    loadKubeFlags // a Kubernetes target instead of Targets
	Model   string
	Name    string

	// Load shape.
	Rate         float64
	Arrival      string
	Burstiness   float64
	Ramp         string
	Stages       string
	StartRate    float64
	Trace        string
	Concurrency  int
	ThinkTime    string
	RampUp       time.Duration
	MaxInFlight  int
	OnSaturation string
	Duration     time.Duration
	Requests     int
	Seed         int64
	Shard        string
	StartAt      string

	// Workload.
	Preset           string
	API              string
	Class            string
	InputTokens      string
	PromptTokens     string // --prompt-tokens, another name of --input-tokens
	OutputTokens     string
	MaxTokens        int
	MinTokens        int
	IgnoreEOS        bool
	Dataset          string
	DatasetFormat    string
	SharedPrefixes   string
	PrefixCount      int
	PrefixTokens     int
	PrefixShare      float64
	Turns            string
	SessionThinkTime string
	CancelRate       float64
	cancelRateSet    bool
	CancelAfterToks  string
	CancelAfter      string

	// Client.
	APIKeyEnv   string
	Headers     []string
	HTTP2       bool
	Transport   string
	IOThreads   int
	Timeout     time.Duration
	TTFTTimeout time.Duration
	IdleTimeout time.Duration
	NoPreflight bool

	// Run and output.
	Grace        time.Duration
	Out          []string // --out values, sorted by parseOuts
	HTML         string
	SaveRequests string
	Framed       bool
	Progress     time.Duration
	Summary      summaryFlags
	Verdict      verdictFlags
	Observe      observeFlags
	History      historyFlags
}

// defaultLoadFlags returns the flag defaults.
func defaultLoadFlags() loadFlags {
	return loadFlags{
		APIKeyEnv: client.DefaultAPIKeyEnv,
		Grace:     engine.DefaultGrace,
		Progress:  defaultProgress,
		Observe:   defaultObserveFlags(),
	}
}

// loadConfig is a checked `llmchaos load` run: the preset, the user's flags
// and the defaults combined. runLoad takes it.
type loadConfig struct {
	Targets []string
	// Kube is the Kubernetes target whose ready pods the load follows,
	// instead of Targets (nil: Targets).
	Kube     *loadKube
	Model    string
	Name     string
	Preset   string // "" for a custom workload
	Arrival  workload.ArrivalConfig
	Workload workload.Config
	RampUp   time.Duration
	Seed     int64
	// Shard is this process's part of the load (--shard; zero: all of
	// it); StartAt the instant the load starts at (--start-at; zero: as
	// soon as it is built).
	Shard   workload.Shard
	StartAt time.Time

	APIKeyEnv   string
	Headers     http.Header
	HTTP2       bool
	Transport   client.Transport
	IOThreads   int
	Timeout     time.Duration
	TTFTTimeout time.Duration
	IdleTimeout time.Duration
	NoPreflight bool

	// APIKeyEnvGiven is true when --api-key-env was given: then an unset
	// or empty variable is warned about (the default's is not: most local
	// servers take no key).
	APIKeyEnvGiven bool

	Grace time.Duration
	// Outputs are the reports to write (--out, --junit, --html), each a
	// row of report.Formats; a path of "-" is standard output.
	Outputs      []report.Output
	SaveRequests string
	// Framed writes what goes to stdout as shardjob frames, the human
	// lines on stdout too (--framed: a shard's pod log).
	Framed   bool
	Progress time.Duration
	Observe  observeConfig
	// Summary is how the terminal summary is rendered (--quiet,
	// --verbose, --summary-trend-stats); its colour is decided when it is
	// written, from NoColor and the terminal.
	Summary report.TextOptions
	NoColor bool

	Thresholds []assertions.Threshold
	SLO        recording.SLO
	// Goodput is --goodput as given (for the report's config).
	Goodput string
	// History records the run into the history with --history.
	History historyConfig
	// FieldName names a field of the workload by its flag, for problems
	// found once the load is built (a dataset's).
	FieldName field.Namer
}

// addLoadFlags binds the load command's flags to f.
func addLoadFlags(fs *pflag.FlagSet, f *loadFlags) {
	fs.StringSliceVar(&f.Targets, "target", nil, "base URL of an OpenAI-compatible API, e.g. http://127.0.0.1:8000/v1 (repeatable or comma-separated: sessions go round-robin)")
	f.Kube.add(fs)
	fs.StringVar(&f.Model, "model", "", "model name to request (required)")
	fs.StringVar(&f.Name, "name", "", "name of the run in reports (the JUnit testsuite's name)")

	fs.Float64Var(&f.Rate, "rate", 0, "open loop: requests (sessions) per second; inf sends --requests at once")
	fs.StringVar(&f.Arrival, "arrival", "", "inter-arrival shape of --rate, --ramp and --stages: constant, poisson or gamma (default poisson)")
	fs.Float64Var(&f.Burstiness, "burstiness", 0, "gamma shape B (vLLM's burstiness): < 1 burstier, > 1 smoother, 1 Poisson")
	fs.StringVar(&f.Ramp, "ramp", "", "open loop: rate moving linearly from R0 to R1 req/s over --duration, as R0:R1")
	fs.StringVar(&f.Stages, "stages", "", "open loop: ramping arrival rate, as DURATION:TARGET,... e.g. 30s:10,1m:50,30s:0")
	fs.Float64Var(&f.StartRate, "start-rate", 0, "rate the first of --stages starts from")
	fs.StringVar(&f.Trace, "trace", "", "open loop: replay the request times of a JSONL trace file")
	fs.IntVar(&f.Concurrency, "concurrency", 0, "closed loop: this many virtual users, each sending its next request when the previous one ended")
	fs.StringVar(&f.ThinkTime, "think-time", "", "closed loop: pause between a user's requests, a duration or a distribution (e.g. 1s, uniform:0.5s:2s)")
	fs.DurationVar(&f.RampUp, "ramp-up", 0, "closed loop: start the virtual users evenly over this time instead of all at once")
	fs.IntVar(&f.MaxInFlight, "max-in-flight", 0, "open loop: cap on requests in flight (0: none)")
	fs.StringVar(&f.OnSaturation, "on-saturation", "", "open loop, at --max-in-flight: wait (queue; the wait is client_queue) or drop (a dropped result) (default wait)")
	fs.DurationVar(&f.Duration, "duration", 0, "length of the schedule; in-flight requests then get --grace to finish")
	fs.IntVar(&f.Requests, "requests", 0, "number of requests (sessions) to schedule; with --duration, whichever ends first")
	fs.Var(seedFlag{&f.Seed}, "seed", "seed of the schedule, the workload and request ids: the same seed repeats the schedule and prompts (default: a random seed, recorded in the report)")
	fs.StringVar(&f.Shard, "shard", "", "run part INDEX of the load split over COUNT processes, as INDEX/COUNT from 0/COUNT (e.g. a Kubernetes Indexed Job's $(JOB_COMPLETION_INDEX)/COUNT): every shard gets the same flags and --seed and sends arrivals k of the whole schedule with k mod COUNT = INDEX (a closed loop: its share of the virtual users); merge the reports with llmchaos merge")
	fs.StringVar(&f.StartAt, "start-at", "", "start the schedule at this wall-clock instant, RFC 3339 (e.g. 2025-06-01T12:00:00Z), so that shards on several machines start together; waits for it after the pre-flight check (Ctrl-C ends the wait); now: at once")

	fs.StringVar(&f.Preset, "workload", "", "preset traffic class: chat, batch, completion or agent (flags given on top override it)")
	fs.StringVar(&f.API, "api", "", "chat (/chat/completions) or completions (/completions) (default chat)")
	fs.StringVar(&f.Class, "class", "", "request class tag of every result (default: the preset's name, or custom)")
	fs.StringVar(&f.InputTokens, "input-tokens", "", "prompt length in tokens: N, uniform:LO:HI, normal:MEAN:SD, lognormal:MEDIAN:SIGMA (with ,min=,max=)")
	fs.StringVar(&f.PromptTokens, "prompt-tokens", "", "another name of --input-tokens")
	fs.StringVar(&f.OutputTokens, "output-tokens", "", "max_tokens of each request, a length distribution as --input-tokens")
	fs.IntVar(&f.MaxTokens, "max-tokens", 0, "max_tokens of every request (same as --output-tokens N)")
	fs.IntVar(&f.MinTokens, "min-tokens", 0, "min_tokens of every request (capped at its max_tokens)")
	fs.BoolVar(&f.IgnoreEOS, "ignore-eos", false, "ask the server to generate exactly max_tokens (vLLM's ignore_eos)")
	fs.StringVar(&f.Dataset, "dataset", "", "prompt dataset: ShareGPT JSON or JSONL with prompt or messages")
	fs.StringVar(&f.DatasetFormat, "dataset-format", "", "sharegpt or jsonl (default: by file extension)")
	fs.StringVar(&f.SharedPrefixes, "shared-prefixes", "", "N system prompts of L tokens shared by a share of sessions, as N:L[:SHARE] (share default 1)")
	fs.IntVar(&f.PrefixCount, "prefix-count", 0, "number of shared system prompts (or use --shared-prefixes)")
	fs.IntVar(&f.PrefixTokens, "prefix-tokens", 0, "length of each shared system prompt in tokens")
	fs.Float64Var(&f.PrefixShare, "prefix-share", 0, "share of sessions that use a shared system prompt, in [0, 1]")
	fs.StringVar(&f.Turns, "turns", "", "user turns per session, a length distribution (multi-turn: history grows)")
	fs.StringVar(&f.SessionThinkTime, "session-think-time", "", "pause after a turn's reply before the session's next turn")
	fs.Var(shareFlag{&f.CancelRate, &f.cancelRateSet}, "cancel-rate", "share of requests the client cancels on purpose (e.g. 30%), after --cancel-after-tokens or --cancel-after")
	fs.StringVar(&f.CancelAfterToks, "cancel-after-tokens", "", "cancel after this many content chunks (a length distribution)")
	fs.StringVar(&f.CancelAfter, "cancel-after", "", "cancel this long after send (a duration distribution)")

	fs.StringVar(&f.APIKeyEnv, "api-key-env", f.APIKeyEnv, "environment variable holding the API key (sent as a bearer token, never printed)")
	fs.StringArrayVar(&f.Headers, "header", nil, "extra request header K:V (repeatable); values never appear in reports")
	fs.BoolVar(&f.HTTP2, "http2", false, "speak HTTP/2 (h2c to http targets) instead of HTTP/1.1")
	fs.StringVar(&f.Transport, "client", string(client.TransportAuto), "how http:// HTTP/1.1 requests go out: eventloop (epoll threads, about one system call per token), nethttp (Go's net/http, a goroutine per stream) or auto (eventloop on Linux); https and --http2 always use nethttp")
	fs.IntVar(&f.IOThreads, "io-threads", 0, "event loops of --client eventloop, each with its own epoll set (0: one per four cores, at least one)")
	fs.DurationVar(&f.Timeout, "timeout", 0, "bound on a whole request, send to end of stream (0: none)")
	fs.DurationVar(&f.TTFTTimeout, "ttft-timeout", 0, "bound on the time from send to the first content chunk (0: none); a request cut by it failed (class timeout)")
	fs.DurationVar(&f.IdleTimeout, "idle-timeout", 0, "bound on the server's silence: to the first byte and between reads (0: none)")
	fs.BoolVar(&f.NoPreflight, "no-preflight", false, "skip the pre-flight check (GET /models lists --model, else one max_tokens 1 request) that stops a run the server refuses (wrong model, path or key) before it starts")

	fs.DurationVar(&f.Grace, "grace", f.Grace, "time in-flight requests get to finish after the schedule ends, before they are cancelled")
	addOutFlag(fs, &f.Out)
	fs.StringVar(&f.HTML, "html", "", "write the self-contained HTML report (latency, throughput and server plots, tables, verdicts) to this file")
	fs.StringVar(&f.SaveRequests, "save-requests", "", "write one JSON line per request to this file (- for stdout, before the report when --out is - too)")
	fs.BoolVar(&f.Framed, "framed", false, "write what goes to standard output (--out -, --save-requests -) as frame lines a reader verifies and reassembles from any interleaving with other output, and every other line to stdout too: how a shard's pod log hands its report back (shard-job and workload.shards set it)")
	fs.DurationVar(&f.Progress, "progress", f.Progress, "interval of the progress lines when stdout is not a terminal (0: no live output)")
	f.Summary.add(fs, "print only the verdict line, and warnings and errors on stderr: no start line, no live progress, no summary table")
	f.Verdict.add(fs)
	f.Observe.add(fs)
	f.History.add(fs, false)

	// Each flag of the workload says the field it sets, so that the
	// workload's problems, keyed by field, name the flag (fieldFlags).
	for _, ff := range []struct {
		flag  string
		f     field.Path
		alias bool
	}{
		{flag: "rate", f: workload.FieldRate}, {flag: "arrival", f: workload.FieldArrival}, {flag: "burstiness", f: workload.FieldBurstiness},
		{flag: "ramp", f: workload.FieldRamp}, {flag: "stages", f: workload.FieldStages}, {flag: "start-rate", f: workload.FieldStartRate},
		{flag: "trace", f: workload.FieldTrace}, {flag: "concurrency", f: workload.FieldConcurrency}, {flag: "think-time", f: workload.FieldThinkTime},
		{flag: "max-in-flight", f: workload.FieldMaxInFlight}, {flag: "on-saturation", f: workload.FieldOnSaturation},
		{flag: "duration", f: workload.FieldDuration}, {flag: "requests", f: workload.FieldRequests},
		{flag: "workload", f: workload.FieldPreset}, {flag: "api", f: workload.FieldAPI}, {flag: "class", f: workload.FieldClass},
		{flag: "input-tokens", f: workload.FieldInputTokens}, {flag: "prompt-tokens", f: workload.FieldInputTokens, alias: true},
		{flag: "output-tokens", f: workload.FieldOutputTokens}, {flag: "max-tokens", f: workload.FieldOutputTokens, alias: true},
		{flag: "min-tokens", f: workload.FieldMinTokens}, {flag: "ignore-eos", f: workload.FieldIgnoreEOS},
		{flag: "dataset", f: workload.FieldDataset}, {flag: "dataset-format", f: workload.FieldDatasetFormat},
		{flag: "prefix-count", f: workload.FieldPrefixCount}, {flag: "prefix-tokens", f: workload.FieldPrefixTokens}, {flag: "prefix-share", f: workload.FieldPrefixShare},
		{flag: "turns", f: workload.FieldTurns}, {flag: "session-think-time", f: workload.FieldSessionThinkTime},
		{flag: "cancel-rate", f: workload.FieldCancelShare}, {flag: "cancel-after-tokens", f: workload.FieldCancelAfterTokens}, {flag: "cancel-after", f: workload.FieldCancelAfter},
		{flag: "ramp-up", f: workload.FieldRampUp}, {flag: "shard", f: workload.FieldShard},
	} {
		setsField(fs, ff.flag, ff.f, ff.alias)
	}
}

// config checks the flags and combines them with the preset and the
// defaults. Every problem is reported at once; each names its flag.
func (f *loadFlags) config(fs *pflag.FlagSet) (loadConfig, error) {
	c := loadConfig{
		Model: f.Model, Name: f.Name, Preset: f.Preset, RampUp: f.RampUp, Seed: f.Seed,
		APIKeyEnv: f.APIKeyEnv, HTTP2: f.HTTP2, Timeout: f.Timeout, TTFTTimeout: f.TTFTTimeout, IdleTimeout: f.IdleTimeout, NoPreflight: f.NoPreflight,
		Grace: f.Grace, SaveRequests: f.SaveRequests, Framed: f.Framed, Progress: f.Progress,
		Goodput: f.Verdict.Goodput, APIKeyEnvGiven: fs.Changed("api-key-env"),
	}
	errs := f.target(fs, &c)
	errs = append(errs, f.workload(fs, &c)...)
	errs = append(errs, f.client(&c)...)
	errs = append(errs, f.outputs(fs, &c)...)
	return c, errors.Join(errs...)
}

// target checks where the load goes and how it is seeded and split: the
// targets (or a Kubernetes target), the model, --seed, --shard and
// --start-at.
func (f *loadFlags) target(fs *pflag.FlagSet, c *loadConfig) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	for _, t := range f.Targets {
		t = strings.TrimSpace(t)
		if t == "" {
			continue
		}
		u, err := url.Parse(t)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("--target %q: want a base URL such as http://127.0.0.1:8000/v1", t)
			continue
		}
		c.Targets = append(c.Targets, strings.TrimRight(t, "/"))
	}
	kt, kubeGiven, kubeErrs := f.Kube.config(fs, len(f.Targets) > 0)
	errs = append(errs, kubeErrs...)
	c.Kube = kt
	if len(f.Targets) == 0 && !kubeGiven {
		bad("--target is required: the base URL of the API, e.g. --target http://127.0.0.1:8000/v1 (or the pods of a Kubernetes target: --kubernetes-selector or --kubernetes-service)")
	}
	if f.Model == "" {
		bad("--model is required: the served model's name (GET /v1/models lists it)")
	}
	if !fs.Changed("seed") {
		var b [8]byte
		if _, err := crand.Read(b[:]); err != nil {
			bad("--seed: no seed given and no random one available: %v", err)
		}
		// 53 bits: the seed is recorded in JSON, whose readers often
		// hold numbers as doubles, and a replay needs it exact.
		c.Seed = int64(binary.LittleEndian.Uint64(b[:]) >> 11)
	} else if f.Seed < 0 {
		bad("--seed %d must not be negative", f.Seed)
	}
	if f.Shard != "" {
		sh, err := workload.ParseShard(f.Shard)
		if err != nil {
			bad("--shard: %w", err)
		}
		c.Shard = sh
	}
	if f.StartAt != "" {
		at, err := parseStartAt(f.StartAt, time.Now())
		if err != nil {
			bad("--start-at: %w", err)
		}
		c.StartAt = at
	}
	return errs
}

// workload resolves the load shape and the workload through
// workload.Resolve, the resolver an experiment's workload: mapping takes:
// the flags given on top of the preset, the defaults, the checks (the
// ramp-up, the split over --shard). Each flag of the workload sets the
// field its annotation names (addLoadFlags); a flag given as text is
// parsed by the resolver (workload.Given.Set), and every problem comes
// back keyed by its field, named here by its flag.
func (f *loadFlags) workload(fs *pflag.FlagSet, c *loadConfig) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	g := workload.Given{
		Preset: f.Preset, RampUp: f.RampUp, Shard: c.Shard, NoCancel: f.cancelRateSet && f.CancelRate == 0,
		Arrival: workload.ArrivalConfig{
			Rate: f.Rate, Arrival: workload.ArrivalKind(f.Arrival), Burstiness: f.Burstiness, StartRate: f.StartRate,
			TraceFile: f.Trace, Duration: f.Duration, Requests: f.Requests, Concurrency: f.Concurrency,
			MaxInFlight: f.MaxInFlight, OnSaturation: workload.Saturation(f.OnSaturation),
		},
		Workload: workload.Config{
			Name: f.Class, API: workload.APIKind(f.API), MinTokens: f.MinTokens, IgnoreEOS: f.IgnoreEOS,
			Dataset: f.Dataset, DatasetFormat: workload.DatasetFormat(f.DatasetFormat),
			PrefixCount: f.PrefixCount, PrefixTokens: f.PrefixTokens, PrefixShare: f.PrefixShare, CancelShare: f.CancelRate,
		},
	}
	fs.Visit(func(fl *pflag.Flag) {
		if v := fl.Annotations[fieldAnnotation]; len(v) > 0 && fl.Value.Type() == "string" && workload.TextField(field.Path(v[0])) {
			g.Set(field.Path(v[0]), fl.Value.String())
		}
	})
	// Two names of one field (the resolver sees one field).
	if f.InputTokens != "" && f.PromptTokens != "" {
		bad("--input-tokens and --prompt-tokens are both set: --prompt-tokens is another name of --input-tokens; give one")
	}
	if fs.Changed("max-tokens") {
		switch {
		case f.OutputTokens != "":
			bad("--max-tokens and --output-tokens are both set: --max-tokens N is --output-tokens N")
		case f.MaxTokens < 1:
			bad("--max-tokens %d must be ≥ 1", f.MaxTokens)
		default:
			g.Workload.OutputTokens = workload.FixedDist(f.MaxTokens)
		}
	}
	if f.SharedPrefixes != "" {
		if fs.Changed("prefix-count") || fs.Changed("prefix-tokens") || fs.Changed("prefix-share") {
			bad("--shared-prefixes and --prefix-count/--prefix-tokens/--prefix-share are both set: use one or the other")
		}
		n, l, share, err := parseSharedPrefixes(f.SharedPrefixes)
		if err != nil {
			bad("--shared-prefixes %q: %w", f.SharedPrefixes, err)
		}
		g.Workload.PrefixCount, g.Workload.PrefixTokens, g.Workload.PrefixShare = n, l, share
	}

	res, ps := workload.Resolve(g)
	c.Arrival, c.Workload = res.Arrival, res.Workload
	c.FieldName = fieldFlags(fs)
	for _, p := range ps {
		if p.Missing && p.Path == workload.FieldInputTokens && f.Preset == "" {
			bad("no workload: choose --workload chat|batch|completion|agent, or give --input-tokens or --dataset")
			continue
		}
		errs = append(errs, errors.New(p.Message(c.FieldName)))
	}
	return errs
}

// client checks how requests go out: the client, its threads, the API
// key's variable, the headers and the timeouts.
func (f *loadFlags) client(c *loadConfig) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if tr, err := client.ParseTransport(f.Transport); err != nil {
		bad("--client: %v", err)
	} else {
		c.Transport = tr
	}
	if f.IOThreads < 0 {
		bad("--io-threads %d: must not be negative", f.IOThreads)
	}
	c.IOThreads = f.IOThreads
	if f.APIKeyEnv == "" {
		bad("--api-key-env is empty: name the environment variable that holds the key (default %s)", client.DefaultAPIKeyEnv)
	}
	c.Headers = make(http.Header)
	for _, h := range f.Headers {
		k, v, ok := strings.Cut(h, ":")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			// The value is not quoted: it may be a credential.
			bad("--header %q: want NAME:VALUE", redactHeaderArg(h))
			continue
		}
		c.Headers.Add(k, strings.TrimSpace(v))
	}
	for _, d := range []struct {
		flag string
		d    time.Duration
	}{{"--timeout", f.Timeout}, {"--ttft-timeout", f.TTFTTimeout}, {"--idle-timeout", f.IdleTimeout}, {"--grace", f.Grace}, {"--progress", f.Progress}} {
		if d.d < 0 {
			bad("%s %v must not be negative", d.flag, d.d)
		}
	}
	return errs
}

// outputs checks what the run writes and how it is judged: the reports
// (whose folders must exist before a long run, not after it), the
// summary, the live outputs, the thresholds and the history.
func (f *loadFlags) outputs(fs *pflag.FlagSet, c *loadConfig) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	outs, outErrs := parseOuts(f.Out)
	errs = append(errs, outErrs...)
	c.Outputs = loadOutputs(outs, f.Verdict.JUnit, f.HTML)
	text, err := f.Summary.options()
	if err != nil {
		errs = append(errs, err)
	}
	c.Summary, c.NoColor = text, f.Summary.NoColor
	for i := range c.Outputs {
		c.Outputs[i].Text = fileText(text)
	}
	obs, obsErrs := f.Observe.config(fs, outs.RemoteWrite)
	errs = append(errs, obsErrs...)
	c.Observe = obs
	paths := outs.paths()
	for _, o := range []outPath{{"--save-requests", f.SaveRequests}, {"--junit", f.Verdict.JUnit}, {"--html", f.HTML}} {
		if o.path != report.Stdout {
			paths = append(paths, o)
		}
	}
	for _, o := range paths {
		if o.path == "" {
			continue
		}
		if st, err := os.Stat(filepath.Dir(o.path)); err != nil || !st.IsDir() {
			bad("%s %s: folder %s does not exist", o.flag, o.path, filepath.Dir(o.path))
		}
	}
	if n := countStdout(c.Outputs); n > 1 {
		bad("%d reports are asked for on standard output (-): give it to one", n)
	}
	if c.Framed && !c.toStdout() {
		bad("--framed: nothing goes to standard output to frame: give --out - or --save-requests -")
	}
	ths, slo, err := f.Verdict.parse()
	if err != nil {
		errs = append(errs, errors.Unwrap(err))
	}
	c.Thresholds, c.SLO = ths, slo
	hist, err := f.History.config(fs, false)
	if err != nil {
		errs = append(errs, err)
	}
	c.History = hist
	return errs
}

// loadOutputs lists the reports a load writes: the JSON report and the
// other formats of --out, then --junit and --html.
func loadOutputs(outs outputs, junit, html string) []report.Output {
	var list []report.Output
	if outs.JSON != "" {
		list = append(list, report.Output{Format: report.FormatJSON, Path: outs.JSON})
	}
	list = append(list, outs.Reports...)
	if junit != "" {
		list = append(list, report.Output{Format: report.FormatJUnit, Path: junit})
	}
	if html != "" {
		list = append(list, report.Output{Format: report.FormatHTML, Path: html, Flag: "--html"})
	}
	return list
}

// countStdout counts the outputs written to standard output.
func countStdout(outs []report.Output) int {
	n := 0
	for _, o := range outs {
		if o.Path == report.Stdout {
			n++
		}
	}
	return n
}

// toStdout reports whether stdout holds machine output (a report, or the
// --save-requests lines): the human lines then go to stderr.
func (c loadConfig) toStdout() bool {
	return countStdout(c.Outputs) > 0 || c.SaveRequests == report.Stdout
}

// fieldAnnotation is the pflag annotation by which a flag says the field
// of the workload it sets.
const fieldAnnotation = "llmchaos/field"

// setsField records that flag sets field f; alias marks another name of
// a flag that sets it too (--prompt-tokens of --input-tokens).
func setsField(fs *pflag.FlagSet, flag string, f field.Path, alias bool) {
	v := []string{string(f)}
	if alias {
		v = append(v, "alias")
	}
	if err := fs.SetAnnotation(flag, fieldAnnotation, v); err != nil {
		panic(err) // a flag of the table above is not defined
	}
}

// fieldFlags names a field by the flag that sets it (--rate): the flag
// given when several set it (--prompt-tokens for input_tokens), else the
// one that is not an alias.
func fieldFlags(fs *pflag.FlagSet) field.Namer {
	return func(p field.Path) string {
		var main string
		given := ""
		fs.VisitAll(func(fl *pflag.Flag) {
			v := fl.Annotations[fieldAnnotation]
			if len(v) == 0 || v[0] != string(p) {
				return
			}
			if fl.Changed && given == "" {
				given = "--" + fl.Name
			}
			if len(v) == 1 {
				main = "--" + fl.Name
			}
		})
		switch {
		case given != "":
			return given
		case main != "":
			return main
		}
		return string(p)
	}
}

// parseSharedPrefixes reads N:L[:SHARE].
func parseSharedPrefixes(s string) (n, l int, share float64, err error) {
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, 0, 0, errors.New("want N:L or N:L:SHARE, e.g. 4:2048:0.8")
	}
	if n, err = strconv.Atoi(parts[0]); err != nil || n < 1 {
		return 0, 0, 0, fmt.Errorf("count %q: want a whole number ≥ 1", parts[0])
	}
	if l, err = strconv.Atoi(parts[1]); err != nil || l < 1 {
		return 0, 0, 0, fmt.Errorf("length %q: want a whole number of tokens ≥ 1", parts[1])
	}
	share = 1
	if len(parts) == 3 {
		if share, err = parseShare(parts[2]); err != nil {
			return 0, 0, 0, fmt.Errorf("share: %w", err)
		}
	}
	return n, l, share, nil
}

// parseStartAt reads --start-at: "now" (the zero time: start at once) or
// an RFC 3339 instant, with fractional seconds or without, and with a space
// or a T between date and time (date --rfc-3339 writes a space). An instant
// more than load.StartLateTolerance before now is an error.
func parseStartAt(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if strings.EqualFold(s, "now") {
		return time.Time{}, nil
	}
	v := s
	if len(v) > 10 && v[10] == ' ' {
		v = v[:10] + "T" + v[11:]
	}
	at, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q: want an RFC 3339 instant such as 2025-06-01T12:00:00Z or 2025-06-01T14:00:00.5+02:00 (date -u -d '+30 seconds' +%%Y-%%m-%%dT%%H:%%M:%%SZ), or now", s)
	}
	if late := now.Sub(at); late > load.StartLateTolerance {
		return time.Time{}, fmt.Errorf("%s is %v in the past: give an instant far enough ahead for every shard to be started and checked, or now", at.Format(time.RFC3339Nano), late.Round(time.Millisecond))
	}
	return at, nil
}

// redactHeaderArg hides what may be a credential in a malformed --header.
func redactHeaderArg(h string) string {
	if len(h) <= 3 {
		return h
	}
	return h[:3] + "…"
}

func newLoadCmd() *cobra.Command {
	f := defaultLoadFlags()
	cmd := &cobra.Command{
		Use:   "load",
		Short: "Drive streaming LLM load at an OpenAI-compatible endpoint and report what it measured",
		Long: `load sends streaming chat or completion requests to one or more OpenAI-compatible
base URLs on a schedule, records one result per scheduled request, whatever
happens, and reports TTFT, ITL, TPOT, end-to-end latency, send lag, client
queue time, request outcomes by error class, throughput and quality rates.

Load shape: an open loop (--rate with --arrival constant|poisson|gamma and
--burstiness, --ramp R0:R1, --stages, or --trace) on an absolute-time
schedule, optionally capped by --max-in-flight with --on-saturation wait or
drop; or a closed loop of --concurrency virtual users with --think-time.
End it with --duration and/or --requests; requests in flight then get
--grace before they are cancelled. --seed repeats an open-loop run's
schedule, prompts and request ids exactly (a closed loop's timing follows
the server's answers).

Shards: a load too large for one machine runs as COUNT processes, each given
the same flags and --seed plus --shard INDEX/COUNT and one --start-at
instant (their clocks must agree, e.g. by NTP). Every shard draws the whole
schedule and sends the arrivals k with k mod COUNT = INDEX: round-robin, so
each shard is a COUNT-times thinner copy of the load spread over the whole
run, and the shards together send exactly the single-process schedule, each
request with its single-process sequence number and request id (sessions of
one turn; later turns are numbered by their shard). A closed loop is split
by virtual user (shard INDEX runs users u with u mod COUNT = INDEX, as in one
process), and --max-in-flight and a closed loop's --requests are split as
evenly as whole numbers allow; when a closed loop's users send still
follows the server's answers. Each shard's JSON report carries its shard;
llmchaos merge checks that the reports are one set and adds them up.

Kubernetes: instead of --target, --kubernetes-selector (with
--kubernetes-port) or --kubernetes-service (and --kubernetes-namespace,
--kubernetes-path, --kubeconfig, --kube-context; in a pod, its service
account, which must list and watch pods or EndpointSlices) sends the load to
the target's ready pods and follows them while it runs, as an experiment's
target.kubernetes does: the endpoints are listed before the start (the load
fails when none is ready within 30 s), each request goes to a pod ready at
its send (round-robin), its result is tagged with the pod's name, and the
pods that join or leave are printed and recorded in the report's events.
Shards given these flags each follow the pods themselves, so that a pod
replaced during the load gets its share of every shard's requests.

Workload: a preset (--workload chat|batch|completion|agent) or your own
lengths (--input-tokens, or its other name --prompt-tokens; --output-tokens)
or a --dataset, with shared
prefixes, multi-turn sessions (--turns) and client cancellation
(--cancel-rate); flags given on top of a preset override it.

While it runs, a line every second on a terminal (elapsed, req/s, in flight,
p99 TTFT of the last 10 s, errors, tokens/s), plain lines every --progress
otherwise; at the end a summary table, --out writes the JSON report (its
config has secrets removed), --junit the thresholds as JUnit XML, --html a
self-contained HTML report.

Observability: --metrics-listen serves the live llmchaos_* Prometheus series
(latency histograms, requests by outcome and error class, in flight, thresholds)
while the run lasts; --out prometheus-rw=URL pushes them by remote write;
--otlp-endpoint exports one span per request. The server-side monitor
scrapes each target's /metrics every --scrape-interval (vLLM's KV cache,
running and waiting requests, preemptions) into the reports; a target
without /metrics gets one warning and the run goes on (--no-scrape turns it
off). Problems of these live outputs are printed as warnings and do not
change the exit code.

Before the load, a pre-flight check reads each target's /models (else sends
one max_tokens 1 request): a target that refuses for good (a model it does
not serve, a base URL without /v1, a refused key) stops the run with the
server's message and exit 2; --no-preflight skips it.

Exit codes: 0 the run passed (or had no thresholds: no verdict); 99 a
--threshold failed; 98 the run was aborted, by a stop condition or by Ctrl-C
(SIGINT, SIGTERM, SIGHUP, SIGQUIT: requests in flight are cancelled, the
reports are still written and name the cause); 2 bad flags or configuration,
or a failed pre-flight check; 1 anything else.

History: with --history (.llmchaos/history.db, another SQLite file, or a
postgres:// URL) the run is recorded there, labelled (--label KEY=VALUE) and
checked against its comparable runs as llmchaos run does (--max-regression,
--fail-on-regression: exit 99, --regression-runs); a history that cannot be
written is a warning.`,
		Example: `  llmchaos load --target http://127.0.0.1:8000/v1 --model llmchaos-sim --rate 20 --duration 30s --workload chat \
    --out run.json
  llmchaos load --target http://a:8000/v1,http://b:8000/v1 --model M --concurrency 64 --requests 1000 \
    --input-tokens 1024 --output-tokens 256 --ignore-eos
  llmchaos load --target http://127.0.0.1:8000/v1 --model M --rate 50 --duration 1m --workload chat \
    --threshold 'ttft: p(99)<500ms' --junit junit.xml
  llmchaos load --target http://127.0.0.1:8000/v1 --model M --rate 20 --duration 5m --workload chat \
    --metrics-listen :9464 --out prometheus-rw=http://127.0.0.1:9090/api/v1/write --html run.html
  # one load of 400 req/s from two machines, then one report:
  llmchaos load --target http://vllm:8000/v1 --model M --rate 400 --duration 5m --workload chat --seed 7 \
    --shard 0/2 --start-at 2025-06-01T12:00:00Z --out a.json   # machine A
  llmchaos load --target http://vllm:8000/v1 --model M --rate 400 --duration 5m --workload chat --seed 7 \
    --shard 1/2 --start-at 2025-06-01T12:00:00Z --out b.json   # machine B
  llmchaos merge a.json b.json -o all.json
  # the ready pods of a Deployment, followed while the load runs:
  llmchaos load --kubernetes-namespace llm --kubernetes-selector app=vllm --kubernetes-port 8000 --model M \
    --rate 20 --duration 5m --workload chat --out run.json`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := f.config(cmd.Flags())
			if err != nil {
				return usageError(err)
			}
			return runLoad(cmd.Context(), cfg, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	addLoadFlags(cmd.Flags(), &f)
	return cmd
}

// fmtRateValue writes a rate for the config record: a number, or "inf".
func fmtRateValue(r float64) any {
	if math.IsInf(r, 1) {
		return "inf"
	}
	return r
}
