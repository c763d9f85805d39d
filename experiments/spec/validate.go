package spec

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/internal/field"
	"github.com/llmchaos/llmchaos/internal/kube/api/validation"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/simcontract/simconfig"
	"github.com/llmchaos/llmchaos/simcontract/vgpu"
	"github.com/llmchaos/llmchaos/xk6-llm/metrics"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// Validate checks s without changing it (it fills no defaults: that is
// WithDefaults) and returns every problem found, errors and warnings, in
// path order; nil when there is none. A spec is valid when
// Validate().Err() is nil. The problems of a spec built in code carry key
// paths but no file positions; Load's carry both.
//
// It checks: apiVersion and kind; the name; exactly one target kind and its
// settings; proxies; the workload as `llmchaos load` would run it; steady
// state probes; each fault (unique name, known type, valid params and
// target, inside the load's duration); stop conditions, thresholds and
// goodput in the threshold grammar, with fault:NAME tags naming declared
// faults; and recovery.
//
// Decisions: a fault that starts after the load ends, or ends after it,
// is an error (it would not run as written); a fault that leaves less than
// the recovery hold before the load ends is a warning (its recovery cannot
// be seen, so it will report recovered: false).
func (s *Spec) Validate() field.Problems { return s.ValidateFile("") }

// ValidateFile is Validate for the spec of the experiment file at file:
// the relative paths it holds (workload.script) are resolved from the
// file's directory ("" file: the working directory), as the runner
// resolves them.
func (s *Spec) ValidateFile(file string) field.Problems {
	iss := s.check(nil, baseDir(file))
	if len(iss) == 0 {
		return nil
	}
	ps := make(field.Problems, len(iss))
	for i, is := range iss {
		ps[i] = problemAt("", 0, 0, is.path, is.msg, is.warn)
	}
	sortProblems(ps)
	return ps
}

// validator holds what the checks learn about the spec as they go.
type validator struct {
	s *Spec
	// resolved is the workload as resolved by the check (preset,
	// defaults), and params each fault's params as decoded (no target
	// env filled in), for Resolve to keep.
	resolved workload.Resolved
	params   map[int]any
	iss      issues
	dec      *decoder
	types    map[string]FaultType
	faults   map[string]int // fault name → index
	// loadEnd is when the load ends, 0 when it is not a set time.
	loadEnd time.Duration
	// class is the request class of the workload's results, "" if unknown.
	class string
	// endpoints is the number of target endpoints, 0 if unknown.
	endpoints int
	proxies   map[string]Proxy
	// zeros holds the paths at which the file writes an explicit 0 (see
	// decoder.zeros); nil for a spec built in code, where 0 is unset.
	zeros map[string]bool
	// lookupEnv reads the environment (os.LookupEnv).
	lookupEnv func(string) (string, bool)
	// dir is the directory relative paths are resolved from.
	dir string
	// metrics is the metric table thresholds may name: the built-ins, and
	// a script workload's custom metrics (nil: the built-ins).
	metrics *metrics.Registry
	// kubeBroken is set when target.kubernetes's selector or namespace has
	// a problem, which the faults that take them would only repeat.
	kubeBroken bool
	// scriptFailed is set when a script workload could not be inspected:
	// its end and its custom metrics are not known, so neither the fault
	// times nor the metric names can be checked against them.
	scriptFailed bool
}

// check runs every check; zeros are the paths of explicit zeros in the file
// the spec was decoded from (nil when it was built in code), dir the
// directory its relative paths are resolved from.
func (s *Spec) check(zeros map[string]bool, dir string) issues {
	return s.checker(zeros, dir).iss
}

// checker runs every check of s and returns the validator, with what it
// resolved on the way.
func (s *Spec) checker(zeros map[string]bool, dir string) *validator {
	v := &validator{s: s, types: FaultTypes(), faults: map[string]int{}, proxies: map[string]Proxy{}, zeros: zeros, lookupEnv: os.LookupEnv, dir: dir}
	v.dec = newDecoder(&v.iss)
	v.header()
	v.metadata()
	v.target()
	v.proxyList()
	v.workload()
	v.faultList()
	v.steadyState()
	v.stopConditions()
	v.thresholds()
	v.recovery()
	v.probes()
	v.goodput()
	v.schedule()
	v.blastRadius()
	v.explicitZeros()
	return v
}

// MaxRate is the highest request rate, in requests per second, an
// experiment's workload may ask for: above it a rate is a typo (1e12)
// rather than a load one client process could send.
const MaxRate = 1e6

var (
	nameRE      = regexp.MustCompile(`^[a-z0-9]([a-z0-9._-]{0,61}[a-z0-9])?$`)
	faultNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)
	envNameRE   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	headerRE    = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
)

func (v *validator) header() {
	switch v.s.APIVersion {
	case APIVersion:
	case "":
		v.iss.add("apiVersion", "missing: write apiVersion: %s", APIVersion)
	default:
		v.iss.add("apiVersion", "%q is not supported: write apiVersion: %s", v.s.APIVersion, APIVersion)
	}
	switch v.s.Kind {
	case KindExperiment:
	case "":
		v.iss.add("kind", "missing: write kind: %s", KindExperiment)
	default:
		v.iss.add("kind", "%q is not supported: write kind: %s", v.s.Kind, KindExperiment)
	}
}

func (v *validator) metadata() {
	m := v.s.Metadata
	switch {
	case m.Name == "":
		v.iss.add("metadata.name", "missing: name the experiment (it names its reports and run directory)")
	case !nameRE.MatchString(m.Name):
		v.iss.add("metadata.name", "%q: use lower-case letters, digits, '.', '_' and '-', starting and ending with a letter or digit, at most 63 characters", m.Name)
	}
	for k := range m.Labels {
		if strings.TrimSpace(k) == "" {
			v.iss.addKey(child("metadata.labels", k), "empty label name")
		}
	}
}

