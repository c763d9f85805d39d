package experiments

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/faults/replica"
	"github.com/llmchaos/llmchaos/xk6-llm/metrics"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// plan is an experiment resolved for running: its spec with defaults,
// the load's configs, the parsed thresholds and probes, and the faults
// with their types and seeds. Building it starts nothing, so a dry run
// prints it.
type plan struct {
	spec spec.Spec // defaults applied
	file string
	seed uint64

	wc workload.Config
	ac workload.ArrivalConfig
	// script, for a script workload, is the script resolved (wc and ac are
	// then zero).
	script *scriptPlan

	thresholds []assertions.Threshold
	// stops are the stop conditions and the thresholds marked abortOnFail.
	stops  []assertions.Threshold
	steady steadyState
	judge  recoveryJudge
	slo    recording.SLO

	faults []*plannedFault
	// autoProxies is set when a proxy fault acts through the proxies the
	// runner puts in front of the endpoints; l7 when one of the run's
	// proxy faults is decided per HTTP request.
	autoProxies bool
	l7          bool
	// live is set for a live run (a game day, makeLive): its faults are
	// the steps of a timeline played by hand.
	live bool
}

// plannedFault is one fault of the timeline, ready to build.
type plannedFault struct {
	index int
	spec  spec.Fault
	ft    spec.FaultType
	// seed is the fault's own seed: its random draws (jitter, per-request
	// choices, which replicas) do not depend on other faults.
	seed uint64
	// resolved is the timeline's fault as resolved, its params decoded
	// once (nil for a fault injected by hand, decoded when injected).
	resolved *spec.ResolvedFault
}

// params returns the fault's params with what env gives filled in: the
// resolved fault's, decoded once, or for a fault injected by hand its
// params decoded now.
func (pf *plannedFault) params(env spec.TargetEnv) (any, error) {
	if pf.resolved != nil {
		return pf.resolved.Params(env), nil
	}
	return spec.DecodeParamsIn(pf.index, pf.spec, pf.ft, env)
}

// planOf plans the resolved experiment x. seed, when not nil, replaces
// the experiment's.
func planOf(x *spec.Experiment, seed *uint64) (*plan, error) {
	file := x.File
	p := &plan{spec: x.Spec, file: file}
	if seed != nil {
		p.spec.Seed = seed
	}
	p.seed = *p.spec.Seed
	s := &p.spec
	var err error
	p.wc, p.ac = x.Workload, x.Arrival
	base := "."
	if file != "" {
		base = filepath.Dir(file)
	}
	var reg *metrics.Registry // a script's custom metrics
	if s.Workload.Script != "" {
		if p.script, err = newScriptPlan(s, base); err != nil {
			return nil, err
		}
		reg = p.script.inspected.Metrics
	}
	if p.wc.Dataset != "" && !filepath.IsAbs(p.wc.Dataset) {
		p.wc.Dataset = filepath.Join(base, p.wc.Dataset)
	}
	if p.ac.TraceFile != "" && !filepath.IsAbs(p.ac.TraceFile) {
		p.ac.TraceFile = filepath.Join(base, p.ac.TraceFile)
	}
	if p.thresholds, err = s.Thresholds.Config().ThresholdsIn(reg); err != nil {
		return nil, fmt.Errorf("thresholds: %w", err)
	}
	if p.script != nil {
		// The script's own thresholds hold in the experiment too.
		p.thresholds = append(p.thresholds, p.script.inspected.Thresholds...)
	}
	for _, th := range p.thresholds {
		if th.AbortOnFail {
			p.stops = append(p.stops, th)
		}
	}
	for i, c := range s.StopConditions {
		ths, err := c.ThresholdsIn(reg)
		if err != nil {
			return nil, fmt.Errorf("stop_conditions[%d]: %w", i, err)
		}
		p.stops = append(p.stops, ths...)
	}
	if p.steady, err = newSteadyState(s.SteadyState); err != nil {
		return nil, err
	}
	if s.Goodput != "" {
		if p.slo, err = assertions.ParseGoodput(s.Goodput); err != nil {
			return nil, fmt.Errorf("goodput: %w", err)
		}
	}
	recoveryThs := p.steady.thresholds()
	if len(recoveryThs) == 0 {
		recoveryThs, _ = assertions.Parse(DefaultRecoveryThreshold)
	}
	p.judge = recoveryJudge{
		ths: recoveryThs, window: s.Recovery.Window.D(), hold: s.Recovery.Hold.D(), band: s.Recovery.LatencyBand, minRequests: s.Recovery.MinRequests,
		within: assertions.Tags{Class: p.wc.Name}, slo: p.slo,
	}
	seeds := rand.New(rand.NewPCG(p.seed, 0x6661756c7473))
	for i := range x.Faults {
		rf := &x.Faults[i]
		f, ft := rf.Fault, rf.Type
		pf := &plannedFault{index: i, spec: f, ft: ft, seed: seeds.Uint64(), resolved: rf}
		if ft.Target == spec.TargetProxy {
			if f.Target == nil || f.Target.Proxy == "" {
				p.autoProxies = true
			}
			p.l7 = p.l7 || ft.L7
		}
		p.faults = append(p.faults, pf)
	}
	return p, nil
}

