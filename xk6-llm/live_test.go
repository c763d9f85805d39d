package llm_test

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/engine"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// untilClock waits until the run clock reads d, or ctx ends.
func untilClock(ctx context.Context, clock *recording.RunClock, d time.Duration) bool {
	t := time.NewTimer(time.Until(clock.Time(d)))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// span is the run-clock interval a change of a live load happened in: the
// clock read just before and just after the call.
type span struct{ from, to time.Duration }

func at(clock *recording.RunClock, f func()) span {
	s := span{from: clock.Now()}
	f()
	s.to = clock.Now()
	return s
}

// TestLiveLoadOpenLoop: a live open loop follows its rate as it changes,
// sends nothing while paused, resumes, and ends its schedule when ended,
// long before its duration; every scheduled request is still one Result.
func TestLiveLoadOpenLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("real run of about 2.5 s")
	}
	url, _ := startSim(t, simOpts{TTFT: 5 * time.Millisecond, ITL: time.Millisecond})
	live := engine.NewLiveLoad(100, 0)
	var pause, resume, end span
	r := e2e{
		targets:  []string{url},
		arrival:  workload.ArrivalConfig{Rate: 100, Arrival: workload.ArrivalConstant, Duration: time.Minute},
		workload: shortChat(4), grace: 5 * time.Second, live: live,
		during: func(ctx context.Context, _ context.CancelFunc, clock *recording.RunClock) {
			if !untilClock(ctx, clock, time.Second) {
				return
			}
			pause = at(clock, live.Pause)
			if !untilClock(ctx, clock, 1500*time.Millisecond) {
				return
			}
			resume = at(clock, func() {
				if err := live.SetRate(20); err != nil {
					t.Error(err)
				}
				live.Resume()
			})
			if !untilClock(ctx, clock, 2500*time.Millisecond) {
				return
			}
			end = at(clock, live.End)
		},
	}.run(t)
	req := checkAccounting(t, r)
	if req.OK != req.Scheduled {
		t.Fatalf("ok %d of %d scheduled (errors %v)", req.OK, req.Scheduled, req.ErrorsByClass)
	}
	count := func(from, to time.Duration) int {
		n := 0
		for _, s := range r.results {
			if at := time.Duration(s.ScheduledUs) * time.Microsecond; at >= from && at < to {
				n++
			}
		}
		return n
	}
	// 100 req/s constant: the first arrival at 0, then one every 10 ms.
	if n := count(0, pause.from); n < int(pause.from/(10*time.Millisecond))-2 || n > int(pause.from/(10*time.Millisecond))+2 {
		t.Errorf("%d requests before the pause at %v, want about one per 10 ms", n, pause.from)
	}
	if n := count(pause.to+time.Millisecond, resume.from); n != 0 {
		t.Errorf("%d requests scheduled while paused (%v to %v), want none", n, pause.to, resume.from)
	}
	// 20 req/s after the resume: one every 50 ms.
	if n, want := count(resume.to, end.from), int((end.from-resume.to)/(50*time.Millisecond)); n < want-2 || n > want+2 {
		t.Errorf("%d requests between the resume at %v and the end at %v, want about %d at 20 req/s", n, resume.to, end.from, want)
	}
	if n := count(end.to+time.Millisecond, time.Hour); n != 0 {
		t.Errorf("%d requests scheduled after the end at %v", n, end.to)
	}
	if got := r.stats.ScheduleEnd; got < end.from || got > end.to+100*time.Millisecond {
		t.Errorf("schedule ended at %v, want at the end call (%v to %v)", got, end.from, end.to)
	}
	if st := live.State(); !st.Ended || st.Rate != 20 || st.Paused {
		t.Errorf("state %+v, want ended at rate 20, not paused", st)
	}
}

