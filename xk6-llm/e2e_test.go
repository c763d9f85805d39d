package llm_test

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/client"
	"github.com/llmchaos/llmchaos/xk6-llm/engine"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// shortChat is a small synthetic chat workload: prompts of 16 tokens and
// exactly out output tokens (ignore_eos), so that each request lasts
// TTFT + (out−1)·ITL on a constant-latency simulator.
func shortChat(out int) workload.Config {
	return workload.Config{InputTokens: workload.FixedDist(16), OutputTokens: workload.FixedDist(out), IgnoreEOS: true}
}

// TestE2EPoissonRealisedRate checks Poisson at 50 req/s. The schedule
// itself is pure and tested without real time (TestPoissonRealisedRate: a
// 30 s schedule holds 1500 ± 3% arrivals, and its spread over seeds is
// Poisson's); this short real run shows that the engine sends exactly the
// schedule its seed gives, each request at its time, over exactly the
// duration, so that its realised rate is the schedule's.
// BenchmarkEnginePoissonRate runs the whole 30 s against a simulator
// process and reports the realised rate.
func TestE2EPoissonRealisedRate(t *testing.T) {
	if testing.Short() {
		t.Skip("the real run needs 3 s")
	}
	const seed = 11
	url, _ := startSim(t, simOpts{TTFT: 5 * time.Millisecond, ITL: time.Millisecond})
	short := workload.ArrivalConfig{Rate: 50, Duration: 3 * time.Second}.WithDefaults()
	arr, err := workload.NewArrivals(short, rand.New(rand.NewPCG(seed, engine.SeedStreamArrivals)))
	if err != nil {
		t.Fatal(err)
	}
	var want []int64
	for a, ok := arr.Next(); ok; a, ok = arr.Next() {
		want = append(want, a.At.Microseconds())
	}
	r := e2e{targets: []string{url}, arrival: short, workload: shortChat(4), seed: seed, grace: 5 * time.Second}.run(t)
	req := checkAccounting(t, r)
	if req.OK != int64(len(want)) {
		t.Fatalf("ok = %d, want every one of the schedule's %d arrivals (errors %v)", req.OK, len(want), req.ErrorsByClass)
	}
	var got []int64
	for _, s := range r.results {
		got = append(got, s.ScheduledUs)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("scheduled times differ from the seed's schedule:\n got %v\nwant %v", got, want)
	}
	// The run lasts the duration asked for (plus the last request's few
	// ms), so the realised rate is the schedule's count over 3 s.
	if d := r.stats.End; d < 3*time.Second || d > 3*time.Second+500*time.Millisecond {
		t.Errorf("run lasted %v, want 3 s plus the last request", d)
	}
	realised := float64(req.Sent) / r.stats.End.Seconds()
	if scheduled := float64(len(want)) / 3; math.Abs(realised-scheduled) > 0.03*scheduled {
		t.Errorf("realised rate %.2f req/s, want the schedule's %.2f ± 3%%", realised, scheduled)
	}
	// Precision is the benchmarks' business (BenchmarkEngineSendLag); here
	// the median only shows that requests leave at their own times, not in
	// bursts or late by a schedule's drift, even on a busy machine.
	_, lag50, lag99, lagMax := distMs(r.sum, recording.MetricSendLag)
	t.Logf("send lag p50 %.3f ms, p99 %.3f ms, max %.3f ms", lag50, lag99, lagMax)
	if lag50 > 5 {
		t.Errorf("send lag p50 = %.3f ms: requests did not leave at their scheduled times", lag50)
	}
}

