package experiments

import (
	"math"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/faults/replica"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// syntheticRun records a run of secs seconds with 10 requests ending in
// each second: failed ones in the seconds failing says (5 of the 10), none
// at all in the seconds quiet says.
func syntheticRun(secs int, failing, quiet func(s int) bool) *recording.Summary {
	rec := recording.NewRecorder(recording.Options{})
	for s := range secs {
		if quiet(s) {
			continue
		}
		for i := range 10 {
			end := time.Duration(s)*time.Second + time.Duration(i)*90*time.Millisecond + 5*time.Millisecond
			res := &recording.Result{Scheduled: end - 4*time.Millisecond, Sent: end - 4*time.Millisecond, FirstToken: end - 2*time.Millisecond, End: end, Outcome: recording.OutcomeOK, Tags: recording.Tags{Class: "chat"}}
			if failing(s) && i%2 == 0 {
				res.Outcome, res.Class, res.HTTPStatus, res.FirstToken = recording.OutcomeFailed, recording.ClassHTTP5xx, 503, 0
			}
			rec.RequestStarted(res.Sent)
			rec.RequestEnded(res.End)
			rec.Record(res)
		}
	}
	return rec.Finish(time.Duration(secs) * time.Second)
}

func TestRecoveredAt(t *testing.T) {
	t.Parallel()
	ths, err := assertions.Parse(DefaultRecoveryThreshold)
	if err != nil {
		t.Fatal(err)
	}
	judge := recoveryJudge{ths: ths, window: 2 * time.Second, hold: 3 * time.Second, within: assertions.Tags{Class: "chat"}}
	never := func(int) bool { return false }
	hurt := func(s int) bool { return s >= 10 && s <= 14 }
	// Worked by hand, windows [e-2s, e): the failing seconds 10..14 spoil
	// every window ending up to 16s; windows ending at 17, 18, 19 and 20
	// (T and T+hold) hold, so T = 17s.
	for _, tc := range []struct {
		name       string
		failing    func(int) bool
		quiet      func(int) bool
		wantT      time.Duration
		wantRecovr bool
	}{
		{"recovers", hurt, never, 17 * time.Second, true},
		// No request ends in seconds 18 and 19: the window ending at 20s
		// has no traffic, which is no evidence either way: it is skipped,
		// neither breaking the run of healthy windows from 17s nor ending
		// it; the healthy window ending at 21s completes the hold.
		{"quiet windows are skipped", hurt, func(s int) bool { return s == 18 || s == 19 }, 17 * time.Second, true},
		{"never healthy again", func(s int) bool { return s >= 10 }, never, 0, false},
		{"healthy already at the revert", func(int) bool { return false }, never, 14 * time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sum := syntheticRun(30, tc.failing, tc.quiet)
			got, ok := judge.recoveredAt(sum.Window, 13500*time.Millisecond, sum.Duration)
			if ok != tc.wantRecovr || got != tc.wantT {
				t.Errorf("recoveredAt = %v, %v; want %v, %v", got, ok, tc.wantT, tc.wantRecovr)
			}
			// The live check advances a second at a time, as the run goes.
			sc := newRecoveryScan(13500 * time.Millisecond)
			var liveT time.Duration
			liveOK := false
			for now := 14 * time.Second; now <= sum.Duration && !liveOK; now += time.Second {
				liveT, liveOK = judge.advance(sum.Window, &sc, now)
				if liveOK && now < liveT+judge.hold {
					t.Errorf("live: recovery at %v seen at %v, before the hold was over (%v)", liveT, now, liveT+judge.hold)
				}
			}
			if liveOK != tc.wantRecovr || liveT != tc.wantT {
				t.Errorf("live advance = %v, %v; want %v, %v", liveT, liveOK, tc.wantT, tc.wantRecovr)
			}
		})
	}
}

