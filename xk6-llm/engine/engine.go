package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/client"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
	"golang.org/x/sync/errgroup"
)

// Engine defaults.
const (
	// DefaultGrace is how long in-flight requests may run on after the
	// schedule has ended before they are cancelled (k6's gracefulStop).
	// It is the CLI's default; Config.Grace 0 means no grace.
	DefaultGrace = 30 * time.Second
	// DefaultPacerLead is the pacer's Lead when Config.Pacer is the
	// zero value: each arrival reaches an idle worker a millisecond early
	// and the worker sleeps the rest precisely itself (see FireFunc).
	DefaultPacerLead = time.Millisecond
)

// Streams of the run seed: every source of randomness gets its own
// *rand.Rand, rand.New(rand.NewPCG(seed, stream)), so that drawing more from
// one never shifts another.
const (
	// SeedStreamArrivals drives the open-loop schedule.
	SeedStreamArrivals uint64 = 1
	// SeedStreamWorkload draws the sessions of an open-loop schedule, in
	// schedule order.
	SeedStreamWorkload uint64 = 2
	// SeedStreamWorkloadSetup is the rng workload.New takes (shared
	// prefixes, prompt corpus, dataset order); the engine does not use it,
	// its callers do.
	SeedStreamWorkloadSetup uint64 = 3
	// SeedStreamVU is the first stream of the closed loop's virtual users:
	// user i draws its sessions and think times from stream SeedStreamVU+i.
	SeedStreamVU uint64 = 1000
)

// maxPooledITL bounds the ITL slice a pooled Result keeps; longer ones are
// released so that one long answer does not pin its buffer for the run.
const maxPooledITL = 4096

// Config is what an Engine runs: where to send, what to send, on what
// schedule, and where the Results go. New validates it (every problem
// at once) and fills nothing but the documented defaults.
type Config struct {
	// Targets are the base URLs requests go to (e.g.
	// "http://127.0.0.1:8000/v1"). Sessions are spread over them
	// round-robin, in schedule order; the turns of one session stay on its
	// target. Each Result's Tags.Endpoint names its target (password
	// redacted).
	Targets []string
	// Model is the model name every request asks for.
	Model string
	// Arrival is the load shape: an open-loop schedule (rate, ramp, stages,
	// trace) with its in-flight cap, or a closed loop of virtual users. It
	// must have its defaults applied (ArrivalConfig.WithDefaults).
	Arrival workload.ArrivalConfig
	// Workload draws what each arrival or virtual-user iteration sends.
	Workload workload.Workload
	// Client sends the requests; its clock is the run's clock.
	Client *client.Client
	// Recorder receives every Result and the in-flight hooks.
	Recorder *recording.Recorder
	// Seed is the run seed; see the SeedStream constants.
	Seed uint64
	// Grace is how long requests in flight at the schedule's end may run
	// on before they are cancelled; they then end failed, class timeout
	// (the service did not answer within the run, see ErrRunEnded). 0:
	// cut at once. The CLI's default is DefaultGrace.
	Grace time.Duration
	// RampUp starts a closed loop's virtual users evenly over this time
	// (user i at i·RampUp/Concurrency) instead of all at once, so that
	// their requests do not arrive as one synchronized burst. Closed loop
	// only; default 0.
	RampUp time.Duration
	// Pacer tunes the pacer and the workers' precise sleeps. The zero
	// value means PacerOptions{Lead: DefaultPacerLead}.
	Pacer PacerOptions
	// Tagger, when set, fills run-level tags (the experiment runner's
	// phase and fault) from the run clock: at is the actual send time for
	// a sent request and the scheduled time for a dropped one, so a result
	// belongs to the phase it was sent in. It is called from many
	// goroutines at once and must be cheap (an atomic load).
	Tagger func(at time.Duration, tags *recording.Tags)
	// Observe, when set, sees every Result right after the Recorder took
	// it (live exporters, tracing). It runs on the request's goroutine,
	// must be cheap, and must not keep res: the engine reuses it. A
	// Result's first token and chunks went to ObserveEvents (and the
	// Recorder) as they arrived: the Result carries LiveEvents.
	Observe func(res *recording.Result)
	// ObserveEvents, when set, sees each running request's events as they
	// happen (its first token at once, its chunks batched per second),
	// right after the Recorder (recording.StreamEvents): the live exporter
	// observes ttft and itl here, by event time. It runs on the request's
	// goroutine or an event-loop thread, must be cheap, and must not keep
	// ev.
	ObserveEvents func(ev *recording.StreamEvents)
	// Shard is this process's part of a load split over several (see
	// workload.Shard); the zero value runs the whole load. Every other
	// field describes the whole load: an open-loop shard sends the
	// arrivals k with k mod Count == Index of the whole schedule; a closed
	// loop runs the virtual users u with u mod Count == Index; the
	// in-flight cap and a closed loop's request count are split with
	// Shard.Split. A shard numbers its Results Shard.Global(j) for its
	// j-th request, and its multi-turn sessions the same way in a closed
	// loop, so that the numbers of all shards never collide.
	Shard workload.Shard
	// Route, when set, picks at each send where the request goes: the base
	// URL in place of Targets[endpoint], and the endpoint its Result is
	// tagged with (set before the Tagger runs). An error fails the request
	// without sending it, class connect, with the error's text: no endpoint
	// could take it. It is for a target whose endpoints come and go while
	// the load runs (the ready pods behind a Kubernetes Service); Targets
	// still names the target and sets how many endpoints the schedule
	// spreads sessions over, and dropped requests keep its tag. It is
	// called from many goroutines at once and must be cheap.
	Route func(endpoint int) (url, tag string, err error)
	// Scheduled, when set, is told of every request the schedule makes
	// due, when its time comes (before it waits for a slot or is
	// dropped), with its tags: endpoint, request class, and the Tagger's
	// phase at the scheduled time. Live exporters compare it with the
	// Results to show a client that cannot keep up. It runs on the
	// pacer's or a session's goroutine, must be cheap, and must not keep
	// tags.
	Scheduled func(tags *recording.Tags)
	// Live, when set, makes the load's shape change while it runs: an
	// open loop at Arrival.Rate runs at Live's rate instead (Arrival's
	// kind and burstiness, its duration and request count still apply),
	// a closed loop runs Live's number of users; both can be paused and
	// ended early (see LiveLoad). Only the rate and closed-loop shapes
	// can run live, unsharded.
	Live *LiveLoad
}