func (v *validator) target() {
	t := v.s.Target
	var set []string
	for _, k := range []struct {
		key string
		set bool
	}{{"sim", t.Sim != nil}, {"llm", t.LLM != nil}, {"kubernetes", t.Kubernetes != nil}} {
		if k.set {
			set = append(set, k.key)
		}
	}
	switch {
	case len(set) == 0:
		v.iss.add("target", "missing: set sim (the built-in simulator; sim: {} for its defaults), llm (an OpenAI-compatible endpoint) or kubernetes (pods behind a Service)")
	case len(set) > 1:
		both := "both " + strings.Join(set, " and ")
		if len(set) > 2 {
			both = strings.Join(set[:len(set)-1], ", ") + " and " + set[len(set)-1]
		}
		v.iss.addKey("target."+set[len(set)-1], "target has %s: keep one", both)
	}
	if t.Sim != nil {
		v.simTarget(*t.Sim)
	}
	if t.LLM != nil {
		v.llmTarget(*t.LLM)
	}
	if t.Kubernetes != nil {
		v.kubernetesTarget(*t.Kubernetes)
	}
}

func (v *validator) simTarget(t SimTarget) {
	const p = "target.sim"
	switch {
	case t.Replicas < 0 || t.Replicas > 64:
		v.iss.add(p+".replicas", "%d: want 1 to 64", t.Replicas)
	default:
		v.endpoints = t.EndpointCount()
	}
	switch t.Migrate {
	case simconfig.MigrateOff:
	case simconfig.MigrateClean, simconfig.MigrateDuplicate, simconfig.MigrateDrop:
		if t.Replicas < 2 {
			v.iss.add(p+".migrate", "a stream migrates to another replica: want replicas: 2 or more")
		}
	default:
		v.iss.add(p+".migrate", "%q: want %s, %s or %s", t.Migrate, simconfig.MigrateClean, simconfig.MigrateDuplicate, simconfig.MigrateDrop)
	}
	if t.StartupTime < 0 {
		v.iss.add(p+".startup_time", "%v is negative", t.StartupTime)
	}
	if t.RestartDelay < 0 {
		v.iss.add(p+".restart_delay", "%v is negative", t.RestartDelay)
	}
	// The engine's own checks below run unless a key they read has a
	// problem here (they would only repeat it); the keys above are not
	// theirs, so that their problems and the engine's show at once.
	n := len(v.iss)
	switch t.Divergence {
	case simconfig.DivergenceOff, simconfig.DivergencePreempt, simconfig.DivergenceBatch:
	default:
		v.iss.add(p+".divergence", "%q: want %s or %s (or leave it out: never)", t.Divergence, simconfig.DivergencePreempt, simconfig.DivergenceBatch)
	}
	switch {
	case t.DivergenceMinBatch == 0:
	case t.Divergence != simconfig.DivergenceBatch:
		v.iss.add(p+".divergence_min_batch", "applies to divergence: batch only; add divergence: batch")
	case t.DivergenceMinBatch < 2:
		v.iss.add(p+".divergence_min_batch", "%d: want 2 or more (a lone sequence is the reference)", t.DivergenceMinBatch)
	}
	switch t.Latency {
	case "", simconfig.LatencyProfile, simconfig.LatencyConstant:
	default:
		v.iss.add(p+".latency", "%q: want %s or %s", t.Latency, simconfig.LatencyProfile, simconfig.LatencyConstant)
	}
	for _, d := range []struct {
		key string
		d   Duration
	}{{"ttft", t.TTFT}, {"itl", t.ITL}} {
		switch {
		case d.d < 0:
			v.iss.add(p+"."+d.key, "%v is negative", d.d)
		case d.d != 0 && t.Latency != simconfig.LatencyConstant:
			v.iss.add(p+"."+d.key, "applies to latency: constant only (the profile model computes its own); add latency: constant")
		}
	}
	for _, f := range []struct {
		key string
		n   int
	}{{"max_num_seqs", t.MaxNumSeqs}, {"max_waiting", t.MaxWaiting}, {"max_model_len", t.MaxModelLen}, {"mean_output_tokens", t.MeanOutputTokens}} {
		if f.n < 0 {
			v.iss.add(p+"."+f.key, "%d is negative", f.n)
		}
	}
	if t.GPUMemory != "" {
		if n, err := vgpu.ParseSize(t.GPUMemory); err != nil {
			v.iss.add(p+".gpu_memory", "%v", err)
		} else if n <= 0 {
			v.iss.add(p+".gpu_memory", "%q: want more than 0", t.GPUMemory)
		}
	}
	if u := t.GPUMemoryUtilization; u != 0 && !(u > 0 && u <= 1) {
		v.iss.add(p+".gpu_memory_utilization", "%v: want more than 0 and at most 1", u)
	}
	if len(v.iss) > n {
		return
	}
	// What the replicas would run with, as `llmchaos sim` checks it.
	c, err := t.EngineConfig()
	if err == nil {
		err = c.Validate()
	}
	if err != nil {
		for _, m := range problemMessages(err) {
			v.iss.add(p, "%s", m)
		}
	}
}

func (v *validator) llmTarget(t LLMTarget) {
	const p = "target.llm"
	switch {
	case t.URL != "" && len(t.URLs) > 0:
		v.iss.addKey(p+".urls", "url and urls are both set: keep one")
	case t.URL == "" && len(t.URLs) == 0:
		v.iss.add(p, "missing: set url (the base URL, e.g. http://127.0.0.1:8000/v1) or urls")
	}
	if t.URL != "" {
		v.checkURL(p+".url", t.URL)
	}
	seen := map[string]int{}
	for i, u := range t.URLs {
		q := index(p+".urls", i)
		v.checkURL(q, u)
		if j, dup := seen[u]; dup {
			v.iss.add(q, "%q is already urls[%d]", u, j)
		}
		seen[u] = i
	}
	if t.URL == "" || len(t.URLs) == 0 {
		v.endpoints = len(t.Endpoints())
	}
	v.clientSettings(p, t.APIKeyEnv, t.Headers)
}