// TestE2EAccounting checks `scheduled == ok + failed + cancelled + dropped`
// and `lost == 0` (with the engine's own count of what it scheduled) in
// every way a run can go wrong, and that each way shows as what it is.
func TestE2EAccounting(t *testing.T) {
	if testing.Short() {
		t.Skip("real runs of about a second each")
	}
	const token = "e2e-admin-token"
	fast := simOpts{TTFT: 5 * time.Millisecond, ITL: 2 * time.Millisecond, AdminToken: token}
	tests := []struct {
		name  string
		setup func(t *testing.T) e2e
		check func(t *testing.T, r *engineRun, req recording.Requests)
	}{
		{
			name: "normal run",
			setup: func(t *testing.T) e2e {
				url, _ := startSim(t, fast)
				return e2e{targets: []string{url}, arrival: workload.ArrivalConfig{Rate: 100, Duration: time.Second}, workload: shortChat(8)}
			},
			check: func(t *testing.T, r *engineRun, req recording.Requests) {
				if req.OK == 0 || req.OK != req.Scheduled {
					t.Errorf("ok = %d of %d scheduled, want all (errors %v)", req.OK, req.Scheduled, req.ErrorsByClass)
				}
			},
		},
		{
			name: "server answers 429",
			setup: func(t *testing.T) e2e {
				url, _ := startSim(t, fast)
				admin(t, url, token, "/admin/errors", `{"rate":0.4,"kind":"429"}`)
				return e2e{targets: []string{url}, arrival: workload.ArrivalConfig{Rate: 200, Duration: 500 * time.Millisecond}, workload: shortChat(4)}
			},
			check: func(t *testing.T, r *engineRun, req recording.Requests) {
				if req.ErrorsByClass[string(recording.ClassHTTP429)] == 0 || req.OK == 0 {
					t.Errorf("errors %v, ok %d: want http_429 failures and ok requests", req.ErrorsByClass, req.OK)
				}
				c := r.sum.Counts(recording.TagFilter{})
				if got := c.ThrottleRate(); got < 0.2 || got > 0.6 {
					t.Errorf("throttle_rate = %.2f, want about 0.4", got)
				}
			},
		},
		{
			name: "server answers 500",
			setup: func(t *testing.T) e2e {
				url, _ := startSim(t, fast)
				admin(t, url, token, "/admin/errors", `{"rate":0.4,"kind":"500"}`)
				return e2e{targets: []string{url}, arrival: workload.ArrivalConfig{Rate: 200, Duration: 500 * time.Millisecond}, workload: shortChat(4)}
			},
			check: func(t *testing.T, r *engineRun, req recording.Requests) {
				if req.ErrorsByClass[string(recording.ClassHTTP5xx)] == 0 || req.OK == 0 {
					t.Errorf("errors %v, ok %d: want http_5xx failures and ok requests", req.ErrorsByClass, req.OK)
				}
			},
		},
		{
			name: "streams cut by a crash",
			setup: func(t *testing.T) e2e {
				url, done := startSim(t, simOpts{TTFT: 5 * time.Millisecond, ITL: 5 * time.Millisecond, AdminToken: token})
				return e2e{
					targets: []string{url}, arrival: workload.ArrivalConfig{Rate: 100, Duration: time.Second}, workload: shortChat(100),
					during: func(ctx context.Context, _ context.CancelFunc, clock *recording.RunClock) {
						if engine.SleepUntil(ctx, clock, 400*time.Millisecond) == nil {
							if err := adminCall(url, token, "/admin/crash", `{}`); err != nil {
								t.Error(err)
								return
							}
							<-done // the replica has died: later requests find nobody listening
						}
					},
				}
			},
			check: func(t *testing.T, r *engineRun, req recording.Requests) {
				if req.ErrorsByClass[string(recording.ClassReset)] == 0 {
					t.Errorf("errors %v: want streams cut mid-body (reset)", req.ErrorsByClass)
				}
				if req.ErrorsByClass[string(recording.ClassConnect)] == 0 {
					t.Errorf("errors %v: want requests after the crash refused (connect)", req.ErrorsByClass)
				}
			},
		},
		{
			name: "server process killed",
			setup: func(t *testing.T) e2e {
				// Requests last 200 ms: those sent before 300 ms end ok,
				// those in flight at the kill (500 ms) are cut, later ones
				// find nobody listening.
				p := startSimProcess(t, simOpts{TTFT: 5 * time.Millisecond, ITL: 2 * time.Millisecond})
				return e2e{
					targets: []string{p.url}, arrival: workload.ArrivalConfig{Rate: 100, Duration: time.Second}, workload: shortChat(100),
					during: func(ctx context.Context, _ context.CancelFunc, clock *recording.RunClock) {
						if engine.SleepUntil(ctx, clock, 500*time.Millisecond) == nil {
							if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
								t.Error(err)
							}
						}
					},
				}
			},
			check: func(t *testing.T, r *engineRun, req recording.Requests) {
				if req.OK == 0 || req.ErrorsByClass[string(recording.ClassReset)] == 0 || req.ErrorsByClass[string(recording.ClassConnect)] == 0 {
					t.Errorf("ok %d, errors %v: want ok before the kill, reset streams at it, connect errors after", req.OK, req.ErrorsByClass)
				}
			},
		},
		{
			name: "client cancels on purpose",
			setup: func(t *testing.T) e2e {
				url, _ := startSim(t, fast)
				w := shortChat(20)
				w.CancelShare, w.CancelAfterTokens = 0.5, workload.FixedDist(3)
				return e2e{targets: []string{url}, arrival: workload.ArrivalConfig{Rate: 200, Duration: 500 * time.Millisecond}, workload: w}
			},
			check: func(t *testing.T, r *engineRun, req recording.Requests) {
				if req.Cancelled == 0 || req.OK == 0 || req.Failed != 0 {
					t.Errorf("cancelled %d, ok %d, failed %d: want both cancelled and ok, no failure", req.Cancelled, req.OK, req.Failed)
				}
				if n, _, _, _ := distMs(r.sum, recording.MetricTTFT); n != req.OK+req.Cancelled {
					t.Errorf("ttft count %d, want every request (cancelled ones got tokens first) %d", n, req.OK+req.Cancelled)
				}
			},
		},
		{
			name: "ctrl-c mid-run",
			setup: func(t *testing.T) e2e {
				url, _ := startSim(t, simOpts{TTFT: 5 * time.Millisecond, ITL: 10 * time.Millisecond})
				return e2e{
					targets: []string{url}, arrival: workload.ArrivalConfig{Rate: 100, Duration: 10 * time.Second}, workload: shortChat(200),
					grace: time.Minute,
					during: func(ctx context.Context, cancel context.CancelFunc, clock *recording.RunClock) {
						if engine.SleepUntil(ctx, clock, 500*time.Millisecond) == nil {
							cancel()
						}
					},
				}
			},
			check: func(t *testing.T, r *engineRun, req recording.Requests) {
				if !r.stats.Interrupted {
					t.Error("run not reported as interrupted")
				}
				if req.Cancelled == 0 || req.Failed != 0 {
					t.Errorf("cancelled %d, failed %d: want the requests in flight cancelled, none failed", req.Cancelled, req.Failed)
				}
				// Everything in flight stops at once: no grace after Ctrl-C.
				if r.wall > 2*time.Second {
					t.Errorf("Run returned %v after start, want soon after the cancel at 0.5 s", r.wall)
				}
			},
		},
		{
			name: "grace runs out",
			setup: func(t *testing.T) e2e {
				url, _ := startSim(t, simOpts{TTFT: 5 * time.Millisecond, ITL: 10 * time.Millisecond})
				return e2e{targets: []string{url}, arrival: workload.ArrivalConfig{Rate: 50, Duration: 300 * time.Millisecond},
					workload: shortChat(200), grace: 200 * time.Millisecond}
			},
			check: func(t *testing.T, r *engineRun, req recording.Requests) {
				// Cut by the run's end, not asked to stop: the service
				// did not answer in time, a timeout failure.
				if req.Failed != req.Scheduled || req.Scheduled == 0 || req.Cancelled != 0 {
					t.Errorf("failed %d, cancelled %d of %d: want every 2 s request failed when the grace ran out", req.Failed, req.Cancelled, req.Scheduled)
				}
				if n := req.ErrorsByClass[string(recording.ClassTimeout)]; n != req.Scheduled {
					t.Errorf("timeouts %d of %d (errors %v): want every unfinished request a timeout", n, req.Scheduled, req.ErrorsByClass)
				}
				if end := r.stats.End; end < 500*time.Millisecond || end > 900*time.Millisecond {
					t.Errorf("run ended at %v, want at duration + grace = 500 ms", end)
				}
			},
		},
		{
			name: "drop under saturation",
			setup: func(t *testing.T) e2e {
				url, _ := startSim(t, simOpts{TTFT: 5 * time.Millisecond, ITL: 5 * time.Millisecond})
				return e2e{targets: []string{url}, arrival: workload.ArrivalConfig{Rate: 200, Duration: 500 * time.Millisecond,
					MaxInFlight: 4, OnSaturation: workload.SaturationDrop}, workload: shortChat(40)}
			},
			check: func(t *testing.T, r *engineRun, req recording.Requests) {
				if req.Dropped == 0 || req.OK == 0 {
					t.Errorf("dropped %d, ok %d: want both", req.Dropped, req.OK)
				}
				if got := r.sum.Concurrency.Max; got > 4 {
					t.Errorf("in-flight max %d, want ≤ 4", got)
				}
				if n, _, _, _ := distMs(r.sum, recording.MetricClientQueue); n != req.Sent {
					t.Errorf("client_queue recorded %d times, want once per sent request (%d)", n, req.Sent)
				}
				if _, _, _, qmax := distMs(r.sum, recording.MetricClientQueue); qmax != 0 {
					t.Errorf("client_queue max %.3f ms under drop, want 0: nothing waits", qmax)
				}
			},
		},
		{
			name: "wait under saturation",
			setup: func(t *testing.T) e2e {
				url, _ := startSim(t, simOpts{TTFT: 20 * time.Millisecond, ITL: 5 * time.Millisecond})
				return e2e{targets: []string{url}, arrival: workload.ArrivalConfig{Rate: 100, Arrival: workload.ArrivalConstant, Duration: 300 * time.Millisecond,
					MaxInFlight: 2, OnSaturation: workload.SaturationWait}, workload: shortChat(10), grace: 10 * time.Second}
			},
			check: func(t *testing.T, r *engineRun, req recording.Requests) {
				if req.OK != req.Scheduled || req.Dropped != 0 {
					t.Errorf("ok %d of %d, dropped %d: want every request sent after waiting", req.OK, req.Scheduled, req.Dropped)
				}
				// 30 requests of 65 ms through 2 slots: the queue grows to
				// about 0.7 s, and none of it may show in TTFT.
				_, q50, _, qmax := distMs(r.sum, recording.MetricClientQueue)
				_, ttft50, _, ttftMax := distMs(r.sum, recording.MetricTTFT)
				if qmax < 300 {
					t.Errorf("client_queue max %.1f ms, want the queue's wait (hundreds of ms)", qmax)
				}
				// The queue reaches hundreds of ms; TTFT stays the server's
				// 20 ms (the bound leaves room for a busy machine's noise).
				if ttftMax > 100 || ttft50 < 19 || ttft50 > 25 {
					t.Errorf("ttft p50 %.1f max %.1f ms, want the server's 20 ms: the queue (p50 %.1f ms) must not be in it", ttft50, ttftMax, q50)
				}
				for _, s := range r.results {
					if s.DequeuedUs > s.ScheduledUs && s.SentUs-s.DequeuedUs > 10_000 {
						t.Errorf("seq %d sent %d µs after its slot: want at once", s.Seq, s.SentUs-s.DequeuedUs)
					}
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.setup(t)
			if r.grace == 0 {
				r.grace = 5 * time.Second
			}
			r.seed = 3
			got := r.run(t)
			req := checkAccounting(t, got)
			t.Logf("scheduled %d: ok %d, failed %d, cancelled %d, dropped %d, errors %v",
				req.Scheduled, req.OK, req.Failed, req.Cancelled, req.Dropped, req.ErrorsByClass)
			tt.check(t, got, req)
		})
	}
}