// netnsRunDir is where `ip netns` keeps its named namespaces.
const netnsRunDir = "/var/run/netns"

// preflight checks what the run needs from the system before anything is
// started: the network namespace of each kernel-level fault must exist
// (the fault would otherwise fail only at its time, mid-run).
func (p *plan) preflight() error {
	var errs []error
	for _, pf := range p.faults {
		params, err := pf.params(spec.TargetEnv{})
		if err != nil {
			return err
		}
		ns := netnsOf(params)
		if ns == "" {
			continue
		}
		path := ns
		if !filepath.IsAbs(ns) {
			path = filepath.Join(netnsRunDir, ns)
		}
		if _, err := os.Stat(path); err != nil {
			errs = append(errs, fmt.Errorf("fault %q (%s): network namespace %q is not there (%v): create it and run the target inside it first (the experiment file's comments show how)", pf.spec.Name, pf.spec.Type, ns, err))
		}
	}
	return errors.Join(errs...)
}

// byTime returns the faults in the order they are injected.
func (p *plan) byTime() []*plannedFault {
	out := slices.Clone(p.faults)
	slices.SortStableFunc(out, func(a, b *plannedFault) int { return cmp.Compare(a.spec.At, b.spec.At) })
	return out
}

// beforeCheckAt is when the steady state's threshold probes are checked
// before any fault: at the first fault's injection time, over the window
// before it; in a run without faults, at the end of the first window (or
// of the load when it is shorter).
func (p *plan) beforeCheckAt() time.Duration {
	if len(p.faults) > 0 && !p.live {
		return p.byTime()[0].spec.At.D()
	}
	w := p.spec.Recovery.Window.D()
	if d := p.loadDuration(); d > 0 && d < w {
		return d
	}
	return w
}

// loadDuration is how long the load's schedule lasts (0: not a set time).
func (p *plan) loadDuration() time.Duration {
	if p.script != nil {
		return p.script.length
	}
	return p.ac.Duration
}

// describeLoad says what load the plan makes.
func (p *plan) describeLoad() string {
	if p.script != nil {
		return p.script.describe()
	}
	return describeArrival(p.ac)
}

// pickEndpoints returns the endpoint indexes of n that a proxy fault acts
// on: those its target lists (all by default), narrowed to Count or
// Percent of them picked with the fault's seed.
func (pf *plannedFault) pickEndpoints(n int) []int {
	t := pf.spec.Target
	var idx []int
	if t != nil && len(t.Endpoints) > 0 {
		idx = slices.Clone(t.Endpoints)
	} else {
		for i := range n {
			idx = append(idx, i)
		}
	}
	if t == nil {
		return idx
	}
	k := len(idx)
	switch {
	case t.Count > 0:
		k = min(t.Count, len(idx))
	case t.Percent > 0:
		k = int(float64(len(idx))*t.Percent/100 + 0.999999)
		k = min(max(k, 1), len(idx))
	}
	if k < len(idx) {
		r := rand.New(rand.NewPCG(pf.seed, 0x656e64706f696e74))
		r.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
		idx = idx[:k]
		slices.Sort(idx)
	}
	return idx
}

// describeTarget says where a fault of the plan acts, before the run
// resolved its endpoints.
func (pf *plannedFault) describeTarget(endpoints int) string {
	if pf.ft.Target != spec.TargetProxy {
		return "as its params say"
	}
	t := pf.spec.Target
	if t != nil && t.Proxy != "" {
		return "through proxy " + t.Proxy
	}
	idx := pf.pickEndpoints(endpoints)
	if len(idx) == endpoints {
		return "through the proxies of every endpoint"
	}
	parts := make([]string, len(idx))
	for i, e := range idx {
		parts[i] = fmt.Sprint(e)
	}
	return "through the proxies of endpoint(s) " + strings.Join(parts, ", ")
}

