package chaosmesh_test

import (
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/faults/chaosmesh"
	"github.com/llmchaos/llmchaos/faults/chaosmesh/chaosmeshtest"
)

// TestSaysWhenChaosMeshIsNotInstalled: in a cluster without Chaos Mesh's
// CRDs a fault fails before it journals or changes anything, saying that
// Chaos Mesh is not installed.
func TestSaysWhenChaosMeshIsNotInstalled(t *testing.T) {
	e := newEnv(t, true)
	chaosmeshtest.Uninstall(t, e.c.Config())
	t.Cleanup(func() { chaosmeshtest.Install(t, e.c.Config()) })
	e.pods(t, "vllm", 1, nil)
	for _, ft := range chaosmesh.Types() {
		t.Run(ft.Name, func(t *testing.T) {
			params := map[string]any{"selector": "app=vllm", "latency": "10ms", "loss": 10, "rate": "1mbps",
				"container_names": []any{"vllm"}, "size": "1GB"}
			for k := range params {
				if k != "selector" && !hasParam(ft, k) {
					delete(params, k)
				}
			}
			f := e.build(t, ft.Name, "x", params, faults.BuildEnv{})
			log := &checkingLog{t: t, dyn: e.dyn}
			_, err := f.Inject(t.Context(), log)
			if !errorsIs(err, chaosmesh.ErrNotInstalled) {
				t.Fatalf("Inject: %v, want ErrNotInstalled", err)
			}
			if !strings.Contains(err.Error(), "Chaos Mesh is not installed in this cluster: ") {
				t.Errorf("error: %v", err)
			}
			if len(log.specs) != 0 {
				t.Errorf("journaled %v", log.specs)
			}
		})
	}
}

func hasParam(ft faults.Type, key string) bool {
	for _, p := range ft.Params() {
		if p.Name == key {
			return true
		}
	}
	return false
}
