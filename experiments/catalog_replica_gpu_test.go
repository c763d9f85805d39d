package experiments

import (
	"github.com/llmchaos/llmchaos/experiments/spec"
	"path/filepath"
	"slices"
	"testing"
)

// TestCatalogReplicaAndGPUExperiments checks that the replica and GPU experiments of the
// catalog are there, load, and hold what their stories measure
// (TestCatalogIsValid validates every file of the folder).
func TestCatalogReplicaAndGPUExperiments(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file      string
		faultType string
		threshold string
	}{
		{"replica-kill.yaml", "replica.kill", "recovery_time{fault:kill-one}"},
		{"replica-pause.yaml", "replica.pause", "recovery_time{fault:freeze-one}"},
		{"gpu-memory-pressure.yaml", "gpu.memory_pressure", "recovery_time{fault:co-tenant}"},
		{"gpu-oom.yaml", "gpu.memory_pressure", "oom_recovery_time{fault:squeeze}"},
		{"docker-replica-kill.yaml", "replica.kill", "recovery_time{fault:kill-container}"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			exp, warns, err := spec.Load(filepath.Join("catalog", tt.file))
			if err != nil {
				t.Fatalf("invalid:\n%v", err)
			}
			if len(warns) > 0 {
				t.Errorf("warnings:\n%v", warns)
			}
			var types []string
			for _, f := range exp.Faults {
				types = append(types, f.Type)
			}
			if !slices.Contains(types, tt.faultType) {
				t.Errorf("fault types %v, want %s", types, tt.faultType)
			}
			if _, ok := exp.Thresholds[tt.threshold]; !ok {
				t.Errorf("thresholds lack %s", tt.threshold)
			}
			if _, ok := exp.Thresholds["requests_lost"]; !ok {
				t.Errorf("thresholds lack requests_lost")
			}
		})
	}
}
