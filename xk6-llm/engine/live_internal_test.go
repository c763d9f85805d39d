package engine

import (
	"testing"
	"time"
)

// TestLiveLoadKeepsTheDueTimeOfALateArrival: an arrival whose operational
// time was reached before a change (a pause, a new rate) is due when it
// was reached, at the rate of then, however late the pacer asks; one not
// reached yet waits for the resume and then follows the new rate.
func TestLiveLoadKeepsTheDueTimeOfALateArrival(t *testing.T) {
	t.Parallel()
	var now time.Duration
	l := NewLiveLoad(100, 0)
	l.bind(func() time.Duration { return now })
	// 100/s from 0: u 0.5 (operational seconds of a unit-rate process,
	// i.e. the 50th arrival) is due at 5 ms.
	if at, ok, _ := l.at(0.5); !ok || at != 5*time.Millisecond {
		t.Fatalf("at(0.5) = %v, %v; want 5ms", at, ok)
	}
	now = time.Second // Λ = 100
	l.Pause()
	now = 1500 * time.Millisecond
	if err := l.SetRate(20); err != nil {
		t.Fatal(err)
	}
	// The pacer ran late: arrivals 98 to 99.99 were due before the pause.
	for _, c := range []struct {
		u    float64
		want time.Duration
	}{{98, 980 * time.Millisecond}, {99.5, 995 * time.Millisecond}} {
		if at, ok, _ := l.at(c.u); !ok || at != c.want {
			t.Errorf("while paused, at(%v) = %v, %v; want %v, due before the pause", c.u, at, ok, c.want)
		}
	}
	if _, ok, _ := l.at(100.5); ok {
		t.Error("while paused, an arrival not reached yet is due; want it to wait")
	}
	l.Resume()
	if at, ok, _ := l.at(101); !ok || at != 1550*time.Millisecond {
		t.Errorf("after the resume at 1.5 s at 20/s, at(101) = %v, %v; want 1.55s", at, ok)
	}
	if len(l.past) != 0 {
		t.Errorf("%d spans kept once the pacer passed them, want none", len(l.past))
	}
}