// TestE2ESessions runs multi-turn sessions: each later turn is scheduled
// exactly its think time after the previous turn ended, carries the
// conversation so far (the server counts a longer prompt each turn), and a
// turn that would start after the run's duration is not scheduled at all.
func TestE2ESessions(t *testing.T) {
	if testing.Short() {
		t.Skip("real run of about a second")
	}
	url, _ := startSim(t, simOpts{TTFT: 5 * time.Millisecond, ITL: 2 * time.Millisecond})
	w := shortChat(20)
	w.Turns = workload.FixedDist(6)
	w.ThinkTime = workload.FixedDuration(100 * time.Millisecond)
	const duration = 600 * time.Millisecond
	r := e2e{targets: []string{url}, arrival: workload.ArrivalConfig{Rate: 20, Arrival: workload.ArrivalConstant, Duration: duration},
		workload: w, seed: 5, grace: 5 * time.Second}.run(t)
	req := checkAccounting(t, r)
	if req.OK != req.Scheduled {
		t.Fatalf("ok %d of %d (errors %v)", req.OK, req.Scheduled, req.ErrorsByClass)
	}
	bySession := map[uint64][]savedResult{}
	for _, s := range r.results {
		if s.Session == 0 {
			t.Fatalf("seq %d has no session id in a 6-turn workload", s.Seq)
		}
		if s.ScheduledUs >= duration.Microseconds() {
			t.Errorf("session %d turn %d scheduled at %d µs, after the %v duration", s.Session, s.Turn, s.ScheduledUs, duration)
		}
		bySession[s.Session] = append(bySession[s.Session], s)
	}
	if len(bySession) != 12 {
		t.Errorf("%d sessions, want 12 (20/s for 600 ms)", len(bySession))
	}
	var multi int
	for id, turns := range bySession {
		slices.SortFunc(turns, func(a, b savedResult) int { return a.Turn - b.Turn })
		for i, s := range turns {
			if s.Turn != i {
				t.Fatalf("session %d: turns %v, want 0, 1, … without gaps", id, turns)
			}
			if i == 0 {
				continue
			}
			prev := turns[i-1]
			if got, want := s.ScheduledUs, prev.EndUs+100_000; got != want {
				t.Errorf("session %d turn %d scheduled at %d µs, want previous end + 100 ms = %d µs", id, i, got, want)
			}
			if s.InputTokens <= prev.InputTokens+prev.OutputTokens {
				t.Errorf("session %d turn %d: server counted %d prompt tokens, want more than the previous turn's prompt and reply (%d + %d)",
					id, i, s.InputTokens, prev.InputTokens, prev.OutputTokens)
			}
			if s.PromptSent <= prev.PromptSent {
				t.Errorf("session %d turn %d: estimated prompt %d, want it to grow from %d", id, i, s.PromptSent, prev.PromptSent)
			}
		}
		if len(turns) > 1 {
			multi++
		}
		// Every session would have gone on (6 turns); it stopped only
		// because its next turn fell after the duration.
		if last := turns[len(turns)-1]; len(turns) < 6 && last.EndUs+100_000 < duration.Microseconds() {
			t.Errorf("session %d stopped after turn %d ending at %d µs, though its next turn was due before %v", id, last.Turn, last.EndUs, duration)
		}
	}
	if multi == 0 {
		t.Error("no session had more than one turn")
	}
}

