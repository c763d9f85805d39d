package experiments

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/internal/k8stest"
	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
	"github.com/llmchaos/llmchaos/sim"
	"github.com/llmchaos/llmchaos/sim/server"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// The shards' load flags: with a target.kubernetes without url, the
// target's pods (namespace resolved, selector, Service, port, path), which
// every shard follows itself, and how this process reached the cluster
// only for shards that run here; with a url, the url.
func TestShardLoadArgsOfAKubernetesTarget(t *testing.T) {
	t.Parallel()
	exp, _, err := spec.Load(filepath.Join("catalog", "k8s-pod-kill.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	exp.Target.Kubernetes.Namespace = ""
	exp.Target.Kubernetes.Kubeconfig, exp.Target.Kubernetes.Context = "/home/me/.kube/config", "lab"
	exp.Workload = spec.Workload{Rate: spec.PerSecondRate(30), Duration: spec.Duration(10 * time.Second), InputTokens: mustDist("16"), OutputTokens: mustDist("8"), Shards: 3}
	exp.StopConditions, exp.SteadyState, exp.Faults, exp.Thresholds = nil, nil, nil, nil
	p, err := planSpec(exp, "exp.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	args := func(opts Options, url string) []string {
		t.Helper()
		r := newRun(p, opts, t.TempDir(), nil)
		k := p.spec.Target.Kubernetes
		k.URL = url
		r.kube, r.model = &kubeTarget{t: *k, ns: "llm"}, "m"
		if url != "" {
			r.endpoints = []*endpoint{{url: url, load: url}}
		}
		a, err := r.shardLoadArgs()
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	pods := []string{"--kubernetes-namespace", "llm", "--kubernetes-selector", "app=llmchaos-sim", "--kubernetes-service", "llmchaos-sim",
		"--kubernetes-port", "8000", "--kubernetes-path", "/v1"}
	for _, tt := range []struct {
		name string
		opts Options
		url  string
		want []string
	}{
		{"pods, in the cluster's Job", Options{}, "", pods},
		{"pods, shards run here", Options{Shards: &LocalShards{Binary: "llmchaos"}}, "", append(slices.Clone(pods), "--kubeconfig", "/home/me/.kube/config", "--kube-context", "lab")},
		{"pods, a Job given by the caller", Options{Shards: &KubernetesShards{}}, "", pods},
		{"url", Options{}, "http://lb.example/v1", []string{"--target", "http://lb.example/v1"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := args(tt.opts, tt.url)
			if !slices.Equal(a[:len(tt.want)], tt.want) || slices.Contains(a[len(tt.want):], "--target") || slices.ContainsFunc(a[len(tt.want):], func(s string) bool { return strings.HasPrefix(s, "--kube") }) {
				t.Errorf("args %q\nwant them to start with %q, and no other target flag", a, tt.want)
			}
			if i := slices.Index(a, "--model"); i < 0 || a[i+1] != "m" {
				t.Errorf("args %q: no --model m", a)
			}
		})
	}
}

// The shards get the workload as the experiment resolved it: the preset
// expanded into its settings (no --workload for a shard to resolve again),
// the defaults filled in, and a rate given as a share of a measured
// capacity already in requests per second.
func TestShardLoadArgsAreTheResolvedWorkload(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	capFile := `{"kind":"llmchaos-capacity","version":1,"mode":"rate","unit":"req/s","status":"found","workload":{"preset":"chat"},"knee":{"load":40}}`
	exp := `apiVersion: llmchaos/v1
kind: Experiment
metadata: {name: sharded}
target: {kubernetes: {selector: app=llmchaos-sim, url: "http://lb.example/v1"}}
workload: {preset: chat, rate: 50%, capacity: capacity.json, duration: 20s, shards: 3, output_tokens: 32}
`
	if err := os.WriteFile(filepath.Join(dir, "capacity.json"), []byte(capFile), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "exp.yaml")
	if err := os.WriteFile(file, []byte(exp), 0o644); err != nil {
		t.Fatal(err)
	}
	x, _, err := spec.LoadExperiment(file, spec.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := planOf(x, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := newRun(p, Options{}, t.TempDir(), nil)
	r.model = "m"
	r.endpoints = []*endpoint{{url: "http://lb.example/v1", load: "http://lb.example/v1"}}
	a, err := r.shardLoadArgs()
	if err != nil {
		t.Fatal(err)
	}
	flag := func(name string) string {
		i := slices.Index(a, name)
		if i < 0 || i+1 >= len(a) {
			return ""
		}
		return a[i+1]
	}
	chat, err := workload.LookupPreset("chat")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ flag, want string }{
		{"--rate", "20"}, {"--duration", "20s"}, {"--class", "chat"}, {"--api", "chat"},
		{"--arrival", string(chat.Arrival.Arrival)}, {"--burstiness", "1"}, {"--on-saturation", "wait"},
		{"--input-tokens", chat.Workload.InputTokens.String()}, {"--output-tokens", "fixed:32"},
		{"--grace", "30s"}, {"--seed", "1"},
	} {
		if got := flag(tt.flag); got != tt.want {
			t.Errorf("%s %q, want %q (args %q)", tt.flag, got, tt.want, a)
		}
	}
	if d, err := workload.ParseDist(flag("--input-tokens")); err != nil || d != chat.Workload.InputTokens {
		t.Errorf("--input-tokens %q reads back as %v (%v), want the preset's %v", flag("--input-tokens"), d, err, chat.Workload.InputTokens)
	}
	for _, f := range []string{"--workload", "--ramp", "--stages", "--concurrency"} {
		if slices.Contains(a, f) {
			t.Errorf("args %q hold %s", a, f)
		}
	}
}

// A sharded experiment whose load goes to the pods themselves: 3 shards
// (local processes of the real binary) each follow the pods of the
// target (llmchaos load --kubernetes-*), which run on a node whose pod
// network is on the loopback interface, where the test serves the
// simulator. The runner kills a pod at 3 s; the shards stop sending to it
// and send to its ReplicaSet's replacement, whose name tags requests of
// the recovery; the kill's recovery is measured on the shards' results.
func TestRunShardedLoadFollowsThePods(t *testing.T) {
	skipShort(t)
	c := k8stest.Start(t)
	node := c.LoopbackNode(t)
	ns := c.Namespace(t)
	w := simWorkload
	w.Service, w.Node = false, node.Name // EndpointSlices refuse loopback addresses: follow the pods by selector
	before := c.CreateWorkload(t, ns, w)
	ln := node.Listen(t)
	serveSimOn(t, ln)

	exp, file, want := shardedSpec(t, c, ns, "", 10*time.Second)
	exp.Target.Kubernetes.Service, exp.Target.Kubernetes.Port = "", ln.Port()
	exp.Faults[0].Duration = spec.Duration(3 * time.Second)
	shards := &LocalShards{Binary: llmchaosBinary(t)}
	dir := t.TempDir()
	var out, saved bytes.Buffer
	reqs := recording.NewRequestWriter(&saved)
	o, err := runSpec(context.Background(), exp, Options{RunDir: dir, File: file, Out: &out, Shards: shards, ShardStartIn: 3 * time.Second, SaveRequests: reqs})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	if err := reqs.Flush(); err != nil {
		t.Fatal(err)
	}
	victim, replacement := checkPodKill(t, c, ns, before, o, dir, out.String())
	if d := o.Doc; d.Requests.Scheduled != int64(want) {
		t.Errorf("%d requests recorded, want the single-process schedule's %d", d.Requests.Scheduled, want)
	}
	// Each shard's own report tells when it saw the victim go and the
	// replacement come (on its clock, which starts with the run's).
	if len(o.Shards) != 3 {
		t.Fatalf("%d shard reports, want 3", len(o.Shards))
	}
	removedAt := make([]float64, 3)
	for i, d := range o.Shards {
		removedAt[i] = -1
		var kinds []string
		for _, e := range d.Events {
			kinds = append(kinds, e.Kind+" "+e.Target)
			if e.Kind == "endpoint_removed" && e.Target == victim {
				removedAt[i] = e.AtS
			}
		}
		if removedAt[i] < 0 || !slices.Contains(kinds, "endpoint_added "+replacement) {
			t.Errorf("shard %d's events %q: want %s removed and %s added", i, kinds, victim, replacement)
		}
	}
	names := map[string]bool{replacement: true}
	for _, p := range before {
		names[p.Name] = true
	}
	byPod := map[string]int{}
	err = recording.ReadRequests(&saved, false, func(r *recording.Result) {
		if !names[r.Tags.Endpoint] {
			t.Errorf("seq %d tagged endpoint %q, want one of the pods %v", r.Seq, r.Tags.Endpoint, names)
		}
		if r.Outcome != recording.OutcomeOK {
			t.Errorf("seq %d to %s: %s %s %s", r.Seq, r.Tags.Endpoint, r.Outcome, r.Class, r.Err)
		}
		byPod[r.Tags.Endpoint]++
		// Shard k sends the arrivals of seq k mod 3.
		// Routed after its shard saw the pod go: a request's route is
		// chosen after it is dequeued and before it is sent, so only one
		// dequeued after the removal was routed after it (CI saw one sent
		// 20 µs after the removal, routed just before it).
		if shard := r.Seq % 3; r.Tags.Endpoint == victim && r.Dequeued.Seconds() > removedAt[shard] {
			t.Errorf("seq %d dequeued at %.6fs and routed to %s, after shard %d saw it removed at %.6fs", r.Seq, r.Dequeued.Seconds(), victim, shard, removedAt[shard])
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for name := range names {
		if byPod[name] == 0 {
			t.Errorf("no request to pod %s: %v", name, byPod)
		}
	}
	for _, p := range before {
		if ln.Accepted(p.Status.PodIP) == 0 {
			t.Errorf("no connection reached pod %s's IP %s", p.Name, p.Status.PodIP)
		}
	}
	t.Logf("requests by pod %v; victim %s, replacement %s", byPod, victim, replacement)
}

// serveSimOn serves a simulator replica on ln until the test ends.
func serveSimOn(t *testing.T, ln *k8stest.PodListener) {
	t.Helper()
	cfg := sim.DefaultConfig()
	cfg.Latency, cfg.TTFT, cfg.ITL = sim.LatencyConstant, 10*time.Millisecond, 2*time.Millisecond
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

// The shards of a target with an API key and headers: every shard gets
// --api-key-env and --header (sorted) as load flags, and the Job's pods
// get the key's variable from the Secret api_key_secret names.
func TestShardLoadArgsCarryTheKeyAndHeaders(t *testing.T) {
	exp, _, err := spec.Load(filepath.Join("catalog", "k8s-pod-kill.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	k := exp.Target.Kubernetes
	k.URL, k.APIKeyEnv, k.APIKeySecret = "http://lb.example/v1", "VLLM_KEY", "vllm-auth/token"
	k.Headers = map[string]string{"X-Team": "qa", "X-Env": "staging"}
	t.Setenv("VLLM_KEY", "k")
	exp.Workload = spec.Workload{Rate: spec.PerSecondRate(30), Duration: spec.Duration(10 * time.Second), InputTokens: mustDist("16"), OutputTokens: mustDist("8"), Shards: 3}
	exp.StopConditions, exp.SteadyState, exp.Faults, exp.Thresholds = nil, nil, nil, nil
	p, err := planSpec(exp, "exp.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	r := newRun(p, Options{}, t.TempDir(), nil)
	r.kube, r.model = &kubeTarget{t: *p.spec.Target.Kubernetes, ns: "llm"}, "m"
	r.endpoints = []*endpoint{{url: k.URL, load: k.URL}}
	a, err := r.shardLoadArgs()
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(a, " ")
	if !strings.Contains(joined, "--api-key-env VLLM_KEY --header X-Env:staging --header X-Team:qa") {
		t.Errorf("args %q: want --api-key-env VLLM_KEY and the headers, sorted", a)
	}
	env := apiKeyEnv(r.kube.t)
	if len(env) != 1 || env[0].Name != "VLLM_KEY" || env[0].ValueFrom == nil || env[0].ValueFrom.SecretKeyRef == nil ||
		env[0].ValueFrom.SecretKeyRef.Name != "vllm-auth" || env[0].ValueFrom.SecretKeyRef.Key != "token" {
		t.Fatalf("pod env %+v, want VLLM_KEY from Secret vllm-auth key token", env)
	}
	ks := &KubernetesShards{Namespace: "llm", Image: "llmchaos:dev", RunID: "r", Env: env}
	c := ks.Job(a, 3, time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)).Job().Spec.Template.Spec.Containers[0]
	if len(c.Env) == 0 || !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "VLLM_KEY" && e.ValueFrom != nil }) {
		t.Errorf("the Job's container env %+v lacks VLLM_KEY from the Secret", c.Env)
	}
}
