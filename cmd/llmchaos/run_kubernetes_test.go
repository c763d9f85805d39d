package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/faults/replica"
	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/internal/k8stest"
	"github.com/llmchaos/llmchaos/internal/kube"
	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
	"github.com/llmchaos/llmchaos/sim"
	"github.com/llmchaos/llmchaos/sim/server"
	"github.com/llmchaos/llmchaos/sim/server/servertest"
)

// kubeKillExperiment kills one pod of the workload at 1 s and keeps the
// fault for 50 s of a minute of load sent to url.
const kubeKillExperiment = `apiVersion: llmchaos/v1
kind: Experiment
metadata: {name: kube-kill-me}
target:
  kubernetes: {namespace: %s, selector: app=sim, service: sim, kubeconfig: %s, url: "%s"}
workload: {rate: 5, duration: 60s, input_tokens: 16, output_tokens: 8}
faults:
  - {name: kill-pod, type: replica.kill, at: 1s, duration: 50s, params: {via: engine, select: {mode: one, min_available: 2}}}
`

// kubeWorkload makes a namespace with three kwok pods behind a Service,
// opted in or not, and an experiment file against them whose load goes
// to a simulator in the test's process.
func kubeWorkload(t *testing.T, optIn bool) (c *k8stest.Cluster, ns, file string, pods []*corev1.Pod) {
	t.Helper()
	c = k8stest.Start(t)
	ns = c.Namespace(t)
	w := k8stest.Workload{Name: "sim", Replicas: 3, Labels: map[string]string{"app": "sim"}, Service: true}
	if optIn {
		w.PodLabels = map[string]string{replica.OptInLabel: replica.OptInLabelValue}
	}
	pods = c.CreateWorkload(t, ns, w)
	cfg := sim.DefaultConfig()
	cfg.Latency, cfg.TTFT, cfg.ITL = sim.LatencyConstant, 10*time.Millisecond, 2*time.Millisecond
	url := servertest.Start(t, server.Options{Config: cfg}) + "/v1"
	file = filepath.Join(t.TempDir(), "kill.yaml")
	if err := os.WriteFile(file, fmt.Appendf(nil, kubeKillExperiment, ns, c.Kubeconfig, url), 0o644); err != nil {
		t.Fatal(err)
	}
	return c, ns, file, pods
}

// `llmchaos run --dry-run` lists the pods a kill would act on, and exits 95
// when they have not opted in.
func TestRunDryRunRefusesPodsNotOptedIn(t *testing.T) {
	_, _, file, pods := kubeWorkload(t, false)
	var out, errb bytes.Buffer
	code := execute(context.Background(), []string{"run", "--dry-run", file}, &out, &errb)
	if code != exitcode.Refused {
		t.Fatalf("exit %d, want %d; stderr %s\n%s", code, exitcode.Refused, errb.String(), out.String())
	}
	if !strings.Contains(errb.String(), "llmchaos.io/target=true") {
		t.Errorf("stderr does not say which label opts in: %s", errb.String())
	}
	for _, p := range pods {
		if !strings.Contains(out.String(), p.Name) {
			t.Errorf("dry run does not list pod %s:\n%s", p.Name, out.String())
		}
	}
}

// kill -9 of the runner while its kill is in force, then `llmchaos
// recover`: the journal's entry waits for the ReplicaSet's replacement
// Ready and closes.
func TestKubernetesKill9ThenRecover(t *testing.T) {
	bin := needBinary(t)
	c, ns, file, pods := kubeWorkload(t, true)
	runDir := filepath.Join(t.TempDir(), "run")
	cmd := exec.Command(bin, "run", file, "--out", runDir, "--progress", "0", "--no-guard")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(waited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-waited
	})
	journal := filepath.Join(runDir, faults.JournalFile)
	deadline := time.Now().Add(60 * time.Second)
	for {
		b, _ := os.ReadFile(journal)
		if bytes.Contains(b, []byte(`"op":"injected"`)) { // the only entry: the kill
			break
		}
		select {
		case <-waited:
			t.Fatalf("llmchaos run exited before the kill:\n%s", out.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("kill not injected within 60s; journal:\n%s\noutput:\n%s", b, out.String())
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-waited
	pend, err := faults.Pending(runDir)
	if err != nil || len(pend) != 1 || pend[0].Name != "kill-pod" || len(pend[0].Specs) != 1 || pend[0].Specs[0].Kind != replica.KindPodAwaitReady {
		t.Fatalf("pending after kill -9: %+v (%v), want the kill with its %s spec", pend, err, replica.KindPodAwaitReady)
	}

	rec, err := exec.Command(bin, "recover", "--run-dir", runDir).CombinedOutput()
	if err != nil {
		t.Fatalf("llmchaos recover: %v\n%s", err, rec)
	}
	for _, want := range []string{`reverted  replica.kill "kill-pod"`, "everything is reverted"} {
		if !bytes.Contains(rec, []byte(want)) {
			t.Errorf("recover output lacks %q:\n%s", want, rec)
		}
	}
	if left, err := faults.Pending(runDir); err != nil || len(left) != 0 {
		t.Errorf("journal still pending: %+v (%v)", left, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	now, err := kube.WaitPods(ctx, c.Client(t), ns, "app=sim", func(ps []*corev1.Pod) bool { return len(ps) == 3 })
	if err != nil {
		t.Fatal(err)
	}
	gone := 0
	for _, p := range pods {
		if !slices.ContainsFunc(now, func(n *corev1.Pod) bool { return n.Name == p.Name }) {
			gone++
		}
	}
	if gone != 1 {
		t.Errorf("pods now %s: want one of the three replaced", kube.DescribePods(now))
	}
}