// TestE2ETargetsRoundRobin spreads requests over two simulators in schedule
// order and tags each Result with its endpoint.
func TestE2ETargetsRoundRobin(t *testing.T) {
	a, _ := startSim(t, simOpts{TTFT: 2 * time.Millisecond, ITL: time.Millisecond})
	b, _ := startSim(t, simOpts{TTFT: 2 * time.Millisecond, ITL: time.Millisecond})
	r := e2e{targets: []string{a, b}, arrival: workload.ArrivalConfig{Rate: 200, Arrival: workload.ArrivalConstant, Requests: 20},
		workload: shortChat(2), grace: 5 * time.Second}.run(t)
	req := checkAccounting(t, r)
	if req.OK != 20 {
		t.Fatalf("ok = %d, want 20 (errors %v)", req.OK, req.ErrorsByClass)
	}
	for _, s := range r.results {
		if want := []string{a, b}[s.Seq%2]; s.Endpoint != want {
			t.Errorf("seq %d went to %q, want %q", s.Seq, s.Endpoint, want)
		}
	}
	for _, u := range []string{a, b} {
		if got := r.sum.Counts(recording.TagFilter{Endpoint: u}).OK; got != 10 {
			t.Errorf("endpoint %s: %d ok, want 10", u, got)
		}
	}
}

