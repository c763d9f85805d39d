package experiments

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/faults/network"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/xk6-llm/engine"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// Runner defaults.
const (
	// DefaultRevertTimeout bounds each fault's Undo and each helper's
	// stop; a revert that takes longer fails (and the fault stays in the
	// journal for `llmchaos recover`).
	DefaultRevertTimeout = 30 * time.Second
	// DefaultProgress is how often a line of load figures is printed.
	DefaultProgress = 5 * time.Second
	// liveInterval is how often stop conditions and recovery are checked.
	liveInterval = time.Second
	// probeTimeout bounds the HTTP client of the steady-state probes
	// beyond each probe's own timeout.
	probeTimeout = time.Minute
)

// Abort reasons, as Outcome.AbortReason, run.json's abort.cause and its
// events say them (report's Abort causes).
const (
	// AbortStopCondition: a stop condition (or an abortOnFail threshold)
	// failed over the live window.
	AbortStopCondition = report.AbortStopCondition
	// AbortNotSteady: the steady state did not hold before the faults, so
	// none was injected.
	AbortNotSteady = report.AbortNotSteady
	// AbortSignal: a signal (Ctrl-C, SIGTERM, SIGHUP, SIGQUIT) ended the
	// run's context; the abort names it.
	AbortSignal = report.AbortSignal
	// AbortInterrupted: the run's context ended without a signal.
	AbortInterrupted = report.AbortInterrupted
	// AbortError: the runner itself failed (a panic, a fault it could not
	// journal) and stopped the run.
	AbortError = report.AbortError
)

// Options configure Run. The zero value runs with an in-process proxy and
// no simulator (which needs Helper).
type Options struct {
	// RunDir is the run directory: the fault journal, helper logs, the
	// simulator's files; the caller writes run.json there. Empty: the
	// spec's out, else runs/NAME-YYYYMMDD-HHMMSS.
	RunDir string
	// File is the experiment file's path: relative paths of the workload
	// are resolved from its directory, and the report keeps its text.
	File string
	// Seed, when not nil, replaces the experiment's seed.
	Seed *uint64
	// Helper is the llmchaos executable that runs the run's helper
	// processes: the simulator (`sim`), fault proxies (`proxy`), GPU
	// balloons (`gpu-balloon`). Empty: a target.sim cannot run, proxies
	// run in this process and balloons use this process's executable.
	Helper string
	// Out receives the run's progress: what is started, each fault's
	// injection and revert, phase changes, and a line of load figures every
	// Progress (nil: discarded).
	Out io.Writer
	// Progress is how often a line of load figures is printed (0:
	// DefaultProgress; negative: never).
	Progress time.Duration
	// RevertTimeout bounds each revert (0: DefaultRevertTimeout).
	RevertTimeout time.Duration
	// ToolVersion is recorded in the report.
	ToolVersion string
	// NoGuard turns off the dead-man's switch: by default, with a Helper,
	// a guard process outlives the runner and replays the journal if the
	// runner dies without ending the run (kill -9, a crash); see guard.
	NoGuard bool
	// NoPreflight skips the load's pre-flight check of the endpoints
	// (load.Preflight): by default a model the endpoints do not serve,
	// a wrong path or a refused key ends the run before any fault with a
	// *load.PreflightError. The experiment's workload.preflight: false
	// skips it too.
	NoPreflight bool
	// Observe is the run's observability (live metrics, remote write,
	// tracing, server monitor); the zero value observes nothing.
	Observe ObserveOptions
	// SaveRequests, when set, receives one JSON line per request of the
	// load (--save-requests), tagged with the phase and fault of the
	// moment it was sent. The caller owns it: it calls Flush once Run has
	// returned and closes the file under it.
	SaveRequests *recording.RequestWriter

	// Live, when set, makes the run a live one (a game day) driven by
	// this Control: the load runs until Control.End, faults are injected
	// and reverted by hand through it, and the experiment's faults are a
	// timeline it plays step by step. See Control.
	Live *Control

	// Shards runs the load of an experiment with workload.shards N > 1
	// (see ShardRunner). Nil: an Indexed Job of ShardImage in the
	// target.kubernetes namespace (KubernetesShards), recorded in the
	// run's journal while it exists; a LocalShards runs them as
	// processes of this machine.
	Shards ShardRunner
	// ShardImage is the llmchaos image of the shard pods of a sharded load
	// run as a Kubernetes Job.
	ShardImage string
	// ShardServiceAccount runs those pods. "": when they follow the
	// target's pods (no target.kubernetes.url), deploy/kubernetes's
	// shardjob.DefaultPodServiceAccount, which must exist in the target's
	// namespace; else the namespace's default.
	ShardServiceAccount string
	// ShardStartIn is how far ahead of their start the shards are started
	// (0: DefaultShardStartIn).
	ShardStartIn time.Duration

	// hooks lets tests reach inside a run.
	hooks *testHooks
}

