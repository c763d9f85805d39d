package spec

import (
	"slices"
	"testing"
)

// target.sim.divergence_min_batch applies to divergence batch only, is at
// least 2, and reaches the engine's config.
func TestSimDivergenceMinBatch(t *testing.T) {
	doc := func(sim string) string {
		return `apiVersion: llmchaos/v1
kind: Experiment
metadata: {name: divergence}
target: {sim: ` + sim + `}
workload: {preset: chat, rate: 5, duration: 30s}
`
	}
	for _, tt := range []struct {
		sim  string
		want []string
	}{
		{"{divergence: batch, divergence_min_batch: 16}", nil},
		{"{divergence: preempt, divergence_min_batch: 16}", []string{"t.yaml:4:59: target.sim.divergence_min_batch: applies to divergence: batch only; add divergence: batch"}},
		{"{divergence: batch, divergence_min_batch: 1}", []string{"t.yaml:4:57: target.sim.divergence_min_batch: 1: want 2 or more (a lone sequence is the reference)"}},
	} {
		if got := problemLines(t, doc(tt.sim)); !slices.Equal(got, tt.want) {
			t.Errorf("%s: got %q, want %q", tt.sim, got, tt.want)
		}
	}
	c, err := (SimTarget{Divergence: "batch", DivergenceMinBatch: 16}).EngineConfig()
	if err != nil || c.DivergenceMinBatch != 16 {
		t.Errorf("engine config: min batch %d, %v; want 16", c.DivergenceMinBatch, err)
	}
	if c, _ := (SimTarget{Divergence: "batch"}).EngineConfig(); c.DivergenceMinBatch != 2 {
		t.Errorf("engine config by default: min batch %d, want 2", c.DivergenceMinBatch)
	}
}
