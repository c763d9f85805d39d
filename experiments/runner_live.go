package experiments

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/faults/replica"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/telemetry/scrape"
	"github.com/llmchaos/llmchaos/xk6-llm/engine"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// DefaultLiveMaxDuration is how long a live run's load lasts at most when
// nobody ends it.
const DefaultLiveMaxDuration = 8 * time.Hour

// Errors of a live run's actions.
var (
	// ErrLiveNotStarted: the load has not started yet (the target and the
	// proxies are being started, the steady state probed).
	ErrLiveNotStarted = errors.New("the game day's load has not started yet")
	// ErrLiveEnded: the run's load has ended (it was ended, a stop
	// condition aborted it, or it was interrupted).
	ErrLiveEnded = errors.New("the game day has ended")
	// ErrNoSuchFault: no fault of that name is injected.
	ErrNoSuchFault = errors.New("no such fault is injected")
)

// RefusedError is an action a live run's safety rules refused: the blast
// radius (blast_radius.max_concurrent_faults, min_available), a steady
// state not yet confirmed, a load change the load's shape cannot take.
// The refusal is recorded in the run's events.
type RefusedError struct {
	Reason string
}

func (e *RefusedError) Error() string { return "refused: " + e.Reason }

// InvalidFaultError is a fault to inject by hand that is not valid: its
// problems name the key they are about (fault.params.latency).
type InvalidFaultError struct {
	Problems spec.Problems
}

func (e *InvalidFaultError) Error() string {
	msgs := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		msgs[i] = p.Error()
	}
	return "invalid fault: " + strings.Join(msgs, "; ")
}

// LiveOptions configure a live run (Options.Live).
type LiveOptions struct {
	// MaxDuration is the longest the load runs when nobody ends it (0:
	// DefaultLiveMaxDuration).
	MaxDuration time.Duration
}

// Live is the control of a live run: a game day, in which people inject
// and revert faults by hand, change the load, play the experiment's own
// timeline step by step, write notes, and end the run when they are done.
// Make one with NewLive, give it to Run in Options.Live, and act on it
// from any goroutine once Ready is closed; Run returns once End was
// called (or a stop condition, a signal, the maximum duration ended the
// load).
//
// In a live run the experiment's faults are not injected on their own:
// they are the steps of a timeline that PlayTimeline plays (keeping the
// file's spacing), PauseTimeline pauses, StepTimeline injects at once
// and SkipTimeline passes over. Every fault, by hand or from the
// timeline, goes through the fault contract and the write-ahead journal,
// is reverted when its duration is over, by hand, or when the run ends,
// and is kept within the experiment's blast_radius; the guard reverts
// everything if the process is killed. Every action is recorded in the
// run's events with who did it.
type Live struct {
	opts  LiveOptions
	load  *engine.LiveLoad
	sw    *workload.Switch // the workload, switched between presets
	ready chan struct{}    // closed once the load started
	done  chan struct{}    // closed when Run has returned
	gate  <-chan struct{}

	mu      sync.Mutex
	r       *run
	ctx     context.Context // the fault context of the run's load
	closed  bool            // the load ended: no new action starts
	busy    sync.WaitGroup  // actions and timed reverts in progress
	faults  map[string]*liveFault
	manual  int // faults injected by hand so far, for their names
	tlState timelineState
	tlWake  chan struct{} // closed and replaced when the timeline changes
}

// liveFault is a fault injected in a live run.
type liveFault struct {
	index     int
	name, typ string
	target    string
	by        string
	at        time.Duration // injected at, run clock
	duration  time.Duration // 0: until reverted
	endpoints []int         // the endpoints it acts on (proxy faults)
	step      int           // its timeline step + 1; 0 for one injected by hand
}

// timelineState is where the experiment's timeline is: offset is the
// position on the file's clock (the at of its faults) at run-clock time
// since; it advances with the run clock while playing.
type timelineState struct {
	next    int // the next step, in time order
	playing bool
	offset  time.Duration
	since   time.Duration
	states  []string // per step: pending, injected, failed, skipped
	by      []string
}

// TimelineHolder is who injects the steps of a timeline that plays, in
// the run's events.
const TimelineHolder = "timeline"

// Timeline step states.
const (
	StepPending  = "pending"
	StepInjected = "injected"
	StepFailed   = "failed"
	StepSkipped  = "skipped"
)

// NewLive returns the control of a live run, not started.
func NewLive(opts LiveOptions) *Live {
	if opts.MaxDuration <= 0 {
		opts.MaxDuration = DefaultLiveMaxDuration
	}
	return &Live{opts: opts, ready: make(chan struct{}), done: make(chan struct{}), faults: map[string]*liveFault{}, tlWake: make(chan struct{})}
}

// Ready is closed once the load has started and actions are taken.
func (l *Live) Ready() <-chan struct{} { return l.ready }

// Done is closed once Run has returned.
func (l *Live) Done() <-chan struct{} { return l.done }