// endpointCount is the number of endpoints the target will have (0 for
// Kubernetes pods reached directly: they come and go).
func (p *plan) endpointCount() int {
	switch t := p.spec.Target; {
	case t.Sim != nil:
		return t.Sim.EndpointCount()
	case t.Kubernetes != nil && t.Kubernetes.URL != "":
		return 1
	case t.Kubernetes != nil:
		return 0
	}
	return len(p.spec.Target.LLM.Endpoints())
}

// DryRunExperiment writes the plan of the resolved experiment x to w as
// RunExperiment would carry it out, with opts' seed: the target, the
// proxies, the load, the steady state, the schedule of faults on the run
// clock, the stop conditions and the thresholds. It starts nothing and
// changes nothing (no run directory either).
func DryRunExperiment(w io.Writer, x *spec.Experiment, opts Options) error {
	p, err := planOf(x, opts.Seed)
	if err != nil {
		return err
	}
	return p.write(w, opts)
}

func (p *plan) write(w io.Writer, opts Options) error {
	var b strings.Builder
	s := &p.spec
	fmt.Fprintf(&b, "experiment %s", s.Metadata.Name)
	if p.file != "" {
		fmt.Fprintf(&b, " (%s)", p.file)
	}
	fmt.Fprintf(&b, ", seed %d\n", p.seed)
	if s.Metadata.Description != "" {
		fmt.Fprintf(&b, "  %s\n", s.Metadata.Description)
	}
	dir := opts.RunDir
	if dir == "" {
		dir = s.Out
	}
	if dir == "" {
		dir = "runs/" + s.Metadata.Name + "-TIMESTAMP"
	}
	fmt.Fprintf(&b, "run directory: %s\n", dir)

	b.WriteString("\ntarget:\n")
	n := p.endpointCount()
	if t := s.Target.Sim; t != nil {
		fmt.Fprintf(&b, "  the built-in simulator: %d replica(s) under `llmchaos sim --replicas %d`, on consecutive free ports of 127.0.0.1 chosen at run time\n", t.Replicas, t.Replicas)
		fmt.Fprintf(&b, "  model %s, latency %s, startup %v, restart delay %v, %s vGPU each\n", t.Model, t.Latency, t.StartupTime, t.RestartDelay, t.GPUMemory)
		if t.Migrate != "" {
			fmt.Fprintf(&b, "  endpoint 0 is its router in front of the replicas, which migrates a stream whose replica dies (migrate %s); it is stopped when the run ends\n", t.Migrate)
		} else {
			fmt.Fprintf(&b, "  endpoints 0..%d are the replicas; it is stopped when the run ends\n", t.Replicas-1)
		}
	} else if t := s.Target.Kubernetes; t != nil {
		p.writeKubernetesTarget(&b, *t)
	} else {
		t := s.Target.LLM
		for i, u := range t.Endpoints() {
			fmt.Fprintf(&b, "  endpoint %d: %s\n", i, u)
		}
		model := t.Model
		if model == "" {
			model = "(the first model GET /models lists)"
		}
		fmt.Fprintf(&b, "  model %s\n", model)
	}
	if p.autoProxies || len(s.Proxies) > 0 {
		b.WriteString("\nproxies:\n")
		if p.autoProxies {
			fmt.Fprintf(&b, "  one fault proxy in front of each of the %d endpoint(s), on 127.0.0.1:0 (http mode); the load goes through them\n", n)
		}
		for _, px := range s.Proxies {
			fmt.Fprintf(&b, "  %s: %s → %s (%s mode)\n", px.Name, px.Listen, px.Upstream, px.Mode)
		}
	}

	b.WriteString("\nload:\n")
	if p.script != nil {
		p.script.write(&b)
	} else {
		fmt.Fprintf(&b, "  %s\n", describeArrival(p.ac))
		fmt.Fprintf(&b, "  workload %s (%s API), round-robin over the endpoints\n", p.wc.Name, p.wc.API)
	}
	if pr := s.Probes; pr != nil {
		fmt.Fprintf(&b, "  consistency probes beside it: %g per second, %d fixed prompt(s) in turn, max_tokens %d, temperature 0, seed %d, recorded apart (class probe)\n",
			pr.Rate, len(pr.Prompts), pr.MaxTokens, *pr.Seed)
	}

	if len(s.SteadyState) > 0 {
		b.WriteString("\nsteady state (before the load and the faults, and after the load):\n")
		for _, h := range p.steady.http {
			fmt.Fprintf(&b, "  %s\n", h.label)
		}
		for _, t := range p.steady.ths {
			fmt.Fprintf(&b, "  %s (over the %v before %v, and the last %v of the load)\n", t.label, s.Recovery.Window, fmtOffset(p.beforeCheckAt()), s.Recovery.Window)
		}
	}

	b.WriteString("\nschedule (run clock, from the start of the load):\n")
	fmt.Fprintf(&b, "  %8s  load starts\n", fmtOffset(0))
	type ev struct {
		at   time.Duration
		text string
	}
	var evs []ev
	var replicaFaults []*plannedFault
	for _, pf := range p.faults {
		f := pf.spec
		where := pf.describeTarget(n)
		if pf.replicaParams(s.EnvOf(nil)) != nil {
			replicaFaults = append(replicaFaults, pf)
			where = "on the replicas listed under \"replica targets\""
		}
		evs = append(evs,
			ev{f.At.D(), fmt.Sprintf("inject %s (%s %s) %s", f.Name, f.Type, paramsText(f.Params), where)},
			ev{f.At.D() + f.Duration.D(), fmt.Sprintf("revert %s (after %v)", f.Name, f.Duration)})
	}
	slices.SortStableFunc(evs, func(a, b ev) int { return cmp.Compare(a.at, b.at) })
	for _, e := range evs {
		fmt.Fprintf(&b, "  %8s  %s\n", fmtOffset(e.at), e.text)
	}
	if d := p.loadDuration(); d > 0 {
		grace := p.spec.Workload.Grace.D().String()
		if p.script != nil {
			grace = "each scenario's gracefulStop"
		}
		fmt.Fprintf(&b, "  %8s  load ends (requests in flight get up to %s)\n", fmtOffset(d), grace)
	}
	traffic := "with traffic"
	if n := s.Recovery.MinRequests; n > 1 {
		traffic = fmt.Sprintf("with %d or more finished requests", n)
	}
	fmt.Fprintf(&b, "  recovery: every %v window %s must hold %s, TTFT and E2E p99 within %g× the baseline, for %v after a fault's revert (after its injection for a kill, stop or restart)\n",
		s.Recovery.Window, traffic, thresholdList(p.judge.ths), s.Recovery.LatencyBand, s.Recovery.Hold)

	refused := &DryRunRefusedError{}
	if len(replicaFaults) > 0 {
		b.WriteString("\nreplica targets (what each replica fault matches now; it picks among those up when it is injected):\n")
		for _, pf := range replicaFaults {
			if err := p.writeReplicaTargets(&b, pf, n); err != nil {
				refused.Faults, refused.Errs = append(refused.Faults, pf.spec.Name), append(refused.Errs, err)
			}
		}
	}

	if len(p.stops) > 0 {
		fmt.Fprintf(&b, "\nstop conditions (checked every second over the last %v; the first to fail aborts and reverts):\n", assertions.DefaultLiveWindow)
		for _, th := range p.stops {
			fmt.Fprintf(&b, "  %s\n", th)
		}
	}
	if len(p.thresholds) > 0 {
		b.WriteString("\nthresholds:\n")
		for _, th := range p.thresholds {
			fmt.Fprintf(&b, "  %s\n", th)
		}
	}
	b.WriteString("\ndry run: nothing was started or changed\n")
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	if len(refused.Faults) > 0 {
		return refused
	}
	return nil
}