// testHooks are the runner's test seams.
type testHooks struct {
	// build replaces the fault builders.
	build func(pf *plannedFault) (faults.Fault, error)
	// wrap, when set, wraps each fault the real builders made.
	wrap func(name string, f faults.Fault) faults.Fault
	// onTag is called for every result as it is tagged, inside the load
	// engine's goroutines.
	onTag func(at time.Duration, tags *recording.Tags)
	// dial, when set, opens every connection to the target (the load,
	// the pre-flight check, the model lookup, the probes): tests route the
	// IPs of pods that run no container to local servers.
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Outcome is how a run ended: its report and verdict.
type Outcome struct {
	// Doc is the run's report, with the experiment's fields and the
	// verdict. The caller writes it (run.json, JUnit, HTML, terminal).
	Doc *report.Document
	// RunDir is the run directory.
	RunDir string
	// Shards are the shards' own reports, by index, for a sharded load
	// (workload.shards); its results are in Doc like any load's.
	Shards []*report.Document
	// Aborted is set when the run was cut short; AbortReason says why
	// (one of the Abort constants) and AbortDetail how.
	Aborted     bool
	AbortReason string
	AbortDetail string
	// Refused names the faults that were not injected because their
	// target selection was refused (too few replicas up for min_available,
	// none matching) or their targets have not opted in (the label
	// llmchaos.io/target=true): the run tested nothing of them, which is a
	// cause of its own, not an SLO failure.
	Refused []string
}

// NotSteady reports whether the run was aborted because the steady state
// did not hold before the faults.
func (o *Outcome) NotSteady() bool { return o != nil && o.AbortReason == AbortNotSteady }

// RevertError reports the faults (and helpers) a run could not revert:
// they may still be applied. Their journal entries stay pending, so
// `llmchaos recover --run-dir DIR` tries again.
type RevertError struct {
	RunDir string
	Errs   []error
}

// Error names every fault that could not be reverted.
func (e *RevertError) Error() string {
	msgs := make([]string, len(e.Errs))
	for i, err := range e.Errs {
		msgs[i] = err.Error()
	}
	return fmt.Sprintf("could not revert, may still be applied: %s; run `llmchaos recover --run-dir %s` to retry",
		strings.Join(msgs, "; "), e.RunDir)
}

// Unwrap returns the revert errors.
func (e *RevertError) Unwrap() []error { return e.Errs }

// PanicError is a panic caught in the runner or in the load it drives:
// the run was stopped and everything injected reverted before Run returned
// it.
type PanicError struct {
	Where string
	Value any
	Stack []byte
}

// Error says where the panic happened and what it was.
func (e *PanicError) Error() string {
	return fmt.Sprintf("panic while %s: %v\n%s", e.Where, e.Value, e.Stack)
}

// RunExperiment runs the resolved experiment x (spec.Experiment, which
// every verb that runs an experiment resolves once and passes on): it
// resolves the target (starting the simulator for target.sim), puts fault
// proxies in front of the endpoints when proxy faults need them, checks
// the steady state, starts the load, injects and reverts the faults on
// schedule on the run clock, checks stop conditions every second, checks
// the steady state after the load, computes recovery_time per fault and
// evaluates the thresholds. It returns the Outcome with the report, whose verdict the
// caller turns into an exit code.
//
// Revert is guaranteed: every fault is recorded in the write-ahead journal
// (RunDir/journal.jsonl) before it is injected, and reverted under
// context.WithoutCancel with its own timeout when its time is up, when the
// load ends, when ctx ends (Ctrl-C, SIGTERM), when a stop condition
// fails, and when anything in the run panics. A revert that fails is
// joined into the returned *RevertError (the Outcome is still returned);
// the fault stays pending in the journal for `llmchaos recover`.
//
// The error is non-nil when the run could not be set up, a revert
// failed, or the runner panicked.
func RunExperiment(ctx context.Context, x *spec.Experiment, opts Options) (*Outcome, error) {
	if opts.Live != nil {
		defer opts.Live.finish()
	}
	if x == nil {
		return nil, errNoSpec
	}
	p, err := planOf(x, opts.Seed)
	if err != nil {
		return nil, err
	}
	if opts.Live != nil {
		if err := p.makeLive(opts.Live); err != nil {
			return nil, err
		}
	}
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	if opts.Progress == 0 {
		opts.Progress = DefaultProgress
	}
	if opts.RevertTimeout <= 0 {
		opts.RevertTimeout = DefaultRevertTimeout
	}
	dir := opts.RunDir
	if dir == "" {
		dir = p.spec.Out
	}
	if dir == "" {
		dir = filepath.Join("runs", p.spec.Metadata.Name+"-"+time.Now().Format("20060102-150405"))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("run directory: %w", err)
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	jr, err := faults.Open(dir)
	if err != nil {
		return nil, err
	}
	// A journal with faults still pending belongs to a run that did not end
	// by itself: reusing its directory would mix the two.
	if pend, err := jr.Pending(); err != nil || len(pend) > 0 {
		jr.Close()
		if err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("run directory %s: its journal shows %d fault(s) of an earlier run still applied (first: %s %q): run `llmchaos recover --run-dir %s` first, or use another directory",
			dir, len(pend), pend[0].Type, pend[0].Name, dir)
	}
	r := newRun(p, opts, dir, jr)
	var g *guardWatch
	if opts.Helper != "" && !opts.NoGuard {
		first, err := startGuard(opts.Helper, dir)
		if err != nil {
			jr.Close()
			return nil, err
		}
		g = watchGuard(first, opts.Helper, dir, func(kind, detail string) {
			r.obs.event(report.EventSourceRunner, kind, "", detail)
		})
	}
	out, err := r.execute(ctx)
	if cerr := jr.Close(); cerr != nil {
		err = errors.Join(err, cerr)
	}
	// The run ended by itself and reverted what it injected: the guard
	// has nothing to do. (A runner that dies before this line never
	// releases it, and the guard replays the journal.)
	if g != nil {
		if gerr := g.release(); gerr != nil {
			err = errors.Join(err, gerr)
		}
	}
	if out != nil {
		out.RunDir = dir
	}
	return out, err
}

// run is one execution of a plan. It holds the plan and the run's parts
// and coordinates them (runner.go: set up, execute, tear down):
//   - faults, the fault timeline: the faults built, injected and reverted
//     on the run clock, their ledger and records (runner_timeline.go);
//   - obs, the observers: live observers, monitors, GPU samplers, replica
//     and container events, the run's event log (runner_observe.go);
//   - judge: the steady state before and after, the live stop conditions
//     (the load's and promql), the recovery, why the run was stopped
//     (runner_judge.go);
//   - the load: the recorder, its clock, and the target it is sent to (the
//     simulator, the proxies, the endpoints) (runner_load.go).
//
// Each part guards its own state. run's own fields are set by setUp and
// when the load starts, before the run's goroutines, and only read after.
type run struct {
	p    *plan
	opts Options
	dir  string
	jr   *faults.Journal
	tl   *timeline // the phases, which the parts share
	out  *lineWriter

	faults *faultTimeline
	obs    *observers
	judge  *judge

	clock     *runClock // the load's clock, which the parts share
	rec       *recording.Recorder
	sim       *simProcess
	kube      *kubeTarget
	starter   *proxyStarter
	proxies   []*runProxy
	declared  map[string]*runProxy
	endpoints []*endpoint
	model     string
	// tagURL maps the URL the engine sends to onto the endpoint's URL,
	// which results are tagged with.
	tagURL map[string]string
	// shardOutputs are the shards' outputs once a sharded load ended;
	// shardsLost counts those that handed back no report whole.
	shardOutputs []ShardOutput
	shardsLost   int
	// probes sends the consistency probes (nil: the experiment asks for
	// none); set when the load starts.
	probes *prober
}

// newRun returns the run of plan p in directory dir, its parts made and
// nothing started.
func newRun(p *plan, opts Options, dir string, jr *faults.Journal) *run {
	r := &run{p: p, opts: opts, dir: dir, jr: jr, tl: newTimeline(), out: &lineWriter{w: opts.Out}, clock: &runClock{}}
	r.faults = newFaultTimeline(p.faults)
	r.obs = newObservers(r.out, opts.Observe, r.clock)
	r.judge = newJudge(p, r.tl, r.faults, r.obs, r.clock, r.out)
	return r
}

// now returns the run clock's time, 0 before the load starts.
func (r *run) now() time.Duration { return r.clock.now() }

// runClock is the load's clock, shared by the run's parts: nil until the
// load starts, which sets it once.
type runClock struct {
	atomic.Pointer[recording.RunClock]
}

// now returns the run clock's time, 0 before the load starts.
func (c *runClock) now() time.Duration {
	if c := c.Load(); c != nil {
		return c.Now()
	}
	return 0
}

// sleepUntil waits until run-clock time d; false when ctx ended first.
// The load has started.
func (c *runClock) sleepUntil(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(time.Until(c.Load().Time(d)))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// fmtClock writes a run-clock time as "+12.3s".
func fmtClock(d time.Duration) string { return fmt.Sprintf("+%.1fs", d.Seconds()) }

// execute sets the run up, runs it, tears it down, and builds its report.
// Every path out of it reverts what it injected and stops what it started.
func (r *run) execute(ctx context.Context) (out *Outcome, err error) {
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	r.judge.cancel = cancel
	defer func() {
		// Whatever happened, nothing stays applied: a panic here is
		// turned into an error after the reverts.
		if v := recover(); v != nil {
			err = errors.Join(err, &PanicError{Where: "running the experiment", Value: v, Stack: debug.Stack()})
		}
		// Stop whatever still runs on runCtx before reverting, so that no
		// fault goroutine can inject after revertAll has passed.
		cancel(errStopped)
		err = errors.Join(err, r.teardown(ctx))
	}()

	p := r.p
	r.out.printf("llmchaos run %q: %s, %s", p.spec.Metadata.Name, r.describeTarget(), p.describeLoad())
	r.out.printf("run directory: %s", r.dir)
	if err := r.setUp(runCtx); err != nil {
		// Interrupted while starting (the simulator, a proxy): an abort
		// like any other, with its record.
		if r.judge.interrupted(ctx) {
			return r.finish(nil, engine.RunStats{})
		}
		return nil, err
	}
	hc := &http.Client{Timeout: probeTimeout, Transport: &http.Transport{DisableKeepAlives: true, DialContext: r.dialer()}}
	before := append(p.steady.probeHTTP(runCtx, hc, r.probeBases()), p.steady.probePromQL(runCtx)...)
	r.judge.addBefore(before)
	if r.judge.interrupted(ctx) {
		return r.finish(nil, engine.RunStats{})
	}
	if !allOK(before) {
		r.judge.stop(AbortNotSteady, "steady state does not hold before the load: "+failedProbes(before))
		return r.finish(nil, engine.RunStats{})
	}
	stats, err := r.load(runCtx)
	r.judge.interrupted(ctx)
	// Nothing the steady state is checked against may still be injected.
	r.revertAll(ctx)
	if err != nil {
		return nil, err
	}
	if runCtx.Err() == nil {
		r.judge.addAfter(append(p.steady.probeHTTP(runCtx, hc, r.probeBases()), p.steady.probePromQL(runCtx)...))
	}
	return r.finish(r.rec, stats)
}

// probeBases returns what {{target}} stands for in the steady-state
// probes: each endpoint's root URL, for a Kubernetes target the endpoints
// ready now.
func (r *run) probeBases() []string {
	var bases []string
	if r.kube != nil && r.kube.t.URL == "" {
		for _, u := range r.kube.urls() {
			bases = append(bases, rootURL(u))
		}
		return bases
	}
	for _, e := range r.endpoints {
		bases = append(bases, rootURL(e.url))
	}
	return bases
}

// describeTarget says what the target is, for the first line.
func (r *run) describeTarget() string {
	switch t := r.p.spec.Target; {
	case t.Sim != nil:
		return fmt.Sprintf("simulator with %d replica(s)", t.Sim.Replicas)
	case t.Kubernetes != nil && t.Kubernetes.URL != "":
		return fmt.Sprintf("Kubernetes pods %q through %s", t.Kubernetes.Selector, t.Kubernetes.URL)
	case t.Kubernetes != nil:
		return fmt.Sprintf("Kubernetes pods %q", t.Kubernetes.Selector)
	}
	return fmt.Sprintf("%d endpoint(s)", len(r.p.spec.Target.LLM.Endpoints()))
}

// setUp resolves the target (starting the simulator), starts the proxies
// and builds the faults.
func (r *run) setUp(ctx context.Context) error {
	p := r.p
	s := &p.spec
	if err := p.preflight(); err != nil {
		return err
	}
	var simEnv *spec.SimEnv
	var urls []string
	switch {
	case s.Target.Sim != nil:
		sp, err := startSim(ctx, *s.Target.Sim, r.dir, r.opts.Helper, r.jr)
		if err != nil {
			return err
		}
		r.sim = sp
		simEnv = &sp.env
		urls = sp.endpoints()
		r.model = s.Target.Sim.Model
		r.out.printf("simulator serving: %s", strings.Join(urls, ", "))
	case s.Target.Kubernetes != nil:
		k, err := connectKube(*s.Target.Kubernetes)
		if err != nil {
			return err
		}
		r.kube = k
		r.out.printf("kubernetes: %s", k.describe())
		if k.t.URL != "" {
			urls = []string{k.t.URL}
		} else {
			if err := k.discover(ctx, r.kubeEvent); err != nil {
				return err
			}
			urls = k.urls()
		}
	default:
		urls = s.Target.LLM.Endpoints()
	}
	if t := s.Target.Client(); t != nil {
		r.model = t.Model
		if r.model == "" {
			hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, DialContext: r.dialer()}}
			m, err := firstModel(ctx, hc, urls[0], modelsHeader(*t), s.Target.ModelKey())
			if err != nil {
				return err
			}
			r.model = m
		}
	}
	for _, u := range urls {
		r.endpoints = append(r.endpoints, &endpoint{url: u, load: u})
	}
	if err := r.startProxies(ctx); err != nil {
		return err
	}
	r.tagURL = map[string]string{}
	for _, e := range r.endpoints {
		r.tagURL[spec.EndpointTag(e.load)] = spec.EndpointTag(e.url)
	}
	for _, pf := range p.faults {
		f, target, err := r.build(pf, simEnv)
		if err != nil {
			return err
		}
		r.faults.add(pf.index, f, target)
	}
	return nil
}

// startProxies starts the declared proxies and, when proxy faults need
// them, one proxy in front of each endpoint that none is in front of yet.
func (r *run) startProxies(ctx context.Context) error {
	p := r.p
	r.starter = &proxyStarter{helper: r.opts.Helper, dir: r.dir, jr: r.jr}
	r.declared = map[string]*runProxy{}
	for _, d := range p.spec.Proxies {
		px, err := r.starter.start(ctx, d.Name, network.Config{Listen: d.Listen, Upstream: d.Upstream, Mode: network.Mode(d.Mode)})
		if err != nil {
			return err
		}
		r.proxies = append(r.proxies, px)
		r.declared[d.Name] = px
		r.out.printf("proxy %s listening on %s → %s", d.Name, px.addr, px.upstream)
		for _, e := range r.endpoints {
			if hp, err := hostPort(e.url); err == nil && hp == d.Upstream && e.proxy == nil {
				e.proxy, e.load = px, throughProxy(e.url, px.addr)
			}
		}
	}
	if !p.autoProxies {
		return nil
	}
	for i, e := range r.endpoints {
		if e.proxy != nil {
			continue
		}
		up, err := hostPort(e.url)
		if err != nil {
			return err
		}
		mode := network.ModeHTTP
		if strings.HasPrefix(e.url, "https:") {
			if p.l7 {
				return fmt.Errorf("endpoint %s: per-request faults (http.*, stream.*) need a plain-HTTP endpoint; the proxy cannot read TLS", e.url)
			}
			mode = network.ModeTCP
		}
		px, err := r.starter.start(ctx, fmt.Sprintf("endpoint-%d", i), network.Config{Listen: spec.DefaultProxyListen, Upstream: up, Mode: mode})
		if err != nil {
			return err
		}
		r.proxies = append(r.proxies, px)
		e.proxy, e.load = px, throughProxy(e.url, px.addr)
	}
	addrs := make([]string, 0, len(r.endpoints))
	for _, e := range r.endpoints {
		if e.proxy != nil {
			addrs = append(addrs, e.proxy.addr+" → "+e.proxy.upstream)
		}
	}
	// One line when it fits the terminal's 120 columns, else one proxy a
	// line.
	if line := "fault proxies in front of the endpoints: " + strings.Join(addrs, ", "); utf8.RuneCountInString(line) <= 120 || len(addrs) < 2 {
		r.out.println(line)
	} else {
		r.out.println("fault proxies in front of the endpoints:")
		for _, a := range addrs {
			r.out.println("  " + a)
		}
	}
	return nil
}

// failedProbes names the probes that failed.
func failedProbes(rs []report.ProbeRecord) string {
	var parts []string
	for _, r := range rs {
		if !r.OK {
			parts = append(parts, r.Probe+": "+r.Detail)
		}
	}
	return strings.Join(parts, "; ")
}

// teardown reverts every fault still applied, then stops the proxies and
// the simulator, last started first, each under context.WithoutCancel
// with its own timeout. Every failure is joined into the error; fault
// reverts that failed come as a *RevertError.
func (r *run) teardown(ctx context.Context) error {
	base := context.WithoutCancel(ctx)
	r.revertAll(base)
	r.obs.closeObservers(base)
	var errs []error
	revertErrs := r.faults.revertErrors()
	if len(revertErrs) > 0 {
		errs = append(errs, &RevertError{RunDir: r.dir, Errs: revertErrs})
	}
	errs = append(errs, r.judge.failures()...)
	var helperErrs []error
	for i := len(r.proxies) - 1; i >= 0; i-- {
		c, cancel := context.WithTimeout(base, r.opts.RevertTimeout)
		if err := r.proxies[i].stop(c); err != nil {
			helperErrs = append(helperErrs, fmt.Errorf("stop %s: %w", r.proxies[i].describe(), err))
		}
		cancel()
	}
	if r.starter != nil {
		r.starter.cleanup()
	}
	if r.kube != nil {
		r.kube.stopEndpoints()
	}
	if r.sim != nil {
		c, cancel := context.WithTimeout(base, r.opts.RevertTimeout)
		if err := r.sim.stop(c); err != nil {
			helperErrs = append(helperErrs, fmt.Errorf("stop the simulator: %w", err))
		}
		cancel()
	}
	if len(helperErrs) > 0 {
		errs = append(errs, &RevertError{RunDir: r.dir, Errs: helperErrs})
	}
	// Whatever the journal still shows pending (a fault whose Inject
	// panicked half-way, a revert that failed) is for `llmchaos recover`.
	if pend, err := r.jr.Pending(); err != nil {
		errs = append(errs, err)
	} else if len(pend) > 0 && len(revertErrs) == 0 && len(helperErrs) == 0 {
		var left []error
		for _, pf := range pend {
			left = append(left, fmt.Errorf("%s %q is still pending in the journal", pf.Type, pf.Name))
		}
		errs = append(errs, &RevertError{RunDir: r.dir, Errs: left})
	}
	return errors.Join(errs...)
}

// configRecord is the run's configuration as the report keeps it: the
// spec with its defaults, as JSON (report.Build redacts it again).
func (r *run) configRecord() map[string]any {
	b, err := json.Marshal(r.p.spec)
	if err != nil {
		return map[string]any{"error": err.Error()}
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return map[string]any{"error": err.Error()}
	}
	// Header values may be secrets (the load's own rule keeps only short,
	// harmlessly named ones; a report keeps none).
	if t, ok := m["target"].(map[string]any); ok {
		for _, kind := range []string{"llm", "kubernetes"} {
			if l, ok := t[kind].(map[string]any); ok {
				if h, ok := l["headers"].(map[string]any); ok {
					for k := range h {
						h[k] = report.Redacted
					}
				}
			}
		}
	}
	m["run_dir"] = r.dir
	m["model"] = r.model
	var eps []string
	for _, e := range r.endpoints {
		eps = append(eps, spec.EndpointTag(e.url))
	}
	m["endpoints"] = eps
	return m
}
