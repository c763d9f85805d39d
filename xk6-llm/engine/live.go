package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/workload"
	"golang.org/x/sync/errgroup"
)

// MaxLiveUsers bounds the virtual users a live closed loop may be given.
const MaxLiveUsers = 10000

// LiveLoad is a load whose shape is changed while it runs (a game day's
// load controls): an open loop's rate, a closed loop's number of virtual
// users, a pause that sends nothing until it is resumed, and an end that
// ends the schedule as its duration would (requests in flight get the
// grace). Give it to Config.Live; its methods are safe from any goroutine,
// before and while the engine runs.
//
// Open loop: the engine draws a unit-rate arrival process of the config's
// kind (poisson, gamma, constant) in operational time u and sends each
// arrival when Λ(t), the integral of the live rate over the run clock,
// reaches its u (the time-rescaling theorem): a change of rate applies to
// the very next arrival, however far off it was, and a pause freezes Λ so
// the process resumes where it stopped. Closed loop: the virtual users of
// index below Users run their sessions; the others wait (a user that is
// mid-session finishes it first), and raising Users starts new ones.
type LiveLoad struct {
	mu     sync.Mutex
	rate   float64 // requests per second (open loop)
	users  int     // virtual users (closed loop)
	paused bool
	since  time.Duration // run-clock time of the last change of rate
	lam    float64       // operational time reached at since
	// past holds the spans of operational time before since that the
	// pacer has not passed yet, at the rates they ran at: an arrival due
	// in one (the pacer ran late) keeps the time it was due, not one
	// drawn back from the current rate.
	past    []liveSpan
	now     func() time.Duration
	changed chan struct{} // closed and replaced at every change
	ended   chan struct{}
	endOnce sync.Once
}

// liveSpan is a stretch of a live open loop at one rate: operational
// time from lam on was reached at rate from the run-clock time since.
type liveSpan struct {
	since time.Duration
	lam   float64
	rate  float64
}

// LiveState is a LiveLoad's settings at one moment.
type LiveState struct {
	// Rate is the open loop's rate in requests per second.
	Rate float64 `json:"rate,omitempty"`
	// Users is the closed loop's number of virtual users.
	Users int `json:"users,omitempty"`
	// Paused says nothing is sent until the load is resumed.
	Paused bool `json:"paused"`
	// Ended says the schedule was ended.
	Ended bool `json:"ended"`
}

// NewLiveLoad returns a live load at rate requests per second (open loop)
// or with users virtual users (closed loop): set the one the load's shape
// uses, as its ArrivalConfig does.
func NewLiveLoad(rate float64, users int) *LiveLoad {
	return &LiveLoad{rate: rate, users: users, changed: make(chan struct{}), ended: make(chan struct{})}
}

// State returns the settings now.
func (l *LiveLoad) State() LiveState {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := LiveState{Rate: l.rate, Users: l.users, Paused: l.paused}
	select {
	case <-l.ended:
		s.Ended = true
	default:
	}
	return s
}

// SetRate changes an open loop's rate (requests per second, > 0).
func (l *LiveLoad) SetRate(rate float64) error {
	if !(rate > 0) || math.IsInf(rate, 0) {
		return fmt.Errorf("rate %v: want a finite number of requests per second above 0", rate)
	}
	l.change(func() { l.rate = rate })
	return nil
}

// SetUsers changes a closed loop's number of virtual users (1 to
// MaxLiveUsers).
func (l *LiveLoad) SetUsers(n int) error {
	if n < 1 || n > MaxLiveUsers {
		return fmt.Errorf("users %d: want 1 to %d", n, MaxLiveUsers)
	}
	l.change(func() { l.users = n })
	return nil
}

// Pause stops sending new requests (those in flight go on) until Resume.
func (l *LiveLoad) Pause() { l.change(func() { l.paused = true }) }

// Resume sends again after Pause.
func (l *LiveLoad) Resume() { l.change(func() { l.paused = false }) }

// End ends the schedule now, as its duration would: nothing more is sent
// and the requests in flight get the engine's grace. Later calls do
// nothing.
func (l *LiveLoad) End() { l.endOnce.Do(func() { close(l.ended) }) }

// Ended is closed once End was called.
func (l *LiveLoad) Ended() <-chan struct{} { return l.ended }

// change applies set at the current run-clock time: the operational time
// reached so far at the old rate is kept, so that the arrival process goes
// on from where it is.
func (l *LiveLoad) change(set func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clock()
	if r := l.rateLocked(); r > 0 && now > l.since {
		l.past = append(l.past, liveSpan{l.since, l.lam, r})
		l.lam += r * (now - l.since).Seconds()
	}
	l.since = now
	set()
	close(l.changed)
	l.changed = make(chan struct{})
}

// bind sets the run clock the load's changes are stamped with; the engine
// calls it when it starts, at run-clock 0.
func (l *LiveLoad) bind(now func() time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.now = now
}

func (l *LiveLoad) clock() time.Duration {
	if l.now == nil {
		return 0
	}
	return l.now()
}

// rateLocked is the rate arrivals come at now: 0 while paused. l.mu is
// held.
func (l *LiveLoad) rateLocked() float64 {
	if l.paused {
		return 0
	}
	return l.rate
}

