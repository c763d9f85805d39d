package spec

import (
	"slices"
	"testing"
)

// target.sim.migrate takes the router's modes, needs two replicas, and
// makes the router the target's one endpoint.
func TestSimMigrate(t *testing.T) {
	doc := func(sim string) string {
		return `apiVersion: llmchaos/v1
kind: Experiment
metadata: {name: migrate}
target: {sim: ` + sim + `}
workload: {preset: chat, rate: 5, duration: 30s}
`
	}
	for _, tt := range []struct {
		sim  string
		want []string
	}{
		{"{replicas: 2, migrate: clean}", nil},
		{"{replicas: 3, migrate: duplicate}", nil},
		{"{replicas: 1, migrate: drop}", []string{"t.yaml:4:38: target.sim.migrate: a stream migrates to another replica: want replicas: 2 or more"}},
		{"{replicas: 2, migrate: teleport}", []string{`t.yaml:4:38: target.sim.migrate: "teleport": want clean, duplicate or drop`}},
	} {
		if got := problemLines(t, doc(tt.sim)); !slices.Equal(got, tt.want) {
			t.Errorf("%s: got %q, want %q", tt.sim, got, tt.want)
		}
	}
	if n := (SimTarget{Replicas: 3, Migrate: "clean"}).EndpointCount(); n != 1 {
		t.Errorf("endpoints with a router: %d, want 1", n)
	}
	if n := (SimTarget{Replicas: 3}).EndpointCount(); n != 3 {
		t.Errorf("endpoints without a router: %d, want 3", n)
	}
}
