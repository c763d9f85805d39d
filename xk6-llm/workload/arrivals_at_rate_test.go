package workload

import (
	"testing"
	"time"
)

// A checked ramp or stages made a rate (a game day's load) keeps its
// defaults and checks: AtRate checks only the rate and duration it sets,
// keyed by their fields, and returns a config the engine takes as
// checked; an unchecked one is checked whole.
func TestAtRateChecksOnlyTheRate(t *testing.T) {
	ramp, ps := ArrivalConfig{Ramp: Ramp{From: 40, To: 10}, Duration: time.Minute, MaxInFlight: 7}.WithDefaults().Checked()
	if len(ps) > 0 {
		t.Fatal(ps.Err())
	}
	var n int
	restore := SetValidateHook(func() { n++ })
	defer restore()

	got, ps := ramp.AtRate(40, time.Hour)
	if len(ps) > 0 || n != 0 || !got.checked {
		t.Fatalf("AtRate(40, 1h) of a checked ramp: problems %v, %d validations, checked %v; want none, 0, true", ps, n, got.checked)
	}
	want := ArrivalConfig{Rate: 40, Arrival: ArrivalPoisson, Burstiness: 1, Duration: time.Hour, MaxInFlight: 7,
		OnSaturation: SaturationWait, checked: true}
	if got.Rate != want.Rate || got.Arrival != want.Arrival || got.Burstiness != want.Burstiness ||
		got.Duration != want.Duration || got.MaxInFlight != want.MaxInFlight || got.OnSaturation != want.OnSaturation {
		t.Errorf("AtRate(40, 1h) = %+v, want %+v", got, want)
	}
	if err := got.Validate(); err != nil || n != 0 {
		t.Errorf("Validate of AtRate's config: %v after %d validations, want nil without validating again", err, n)
	}

	for _, tt := range []struct {
		rate float64
		d    time.Duration
		want []string
	}{
		{0, time.Hour, []string{string(FieldRate)}},
		{MaxRate + 1, time.Hour, []string{string(FieldRate)}},
		{10, 0, []string{string(FieldDuration)}},
	} {
		got, ps := ramp.AtRate(tt.rate, tt.d)
		var paths []string
		for _, p := range ps {
			paths = append(paths, string(p.Path))
		}
		if len(paths) != len(tt.want) || paths[0] != tt.want[0] || got.checked {
			t.Errorf("AtRate(%v, %v): problems at %v (checked %v), want at %v, unchecked", tt.rate, tt.d, paths, got.checked, tt.want)
		}
	}
	if n != 0 {
		t.Errorf("%d whole validations of a checked ramp's rate, want 0", n)
	}

	// Unchecked: checked whole.
	if _, ps := (ArrivalConfig{Ramp: Ramp{From: 1, To: 2}, Duration: time.Minute}).AtRate(2, time.Hour); n != 1 || len(ps) == 0 {
		t.Errorf("AtRate of an unchecked ramp without defaults: %d validations, problems %v; want 1, the arrival kind's", n, ps)
	}
}