func TestExperimentSourceRecoveryTime(t *testing.T) {
	t.Parallel()
	sum := syntheticRun(3, func(int) bool { return false }, func(int) bool { return false })
	src := experimentSource{
		SummarySource: assertions.NewSummarySource(sum),
		recovery: []faultRecovery{
			{fault: "slow-net", recovered: true, time: 7 * time.Second},
			{fault: "stalls", recovered: false},
			{fault: "oom", recovered: true, time: 30 * time.Second, oom: 12 * time.Second, oomOK: true},
		},
	}
	for _, tc := range []struct {
		threshold string
		wantOK    bool
		wantValue float64
		noData    bool
	}{
		{"recovery_time{fault:slow-net}: max<8s", true, 7000, false},
		{"recovery_time{fault:slow-net}: max<5s", false, 7000, false},
		{"recovery_time{fault:stalls}: max<3600s", false, math.Inf(1), false},
		{"recovery_time: p(50)<31s", true, 30000, false},
		{"recovery_time: max<3600s", false, math.Inf(1), false},
		{"oom_recovery_time{fault:oom}: max<15s", true, 12000, false},
		{"oom_recovery_time{fault:slow-net}: max<15s", false, 0, true},
		{"recovery_time{phase:fault}: max<1s", false, 0, true},
		{"recovery_time{fault:slow-net}: count==1", true, 1, false},
	} {
		t.Run(tc.threshold, func(t *testing.T) {
			ths, err := assertions.Parse(tc.threshold)
			if err != nil {
				t.Fatal(err)
			}
			o := assertions.Evaluate(src, ths)[0]
			if o.OK != tc.wantOK || o.NoData != tc.noData || (!o.NoData && o.Value != tc.wantValue) {
				t.Errorf("got ok=%v value=%v nodata=%v, want ok=%v value=%v nodata=%v", o.OK, o.Value, o.NoData, tc.wantOK, tc.wantValue, tc.noData)
			}
		})
	}
	// Other metrics come from the recorded run.
	if h, n := src.Ratio("error_rate", assertions.Tags{}); h != 0 || n != 30 {
		t.Errorf("error_rate parts = %d/%d, want 0/30", h, n)
	}
}

func TestOOMRecovery(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return start.Add(time.Duration(s * float64(time.Second))) }
	evs := []replica.Event{
		{At: at(5), Replica: "replica-1", Kind: replica.EventExit, Detail: "pid 10: signal: killed"},
		{At: at(6), Replica: "replica-1", Kind: replica.EventHealthy},
		{At: at(12), Replica: "replica-0", Kind: replica.EventExit, Detail: "pid 11: exit status 3"},
		{At: at(13), Replica: "replica-0", Kind: replica.EventRestart},
		{At: at(14), Replica: "replica-0", Kind: replica.EventExit, Detail: "pid 12: exit status 4"},
		{At: at(20.5), Replica: "replica-0", Kind: replica.EventHealthy},
	}
	for _, tc := range []struct {
		name     string
		from, to time.Duration
		want     time.Duration
		wantOK   bool
	}{
		{"oom during the fault", 10 * time.Second, 30 * time.Second, 8500 * time.Millisecond, true},
		{"a kill is not an oom", 0, 10 * time.Second, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := oomRecovery(evs, start, tc.from, tc.to)
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("oomRecovery = %v, %v; want %v, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestValuesDistQuantile(t *testing.T) {
	t.Parallel()
	d := valuesDist{1, 2, 3, 4}
	for _, tc := range []struct{ q, want float64 }{{0, 1}, {25, 1}, {50, 2}, {75, 3}, {99, 4}, {100, 4}} {
		if got := d.Quantile(tc.q); got != tc.want {
			t.Errorf("Quantile(%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
	if d.Mean() != 2.5 || d.Min() != 1 || d.Max() != 4 || d.Count() != 4 {
		t.Errorf("mean/min/max/count = %v/%v/%v/%v, want 2.5/1/4/4", d.Mean(), d.Min(), d.Max(), d.Count())
	}
}

// recovery.min_requests: a window in which fewer requests finished is no
// evidence, as a window without traffic. The synthetic run ends 10
// requests a second, 20 in each 2 s window: with a minimum of 20 the
// failing seconds still decide as without one; with 21 no window counts,
// and the search finds no recovery for lack of traffic, not a failure.
func TestRecoveryMinRequests(t *testing.T) {
	t.Parallel()
	ths, err := assertions.Parse(DefaultRecoveryThreshold)
	if err != nil {
		t.Fatal(err)
	}
	sum := syntheticRun(30, func(s int) bool { return s >= 10 && s <= 14 }, func(int) bool { return false })
	judge := recoveryJudge{ths: ths, window: 2 * time.Second, hold: 3 * time.Second, within: assertions.Tags{Class: "chat"}, minRequests: 20}
	if got, ok := judge.recoveredAt(sum.Window, 13500*time.Millisecond, sum.Duration); !ok || got != 17*time.Second {
		t.Errorf("min 20: recoveredAt = %v, %v; want 17s, true", got, ok)
	}
	judge.minRequests = 21
	sc := newRecoveryScan(13500 * time.Millisecond)
	if got, ok := judge.advance(sum.Window, &sc, sum.Duration); ok || !judge.insufficient(&sc) {
		t.Errorf("min 21: recovered %v at %v, insufficient %v; want no recovery for lack of traffic", ok, got, judge.insufficient(&sc))
	}
}
