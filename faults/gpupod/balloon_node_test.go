package gpupod_test

import (
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/k8stest"
	"github.com/llmchaos/llmchaos/internal/kube"
	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
)

// TestBalloonWithoutAGPUFailsClearlyOnARealNode: on a real node without a
// GPU (what kwok's nodes, which report 8, cannot show), the balloon pod of
// gpupod.memory_pressure never presses, and the fault says why. Pinned to
// the node by spec.nodeName, a balloon that asks for the device plugin's
// resource is not refused: the kubelet drops from its admission check the
// extended resources its node does not have (nvidia.com/gpu here), so the
// balloon runs without a GPU, as one pinned by NVIDIA_VISIBLE_DEVICES on a
// runc without NVIDIA's runtime does. The node's image is llmchaos without
// -tags cuda, and gpu-balloon ends with exit 2 saying so (a cuda image
// would end with exit 5, no GPU). The fault reports the balloon's last
// words, from Inject (which then deletes it) or, when Inject saw the
// balloon Ready before it ended, through OnHelperExit; Undo deletes it.
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
	node, err := e.core.CoreV1().Nodes().Get(t.Context(), n.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if q, ok := node.Status.Allocatable["nvidia.com/gpu"]; ok && !q.IsZero() {
		t.Fatalf("node %s has %s nvidia.com/gpu", n.Name, q.String())
	}
	for _, tt := range []struct {
		name   string
		params map[string]any
		want   []string
	}{
		{"device plugin resource", map[string]any{"gib": 1},
			[]string{"ended: Failed", "exit 2", "built without the cuda balloon backend"}},
		{"visible devices", map[string]any{"gib": 1, "visible_devices": "0"},
			[]string{"ended: Failed", "exit 2", "built without the cuda balloon backend"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := map[string]any{"image": n.Image, "start_timeout": "90s"}
			for k, v := range tt.params {
				p[k] = v
			}
			exited := make(chan error, 1)
			f := e.build(t, p, faults.BuildEnv{OnHelperExit: func(err error) { exited <- err }})
			// The balloon has no readiness probe: Inject may see it
			// Ready (its process started) before it ends, and succeed;
			// its end then reaches OnHelperExit.
			undo, err := f.Inject(t.Context(), faults.NopLog{})
			if err == nil {
				select {
				case err = <-exited:
				case <-time.After(time.Minute):
					t.Error("Inject succeeded and no balloon ended within a minute on a node without a GPU")
				}
				if uerr := undo(t.Context()); uerr != nil {
					t.Error(uerr)
				}
				t.Logf("Inject succeeded; OnHelperExit: %v", err)
			} else {
				t.Logf("Inject: %v", err)
			}
			for _, w := range tt.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("the balloon's end (%v) does not say %q", err, w)
				}
			}
			if b := e.balloons(t); len(b) != 0 {
				t.Errorf("balloon %s left behind", b[0].Name)
			}
		})
	}
}