// makeLive turns plan p into a live one: proxies in front of every
// endpoint, so that proxy faults can be injected by hand, and a load shape
// that can change while it runs, lasting at most the live maximum.
func (p *plan) makeLive(l *Live) error {
	if p.script != nil {
		return errors.New("a game day drives the workload's load itself: give a workload of rate or concurrency, not a script")
	}
	p.live = true
	p.autoProxies = true
	a := p.ac
	var rate float64
	var users int
	switch a.Mode() {
	case workload.ModeRate:
		rate = a.Rate
	case workload.ModeRamp:
		rate = a.Ramp.To
	case workload.ModeStages:
		for _, st := range a.Stages {
			rate = max(rate, st.Target)
		}
	case workload.ModeClosed:
		users = a.Concurrency
	default:
		return fmt.Errorf("a game day's load runs at a rate you change live; the workload's %s shape cannot: give rate or concurrency", a.Mode())
	}
	if math.IsInf(rate, 1) {
		return errors.New("a game day's load needs a finite rate")
	}
	if users > 0 {
		a.Duration = l.opts.MaxDuration
	} else {
		a = workload.ArrivalConfig{
			Rate: rate, Arrival: a.Arrival, Burstiness: a.Burstiness, Duration: l.opts.MaxDuration,
			Requests: a.Requests, MaxInFlight: a.MaxInFlight, OnSaturation: a.OnSaturation,
		}.WithDefaults()
	}
	if err := a.Validate(); err != nil {
		return fmt.Errorf("game day load: %w", err)
	}
	p.ac = a
	l.load = engine.NewLiveLoad(rate, users)
	l.sw = workload.NewSwitch(p.wc.Name)
	return nil
}

// start binds l to run r once its load started: faults act on ctx, and
// none is injected before gate opens (the steady state was seen to hold
// before the faults).
func (l *Live) start(ctx context.Context, r *run, gate <-chan struct{}) {
	l.mu.Lock()
	l.r, l.ctx, l.gate = r, ctx, gate
	l.tlState.states = make([]string, len(r.p.faults))
	l.tlState.by = make([]string, len(r.p.faults))
	for i := range l.tlState.states {
		l.tlState.states[i] = StepPending
	}
	l.mu.Unlock()
	close(l.ready)
	l.goroutine(l.playTimeline)
}

// close ends l's actions once the load has ended: nothing new starts, and
// it returns once those in progress have (their faults are then in the
// ledger, for the run to revert).
func (l *Live) close() {
	l.mu.Lock()
	l.closed = true
	l.wakeTimelineLocked()
	l.mu.Unlock()
	l.busy.Wait()
}

// finish marks l done; Run calls it as it returns.
func (l *Live) finish() { close(l.done) }

// goroutine runs f on l's busy group unless l is closed.
func (l *Live) goroutine(f func()) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.busy.Go(func() {
		defer l.r.judge.guard("a game day action")
		f()
	})
	return true
}

