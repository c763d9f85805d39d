package spec

import (
	"testing"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/faults/replica"
)

// A resolved fault's params carry the type's defaults, filled in after
// what the target gives: the runner describes and watches the replicas
// from them and applies no default of its own.
func TestResolvedReplicaParamsCarryTheDefaults(t *testing.T) {
	t.Parallel()
	src := edit(8, "  - {name: kill, type: replica.kill, at: 10s, duration: 10s, params: {target: {cmdline: vllm}}}\n"+
		"  - {name: sim, type: replica.kill, at: 30s, duration: 10s}")
	s, _, err := Parse("t.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	x, err := Resolve(s, "")
	if err != nil {
		t.Fatal(err)
	}
	type resolvedReplica interface {
		Targets() *replica.TargetParams
		Selection() faults.Selection
	}
	sim := &SimEnv{StateFile: "/run/state.json"}
	for _, tt := range []struct {
		fault       int
		env         TargetEnv
		wantDriver  string
		wantMatch   string
		wantState   string
		wantSelMode faults.SelectMode
	}{
		{fault: 0, env: s.EnvOf(nil), wantDriver: replica.DriverProcess, wantMatch: replica.MatchExe, wantSelMode: faults.SelectOne},
		{fault: 0, env: s.EnvOf(sim), wantDriver: replica.DriverProcess, wantMatch: replica.MatchExe, wantSelMode: faults.SelectOne},
		// The simulator's state file first, then the defaults: a target
		// left out is the simulator's replicas.
		{fault: 1, env: s.EnvOf(sim), wantDriver: replica.DriverProcess, wantState: sim.StateFile, wantSelMode: faults.SelectOne},
		{fault: 1, env: s.EnvOf(nil), wantDriver: replica.DriverProcess, wantSelMode: faults.SelectOne},
	} {
		p, ok := x.Faults[tt.fault].Params(tt.env).(resolvedReplica)
		if !ok {
			t.Fatalf("fault %d: params %T are not a replica fault's", tt.fault, x.Faults[tt.fault].Params(tt.env))
		}
		tg, sel := *p.Targets(), p.Selection()
		if tg.Driver != tt.wantDriver || tg.Match != tt.wantMatch || tg.StateFile != tt.wantState || sel.Mode != tt.wantSelMode {
			t.Errorf("fault %d, sim %v: got driver %q, match %q, state file %q, select %q; want %q, %q, %q, %q",
				tt.fault, tt.env.Sim != nil, tg.Driver, tg.Match, tg.StateFile, sel.Mode, tt.wantDriver, tt.wantMatch, tt.wantState, tt.wantSelMode)
		}
	}
}