// clientSettings checks the key variable and headers of the target at p.
func (v *validator) clientSettings(p, apiKeyEnv string, headers map[string]string) {
	switch {
	case apiKeyEnv == "":
	case !envNameRE.MatchString(apiKeyEnv):
		v.iss.add(p+".api_key_env", "%q is not an environment variable name: name the variable that holds the key, not the key", apiKeyEnv)
	default:
		if val, ok := v.lookupEnv(apiKeyEnv); !ok || val == "" {
			v.iss.warn(p+".api_key_env", "the environment variable %s is not set (or empty): requests will be sent without an API key", apiKeyEnv)
		}
	}
	for k, val := range headers {
		q := child(p+".headers", k)
		switch {
		case !headerRE.MatchString(k):
			v.iss.addKey(q, "%q is not a valid header name", k)
		case isSecretHeader(k):
			v.iss.addKey(q, "secrets never go in an experiment file: put the key in an environment variable and name it in api_key_env")
		}
		if strings.ContainsAny(val, "\r\n") {
			v.iss.add(q, "a header value may not contain a line break")
		}
	}
}

func isSecretHeader(k string) bool {
	switch strings.ToLower(k) {
	case "authorization", "proxy-authorization", "api-key", "x-api-key":
		return true
	}
	return false
}

// checkURL checks an absolute http(s) URL.
func (v *validator) checkURL(path, s string) {
	u, err := url.Parse(s)
	switch {
	case !strings.Contains(s, "://"):
		v.iss.add(path, "%q: want an http:// or https:// URL", s)
	case err != nil:
		v.iss.add(path, "%q is not a URL: %v", s, errors.Unwrap(err))
	case u.Scheme != "http" && u.Scheme != "https":
		v.iss.add(path, "%q: want an http:// or https:// URL", s)
	case u.Host == "":
		v.iss.add(path, "%q has no host", s)
	}
}

func (v *validator) proxyList() {
	for i, px := range v.s.Proxies {
		p := index("proxies", i)
		switch {
		case px.Name == "":
			v.iss.add(p+".name", "missing: name the proxy (faults select it with target.proxy)")
		case !faultNameRE.MatchString(px.Name):
			v.iss.add(p+".name", "%q: use letters, digits, '.', '_' and '-', at most 63 characters", px.Name)
		default:
			if _, dup := v.proxies[px.Name]; dup {
				v.iss.add(p+".name", "proxy name %q is used twice", px.Name)
			}
			v.proxies[px.Name] = px
		}
		if px.Listen != "" {
			if err := checkHostPort(px.Listen, true); err != nil {
				v.iss.add(p+".listen", "%q: %v", px.Listen, err)
			}
		}
		if px.Upstream == "" {
			v.iss.add(p+".upstream", "missing: the host:port to forward to")
		} else if err := checkHostPort(px.Upstream, false); err != nil {
			v.iss.add(p+".upstream", "%q: %v", px.Upstream, err)
		}
		switch px.Mode {
		case "", ProxyHTTP, ProxyTCP:
		default:
			v.iss.add(p+".mode", "%q: want %s or %s", px.Mode, ProxyHTTP, ProxyTCP)
		}
	}
}

// checkHostPort checks host:port; port 0 (any free port) only for a listen
// address.
func checkHostPort(s string, listen bool) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return errors.New("want host:port, e.g. 127.0.0.1:8000")
	}
	n, err := strconv.Atoi(port)
	lo := 1
	if listen {
		lo = 0
	}
	if err != nil || n < lo || n > 65535 {
		return fmt.Errorf("port %q: want %d to 65535", port, lo)
	}
	if !listen && host == "" {
		return errors.New("want a host before the port")
	}
	return nil
}

