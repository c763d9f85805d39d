package gpupod_test

import (
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/k8stest"
	"github.com/llmchaos/llmchaos/internal/kube"
)

// TestBalloonWithoutAGPUFailsClearlyOnARealNode: on a real node without a
// GPU (what kwok's nodes, which report 8, cannot show), the balloon pod of
// gpupod.memory_pressure never presses: asking for the device plugin's
// resource, the kubelet refuses it at admission (OutOfnvidia.com/gpu);
// given a device by NVIDIA_VISIBLE_DEVICES instead, it runs and gpu-balloon
// finds no GPU (exit 5). Either way Inject fails saying why, and deletes
// the balloon it made.
func TestBalloonWithoutAGPUFailsClearlyOnARealNode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs pods on a real node; skipped under -short")
	}
	n := k8stest.StartNode(t)
	ns := n.Namespace(t)
	n.LabelNamespace(t, ns, kube.LabelTarget, "true")
	n.CreateWorkload(t, ns, k8stest.Workload{Name: "vllm", Replicas: 1, Labels: map[string]string{"app": "vllm"},
		Node: n.Name, Container: n.SimContainer()})
	e := &env{c: n.Cluster, ns: ns, core: n.Client(t)}
	for _, tt := range []struct {
		name   string
		params map[string]any
		want   []string
	}{
		{"device plugin resource", map[string]any{"gib": 1},
			[]string{"ended: Failed", "OutOfnvidia.com/gpu", "nvidia.com/gpu"}},
		{"visible devices", map[string]any{"gib": 1, "visible_devices": "0"},
			[]string{"ended: Failed", "exit 5: no GPU in the container"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := map[string]any{"image": n.Image, "start_timeout": "90s"}
			for k, v := range tt.params {
				p[k] = v
			}
			f := e.build(t, p, faults.BuildEnv{})
			undo, err := f.Inject(t.Context(), faults.NopLog{})
			if err == nil {
				_ = undo(t.Context())
				t.Fatal("Inject succeeded on a node without a GPU")
			}
			t.Logf("Inject: %v", err)
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Inject's error lacks %q", w)
				}
			}
			if b := e.balloons(t); len(b) != 0 {
				t.Errorf("balloon %s left behind", b[0].Name)
			}
		})
	}
}
