package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/faults/chaosmesh"
	"github.com/llmchaos/llmchaos/faults/chaosmesh/chaosmeshtest"
	"github.com/llmchaos/llmchaos/internal/k8stest"
	"github.com/llmchaos/llmchaos/internal/kube"
	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
	"github.com/llmchaos/llmchaos/internal/kube/dynamic"
)

// optedInPods gives the test a namespace of the control plane labelled
// llmchaos.io/target=true with n Ready pods labelled app=vllm.
func optedInPods(t *testing.T, c *k8stest.Cluster, n int) (ns string, core *kube.Clientset) {
	t.Helper()
	ns, core = c.Namespace(t), c.Client(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"true"}}}`, kube.LabelTarget)
	if _, err := core.CoreV1().Namespaces().Patch(ctx, ns, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		_, err := core.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("vllm-%d", i), Labels: map[string]string{"app": "vllm"}},
			Spec: corev1.PodSpec{NodeSelector: map[string]string{"type": "kwok"},
				Containers: []corev1.Container{{Name: "vllm", Image: "vllm/vllm-openai"}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := k8stest.WaitPods(ctx, core, ns, "app=vllm", func(pods []*corev1.Pod) bool {
		ready := 0
		for _, p := range pods {
			if kube.PodReady(p) {
				ready++
			}
		}
		return ready == n
	}); err != nil {
		t.Fatal(err)
	}
	return ns, core
}

// TestRecoverDeletesChaosMeshObjectOfKilledRun: `llmchaos run` with a
// Chaos Mesh fault, killed with SIGKILL while the fault holds (no guard),
// leaves the NetworkChaos object behind, labelled with the run; `llmchaos
// recover` deletes it and the journal has nothing pending.
func TestRecoverDeletesChaosMeshObjectOfKilledRun(t *testing.T) {
	bin := needBinary(t)
	c := k8stest.Start(t)
	chaosmeshtest.Install(t, c.Config())
	ns, _ := optedInPods(t, c, 2)
	dyn, err := dynamic.NewForConfig(c.Config())
	if err != nil {
		t.Fatal(err)
	}
	objects := func() []string {
		list, err := dyn.Resource(chaosmesh.NetworkChaos.GVR()).Namespace(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, o := range list.Items {
			out = append(out, o.GetName()+" run="+o.GetLabels()[kube.LabelRun])
		}
		return out
	}
	exp := fmt.Sprintf(`apiVersion: llmchaos/v1
kind: Experiment
metadata: {name: k8s-delay-killed}
target:
  sim: {replicas: 1, startup_time: 200ms}
workload: {preset: chat, rate: 5, duration: 60s}
faults:
  - name: pod-delay
    type: chaosmesh.delay
    at: 1s
    duration: 50s
    params: {kubeconfig: %q, namespace: %q, selector: app=vllm, latency: 100ms}
`, c.Kubeconfig, ns)
	b := startBgRun(t, bin, exp, "--no-guard")
	b.waitJournal(t, 2, "the simulator and the Chaos Mesh fault injected")
	got := objects()
	if want := "run=" + filepath.Base(b.runDir); len(got) != 1 || !strings.HasSuffix(got[0], want) {
		t.Fatalf("NetworkChaos objects %q, want one labelled %s", got, want)
	}
	if err := b.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-b.exited
	if got := objects(); len(got) != 1 {
		t.Fatalf("after kill -9: objects %q, want the fault's still there", got)
	}
	out, err := exec.Command(bin, "recover", "--run-dir", b.runDir).CombinedOutput()
	if err != nil {
		t.Fatalf("llmchaos recover: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "pod-delay") {
		t.Errorf("recover's output does not name the fault:\n%s", out)
	}
	if got := objects(); len(got) != 0 {
		t.Errorf("after recover: objects %q, want none", got)
	}
	if left, err := faults.Pending(b.runDir); err != nil || len(left) != 0 {
		t.Errorf("journal still pending after recover: %+v (%v)", left, err)
	}
}