// enter starts an action: it returns the run, or why none can be taken
// now. The caller calls l.busy.Done when it is done.
func (l *Live) enter() (*run, error) {
	select {
	case <-l.ready:
	default:
		select {
		case <-l.done:
			return nil, ErrLiveEnded
		default:
			return nil, ErrLiveNotStarted
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || l.ctx.Err() != nil {
		return nil, ErrLiveEnded
	}
	l.busy.Add(1)
	return l.r, nil
}

// ManualFault is a fault to inject by hand.
type ManualFault struct {
	// Name names it in the report and in thresholds' fault:NAME; empty:
	// the type's last word and a number ("latency-1").
	Name string `json:"name,omitempty"`
	// Type is a fault type (spec.FaultTypes).
	Type string `json:"type"`
	// Params are the type's params, as an experiment file writes them.
	Params map[string]any `json:"params,omitempty"`
	// Target selects where a proxy fault acts (default: every endpoint).
	Target *spec.FaultTarget `json:"target,omitempty"`
	// Duration reverts it that long after its injection (0: it stays
	// until reverted by hand, or the end).
	Duration time.Duration `json:"-"`
}

// ActiveFault is a fault injected and not yet reverted.
type ActiveFault struct {
	Name   string `json:"name"`
	Type   string `json:"type"`
	Target string `json:"target,omitempty"`
	// By is who injected it; Step is its timeline step + 1 (0: by hand).
	By   string `json:"by,omitempty"`
	Step int    `json:"step,omitempty"`
	// InjectedAtS is when, on the run clock; DurationS how long it stays
	// (0: until reverted), and RevertAtS when it will be reverted then.
	InjectedAtS float64 `json:"injected_at_s"`
	DurationS   float64 `json:"duration_s,omitempty"`
	RevertAtS   float64 `json:"revert_at_s,omitempty"`
}

// Inject injects a fault by hand for by (who asked), at once: it is
// checked (an *InvalidFaultError), kept within the blast radius (a
// *RefusedError, recorded), built, journalled and injected through the
// fault contract, and reverted after its Duration (if any). The error is
// the injection's when it failed.
func (l *Live) Inject(mf ManualFault, by string) (ActiveFault, error) {
	r, err := l.enter()
	if err != nil {
		return ActiveFault{}, err
	}
	defer l.busy.Done()
	if err := l.gateOpen(); err != nil {
		return ActiveFault{}, l.refused(r, err, by)
	}
	ft, known := spec.FaultTypes()[mf.Type]
	if mf.Name == "" && known {
		mf.Name = l.autoName(r, mf.Type)
	}
	sf := spec.Fault{Name: mf.Name, Type: mf.Type, Duration: spec.Duration(mf.Duration), Target: mf.Target, Params: mf.Params}
	if mf.Duration < 0 {
		return ActiveFault{}, &InvalidFaultError{Problems: spec.Problems{{Path: "fault.duration", Msg: fmt.Sprintf("%v is negative", mf.Duration)}}}
	}
	if ps := r.p.spec.ValidateFault(sf); len(ps) > 0 {
		return ActiveFault{}, &InvalidFaultError{Problems: ps}
	}
	if r.faults.hasName(mf.Name) {
		return ActiveFault{}, &InvalidFaultError{Problems: spec.Problems{{Path: "fault.name", Msg: fmt.Sprintf("a fault named %q was already injected in this run: fault names must be unique", mf.Name)}}}
	}
	floor := r.p.spec.BlastRadius.Floor()
	if floor > 0 && ft.Family == replica.Family {
		sf.Params = withMinAvailable(sf.Params, floor)
	}
	pf := &plannedFault{spec: sf, ft: ft, seed: r.p.seed ^ uint64(len(mf.Name))<<32 ^ hashName(mf.Name)}
	endpoints := r.faultEndpoints(pf)
	if err := l.blastRadius(r, mf.Name, endpoints); err != nil {
		return ActiveFault{}, l.refused(r, err, by)
	}
	now := r.now()
	i, ok := r.faults.addRecord(report.FaultRecord{
		Name: mf.Name, Type: mf.Type, PlannedAtS: now.Seconds(), PlannedDurationS: mf.Duration.Seconds(), RevertOK: true, By: by,
	})
	if !ok {
		return ActiveFault{}, &InvalidFaultError{Problems: spec.Problems{{Path: "fault.name", Msg: fmt.Sprintf("a fault named %q was already injected in this run", mf.Name)}}}
	}
	pf.index = i
	f, target, err := r.build(pf, r.simEnv())
	if err != nil {
		r.notInjected(i, err.Error())
		r.obs.eventBy(report.EventSourceFault, "inject_failed", mf.Name, err.Error(), by)
		return ActiveFault{}, fmt.Errorf("fault %q: %w", mf.Name, err)
	}
	r.faults.setTarget(i, target)
	return l.injectLive(r, &liveFault{index: i, name: mf.Name, typ: mf.Type, target: target, by: by, duration: mf.Duration, endpoints: endpoints}, f)
}

// injectLive injects lf's fault f now, and schedules its revert when it
// has a duration. It holds no lock: blast-radius checks and injections
// of two actions at once are serialised by inj.
func (l *Live) injectLive(r *run, lf *liveFault, f faults.Fault) (ActiveFault, error) {
	l.mu.Lock()
	if err := l.blastRadiusLocked(r, lf.name, lf.endpoints); err != nil {
		l.mu.Unlock()
		r.notInjected(lf.index, err.Error())
		return ActiveFault{}, l.refused(r, err, lf.by)
	}
	// Reserve its place in the blast radius while it is injected.
	lf.at = -1
	l.faults[lf.name] = lf
	ctx := l.ctx
	l.mu.Unlock()
	err := r.injectFault(ctx, lf.index, lf.name, lf.typ, lf.target, f, r.now(), lf.by)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		delete(l.faults, lf.name)
		return ActiveFault{}, fmt.Errorf("fault %q: %w", lf.name, err)
	}
	lf.at = r.now()
	if rec := r.faults.records(); lf.index < len(rec) && rec[lf.index].InjectedAtS != nil {
		lf.at = durationOf(*rec[lf.index].InjectedAtS)
	}
	if lf.duration > 0 && !l.closed {
		l.busy.Go(func() {
			defer r.judge.guard("reverting a game day fault on time")
			if r.clock.sleepUntil(ctx, lf.at+lf.duration) {
				r.revertFault(ctx, lf.index, "")
			}
		})
	}
	return lf.active(), nil
}

// active describes lf as injected.
func (lf *liveFault) active() ActiveFault {
	a := ActiveFault{Name: lf.name, Type: lf.typ, Target: lf.target, By: lf.by, Step: lf.step, InjectedAtS: max(lf.at, 0).Seconds(), DurationS: lf.duration.Seconds()}
	if lf.duration > 0 {
		a.RevertAtS = (lf.at + lf.duration).Seconds()
	}
	return a
}

// Revert reverts the injected fault name for by, at once.
func (l *Live) Revert(name, by string) error {
	r, err := l.enter()
	if err != nil {
		return err
	}
	defer l.busy.Done()
	l.mu.Lock()
	lf := l.faults[name]
	l.mu.Unlock()
	if lf == nil || !r.faults.ledger.has(lf.index) {
		return fmt.Errorf("%w: %q", ErrNoSuchFault, name)
	}
	if !r.revertFault(l.ctx, lf.index, by) {
		if r.faults.ledger.has(lf.index) {
			return fmt.Errorf("fault %q: revert failed; see the run's events", name)
		}
		if recs := r.faults.records(); lf.index < len(recs) && !recs[lf.index].RevertOK {
			return fmt.Errorf("fault %q: revert failed: %s; it may still be applied (llmchaos recover)", name, recs[lf.index].Error)
		}
	}
	return nil
}

// RevertAll reverts every injected fault for by, last injected first, and
// pauses the timeline so that it injects nothing more.
func (l *Live) RevertAll(by string) error {
	r, err := l.enter()
	if err != nil {
		return err
	}
	defer l.busy.Done()
	l.mu.Lock()
	if l.tlState.playing {
		l.pauseTimelineLocked(r)
	}
	l.mu.Unlock()
	r.obs.eventBy(report.EventSourceGameDay, "revert_all", "", "", by)
	var errs []error
	for _, i := range r.faults.ledger.indexes() {
		r.revertFault(l.ctx, i, by)
		if r.faults.ledger.has(i) {
			errs = append(errs, fmt.Errorf("fault %d could not be reverted", i))
		}
	}
	for _, rec := range r.faults.records() {
		if rec.InjectedAtS != nil && rec.RevertedAtS == nil && !rec.RevertOK {
			errs = append(errs, fmt.Errorf("fault %q: %s", rec.Name, rec.Error))
		}
	}
	return errors.Join(errs...)
}

// Active returns the faults injected now, in the order they were.
func (l *Live) Active() []ActiveFault {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.r == nil {
		return []ActiveFault{}
	}
	var lfs []*liveFault
	for _, lf := range l.faults {
		if lf.at >= 0 && l.r.faults.ledger.has(lf.index) {
			lfs = append(lfs, lf)
		}
	}
	slices.SortFunc(lfs, func(a, b *liveFault) int { return int(a.at - b.at) })
	out := make([]ActiveFault, 0, len(lfs))
	for _, lf := range lfs {
		out = append(out, lf.active())
	}
	return out
}

// Note records a facilitator's note (a observation, a hypothesis) by by
// at the current run-clock time, as an event of the run, and returns it.
func (l *Live) Note(text, by string) (report.EventRecord, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return report.EventRecord{}, errors.New("the note is empty")
	}
	if len(text) > 4000 {
		return report.EventRecord{}, fmt.Errorf("the note has %d characters: at most 4000", len(text))
	}
	r, err := l.enter()
	if err != nil {
		return report.EventRecord{}, err
	}
	defer l.busy.Done()
	return r.obs.eventBy(report.EventSourceGameDay, "note", "", text, by), nil
}

