package experiments

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/faults/replica"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// second describes what the requests ending in one second of a synthetic
// run were: how many, whether half of them failed, and their TTFT and
// E2E.
type second struct {
	n       int
	failing bool
	ttft    time.Duration
}

// syntheticSeconds records a run with one second of results per element
// of secs; E2E is TTFT + 20 ms.
func syntheticSeconds(secs []second) *recording.Summary {
	rec := recording.NewRecorder(recording.Options{})
	for s, sec := range secs {
		for i := range sec.n {
			end := time.Duration(s)*time.Second + time.Duration(i)*(900*time.Millisecond/time.Duration(sec.n)) + 50*time.Millisecond
			sent := end - sec.ttft - 20*time.Millisecond
			res := &recording.Result{Scheduled: sent, Sent: sent, FirstToken: sent + sec.ttft, End: end, Outcome: recording.OutcomeOK, Tags: recording.Tags{Class: "chat"}}
			if sec.failing && i%2 == 0 {
				res.Outcome, res.Class, res.HTTPStatus, res.FirstToken = recording.OutcomeFailed, recording.ClassHTTP5xx, 503, 0
			}
			rec.RequestStarted(res.Sent)
			rec.RequestEnded(res.End)
			rec.Record(res)
		}
	}
	return rec.Finish(time.Duration(len(secs)) * time.Second)
}

// seconds builds secs seconds from f.
func seconds(secs int, f func(s int) second) []second {
	out := make([]second, secs)
	for s := range out {
		out[s] = f(s)
	}
	return out
}

func testJudge(t *testing.T, window, hold time.Duration, band float64) recoveryJudge {
	t.Helper()
	ths, err := assertions.Parse(DefaultRecoveryThreshold)
	if err != nil {
		t.Fatal(err)
	}
	return recoveryJudge{ths: ths, window: window, hold: hold, band: band, within: assertions.Tags{Class: "chat"}}
}

// recoveriesOf runs the runner's post-run recovery computation on a
// synthetic run with the given fault records.
func recoveriesOf(rj recoveryJudge, sum *recording.Summary, recs ...report.FaultRecord) []faultRecovery {
	j := &judge{p: &plan{judge: rj}, faults: &faultTimeline{recs: recs}, obs: &observers{}, clock: &runClock{}}
	return j.recoveries(sum)
}

func faultRec(name, typ string, injected, reverted float64) report.FaultRecord {
	return report.FaultRecord{Name: name, Type: typ, InjectedAtS: &injected, RevertedAtS: &reverted, RevertOK: true}
}

// A kill hurts for two seconds; the experiment gave it a duration of 10 s
// (its revert does nothing). Its recovery_time runs from the injection to
// the service's recovery, whatever the duration; a sustained fault with
// the same effect is searched from its revert, and also reports
// time_to_recover from there.
func TestRecoveryInstantaneousFromInjection(t *testing.T) {
	t.Parallel()
	judge := testJudge(t, 2*time.Second, 3*time.Second, 0)
	sum := syntheticSeconds(seconds(40, func(s int) second {
		return second{n: 10, failing: s == 10 || s == 11, ttft: 10 * time.Millisecond}
	}))
	// Windows [e-2s, e): the failures of seconds 10 and 11 spoil those
	// ending at 11, 12 and 13; windows ending at 14..17 hold: T = 14s.
	for _, tc := range []struct {
		typ             string
		wantTime        time.Duration
		wantInstant     bool
		wantSinceRevert time.Duration
	}{
		{replica.TypeKill, 4 * time.Second, true, 0},
		{replica.TypeStop, 4 * time.Second, true, 0},
		{replica.TypeRestart, 4 * time.Second, true, 0},
		// Sustained: the first window after the revert at 20s ends at
		// 21s: T = 21s, 11s from the injection, 1s from the revert.
		{"network.latency", 11 * time.Second, false, time.Second},
		{replica.TypePause, 11 * time.Second, false, time.Second},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			got := recoveriesOf(judge, sum, faultRec("f", tc.typ, 10, 20))[0]
			if !got.recovered || got.time != tc.wantTime || got.instantaneous != tc.wantInstant {
				t.Fatalf("recovery = %+v; want recovered in %v, instantaneous %v", got, tc.wantTime, tc.wantInstant)
			}
			if !tc.wantInstant && got.sinceRevert != tc.wantSinceRevert {
				t.Errorf("time_to_recover = %v, want %v", got.sinceRevert, tc.wantSinceRevert)
			}
			src := experimentSource{SummarySource: assertions.NewSummarySource(sum), recovery: []faultRecovery{got}}
			ths, err := assertions.Parse("time_to_recover{fault:f}: max<5s")
			if err != nil {
				t.Fatal(err)
			}
			o := assertions.Evaluate(src, ths)[0]
			if tc.wantInstant != o.NoData || (!o.NoData && o.Value != msOf(tc.wantSinceRevert)) {
				t.Errorf("time_to_recover threshold: value %v no data %v; want no data for an instantaneous fault, %v otherwise", o.Value, o.NoData, tc.wantSinceRevert)
			}
		})
	}
}