func (v *validator) workload() {
	w := v.s.Workload
	if reflect.ValueOf(w).IsZero() {
		v.iss.add("workload", "missing: set a preset and/or a load shape, e.g. {preset: chat, rate: 10, duration: 60s}")
		return
	}
	v.capacityRate(w)
	v.shards(w)
	if w.Script != "" || len(w.Env) > 0 {
		v.scriptWorkload()
		return
	}
	if w.Preset != "" {
		if _, err := workload.LookupPreset(w.Preset); err != nil {
			var names []string
			for _, p := range workload.Presets() {
				names = append(names, p.Name)
			}
			msg := fmt.Sprintf("unknown preset %q (want one of %s)", w.Preset, strings.Join(names, ", "))
			if s := suggest(w.Preset, names); s != "" {
				msg += fmt.Sprintf("; did you mean %q?", s)
			}
			v.iss.add("workload.preset", "%s", msg)
		}
	}
	if r := w.Ramp; r != nil && r.From == 0 && r.To == 0 {
		v.iss.add("workload.ramp", "both rates are 0, so nothing would be sent")
	}
	type rateAt struct {
		path string
		r    float64
	}
	rates := []rateAt{{"workload.rate", w.Rate.PerSecond}, {"workload.start_rate", w.StartRate}}
	if r := w.Ramp; r != nil {
		rates = append(rates, rateAt{"workload.ramp.from", r.From}, rateAt{"workload.ramp.to", r.To})
	}
	for i, st := range w.Stages {
		rates = append(rates, rateAt{index("workload.stages", i) + ".target", st.Target})
	}
	// tooHigh are the workload keys with a rate above MaxRate, reported
	// here at the value (stages[1].target); the workload's own problems of
	// those keys would only repeat it.
	tooHigh := map[string]bool{}
	for _, r := range rates {
		if !(r.r <= MaxRate) { // NaN too
			v.iss.add(r.path, "%v requests per second is more than one client can send: want at most %v (spread a larger load over several llmchaos processes)", r.r, float64(MaxRate))
			key, _, _ := strings.Cut(strings.TrimPrefix(r.path, "workload."), ".")
			key, _, _ = strings.Cut(key, "[")
			tooHigh["workload."+key] = true
		}
	}
	for i, st := range w.Stages {
		if st.Duration < 0 {
			v.iss.add(index("workload.stages", i)+".duration", "%v is negative", st.Duration)
		}
	}
	for _, d := range []struct {
		key string
		d   Duration
	}{{"timeout", w.Timeout}, {"ttft_timeout", w.TTFTTimeout}, {"idle_timeout", w.IdleTimeout}, {"grace", w.Grace}} {
		if d.d < 0 {
			v.iss.add("workload."+d.key, "%v is negative: want a duration such as 30s", d.d)
		}
	}
	if w.TTFTTimeout > 0 && w.Timeout > 0 && w.TTFTTimeout > w.Timeout {
		v.iss.add("workload.ttft_timeout", "%v is longer than timeout %v, which bounds the whole request: it would never fire", w.TTFTTimeout, w.Timeout)
	}
	if w.Rate.Unresolved() {
		// The rate is known once the capacity is applied; the rest of the
		// workload is checked with a stand-in.
		w.Rate = PerSecondRate(1)
	}
	res, ps := w.resolve()
	v.resolved = res
	wc, ac := res.Workload, res.Arrival
	set := setKeys(w)
	aliases := w.keyAliases()
	for _, alias := range slices.Sorted(maps.Keys(aliases)) {
		if key := aliases[alias]; set[alias] && set[key] {
			v.iss.add("workload."+alias, "%s and %s are both set: %s is another name of %s; keep one", key, alias, alias, key)
		}
	}
	// written is the key as the file writes it: the alias when only that
	// is set.
	written := func(f field.Path) string {
		key := string(f)
		for alias, k := range aliases {
			if k == key && !set[key] && set[alias] {
				return alias
			}
		}
		return key
	}
	if slices.ContainsFunc(ps, func(p field.Problem) bool { return p.Path == workload.FieldPreset }) {
		// An unknown preset, reported above with a suggestion: the
		// problems of the workload without it would mislead.
		ps = nil
	}
	for _, p := range ps {
		path := "workload"
		if k := written(p.Path); p.Path != "" && set[k] {
			path = "workload." + k
		}
		if tooHigh[path] {
			continue
		}
		m := p.Message(written)
		if w.Preset != "" && path == "workload" {
			m += fmt.Sprintf(" (with preset %s)", w.Preset)
		}
		v.iss.add(path, "%s", m)
	}
	v.class = wc.Name
	v.loadEnd = ac.Duration
	if v.loadEnd == 0 && ac.Mode() == workload.ModeStages {
		for _, st := range ac.Stages {
			v.loadEnd += st.Duration
		}
	}
}

// capacityRate checks a rate given as a share of a capacity: it needs the
// capacity file, an open loop at a fixed rate, and the file needs it.
func (v *validator) capacityRate(w Workload) {
	switch {
	case w.Rate.IsShare() && w.Capacity == "":
		v.iss.add("workload.rate", "%s is a share of a measured capacity: add capacity: FILE, the file llmchaos capacity --out FILE wrote (llmchaos suite --capacity and llmchaos run --capacity give it too), or write requests per second", w.Rate)
	case w.Capacity != "" && !w.Rate.IsShare() && w.Rate.PerSecond != 0:
		v.iss.addKey("workload.capacity", "applies to a rate given as a percentage (rate: 80%%), and this workload's rate is not one: write rate: N%% or remove capacity")
	case w.Capacity != "" && !w.Rate.IsShare():
		// No rate (or one that did not decode, which this message, at
		// the mapping and naming rate, then gives way to).
		v.iss.add("workload", "capacity applies to a rate given as a percentage, and this workload sets no rate: add rate: N%% (e.g. 80%%) or remove capacity")
	case w.Capacity != "" && strings.TrimSpace(w.Capacity) != w.Capacity:
		v.iss.add("workload.capacity", "%q has leading or trailing spaces", w.Capacity)
	}
}

// shards checks workload.shards. A sharded load runs in other processes
// (the pods of an Indexed Job) whose request lines the runner follows
// live, so stop conditions, abortOnFail thresholds and threshold probes
// of the steady state work; but the shards get the workload as llmchaos
// load flags (of the workload as resolved: a capacity share is a rate
// then), which a script, a trace, a dataset, stages, a ramp or a closed
// loop do not travel in yet.
func (v *validator) shards(w Workload) {
	switch {
	case w.Shards < 0:
		v.iss.add("workload.shards", "%d is negative: want the number of shards, 1 or more", w.Shards)
		return
	case w.Shards <= 1:
		return
	}
	s := v.s
	if s.Target.Kubernetes == nil {
		v.iss.add("workload.shards", "%d shards need target.kubernetes: they run as the pods of an Indexed Job in its namespace; for another target run the load by hand with llmchaos load --shard INDEX/%d and llmchaos merge", w.Shards, w.Shards)
	}
	if k := s.Target.Kubernetes; k != nil && k.APIKeyEnv != "" && k.APIKeySecret == "" {
		v.iss.add("target.kubernetes.api_key_env", "with workload.shards the shard pods need the key too: give api_key_secret, NAME/KEY of a Secret in the namespace that holds it")
	}
	for _, k := range []struct {
		key string
		set bool
	}{
		{"script", w.Script != ""}, {"trace", w.Trace != ""}, {"dataset", w.Dataset != ""}, {"stages", len(w.Stages) > 0}, {"ramp", w.Ramp != nil},
		{"concurrency", w.Concurrency > 0},
	} {
		if k.set {
			v.iss.add("workload."+k.key, "not supported with workload.shards yet (the shards get the workload as llmchaos load flags): use an open-loop rate, or shards: 1")
		}
	}
}

