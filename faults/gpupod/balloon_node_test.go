package gpupod_test

import (
	"context"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/faults/gpupod"
	"github.com/llmchaos/llmchaos/internal/k8stest"
	"github.com/llmchaos/llmchaos/internal/kube"
	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
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
// would end with exit 5, no GPU). The balloon is Ready only once it holds
// (its readiness probe), so Inject never succeeds: it fails with the
// balloon's last words and deletes it.
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
			f := e.build(t, p, faults.BuildEnv{OnHelperExit: func(err error) { t.Errorf("OnHelperExit(%v): the fault never held", err) }})
			undo, err := f.Inject(t.Context(), faults.NopLog{})
			if err == nil {
				t.Error("Inject succeeded on a node without a GPU: a balloon was Ready before it held any memory")
				if uerr := undo(t.Context()); uerr != nil {
					t.Error(uerr)
				}
			}
			t.Logf("Inject: %v", err)
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

// TestBalloonReadyOnlyWhileHoldingOnARealNode: the balloon pod's
// readiness probe (gpu-balloon is-holding, run by the kubelet in the FROM
// scratch image, as the non-root user, on a read-only root) sees the
// ready file gpu-balloon writes in the pod's emptyDir once it holds. The
// pod is BalloonPod's with gpu-balloon's vGPU backend in place of CUDA
// (the node has no GPU): it becomes Ready, its log saying what it holds;
// one that cannot hold (too little free) ends without ever being Ready.
func TestBalloonReadyOnlyWhileHoldingOnARealNode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs pods on a real node; skipped under -short")
	}
	n := k8stest.StartNode(t)
	ns := n.Namespace(t)
	core := n.Client(t)
	target := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "vllm-0", Namespace: ns}, Spec: corev1.PodSpec{NodeName: n.Name}}
	gib := 1.0
	for _, tt := range []struct {
		name, gib string
		holds     bool
	}{{"holds", "1", true}, {"too-little-free", "9", false}} {
		t.Run(tt.name, func(t *testing.T) {
			pod := gpupod.BalloonPod(gpupod.PressureParams{Image: n.Image, GiB: &gib, Resource: gpupod.DefaultResource}, target, "balloon-"+tt.name, nil)
			c := &pod.Spec.Containers[0]
			ready := c.Args[slices.Index(c.Args, "--ready-file")+1]
			c.Args = []string{"gpu-balloon", "--backend", "vgpu", "--vgpu-dir", path.Dir(ready), "--gpu-memory", "8GiB",
				"--gib", tt.gib, "--ready-file", ready}
			if _, err := core.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = core.CoreV1().Pods(ns).Delete(context.Background(), pod.Name, metav1.DeleteOptions{})
			})
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			wasReady := false
			got, err := kube.WaitPods(ctx, core, ns, "", func(pods []*corev1.Pod) bool {
				for _, p := range pods {
					if p.Name != pod.Name {
						continue
					}
					wasReady = wasReady || kube.PodReady(p)
					return kube.PodReady(p) || p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded
				}
				return false
			})
			if err != nil {
				t.Fatalf("balloon %s neither Ready nor ended: %v", pod.Name, err)
			}
			logs, _ := core.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(t.Context())
			if tt.holds {
				if !wasReady || !strings.Contains(string(logs), "holding 1.0 GiB on vgpu 0") {
					t.Errorf("a balloon that holds: ready %v, log:\n%s", wasReady, logs)
				}
				return
			}
			phase := corev1.PodPhase("")
			for _, p := range got {
				if p.Name == pod.Name {
					phase = p.Status.Phase
				}
			}
			if wasReady || phase != corev1.PodFailed || !strings.Contains(string(logs), "need 9.0 GiB") {
				t.Errorf("a balloon that cannot hold: ready %v, phase %s, log:\n%s", wasReady, phase, logs)
			}
		})
	}
}