// describeArrival says what load an arrival config makes.
func describeArrival(a workload.ArrivalConfig) string { return a.Describe() }

// fmtOffset writes a run-clock offset as "+15s".
func fmtOffset(d time.Duration) string { return "+" + d.String() }

// paramsText writes a fault's params on one line, as YAML's flow style
// would: keys sorted, nested maps in braces, lists in brackets.
func paramsText(m map[string]any) string { return flowText(m) }

// flowText writes v (decoded YAML or JSON: maps, lists, scalars) in YAML's
// flow style, keys sorted.
func flowText(v any) string {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + ": " + flowText(v[k])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case map[string]string:
		m := make(map[string]any, len(v))
		for k, s := range v {
			m[k] = s
		}
		return flowText(m)
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = flowText(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case []string:
		return "[" + strings.Join(v, ", ") + "]"
	case string:
		if v == "" || strings.ContainsAny(v, ",:{}[]#&*!|>'\"%@`") || strings.TrimSpace(v) != v {
			return strconv.Quote(v)
		}
		return v
	case nil:
		return "null"
	}
	return fmt.Sprint(v)
}

// previewTimeout bounds how long a dry run looks for a fault's replicas.
const previewTimeout = 5 * time.Second

// replicaParams returns the target and selection of a replica fault's
// params, nil for other faults.
func (pf *plannedFault) replicaParams(env spec.TargetEnv) interface {
	Targets() *replica.TargetParams
	Selection() faults.Selection
} {
	params, err := pf.params(env)
	if err != nil {
		return nil
	}
	rp, ok := params.(interface {
		Targets() *replica.TargetParams
		Selection() faults.Selection
	})
	if !ok {
		return nil
	}
	return rp
}

