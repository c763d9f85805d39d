package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/llmchaos/llmchaos/experiments/shardjob"
	"github.com/llmchaos/llmchaos/faults/replica"
	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/internal/k8stest"
	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
	"github.com/llmchaos/llmchaos/report"
)

// nodeSim is the catalog's llmchaos-sim Deployment (three pods behind a
// Service, opted in) on the real node.
func nodeSim(n *k8stest.Node) k8stest.Workload {
	return k8stest.Workload{Name: "llmchaos-sim", Replicas: 3, Labels: map[string]string{"app": "llmchaos-sim"},
		PodLabels: map[string]string{replica.OptInLabel: replica.OptInLabelValue}, Service: true, Node: n.Name,
		Container: n.SimContainer("--latency", "constant", "--ttft", "20ms", "--itl", "5ms")}
}

// TestShardJobOnARealNode: llmchaos shard-job runs 3 pods that really run
// `llmchaos load`, each following the simulator pods through the API with
// the llmchaos-load account's rights and no more; their logs (stdout and
// stderr of a real container runtime, interleaved) carry their framed
// reports, and every one is merged: the merged report holds the whole
// schedule, all ok, no shard lost.
func TestShardJobOnARealNode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs pods on a real node; skipped under -short")
	}
	n := k8stest.StartNode(t)
	ns := n.Namespace(t)
	n.CreateWorkload(t, ns, nodeSim(n))
	n.CreateServiceAccount(t, ns, shardjob.DefaultPodServiceAccount, k8stest.RulesFor(shardjob.PodAPICalls()))
	out := filepath.Join(t.TempDir(), "merged.json")
	code, stdout, stderr := run(t, "shard-job", "--kubeconfig", n.Kubeconfig, "-n", ns, "--image", n.Image, "--shards", "3",
		"--start-in", "5s", "--service-account", shardjob.DefaultPodServiceAccount, "-o", out, "--",
		"--kubernetes-selector", "app=llmchaos-sim", "--kubernetes-port", "8000", "--kubernetes-path", "/v1",
		"--model", "llmchaos-sim", "--rate", "20", "--duration", "6s", "--seed", "3", "--input-tokens", "16", "--output-tokens", "8")
	if code != exitcode.OK {
		t.Fatalf("exit %d:\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	d, err := report.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("merged: %d requests, %d ok, %d lost, %d shards lost", d.Requests.Scheduled, d.Requests.OK, d.Requests.Lost, d.ShardsLost)
	if d.ShardsLost != 0 || d.Requests.Scheduled < 100 || d.Requests.OK != d.Requests.Scheduled || d.Requests.Lost != 0 {
		t.Errorf("merged report: %d requests, %d ok, %d lost, %d shards lost; want about 120, all ok, none lost\n%s", d.Requests.Scheduled, d.Requests.OK, d.Requests.Lost, d.ShardsLost, stderr)
	}
}

// TestCatalogPodKillOnARealNode: experiments/catalog/k8s-pod-kill.yaml, as
// it is, against the real node (namespace llmchaos, the Deployment and
// Service it names, LLMCHAOS_IMAGE for the kill's signal pod): the run
// passes, and its kill was a SIGKILL the kubelet answered by restarting
// the container in the same pod (exit 137).
func TestCatalogPodKillOnARealNode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a minute of load on a real node; skipped under -short")
	}
	n := k8stest.StartNode(t)
	const ns = "llmchaos"
	n.FixedNamespace(t, ns)
	client := n.Client(t)
	ctx := t.Context()
	n.CreateWorkload(t, ns, nodeSim(n))
	// As a user runs it: the llmchaos binary (its guard too), from the
	// repository's root.
	bin := needBinary(t)
	dir := t.TempDir()
	rctx, cancel := context.WithTimeout(ctx, 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(rctx, bin, "run", "-o", dir, filepath.Join("experiments", "catalog", "k8s-pod-kill.yaml"))
	cmd.Dir = filepath.Join("..", "..")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+n.Kubeconfig, replica.ImageEnv+"="+n.Image)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("llmchaos run experiments/catalog/k8s-pod-kill.yaml: %v\n%s", err, out)
	}
	d, err := report.Read(filepath.Join(dir, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	if d.Verdict != report.VerdictPass {
		t.Errorf("verdict %s\n%s", d.Verdict, out)
	}
	pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=llmchaos-sim"})
	if err != nil {
		t.Fatal(err)
	}
	var killed []string
	for _, p := range pods.Items {
		for _, cs := range p.Status.ContainerStatuses {
			if term := cs.LastTerminationState.Terminated; term != nil {
				if term.ExitCode != 137 {
					t.Errorf("pod %s's container ended with exit %d (%s), want 137: SIGKILL", p.Name, term.ExitCode, term.Reason)
				}
				killed = append(killed, p.Name)
			}
		}
	}
	if len(killed) != 1 {
		t.Errorf("pods whose container was killed and restarted: %v, want one", killed)
	}

}

// TestShardJobCountsAKilledShardOnARealNode: a shard pod whose process gets
// SIGKILL in the middle of its load (the OOM killer, a node's kill) hands
// back no report: shard-job counts it lost and merges the other two
// (--partial: exit 0, shards_lost 1, their requests only).
func TestShardJobCountsAKilledShardOnARealNode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs pods on a real node; skipped under -short")
	}
	n := k8stest.StartNode(t)
	ns := n.Namespace(t)
	n.CreateWorkload(t, ns, nodeSim(n))
	n.CreateServiceAccount(t, ns, shardjob.DefaultPodServiceAccount, k8stest.RulesFor(shardjob.PodAPICalls()))
	client := n.Client(t)
	out := filepath.Join(t.TempDir(), "merged.json")
	type result struct {
		code           int
		stdout, stderr string
	}
	done := make(chan result, 1)
	go func() {
		code, stdout, stderr := run(t, "shard-job", "--kubeconfig", n.Kubeconfig, "-n", ns, "--image", n.Image, "--shards", "3",
			"--start-in", "5s", "--name", "killed", "--partial", "--service-account", shardjob.DefaultPodServiceAccount, "-o", out, "--",
			"--kubernetes-selector", "app=llmchaos-sim", "--kubernetes-port", "8000", "--kubernetes-path", "/v1",
			"--model", "llmchaos-sim", "--rate", "20", "--duration", "20s", "--seed", "3", "--input-tokens", "16", "--output-tokens", "8")
		done <- result{code, stdout, stderr}
	}()
	// Shard 1's pod, once its load has run a few seconds.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var victim *corev1.Pod
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-completion-index=1"})
		if err != nil || len(pods.Items) != 1 {
			return false, nil
		}
		p := &pods.Items[0]
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Running != nil && time.Since(cs.State.Running.StartedAt.Time) > 10*time.Second {
				victim = p
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("shard 1's pod not running for 10 s: %v", err)
	}
	ids := []string{replica.ContainerID(victim.Status.ContainerStatuses[0].ContainerID)}
	sig := replica.SignalPod(victim, n.Image, ids, "SIGKILL")
	if _, err := client.CoreV1().Pods(ns).Create(ctx, sig, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.code != exitcode.OK {
		t.Fatalf("exit %d:\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	d, err := report.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("merged: %d requests, %d ok, %d shards lost", d.Requests.Scheduled, d.Requests.OK, d.ShardsLost)
	if d.ShardsLost != 1 || d.Requests.Scheduled == 0 || d.Requests.OK != d.Requests.Scheduled {
		t.Errorf("merged report: %d requests, %d ok, %d shards lost; want shard 1 lost and the other two merged, all ok\n%s", d.Requests.Scheduled, d.Requests.OK, d.ShardsLost, r.stderr)
	}
	if !strings.Contains(r.stderr, "shard 1") {
		t.Errorf("stderr does not name shard 1:\n%s", r.stderr)
	}
}

// TestShardJobKeepsTheReportOfAStoppedShardOnARealNode: a shard pod
// deleted in the middle of its load (a drain, an eviction: SIGTERM, then
// the grace) ends its load at once and hands back its report, which
// shard-job merges: no shard lost, fewer requests than the whole schedule.
func TestShardJobKeepsTheReportOfAStoppedShardOnARealNode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs pods on a real node; skipped under -short")
	}
	n := k8stest.StartNode(t)
	ns := n.Namespace(t)
	n.CreateWorkload(t, ns, nodeSim(n))
	n.CreateServiceAccount(t, ns, shardjob.DefaultPodServiceAccount, k8stest.RulesFor(shardjob.PodAPICalls()))
	client := n.Client(t)
	out := filepath.Join(t.TempDir(), "merged.json")
	type result struct {
		code           int
		stdout, stderr string
	}
	done := make(chan result, 1)
	go func() {
		code, stdout, stderr := run(t, "shard-job", "--kubeconfig", n.Kubeconfig, "-n", ns, "--image", n.Image, "--shards", "3",
			"--start-in", "5s", "--name", "stopped", "--service-account", shardjob.DefaultPodServiceAccount, "-o", out, "--",
			"--kubernetes-selector", "app=llmchaos-sim", "--kubernetes-port", "8000", "--kubernetes-path", "/v1",
			"--model", "llmchaos-sim", "--rate", "20", "--duration", "20s", "--seed", "3", "--input-tokens", "16", "--output-tokens", "8")
		done <- result{code, stdout, stderr}
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var victim *corev1.Pod
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-completion-index=1"})
		if err != nil || len(pods.Items) != 1 {
			return false, nil
		}
		p := &pods.Items[0]
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Running != nil && time.Since(cs.State.Running.StartedAt.Time) > 10*time.Second {
				victim = p
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("shard 1's pod not running for 10 s: %v", err)
	}
	// The victim's log as the API streams it, to show on a failure.
	var vlog strings.Builder
	vdone := make(chan struct{})
	go func() {
		defer close(vdone)
		rc, err := client.CoreV1().Pods(ns).GetLogs(victim.Name, &corev1.PodLogOptions{Follow: true}).Stream(ctx)
		if err != nil {
			vlog.WriteString("(" + err.Error() + ")")
			return
		}
		defer rc.Close()
		b := make([]byte, 64<<10)
		for {
			n, err := rc.Read(b)
			vlog.Write(b[:n])
			if err != nil {
				vlog.WriteString("(end: " + err.Error() + ")")
				return
			}
		}
	}()
	grace := int64(20)
	if err := client.CoreV1().Pods(ns).Delete(ctx, victim.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		t.Fatal(err)
	}
	r := <-done
	<-vdone
	defer func() {
		if t.Failed() {
			l := vlog.String()
			t.Logf("the stopped shard's log (its end):\n%s", l[max(0, len(l)-3000):])
		}
	}()
	d, err := report.Read(out)
	if err != nil {
		t.Fatalf("exit %d, no merged report: %v\nstderr:\n%s", r.code, err, r.stderr)
	}
	t.Logf("exit %d; merged: %d requests, %d ok, %d shards lost", r.code, d.Requests.Scheduled, d.Requests.OK, d.ShardsLost)
	if d.ShardsLost != 0 || d.Requests.Scheduled == 0 || d.Requests.Scheduled >= 400 {
		t.Errorf("exit %d; merged report: %d requests, %d shards lost; want shard 1's report merged with its part cut short (fewer than 400), none lost\n%s", r.code, d.Requests.Scheduled, d.ShardsLost, r.stderr)
	}
}