// LoadChange changes a live run's load; nil fields stay as they are.
type LoadChange struct {
	// Rate is the open loop's new rate, in requests per second.
	Rate *float64 `json:"rate,omitempty"`
	// Users is the closed loop's new number of virtual users.
	Users *int `json:"users,omitempty"`
	// Paused pauses (true) or resumes (false) the load.
	Paused *bool `json:"paused,omitempty"`
	// Preset switches what the requests are like to a workload preset
	// (workload.Presets: chat, batch, completion, agent), with the
	// experiment's own workload keys on top; the results keep the
	// experiment's request class.
	Preset *string `json:"preset,omitempty"`
}

// LoadState is a live run's load now: its rate or users, whether it is
// paused or ended, and the preset its requests are drawn from ("" for
// the experiment's own workload).
type LoadState struct {
	engine.LiveState
	Preset string `json:"preset,omitempty"`
}

// Load returns the load's settings now (zero before the load started).
func (l *Live) Load() LoadState {
	select {
	case <-l.ready:
		return l.loadState()
	default:
		return LoadState{}
	}
}

func (l *Live) loadState() LoadState {
	return LoadState{LiveState: l.load.State(), Preset: l.sw.Name()}
}

// switchPreset makes the load's requests those of preset name.
func (l *Live) switchPreset(r *run, name string) error {
	if r.p.spec.Workload.Dataset != "" {
		return &RefusedError{Reason: "the workload replays a dataset: its requests are the dataset's, whatever the preset"}
	}
	w := r.p.spec.Workload
	w.Preset = name
	wc, _, err := w.Configs()
	if err != nil {
		return err
	}
	if !filepath.IsAbs(wc.Dataset) && wc.Dataset != "" {
		wc.Dataset = filepath.Join(filepath.Dir(r.p.file), wc.Dataset)
	}
	nw, err := workload.New(wc, rand.New(rand.NewPCG(r.p.seed, hashName("preset "+name))))
	if err != nil {
		return fmt.Errorf("preset %s: %w", name, err)
	}
	l.sw.Set(nw, name)
	return nil
}