// TestLiveLoadClosedLoop: a live closed loop runs as many users as it is
// given, more when raised, none while paused, and ends when ended.
func TestLiveLoadClosedLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("real run of about 2 s")
	}
	url, _ := startSim(t, simOpts{TTFT: 20 * time.Millisecond, ITL: 5 * time.Millisecond})
	live := engine.NewLiveLoad(0, 2)
	var raise, pause, end span
	inFlightMax := func(r *engineRun, from, to time.Duration) int {
		most := 0
		for _, s := range r.results {
			t0 := time.Duration(s.SentUs) * time.Microsecond
			if t0 < from || t0 >= to {
				continue
			}
			n := 0
			for _, o := range r.results {
				if o.SentUs <= s.SentUs && o.EndUs > s.SentUs {
					n++
				}
			}
			most = max(most, n)
		}
		return most
	}
	r := e2e{
		targets:  []string{url},
		arrival:  workload.ArrivalConfig{Concurrency: 2, Duration: time.Minute},
		workload: shortChat(4), grace: 5 * time.Second, live: live,
		during: func(ctx context.Context, _ context.CancelFunc, clock *recording.RunClock) {
			if !untilClock(ctx, clock, 600*time.Millisecond) {
				return
			}
			raise = at(clock, func() {
				if err := live.SetUsers(5); err != nil {
					t.Error(err)
				}
			})
			if !untilClock(ctx, clock, 1200*time.Millisecond) {
				return
			}
			pause = at(clock, live.Pause)
			if !untilClock(ctx, clock, 1700*time.Millisecond) {
				return
			}
			end = at(clock, live.End)
		},
	}.run(t)
	req := checkAccounting(t, r)
	if req.OK != req.Scheduled || req.OK == 0 {
		t.Fatalf("ok %d of %d scheduled (errors %v)", req.OK, req.Scheduled, req.ErrorsByClass)
	}
	if n := inFlightMax(r, 0, raise.from); n != 2 {
		t.Errorf("most in flight before the raise: %d, want the 2 users", n)
	}
	if n := inFlightMax(r, raise.to+100*time.Millisecond, pause.from); n != 5 {
		t.Errorf("most in flight after the raise to 5: %d", n)
	}
	// A user mid-session finishes it (about 35 ms); none starts after.
	for _, s := range r.results {
		if at := time.Duration(s.ScheduledUs) * time.Microsecond; at > pause.to+time.Millisecond {
			t.Errorf("seq %d scheduled at %v, after the pause at %v", s.Seq, at, pause.to)
		}
	}
	if got := r.stats.ScheduleEnd; got < end.from || got > end.to+100*time.Millisecond {
		t.Errorf("schedule ended at %v, want at the end call (%v to %v)", got, end.from, end.to)
	}
}

// TestLiveLoadRefuses: a live load takes only sensible settings, and only
// the load shapes it can change.
func TestLiveLoadRefuses(t *testing.T) {
	live := engine.NewLiveLoad(10, 0)
	for _, r := range []float64{0, -1} {
		if err := live.SetRate(r); err == nil {
			t.Errorf("SetRate(%v) accepted", r)
		}
	}
	for _, n := range []int{0, engine.MaxLiveUsers + 1} {
		if err := live.SetUsers(n); err == nil {
			t.Errorf("SetUsers(%d) accepted", n)
		}
	}
	if st := live.State(); st.Rate != 10 || st.Paused || st.Ended {
		t.Errorf("state %+v after refused changes, want rate 10", st)
	}
	w, err := workload.New(shortChat(4).WithDefaults(), rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	_, err = engine.New(engine.Config{
		Targets: []string{"http://127.0.0.1:1/v1"}, Model: "m", Workload: w, Recorder: recording.NewRecorder(recording.Options{}),
		Arrival: workload.ArrivalConfig{Stages: []workload.Stage{{Duration: time.Second, Target: 5}}}.WithDefaults(), Live: live,
	})
	if err == nil || !strings.Contains(err.Error(), "cannot change live") {
		t.Errorf("engine.New with live stages: %v, want a refusal", err)
	}
}
