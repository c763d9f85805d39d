package load

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/llmchaos/llmchaos/pipeline"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/telemetry/observe"
	"github.com/llmchaos/llmchaos/xk6-llm/client"
	"github.com/llmchaos/llmchaos/xk6-llm/engine"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// UncappedPool sizes the connection pool of an open loop without a cap on
// requests in flight: large enough never to hold a request back (a wait
// for a connection would show as send lag).
const UncappedPool = 1 << 16

// observeCloseTimeout bounds the closing of observers that Run started
// but could not hand over (the engine could not be built).
const observeCloseTimeout = 20 * time.Second

// StartLateTolerance is how far past Config.StartAt a load may still
// start: its clock's zero stays the start instant, so that shards started
// at one instant stay on one schedule, and the arrivals already due are
// sent at once (their send lag shows it). Later than that, Run refuses.
const StartLateTolerance = time.Second

// Config is one load, checked by its caller.
type Config struct {
	// Targets are the base URLs the engine sends to; Model the model asked for.
	Targets []string
	Model   string
	// Arrival and Workload are the load shape and what each request holds,
	// with defaults applied.
	Arrival  workload.ArrivalConfig
	Workload workload.Config
	// Seed seeds the workload's setup, the schedule and request ids.
	Seed uint64
	// Shard is this process's part of a load split over several (see
	// workload.Shard and engine.Config.Shard); zero: the whole load.
	Shard workload.Shard
	// StartAt, when set, is the wall-clock instant the load's clock starts
	// at (its zero: the first arrivals of the schedule): Run builds
	// everything, then waits for it (ctx ends the wait), so that shards on
	// several machines started with one instant send on one schedule.
	// Run refuses an instant more than StartLateTolerance past once the
	// load is built. Zero: start as soon as the load is built.
	StartAt time.Time
	// Grace is what requests in flight get to finish once the schedule
	// ended; RampUp spreads a closed loop's users' start.
	Grace  time.Duration
	RampUp time.Duration
	// Client holds the client's options; Run sets its Clock, Concurrency
	// (the pool, sized for the load shape) and Seed.
	Client client.Options
	// Recorder holds the recorder's options (goodput SLOs, the per-request
	// writer).
	Recorder recording.Options
	// Observe, when not nil, starts the live observers; Run sets their
	// Clock, RunStart and InFlight. The caller owns the observers Run
	// hands back in Load and closes them.
	Observe *observe.Options
	// Tagger, when set, is the engine's Tagger.
	Tagger func(at time.Duration, tags *recording.Tags)
	// Route, when set, is the engine's Route: where each request goes, for
	// a target whose endpoints change while the load runs. The pre-flight
	// check still asks Targets.
	Route func(endpoint int) (url, tag string, err error)
	// Switch, when set, is where the load draws its sessions from: Run
	// sets the workload Workload describes in it first, and it may be
	// given another while the load runs (a game day's preset switch).
	Switch *workload.Switch
	// Live, when set, is the engine's live load (engine.Config.Live): the
	// load's rate or users change while it runs. Its connection pool is
	// then uncapped, for the users it may be given.
	Live *engine.LiveLoad
	// NoPreflight skips the pre-flight check (see Preflight) that Run
	// makes before anything else; Warn, when set, receives its warnings.
	NoPreflight bool
	Warn        func(string)
	// Alongside, when set, is called once everything is built, just before
	// the first request is scheduled: it starts what runs with the load
	// (live checks, progress lines, a fault timeline; see
	// pipeline.Alongside). Run stops it as soon as the engine returned,
	// with the engine's outcome.
	Alongside pipeline.Alongside
}

// Stage names the step of Run that failed, in a *StageError.
type Stage string

// The stages of Run that can fail before the load starts.
const (
	StageWorkload  Stage = "workload"
	StagePreflight Stage = "preflight"
	StageClient    Stage = "client"
	StageObservers Stage = "observability"
	StageEngine    Stage = "engine"
	// StageStart is the wait for Config.StartAt: the instant had passed,
	// or ctx ended first (Err is then the context's error).
	StageStart Stage = "start"
)

// StageError is an error of Run before the load started: a configuration
// the workload, the client, the observers or the engine refused, or a
// target that failed the pre-flight check (Err is then a
// *PreflightError, or the context's error), or a start instant that had
// passed or was not reached (StageStart).
type StageError struct {
	Stage Stage
	Err   error
}

func (e *StageError) Error() string { return string(e.Stage) + ": " + e.Err.Error() }
func (e *StageError) Unwrap() error { return e.Err }

// Load is a load built by Run: what its companions read while it runs, and
// what a report is built from once it ended.
type Load struct {
	// Clock is the load's clock; Recorder records every result.
	Clock    *recording.RunClock
	Recorder *recording.Recorder
	// Observers are the live observers (nil when Config.Observe was nil);
	// the caller closes them.
	Observers *observe.Observers
	// Stats is the engine's account of the load, once Run returned.
	Stats engine.RunStats

	stop context.CancelCauseFunc
}

// Stop ends the load early with cause: nothing more is scheduled and the
// requests in flight are cancelled. Safe from any goroutine.
func (l *Load) Stop(cause error) { l.stop(cause) }

// PoolSize is the connection pool a load shape needs: its users for a
// closed loop, its cap on requests in flight for a capped open loop, else
// UncappedPool.
func PoolSize(a workload.ArrivalConfig) int {
	switch {
	case a.Mode() == workload.ModeClosed:
		return a.Concurrency
	case a.MaxInFlight > 0:
		return a.MaxInFlight
	}
	return UncappedPool
}

