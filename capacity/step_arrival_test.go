package capacity

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// A search's config carries the open loop's arrival defaults once it is
// resolved (WithDefaults), so that its record and its steps read them,
// and the arrival settings are checked once for the search, keyed by
// their field.
func TestConfigResolvesTheArrival(t *testing.T) {
	base := Config{
		Targets: []string{"http://127.0.0.1:9/v1"}, Model: "m",
		Workload: workload.Config{InputTokens: workload.FixedDist(16), OutputTokens: workload.FixedDist(8)}.WithDefaults(),
		SLOs:     mustParse(t, "ttft: p(99)<500ms"),
		Arrival:  workload.ArrivalConfig{MaxInFlight: 5},
	}
	a := base.WithDefaults().Arrival
	if a.Arrival != workload.ArrivalPoisson || a.Burstiness != 1 || a.OnSaturation != workload.SaturationWait || a.MaxInFlight != 5 || a.Mode() != "" {
		t.Errorf("resolved arrival %+v, want poisson, burstiness 1, wait, max in flight 5, and no load of its own", a)
	}
	if rec := newResult(base.WithDefaults()).Workload; rec.Arrival != string(workload.ArrivalPoisson) || rec.Burstiness != 1 {
		t.Errorf("recorded arrival %q burstiness %v, want poisson 1", rec.Arrival, rec.Burstiness)
	}
	bad := base
	bad.Arrival = workload.ArrivalConfig{Arrival: workload.ArrivalConstant, Burstiness: 3}
	if err := bad.WithDefaults().Validate(); err == nil || !strings.Contains(err.Error(), "arrival: burstiness 3") {
		t.Errorf("Validate of constant arrivals with burstiness 3: %v, want the burstiness named", err)
	}
}

// A search validates its arrival config once, not once per step: each
// step changes only its load and length, and only those are checked.
func TestSearchChecksTheArrivalOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two steps for seconds; skipped under -short")
	}
	target := engineLike(t, 8, 20*time.Millisecond, 10*time.Millisecond)
	var n int
	restore := workload.SetValidateHook(func() { n++ })
	defer restore()
	res, err := Run(context.Background(), Config{
		Targets: []string{target}, Model: "m", NoPreflight: true,
		Workload: workload.Config{API: workload.APIChat, InputTokens: workload.FixedDist(16), OutputTokens: workload.FixedDist(3)}.WithDefaults(),
		SLOs:     mustParse(t, "ttft: p(90)<5s"), Seed: 1,
		Search: SearchConfig{Start: 5, Max: 10, MaxSteps: 2},
		Length: StepLength{Requests: 5, Min: 500 * time.Millisecond, Max: 500 * time.Millisecond, Short: 500 * time.Millisecond},
		Warmup: 100 * time.Millisecond, Settle: 50 * time.Millisecond, Grace: 2 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Steps) != 2 {
		t.Fatalf("%d steps, want 2 (max steps)", len(res.Steps))
	}
	if n != 1 {
		t.Errorf("the arrival config was validated %d times over %d steps, want once", n, len(res.Steps))
	}
}
