package replica

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/k8stest"
)

// TestKubernetesKillIsASIGKILLOnARealNode: on a real node (a kubelet and
// containerd running llmchaos sim pods), replica.kill sends the picked
// pod's process SIGKILL: its container ends with exit 137 (128+9), no
// SIGTERM reached it (the simulator exits 0 on one, after draining), the
// kubelet restarts it in the same pod, and the kill's Undo returns once
// the pod is Ready again; the signal pod is gone. Skipped where no node can
// start (scripts/k8s-node.sh check says why).
func TestKubernetesKillIsASIGKILLOnARealNode(t *testing.T) {
	n := k8stest.StartNode(t)
	ns := n.Namespace(t)
	w := k8stest.Workload{Name: "sim", Replicas: 2, Labels: map[string]string{"app": "sim"},
		PodLabels: map[string]string{OptInLabel: OptInLabelValue}, Node: n.Name, Container: n.SimContainer()}
	before := n.CreateWorkload(t, ns, w)
	target := TargetParams{Driver: DriverKubernetes, Namespace: ns, Selector: w.Selector(), Kubeconfig: n.Kubeconfig}
	k, err := NewKill("kill", KillParams{Params: Params{Target: target, Select: faults.Selection{Mode: faults.SelectOne, MinAvailable: 1}},
		Image: n.Image, Timeout: 90 * time.Second}, testRand(3))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	undo, err := k.Inject(ctx, &recLog{})
	if err != nil {
		t.Fatal(err)
	}
	if err := undo(ctx); err != nil {
		t.Fatalf("undo: %v", err)
	}
	client := n.Client(t)
	var killed *corev1.Pod
	for _, p := range before {
		q, err := client.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("pod %s: %v (a kill restarts the containers in the same pod)", p.Name, err)
		}
		if restarts(q) > 0 {
			if killed != nil {
				t.Fatalf("two pods restarted: %s and %s", killed.Name, q.Name)
			}
			killed = q
		}
	}
	if killed == nil {
		t.Fatal("no pod's container was restarted")
	}
	cs := killed.Status.ContainerStatuses[0]
	term := cs.LastTerminationState.Terminated
	if term == nil || term.ExitCode != 137 {
		t.Fatalf("pod %s: last termination %+v, want exit 137 (SIGKILL, no SIGTERM)", killed.Name, term)
	}
	if cs.State.Running == nil || !cs.Ready {
		t.Errorf("pod %s: container %+v, want running and Ready again", killed.Name, cs.State)
	}
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	if _, err := k8stest.WaitPods(wctx, client, ns, "", func(ps []*corev1.Pod) bool {
		for _, p := range ps {
			if p.Labels["app"] != "sim" {
				return false
			}
		}
		return true
	}); err != nil {
		t.Errorf("the signal pod is not gone: %v", err)
	}
	t.Logf("pod %s: killed at %v, restarted at %v", killed.Name, term.FinishedAt, cs.State.Running.StartedAt)
}
