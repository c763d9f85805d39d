package experiments

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/testutil"
	"github.com/llmchaos/llmchaos/report"
)

// waitFor polls cond every 20 ms until it holds, failing the test after
// limit.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatalf("not %s within %v", what, limit)
		case <-tick.C:
		}
	}
}

// TestLiveRun drives a live run (a game day) through its Control against a real
// server, through in-process fault proxies: a fault injected by hand acts
// and is reverted by hand, the blast radius refuses a second one, the
// load pauses and changes rate, the file's timeline steps, a note is
// written, and the end writes the record with who did what.
func TestLiveRun(t *testing.T) {
	t.Parallel()
	skipShort(t)
	srv := newSSEServer(t)
	exp := testSpec(srv.URL, 10*time.Second, httpErrorFault("planned", 5*time.Second, 700*time.Millisecond),
		httpErrorFault("played", 6*time.Second, 300*time.Millisecond))
	exp.BlastRadius = &spec.BlastRadius{MaxConcurrentFaults: 1}
	exp.SteadyState = []spec.Probe{{Threshold: "error_rate: rate<0.05"}}
	dir := t.TempDir()
	live := NewControl(ControlOptions{MaxDuration: time.Minute})
	var out testutil.SyncBuffer
	type result struct {
		o   *Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		o, err := runSpec(context.Background(), exp, Options{RunDir: dir, Out: &out, Live: live})
		done <- result{o, err}
	}()
	t.Cleanup(func() {
		_ = live.End("cleanup")
		<-live.Done()
	})
	select {
	case <-live.Ready():
	case r := <-done:
		t.Fatalf("Run returned before the load started: %v\n%s", r.err, out.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("load not started within 30s:\n%s", out.String())
	}
	waitFor(t, 10*time.Second, "steady", func() bool { return live.Status().GateOpen })

	a, err := live.Inject(ManualFault{Type: "http.error", Params: map[string]any{"status": 503}}, "alice")
	if err != nil {
		t.Fatalf("Inject: %v\n%s", err, out.String())
	}
	if a.Name != "error-1" || a.By != "alice" || a.RevertAtS != 0 {
		t.Errorf("injected %+v, want error-1 by alice, until reverted", a)
	}
	if act := live.Active(); len(act) != 1 || act[0].Name != "error-1" {
		t.Errorf("active %+v, want error-1", act)
	}
	rec := live.Recorder()
	waitFor(t, 10*time.Second, "failing through the proxy", func() bool {
		now := live.Now()
		return rec.Window(now-time.Second, now).Counts.Failed > 0
	})
	_, err = live.Inject(ManualFault{Name: "second", Type: "network.latency", Params: map[string]any{"latency": "10ms"}}, "alice")
	if re, ok := errors.AsType[*RefusedError](err); !ok {
		t.Errorf("second fault: %v, want refused by max_concurrent_faults", err)
	} else if !bytes.Contains([]byte(re.Reason), []byte("max_concurrent_faults (1)")) {
		t.Errorf("refusal %q, want it to name max_concurrent_faults", re.Reason)
	}
	if _, err := live.Inject(ManualFault{Type: "network.latency", Params: map[string]any{"latency": "soon"}}, "alice"); err == nil {
		t.Error("a bad param was accepted")
	} else if _, ok := errors.AsType[*InvalidFaultError](err); !ok {
		t.Errorf("bad param: %v, want an *InvalidFaultError", err)
	}
	if err := live.Revert("error-1", "bob"); err != nil {
		t.Fatal(err)
	}
	if err := live.Revert("error-1", "bob"); !errors.Is(err, ErrNoSuchFault) {
		t.Errorf("second revert: %v, want ErrNoSuchFault", err)
	}
	if act := live.Active(); len(act) != 0 {
		t.Errorf("active after revert: %+v", act)
	}
	if _, err := live.Note("p99 doubled, hypothesis: retries", "carol"); err != nil {
		t.Fatal(err)
	}
	paused := true
	if st, err := live.SetLoad(LoadChange{Paused: &paused}, "dave"); err != nil || !st.Paused {
		t.Fatalf("pause: %+v %v", st, err)
	}
	rate, resume := 20.0, false
	if st, err := live.SetLoad(LoadChange{Rate: &rate, Paused: &resume}, "dave"); err != nil || st.Paused || st.Rate != 20 {
		t.Fatalf("resume at 20: %+v %v", st, err)
	}
	batch := "batch"
	if st, err := live.SetLoad(LoadChange{Preset: &batch}, "dave"); err != nil || st.Preset != "batch" {
		t.Fatalf("preset batch: %+v %v", st, err)
	}
	nope := "nope"
	if _, err := live.SetLoad(LoadChange{Preset: &nope}, "dave"); err == nil {
		t.Error("an unknown preset was accepted")
	}
	users := 3
	if _, err := live.SetLoad(LoadChange{Users: &users}, "dave"); err == nil {
		t.Error("users accepted for an open loop")
	}
	if err := live.StepTimeline("dave"); err != nil {
		t.Fatal(err)
	}
	if tl := live.Timeline(); tl.Next != 1 || tl.Steps[0].State != StepInjected || tl.Steps[0].By != "dave" || tl.OffsetS != 5 {
		t.Errorf("timeline after a step: %+v", tl)
	}
	waitFor(t, 10*time.Second, "the step reverted after its 700ms", func() bool { return len(live.Active()) == 0 })
	// Play from +5s, pause at once: nothing more is injected; play again:
	// the next step (at +6s) comes about a second later, keeping the file's
	// spacing.
	if err := live.PlayTimeline("erin"); err != nil {
		t.Fatal(err)
	}
	if err := live.PauseTimeline("erin"); err != nil {
		t.Fatal(err)
	}
	if tl := live.Timeline(); tl.Playing || tl.OffsetS < 5 || tl.OffsetS > 5.5 || tl.Steps[1].State != StepPending {
		t.Errorf("timeline paused: %+v", tl)
	}
	played := time.Now()
	if err := live.PlayTimeline("erin"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the played step injected", func() bool { return live.Timeline().Steps[1].State == StepInjected })
	if d := time.Since(played); d < 700*time.Millisecond {
		t.Errorf("the step 1s further in the file came %v after play", d)
	}
	if tl := live.Timeline(); tl.Playing || tl.Steps[1].By != TimelineHolder {
		t.Errorf("timeline at its end: %+v", tl)
	}
	if err := live.StepTimeline("dave"); err == nil {
		t.Error("a step past the end was accepted")
	}
	waitFor(t, 10*time.Second, "the played step reverted after its 300ms", func() bool { return len(live.Active()) == 0 })
	if err := live.End("erin"); err != nil {
		t.Fatal(err)
	}
	var r result
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("Run did not return within 30s of the end:\n%s", out.String())
	}
	if r.err != nil {
		t.Fatalf("Run: %v\n%s", r.err, out.String())
	}
	if _, err := live.Inject(ManualFault{Type: "http.error"}, "late"); !errors.Is(err, ErrLiveEnded) {
		t.Errorf("inject after the end: %v, want ErrLiveEnded", err)
	}
	d := r.o.Doc
	byName := map[string]report.FaultRecord{}
	for _, f := range d.Faults {
		byName[f.Name] = f
	}
	if f := byName["error-1"]; f.By != "alice" || f.InjectedAtS == nil || f.RevertedAtS == nil || !f.RevertOK {
		t.Errorf("error-1 record %+v, want injected by alice and reverted", f)
	}
	if f := byName["planned"]; f.By != "dave" || f.InjectedAtS == nil || f.RevertedAtS == nil {
		t.Errorf("planned record %+v, want injected and reverted", f)
	} else if got := *f.RevertedAtS - *f.InjectedAtS; got < 0.6 || got > 3 {
		t.Errorf("planned stayed %.2fs, want its 700ms", got)
	}
	want := []string{"fault/injected/error-1/alice", "gameday/refused//alice", "fault/reverted/error-1/bob", "gameday/note//carol",
		"gameday/load//dave", "gameday/timeline_step/planned/dave", "fault/injected/planned/dave", "fault/reverted/planned/",
		"gameday/timeline_play/played/erin", "gameday/timeline_pause/played/erin", "fault/injected/played/timeline", "gameday/end//erin"}
	var got []string
	for _, e := range d.Events {
		if e.By != "" || e.Source == report.EventSourceFault {
			got = append(got, e.Source+"/"+e.Kind+"/"+e.Target+"/"+e.By)
		}
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("events lack %s: %q", w, got)
		}
	}
	var presetEvent bool
	for _, e := range d.Events {
		presetEvent = presetEvent || (e.Kind == "load" && e.Detail == "preset batch" && e.By == "dave")
	}
	if !presetEvent {
		t.Errorf("no event of the preset switch: %+v", d.Events)
	}
	// The results keep the experiment's class whatever the preset.
	for _, ts := range d.Histograms.ByTags {
		if c := ts.Tags["class"]; c != "" && c != "custom" {
			t.Errorf("results of class %q: want the experiment's (custom) throughout", c)
		}
	}
	var faultPhase bool
	for _, ph := range d.Phases {
		faultPhase = faultPhase || (ph.Name == PhaseFault && ph.Fault == "error-1")
	}
	if !faultPhase {
		t.Errorf("phases %+v lack error-1's", d.Phases)
	}
	if pend, err := faults.Pending(dir); err != nil || len(pend) != 0 {
		t.Errorf("journal pending %+v %v", pend, err)
	}
}