// TestE2EDeterministic runs the same seed twice: the same requests at the
// same times with the same prompts and request ids; another seed differs.
func TestE2EDeterministic(t *testing.T) {
	url, _ := startSim(t, simOpts{TTFT: 2 * time.Millisecond, ITL: time.Millisecond})
	w := workload.Config{InputTokens: workload.UniformDist(10, 500), OutputTokens: workload.UniformDist(1, 8)}
	type key struct {
		seq    uint64
		at     int64
		prompt int
		id     string
	}
	keys := func(seed uint64) []key {
		r := e2e{targets: []string{url}, arrival: workload.ArrivalConfig{Rate: 400, Requests: 40}, workload: w, seed: seed, grace: 5 * time.Second}.run(t)
		checkAccounting(t, r)
		var ks []key
		for _, s := range r.results {
			ks = append(ks, key{s.Seq, s.ScheduledUs, s.PromptSent, s.RequestID})
		}
		slices.SortFunc(ks, func(a, b key) int { return int(a.seq) - int(b.seq) })
		return ks
	}
	first, again, other := keys(42), keys(42), keys(43)
	if !slices.Equal(first, again) {
		t.Errorf("seed 42 twice gave different runs:\n%v\n%v", first, again)
	}
	if slices.Equal(first, other) {
		t.Error("seeds 42 and 43 gave the same run")
	}
}