// After the fault the error rate is back at once, but TTFT stays three
// times the baseline's until second 25: that is not recovered, and the
// criterion that held last is the TTFT p99.
func TestRecoveryLatencyBand(t *testing.T) {
	t.Parallel()
	sum := syntheticSeconds(seconds(40, func(s int) second {
		sec := second{n: 10, ttft: 100 * time.Millisecond}
		switch {
		case s == 10 || s == 11:
			sec.failing = true
			sec.ttft = 300 * time.Millisecond
		case s >= 10 && s < 25:
			sec.ttft = 300 * time.Millisecond
		}
		return sec
	}))
	rec := faultRec("slow", "network.latency", 10, 12)
	for _, tc := range []struct {
		name     string
		band     float64
		wantTime time.Duration
		wantLast string
	}{
		// Windows [e-2s, e) hold from the one ending at 27s (seconds 25
		// and 26): T = 27s, 17s after the injection.
		{"band 1.5", 1.5, 17 * time.Second, CriterionTTFTP99},
		// A band of 4 lets 3x through: errors alone decide, the windows
		// hold from the one ending at 13s (seconds 11 and 12 hold a
		// failure: 14s).
		{"band 4", 4, 4 * time.Second, "error_rate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := recoveriesOf(testJudge(t, 2*time.Second, 3*time.Second, tc.band), sum, rec)[0]
			if !got.recovered || got.time != tc.wantTime || got.heldLast != tc.wantLast {
				t.Errorf("recovery = %+v; want recovered in %v, %q held last", got, tc.wantTime, tc.wantLast)
			}
		})
	}
}

// A low rate: one request every other second, windows of 1 s. The quiet
// windows between are no evidence either way: recovery is found; and a
// fault after which no request finished at all cannot be judged.
func TestRecoveryInsufficientTraffic(t *testing.T) {
	t.Parallel()
	judge := testJudge(t, time.Second, 4*time.Second, 1.5)
	sparse := syntheticSeconds(seconds(30, func(s int) second {
		if s%2 == 1 {
			return second{}
		}
		return second{n: 1, failing: s == 10, ttft: 50 * time.Millisecond}
	}))
	got := recoveriesOf(judge, sparse, faultRec("f", "network.latency", 10, 10.5))[0]
	// The failing request ends in second 10 (window ending at 11);
	// second 12's request makes the window ending at 13 healthy, and the
	// one ending at 17 completes the hold: T = 13s, 3s after injection.
	if !got.recovered || got.time != 3*time.Second || got.insufficient {
		t.Errorf("sparse: recovery = %+v; want recovered in 3s", got)
	}

	silent := syntheticSeconds(seconds(30, func(s int) second {
		if s >= 10 {
			return second{}
		}
		return second{n: 10, ttft: 50 * time.Millisecond}
	}))
	got = recoveriesOf(judge, silent, faultRec("f", "network.latency", 10, 12))[0]
	if got.recovered || !got.insufficient {
		t.Fatalf("silent: recovery = %+v; want insufficient traffic", got)
	}
	src := experimentSource{SummarySource: assertions.NewSummarySource(silent), recovery: []faultRecovery{got}}
	ths, err := assertions.Parse("recovery_time{fault:f}: max<20s")
	if err != nil {
		t.Fatal(err)
	}
	if o := assertions.Evaluate(src, ths)[0]; !o.NoData {
		t.Errorf("recovery_time of an unjudged recovery = %v, want no data", o.Value)
	}

	// A healthy run going on, cut short only by quiet windows at the end
	// of the run, is insufficient traffic too, not "never".
	tail := syntheticSeconds(seconds(30, func(s int) second {
		if s >= 16 {
			return second{}
		}
		return second{n: 10, failing: s == 12, ttft: 50 * time.Millisecond}
	}))
	got = recoveriesOf(judge, tail, faultRec("f", "network.latency", 12, 13))[0]
	if got.recovered || !got.insufficient {
		t.Errorf("quiet tail: recovery = %+v; want insufficient traffic", got)
	}
}

