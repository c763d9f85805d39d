package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/internal/k8stest"
	"github.com/llmchaos/llmchaos/internal/kube"
	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/sim"
	"github.com/llmchaos/llmchaos/sim/server"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// The Kubernetes target's flags are checked with the others: one of
// --kubernetes-selector and --kubernetes-service, not with --target, a
// port without a Service, and the other flags only with them.
func TestLoadKubernetesFlagErrors(t *testing.T) {
	t.Parallel()
	base := []string{"load", "--model", "m", "--rate", "5", "--duration", "1s", "--workload", "chat"}
	for _, tt := range []struct {
		name string
		args []string
		want []string
	}{
		{"with --target", []string{"--target", "http://h/v1", "--kubernetes-selector", "app=vllm", "--kubernetes-port", "8000"},
			[]string{"--target and --kubernetes-selector/--kubernetes-service are both set"}},
		{"no port without a Service", []string{"--kubernetes-selector", "app=vllm"}, []string{"--kubernetes-port is required"}},
		{"bad values", []string{"--kubernetes-selector", "app in (x", "--kubernetes-namespace", "Bad_NS", "--kubernetes-service", "-svc", "--kubernetes-port", "70000", "--kubernetes-path", "v1"},
			[]string{`--kubernetes-selector "app in (x"`, `--kubernetes-namespace "Bad_NS"`, `--kubernetes-service "-svc"`, "--kubernetes-port 70000", `--kubernetes-path "v1"`}},
		{"every pod", []string{"--kubernetes-selector", " ", "--kubernetes-port", "8000"}, []string{"selects every pod"}},
		{"kube flags alone", []string{"--target", "http://h/v1", "--kubeconfig", "k", "--kube-context", "c", "--kubernetes-namespace", "llm"},
			[]string{"--kubeconfig applies to a Kubernetes target", "--kube-context applies", "--kubernetes-namespace applies"}},
		{"no target at all", nil, []string{"--target is required", "--kubernetes-selector or --kubernetes-service"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errs := run(t, append(slices.Clone(base), tt.args...)...)
			if code != exitcode.Usage {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitcode.Usage, errs)
			}
			for _, w := range tt.want {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr does not mention %q:\n%s", w, errs)
				}
			}
		})
	}
}