// SetLoad changes the load for by: a rate for an open loop, users for a
// closed loop (the other is refused), a pause or a resume.
func (l *Live) SetLoad(c LoadChange, by string) (LoadState, error) {
	r, err := l.enter()
	if err != nil {
		return LoadState{}, err
	}
	defer l.busy.Done()
	closed := r.p.ac.Mode() == workload.ModeClosed
	var did []string
	switch {
	case c.Rate != nil && closed:
		return l.loadState(), l.refused(r, errors.New("the load is a closed loop of users: change its users, not a rate"), by)
	case c.Users != nil && !closed:
		return l.loadState(), l.refused(r, errors.New("the load is an open loop at a rate: change its rate, not users"), by)
	case c.Rate != nil:
		if err := l.load.SetRate(*c.Rate); err != nil {
			return l.loadState(), err
		}
		did = append(did, fmt.Sprintf("rate %g req/s", *c.Rate))
	case c.Users != nil:
		if err := l.load.SetUsers(*c.Users); err != nil {
			return l.loadState(), err
		}
		did = append(did, fmt.Sprintf("%d users", *c.Users))
	}
	if c.Preset != nil {
		if err := l.switchPreset(r, *c.Preset); err != nil {
			if _, ok := errors.AsType[*RefusedError](err); ok {
				return l.loadState(), l.refused(r, err, by)
			}
			return l.loadState(), err
		}
		did = append(did, "preset "+*c.Preset)
	}
	if c.Paused != nil {
		if *c.Paused {
			l.load.Pause()
			did = append(did, "paused")
		} else {
			l.load.Resume()
			did = append(did, "resumed")
		}
	}
	if len(did) > 0 {
		r.obs.eventBy(report.EventSourceGameDay, "load", "", strings.Join(did, ", "), by)
	}
	return l.loadState(), nil
}

// End ends the game day for by: the load's schedule ends (requests in
// flight get the grace), every fault is reverted, and Run writes its
// record and returns.
func (l *Live) End(by string) error {
	r, err := l.enter()
	if err != nil {
		return err
	}
	defer l.busy.Done()
	r.obs.eventBy(report.EventSourceGameDay, "end", "", "the game day was ended", by)
	l.load.End()
	return nil
}

// refused records a refusal in the run's events and returns it as a
// *RefusedError.
func (l *Live) refused(r *run, err error, by string) error {
	var re *RefusedError
	if !errors.As(err, &re) {
		re = &RefusedError{Reason: err.Error()}
	}
	r.obs.eventBy(report.EventSourceGameDay, "refused", "", re.Reason, by)
	return re
}

// gateOpen refuses faults until the steady state was seen to hold.
func (l *Live) gateOpen() error {
	select {
	case <-l.gate:
		return nil
	default:
		return &RefusedError{Reason: fmt.Sprintf("the steady state is being checked over the first %v of load; inject once it holds (see the steady-state status)", l.r.p.spec.Recovery.Window.D())}
	}
}

// blastRadius checks that a fault acting on endpoints may be injected
// now.
func (l *Live) blastRadius(r *run, name string, endpoints []int) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.blastRadiusLocked(r, name, endpoints)
}

func (l *Live) blastRadiusLocked(r *run, name string, endpoints []int) error {
	br := r.p.spec.BlastRadius
	n := 0
	hit := map[int]bool{}
	for _, lf := range l.faults {
		if lf.at >= 0 && !r.faults.ledger.has(lf.index) {
			continue
		}
		n++
		for _, e := range lf.endpoints {
			hit[e] = true
		}
	}
	if m := br.MaxConcurrent(); m > 0 && n >= m {
		return &RefusedError{Reason: fmt.Sprintf("%q would make %d faults at once, more than blast_radius.max_concurrent_faults (%d): revert one first", name, n+1, m)}
	}
	if floor := br.Floor(); floor > 0 && len(endpoints) > 0 {
		for _, e := range endpoints {
			hit[e] = true
		}
		if left := len(r.endpoints) - len(hit); left < floor {
			return &RefusedError{Reason: fmt.Sprintf("%q would leave %d of the %d endpoints out of every fault's reach, fewer than blast_radius.min_available (%d): target fewer endpoints or revert a fault first", name, left, len(r.endpoints), floor)}
		}
	}
	return nil
}

// autoName names a fault injected by hand after its type: "latency-1".
func (l *Live) autoName(r *run, typ string) string {
	base := typ[strings.LastIndexByte(typ, '.')+1:]
	base = strings.ReplaceAll(base, "_", "-")
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		l.manual++
		name := fmt.Sprintf("%s-%d", base, l.manual)
		if !r.faults.hasName(name) {
			return name
		}
	}
}