// at returns the run-clock time at which the arrival of operational time u
// is due (ok false while paused and u not reached yet), and the channel
// closed at the next change, after which it must be asked again. An
// arrival whose u was reached before the last change was due at the rate
// of then, even if the pacer gets to it only now (late, or after a pause
// that came meanwhile). The pacer asks in increasing u: spans it has
// passed are dropped.
func (l *LiveLoad) at(u float64) (at time.Duration, ok bool, changed <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.past) > 0 {
		end := l.lam
		if len(l.past) > 1 {
			end = l.past[1].lam
		}
		if u >= end {
			l.past = l.past[1:]
			continue
		}
		if p := l.past[0]; u >= p.lam {
			return p.since + time.Duration(math.Round((u-p.lam)/p.rate*1e9)), true, l.changed
		}
		break
	}
	r := l.rateLocked()
	if r <= 0 {
		return 0, false, l.changed
	}
	return l.since + time.Duration(math.Round((u-l.lam)/r*1e9)), true, l.changed
}

// userActive reports whether virtual user i may start a session now, and
// returns the channel closed at the next change.
func (l *LiveLoad) userActive(i int) (bool, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.paused && i < l.users, l.changed
}

// checkLive reports what keeps cfg's load from running live.
func checkLive(cfg *Config) error {
	switch m := cfg.Arrival.Mode(); m {
	case workload.ModeRate:
		if math.IsInf(cfg.Arrival.Rate, 1) {
			return errors.New("a live load needs a finite rate")
		}
	case workload.ModeClosed:
		if cfg.RampUp > 0 {
			return errors.New("a live closed loop takes no ramp-up")
		}
	default:
		return fmt.Errorf("a live load runs at a rate or with a number of users; the %s shape cannot change live", m)
	}
	if cfg.Shard.Count > 1 {
		return errors.New("a live load runs in one process, not as a shard")
	}
	return nil
}

// startLiveOpenLoop starts a live open loop: the generator (in g) draws
// the operational-time schedule, and the live pacer (in work) sends each
// arrival when the live rate brings it due; hard is the requests' context.
func (r *run) startLiveOpenLoop(hard context.Context, g *errgroup.Group) {
	plans, genStop := r.startGenerator(g, 64)
	jobs := make(chan job)
	r.work.Go(func() {
		r.endSchedule(r.livePace(hard, plans, jobs))
		close(genStop)
		close(jobs) // the sender closes: idle workers return
	})
}

// livePace hands each planned arrival to a worker Lead before the live
// rate makes it due, until the schedule ends (its duration, its request
// count, LiveLoad.End, or hard), and returns when it ended.
func (r *run) livePace(hard context.Context, plans <-chan Planned, jobs chan job) time.Duration {
	live := r.cfg.Live
	var durC <-chan time.Time
	if d := r.cfg.Arrival.Duration; d > 0 {
		t := time.NewTimer(time.Until(r.clock.Time(d)))
		defer t.Stop()
		durC = t.C
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	lead := r.cfg.Pacer.Lead
	for {
		var p Planned
		select {
		case pl, ok := <-plans:
			if !ok {
				return r.clock.Now()
			}
			p = pl
		case <-hard.Done():
			return r.clock.Now()
		case <-live.Ended():
			return r.clock.Now()
		case <-durC:
			return r.cfg.Arrival.Duration
		}
		u := p.Arrival.At.Seconds()
		for fired := false; !fired; {
			at, ok, changed := live.at(u)
			var fire <-chan time.Time
			if ok {
				timer.Reset(time.Until(r.clock.Time(at - lead)))
				fire = timer.C
			}
			select {
			case <-fire:
				// A change that came while the timer fired wins: select
				// picks at random among ready cases, and an arrival timed
				// by the old rate must not be sent after a pause.
				select {
				case <-changed:
					continue
				default:
				}
				p.Arrival.At = max(at, 0)
				r.fireLive(hard, p, jobs)
				fired = true
			case <-changed:
				timer.Stop()
			case <-hard.Done():
				return r.clock.Now()
			case <-live.Ended():
				return r.clock.Now()
			case <-durC:
				return r.cfg.Arrival.Duration
			}
		}
	}
}

// fireLive hands a due arrival to an idle worker, or starts one.
func (r *run) fireLive(hard context.Context, p Planned, jobs chan job) {
	j := job{seq: r.nextSeq(), session: p.SessionID, endpoint: p.Endpoint, a: p.Arrival, s: p.Session}
	r.noteScheduled(p.Arrival.At, j.endpoint, j.s)
	select {
	case jobs <- j:
	default:
		r.work.Go(func() { r.worker(hard, j, jobs) })
	}
}

// startLiveClosedLoop starts a live closed loop's users and, in work, the
// keeper that starts more when LiveLoad.SetUsers raises their number.
func (r *run) startLiveClosedLoop(hard context.Context) {
	live := r.cfg.Live
	started := 0
	startUpTo := func(n int) {
		for ; started < n; started++ {
			rng := rand.New(rand.NewPCG(r.cfg.Seed, SeedStreamVU+uint64(started)))
			i := started
			r.work.Go(func() { r.virtualUserLive(hard, i, rng) })
		}
	}
	st := live.State()
	startUpTo(st.Users)
	r.work.Go(func() {
		for {
			_, changed := live.userActive(0)
			select {
			case <-changed:
				startUpTo(live.State().Users)
			case <-r.schedDone:
				return
			case <-hard.Done():
				return
			case <-live.Ended():
				return
			}
		}
	})
}

// virtualUserLive is virtual user i of a live closed loop: it runs
// sessions back to back, think time apart, while it is active, and waits
// while it is not, until the schedule ends.
func (r *run) virtualUserLive(hard context.Context, i int, rng *rand.Rand) {
	live := r.cfg.Live
	at := r.clock.Now()
	for {
		active, changed := live.userActive(i)
		if !active {
			select {
			case <-changed:
				at = r.clock.Now()
				continue
			case <-r.schedDone:
				return
			case <-hard.Done():
				return
			}
		}
		end, ok := r.userSession(hard, at, rng)
		if !ok {
			return
		}
		at = end
	}
}
