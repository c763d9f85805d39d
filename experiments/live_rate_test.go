package experiments

import (
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// A game day runs a ramp or stages at their highest rate, changed live,
// with the arrival settings the experiment resolved to: it neither applies
// their defaults again nor validates the whole arrival config again (the
// resolution did both), and the load it starts takes the config as
// checked.
func TestGameDayRunsTheHighestRateAsResolved(t *testing.T) {
	for _, tt := range []struct {
		name, workload string
		want           float64
	}{
		{"ramp down", "{preset: chat, ramp: {from: 40, to: 10}, duration: 1m, arrival: gamma, burstiness: 0.5, max_in_flight: 9}", 40},
		{"ramp up", "{preset: chat, ramp: {from: 5, to: 30}, duration: 1m, arrival: gamma, burstiness: 0.5, max_in_flight: 9}", 30},
		{"stages down from the start rate", "{preset: chat, start_rate: 25, stages: [{duration: 30s, target: 12}, {duration: 30s, target: 0}], " +
			"arrival: gamma, burstiness: 0.5, max_in_flight: 9}", 25},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := "apiVersion: llmchaos/v1\nkind: Experiment\nmetadata: {name: t}\ntarget: {sim: {replicas: 1}}\nworkload: " + tt.workload + "\n"
			s, _, err := spec.Parse("t.yaml", []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			p, err := planSpec(s, "t.yaml", nil)
			if err != nil {
				t.Fatal(err)
			}
			var n int
			restore := workload.SetValidateHook(func() { n++ })
			defer restore()
			if err := p.makeLive(NewControl(ControlOptions{MaxDuration: time.Hour})); err != nil {
				t.Fatal(err)
			}
			a := p.ac
			if a.Mode() != workload.ModeRate || a.Rate != tt.want || a.Duration != time.Hour {
				t.Errorf("live load %s at %v for %v, want rate at %v for 1h", a.Mode(), a.Rate, a.Duration, tt.want)
			}
			if a.Arrival != workload.ArrivalGamma || a.Burstiness != 0.5 || a.MaxInFlight != 9 || a.OnSaturation != workload.SaturationWait {
				t.Errorf("live load arrival %q burstiness %v max in flight %d on saturation %q, want the resolved gamma, 0.5, 9, wait",
					a.Arrival, a.Burstiness, a.MaxInFlight, a.OnSaturation)
			}
			if err := a.Validate(); err != nil {
				t.Fatal(err)
			}
			if n != 0 {
				t.Errorf("the arrival config was validated %d times more, want none: the resolution checked it", n)
			}
		})
	}
}
