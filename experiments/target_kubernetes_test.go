package experiments

import (
	"bytes"
	"context"
	"errors"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/faults/replica"
	"github.com/llmchaos/llmchaos/internal/k8stest"
	"github.com/llmchaos/llmchaos/internal/kube"
	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
	"github.com/llmchaos/llmchaos/internal/kube/api/discoveryv1"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/sim"
	"github.com/llmchaos/llmchaos/sim/server"
	"github.com/llmchaos/llmchaos/sim/server/servertest"
)

// simWorkload is the Deployment of catalog/k8s-pod-kill.yaml on the kwok
// nodes of the test control plane: three pods behind a Service, opted in.
var simWorkload = k8stest.Workload{
	Name: "llmchaos-sim", Replicas: 3, Labels: map[string]string{"app": "llmchaos-sim"},
	PodLabels: map[string]string{replica.OptInLabel: replica.OptInLabelValue}, Service: true,
}

// startTestSim serves a simulator replica in the test's process and returns
// its root URL.
func startTestSim(t *testing.T) string {
	t.Helper()
	cfg := sim.DefaultConfig()
	cfg.Latency, cfg.TTFT, cfg.ITL = sim.LatencyConstant, 10*time.Millisecond, 2*time.Millisecond
	return servertest.Start(t, server.Options{Config: cfg})
}

// podNet stands for the pod network of the kwok pods, which run no
// container: a connection to a pod's IP reaches the simulator served in
// the test's process, and a pod gone from the API (deleted) loses its
// connections and refuses new ones, as a killed container does.
type podNet struct {
	sim string // host:port of the simulator

	mu    sync.Mutex
	conns map[string][]net.Conn // by pod IP
	live  map[string]bool       // pod IPs of pods that exist
	dials map[string]int        // connections made, by pod IP
}