// TestE2EClosedLoop runs virtual users: never more in flight than users,
// each user's next request its think time after its previous one ended,
// and users started evenly over the ramp-up.
func TestE2EClosedLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("real run of about a second")
	}
	url, _ := startSim(t, simOpts{TTFT: 10 * time.Millisecond, ITL: 2 * time.Millisecond})
	const users = 4
	r := e2e{targets: []string{url}, arrival: workload.ArrivalConfig{Concurrency: users, ThinkTime: workload.FixedDuration(30 * time.Millisecond), Duration: 800 * time.Millisecond},
		workload: shortChat(10), rampUp: 100 * time.Millisecond, grace: 5 * time.Second}.run(t)
	req := checkAccounting(t, r)
	if req.OK != req.Scheduled || req.OK < 4*users {
		t.Fatalf("ok %d of %d scheduled, want all and several per user (errors %v)", req.OK, req.Scheduled, req.ErrorsByClass)
	}
	if got := r.sum.Concurrency.Max; got > users || got < 2 {
		t.Errorf("in-flight max %d, want between 2 and %d users", got, users)
	}
	var starts []int64
	ends := map[int64]bool{}
	for _, s := range r.results {
		ends[s.EndUs] = true
		if s.ScheduledUs >= 800_000 {
			t.Errorf("seq %d scheduled at %d µs, after the duration", s.Seq, s.ScheduledUs)
		}
	}
	for _, s := range r.results {
		// A user's first request is at its ramp-up offset; every later
		// one is at some request's end + 30 ms (its own previous one).
		if !ends[s.ScheduledUs-30_000] {
			starts = append(starts, s.ScheduledUs)
		}
	}
	slices.Sort(starts)
	if want := []int64{0, 25_000, 50_000, 75_000}; !slices.Equal(starts, want) {
		t.Errorf("requests not scheduled at a previous end + think time: %v, want only the users' starts %v", starts, want)
	}
	// The run lasts the duration: users whose next session would start
	// after it stop.
	if end := r.stats.End; end < 800*time.Millisecond || end > 1200*time.Millisecond {
		t.Errorf("run ended at %v, want about the 800 ms duration", end)
	}
}