// Run builds the load cfg describes and runs it until its schedule and
// grace are over, ctx ends or Load.Stop is called. An error before the
// load started is a *StageError (and then no observer is left running);
// the engine's own error comes with the Load, whose Stats say how far it
// got.
func Run(ctx context.Context, cfg Config) (*Load, error) {
	var wl workload.Workload
	first, err := workload.New(cfg.Workload, rand.New(rand.NewPCG(cfg.Seed, engine.SeedStreamWorkloadSetup)))
	if err != nil {
		return nil, &StageError{StageWorkload, err}
	}
	wl = first
	if cfg.Switch != nil {
		cfg.Switch.Set(first, cfg.Workload.Name)
		wl = cfg.Switch
	}
	if !cfg.NoPreflight {
		warns, err := Preflight(ctx, PreflightConfig{
			Targets: cfg.Targets, Model: cfg.Model, Chat: cfg.Workload.API != workload.APICompletions, Client: cfg.Client,
		})
		for _, w := range warns {
			if cfg.Warn != nil {
				cfg.Warn(w)
			}
		}
		if err != nil {
			return nil, &StageError{StagePreflight, err}
		}
	}
	clock := recording.NewRunClock()
	if !cfg.StartAt.IsZero() {
		// time.Now carries the monotonic reading the clock runs on.
		clock = recording.NewRunClockAt(time.Now().Add(time.Until(cfg.StartAt)))
	}
	copts := cfg.Client
	copts.Clock, copts.Concurrency, copts.Seed = clock, PoolSize(cfg.Arrival), cfg.Seed
	if cfg.Live != nil {
		copts.Concurrency = max(copts.Concurrency, UncappedPool)
	}
	client, err := client.New(copts)
	if err != nil {
		return nil, &StageError{StageClient, err}
	}
	defer client.Close()
	ropts := cfg.Recorder
	ropts.IgnoreEOS = ropts.IgnoreEOS || cfg.Workload.IgnoreEOS
	rec := recording.NewRecorder(ropts)
	l := &Load{Clock: clock, Recorder: rec}

	var (
		observeResult func(*recording.Result)
		observeEvents func(*recording.StreamEvents)
		scheduled     func(*recording.Tags)
	)
	if cfg.Observe != nil {
		opts := *cfg.Observe
		opts.Clock, opts.RunStart = clock.Now, clock.Start()
		opts.InFlight = func() int64 { return rec.Snapshot(clock.Now()).InFlight }
		obs, err := observe.Start(ctx, opts)
		if err != nil {
			return nil, &StageError{StageObservers, err}
		}
		l.Observers, observeResult, observeEvents, scheduled = obs, obs.Observe, obs.ObserveEvents, obs.Scheduled
	}
	eng, err := engine.New(engine.Config{
		Targets: cfg.Targets, Model: cfg.Model, Arrival: cfg.Arrival, Workload: wl,
		Client: client, Recorder: rec, Seed: cfg.Seed, Grace: cfg.Grace, RampUp: cfg.RampUp, Shard: cfg.Shard,
		Tagger: cfg.Tagger, Route: cfg.Route, Observe: observeResult, ObserveEvents: observeEvents, Scheduled: scheduled, Live: cfg.Live,
	})
	if err != nil {
		l.closeObservers(ctx)
		return nil, &StageError{StageEngine, err}
	}
	if !cfg.StartAt.IsZero() {
		if err := waitStart(ctx, clock); err != nil {
			l.closeObservers(ctx)
			return nil, &StageError{StageStart, err}
		}
	}

	runCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	l.stop = stop
	var after func(engine.RunStats, error)
	if cfg.Alongside != nil {
		after = cfg.Alongside(&pipeline.Run{Clock: l.Clock, Recorder: l.Recorder, Observers: l.Observers, Stop: l.Stop})
	}
	if after == nil {
		after = func(engine.RunStats, error) {}
	}
	// after runs on every way out, a panic of the engine included: it stops
	// and waits for what runs alongside (an experiment's fault timeline),
	// so nothing is still injecting when the caller reverts.
	afterDone := false
	defer func() {
		if !afterDone {
			after(engine.RunStats{}, errors.New("the load ended abnormally"))
		}
	}()
	stats, err := eng.Run(runCtx)
	afterDone = true
	after(stats, err)
	l.Stats = stats
	return l, err
}

// closeObservers closes the observers Run started when it cannot hand
// them over: the error that stopped Run is the one to report.
func (l *Load) closeObservers(ctx context.Context) {
	if l.Observers == nil {
		return
	}
	c, cancel := context.WithTimeout(context.WithoutCancel(ctx), observeCloseTimeout)
	_ = l.Observers.Close(c)
	cancel()
}

// waitStart waits until clock's zero, or until ctx ends. A zero more than
// StartLateTolerance past is an error.
func waitStart(ctx context.Context, clock *recording.RunClock) error {
	wait := time.Until(clock.Start())
	if wait < -StartLateTolerance {
		return fmt.Errorf("the start instant %s passed %v ago, while the load was being prepared (pre-flight check, dataset): give a later one", clock.Start().UTC().Format(time.RFC3339Nano), (-wait).Round(time.Millisecond))
	}
	if wait <= 0 {
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Document builds the load's report: the recorded run up to its end,
// with meta, and the server series the observers scraped. The caller adds
// what it knows beyond the load (an experiment's record), evaluates the
// thresholds and writes it.
func (l *Load) Document(meta report.Meta) (*report.Document, error) {
	doc, err := report.Build(meta, l.Recorder.Finish(l.Stats.End))
	if err != nil {
		return nil, err
	}
	if l.Observers != nil {
		doc.Server = l.Observers.ServerSeries(l.Stats.End)
	}
	return doc, nil
}