// setKeys returns the keys of the workload that are set (non-zero).
func setKeys(w Workload) map[string]bool {
	out := map[string]bool{}
	rv := reflect.ValueOf(w)
	for _, f := range structFields(rv.Type(), nil) {
		if !rv.FieldByIndex(f.index).IsZero() {
			out[f.name] = true
		}
	}
	return out
}

func (v *validator) faultList() {
	for i, f := range v.s.Faults {
		v.fault(i, f)
	}
	if len(v.s.Faults) > 0 && v.loadEnd == 0 && !v.scriptFailed {
		v.iss.warn("workload", "the load does not end at a set time (no duration), so fault times cannot be checked against it")
	}
}

func (v *validator) fault(i int, f Fault) {
	p := index("faults", i)
	switch {
	case f.Name == "":
		v.iss.add(p+".name", "missing: name the fault (thresholds select it with fault:NAME)")
	case !faultNameRE.MatchString(f.Name):
		v.iss.add(p+".name", "%q: use letters, digits, '.', '_' and '-', starting with a letter or digit, at most 63 characters", f.Name)
	default:
		if j, dup := v.faults[f.Name]; dup {
			v.iss.add(p+".name", "fault name %q is already used by faults[%d]; fault names must be unique", f.Name, j)
		} else {
			v.faults[f.Name] = i
		}
	}
	ft, known := v.types[f.Type]
	switch {
	case f.Type == "":
		v.iss.add(p+".type", "missing: the fault type, one of %s", strings.Join(faultTypeNames(v.types), ", "))
	case !known:
		msg := fmt.Sprintf("unknown fault type %q", f.Type)
		if s := suggest(f.Type, faultTypeNames(v.types)); s != "" {
			msg += fmt.Sprintf("; did you mean %q?", s)
		} else {
			msg += fmt.Sprintf(" (known: %s)", strings.Join(faultTypeNames(v.types), ", "))
		}
		v.iss.add(p+".type", "%s", msg)
	}

	if f.At < 0 {
		v.iss.add(p+".at", "%v is negative: faults start at or after the start of the load", f.At)
	}
	overflow := f.At > 0 && f.Duration > 0 && f.At.D() > math.MaxInt64-f.Duration.D()
	if overflow {
		v.iss.add(p+".at", "%v + %v is past the longest time a run can count (about 292 years): start the fault within the load", f.At, f.Duration)
	}
	if f.Duration <= 0 {
		if f.Duration == 0 {
			v.iss.add(p+".duration", "missing: how long the fault stays injected, e.g. 15s")
		} else {
			v.iss.add(p+".duration", "%v: want more than 0", f.Duration)
		}
	}
	if end := v.loadEnd; end > 0 && f.At >= 0 && f.Duration > 0 && !overflow {
		stop := f.At.D() + f.Duration.D()
		switch {
		case f.At.D() >= end:
			v.iss.add(p+".at", "the fault would start at %v, when the load (%v) is over: start it earlier or lengthen the workload's duration", f.At, end)
		case stop > end:
			v.iss.add(p+".duration", "the fault would end at %v, after the load ends at %v: shorten it or lengthen the workload's duration", stop, end)
		default:
			hold := v.s.Recovery.Hold.D()
			if hold <= 0 {
				hold = DefaultRecoveryHold
			}
			if end-stop < hold {
				v.iss.warn(p+".duration", "the fault is reverted at %v, leaving %v of load, less than the recovery hold (%v): its recovery cannot be seen and will report recovered: false", stop, end-stop, hold)
			}
		}
	}

	if known {
		if ft.Target == TargetProxy {
			v.kubernetesProxyFault(p, f)
		}
		v.faultTarget(p, f, ft)
		v.faultParams(i, p, f, ft)
	}
}

func (v *validator) faultTarget(p string, f Fault, ft FaultType) {
	t := f.Target
	if t == nil {
		return
	}
	p += ".target"
	if ft.Target != TargetProxy {
		v.iss.add(p, "%s takes no target: its params say where it acts", f.Type)
		return
	}
	if t.Proxy != "" {
		px, ok := v.proxies[t.Proxy]
		switch {
		case !ok:
			names := make([]string, 0, len(v.proxies))
			for n := range v.proxies {
				names = append(names, n)
			}
			slices.Sort(names)
			msg := fmt.Sprintf("no proxy %q is declared under proxies", t.Proxy)
			if s := suggest(t.Proxy, names); s != "" {
				msg += fmt.Sprintf("; did you mean %q?", s)
			}
			v.iss.add(p+".proxy", "%s", msg)
		case ft.L7 && px.Mode == ProxyTCP:
			v.iss.add(p+".proxy", "%s is decided per HTTP request and needs a proxy in http mode; proxy %q is in tcp mode", f.Type, t.Proxy)
		}
		if len(t.Endpoints) > 0 || t.Count != 0 || t.Percent != 0 {
			v.iss.add(p+".proxy", "proxy selects the declared proxy; endpoints, count and percent select automatic proxies: keep one or the other")
		}
	}
	seen := map[int]bool{}
	for i, e := range t.Endpoints {
		q := index(p+".endpoints", i)
		switch {
		case e < 0:
			v.iss.add(q, "%d is negative: endpoints are numbered from 0", e)
		case v.endpoints > 0 && e >= v.endpoints:
			v.iss.add(q, "%d: the target has %d endpoint(s), numbered from 0", e, v.endpoints)
		case seen[e]:
			v.iss.add(q, "endpoint %d is listed twice", e)
		}
		seen[e] = true
	}
	n := v.endpoints
	if len(t.Endpoints) > 0 {
		n = len(t.Endpoints)
	}
	switch {
	case t.Count < 0:
		v.iss.add(p+".count", "%d is negative", t.Count)
	case t.Count > 0 && n > 0 && t.Count > n:
		v.iss.add(p+".count", "%d: only %d endpoint(s) to choose from", t.Count, n)
	}
	if t.Percent != 0 && !(t.Percent > 0 && t.Percent <= 100) {
		v.iss.add(p+".percent", "%v: want more than 0 and at most 100", t.Percent)
	}
	if t.Count != 0 && t.Percent != 0 {
		v.iss.add(p+".percent", "count and percent are both set: keep one")
	}
}

