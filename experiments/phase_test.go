package experiments

import (
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/report"
)

func TestTimelinePhases(t *testing.T) {
	t.Parallel()
	s := time.Second
	tl := newTimeline()
	tl.injected(10*s, "a")
	tl.injected(12*s, "b") // overlaps a: the tag names the one injected last
	tl.reverted(15*s, "b") // a is still in: fault phase of a
	tl.reverted(20*s, "a") // none left: recovery of a
	if tl.recovered(21*s, "b") {
		t.Error("recovered(b) while in a's recovery changed the phase")
	}
	tl.recovered(25*s, "a")
	tl.injected(30*s, "c")
	tl.reverted(35*s, "c") // c never recovers before the end

	got := tl.records(40 * s)
	want := []report.PhaseRecord{
		{Name: PhaseBaseline, StartS: 0, EndS: 10},
		{Name: PhaseFault, Fault: "a", StartS: 10, EndS: 12},
		{Name: PhaseFault, Fault: "b", StartS: 12, EndS: 15},
		{Name: PhaseFault, Fault: "a", StartS: 15, EndS: 20},
		{Name: PhaseRecovery, Fault: "a", StartS: 20, EndS: 25},
		{Name: PhaseAfter, StartS: 25, EndS: 30},
		{Name: PhaseFault, Fault: "c", StartS: 30, EndS: 35},
		{Name: PhaseRecovery, Fault: "c", StartS: 35, EndS: 40},
	}
	if len(got) != len(want) {
		t.Fatalf("records = %+v\nwant %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("record %d = %+v, want %+v", i, got[i], want[i])
		}
	}

	for _, tc := range []struct {
		at           time.Duration
		phase, fault string
	}{
		{0, PhaseBaseline, ""},
		{9999 * time.Millisecond, PhaseBaseline, ""},
		{10 * s, PhaseFault, "a"},
		{13 * s, PhaseFault, "b"},
		{17 * s, PhaseFault, "a"},
		{22 * s, PhaseRecovery, "a"},
		{27 * s, PhaseAfter, ""},
		{33 * s, PhaseFault, "c"},
		{99 * s, PhaseRecovery, "c"},
	} {
		if p, f := tl.at(tc.at); p != tc.phase || f != tc.fault {
			t.Errorf("at(%v) = %s/%s, want %s/%s", tc.at, p, f, tc.phase, tc.fault)
		}
	}

	// An answer counts in the last fault window it streamed in: one that
	// ended in a recovery or after, but was under way while a fault was in
	// force, counts in that fault.
	for _, tc := range []struct {
		from, to     time.Duration
		phase, fault string
	}{
		{1 * s, 2 * s, PhaseBaseline, ""},
		{9 * s, 11 * s, PhaseFault, "a"},  // struck mid-stream
		{11 * s, 14 * s, PhaseFault, "b"}, // ended in b's window
		{14 * s, 21 * s, PhaseFault, "a"}, // a reverted under it: a, not the recovery
		{19 * s, 27 * s, PhaseFault, "a"}, // from a's window into after
		{21 * s, 24 * s, PhaseRecovery, "a"},
		{24 * s, 27 * s, PhaseAfter, ""},
		{29 * s, 99 * s, PhaseFault, "c"},
		{36 * s, 38 * s, PhaseRecovery, "c"},
	} {
		if p, f := tl.shaped(tc.from, tc.to); p != tc.phase || f != tc.fault {
			t.Errorf("shaped(%v, %v) = %s/%s, want %s/%s", tc.from, tc.to, p, f, tc.phase, tc.fault)
		}
	}

	if p, f, ok := tl.within(21*s, 24*s); !ok || p != PhaseRecovery || f != "a" {
		t.Errorf("within(21s, 24s) = %s %s %v, want recovery a true", p, f, ok)
	}
	if _, _, ok := tl.within(9*s, 11*s); ok {
		t.Error("within(9s, 11s) spans a phase change but says one phase holds")
	}
}

func TestTimelineRecordsClipToEnd(t *testing.T) {
	t.Parallel()
	tl := newTimeline()
	tl.injected(2*time.Second, "x")
	got := tl.records(time.Second) // the run ended before the fault
	if len(got) != 1 || got[0] != (report.PhaseRecord{Name: PhaseBaseline, StartS: 0, EndS: 1}) {
		t.Errorf("records = %+v, want baseline [0, 1)", got)
	}
}

// A fault whose Inject fails gives the run back the phase it had: a fault
// phase only as long as the attempt, never a recovery phase.
func TestTimelineInjectFailed(t *testing.T) {
	t.Parallel()
	s := time.Second
	tl := newTimeline()
	tl.injected(10*s, "a")
	tl.reverted(12*s, "a") // recovery of a
	prev := tl.injecting(13*s, "b")
	if p, f := tl.at(13 * s); p != PhaseFault || f != "b" {
		t.Errorf("during b's Inject: %s/%s, want fault/b (requests sent then may meet it)", p, f)
	}
	tl.injectFailed(14*s, "b", prev)
	if p, f := tl.at(14 * s); p != PhaseRecovery || f != "a" {
		t.Errorf("after b failed: %s/%s, want recovery/a back", p, f)
	}
	// With another fault still in, its fault phase comes back.
	tl.injected(20*s, "c")
	prev = tl.injecting(21*s, "d")
	tl.injectFailed(22*s, "d", prev)
	if p, f := tl.at(22 * s); p != PhaseFault || f != "c" {
		t.Errorf("after d failed with c in: %s/%s, want fault/c", p, f)
	}
	tl.reverted(25*s, "c")
	if p, f := tl.at(25 * s); p != PhaseRecovery || f != "c" {
		t.Errorf("after c reverted: %s/%s, want recovery/c (d is not active)", p, f)
	}
}