// TestEngineNewValidate reports every problem at once.
func TestEngineNewValidate(t *testing.T) {
	w, err := workload.New(shortChat(4).WithDefaults(), rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	client, err := client.New(client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec := recording.NewRecorder(recording.Options{})
	ok := engine.Config{Targets: []string{"http://127.0.0.1:1/v1"}, Model: "m", Arrival: workload.ArrivalConfig{Rate: 1, Requests: 1}.WithDefaults(),
		Workload: w, Client: client, Recorder: rec}
	tests := []struct {
		name string
		mod  func(c *engine.Config)
		want []string
	}{
		{"valid", func(*engine.Config) {}, nil},
		{"everything missing", func(c *engine.Config) { *c = engine.Config{} },
			[]string{"no target", "no model", "no workload", "no client", "no recorder", "no load shape"}},
		{"empty target", func(c *engine.Config) { c.Targets = []string{""} }, []string{"target 1 is empty"}},
		{"negative grace", func(c *engine.Config) { c.Grace = -time.Second }, []string{"grace -1s"}},
		{"ramp-up on open loop", func(c *engine.Config) { c.RampUp = time.Second }, []string{"ramp-up applies to a closed loop"}},
		{"bad arrival", func(c *engine.Config) { c.Arrival.OnSaturation = "maybe" }, []string{`on_saturation "maybe"`}},
		{"bad shard", func(c *engine.Config) { c.Shard = workload.Shard{Index: 2, Count: 2} }, []string{"shard 2/2"}},
		{"closed loop split too thin", func(c *engine.Config) {
			c.Arrival, c.Shard = workload.ArrivalConfig{Concurrency: 2, Requests: 10}.WithDefaults(), workload.Shard{Index: 0, Count: 3}
		}, []string{"concurrency 2 is split over 3 shards"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.mod(&c)
			_, err := engine.New(c)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("engine.New: %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("engine.New: nil, want errors %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// TestEngineRunsOnce refuses a second Run.
func TestEngineRunsOnce(t *testing.T) {
	url, _ := startSim(t, simOpts{TTFT: time.Millisecond, ITL: time.Millisecond})
	w, err := workload.New(shortChat(1).WithDefaults(), rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	client, err := client.New(client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	eng, err := engine.New(engine.Config{Targets: []string{url}, Model: "llmchaos-sim", Arrival: workload.ArrivalConfig{Rate: 100, Requests: 1}.WithDefaults(),
		Workload: w, Client: client, Recorder: recording.NewRecorder(recording.Options{}), Grace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Run(context.Background()); err == nil {
		t.Error("second Run: nil error, want a refusal")
	}
}

// TestEngineTaggerAndObserve checks the runner's hooks: every Result is
// tagged from its send time (a request sent before the switch is in
// "baseline", after it in "fault"), and Observe sees each Result once,
// after the Recorder, with those tags.
func TestEngineTaggerAndObserve(t *testing.T) {
	url, _ := startSim(t, simOpts{TTFT: 5 * time.Millisecond, ITL: time.Millisecond})
	const switchAt = 250 * time.Millisecond
	var mu sync.Mutex
	seen := map[uint64]recording.Tags{}
	var sendTimes sync.Map // seq → at given to the tagger
	r := e2e{
		targets:  []string{url},
		arrival:  workload.ArrivalConfig{Rate: 40, Arrival: "constant", Duration: 500 * time.Millisecond},
		workload: shortChat(2),
		grace:    5 * time.Second,
		tagger: func(at time.Duration, tags *recording.Tags) {
			if at < switchAt {
				tags.Phase = "baseline"
			} else {
				tags.Phase, tags.Fault = "fault", "f1"
			}
		},
		observe: func(res *recording.Result) {
			mu.Lock()
			defer mu.Unlock()
			if _, dup := seen[res.Seq]; dup {
				t.Errorf("Observe saw seq %d twice", res.Seq)
			}
			seen[res.Seq] = res.Tags
			sendTimes.Store(res.Seq, res.Sent)
		},
	}.run(t)
	req := checkAccounting(t, r)
	if got, want := int64(len(seen)), req.Scheduled; got != want {
		t.Fatalf("Observe saw %d Results, want %d", got, want)
	}
	var base, fault int
	for seq, tags := range seen {
		v, _ := sendTimes.Load(seq)
		sent := v.(time.Duration)
		want := "baseline"
		if sent >= switchAt {
			want = "fault"
		}
		// The tagger ran just before Sent was stamped, so only a request
		// sent within a hair of the switch could differ.
		if tags.Phase != want && (sent-switchAt).Abs() > 2*time.Millisecond {
			t.Errorf("seq %d sent at %v tagged %q, want %q", seq, sent, tags.Phase, want)
		}
		if tags.Phase == "baseline" {
			base++
		} else {
			fault++
			if tags.Fault != "f1" {
				t.Errorf("seq %d: fault tag %q, want f1", seq, tags.Fault)
			}
		}
	}
	if base == 0 || fault == 0 {
		t.Errorf("baseline %d, fault %d: want both phases present", base, fault)
	}
	fc := r.sum.Counts(recording.TagFilter{Phase: "fault"})
	if got := fc.Finished(); got != int64(fault) {
		t.Errorf("recorder's fault-phase count %d, want %d (tags must reach the Recorder)", got, fault)
	}
}

// TestE2ELongStreamLiveSeries runs one 45-token stream at 50 ms a token
// (about 2.3 s) through the engine: its first token and its chunks reach
// ObserveEvents (and the Recorder) while it runs, one batch per second
// after the first token, and the run's series credits tokens to every
// second the stream spans, not all to the second it ended in.
func TestE2ELongStreamLiveSeries(t *testing.T) {
	url, _ := startSim(t, simOpts{TTFT: 5 * time.Millisecond, ITL: 50 * time.Millisecond})
	const tokens = 45
	var mu sync.Mutex
	var evs []recording.StreamEvents
	var resultSeen bool
	var early int // batches before the Result
	r := e2e{
		targets:  []string{url},
		arrival:  workload.ArrivalConfig{Rate: 1, Arrival: "constant", Requests: 1},
		workload: workload.Config{InputTokens: workload.FixedDist(8), OutputTokens: workload.FixedDist(tokens), IgnoreEOS: true},
		grace:    30 * time.Second,
		observeEvents: func(ev *recording.StreamEvents) {
			mu.Lock()
			defer mu.Unlock()
			evs = append(evs, recording.StreamEvents{At: ev.At, FirstToken: ev.FirstToken, Tokens: ev.Tokens})
			if !resultSeen {
				early++
			}
		},
		observe: func(res *recording.Result) {
			mu.Lock()
			defer mu.Unlock()
			resultSeen = true
			if !res.LiveEvents {
				t.Errorf("result without LiveEvents: the engine must give the client its live sink")
			}
		},
	}.run(t)
	req := checkAccounting(t, r)
	if req.OK != 1 {
		t.Fatalf("ok %d, want 1 (%v)", req.OK, req.ErrorsByClass)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(evs) < 3 || !evs[0].FirstToken || early != len(evs) {
		t.Fatalf("batches %+v (%d before the Result): want the first token, then one per second, all before the Result", evs, early)
	}
	res := r.results[0]
	first, end := int(res.FirstTokenUs/1e6), int(res.EndUs/1e6)
	if end-first < 2 {
		t.Fatalf("stream from %d µs to %d µs: want it to span 3 seconds", res.FirstTokenUs, res.EndUs)
	}
	var total int64
	for sec := first; sec <= end; sec++ {
		n := r.sum.Series.Second(sec).Counts.StreamedTokens
		if n == 0 {
			t.Errorf("second %d: no tokens, want the stream's chunks of that second", sec)
		}
		total += n
	}
	if total != tokens {
		t.Errorf("tokens over the series = %d, want %d", total, tokens)
	}
}
