package replica

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/k8stest"
	"github.com/llmchaos/llmchaos/internal/kube"
	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
	"github.com/llmchaos/llmchaos/internal/testutil"
)

// TestKubernetesKillIsASIGKILLOnARealNode: on a real node (a kubelet and
// containerd running llmchaos sim pods), replica.kill sends the picked
// pod's process SIGKILL: the stream it was serving is cut at once (on a
// SIGTERM the simulator would drain it to its end), its container ends
// with exit 137 (128+9), the kubelet restarts it in the same pod, and the
// kill's Undo returns once the pod is Ready again; the other pod's stream
// goes on; the signal pod is gone. Skipped where no node can start
// (scripts/k8s-node.sh check says why).
func TestKubernetesKillIsASIGKILLOnARealNode(t *testing.T) {
	n := k8stest.StartNode(t)
	ns := n.Namespace(t)
	w := k8stest.Workload{Name: "sim", Replicas: 2, Labels: map[string]string{"app": "sim"},
		PodLabels: map[string]string{OptInLabel: OptInLabelValue}, Node: n.Name,
		Container: n.SimContainer("--latency", "constant", "--ttft", "10ms", "--itl", "10ms")}
	before := n.CreateWorkload(t, ns, w)
	// A 40 s stream on each pod, read from the host (it reaches pod IPs).
	sctx, scancel := context.WithCancel(t.Context())
	defer scancel()
	streams := map[string]*stream{}
	for _, p := range before {
		s := startStream(sctx, net.JoinHostPort(p.Status.PodIP, "8000"))
		s.waitFirst(t)
		streams[p.Name] = s
	}
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
	killedAt := time.Now()
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
	for name, s := range streams {
		select {
		case <-s.done:
			if name != killed.Name {
				t.Errorf("pod %s was not killed, yet its stream ended: %v", name, s.err)
			}
		default:
			if name == killed.Name {
				t.Errorf("pod %s was killed %v ago and its stream still runs (%d chunks): a SIGTERM drains it, a SIGKILL cuts it",
					name, time.Since(killedAt).Round(time.Millisecond), s.chunks.Load())
			}
		}
	}
	if s := streams[killed.Name]; s.err == nil {
		t.Errorf("pod %s's stream ended without an error after %d chunks: want it cut", killed.Name, s.chunks.Load())
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

// TestKubernetesStopAndRestartOnARealNode: on a real node, replica.stop
// deletes the pod with its grace: the simulator gets SIGTERM and drains,
// so a short stream in flight ends whole, and the ReplicaSet's replacement
// really serves; replica.restart rolls the Deployment out: every pod is
// replaced by one that serves.
func TestKubernetesStopAndRestartOnARealNode(t *testing.T) {
	n := k8stest.StartNode(t)
	ns := n.Namespace(t)
	w := k8stest.Workload{Name: "sim", Replicas: 1, Labels: map[string]string{"app": "sim"},
		PodLabels: map[string]string{OptInLabel: OptInLabelValue}, Node: n.Name,
		Container: n.SimContainer("--latency", "constant", "--ttft", "10ms", "--itl", "10ms")}
	before := n.CreateWorkload(t, ns, w)
	target := TargetParams{Driver: DriverKubernetes, Namespace: ns, Selector: w.Selector(), Kubeconfig: n.Kubeconfig}
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()

	// 300 tokens at 10 ms: 3 s, within the 10 s grace.
	inflight := make(chan testutil.StreamResult, 1)
	started := make(chan struct{})
	go func() {
		var once sync.Once
		inflight <- testutil.Stream(ctx, net.JoinHostPort(before[0].Status.PodIP, "8000"), 300, func(int) { once.Do(func() { close(started) }) })
	}()
	select {
	case <-started:
	case <-time.After(20 * time.Second):
		t.Fatal("no first token within 20 s")
	}
	s, err := NewStop("stop", StopParams{Params: Params{Target: target}, Grace: 10 * time.Second, Timeout: 90 * time.Second}, testRand(2))
	if err != nil {
		t.Fatal(err)
	}
	undo, err := s.Inject(ctx, &recLog{})
	if err != nil {
		t.Fatal(err)
	}
	if r := <-inflight; r.Err != nil || !r.Done || r.Chunks != 300 {
		t.Errorf("the stream in flight at the stop: %d chunks, done %v, err %v; want all 300 (SIGTERM drains)", r.Chunks, r.Done, r.Err)
	}
	if err := undo(ctx); err != nil {
		t.Fatalf("stop undo: %v", err)
	}
	client := n.Client(t)
	pods, err := k8stest.WaitPods(ctx, client, ns, w.Selector(), func(ps []*corev1.Pod) bool {
		return len(ps) == 1 && ps[0].UID != before[0].UID && kube.PodReady(ps[0])
	})
	if err != nil {
		t.Fatalf("no Ready replacement: %v", err)
	}
	servesAll(t, ctx, pods)

	r, err := NewRestart("restart", RestartParams{Params: Params{Target: target, Select: faults.Selection{Mode: faults.SelectAll}}, Timeout: 90 * time.Second}, testRand(3))
	if err != nil {
		t.Fatal(err)
	}
	undo, err = r.Inject(ctx, &recLog{})
	if err != nil {
		t.Fatal(err)
	}
	if err := undo(ctx); err != nil {
		t.Fatalf("restart undo: %v", err)
	}
	after, err := k8stest.WaitPods(ctx, client, ns, w.Selector(), func(ps []*corev1.Pod) bool {
		return len(ps) == 1 && ps[0].UID != pods[0].UID && kube.PodReady(ps[0])
	})
	if err != nil {
		t.Fatalf("the restart's pod: %v", err)
	}
	servesAll(t, ctx, after)
}

// servesAll checks that each pod answers a short streamed completion at
// its IP.
func servesAll(t *testing.T, ctx context.Context, pods []*corev1.Pod) {
	t.Helper()
	for _, p := range pods {
		if r := testutil.Stream(ctx, net.JoinHostPort(p.Status.PodIP, "8000"), 5, nil); r.Err != nil || !r.Done || r.Chunks != 5 {
			t.Errorf("pod %s (%s): %d chunks, done %v, err %v; want it to serve", p.Name, p.Status.PodIP, r.Chunks, r.Done, r.Err)
		}
	}
}