// startPodNet follows the pods of the workload in ns until the test ends.
func startPodNet(t *testing.T, c *k8stest.Cluster, ns, selector, simRoot string) *podNet {
	t.Helper()
	n := &podNet{sim: strings.TrimPrefix(simRoot, "http://"), conns: map[string][]net.Conn{}, live: map[string]bool{}, dials: map[string]int{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	seen := make(chan struct{}) // closed once the watch saw a pod with an IP
	var once sync.Once
	go func() {
		defer close(done)
		_, _ = kube.WaitPods(ctx, c.Client(t), ns, selector, func(pods []*corev1.Pod) bool {
			if n.follow(pods) > 0 {
				once.Do(func() { close(seen) })
			}
			return false
		})
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	// The run dials the pods as soon as it starts: they must be followed
	// by then, or their dials are refused.
	select {
	case <-seen:
	case <-time.After(30 * time.Second):
		t.Fatal("the pod network saw no pod with an IP within 30s")
	}
	return n
}

// follow takes the pods that exist now: the IPs of those gone lose their
// connections. It returns how many pods it follows.
func (n *podNet) follow(pods []*corev1.Pod) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	now := map[string]bool{}
	for _, p := range pods {
		if p.Status.PodIP != "" && p.DeletionTimestamp == nil {
			now[p.Status.PodIP] = true
		}
	}
	for ip := range n.live {
		if !now[ip] {
			for _, c := range n.conns[ip] {
				c.Close()
			}
			delete(n.conns, ip)
		}
	}
	n.live = now
	return len(now)
}

// dial is the run's dial hook.
func (n *podNet) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	if host == "127.0.0.1" {
		return d.DialContext(ctx, network, addr)
	}
	n.mu.Lock()
	live := n.live[host]
	n.mu.Unlock()
	if !live {
		return nil, &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
	}
	c, err := d.DialContext(ctx, network, n.sim)
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.dials[host]++
	if !n.live[host] {
		c.Close()
		return nil, &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
	}
	n.conns[host] = append(n.conns[host], c)
	return c, nil
}

// podKillSpec is catalog/k8s-pod-kill.yaml against the workload in ns of
// the test control plane, made short: 12 s of light load, the kill at 3 s.
func podKillSpec(t *testing.T, c *k8stest.Cluster, ns string) (*spec.Spec, string) {
	t.Helper()
	file := filepath.Join("catalog", "k8s-pod-kill.yaml")
	exp, _, err := spec.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	k := exp.Target.Kubernetes
	k.Namespace, k.Kubeconfig = ns, c.Kubeconfig
	exp.Workload = spec.Workload{Rate: spec.PerSecondRate(20), Arrival: "constant", Duration: spec.Duration(12 * time.Second),
		InputTokens: mustDist("16"), OutputTokens: mustDist("8")}
	exp.Faults[0].At, exp.Faults[0].Duration = spec.Duration(3*time.Second), spec.Duration(4*time.Second)
	// kwok's pods run no process to SIGKILL: the kill deletes the pod
	// (grace 0) and its ReplicaSet replaces it. The real node's tests
	// (internal/k8stest.StartNode) run the catalog's SIGKILL as it is.
	exp.Faults[0].Params["via"] = "engine"
	exp.Recovery = spec.Recovery{Window: spec.Duration(time.Second), Hold: spec.Duration(2 * time.Second), LatencyBand: 20}
	exp.Thresholds = spec.Thresholds{
		"recovery_time{fault:kill-pod}": {{Threshold: "max<8s"}},
		"requests_lost":                 {{Threshold: "count==0"}},
	}
	return exp, file
}

// killedPod returns the pod the fault acted on, from the run's events.
func killedPod(t *testing.T, d *report.Document, fault string) string {
	t.Helper()
	for _, e := range d.Events {
		if e.Source == report.EventSourceFault && e.Kind == "acted_on" && e.Target == fault {
			name, _, _ := strings.Cut(e.Detail, " ")
			return name
		}
	}
	t.Fatalf("no acted_on event of %s in %+v", fault, d.Events)
	return ""
}

// kubeEvents returns the run's events of source kubernetes, as
// "target kind" strings.
func kubeEvents(d *report.Document) []string {
	var out []string
	for _, e := range d.Events {
		if e.Source == report.EventSourceKubernetes {
			out = append(out, e.Target+" "+e.Kind)
		}
	}
	return out
}

// checkPodKill checks what a run of podKillSpec left: the victim deleted
// and replaced (three Ready pods, none of the old one), the fault reverted
// once the replacement was Ready, its recovery measured, the events of
// both pods in the record, the journal with nothing pending. It returns
// the victim and its replacement.
func checkPodKill(t *testing.T, c *k8stest.Cluster, ns string, before []*corev1.Pod, o *Outcome, dir string, out string) (victim, replacement string) {
	t.Helper()
	d := o.Doc
	if d.Verdict != report.VerdictPass || o.Aborted {
		t.Errorf("verdict = %s (aborted %v %s), want pass; thresholds %+v\n%s", d.Verdict, o.Aborted, o.AbortDetail, d.Thresholds, out)
	}
	victim = killedPod(t, d, "kill-pod")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	now, err := kube.WaitPods(ctx, c.Client(t), ns, simWorkload.Selector(), func(ps []*corev1.Pod) bool {
		ready := 0
		for _, p := range ps {
			if kube.PodReady(p) {
				ready++
			}
		}
		return ready == 3 && len(ps) == 3
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range now {
		if p.Name == victim {
			t.Errorf("pod %s still exists after the kill", victim)
		}
		if !slices.ContainsFunc(before, func(b *corev1.Pod) bool { return b.Name == p.Name }) {
			replacement = p.Name
		}
	}
	if replacement == "" {
		t.Fatalf("no replacement of %s among %s", victim, kube.DescribePods(now))
	}
	if len(d.Faults) != 1 || d.Faults[0].InjectedAtS == nil || !d.Faults[0].RevertOK {
		t.Errorf("fault record = %+v, want injected and reverted", d.Faults)
	}
	evs := kubeEvents(d)
	for _, want := range []string{victim + " deleted", replacement + " created", replacement + " healthy", strings.Join(strings.Split(replacement, "-")[:len(strings.Split(replacement, "-"))-1], "-") + " SuccessfulCreate"} {
		if !slices.Contains(evs, want) {
			t.Errorf("run.json's kubernetes events lack %q:\n%s", want, strings.Join(evs, "\n"))
		}
	}
	// The revert returned once the replacement was Ready: its healthy
	// event comes before the fault's reverted event.
	var healthyAt, revertedAt float64 = -1, -1
	for _, e := range d.Events {
		switch {
		case e.Source == report.EventSourceKubernetes && e.Target == replacement && e.Kind == "healthy":
			healthyAt = e.AtS
		case e.Source == report.EventSourceFault && e.Target == "kill-pod" && e.Kind == "reverted":
			revertedAt = e.AtS
		}
	}
	if healthyAt < 0 || revertedAt < healthyAt {
		t.Errorf("replacement healthy at %vs, fault reverted at %vs: want the revert after the replacement was Ready", healthyAt, revertedAt)
	}
	if len(d.Recovery) != 1 || !d.Recovery[0].Recovered || d.Recovery[0].RecoveryTimeS == nil || !d.Recovery[0].Instantaneous {
		t.Errorf("recovery = %+v, want the kill's recovery measured", d.Recovery)
	}
	jr, err := faults.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer jr.Close()
	if pend, err := jr.Pending(); err != nil || len(pend) != 0 {
		t.Errorf("journal pending = %+v (%v), want nothing", pend, err)
	}
	return victim, replacement
}

// A run against the pods themselves: each request goes to a pod Ready at
// its send and its result carries the pod's name; the kill deletes one
// pod, whose connections die with it, the ReplicaSet's replacement joins
// the endpoints and takes requests, the revert waits for it, and the
// recovery is measured on the traffic.
func TestRunKillsAPodAndFollowsItsReplacement(t *testing.T) {
	skipShort(t)
	c := k8stest.Start(t)
	ns := c.Namespace(t)
	before := c.CreateWorkload(t, ns, simWorkload)
	pn := startPodNet(t, c, ns, simWorkload.Selector(), startTestSim(t))
	exp, file := podKillSpec(t, c, ns)

	dir := t.TempDir()
	var out bytes.Buffer
	o, err := runSpec(context.Background(), exp, Options{RunDir: dir, File: file, Out: &out, hooks: &testHooks{dial: pn.dial}})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	victim, replacement := checkPodKill(t, c, ns, before, o, dir, out.String())

	tagged := map[string]int64{}
	for _, ts := range o.Doc.Histograms.ByTags {
		tagged[ts.Tags["endpoint"]] += ts.Counts.OK + ts.Counts.Failed
	}
	for _, p := range before {
		if tagged[p.Name] == 0 {
			t.Errorf("no result tagged endpoint:%s (tags: %v)", p.Name, tagged)
		}
	}
	if tagged[replacement] == 0 {
		t.Errorf("no result tagged with the replacement pod %s: it did not join the endpoints (tags: %v)", replacement, tagged)
	}
	for tag := range tagged {
		if !strings.HasPrefix(tag, simWorkload.Name+"-") {
			t.Errorf("results tagged endpoint:%s, want pod names only", tag)
		}
	}
	evs := kubeEvents(o.Doc)
	for _, want := range []string{victim + " endpoint_removed", replacement + " endpoint_added"} {
		if !slices.Contains(evs, want) {
			t.Errorf("events lack %q:\n%s", want, strings.Join(evs, "\n"))
		}
	}
	t.Logf("results by pod: %v; victim %s, replacement %s", tagged, victim, replacement)
}

// With url every request goes to it (here the simulator, standing for an
// Ingress in front of the Service) while the kill and the events act on
// the pods.
func TestRunKillsAPodBehindAURL(t *testing.T) {
	skipShort(t)
	c := k8stest.Start(t)
	ns := c.Namespace(t)
	before := c.CreateWorkload(t, ns, simWorkload)
	url := startTestSim(t) + "/v1"
	exp, file := podKillSpec(t, c, ns)
	exp.Target.Kubernetes.URL = url

	dir := t.TempDir()
	var out bytes.Buffer
	o, err := runSpec(context.Background(), exp, Options{RunDir: dir, File: file, Out: &out})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	checkPodKill(t, c, ns, before, o, dir, out.String())
	for _, ts := range o.Doc.Histograms.ByTags {
		if ts.Tags["endpoint"] != url {
			t.Errorf("results tagged endpoint:%s, want %s", ts.Tags["endpoint"], url)
		}
	}
}

// Pods that have not opted in are refused, by the dry run (which still
// writes the plan) and by the run (the fault is not injected: exit 95);
// so is a kill that would leave fewer Ready pods than min_available. An
// opted-in target's dry run lists the pods and the one the kill would pick.
func TestKubernetesRefusalsAndDryRun(t *testing.T) {
	c := k8stest.Start(t)
	ns := c.Namespace(t)
	w := simWorkload
	w.PodLabels = nil
	pods := c.CreateWorkload(t, ns, w)
	// The dry run lists the endpoints ready now: wait until the Service's
	// EndpointSlices have caught up with the pods.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if _, err := k8stest.WaitEndpointSlices(ctx, c.Client(t), ns, w.Name, func(eps []*discoveryv1.EndpointSlice) bool {
		return len(k8stest.ReadyAddresses(eps)) == len(pods)
	}); err != nil {
		t.Fatal(err)
	}
	exp, file := podKillSpec(t, c, ns)

	var out bytes.Buffer
	err := dryRunSpec(&out, exp, Options{File: file})
	var refused *DryRunRefusedError
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "llmchaos.io/target=true") {
		t.Fatalf("dry run on pods not opted in: %v, want a DryRunRefusedError naming the label\n%s", err, out.String())
	}
	for _, want := range []string{"REFUSED", pods[0].Name, "nothing was started or changed", "ready now: http://" + pods[0].Status.PodIP + ":8000/v1"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("dry run output lacks %q:\n%s", want, out.String())
		}
	}

	if !testing.Short() {
		run := *exp
		run.Target.Kubernetes = &spec.KubernetesTarget{}
		*run.Target.Kubernetes = *exp.Target.Kubernetes
		run.Target.Kubernetes.URL = startTestSim(t) + "/v1"
		run.Workload.Duration = spec.Duration(5 * time.Second)
		run.Faults[0].At, run.Faults[0].Duration = spec.Duration(time.Second), spec.Duration(time.Second)
		run.Thresholds = nil
		o, err := runSpec(context.Background(), &run, Options{RunDir: t.TempDir(), File: file})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if !slices.Equal(o.Refused, []string{"kill-pod"}) {
			t.Errorf("refused = %v, want kill-pod (not opted in)", o.Refused)
		}
	}

	c.LabelNamespace(t, ns, replica.OptInLabel, replica.OptInLabelValue)
	out.Reset()
	if err := dryRunSpec(&out, exp, Options{File: file}); err != nil {
		t.Fatalf("dry run with the namespace opted in: %v\n%s", err, out.String())
	}
	for _, p := range pods {
		if !strings.Contains(out.String(), p.Name) {
			t.Errorf("dry run output does not list pod %s:\n%s", p.Name, out.String())
		}
	}
	if !strings.Contains(out.String(), "would be deleted if the run started now") || !strings.Contains(out.String(), "3 match, 3 Ready") {
		t.Errorf("dry run output does not say which pod the kill would pick:\n%s", out.String())
	}

	exp.Faults[0].Params["select"] = map[string]any{"mode": "one", "min_available": 3}
	out.Reset()
	err = dryRunSpec(&out, exp, Options{File: file})
	if !errors.As(err, &refused) || !errors.Is(err, faults.ErrMinAvailable) {
		t.Errorf("dry run with min_available 3 of 3 Ready: %v, want a refusal\n%s", err, out.String())
	}
}