// RunStats is what Engine.Run reports besides the Results it recorded.
type RunStats struct {
	// Scheduled counts the requests the engine scheduled, counted apart
	// from the Recorder: every one of them was recorded as exactly one
	// Result, so it equals the Summary's scheduled count.
	Scheduled uint64
	// ScheduleEnd is when the schedule ended on the run clock: the
	// duration, the moment the request count was reached or the schedule
	// ran out, or the interruption.
	ScheduleEnd time.Duration
	// End is when the run ended on the run clock: every Result recorded.
	// It is the run's duration for Recorder.Finish.
	End time.Duration
	// Interrupted reports that ctx ended before the run did: everything in
	// flight was cancelled and arrivals not yet sent were dropped.
	Interrupted bool
}

// Engine turns a schedule into requests and Results.
//
// Open loop: a pacer goroutine, locked to its OS thread, wakes Lead before
// each arrival's time and hands the arrival (with its session, drawn in
// schedule order by a generator goroutine so that the pacing thread never
// builds prompts) to an idle worker goroutine, or starts a new one when
// none is idle. The worker sleeps precisely until the arrival's time,
// takes an in-flight slot (--max-in-flight: under "wait" it queues, and
// the wait is the Result's client_queue; under "drop" the arrival becomes a
// dropped Result at once), and sends; Sent is stamped by the client at the
// actual send, so send_lag and TTFT never hide a wait.
//
// Closed loop: Concurrency virtual users, each running sessions back to
// back with its think time between them.
//
// Sessions: turn i+1 is scheduled at turn i's end plus the session's
// think time, with the conversation so far; a turn that would be
// scheduled at or after the duration is not scheduled at all, and a turn
// that did not end ok ends its session.
//
// End: when the schedule ends (duration reached, request count reached,
// schedule exhausted), requests in flight get Grace to finish and are then
// cut with cause ErrRunEnded, which the client records as timeout
// failures; arrivals still waiting for a slot then are dropped. When ctx
// ends (Ctrl-C, a stop condition), everything in flight is cancelled at
// once (OutcomeCancelled: the run was stopped, not the service slow). Either way every scheduled request ends as exactly one Result.
//
// Repeatability: an open-loop run's schedule, sessions (drawn in schedule
// order from the seed's workload stream), endpoints and request ids are the
// same for the same seed. A closed loop's users draw from their own seeded
// streams, but when each sends depends on the server's answers, so only
// each user's sequence of synthetic draws repeats (a dataset's order is
// shared by all users, so which user gets which entry does not).
//
// Shards (Config.Shard): the open-loop shards of one seed send, together,
// exactly the single-process schedule (see Schedule); with sessions of one
// turn, each request keeps its single-process Seq and request id. Later
// turns of sessions are scheduled from their previous turn's end, as in one
// process, so their numbers are the shard's own (unique over the shards).
// A closed loop's shards run the single-process virtual users between them,
// each from its own seed stream and ramp-up offset; what they send when
// still follows the server's answers, a closed loop's --requests is split
// as a count per shard (in one process the first users to claim them get
// them), and a dataset's order is each shard's own.
//
// Every goroutine the engine starts is waited for before Run returns.
// An Engine runs once.
type Engine struct {
	cfg     Config
	sched   *Schedule // nil for a closed loop
	targets []string  // redacted, for Tags.Endpoint
	ran     atomic.Bool
}