// faultParams decodes a fault's params strictly into its type's params
// and checks them.
func (v *validator) faultParams(i int, p string, f Fault, ft FaultType) {
	p += ".params"
	params := ft.NewParams()
	countDecode()
	v.dec.decode(p, valueNode(f.Params), reflect.ValueOf(params).Elem())
	if v.dec.broken[p] {
		return
	}
	if v.params == nil {
		v.params = map[int]any{}
	}
	v.params[i] = params
	params = copyParams(params) // what the target fills in is checked on a copy
	if ft.FromSim != nil && v.s.Target.Sim != nil {
		ft.FromSim(params, placeholderSimEnv())
	}
	fromKube := ft.FromKubernetes != nil && v.s.Target.Kubernetes != nil
	if fromKube {
		ft.FromKubernetes(params, v.s.Target.Kubernetes.Env())
	}
	if ft.Defaults != nil {
		ft.Defaults(params) // Check checks params as resolved
	}
	// Checked even when some keys did not decode, so that every problem
	// shows at once; a problem of a key that did not decode would only
	// repeat its problem. The type keys each problem by its field under
	// the params.
	for _, q := range ft.Check(params) {
		path := string(q.Path.Under(field.Path(p)))
		if v.brokenUnder(path, p) {
			continue
		}
		if fromKube && v.kubeBroken && within(string(q.Path), "target") {
			continue // the target's pods, whose problems are reported at target.kubernetes
		}
		v.iss.add(path, "%s", oneLine(q.Message(nil)))
	}
}

// brokenUnder reports whether the value at path, or a key above it up to
// (not including) root, did not decode.
func (v *validator) brokenUnder(path, root string) bool {
	for q := path; q != root && q != ""; q = parentPath(q) {
		if v.dec.broken[q] {
			return true
		}
	}
	return false
}

func (v *validator) steadyState() {
	for i, pr := range v.s.SteadyState {
		p := index("steady_state", i)
		switch {
		case pr.HTTP == nil && pr.Threshold == "" && pr.PromQL == nil:
			v.iss.add(p, "empty probe: set http, threshold or promql")
		case pr.HTTP != nil && pr.Threshold != "":
			v.iss.addKey(p+".threshold", "a probe is http or threshold, not both: make two probes")
		case pr.PromQL != nil && (pr.HTTP != nil || pr.Threshold != ""):
			v.iss.addKey(p+".promql", "a probe is one of http, threshold and promql: make one probe of each")
		}
		if pr.PromQL != nil {
			v.promQL(p+".promql", *pr.PromQL)
		}
		if pr.HTTP != nil {
			v.httpProbe(p+".http", *pr.HTTP)
		}
		if pr.Threshold != "" {
			v.flagThreshold(p+".threshold", pr.Threshold)
		}
	}
}

var httpMethods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}

func (v *validator) httpProbe(p string, h HTTPProbe) {
	if h.URL == "" {
		v.iss.add(p+".url", "missing: the URL to probe, e.g. \"%s/health\"", TemplateTarget)
	} else {
		bad := false
		for off := 0; ; {
			i := strings.Index(h.URL[off:], "{{")
			if i < 0 {
				break
			}
			i += off
			if !strings.HasPrefix(h.URL[i:], TemplateTarget) {
				v.iss.addAt(p+".url", false, i, fmt.Sprintf("unknown placeholder: the only one is %s", TemplateTarget))
				bad = true
			}
			off = i + 2
		}
		if !bad {
			v.checkURL(p+".url", strings.ReplaceAll(h.URL, TemplateTarget, "http://127.0.0.1:8000"))
		}
	}
	if h.Method != "" && !slices.Contains(httpMethods, h.Method) {
		v.iss.add(p+".method", "%q: want one of %s", h.Method, strings.Join(httpMethods, ", "))
	}
	if h.ExpectStatus != 0 && (h.ExpectStatus < 100 || h.ExpectStatus > 599) {
		v.iss.add(p+".expect_status", "%d is not an HTTP status (100 to 599)", h.ExpectStatus)
	}
	if h.Timeout < 0 {
		v.iss.add(p+".timeout", "%v is negative", h.Timeout)
	}
}

// flagThreshold checks a threshold in the flag form at path, and its tags.
func (v *validator) flagThreshold(path, s string) {
	ths, err := assertions.ParseIn(v.metrics, s)
	if err != nil {
		v.parseErrors(path, false, 0, err)
		return
	}
	if len(ths) > 0 {
		if probeMetric(ths[0].Metric) {
			v.iss.add(path, "%s is computed from the consistency probes once the run ended: it cannot be checked live or in the steady state; put it under thresholds", ths[0].Metric)
			return
		}
		v.tags(path, false, s, ths[0].Tags)
		_, exprs, _ := strings.Cut(s, ":")
		if i := strings.IndexByte(s, '}'); i >= 0 && strings.Contains(s[:i], ":") {
			exprs = s[i+1:] // the colon after the key, not one in a tag
			if j := strings.IndexByte(exprs, ':'); j >= 0 {
				exprs = exprs[j+1:]
			}
		}
		v.bareTimes(path, len(s)-len(exprs), exprs, ths)
	}
}