// The report's config records a Kubernetes target as an experiment's
// target.kubernetes, and not the endpoints found: every shard of one load
// records the same.
func TestLoadKubernetesRecord(t *testing.T) {
	t.Parallel()
	f := defaultLoadFlags()
	fs := pflag.NewFlagSet("load", pflag.ContinueOnError)
	addLoadFlags(fs, &f)
	if err := fs.Parse([]string{"--kubernetes-namespace", "llm", "--kubernetes-selector", "app=vllm", "--kubernetes-port", "8000",
		"--kubernetes-path", "/v1/", "--kubeconfig", "/k", "--model", "m", "--rate", "5", "--duration", "1s", "--workload", "chat", "--seed", "1"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := f.config(fs)
	if err != nil {
		t.Fatal(err)
	}
	m := cfg.record()
	if _, ok := m["targets"]; ok {
		t.Errorf("config records targets %v: each shard would record the pods it found", m["targets"])
	}
	want := map[string]any{"kubernetes": map[string]any{"namespace": "llm", "selector": "app=vllm", "port": 8000, "path": "/v1", "kubeconfig": "/k"}}
	if got, _ := json.Marshal(m["target"]); string(got) != string(mustJSON(t, want)) {
		t.Errorf("config target = %s, want %s", got, mustJSON(t, want))
	}
	if d := describeLoad(cfg); !strings.Contains(d, "Kubernetes target, followed live") {
		t.Errorf("start line %q does not say the pods are followed", d)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// serveSimOn serves a simulator replica on ln until the test ends.
func serveSimOn(t *testing.T, ln *k8stest.PodListener) {
	t.Helper()
	cfg := sim.DefaultConfig()
	cfg.Latency, cfg.TTFT, cfg.ITL = sim.LatencyConstant, 5*time.Millisecond, 2*time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- server.Serve(ctx, ln, server.Options{Config: cfg}) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("simulator: %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Error("simulator did not stop within 15 s")
		}
	})
}

// requestsByEndpoint scrapes the live series and returns the requests
// ended so far by endpoint tag.
func requestsByEndpoint(metricsURL string) map[string]float64 {
	out := map[string]float64{}
	mfs, err := scrapeMetrics(metricsURL)
	if err != nil {
		return out
	}
	for _, m := range mfs["llmchaos_requests_total"].GetMetric() {
		out[labelsOf(m)["endpoint"]] += m.GetCounter().GetValue()
	}
	return out
}

// waitUntil polls cond every 100 ms until it holds, failing the test after
// limit.
func waitUntil(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v", what, limit)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// llmchaos load with the Kubernetes target's flags sends to the pods
// themselves: the test control plane's kwok pods run on a node whose pod
// network is on the loopback interface, where the test serves a simulator
// at every pod IP. Each request goes to a ready pod and is tagged with its
// name; a pod deleted mid-run stops getting requests once the load saw it
// go (its endpoint_removed event), and the ReplicaSet's replacement gets
// them. The load runs until the replacement has had requests and is then
// interrupted: no wait is timed.
func TestLoadFollowsKubernetesPods(t *testing.T) {
	c := k8stest.Start(t)
	node := c.LoopbackNode(t)
	ns := c.Namespace(t)
	w := k8stest.Workload{Name: "sim", Replicas: 3, Labels: map[string]string{"app": "sim"}, Node: node.Name}
	before := c.CreateWorkload(t, ns, w)
	ln := node.Listen(t)
	serveSimOn(t, ln)

	dir := t.TempDir()
	out, saved := filepath.Join(dir, "run.json"), filepath.Join(dir, "requests.jsonl")
	s := startCmd(t, "load", "--kubernetes-namespace", ns, "--kubernetes-selector", w.Selector(), "--kubernetes-port", strconv.Itoa(ln.Port()),
		"--kubeconfig", c.Kubeconfig, "--model", "llmchaos-sim", "--arrival", "constant", "--rate", "30", "--duration", "5m",
		"--prompt-tokens", "16", "--max-tokens", "4", "--seed", "3", "--progress", "0", "--grace", "5s",
		"--metrics-listen", "127.0.0.1:0", "--no-scrape", "--out", out, "--save-requests", saved)
	m := waitOutput(t, s.out, regexp.MustCompile(`live metrics at (http://127\.0\.0\.1:\d+/metrics)\n`), s.done)
	waitUntil(t, 30*time.Second, "request to every pod", func() bool {
		got := requestsByEndpoint(m[1])
		return !slices.ContainsFunc(before, func(p *corev1.Pod) bool { return got[p.Name] == 0 })
	})

	victim := before[0]
	client := c.Client(t)
	grace := int64(0)
	if err := client.CoreV1().Pods(ns).Delete(t.Context(), victim.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	now, err := kube.WaitPods(ctx, client, ns, w.Selector(), func(ps []*corev1.Pod) bool {
		return len(ps) == 3 && kube.CountReady(ps) == 3 && !slices.ContainsFunc(ps, func(p *corev1.Pod) bool { return p.Name == victim.Name })
	})
	if err != nil {
		t.Fatal(err)
	}
	var replacement *corev1.Pod
	for _, p := range now {
		if !slices.ContainsFunc(before, func(b *corev1.Pod) bool { return b.Name == p.Name }) {
			replacement = p
		}
	}
	waitUntil(t, 30*time.Second, "request to the replacement "+replacement.Name, func() bool { return requestsByEndpoint(m[1])[replacement.Name] > 0 })
	if code := s.stop(t); code != exitcode.Aborted {
		t.Fatalf("interrupted load: exit %d, want %d; stderr:\n%s\nstdout:\n%s", code, exitcode.Aborted, s.err, s.out)
	}

	doc, err := report.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	var removedAt float64 = -1
	var kinds []string
	for _, e := range doc.Events {
		if e.Source != report.EventSourceKubernetes {
			t.Errorf("event %+v: want source kubernetes", e)
		}
		kinds = append(kinds, e.Kind+" "+e.Target)
		if e.Kind == "endpoint_removed" && e.Target == victim.Name {
			removedAt = e.AtS
		}
	}
	if len(kinds) == 0 || !strings.HasPrefix(kinds[0], "endpoints ") || removedAt < 0 || !slices.Contains(kinds, "endpoint_added "+replacement.Name) {
		t.Fatalf("report events %q: want the endpoints, %s removed and %s added", kinds, victim.Name, replacement.Name)
	}
	if tg, _ := doc.Config["target"].(map[string]any); tg["kubernetes"] == nil {
		t.Errorf("config target = %v, want the Kubernetes target", doc.Config["target"])
	}

	names := map[string]bool{replacement.Name: true}
	for _, p := range before {
		names[p.Name] = true
	}
	byPod, okByPod := map[string]int{}, map[string]int{}
	f, err := os.Open(saved)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	err = recording.ReadRequests(f, false, func(r *recording.Result) {
		if r.Sent == 0 {
			return // never sent: the interrupt dropped it
		}
		if !names[r.Tags.Endpoint] {
			t.Errorf("seq %d tagged endpoint %q, want one of the pods %v", r.Seq, r.Tags.Endpoint, names)
		}
		byPod[r.Tags.Endpoint]++
		// Routed after the load saw the pod go: its route is chosen after
		// it is dequeued and before it is sent, so only a request dequeued
		// after the removal is one routed after it (CI saw one sent 20 µs
		// after the removal, routed just before it).
		if r.Tags.Endpoint == victim.Name && r.Dequeued.Seconds() > removedAt {
			t.Errorf("seq %d dequeued at %.6fs and routed to %s, after the load saw it removed at %.6fs", r.Seq, r.Dequeued.Seconds(), victim.Name, removedAt)
		}
		switch r.Outcome {
		case recording.OutcomeOK:
			okByPod[r.Tags.Endpoint]++
		case recording.OutcomeFailed:
			if r.Class != recording.ClassTimeout { // (unfinished when the load was interrupted)
				t.Errorf("seq %d to %s failed: %s %s", r.Seq, r.Tags.Endpoint, r.Class, r.Err)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for name := range names {
		if okByPod[name] == 0 {
			t.Errorf("no request served by %s: %v", name, okByPod)
		}
	}
	for _, p := range now {
		if ln.Accepted(p.Status.PodIP) == 0 {
			t.Errorf("no connection reached pod %s's IP %s", p.Name, p.Status.PodIP)
		}
	}
	if !strings.Contains(s.out.String(), "kubernetes: endpoint_removed "+victim.Name) {
		t.Errorf("the output does not tell of %s's removal:\n%s", victim.Name, s.out)
	}
	t.Logf("requests by pod: %v; victim %s, replacement %s (IP %s, the victim's was %s)", byPod, victim.Name, replacement.Name, replacement.Status.PodIP, victim.Status.PodIP)
}