// New checks cfg and prepares the schedule (a trace file is read
// now). Every problem is reported at once.
func New(cfg Config) (*Engine, error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(cfg.Targets) == 0 {
		bad("no target: give at least one base URL")
	}
	for i, t := range cfg.Targets {
		if t == "" {
			bad("target %d is empty", i+1)
		}
	}
	if cfg.Model == "" {
		bad("no model")
	}
	if cfg.Workload == nil {
		bad("no workload")
	}
	if cfg.Client == nil {
		bad("no client")
	}
	if cfg.Recorder == nil {
		bad("no recorder")
	}
	if cfg.Grace < 0 {
		bad("grace %v must not be negative", cfg.Grace)
	}
	if cfg.RampUp < 0 {
		bad("ramp-up %v must not be negative", cfg.RampUp)
	}
	if cfg.RampUp > 0 && cfg.Arrival.Mode() != workload.ModeClosed {
		bad("ramp-up applies to a closed loop (--concurrency) only")
	}
	if err := cfg.Arrival.Validate(); err != nil {
		errs = append(errs, err)
	} else if err := cfg.Shard.Validate(); err != nil {
		errs = append(errs, err)
	} else if err := cfg.Shard.CheckSplit(cfg.Arrival); err != nil {
		errs = append(errs, err)
	}
	if cfg.Live != nil {
		if err := checkLive(&cfg); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	if cfg.Pacer == (PacerOptions{}) {
		cfg.Pacer.Lead = DefaultPacerLead
	}
	e := &Engine{cfg: cfg}
	for _, t := range cfg.Targets {
		e.targets = append(e.targets, client.RedactURL(t))
	}
	if cfg.Arrival.OpenLoop() {
		arrival := cfg.Arrival
		if cfg.Live != nil {
			arrival = arrival.UnitRate()
		}
		sched, err := NewSchedule(ScheduleConfig{Arrival: arrival, Workload: cfg.Workload, Seed: cfg.Seed, Targets: len(cfg.Targets), Shard: cfg.Shard})
		if err != nil {
			return nil, fmt.Errorf("engine: %w", err)
		}
		e.sched = sched
	}
	return e, nil
}

// Run runs the load until the schedule has ended and every request has
// ended (or Grace has run out), or until ctx ends, and returns when every
// Result is recorded. The error is non-nil only when the engine could not
// run at all; an interruption is reported in RunStats.
func (e *Engine) Run(ctx context.Context) (RunStats, error) {
	if !e.ran.CompareAndSwap(false, true) {
		return RunStats{}, errors.New("engine: Run called twice; an Engine runs once")
	}
	r := newRun(e)
	// hard is the context of every request: cancelled when ctx ends or
	// when Grace has run out after the schedule's end.
	hard, cancelReqs := context.WithCancelCause(ctx)
	defer cancelReqs(nil)
	r.cancelReqs = cancelReqs
	var g errgroup.Group
	switch live := e.cfg.Live; {
	case live != nil && e.sched != nil:
		live.bind(r.clock.Now)
		r.startLiveOpenLoop(hard, &g)
	case live != nil:
		live.bind(r.clock.Now)
		r.startLiveClosedLoop(hard)
	case e.sched != nil:
		r.startOpenLoop(hard, &g)
	default:
		r.startClosedLoop(hard)
	}
	workDone := make(chan struct{})
	g.Go(func() error {
		r.work.Wait()
		close(workDone)
		return nil
	})
	r.control(ctx, workDone)
	_ = g.Wait() // the engine's goroutines return no errors
	return RunStats{
		Scheduled:   r.scheduled.Load(),
		ScheduleEnd: r.schedEnd,
		End:         r.clock.Now(),
		Interrupted: ctx.Err() != nil,
	}, nil
}

// run is the state of one Engine.Run.
type run struct {
	e      *Engine
	cfg    *Config
	clock  *recording.RunClock
	pacer  *Pacer
	client *client.Client
	rec    *recording.Recorder
	live   client.LiveSink // the Recorder, then Config.ObserveEvents

	// cancelReqs cancels the context of every request (Run's "hard"),
	// with ErrRunEnded when the grace ran out.
	cancelReqs context.CancelCauseFunc

	sem  chan struct{} // in-flight slots (open loop with --max-in-flight); nil: no cap
	drop bool          // --on-saturation drop

	// turnsEnd: later turns scheduled at or after it are not scheduled
	// (the duration; 0: none).
	turnsEnd time.Duration

	schedOnce sync.Once
	schedDone chan struct{} // closed when the schedule ends
	schedEnd  time.Duration // set before schedDone closes

	work      sync.WaitGroup // the pacer, workers and virtual users
	scheduled atomic.Uint64
	seq       atomic.Uint64 // requests numbered so far (Result.Seq is shard.Global of it)
	sessions  atomic.Uint64 // closed loop: multi-turn sessions numbered so far
	endpoint  atomic.Uint64 // closed loop: round-robin position
	claimed   atomic.Int64  // closed loop: sessions started (for requests)
	requests  int64         // closed loop: this shard's part of --requests (0: none)
	results   sync.Pool     // *Result
}

func newRun(e *Engine) *run {
	cfg := &e.cfg
	r := &run{
		e:         e,
		cfg:       cfg,
		clock:     cfg.Client.Clock(),
		client:    cfg.Client,
		rec:       cfg.Recorder,
		schedDone: make(chan struct{}),
		turnsEnd:  cfg.Arrival.Duration,
	}
	r.live = cfg.Recorder
	if cfg.ObserveEvents != nil {
		r.live = liveFanout{rec: cfg.Recorder, observe: cfg.ObserveEvents}
	}
	r.pacer = NewPacer(r.clock, cfg.Pacer)
	if cfg.Arrival.OpenLoop() {
		n := cfg.Arrival.MaxInFlight
		if n <= 0 {
			n = workload.DefaultMaxInFlight // never unbounded
		}
		r.sem = make(chan struct{}, max(1, cfg.Shard.Split(n)))
		r.drop = cfg.Arrival.MaxInFlight > 0 && cfg.Arrival.OnSaturation == workload.SaturationDrop
	}
	r.requests = int64(cfg.Shard.Split(cfg.Arrival.Requests))
	return r
}

// nextSeq numbers a request: the shard's j-th is Shard.Global(j), which
// for the whole load is j.
func (r *run) nextSeq() uint64 { return r.cfg.Shard.Global(r.seq.Add(1) - 1) }

// endSchedule records that the schedule ended at at; the first call wins.
func (r *run) endSchedule(at time.Duration) {
	r.schedOnce.Do(func() {
		r.schedEnd = at
		close(r.schedDone)
	})
}

func (r *run) scheduleEnded() bool {
	select {
	case <-r.schedDone:
		return true
	default:
		return false
	}
}

// control waits for the schedule's end, then for the work to finish within
// Grace (cancelling what is left when it runs out), and returns when every
// worker has returned.
func (r *run) control(ctx context.Context, workDone <-chan struct{}) {
	var durC <-chan time.Time
	if d := r.cfg.Arrival.Duration; d > 0 && r.e.sched == nil {
		t := time.NewTimer(time.Until(r.clock.Time(d)))
		defer t.Stop()
		durC = t.C
	}
	var liveEnd <-chan struct{}
	if r.cfg.Live != nil {
		liveEnd = r.cfg.Live.Ended()
	}
	select {
	case <-r.schedDone:
	case <-liveEnd:
		r.endSchedule(r.clock.Now())
	case <-durC:
		r.endSchedule(r.cfg.Arrival.Duration)
	case <-ctx.Done():
		r.endSchedule(r.clock.Now())
	case <-workDone:
		// Every virtual user stopped before the duration: their next
		// sessions would have started after it (or the request count was
		// reached, which ended the schedule already).
		r.endSchedule(max(r.clock.Now(), r.cfg.Arrival.Duration))
	}
	if ctx.Err() != nil {
		r.cancelReqs(nil)
		<-workDone
		return
	}
	grace := time.NewTimer(time.Until(r.clock.Time(r.schedEnd + r.cfg.Grace)))
	defer grace.Stop()
	select {
	case <-workDone:
	case <-grace.C:
		r.cancelReqs(client.ErrRunEnded)
		<-workDone
		return
	case <-ctx.Done():
		r.cancelReqs(nil)
		<-workDone
		return
	}
	// Everything ended before the schedule did (a duration whose last
	// arrivals came early): the run still lasts the schedule, so that
	// rates are per the duration asked for.
	if r.schedEnd > r.clock.Now() {
		_ = r.pacer.SleepUntil(ctx, r.schedEnd)
	}
}

// feed is the Arrivals the pacer runs: it reads the generator's planned
// arrivals and keeps the last one for fire. Owned by the pacer goroutine.
type feed struct {
	ch   <-chan Planned
	stop <-chan struct{}
	cur  Planned
}

var _ workload.Arrivals = (*feed)(nil)

// Next returns the next planned arrival.
func (f *feed) Next() (workload.Arrival, bool) {
	select {
	case p, ok := <-f.ch:
		if !ok {
			return workload.Arrival{}, false
		}
		f.cur = p
		return p.Arrival, true
	case <-f.stop:
		return workload.Arrival{}, false
	}
}

// job is one fired arrival on its way to a worker.
type job struct {
	seq      uint64
	session  uint64
	endpoint int
	a        workload.Arrival
	s        *workload.Session
}

// startGenerator starts, in g, the generator of the schedule's plans: it
// sends them on plans, buffered by size, until the schedule ends or stop
// is closed, and then closes plans.
func (r *run) startGenerator(g *errgroup.Group, size int) (plans <-chan Planned, stop chan<- struct{}) {
	ch := make(chan Planned, size)
	done := make(chan struct{})
	g.Go(func() error {
		defer close(ch)
		for {
			p, ok := r.e.sched.Next()
			if !ok {
				return nil
			}
			select {
			case ch <- p:
			case <-done:
				return nil
			}
		}
	})
	return ch, done
}

// startOpenLoop starts the generator (in g) and the pacer (in work); hard
// is the requests' context.
func (r *run) startOpenLoop(hard context.Context, g *errgroup.Group) {
	plans, genStop := r.startGenerator(g, 256)
	jobs := make(chan job)
	f := &feed{ch: plans, stop: hard.Done()}
	fire := func(_ uint64, a workload.Arrival, _ time.Duration) bool {
		j := job{seq: r.nextSeq(), session: f.cur.SessionID, endpoint: f.cur.Endpoint, a: a, s: f.cur.Session}
		r.noteScheduled(a.At, j.endpoint, j.s)
		select {
		case jobs <- j: // an idle worker took it
		default:
			r.work.Go(func() { r.worker(hard, j, jobs) })
		}
		return true
	}
	r.work.Go(func() {
		err := r.pacer.Run(hard, f, fire)
		now := r.clock.Now()
		end := now
		if err == nil && hard.Err() == nil && (r.cfg.Arrival.Requests == 0 || r.e.sched.Drawn() < uint64(r.cfg.Arrival.Requests)) {
			// The schedule ran out of time, not of requests: it lasts
			// its whole span.
			end = max(now, scheduleSpan(r.cfg.Arrival))
		}
		r.endSchedule(end)
		close(genStop)
		close(jobs) // the sender closes: idle workers return
	})
}

// scheduleSpan is the time an open-loop schedule covers: the duration, or
// the stages' total; 0 when only the schedule itself knows (a trace).
func scheduleSpan(c workload.ArrivalConfig) time.Duration {
	if c.Duration > 0 {
		return c.Duration
	}
	var total time.Duration
	for _, st := range c.Stages {
		total += st.Duration
	}
	return total
}

func (r *run) nextEndpoint() int {
	return int((r.endpoint.Add(1) - 1) % uint64(len(r.cfg.Targets)))
}

// worker runs its first job, then takes jobs from the pacer until it closes
// the channel.
func (r *run) worker(hard context.Context, j job, jobs <-chan job) {
	for {
		r.runArrival(hard, j)
		var ok bool
		if j, ok = <-jobs; !ok {
			return
		}
	}
}

// runArrival sends an open-loop arrival's session.
func (r *run) runArrival(hard context.Context, j job) {
	req := workload.BuildRequest(r.cfg.Model, j.s, 0, nil)
	res := r.newResult(j.seq, j.session, 0, j.a.At, j.endpoint, j.s)
	// The arrival came Lead early: wait the rest precisely on this thread,
	// so that the wake-up is the last thing between schedule and send.
	if err := r.pacer.SleepUntil(hard, j.a.At); err != nil {
		r.recordDropped(res)
		return
	}
	r.runSession(hard, j.s, j.session, j.endpoint, res, req)
}

// runSession sends turn 0 (already scheduled: res and req are built) and
// the session's later turns, and returns the time the last one ended.
func (r *run) runSession(hard context.Context, s *workload.Session, session uint64, endpoint int, res *recording.Result, req *workload.Request) time.Duration {
	var history []workload.Message
	for i := 0; ; i++ {
		more := i < len(s.Turns)-1
		reply, ok := r.send(hard, res, req, endpoint, more)
		end := res.End
		r.releaseResult(res)
		if !ok || !more {
			return end
		}
		history = workload.AppendTurn(history, s.Turns[i], reply)
		at := end + s.ThinkTime
		if r.turnsEnd > 0 && at >= r.turnsEnd {
			return end
		}
		// A turn is scheduled once its time comes; one whose time does
		// not come before the run is stopped never was.
		if err := r.pacer.SleepUntil(hard, at); err != nil {
			return end
		}
		seq := r.nextSeq()
		r.noteScheduled(at, endpoint, s)
		req = workload.BuildRequest(r.cfg.Model, s, i+1, history)
		res = r.newResult(seq, session, i+1, at, endpoint, s)
	}
}

// send takes an in-flight slot for res, sends req and records the Result.
// It returns the reply's content (when keep) and whether the request ended
// ok. res.End is set on return.
func (r *run) send(hard context.Context, res *recording.Result, req *workload.Request, endpoint int, keep bool) (reply string, ok bool) {
	if r.sem != nil {
		select {
		case r.sem <- struct{}{}:
			res.Dequeued = res.Scheduled
		default:
			if r.drop {
				r.recordDropped(res)
				return "", false
			}
			select {
			case r.sem <- struct{}{}:
				res.Dequeued = r.clock.Now()
			case <-hard.Done():
				r.recordDropped(res)
				return "", false
			}
		}
	} else {
		res.Dequeued = res.Scheduled
	}
	if hard.Err() != nil {
		// Stopped between its time and its send: it never left.
		if r.sem != nil {
			<-r.sem
		}
		r.recordDropped(res)
		return "", false
	}
	now := r.clock.Now()
	url := r.cfg.Targets[endpoint]
	var unroutable error
	if r.cfg.Route != nil {
		var tag string
		if url, tag, unroutable = r.cfg.Route(endpoint); unroutable == nil {
			res.Tags.Endpoint = tag
		}
	}
	if r.cfg.Tagger != nil {
		r.cfg.Tagger(now, &res.Tags)
	}
	r.rec.RequestStarted(now)
	switch {
	case unroutable != nil:
		r.client.Unreachable(res, req, unroutable)
	default:
		reply = r.client.DoCall(hard, url, req, res, client.Call{Live: r.live, Content: keep})
	}
	r.rec.RequestEnded(res.End)
	if r.sem != nil {
		<-r.sem
	}
	r.record(res)
	return reply, res.Outcome == recording.OutcomeOK
}

// recordDropped records res as dropped: scheduled, never sent.
func (r *run) recordDropped(res *recording.Result) {
	res.Outcome = recording.OutcomeDropped
	res.Dequeued, res.Sent = 0, 0
	res.End = max(r.clock.Now(), res.Scheduled)
	if r.cfg.Tagger != nil {
		r.cfg.Tagger(res.Scheduled, &res.Tags)
	}
	r.record(res)
}

// record hands res to the Recorder, then to the Observe hook.
func (r *run) record(res *recording.Result) {
	r.rec.Record(res)
	if r.cfg.Observe != nil {
		r.cfg.Observe(res)
	}
}

// newResult returns a clean Result from the pool with the engine's fields set.
func (r *run) newResult(seq, session uint64, turn int, at time.Duration, endpoint int, s *workload.Session) *recording.Result {
	res, _ := r.results.Get().(*recording.Result)
	if res == nil {
		res = &recording.Result{}
	}
	res.Seq, res.Session, res.Turn = seq, session, turn
	res.Scheduled = at
	res.Tags = recording.Tags{Class: s.Class, Endpoint: r.e.targets[endpoint]}
	return res
}

// noteScheduled counts a request the schedule made due at at and tells
// Config.Scheduled.
func (r *run) noteScheduled(at time.Duration, endpoint int, s *workload.Session) {
	r.scheduled.Add(1)
	if r.cfg.Scheduled == nil {
		return
	}
	tags := recording.Tags{Class: s.Class, Endpoint: r.e.targets[endpoint]}
	if r.cfg.Tagger != nil {
		r.cfg.Tagger(at, &tags)
	}
	r.cfg.Scheduled(&tags)
}

// releaseResult returns res to the pool once the Recorder is done with it.
func (r *run) releaseResult(res *recording.Result) {
	itl := res.ITLMicros[:0]
	if cap(itl) > maxPooledITL {
		itl = nil
	}
	*res = recording.Result{ITLMicros: itl}
	r.results.Put(res)
}

// startClosedLoop starts the virtual users (in work); hard is the
// requests' context.
func (r *run) startClosedLoop(hard context.Context) {
	c := r.cfg.Arrival
	for i := range c.Concurrency {
		if !r.cfg.Shard.Keeps(uint64(i)) {
			continue // another shard's user
		}
		offset := time.Duration(0)
		if r.cfg.RampUp > 0 {
			offset = r.cfg.RampUp * time.Duration(i) / time.Duration(c.Concurrency)
		}
		rng := rand.New(rand.NewPCG(r.cfg.Seed, SeedStreamVU+uint64(i)))
		r.work.Go(func() { r.virtualUser(hard, offset, rng) })
	}
}

// virtualUser runs sessions back to back, ThinkTime apart, until the
// schedule ends.
func (r *run) virtualUser(hard context.Context, at time.Duration, rng *rand.Rand) {
	for {
		next, ok := r.userSession(hard, at, rng)
		if !ok {
			return
		}
		at = next
	}
}

// userSession runs one session of a virtual user, scheduled at at, and
// returns when the user's next may start (its end plus a think time); ok
// is false when the schedule has ended (or ends with this session's
// claim of the last request, which it still runs).
func (r *run) userSession(hard context.Context, at time.Duration, rng *rand.Rand) (next time.Duration, ok bool) {
	c := &r.cfg.Arrival
	if (c.Duration > 0 && at >= c.Duration) || r.scheduleEnded() {
		return 0, false
	}
	if r.requests > 0 {
		n := r.claimed.Add(1)
		if n > r.requests {
			return 0, false
		}
		if n == r.requests {
			r.endSchedule(r.clock.Now())
		}
	}
	s := r.cfg.Workload.Next(rng, workload.Arrival{At: at})
	endpoint := r.nextEndpoint()
	req := workload.BuildRequest(r.cfg.Model, s, 0, nil)
	if err := r.pacer.SleepUntil(hard, at); err != nil {
		return 0, false
	}
	var session uint64
	if len(s.Turns) > 1 {
		session = r.cfg.Shard.Global(r.sessions.Add(1)-1) + 1
	}
	seq := r.nextSeq()
	r.noteScheduled(at, endpoint, s)
	res := r.newResult(seq, session, 0, at, endpoint, s)
	end := r.runSession(hard, s, session, endpoint, res, req)
	return end + c.ThinkTime.Sample(rng), true
}

// liveFanout tells the Recorder, then Config.ObserveEvents, of a running
// request's events.
type liveFanout struct {
	rec     *recording.Recorder
	observe func(ev *recording.StreamEvents)
}

var _ client.LiveSink = liveFanout{}

// StreamEvents implements client.LiveSink.
func (f liveFanout) StreamEvents(ev *recording.StreamEvents) {
	f.rec.StreamEvents(ev)
	f.observe(ev)
}