// Through the runner: a kill whose effect (failures) lasts 300 ms, given a
// duration of 2.5 s, reports a recovery_time shorter than that duration
// (it counted the duration before), no time_to_recover, and says it is
// instantaneous.
func TestRunInstantaneousRecovery(t *testing.T) {
	t.Parallel()
	skipShort(t)
	srv := newSSEServer(t)
	kill := newFakeFault(t, "kill", func(on bool) {
		if on {
			srv.failing.Store(true)
			time.AfterFunc(300*time.Millisecond, func() { srv.failing.Store(false) })
		}
	})
	exp := testSpec(srv.URL, 6*time.Second, spec.Fault{Name: "kill", Type: replica.TypeKill, At: spec.Duration(time.Second),
		Duration: spec.Duration(2500 * time.Millisecond), Params: map[string]any{"target": map[string]any{"pid_file": "/nonexistent/pid"}}})
	exp.Thresholds = spec.Thresholds{"recovery_time{fault:kill}": {{Threshold: "max<2500ms"}}}
	var out bytes.Buffer
	o, err := runSpec(context.Background(), exp, Options{RunDir: t.TempDir(), Out: &out, hooks: fakeBuilds(map[string]faults.Fault{"kill": kill})})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	d := o.Doc
	if len(d.Recovery) != 1 {
		t.Fatalf("recovery = %+v, want one record", d.Recovery)
	}
	rc := d.Recovery[0]
	if !rc.Recovered || rc.RecoveryTimeS == nil || !rc.Instantaneous || rc.TimeToRecoverS != nil {
		t.Fatalf("recovery = %+v, want recovered, instantaneous, no time_to_recover\n%s", rc, out.String())
	}
	if rt := *rc.RecoveryTimeS; rt >= 2.5 {
		t.Errorf("recovery_time = %vs, want under the fault's 2.5s duration", rt)
	}
	if d.Verdict != report.VerdictPass {
		t.Errorf("verdict = %s, want pass; thresholds %+v", d.Verdict, d.Thresholds)
	}
}

// slowStopFault is a restart whose Inject returns only once its process
// has exited after a grace, as replica.restart's does: the outage (the
// server failing) begins as Inject begins, and lasts until back after the
// replacement is up, a little after Inject returned.
type slowStopFault struct {
	*fakeFault
	grace, back time.Duration
}

func (f *slowStopFault) Inject(ctx context.Context, log faults.RevertLog) (faults.Undo, error) {
	undo, err := f.fakeFault.Inject(ctx, log) // the signal: the outage begins
	if err != nil {
		return nil, err
	}
	t := time.NewTimer(f.grace)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C: // the process exits after its grace
	}
	time.AfterFunc(f.back, func() { f.apply(false) }) // the replacement serves
	return undo, nil
}

// Through the runner: an instantaneous fault whose Inject takes a while
// (a restart's stop waits out the grace) is injected when its Inject began,
// when the outage began, not when Inject returned: the first second of the
// run's record with failed requests is no earlier than a second before the
// fault's injection, its "injected" event agrees, and its recovery_time
// includes the whole outage, grace included.
func TestRunInstantaneousInjectedAtItsSignal(t *testing.T) {
	t.Parallel()
	skipShort(t)
	srv := newSSEServer(t)
	const grace, back = 3 * time.Second, 300 * time.Millisecond
	f := &slowStopFault{fakeFault: newFakeFault(t, "bounce", func(on bool) { srv.failing.Store(on) }), grace: grace, back: back}
	exp := testSpec(srv.URL, 9*time.Second, spec.Fault{Name: "bounce", Type: replica.TypeRestart, At: spec.Duration(time.Second),
		Duration: spec.Duration(4 * time.Second), Params: map[string]any{"target": map[string]any{"pid_file": "/nonexistent/pid"}}})
	var out bytes.Buffer
	o, err := runSpec(context.Background(), exp, Options{RunDir: t.TempDir(), Out: &out, hooks: fakeBuilds(map[string]faults.Fault{"bounce": f})})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	d := o.Doc
	rec := d.Faults[0]
	if rec.InjectedAtS == nil {
		t.Fatalf("fault record %+v, want injected", rec)
	}
	injected := *rec.InjectedAtS
	firstFailed := -1
	for _, row := range d.Timeseries {
		if row.Failed > 0 {
			firstFailed = row.T
			break
		}
	}
	if firstFailed < 0 {
		t.Fatalf("no second of the run has a failed request:\n%s", out.String())
	}
	// The requests fail from Inject's start; the first of them ends in
	// second firstFailed, so Inject began before firstFailed+1 (a request
	// sent just before may end a little after). Injected at Inject's
	// return it would read grace (3 s) later.
	if injected >= float64(firstFailed)+1.5 {
		t.Errorf("injected at %.3fs, but requests failed from second %d on: the injection is Inject's return, not its signal (grace %v)",
			injected, firstFailed, grace)
	}
	for _, e := range d.Events {
		if e.Source == report.EventSourceFault && e.Kind == "injected" && e.Target == "bounce" && e.AtS != injected {
			t.Errorf("injected event at %.3fs, the fault's record at %.3fs; want the same", e.AtS, injected)
		}
	}
	if len(d.Recovery) != 1 || d.Recovery[0].RecoveryTimeS == nil {
		t.Fatalf("recovery %+v, want one record with a recovery_time\n%s", d.Recovery, out.String())
	}
	// The outage lasts grace+back from the injection; recovery is judged
	// on whole seconds of the record, so allow one.
	if rt := *d.Recovery[0].RecoveryTimeS; rt < (grace + back - time.Second).Seconds() {
		t.Errorf("recovery_time %.3fs, want the outage of %v (grace and restart) inside it", rt, grace+back)
	}
}