// writeReplicaTargets writes what a replica fault's target matches now
// (replica.Preview), with each process's pid and command line, each
// container or each pod, and what its selection picks among them.
// min_available counts only these, not the service's endpoints: the dry
// run says so. For pods, it returns why the fault would be refused now.
func (p *plan) writeReplicaTargets(b *strings.Builder, pf *plannedFault, endpoints int) error {
	rp := pf.replicaParams(p.spec.EnvOf(nil))
	sel := rp.Selection()
	t := *rp.Targets() // resolved: its defaults are in
	fmt.Fprintf(b, "  %s (%s): ", pf.spec.Name, pf.spec.Type)
	if t.Validate() != nil && p.spec.Target.Sim != nil {
		fmt.Fprintf(b, "the simulator's %d replica(s), from its supervisor's state file once the run starts it\n", p.spec.Target.Sim.Replicas)
		fmt.Fprintf(b, "    %s\n", selectionText(sel, "replicas"))
		return nil
	}
	if t.Driver == replica.DriverKubernetes {
		fmt.Fprintf(b, "%s\n", t)
		return writeKubernetesPods(b, pf, t, sel)
	}
	what := "processes"
	if t.Driver == replica.DriverDocker {
		what = "containers"
	}
	b.WriteString(t.String())
	if t.Cmdline != "" && t.Match == replica.MatchExe {
		b.WriteString(" (the executable's name; match: cmdline for the whole command line)")
	}
	b.WriteString("\n")
	ctx, cancel := context.WithTimeout(context.Background(), previewTimeout)
	defer cancel()
	ts, err := replica.Preview(ctx, t)
	switch {
	case err != nil:
		fmt.Fprintf(b, "    cannot list them now: %v\n", err)
	case len(ts) == 0:
		fmt.Fprintf(b, "    no %s match now: the fault would fail unless they run when it is injected\n", what)
	default:
		up := 0
		for _, tg := range ts {
			if tg.Up {
				up++
			}
			fmt.Fprintf(b, "    %s\n", tg)
		}
		fmt.Fprintf(b, "    %d match, %d up\n", len(ts), up)
	}
	fmt.Fprintf(b, "    %s\n", selectionText(sel, what))
	if sel.MinAvailable > 0 && p.spec.Target.Sim == nil {
		fmt.Fprintf(b, "    min_available %d counts only the %s this target matches, not the service's %d endpoint(s)\n", sel.MinAvailable, what, endpoints)
	}
	return nil
}

// selectionText says what a selection picks among the matching targets.
func selectionText(s faults.Selection, what string) string {
	var pick string
	switch s.Mode {
	case faults.SelectAll:
		pick = "acts on all the " + what + " up"
	case faults.SelectCount:
		pick = fmt.Sprintf("acts on %d of the %s up, picked with the fault's seed", s.Value, what)
	case faults.SelectPercent:
		pick = fmt.Sprintf("acts on %d%% of the %s up (at least one), picked with the fault's seed", s.Value, what)
	default:
		pick = "acts on one of the " + what + " up, picked with the fault's seed"
	}
	if s.MinAvailable > 0 {
		pick += fmt.Sprintf("; refused (exit 95) if that would leave fewer than %d up (min_available)", s.MinAvailable)
	}
	return pick
}

// thresholdList writes thresholds separated by commas.
func thresholdList(ths []assertions.Threshold) string {
	parts := make([]string, len(ths))
	for i, th := range ths {
		parts[i] = th.String()
	}
	return strings.Join(parts, ", ")
}

// errNoSpec is returned for a nil spec.
var errNoSpec = errors.New("experiment: no spec")
