package engine

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"

	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// Planned is one arrival of an open-loop schedule with what the engine
// sends for it.
type Planned struct {
	// Index is the arrival's position in the whole schedule (every shard
	// together), from 0. With sessions of one turn it is the Result.Seq and
	// request id the arrival gets, on any shard.
	Index uint64
	// SessionID is the multi-turn session id the arrival's Results carry,
	// as in a single-process run (0 for a session of one turn).
	SessionID uint64
	// Endpoint is the index in Config.Targets the session is sent to:
	// round-robin over the whole schedule, Index mod len(Targets).
	Endpoint int
	// Arrival is the send time and the trace's lengths.
	Arrival workload.Arrival
	// Session is what the workload drew for the arrival.
	Session *workload.Session
}

// ScheduleConfig is what an open-loop schedule is made of: the parts of
// Config that decide it.
type ScheduleConfig struct {
	// Arrival is the load shape; it must be open loop and have its
	// defaults applied.
	Arrival workload.ArrivalConfig
	// Workload draws the sessions.
	Workload workload.Workload
	// Seed is the run seed.
	Seed uint64
	// Targets is the number of targets (at least 1).
	Targets int
	// Shard selects this process's part (the zero value: all of it).
	Shard workload.Shard
}

// Schedule is an open-loop run's schedule, in order of time: every
// arrival with its session, drawn from the seed's arrival and workload
// streams exactly as a single process draws them, restricted to a shard's
// part (see workload.Shard). The union of the schedules of shards 0…N−1 is
// therefore the single-process schedule, arrival for arrival: the same
// times, sessions, session ids and endpoints, each on exactly one shard.
//
// A Schedule draws every arrival's session, its shard's or not (the
// workload's random stream and a dataset's order must advance as in one
// process), so a shard draws as many prompts as the whole load has.
//
// Next is owned by one goroutine; Drawn may be read from any.
type Schedule struct {
	arr      workload.Arrivals
	wl       workload.Workload
	rng      *rand.Rand
	shard    workload.Shard
	targets  int
	sessions uint64 // multi-turn sessions drawn so far (all shards)
	drawn    atomic.Uint64
}

// NewSchedule builds the schedule cfg describes (a trace file is read now).
func NewSchedule(cfg ScheduleConfig) (*Schedule, error) {
	if cfg.Workload == nil {
		return nil, errors.New("schedule: no workload")
	}
	if cfg.Targets < 1 {
		return nil, errors.New("schedule: no target")
	}
	if err := cfg.Shard.Validate(); err != nil {
		return nil, fmt.Errorf("schedule: %w", err)
	}
	arr, err := workload.NewArrivals(cfg.Arrival, rand.New(rand.NewPCG(cfg.Seed, SeedStreamArrivals)))
	if err != nil {
		return nil, fmt.Errorf("schedule: %w", err)
	}
	return &Schedule{
		arr: arr, wl: cfg.Workload, rng: rand.New(rand.NewPCG(cfg.Seed, SeedStreamWorkload)),
		shard: cfg.Shard, targets: cfg.Targets,
	}, nil
}

// Next returns this shard's next arrival; ok is false once the whole
// schedule has ended.
func (s *Schedule) Next() (p Planned, ok bool) {
	for {
		a, ok := s.arr.Next()
		if !ok {
			return Planned{}, false
		}
		k := s.drawn.Add(1) - 1
		sess := s.wl.Next(s.rng, a)
		var id uint64
		if len(sess.Turns) > 1 {
			s.sessions++
			id = s.sessions
		}
		if s.shard.Keeps(k) {
			return Planned{Index: k, SessionID: id, Endpoint: int(k % uint64(s.targets)), Arrival: a, Session: sess}, true
		}
	}
}

// Drawn is the number of arrivals of the whole schedule drawn so far, every
// shard's: once Next has returned false, the whole schedule's length.
func (s *Schedule) Drawn() uint64 { return s.drawn.Load() }
