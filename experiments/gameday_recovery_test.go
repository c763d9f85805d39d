package experiments

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/testutil"
	"github.com/llmchaos/llmchaos/report"
)

// TestGameDayManualRevertRecovery: a fault of the file stepped in by hand
// and reverted by hand long before its planned end is measured from its
// own revert, its recovery found before the next fault (injected by hand
// later) and never across it, and the faults table shows who stepped it
// in and who reverted it instead of offsets from the plan.
func TestGameDayManualRevertRecovery(t *testing.T) {
	t.Parallel()
	skipShort(t)
	srv := newSSEServer(t)
	exp := testSpec(srv.URL, 30*time.Second, httpErrorFault("planned", 2*time.Second, 20*time.Second))
	live := NewControl(ControlOptions{MaxDuration: time.Minute})
	var out testutil.SyncBuffer
	type result struct {
		o   *Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		o, err := runSpec(context.Background(), exp, Options{RunDir: t.TempDir(), Out: &out, Live: live})
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
	rec := live.Recorder()
	failing := func() bool {
		now := live.Now()
		return rec.Window(now-time.Second, now).Counts.Failed > 0
	}
	if err := live.StepTimeline("dave"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "failing through the proxy", failing)
	if err := live.Revert("planned", "bob"); err != nil {
		t.Fatal(err)
	}
	// Recovery needs the 1 s window held 1 s: wait for the live check to
	// see it, then inject the next fault.
	waitFor(t, 20*time.Second, "planned seen recovered", func() bool {
		return strings.Contains(out.String(), "recovered planned")
	})
	if _, err := live.Inject(ManualFault{Name: "next", Type: "http.error", Params: map[string]any{"status": 503}}, "alice"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "failing again", failing)
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
	d := r.o.Doc
	faultsByName := map[string]report.FaultRecord{}
	for _, f := range d.Faults {
		faultsByName[f.Name] = f
	}
	planned, next := faultsByName["planned"], faultsByName["next"]
	if planned.RevertedBy != "bob" || planned.RevertedAtS == nil || next.InjectedAtS == nil {
		t.Fatalf("records %+v and %+v, want planned reverted by bob, next injected", planned, next)
	}
	var rc report.RecoveryRecord
	for _, x := range d.Recovery {
		if x.Fault == "planned" {
			rc = x
		}
	}
	if !rc.Recovered || rc.TimeToRecoverS == nil || rc.RecoveryTimeS == nil {
		t.Fatalf("planned's recovery %+v, want recovered, measured from its revert\n%s", rc, out.String())
	}
	recoveredAt := *planned.InjectedAtS + *rc.RecoveryTimeS
	if got := recoveredAt - *planned.RevertedAtS; got < 0 || math.Abs(got-*rc.TimeToRecoverS) > 1e-6 {
		t.Errorf("recovered %.3fs after the revert by hand, time_to_recover %.3fs; want them equal and not negative", got, *rc.TimeToRecoverS)
	}
	if recoveredAt >= *next.InjectedAtS {
		t.Errorf("planned recovered at %.3fs, not before the next fault at %.3fs", recoveredAt, *next.InjectedAtS)
	}
	var txt strings.Builder
	if err := report.WriteText(&txt, d); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(txt.String(), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "planned ") && strings.Contains(line, "http.error") {
			if !strings.Contains(line, "(by dave)") || !strings.Contains(line, "(by bob)") || strings.Contains(line, "(-") {
				t.Errorf("faults table row %q: want the step by dave and the revert by bob, no negative offset", line)
			}
		}
	}
}