// boundRE finds the bound of each expression but count, rate and value
// (which never take a unit): its number, and what follows it.
var boundRE = regexp.MustCompile(`(?:avg|min|max|med|p\s*\(\s*[0-9.]*\s*\))\s*(?:<=|>=|===|==|!=|<|>)\s*([0-9]*\.?[0-9]+)\s*(ms|s|us|µs|μs|%)?`)

// bareTimes reports the bounds written without a unit on a duration
// metric, in text (at offset off of the string at path), whose thresholds
// ths parsed from it. On the command line a bare bound is milliseconds, as
// in k6; in an experiment file, where every other duration needs a unit
// (duration: 60 is refused), it is an error, so that max<30 never means
// 30 ms to a writer who thought of seconds.
func (v *validator) bareTimes(path string, off int, text string, ths []assertions.Threshold) {
	ms := boundRE.FindAllStringSubmatchIndex(text, -1)
	k := 0
	for _, th := range ths {
		if th.Expr.Agg == assertions.AggCount || th.Expr.Agg == assertions.AggRate || th.Expr.Agg == assertions.AggValue {
			continue
		}
		if k >= len(ms) {
			return // not the text the thresholds came from
		}
		m := ms[k]
		k++
		if th.Expr.Unit != assertions.UnitNone || th.Expr.Num == 0 {
			continue
		}
		if mt, ok := assertions.LookupMetric(th.Metric); !ok || mt.Kind != assertions.KindDuration {
			continue
		}
		num := text[m[2]:m[3]]
		v.iss.addAt(path, false, off+m[2], fmt.Sprintf("%s has no unit: %s is a duration, add a unit: %ss or %sms (only --threshold on the command line reads a bare number as milliseconds, as k6 does)", num, th.Metric, num, num))
	}
}

// parseErrors reports each *assertions.ParseError of err at its offset less
// skip into the string at path (its key when key is set); other errors at
// path.
func (v *validator) parseErrors(path string, key bool, skip int, err error) {
	pes := assertions.ParseErrors(err)
	if len(pes) == 0 {
		for _, m := range problemMessages(err) {
			v.iss.add(path, "%s", m)
		}
		return
	}
	for _, pe := range pes {
		if v.scriptFailed && strings.HasPrefix(pe.Msg, "unknown metric") {
			continue // maybe one of the script's, which could not be read
		}
		v.iss.addAt(path, key, max(pe.Offset-skip, 0), fmt.Sprintf("%s in %q", pe.Msg, pe.Input[min(skip, len(pe.Input)):]))
	}
}

// tags checks that a threshold's tags can select something: fault:NAME
// names a declared fault, phase:fault and phase:recovery need faults, and
// class names the workload's class. text is the string the tags were
// parsed from (at path, or its key), for pointing at the tag.
func (v *validator) tags(path string, key bool, text string, t assertions.Tags) {
	at := func(tag, value string) int {
		i := strings.Index(text, tag)
		if i < 0 {
			return -1
		}
		if j := strings.Index(text[i:], value); j >= 0 {
			return i + j
		}
		return i
	}
	if t.Fault != "" {
		if _, ok := v.faults[t.Fault]; !ok {
			names := make([]string, 0, len(v.faults))
			for n := range v.faults {
				names = append(names, n)
			}
			slices.Sort(names)
			msg := fmt.Sprintf("fault %q is not declared under faults", t.Fault)
			if s := suggest(t.Fault, names); s != "" {
				msg += fmt.Sprintf("; did you mean %q?", s)
			} else if len(names) > 0 {
				msg += fmt.Sprintf(" (declared: %s)", strings.Join(names, ", "))
			}
			v.iss.addAt(path, key, at("fault", t.Fault), msg)
		}
	}
	if (t.Phase == "fault" || t.Phase == "recovery") && len(v.s.Faults) == 0 {
		v.iss.addAt(path, key, at("phase", t.Phase), fmt.Sprintf("phase:%s selects nothing: the experiment declares no faults", t.Phase))
	}
	if t.Class == ProbeClass && v.s.Probes == nil {
		v.iss.addAt(path, key, at("class", t.Class), "class:probe selects nothing: the experiment sends no probes; add probes: {} to send them")
	}
	if t.Class != "" && t.Class != ProbeClass && v.class != "" && t.Class != v.class {
		v.iss.addAt(path, key, at("class", t.Class), fmt.Sprintf("class:%s selects nothing: the workload's requests have class %s", t.Class, v.class))
	}
	if t.Fault != "" && (t.Phase == report.PhaseBaseline || t.Phase == report.PhaseAfter) {
		v.iss.addAt(path, key, at("phase", t.Phase), fmt.Sprintf("phase:%s with fault:%s selects nothing: results of the %s phase carry no fault; use phase:fault or phase:recovery", t.Phase, t.Fault, t.Phase))
	}
	if t.Endpoint != "" {
		v.endpointTag(path, key, at("endpoint", t.Endpoint), t.Endpoint)
	}
}

