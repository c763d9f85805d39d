package experiments

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/llmchaos/llmchaos/internal/field"
	"github.com/llmchaos/llmchaos/xk6-llm/engine"
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

// ControlOptions configure a live run (Options.Live).
type ControlOptions struct {
	// MaxDuration is the longest the load runs when nobody ends it (0:
	// DefaultLiveMaxDuration).
	MaxDuration time.Duration
}

// Control is the hand control of a live run: a game day, in which people
// inject and revert faults by hand, change the load, play the
// experiment's own timeline step by step, write notes, and end the run
// when they are done. Make one with NewControl, give it to Run in
// Options.Live, and act on it
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
type Control struct {
	opts  ControlOptions
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

// NewControl returns the control of a live run, not started.
func NewControl(opts ControlOptions) *Control {
	if opts.MaxDuration <= 0 {
		opts.MaxDuration = DefaultLiveMaxDuration
	}
	return &Control{opts: opts, ready: make(chan struct{}), done: make(chan struct{}), faults: map[string]*liveFault{}, tlWake: make(chan struct{})}
}

// Ready is closed once the load has started and actions are taken.
func (l *Control) Ready() <-chan struct{} { return l.ready }

// Done is closed once Run has returned.
func (l *Control) Done() <-chan struct{} { return l.done }

// makeLive turns plan p into a live one: proxies in front of every
// endpoint, so that proxy faults can be injected by hand, and a load shape
// that can change while it runs, lasting at most the live maximum.
func (p *plan) makeLive(l *Control) error {
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
		rate = max(a.Ramp.From, a.Ramp.To)
	case workload.ModeStages:
		rate = a.StartRate
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
	switch a.Mode() {
	case workload.ModeRate, workload.ModeClosed:
		// The experiment's shape, checked when it was resolved, as long
		// as the game day lasts.
		a = a.Lasting(l.opts.MaxDuration)
	default:
		// A ramp or stages become a rate, their highest, changed live:
		// the resolved config's defaults and checks hold for it, so only
		// the new rate and duration are checked (AtRate).
		var ps field.Problems
		a, ps = a.AtRate(rate, l.opts.MaxDuration)
		if err := ps.Err(); err != nil {
			return fmt.Errorf("game day load: %w", err)
		}
	}
	p.ac = a
	l.load = engine.NewLiveLoad(rate, users)
	l.sw = workload.NewSwitch(p.wc.Name)
	return nil
}

// start binds l to run r once its load started: faults act on ctx, and
// none is injected before gate opens (the steady state was seen to hold
// before the faults).
func (l *Control) start(ctx context.Context, r *run, gate <-chan struct{}) {
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
func (l *Control) close() {
	l.mu.Lock()
	l.closed = true
	l.wakeTimelineLocked()
	l.mu.Unlock()
	l.busy.Wait()
}

// finish marks l done; Run calls it as it returns.
func (l *Control) finish() { close(l.done) }

// goroutine runs f on l's busy group unless l is closed.
func (l *Control) goroutine(f func()) bool {
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
func (l *Control) enter() (*run, error) {
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

// hashName is a small hash of a fault's name, for its seed.
func hashName(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}