// hashName is a small hash of a fault's name, for its seed.
func hashName(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// withMinAvailable returns params with select.min_available raised to at
// least floor.
func withMinAvailable(params map[string]any, floor int) map[string]any {
	out := make(map[string]any, len(params)+1)
	for k, v := range params {
		out[k] = v
	}
	sel := map[string]any{}
	if s, ok := out["select"].(map[string]any); ok {
		for k, v := range s {
			sel[k] = v
		}
	}
	cur := 0
	switch v := sel["min_available"].(type) {
	case int:
		cur = v
	case float64:
		cur = int(v)
	}
	sel["min_available"] = max(cur, floor)
	out["select"] = sel
	return out
}

// faultEndpoints returns the endpoints a proxy fault acts on (nil for
// other faults: their params say where they act).
func (r *run) faultEndpoints(pf *plannedFault) []int {
	if pf.ft.Target != spec.TargetProxy {
		return nil
	}
	if t := pf.spec.Target; t != nil && t.Proxy != "" {
		px := r.declared[t.Proxy]
		var out []int
		for i, e := range r.endpoints {
			if e.proxy == px {
				out = append(out, i)
			}
		}
		return out
	}
	return pf.pickEndpoints(len(r.endpoints))
}

// simEnv is what the simulator gives the faults on its replicas (nil
// without a simulator).
func (r *run) simEnv() *spec.SimEnv {
	if r.sim == nil {
		return nil
	}
	return &r.sim.env
}

// Timeline is the experiment's own timeline in a live run: its faults as
// steps in time order, where it is, and whether it plays.
type Timeline struct {
	Steps []TimelineStep `json:"steps"`
	// Next is the index of the next step (len(Steps): none left).
	Next    int  `json:"next"`
	Playing bool `json:"playing"`
	// OffsetS is the position on the file's clock (its faults' at).
	OffsetS float64 `json:"offset_s"`
	// NextInS is, while playing, how long until the next step.
	NextInS float64 `json:"next_in_s,omitempty"`
}

// TimelineStep is one fault of the experiment's timeline.
type TimelineStep struct {
	Name      string         `json:"name"`
	Type      string         `json:"type"`
	AtS       float64        `json:"at_s"`
	DurationS float64        `json:"duration_s"`
	Params    map[string]any `json:"params,omitempty"`
	// State is StepPending, StepInjected, StepFailed or StepSkipped; By
	// who injected or skipped it.
	State string `json:"state"`
	By    string `json:"by,omitempty"`
}

// Timeline returns the experiment's timeline and where it is.
func (l *Live) Timeline() Timeline {
	l.mu.Lock()
	defer l.mu.Unlock()
	tl := Timeline{Steps: []TimelineStep{}}
	if l.r == nil {
		return tl
	}
	steps := l.r.p.byTime()
	for k, pf := range steps {
		tl.Steps = append(tl.Steps, TimelineStep{Name: pf.spec.Name, Type: pf.spec.Type, AtS: pf.spec.At.D().Seconds(), DurationS: pf.spec.Duration.D().Seconds(),
			Params: pf.spec.Params, State: l.tlState.states[k], By: l.tlState.by[k]})
	}
	tl.Next, tl.Playing = l.tlState.next, l.tlState.playing
	off := l.offsetLocked()
	tl.OffsetS = off.Seconds()
	if tl.Playing && tl.Next < len(steps) {
		tl.NextInS = max(steps[tl.Next].spec.At.D()-off, 0).Seconds()
	}
	return tl
}

// offsetLocked is the timeline's position now. l.mu is held.
func (l *Live) offsetLocked() time.Duration {
	s := l.tlState
	if !s.playing {
		return s.offset
	}
	return s.offset + l.r.now() - s.since
}

// wakeTimelineLocked wakes the timeline's player. l.mu is held.
func (l *Live) wakeTimelineLocked() {
	close(l.tlWake)
	l.tlWake = make(chan struct{})
}

// PlayTimeline plays the experiment's timeline from where it is: each
// step is injected when the timeline's position reaches its at, keeping
// the file's spacing.
func (l *Live) PlayTimeline(by string) error {
	return l.timelineAction(by, "timeline_play", func(r *run) error {
		if l.tlState.next >= len(r.p.faults) {
			return errors.New("the timeline has no step left")
		}
		if !l.tlState.playing {
			l.tlState.offset, l.tlState.since, l.tlState.playing = l.offsetLocked(), r.now(), true
		}
		return nil
	})
}

// PauseTimeline pauses the timeline where it is (the faults it injected
// stay, until their duration is over).
func (l *Live) PauseTimeline(by string) error {
	return l.timelineAction(by, "timeline_pause", func(r *run) error {
		l.pauseTimelineLocked(r)
		return nil
	})
}

func (l *Live) pauseTimelineLocked(r *run) {
	if l.tlState.playing {
		l.tlState.offset, l.tlState.since, l.tlState.playing = l.offsetLocked(), r.now(), false
	}
}

// StepTimeline injects the timeline's next step now (its position moves
// to the step's at).
func (l *Live) StepTimeline(by string) error {
	var k int
	err := l.timelineAction(by, "timeline_step", func(r *run) error {
		if l.tlState.next >= len(r.p.faults) {
			return errors.New("the timeline has no step left")
		}
		k = l.tlState.next
		return nil
	})
	if err != nil {
		return err
	}
	return l.runStep(k, by)
}

// SkipTimeline passes over the timeline's next step without injecting
// it.
func (l *Live) SkipTimeline(by string) error {
	return l.timelineAction(by, "timeline_skip", func(r *run) error {
		k := l.tlState.next
		if k >= len(r.p.faults) {
			return errors.New("the timeline has no step left")
		}
		pf := r.p.byTime()[k]
		l.advanceLocked(r, k, StepSkipped, by)
		r.notInjected(pf.index, "skipped in the game day by "+orSomeone(by))
		return nil
	})
}

// timelineAction runs f on the timeline under l.mu for by, records it as
// event kind and wakes the player.
func (l *Live) timelineAction(by, kind string, f func(r *run) error) error {
	r, err := l.enter()
	if err != nil {
		return err
	}
	defer l.busy.Done()
	l.mu.Lock()
	var target string // the step it is about: the next, before f moves on
	if k := l.tlState.next; k < len(r.p.faults) {
		target = r.p.byTime()[k].spec.Name
	}
	err = f(r)
	l.wakeTimelineLocked()
	l.mu.Unlock()
	if err != nil {
		return &RefusedError{Reason: err.Error()}
	}
	r.obs.eventBy(report.EventSourceGameDay, kind, target, "", by)
	return nil
}

// advanceLocked records that step k was dealt with (state, by) and moves
// the timeline past it. l.mu is held.
func (l *Live) advanceLocked(r *run, k int, state, by string) {
	l.tlState.states[k], l.tlState.by[k] = state, by
	if l.tlState.next <= k {
		l.tlState.next = k + 1
	}
	at := r.p.byTime()[k].spec.At.D()
	if l.offsetLocked() < at {
		l.tlState.offset, l.tlState.since = at, r.now()
	}
	if l.tlState.next >= len(r.p.faults) {
		l.tlState.playing = false
	}
}

// runStep injects timeline step k for by.
func (l *Live) runStep(k int, by string) error {
	r, err := l.enter()
	if err != nil {
		return err
	}
	defer l.busy.Done()
	pf := r.p.byTime()[k]
	l.mu.Lock()
	if l.tlState.states[k] != StepPending {
		l.mu.Unlock()
		return nil
	}
	l.advanceLocked(r, k, StepInjected, by)
	l.wakeTimelineLocked()
	l.mu.Unlock()
	fail := func(err error) error {
		l.mu.Lock()
		l.tlState.states[k] = StepFailed
		l.mu.Unlock()
		return err
	}
	if err := l.gateOpen(); err != nil {
		r.notInjected(pf.index, err.Error())
		return fail(l.refused(r, err, by))
	}
	if by != TimelineHolder {
		r.faults.setBy(pf.index, by) // stepped by hand
	}
	lf := &liveFault{index: pf.index, name: pf.spec.Name, typ: pf.spec.Type, target: r.faults.targets[pf.index], by: by,
		duration: pf.spec.Duration.D(), endpoints: r.faultEndpoints(pf), step: k + 1}
	if _, err := l.injectLive(r, lf, r.faults.built[pf.index]); err != nil {
		return fail(err)
	}
	return nil
}

// playTimeline is the timeline's player: while the timeline plays, it
// injects each step when the position reaches its at. It returns when l
// closes.
func (l *Live) playTimeline() {
	for {
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			return
		}
		wake := l.tlWake
		var due <-chan time.Time
		k := l.tlState.next
		steps := l.r.p.byTime()
		var t *time.Timer
		if l.tlState.playing && k < len(steps) {
			t = time.NewTimer(max(steps[k].spec.At.D()-l.offsetLocked(), 0))
			due = t.C
		}
		ctx := l.ctx
		l.mu.Unlock()
		select {
		case <-due:
			_ = l.runStep(k, TimelineHolder)
		case <-wake:
		case <-ctx.Done():
		}
		if t != nil {
			t.Stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// orSomeone names by, or "someone".
func orSomeone(by string) string {
	if by == "" {
		return "someone"
	}
	return by
}

// LiveStatus is a live run's state now: its clock, phase, steady state
// and how it ended.
type LiveStatus struct {
	// NowS is the run clock.
	NowS float64 `json:"now_s"`
	// Phase and Fault are the phase now (baseline, fault, recovery,
	// after) and the fault it is about.
	Phase string `json:"phase"`
	Fault string `json:"fault,omitempty"`
	// PhaseSinceS is when the phase began (for recovery: the revert).
	PhaseSinceS float64 `json:"phase_since_s"`
	// Steady is the steady state over the last recovery window: "ok",
	// "failing", "no_traffic" or "none" (no threshold probes); Probes
	// say what each probe observed.
	Steady string               `json:"steady"`
	Probes []report.ProbeRecord `json:"probes,omitempty"`
	// GateOpen says faults may be injected (the steady state held
	// before them).
	GateOpen bool `json:"gate_open"`
	// Ended says the load ended; Aborted why the run was cut short
	// (empty when it was not).
	Ended   bool   `json:"ended"`
	Aborted string `json:"aborted,omitempty"`
}

// Status returns the live run's state now.
func (l *Live) Status() LiveStatus {
	select {
	case <-l.ready:
	default:
		st := LiveStatus{Phase: PhaseBaseline, Steady: "none"}
		select {
		case <-l.done:
			st.Ended = true
		default:
		}
		return st
	}
	r := l.r
	now := r.now()
	cur := r.tl.current()
	st := LiveStatus{NowS: now.Seconds(), Phase: cur.phase, Fault: cur.fault, PhaseSinceS: cur.at.Seconds()}
	select {
	case <-l.gate:
		st.GateOpen = true
	default:
	}
	l.mu.Lock()
	st.Ended = l.closed || l.ctx.Err() != nil
	l.mu.Unlock()
	if a := r.judge.aborted(); a != nil {
		st.Aborted = a.Reason()
	}
	p := r.p
	if len(p.steady.ths) == 0 {
		st.Steady = "none"
		return st
	}
	w := p.spec.Recovery.Window.D()
	ws := r.rec.Window(now-w, now)
	if ws.Counts.Finished() == 0 {
		st.Steady = "no_traffic"
		return st
	}
	st.Probes = p.steady.checkThresholds(ws, p.judge.within, p.slo)
	st.Steady = "ok"
	if !allOK(st.Probes) {
		st.Steady = "failing"
	}
	return st
}

// Recorder returns the load's recorder (nil before the load started), for
// live figures: read it with its own methods (Window, Snapshot).
func (l *Live) Recorder() *recording.Recorder {
	select {
	case <-l.ready:
		return l.r.rec
	default:
		return nil
	}
}

// Now returns the run clock (0 before the load started).
func (l *Live) Now() time.Duration {
	select {
	case <-l.ready:
		return l.r.now()
	default:
		return 0
	}
}

// ServerSamples returns the server monitor's samples taken after since on
// the run clock (none without the monitor), with the endpoint each was
// scraped from.
func (l *Live) ServerSamples(since time.Duration) []scrape.Sample {
	select {
	case <-l.ready:
	default:
		return nil
	}
	live := l.r.obs.live
	if live == nil {
		return nil
	}
	var out []scrape.Sample
	for _, s := range live.Samples() {
		if s.At > since {
			out = append(out, s)
		}
	}
	return out
}

// GPUSamples returns the GPU memory samples taken after since on the run
// clock: the simulator's virtual GPUs (endpoint "vgpu-N"), or real GPUs
// through NVML, with the series names of report.Document.GPU.
func (l *Live) GPUSamples(since time.Duration) []scrape.Sample {
	select {
	case <-l.ready:
	default:
		return nil
	}
	var out []scrape.Sample
	if s := l.r.obs.gpuSamples; s != nil {
		out = append(out, s.series.after(since)...)
	}
	if n := l.r.obs.nvml; n != nil {
		out = append(out, n.series.after(since)...)
	}
	return out
}

// Events returns the run's events from the i-th on, and the next i.
func (l *Live) Events(i int) ([]report.EventRecord, int) {
	select {
	case <-l.ready:
	default:
		return nil, 0
	}
	return l.r.obs.eventsFrom(i)
}

// Targets describes what faults can act on in a live run: the endpoints
// (with the proxy in front of each), the declared proxies, and the
// simulator's replicas.
type Targets struct {
	Endpoints []TargetEndpoint `json:"endpoints"`
	Proxies   []string         `json:"proxies,omitempty"`
	// Replicas are the simulator's replicas now (none without the
	// simulator), each with whether it serves.
	Replicas []TargetReplica `json:"replicas,omitempty"`
	// Sim says the target is the built-in simulator, whose replica and
	// GPU faults need no target in their params.
	Sim bool `json:"sim"`
	// MaxConcurrentFaults and MinAvailable are the blast radius (0: no
	// limit).
	MaxConcurrentFaults int `json:"max_concurrent_faults,omitempty"`
	MinAvailable        int `json:"min_available,omitempty"`
}

// TargetEndpoint is one endpoint of the target.
type TargetEndpoint struct {
	Index int    `json:"index"`
	URL   string `json:"url"`
	Proxy string `json:"proxy,omitempty"`
}

// TargetReplica is one replica of the simulator.
type TargetReplica struct {
	ID string `json:"id"`
	Up bool   `json:"up"`
}

// Targets returns what faults can act on now.
func (l *Live) Targets(ctx context.Context) Targets {
	out := Targets{Endpoints: []TargetEndpoint{}}
	select {
	case <-l.ready:
	default:
		return out
	}
	r := l.r
	for i, e := range r.endpoints {
		te := TargetEndpoint{Index: i, URL: spec.EndpointTag(e.url)}
		if e.proxy != nil {
			te.Proxy = e.proxy.addr
		}
		out.Endpoints = append(out.Endpoints, te)
	}
	for _, px := range r.p.spec.Proxies {
		out.Proxies = append(out.Proxies, px.Name)
	}
	out.MaxConcurrentFaults = r.p.spec.BlastRadius.MaxConcurrent()
	out.MinAvailable = r.p.spec.BlastRadius.Floor()
	if r.sim != nil {
		out.Sim = true
		ts, err := replica.Preview(ctx, replica.TargetParams{StateFile: r.sim.env.StateFile})
		if err == nil {
			for _, t := range ts {
				out.Replicas = append(out.Replicas, TargetReplica{ID: t.ID, Up: t.Up})
			}
		}
	}
	return out
}