// endpointTag checks that an endpoint tag names one of the target's
// endpoints as results carry it: an llm target's base URL (credentials
// redacted). A simulator's replicas get their URLs (free ports) at run
// time, so no tag can name one.
func (v *validator) endpointTag(path string, key bool, off int, value string) {
	t := v.s.Target
	switch {
	case t.LLM != nil:
		var urls []string
		for _, u := range t.LLM.Endpoints() {
			urls = append(urls, EndpointTag(u))
		}
		if len(urls) == 0 || slices.Contains(urls, value) {
			return
		}
		msg := fmt.Sprintf("endpoint:%s selects nothing: the endpoint tag is a target base URL, one of %s", value, strings.Join(urls, ", "))
		if _, err := strconv.Atoi(value); err == nil {
			msg += " (quote it in the key: endpoint:\"http://...\"); endpoint indexes are for a fault's target.endpoints"
		}
		v.iss.addAt(path, key, off, msg)
	case t.Sim != nil:
		v.iss.addAt(path, key, off, fmt.Sprintf("endpoint:%s selects nothing: the simulator's replicas listen on free ports chosen at run time, so no endpoint tag can name one; drop the tag, or run the simulator yourself and target it with llm.urls", value))
	case t.Kubernetes != nil && t.Kubernetes.URL != "":
		if tag := EndpointTag(t.Kubernetes.URL); value != tag {
			v.iss.addAt(path, key, off, fmt.Sprintf("endpoint:%s selects nothing: with url every request goes to %s, the one endpoint tag", value, tag))
		}
	case t.Kubernetes != nil:
		// Results carry the name of the pod that served them; pods
		// are named at run time, so only the form can be checked.
		if msgs := validation.IsDNS1123Subdomain(value); len(msgs) > 0 {
			v.iss.addAt(path, key, off, fmt.Sprintf("endpoint:%s selects nothing: a kubernetes target's results carry the name of the pod that served them, and %q is not a pod name", value, value))
		}
	}
}

// EndpointTag returns the endpoint tag results sent to base URL u carry:
// u with its password redacted, as the engine's tags write it.
func EndpointTag(u string) string {
	if !strings.Contains(u, "@") {
		return u
	}
	p, err := url.Parse(u)
	if err != nil {
		return "[unparsable URL]"
	}
	return p.Redacted()
}

func (v *validator) stopConditions() {
	for i, c := range v.s.StopConditions {
		p := index("stop_conditions", i)
		switch {
		case c.PromQL != nil && c.Threshold != "":
			v.iss.addKey(p+".promql", "a stop condition is a threshold or a promql query, not both: make two")
		case c.PromQL != nil:
			v.promQL(p+".promql", *c.PromQL)
		case strings.TrimSpace(c.Threshold) == "":
			v.iss.add(p, "empty: write a threshold such as \"error_rate: rate<0.5\", or a promql query")
		default:
			v.flagThreshold(p+".threshold", c.Threshold)
		}
		switch {
		case c.Interval < 0:
			v.iss.add(p+".interval", "%v is negative", c.Interval)
		case c.Interval != 0 && c.PromQL == nil:
			v.iss.addKey(p+".interval", "only a promql condition has an interval: a threshold is checked every second")
		}
		if c.DelayAbortEval < 0 {
			v.iss.add(p+".delayAbortEval", "%v is negative", c.DelayAbortEval)
		}
	}
}

func (v *validator) thresholds() {
	keys := make([]string, 0, len(v.s.Thresholds))
	for k := range v.s.Thresholds {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		p := child("thresholds", k)
		metric, tags, err := assertions.ParseKeyIn(v.metrics, k)
		keyOK := err == nil
		if err != nil {
			v.parseErrors(p, true, 0, err)
		} else {
			v.tags(p, true, k, tags)
		}
		if keyOK && probeMetric(metric) {
			if v.s.Probes == nil {
				v.iss.addKey(p, "%s is measured by consistency probes, and the experiment sends none: add probes: {} (or probes: {rate: 2, prompts: [...]})", metric)
			}
			for j, e := range v.s.Thresholds[k] {
				if e.AbortOnFail {
					v.iss.add(index(p, j)+".abortOnFail", "%s is computed once the run ended: it cannot abort the run", metric)
				}
			}
		}
		es := v.s.Thresholds[k]
		if len(es) == 0 {
			v.iss.add(p, "no expressions: list at least one, such as [\"p(99)<500ms\"]")
		}
		prefix := len(strings.TrimSpace(k)) + len(": ")
		for j, e := range es {
			q := index(p, j) + ".threshold"
			if strings.TrimSpace(e.Threshold) == "" {
				v.iss.add(q, "empty expression: write one such as \"p(99)<500ms\"")
				continue
			}
			if e.DelayAbortEval < 0 {
				v.iss.add(index(p, j)+".delayAbortEval", "%v is negative", e.DelayAbortEval)
			}
			ths, err := assertions.ParseEntriesIn(v.metrics, k, []assertions.Entry{{Threshold: e.Threshold}})
			if err == nil {
				v.bareTimes(q, 0, e.Threshold, ths)
			}
			for _, pe := range assertions.ParseErrors(err) {
				if pe.Input == k {
					continue // a problem of the key, reported above
				}
				v.iss.addAt(q, false, max(pe.Offset-prefix, 0), fmt.Sprintf("%s in %q", pe.Msg, e.Threshold))
			}
			if err != nil && len(assertions.ParseErrors(err)) == 0 && keyOK {
				for _, m := range problemMessages(err) {
					v.iss.add(q, "%s", m)
				}
			}
		}
	}
}

func (v *validator) recovery() {
	r := v.s.Recovery
	if r.Window < 0 {
		v.iss.add("recovery.window", "%v is negative", r.Window)
	}
	if r.Hold < 0 {
		v.iss.add("recovery.hold", "%v is negative", r.Hold)
	}
	if r.MinRequests < 0 {
		v.iss.add("recovery.min_requests", "%d is negative", r.MinRequests)
	}
	if b := r.LatencyBand; b != 0 && !(b >= 1 && b <= math.MaxFloat64) {
		v.iss.add("recovery.latency_band", "%v: want 1 or more (the p99 a recovered window may have, in times the baseline's)", b)
	}
}

func (v *validator) goodput() {
	if v.s.Goodput == "" {
		return
	}
	if _, err := assertions.ParseGoodput(v.s.Goodput); err != nil {
		v.parseErrors("goodput", false, 0, err)
	}
}
